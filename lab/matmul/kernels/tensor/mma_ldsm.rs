// Rungs 1 and 2 of the tensor-core ladder: `mma.sync` with fragments read
// from shared memory one word at a time (`matmul_mma`), then by `ldmatrix`
// from padded rows with 16-byte global loads (`matmul_ldsm`). Included into
// `tensor` (see its module doc).

/// `x[row, col]` and `x[row, col + 1]` of a `rows x cols` row-major matrix
/// of 16-bit values as one word (low half first), zeros outside.
#[inline(always)]
fn pair(x: DeviceSlice<u16>, row: usize, rows: usize, col: usize, cols: usize) -> u32 {
    let at = |c: usize| {
        if row < rows && c < cols {
            x.get(row * cols + c) as u32
        } else {
            0
        }
    };
    at(col) | at(col + 1) << 16
}

/// Rung 1: tensor cores with fragments read from shared memory.
///
/// What changed from the SIMT ladder ([`matmul`](crate::matmul)): the multiply-adds are
/// `mma.sync.m16n8k16` instructions, each 2048 multiply-adds (4096 FLOP) of one warp at
/// once, instead of one FMA per thread. What it buys: the tensor cores'
/// throughput (in BF16 an order of magnitude above the FP32 units').
///
/// Tiling: a block of four warps (2 x 2) computes a 64 x 64 tile of `C`,
/// each warp 32 x 32 = 2 x 4 tiles of 16 x 8 (8 accumulator fragments,
/// 32 registers). Per step of 16 along `k` the block copies `As[64][16]`
/// and `Bs[16][64]` to shared memory (thread `t` loads elements `t + 128 j`
/// of each, 16-bit loads), then each warp reads its fragments:
/// [`FragA16`] as 32-bit words (pairs along `k` are contiguous), and
/// [`FragB16`] as single 16-bit values (its pairs run along `k`, which in
/// `Bs` is the strided direction), and issues 8 `mma`.
///
/// What it costs: 2-way bank conflicts on `A` (rows of 32 bytes: lanes
/// `gid` and `gid + 4` share banks), 4-way on `B` (the four `tig` of a
/// column read four rows 128 bytes apart), 12 shared loads per 8 `mma`,
/// and one barrier pair per 16 of depth. Rung 2 removes all three.
#[kernel(launch_bounds(128), instances(Bf16, F16))]
pub fn matmul_mma<T: Half16>(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    const BM: usize = MMA_BM;
    const BN: usize = MMA_BN;
    const BK: usize = MMA_BK;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    check_lengths(a, b, c, m, n, k);
    let sa32 = shared::dynamic_shared::<u32>(0, BM * BK / 2);
    let sb = shared::dynamic_shared::<u16>(2 * BM * BK, BK * BN);
    let sb32 = shared::dynamic_shared::<u32>(2 * BM * BK, BK * BN / 2);
    let t = thread::thread_idx_x() as usize;
    let lane = warp::lane_id();
    let w = t / 32;
    let (wm, wn) = (w / 2, w % 2);
    let bm = thread::block_idx_y() as usize * BM;
    let bn = thread::block_idx_x() as usize * BN;
    let mut acc = [[FragC::default(); 4]; 2];
    let mut k0 = 0;
    while k0 < k {
        // Word `wd` of each tile is elements `2 wd`, `2 wd + 1` of one row.
        for j in 0..4 {
            let wd = t + 128 * j;
            let (r, q) = ((2 * wd) / BK, (2 * wd) % BK);
            sa32.set(wd, pair(a, bm + r, m, k0 + q, k));
            let (r, q) = ((2 * wd) / BN, (2 * wd) % BN);
            sb32.set(wd, pair(b, k0 + r, k, bn + q, n));
        }
        sync_threads();
        let mut fa = [FragA16::default(); 2];
        for mi in 0..2 {
            for reg in 0..4 {
                let (r, q) = FragA16::coord(lane, 2 * reg);
                let row = 32 * wm + 16 * mi + r;
                fa[mi].0[reg] = sa32.get((row * BK + q) / 2);
            }
        }
        for ni in 0..4 {
            let mut fb = FragB16::default();
            for i in 0..4 {
                let (r, q) = FragB16::coord(lane, i);
                let v = sb.get(r * BN + 32 * wn + 8 * ni + q) as u32;
                fb.0[i / 2] |= v << (16 * (i % 2));
            }
            for mi in 0..2 {
                mma::mma_m16n8k16::<T>(&mut acc[mi][ni], &fa[mi], &fb);
            }
        }
        sync_threads();
        k0 += BK;
    }
    for mi in 0..2 {
        for ni in 0..4 {
            let (r0, c0) = (bm + 32 * wm + 16 * mi, bn + 32 * wn + 8 * ni);
            store_frag16::<T>(c, &acc[mi][ni], r0, c0, m, n);
        }
    }
}

