// Rungs 3 to 3c of the tensor-core ladder: 128x128 block tiles, 64x64 per
// warp, fed by `cp.async` four stages deep (`matmul_pipe`), with tiles 64
// deep (`matmul_pipek`) or 128x256 (`matmul_pipew`). Included into `tensor`
// (see its module doc).

/// Rung 3: 128 x 128 block tiles, 64 x 64 per warp, a four-stage
/// `cp.async` pipeline.
///
/// What changed from rung 2:
/// * The block tile is 128 x 128 and each of the four warps owns 64 x 64
///   (4 x 8 accumulator fragments, 128 registers): per 16 of depth a warp
///   loads 4 + 4 `ldmatrix.x4` for 32 `mma` (rung 2: 4 for 8), and each
///   element brought into shared memory feeds 128 multiply-adds instead
///   of 64 (half the global and shared traffic per FLOP).
/// * Tiles arrive by `cp.async` (global to shared without registers),
///   [`PIPE_STAGES`] deep: while tile `t` is multiplied, tiles `t+1..t+3`
///   are in flight, so the copy latency hides behind three tiles of
///   tensor-core work. Per tile: wait for this thread's copies of tile `t`
///   (`wait_group 2`), one barrier (everyone's copies landed; everyone is
///   done with tile `t - 1`, whose stage the next copies overwrite), start
///   tile `t + 3`, commit, compute.
///
/// Shared layout per stage `s` (16-byte chunks): `As[128][5]` (40 values
/// per row, conflict-free as in rung 2) at `s * STAGE`, then `Bs[32][17]`.
/// Copies: thread `t` copies chunks `t + 128 j` (`j < 4`) of `As` (row
/// `c / 4`, chunk `c % 4`) and of `Bs` (row `c / 16`, chunk `c % 16`).
#[kernel(launch_bounds(128), instances(Bf16, F16))]
pub fn matmul_pipe<T: Half16>(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    pipe_generic::<T, PIPE_BN, PIPE_BK, PIPE_STAGES>(a, b, c, m, n, k);
}

/// Rung 3's structure for a 128 x `BN` block tile (four warps per 128
/// columns, each 64 x 64), tiles `BK` deep (32 or 64) and an `S`-stage
/// [`CpAsyncPipeline`].
#[inline(always)]
fn pipe_generic<T: Half16, const BN: usize, const BK: usize, const S: usize>(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    const BM: usize = PIPE_BM;
    const { assert!((BK == 32 || BK == 64) && (BN == 128 || BN == 256)) };
    let threads = 128 * (BN / 128);
    let (ald, bld) = ((BK + 8) / 8, (BN + 8) / 8);
    let ach = BM * ald;
    let stage = ach + BK * bld;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    check_lengths(a, b, c, m, n, k);
    let sm = shared::dynamic_shared::<U32x4>(0, S * stage);
    let t = thread::thread_idx_x() as usize;
    let w = t / 32;
    let (wm, wn) = (w / (BN / 64), w % (BN / 64));
    let bm = thread::block_idx_y() as usize * BM;
    let bn = thread::block_idx_x() as usize * BN;
    let (a_al, b_al) = (k.is_multiple_of(8), n.is_multiple_of(8));
    let issue = |st: usize, tile: usize| {
        let k0 = tile * BK;
        let base = st * stage;
        let (a_src, b_src) = RowMajor::operands(a, b, [m, n, k], [a_al, b_al]);
        for j in 0..BM * BK / 8 / threads {
            let ch = t + threads * j;
            let (r, q) = (ch / (BK / 8), ch % (BK / 8));
            copy_chunk16(sm, base + r * ald + q, a_src, bm + r, k0 + 8 * q);
        }
        for j in 0..BK * BN / 8 / threads {
            let ch = t + threads * j;
            let (r, q) = (ch / (BN / 8), ch % (BN / 8));
            let at = base + ach + r * bld + q;
            copy_chunk16(sm, at, b_src, k0 + r, bn + 8 * q);
        }
    };
    let mut acc = [[FragC::default(); 8]; 4];
    let pipe = CpAsyncPipeline::<S>::new(k.div_ceil(BK));
    pipe.prologue(issue);
    let mut tile = 0;
    while tile < pipe.tiles() {
        let base = pipe.next_tile(tile, issue) * stage;
        unroll!(kk in [0, 1, 2, 3] {
            if kk < BK / 16 {
                let (kc, kr, b_at) = (2 * kk, 16 * kk, base + ach);
                let a_op = StepOperand { base, ld: ald, first: 64 * wm, k: kc };
                let b_op = StepOperand { base: b_at, ld: bld, first: 8 * wn, k: kr };
                warp_step16::<T, 4, 8>(&mut acc, sm, a_op, b_op);
            }
        });
        tile += 1;
    }
    store_warp16::<T, 4, 8>(c, &acc, bm + 64 * wm, bn + 64 * wn, m, n);
}

/// Rung 3b: rung 3 with tiles 64 deep and three stages (107,520 bytes of
/// shared memory): one barrier and one `cp.async` wait per four `k16`
/// steps instead of two, and a longer straight run of `ldmatrix` and
/// `mma` for the scheduler to interleave.
#[kernel(launch_bounds(128), instances(Bf16, F16))]
pub fn matmul_pipek<T: Half16>(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    pipe_generic::<T, 128, 64, 3>(a, b, c, m, n, k);
}

/// Rung 3c: rung 3 with 128 x 256 block tiles and eight warps (still
/// 64 x 64 each), three stages (81,408 bytes): each element brought to
/// shared memory feeds twice as many multiply-adds along `B`, and a block
/// has eight warps to hide `ldmatrix` and barrier latency.
#[kernel(launch_bounds(256), instances(Bf16, F16))]
pub fn matmul_pipew<T: Half16>(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    pipe_generic::<T, 256, 32, 3>(a, b, c, m, n, k);
}

/// Dynamic shared memory of a rung-3 variant: `S` stages of a 128 x `bk`
/// `A` tile (rows padded by 8 values) and a `bk` x `bn` `B` tile (padded
/// likewise).
pub const fn pipe_shared_bytes_for(bn: usize, bk: usize, stages: usize) -> usize {
    shared::shared_bytes::<u16>(0, stages * (PIPE_BM * (bk + 8) + bk * (bn + 8)))
}
