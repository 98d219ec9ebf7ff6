// What the 16-bit tensor-core rungs share: the 16-byte tile copies into
// shared memory, a warp's `mma` step from `ldmatrix` fragments, and the
// stores of its accumulator tiles rounded to the 16-bit type. Included
// into `tensor` (see its module doc).

/// Copies the 16 bytes `src[row, col..col + 8]` of a matrix of 16-bit
/// values into chunk `i` of `dst`: an asynchronous copy when its rows are
/// 16-byte aligned (`cols % 8 == 0`; zero-filled outside the matrix),
/// element by element otherwise (zeros outside).
#[inline(always)]
fn copy_chunk16(dst: SharedSlice<U32x4>, i: usize, src: RowMajor<u16>, row: usize, col: usize) {
    let RowMajor {
        x,
        rows,
        cols,
        aligned,
    } = src;
    if aligned {
        let valid = row < rows && col < cols;
        // SAFETY: `i` is inside `dst` (callers index one stage of it); when
        // `valid`, `col + 8 <= cols` (both multiples of 8), so the group
        // `(row cols + col) / 8` lies inside `x`, and device buffers are
        // 256-byte aligned.
        unsafe { dst.copy_async(i, x, (row * cols + col) / 8, valid) };
    } else {
        let mut w = [0u32; 4];
        for q in 0..8 {
            if row < rows && col + q < cols {
                w[q / 2] |= (x.get(row * cols + col + q) as u32) << (16 * (q % 2));
            }
        }
        dst.set(i, U32x4(w));
    }
}

/// Stores a 16 x 8 accumulator tile at `C[row0.., col0..]`, rounded to `T`:
/// the two neighbouring values of a lane as one 32-bit store when they are
/// both inside `C` and `n` is even (aligned), one by one otherwise.
#[inline(always)]
fn store_frag16<T: Half16>(
    c: DeviceSliceMut<u16>,
    acc: &FragC,
    row0: usize,
    col0: usize,
    m: usize,
    n: usize,
) {
    let lane = warp::lane_id();
    for h in 0..2 {
        let (r, cc) = FragC::coord(lane, 2 * h);
        let (row, col) = (row0 + r, col0 + cc);
        if row >= m {
            continue;
        }
        let w = mma::pack_rn::<T>(acc.0[2 * h], acc.0[2 * h + 1]);
        if n.is_multiple_of(2) && col + 1 < n {
            // SAFETY: `C[row, col..col + 2]` is inside `C` (checked lengths,
            // `row < m`, `col + 1 < n`) and 4-byte aligned (`n`, `col` even).
            unsafe { c.set_vec_unchecked::<u32>((row * n + col) / 2, w) };
        } else {
            if col < n {
                c.set(row * n + col, w as u16);
            }
            if col + 1 < n {
                c.set(row * n + col + 1, (w >> 16) as u16);
            }
        }
    }
}

/// Where a warp reads one operand of a [`warp_step16`] in shared memory (in
/// 16-byte chunks): the stage's tile of the operand starts at chunk `base`
/// and has rows of `ld` chunks; `first` is the warp's first row of `As`
/// (its first column of `Bs`, in chunks), `k` the step's offset along `k`
/// (in chunks of `As`, in rows of `Bs`).
#[derive(Clone, Copy)]
struct StepOperand {
    /// The stage's first chunk of the tile.
    base: usize,
    /// Chunks per row of the tile.
    ld: usize,
    /// The warp's first row (`A`) or column chunk (`B`).
    first: usize,
    /// The step's offset along `k`: chunks (`A`) or rows (`B`).
    k: usize,
}

/// One 16-deep step of a warp tile of `MI x 16` rows and `NI x 8` columns
/// (`MI <= 4`, `NI <= 8`, `NI` even): `A` fragments by `ldmatrix.x4` (lane
/// `l` names row `l % 16`, column half `l / 16` of each 16 x 16 block), `B`
/// fragments by `ldmatrix.x4.trans` (lane `l` names `k` row `l % 16` of the
/// 8-column block `l / 16` of each 16-column pair), then `MI x NI` `mma`.
///
/// `sm` is shared memory as 16-byte chunks, `a` and `b` where the warp
/// reads `As` and `Bs` in it. The loops are unrolled in the source
/// ([`unroll!`](ptxlab_device::unroll)) so the accumulators stay in registers.
#[inline(always)]
fn warp_step16<T: Half16, const MI: usize, const NI: usize>(
    acc: &mut [[FragC; NI]; MI],
    sm: SharedSlice<U32x4>,
    a: StepOperand,
    b: StepOperand,
) {
    const { assert!(MI <= 4 && NI <= 8 && NI.is_multiple_of(2)) };
    let l = warp::lane_id() as usize;
    let mut fa = [FragA16::default(); MI];
    unroll!(mi in [0, 1, 2, 3] {
        if mi < MI {
            let row = a.first + 16 * mi + l % 16;
            fa[mi] = FragA16(mma::ldmatrix_x4(sm, a.base + row * a.ld + a.k + l / 16));
        }
    });
    unroll!(nj in [0, 1, 2, 3] {
        if 2 * nj < NI {
            let chunk = b.base + (b.k + l % 16) * b.ld + b.first + 2 * nj + l / 16;
            let r = mma::ldmatrix_x4_trans(sm, chunk);
            let fb = [FragB16([r[0], r[1]]), FragB16([r[2], r[3]])];
            unroll!(h in [0, 1] {
                unroll!(mi in [0, 1, 2, 3] {
                    if mi < MI {
                        mma::mma_m16n8k16::<T>(&mut acc[mi][2 * nj + h], &fa[mi], &fb[h]);
                    }
                });
            });
        }
    });
}

/// Stores a warp's `MI x NI` accumulator tiles (16 x 8 each) at
/// `C[row0.., col0..]`, rounded to `T` ([`store_frag16`]).
#[inline(always)]
fn store_warp16<T: Half16, const MI: usize, const NI: usize>(
    c: DeviceSliceMut<u16>,
    acc: &[[FragC; NI]; MI],
    row0: usize,
    col0: usize,
    m: usize,
    n: usize,
) {
    unroll!(mi in [0, 1, 2, 3] {
        if mi < MI {
            unroll!(ni in [0, 1, 2, 3, 4, 5, 6, 7] {
                if ni < NI {
                    store_frag16::<T>(c, &acc[mi][ni], row0 + 16 * mi, col0 + 8 * ni, m, n);
                }
            });
        }
    });
}