/// Rung 2: `ldmatrix` from padded shared memory.
///
/// What changed from rung 1:
/// * Fragments come from `ldmatrix`: one instruction loads four 8x8
///   matrices for the whole warp, each lane naming one 16-byte row; the
///   `.trans` form hands out `B` already transposed into the `k`-pairs
///   [`FragB16`] wants. 2 `ldmatrix.x4` for `A` and 2 `.x4.trans` for `B`
///   feed 8 `mma` (rung 1: 12 shared loads and 16 shifts).
/// * Rows are padded (`As` 40 values, `Bs` 72: see [`LDSM_A_LD`],
///   [`LDSM_B_LD`]) so the eight rows of an 8x8 matrix start in eight
///   different 16-byte bank groups: no bank conflicts.
/// * Tiles are 32 deep (two `k16` steps per barrier pair) and global loads
///   are 16 bytes (eight values) per thread and chunk, synchronous.
///
/// Tiling as rung 1: 64 x 64 per block, 32 x 32 per warp. Copies: thread
/// `t` copies chunks `t` and `t + 128` of `As` (row `c / 4`, chunk `c % 4`)
/// and of `Bs` (row `c / 8`, chunk `c % 8`).
#[kernel(launch_bounds(128), instances(Bf16, F16))]
pub fn matmul_ldsm<T: Half16>(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    // A body of its own: inlined straight into the kernel, LLVM orders the
    // parameter loads differently (the PTX is kept as it was measured).
    ldsm_body::<T>(a, b, c, m, n, k);
}

/// Rung 2's body (see [`matmul_ldsm`]).
#[inline(always)]
fn ldsm_body<T: Half16>(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    const BM: usize = MMA_BM;
    const BN: usize = MMA_BN;
    const BK: usize = LDSM_BK;
    // Two `k16` steps per tile (the `kk` unroll below).
    const { assert!(BK == 32) };
    const ALD: usize = LDSM_A_LD / 8;
    const BLD: usize = LDSM_B_LD / 8;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    check_lengths(a, b, c, m, n, k);
    const ACH: usize = BM * ALD;
    let sm = shared::dynamic_shared::<U32x4>(0, ACH + BK * BLD);
    let t = thread::thread_idx_x() as usize;
    let w = t / 32;
    let (wm, wn) = (w / 2, w % 2);
    let bm = thread::block_idx_y() as usize * BM;
    let bn = thread::block_idx_x() as usize * BN;
    let (a_al, b_al) = (k.is_multiple_of(8), n.is_multiple_of(8));
    let (a_src, b_src) = RowMajor::operands(a, b, [m, n, k], [a_al, b_al]);
    let mut acc = [[FragC::default(); 4]; 2];
    let mut k0 = 0;
    while k0 < k {
        for j in 0..2 {
            let ch = t + 128 * j;
            let (r, q) = (ch / (BK / 8), ch % (BK / 8));
            copy_chunk16(sm, r * ALD + q, a_src, bm + r, k0 + 8 * q);
            let (r, q) = (ch / (BN / 8), ch % (BN / 8));
            copy_chunk16(sm, ACH + r * BLD + q, b_src, k0 + r, bn + 8 * q);
        }
        shared::commit_async_copies();
        shared::wait_async_copies::<0>();
        sync_threads();
        unroll!(kk in [0, 1] {
            let (kc, kr) = (2 * kk, 16 * kk);
            let a_op = StepOperand { base: 0, ld: ALD, first: 32 * wm, k: kc };
            let b_op = StepOperand { base: ACH, ld: BLD, first: 4 * wn, k: kr };
            warp_step16::<T, 2, 4>(&mut acc, sm, a_op, b_op);
        });
        sync_threads();
        k0 += BK;
    }
    store_warp16::<T, 2, 4>(c, &acc, bm + 32 * wm, bn + 32 * wn, m, n);
}
