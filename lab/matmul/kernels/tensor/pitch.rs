// The staging copy of the TMA rungs (`matmul_pitch16`): a 16-bit matrix
// copied into rows padded to a multiple of 8 values. Included into `tensor`
// (see its module doc).

/// Threads per block of [`matmul_pitch16`].
pub const PITCH_BLOCK: u32 = 256;

/// The staging copy of the TMA rungs: a row-major `rows x cols` matrix of
/// 16-bit values copied into `dst` with rows of `ld` values (`ld >= cols`,
/// `ld` a multiple of 8), the columns `cols..ld` set to zero.
///
/// Why: TMA copies rows that start on 16-byte boundaries only, and it reads
/// rows that do not start on 128-byte boundaries slowly (a box row then
/// straddles two 128-byte lines; the measurements are in
/// `docs/book/src/workloads/matmul.md`, "Any shape"). A `k x n` `B` with `n` not a
/// multiple of 64, or an `m x k` `A` with `k` not a multiple of 8, is
/// copied once per product into rows of a multiple of 64 values (128
/// bytes); the copy moves each byte twice at the copy bandwidth, a few
/// percent of a large product's time.
///
/// Thread mapping: thread `x` of the grid's `x` dimension writes the
/// 16-byte chunk `x` of a row (values `8x..8x+8`) with one 16-byte store;
/// block row `y` does rows `y`, `y + gridDim.y`, ... . Reads: one 16-byte
/// load per chunk when `cols` is a multiple of 8 (every source chunk is
/// then aligned), else eight 2-byte loads, consecutive threads reading
/// consecutive 16-byte spans (coalesced; the sectors they share hit L1).
#[kernel(launch_bounds(256))]
pub fn matmul_pitch16(
    src: DeviceSlice<u16>,
    dst: DeviceSliceMut<u16>,
    rows: u32,
    cols: u32,
    ld: u32,
) {
    let (rows, cols, ld) = (rows as usize, cols as usize, ld as usize);
    if ld < cols || !ld.is_multiple_of(8) || src.len() < rows * cols || dst.len() < rows * ld {
        ptxlab_device::trap("pitch16: the buffers do not hold the matrices");
    }
    let q = thread::index_1d();
    if q >= ld / 8 {
        return;
    }
    let c0 = 8 * q;
    let aligned = cols.is_multiple_of(8);
    let mut r = thread::block_idx_y() as usize;
    while r < rows {
        let w = if aligned && c0 < cols {
            // SAFETY: `cols` and `c0` are multiples of 8 and `c0 < cols`, so
            // the chunk `r cols + c0 .. + 8` lies inside row `r < rows` of
            // `src` (length checked) and is 16-byte aligned.
            unsafe { src.get_vec_unchecked::<U32x4>((r * cols + c0) / 8) }
        } else {
            let mut w = [0u32; 4];
            for i in 0..8 {
                if c0 + i < cols {
                    // SAFETY: `r < rows`, `c0 + i < cols`: inside `src`.
                    let v = unsafe { src.get_unchecked(r * cols + c0 + i) };
                    w[i / 2] |= (v as u32) << (16 * (i % 2));
                }
            }
            U32x4(w)
        };
        // SAFETY: `c0 + 8 <= ld` (`q < ld / 8`), so the chunk lies inside row
        // `r < rows` of `dst` (length checked), 16-byte aligned (`ld` a
        // multiple of 8).
        unsafe { dst.set_vec_unchecked::<U32x4>((r * ld + c0) / 8, w) };
        r += thread::grid_dim_y() as usize;
    }
}
