//! Tensor-core GEMM ladder, warp level (`mma.sync`, sm_80 and newer):
//! `C = A B` with BF16 or FP16 inputs and f32 accumulators (the output is
//! rounded to the input type, as `torch.matmul` does), and an f32-accurate
//! GEMM from TF32 tensor-core products (3xTF32).
//!
//! Shapes as in [`matmul`](crate::matmul): `A` is `m x k`, `B` is `k x n`,
//! `C` is `m x n`, all row-major; 16-bit values are stored as their bits
//! (`u16`). Any `m`, `n`, `k` works: loads outside the matrices read zero
//! and stores outside are skipped. When a row of `A` or `B` is not 16-byte
//! aligned (`k` or `n` not a multiple of 8 for 16-bit types, of 4 for f32)
//! the tile copies fall back to element-by-element loads.
//!
//! The ladder, in order (the `wgmma` rungs 4 and 5, for sm_90a, are in
//! [`hopper`](crate::hopper)):
//!
//! 1. [`matmul_mma_bf16`] / [`matmul_mma_f16`]: `mma.sync.m16n8k16`, operand
//!    fragments read from shared memory one 32-bit word (or 16-bit value) at
//!    a time.
//! 2. [`matmul_ldsm_bf16`] / [`matmul_ldsm_f16`]: fragments by `ldmatrix`
//!    from padded shared-memory rows (no bank conflicts), tiles twice as
//!    deep, 16-byte global loads.
//! 3. [`matmul_pipe_bf16`] / [`matmul_pipe_f16`]: 128x128 block tiles,
//!    64x64 per warp, fed by `cp.async` four stages deep; variants 3b
//!    ([`matmul_pipek_f16`], tiles 64 deep), 3c ([`matmul_pipew_f16`],
//!    128x256), 3d ([`matmul_pipes_f16`]: lean tile copies, XOR-swizzled
//!    shared memory, fragments loaded a step ahead, rasterised blocks: the
//!    fastest `mma.sync` rung) and 3e ([`matmul_pipet_f16`], 3d with
//!    256x128 tiles, one block of eight warps per SM).
//!
//! And [`matmul_tf32x3_f32`]: f32 in, f32 out, each operand split into a
//! TF32 high part and a TF32 remainder, three `mma.m16n8k8.tf32` products
//! summed per tile.

use ptxlab_device::mem::{F32x2, U32x4};
use ptxlab_device::mma::{self, Bf16, F16, FragA16, FragATf32, FragB16, FragBTf32, FragC, Half16};
use ptxlab_device::prelude::*;
use ptxlab_device::unroll;

/// Rung 1 block tile rows.
pub const MMA_BM: usize = 64;
/// Rung 1 block tile columns.
pub const MMA_BN: usize = 64;
/// Rung 1 `k` per tile (one `m16n8k16` deep).
pub const MMA_BK: usize = 16;
/// Threads of rungs 1 and 2: four warps, 2 x 2, each a 32 x 32 warp tile.
pub const MMA_THREADS: u32 = 128;

/// Rung 2 `k` per tile.
pub const LDSM_BK: usize = 32;
/// Rung 2 (and 3) padded row of the `A` tile, in 16-bit values: 32 + 8 (80
/// bytes, five 16-byte chunks). The eight rows an `ldmatrix` reads start in
/// chunks `5 r mod 8`, all different, so the eight 16-byte reads of one
/// matrix hit all 32 banks once.
pub const LDSM_A_LD: usize = LDSM_BK + 8;
/// Rung 2 padded row of the `B` tile: 64 + 8 values (144 bytes, 9 chunks:
/// chunk `9 r mod 8 = r`, conflict-free for the same reason).
pub const LDSM_B_LD: usize = MMA_BN + 8;

/// Rung 3 block tile rows.
pub const PIPE_BM: usize = 128;
/// Rung 3 block tile columns.
pub const PIPE_BN: usize = 128;
/// Rung 3 `k` per tile.
pub const PIPE_BK: usize = 32;
/// Rung 3 tiles in flight (`cp.async` stages).
pub const PIPE_STAGES: usize = 4;
/// Rung 3 threads: four warps, 2 x 2, each a 64 x 64 warp tile.
pub const PIPE_THREADS: u32 = 128;
/// Rung 3 padded row of the `B` tile: 128 + 8 values (17 chunks, conflict-free).
pub const PIPE_B_LD: usize = PIPE_BN + 8;

/// 3xTF32 block tile rows.
pub const TF32_BM: usize = 128;
/// 3xTF32 block tile columns.
pub const TF32_BN: usize = 128;
/// 3xTF32 `k` per tile (f32: 64 bytes per row of `A`).
pub const TF32_BK: usize = 16;
/// 3xTF32 tiles in flight.
pub const TF32_STAGES: usize = 4;
/// 3xTF32 threads: eight warps, 2 x 4, each a 64 x 32 warp tile.
pub const TF32_THREADS: u32 = 256;
/// 3xTF32 padded row of the `A` tile in f32: 16 + 4 (80 bytes, conflict-free `ldmatrix`).
pub const TF32_A_LD: usize = TF32_BK + 4;
/// 3xTF32 padded row of the `B` tile in f32: 128 + 8. A warp's scalar
/// fragment loads read words `136 tig + gid`, banks `8 tig + gid`: all 32
/// different.
pub const TF32_B_LD: usize = TF32_BN + 8;

/// Dynamic shared memory of rung 1: `As[64][16]` then `Bs[16][64]`, 16-bit.
pub const fn mma_shared_bytes() -> usize {
    shared::shared_bytes::<u16>(0, MMA_BM * MMA_BK + MMA_BK * MMA_BN)
}

/// Dynamic shared memory of rung 2: `As[64][40]` then `Bs[32][72]`, 16-bit.
pub const fn ldsm_shared_bytes() -> usize {
    shared::shared_bytes::<u16>(0, MMA_BM * LDSM_A_LD + LDSM_BK * LDSM_B_LD)
}

/// 16-bit values per stage of rung 3: `As[128][40]` then `Bs[32][136]`.
const PIPE_STAGE: usize = PIPE_BM * LDSM_A_LD + PIPE_BK * PIPE_B_LD;

/// Dynamic shared memory of rung 3: [`PIPE_STAGES`] stages (75,776 bytes).
pub const fn pipe_shared_bytes() -> usize {
    shared::shared_bytes::<u16>(0, PIPE_STAGES * PIPE_STAGE)
}

/// f32 values per stage of 3xTF32: `As[128][20]` then `Bs[16][136]`.
const TF32_STAGE: usize = TF32_BM * TF32_A_LD + TF32_BK * TF32_B_LD;

/// Dynamic shared memory of 3xTF32: [`TF32_STAGES`] stages (75,776 bytes).
pub const fn tf32x3_shared_bytes() -> usize {
    shared::shared_bytes::<f32>(0, TF32_STAGES * TF32_STAGE)
}

/// Stops the kernel unless the buffers hold the `m x k`, `k x n` and
/// `m x n` matrices the launch names (the launchers pass exactly those):
/// after this the unchecked accesses below are in bounds.
#[inline(always)]
fn check_lengths<T: Copy, U: Copy>(
    a: DeviceSlice<T>,
    b: DeviceSlice<T>,
    c: DeviceSliceMut<U>,
    m: usize,
    n: usize,
    k: usize,
) {
    if a.len() < m * k || b.len() < k * n || c.len() < m * n {
        ptxlab_device::trap("matmul: a buffer is shorter than its matrix");
    }
}

/// Copies the 16 bytes `x[row, col..col + 8]` of a `rows x cols` row-major
/// matrix of 16-bit values into chunk `i` of `dst`: an asynchronous copy
/// when rows are 16-byte aligned (`cols % 8 == 0`; zero-filled outside the
/// matrix), element by element otherwise (zeros outside).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn copy_chunk16(
    dst: SharedSlice<U32x4>,
    i: usize,
    x: DeviceSlice<u16>,
    row: usize,
    rows: usize,
    col: usize,
    cols: usize,
    aligned: bool,
) {
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

/// [`copy_chunk16`] for f32 matrices: 4 values per chunk, rows aligned
/// when `cols % 4 == 0`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn copy_chunk32(
    dst: SharedSlice<U32x4>,
    i: usize,
    x: DeviceSlice<f32>,
    row: usize,
    rows: usize,
    col: usize,
    cols: usize,
    aligned: bool,
) {
    if aligned {
        let valid = row < rows && col < cols;
        // SAFETY: as in `copy_chunk16`, with groups of 4 f32.
        unsafe { dst.copy_async(i, x, (row * cols + col) / 4, valid) };
    } else {
        let mut w = [0u32; 4];
        for q in 0..4 {
            if row < rows && col + q < cols {
                w[q] = x.get(row * cols + col + q).to_bits();
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

/// Stores a 16 x 8 f32 accumulator tile at `C[row0.., col0..]` (pairs as
/// 8-byte stores when aligned).
#[inline(always)]
fn store_frag32(c: DeviceSliceMut<f32>, acc: &FragC, row0: usize, col0: usize, m: usize, n: usize) {
    let lane = warp::lane_id();
    for h in 0..2 {
        let (r, cc) = FragC::coord(lane, 2 * h);
        let (row, col) = (row0 + r, col0 + cc);
        if row >= m {
            continue;
        }
        if n.is_multiple_of(2) && col + 1 < n {
            // SAFETY: inside `C` and 8-byte aligned, as in `store_frag16`.
            unsafe {
                c.set_vec_unchecked((row * n + col) / 2, F32x2([acc.0[2 * h], acc.0[2 * h + 1]]))
            };
        } else {
            for q in 0..2 {
                if col + q < n {
                    c.set(row * n + col + q, acc.0[2 * h + q]);
                }
            }
        }
    }
}

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

/// Rung 1, BF16: see `mma_body`.
#[kernel(launch_bounds(128))]
pub fn matmul_mma_bf16(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    mma_body::<Bf16>(a, b, c, m, n, k);
}

/// Rung 1, FP16: see `mma_body`.
#[kernel(launch_bounds(128))]
pub fn matmul_mma_f16(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    mma_body::<F16>(a, b, c, m, n, k);
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
#[inline(always)]
fn mma_body<T: Half16>(
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

/// Rung 2, BF16: see `ldsm_body`.
#[kernel(launch_bounds(128))]
pub fn matmul_ldsm_bf16(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    ldsm_body::<Bf16>(a, b, c, m, n, k);
}

/// Rung 2, FP16: see `ldsm_body`.
#[kernel(launch_bounds(128))]
pub fn matmul_ldsm_f16(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    ldsm_body::<F16>(a, b, c, m, n, k);
}

/// One 16-deep step of a warp tile of `MI x 16` rows and `NI x 8` columns
/// (`MI <= 4`, `NI <= 8`, `NI` even): `A` fragments by `ldmatrix.x4` (lane
/// `l` names row `l % 16`, column half `l / 16` of each 16 x 16 block), `B`
/// fragments by `ldmatrix.x4.trans` (lane `l` names `k` row `l % 16` of the
/// 8-column block `l / 16` of each 16-column pair), then `MI x NI` `mma`.
///
/// `sm` is shared memory as 16-byte chunks; the stage's `As` starts at
/// chunk `a_base` with rows of `a_ld` chunks, `Bs` at `b_base` with rows of
/// `b_ld`; `a_row0` is the warp's first row in `As`, `b_col0` its first
/// column in `Bs` (in chunks), `kc` the step's `k` offset in chunks of
/// `As` and `kr` in rows of `Bs`. The loops are unrolled in the source
/// ([`unroll!`](ptxlab_device::unroll)) so the accumulators stay in registers.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn warp_step16<T: Half16, const MI: usize, const NI: usize>(
    acc: &mut [[FragC; NI]; MI],
    sm: SharedSlice<U32x4>,
    a_base: usize,
    a_ld: usize,
    a_row0: usize,
    kc: usize,
    b_base: usize,
    b_ld: usize,
    b_col0: usize,
    kr: usize,
) {
    const { assert!(MI <= 4 && NI <= 8 && NI.is_multiple_of(2)) };
    let l = warp::lane_id() as usize;
    let mut fa = [FragA16::default(); MI];
    unroll!(mi in [0, 1, 2, 3] {
        if mi < MI {
            let row = a_row0 + 16 * mi + l % 16;
            fa[mi] = FragA16(mma::ldmatrix_x4(sm, a_base + row * a_ld + kc + l / 16));
        }
    });
    unroll!(nj in [0, 1, 2, 3] {
        if 2 * nj < NI {
            let chunk = b_base + (kr + l % 16) * b_ld + b_col0 + 2 * nj + l / 16;
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
    let mut acc = [[FragC::default(); 4]; 2];
    let mut k0 = 0;
    while k0 < k {
        for j in 0..2 {
            let ch = t + 128 * j;
            let (r, q) = (ch / (BK / 8), ch % (BK / 8));
            copy_chunk16(sm, r * ALD + q, a, bm + r, m, k0 + 8 * q, k, a_al);
            let (r, q) = (ch / (BN / 8), ch % (BN / 8));
            copy_chunk16(sm, ACH + r * BLD + q, b, k0 + r, k, bn + 8 * q, n, b_al);
        }
        shared::commit_async_copies();
        shared::wait_async_copies::<0>();
        sync_threads();
        unroll!(kk in [0, 1] {
            let (kc, kr) = (2 * kk, 16 * kk);
            warp_step16::<T, 2, 4>(&mut acc, sm, 0, ALD, 32 * wm, kc, ACH, BLD, 4 * wn, kr);
        });
        sync_threads();
        k0 += BK;
    }
    store_warp16::<T, 2, 4>(c, &acc, bm + 32 * wm, bn + 32 * wn, m, n);
}

/// Rung 3, BF16: see `pipe_body`.
#[kernel(launch_bounds(128))]
pub fn matmul_pipe_bf16(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    pipe_body::<Bf16>(a, b, c, m, n, k);
}

/// Rung 3, FP16: see `pipe_body`.
#[kernel(launch_bounds(128))]
pub fn matmul_pipe_f16(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    pipe_body::<F16>(a, b, c, m, n, k);
}

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
#[inline(always)]
fn pipe_body<T: Half16>(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    pipe_generic::<T, PIPE_BN, PIPE_BK, PIPE_STAGES, { PIPE_STAGES as u32 - 2 }>(a, b, c, m, n, k);
}

/// Rung 3's structure for a 128 x `BN` block tile (four warps per 128
/// columns, each 64 x 64), tiles `BK` deep (32 or 64) and `S` stages
/// (`WAIT = S - 2`, the groups still in flight when a tile is needed).
#[inline(always)]
fn pipe_generic<T: Half16, const BN: usize, const BK: usize, const S: usize, const WAIT: u32>(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    const BM: usize = PIPE_BM;
    const { assert!((BK == 32 || BK == 64) && (BN == 128 || BN == 256) && WAIT as usize + 2 == S) };
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
        for j in 0..BM * BK / 8 / threads {
            let ch = t + threads * j;
            let (r, q) = (ch / (BK / 8), ch % (BK / 8));
            copy_chunk16(sm, base + r * ald + q, a, bm + r, m, k0 + 8 * q, k, a_al);
        }
        for j in 0..BK * BN / 8 / threads {
            let ch = t + threads * j;
            let (r, q) = (ch / (BN / 8), ch % (BN / 8));
            let at = base + ach + r * bld + q;
            copy_chunk16(sm, at, b, k0 + r, k, bn + 8 * q, n, b_al);
        }
    };
    let mut acc = [[FragC::default(); 8]; 4];
    let ntiles = k.div_ceil(BK);
    for s in 0..S - 1 {
        if s < ntiles {
            issue(s, s);
        }
        shared::commit_async_copies();
    }
    let mut tile = 0;
    while tile < ntiles {
        shared::wait_async_copies::<WAIT>();
        sync_threads();
        let next = tile + S - 1;
        if next < ntiles {
            issue(next % S, next);
        }
        shared::commit_async_copies();
        let base = (tile % S) * stage;
        unroll!(kk in [0, 1, 2, 3] {
            if kk < BK / 16 {
                let (kc, kr, b_at) = (2 * kk, 16 * kk, base + ach);
                warp_step16::<T, 4, 8>(&mut acc, sm, base, ald, 64 * wm, kc, b_at, bld, 8 * wn, kr);
            }
        });
        tile += 1;
    }
    store_warp16::<T, 4, 8>(c, &acc, bm + 64 * wm, bn + 64 * wn, m, n);
}

/// Rung 3b, BF16: see [`matmul_pipek_f16`].
#[kernel(launch_bounds(128))]
pub fn matmul_pipek_bf16(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    pipe_generic::<Bf16, 128, 64, 3, 1>(a, b, c, m, n, k);
}

/// Rung 3b: rung 3 with tiles 64 deep and three stages (107,520 bytes of
/// shared memory): one barrier and one `cp.async` wait per four `k16`
/// steps instead of two, and a longer straight run of `ldmatrix` and
/// `mma` for the scheduler to interleave.
#[kernel(launch_bounds(128))]
pub fn matmul_pipek_f16(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    pipe_generic::<F16, 128, 64, 3, 1>(a, b, c, m, n, k);
}

/// Rung 3c, BF16: see [`matmul_pipew_f16`].
#[kernel(launch_bounds(256))]
pub fn matmul_pipew_bf16(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    pipe_generic::<Bf16, 256, 32, 3, 1>(a, b, c, m, n, k);
}

/// Rung 3c: rung 3 with 128 x 256 block tiles and eight warps (still
/// 64 x 64 each), three stages (81,408 bytes): each element brought to
/// shared memory feeds twice as many multiply-adds along `B`, and a block
/// has eight warps to hide `ldmatrix` and barrier latency.
#[kernel(launch_bounds(256))]
pub fn matmul_pipew_f16(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    pipe_generic::<F16, 256, 32, 3, 1>(a, b, c, m, n, k);
}

/// Dynamic shared memory of a rung-3 variant: `S` stages of a 128 x `bk`
/// `A` tile (rows padded by 8 values) and a `bk` x `bn` `B` tile (padded
/// likewise).
pub const fn pipe_shared_bytes_for(bn: usize, bk: usize, stages: usize) -> usize {
    shared::shared_bytes::<u16>(0, stages * (PIPE_BM * (bk + 8) + bk * (bn + 8)))
}

/// Rung 3d block tile columns (rows: [`PIPE_BM`]).
pub const PIPES_BN: usize = 128;
/// Rung 3d `k` per tile: 64 values, so a row of the `A` tile is one
/// 128-byte line (eight 16-byte chunks) and a row of the `B` tile two.
pub const PIPES_BK: usize = 64;
/// Rung 3d tiles in flight (`cp.async` stages).
pub const PIPES_STAGES: usize = 3;
/// Rung 3d threads: four warps, 2 x 2, each a 64 x 64 warp tile.
pub const PIPES_THREADS: u32 = pipes_threads(PIPE_BM, PIPES_BN) as u32;
/// Rung 3d block rows per raster group ([`raster`]).
pub const PIPES_GROUP: usize = 8;

/// Threads of a rung-3d/3e block with a `bm x bn` tile: one warp per
/// 64 x 64 warp tile.
pub const fn pipes_threads(bm: usize, bn: usize) -> usize {
    32 * (bm / 64) * (bn / 64)
}

/// 16-byte chunks of one rung-3d/3e stage with a `bm x bn` block tile:
/// `As[bm][8]` then `Bs[64][bn / 8]` (rows of [`PIPES_BK`] values, no
/// padding).
pub const fn pipes_stage_chunks(bm: usize, bn: usize) -> usize {
    (bm + bn) * PIPES_BK / 8
}

/// Dynamic shared memory of rung 3d: [`PIPES_STAGES`] stages of 32 KiB,
/// no padding (98,304 bytes: two blocks per SM fit in an H100's 227 KiB).
pub const fn pipes_shared_bytes() -> usize {
    shared::shared_bytes::<U32x4>(0, PIPES_STAGES * pipes_stage_chunks(PIPE_BM, PIPES_BN))
}

/// Rung 3d's shared-memory swizzle: chunk `q` (16 bytes) of row `r` of a
/// tile whose rows are whole 128-byte lines is stored at chunk
/// `q ^ (r % 8)` of that row (only the chunk's position inside its line
/// changes).
///
/// Why it is conflict-free: the 32 banks are one 128-byte line. An
/// `ldmatrix` matrix is eight rows `r..r + 8` at the same logical chunk
/// `q`: their physical chunks `q ^ (r % 8)` are eight different positions
/// in the line, so the eight 16-byte reads cover all 32 banks once. A
/// warp's `cp.async` writes are whole rows (eight chunks of a line): a
/// permutation of the line, again all 32 banks once.
#[inline(always)]
pub const fn swizzle(r: usize, q: usize) -> usize {
    q ^ (r % 8)
}

/// The tile `(row, col)` that block `bid` (numbered row-major, `x`
/// fastest, as the hardware roughly starts them) computes in a grid of
/// `gx x gy` tiles: blocks walk down groups of `g` tile rows column by
/// column (the last group may be shorter), so the blocks running at once
/// share a few panels of `A` and `B` in L2 instead of all of `B`.
pub const fn raster(bid: usize, gx: usize, gy: usize, g: usize) -> (usize, usize) {
    let per = g * gx;
    let first = bid / per * g;
    let rows = if gy - first < g { gy - first } else { g };
    let i = bid % per;
    (first + i % rows, i / rows)
}

/// Rung 3d, BF16: see [`matmul_pipes_f16`].
#[kernel(launch_bounds(128, 2))]
pub fn matmul_pipes_bf16(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    pipes_body::<Bf16, PIPE_BM, PIPES_BN, PIPES_STAGES, { PIPES_STAGES as u32 - 2 }>(
        a, b, c, m, n, k,
    );
}

/// Rung 3d: rung 3b's tiles (128 x 128 x 64, four warps of 64 x 64, three
/// `cp.async` stages) with lean tile copies, XOR-swizzled shared memory,
/// fragments loaded one `k16` step ahead, and a rasterised block order.
///
/// Why it is faster than 3b: the lean copies. In rungs 3 to 3c each
/// 16-byte chunk copy (`copy_chunk16`) recomputes its row, column, bounds
/// checks and 64-bit products, inside a loop with a branch per chunk
/// between the aligned and the element-by-element path: several times as
/// many instructions per thread and tile as the warp's 128 `mma`, issued in
/// one burst during which that warp feeds no tensor core. The other three
/// changes below, on their own, left the rung at 3b's speed. The SASS
/// counts before and after, the measured speed-up and the history of this
/// rung are in `docs/workloads/matmul.md` ("The rungs", 3d).
///
/// What changed from 3b, and what each was meant to buy:
/// * **Lean copies** (`PipesCopy`): each thread's copy plan is made once,
///   and the aligned and general bodies are compiled apart, so the same 16
///   `cp.async` per tile cost a few integer instructions each.
/// * **Swizzle instead of padding** ([`swizzle`]): `As` rows are exactly
///   one 128-byte line and `Bs` rows two, chunk `q` of row `r` at
///   `q ^ (r % 8)`. `ldmatrix` stays conflict-free, and now so are the
///   `cp.async` writes (a warp writes four whole `A` rows or two whole `B`
///   rows: each line once), which padded rows were not; a stage is
///   32 KiB instead of 33.8, and the per-lane addresses are constants XOR
///   a step constant (one `lop3` per `ldmatrix`, the rest immediate
///   offsets).
/// * **Fragments a step ahead**: while the 32 `mma` of step `kk` issue,
///   the 4 + 4 `ldmatrix.x4` of step `kk + 1` are already in flight (two
///   sets of `A` fragments; each pair of `B` fragments is reloaded right
///   after its last `mma`: `pipes_step`), so the tensor cores do not
///   wait on shared-memory latency at each step. At the tile's last step the wait
///   for the next stage and the block's one barrier come *before* that
///   step's `mma`: the previous step's `mma` are still executing while
///   the warp waits, and the next tile's first fragments load before the
///   last `mma` of this one.
/// * **Rasterised blocks** ([`raster`], groups of [`PIPES_GROUP`] tile
///   rows): at 8192^3 the two blocks per SM of all 132 SMs cover about
///   8 x 33 tiles instead of 4 x 64, so a wave reads 8 panels of `A` and
///   33 of `B` (82 MiB) instead of 4 and all 64 (136 MiB), and more of it
///   hits L2.
///
/// Thread mapping: warp `w` owns rows `64 (w / 2)..+64` and columns
/// `64 (w % 2)..+64` of the block tile (4 x 8 accumulator fragments). Lane
/// `l` names, for `ldmatrix`, row `l % 16` of each 16-row block of `A` at
/// chunk `2 kk + l / 16`, and `k` row `16 kk + l % 16` of `B` at chunk
/// `8 (w % 2) + 2 nj + l / 16`; since every such row is `l % 8` modulo 8,
/// the swizzled chunk is `2 kk ^ s` (and `2 nj ^ s`) with the lane's
/// `s = (l / 16) ^ (l % 8)`. Copies: thread `t` copies `A` rows
/// `t / 8 + 16 j` at chunk `t % 8` and `B` rows `t / 16 + 8 j` at chunk
/// `t % 16` (`j < 8`), so its swizzled chunk is the same for every `j`.
///
/// Pipeline per tile `t` (4 steps): steps 0 to 2 issue their 32 `mma`
/// while loading the next step's fragments; step 3 first waits for tile
/// `t + 1` (`wait_group 1`) and synchronises, then issues its `mma` while
/// loading tile `t + 1`'s first fragments. After step 0 the copy of tile
/// `t + 2` starts, into the stage tile `t - 1` used (every warp finished
/// reading it before the barrier of tile `t - 1`'s step 3): one barrier
/// per tile.
#[kernel(launch_bounds(128, 2))]
pub fn matmul_pipes_f16(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    pipes_body::<F16, PIPE_BM, PIPES_BN, PIPES_STAGES, { PIPES_STAGES as u32 - 2 }>(
        a, b, c, m, n, k,
    );
}

/// Where a rung-3d warp finds one `k16` step's fragments in a swizzled
/// stage: the stage's first chunk, the step, and the lane's terms (see
/// [`matmul_pipes_f16`]): `a_lane` and `b_lane` its row's first chunk in
/// `As` and `Bs`, `s` its swizzle term; `a_ch` is the chunks of `As` (where
/// `Bs` starts) and `bld` the chunks of a `Bs` row (block tile columns / 8).
#[derive(Clone, Copy)]
struct PipesAt {
    base: usize,
    kk: usize,
    a_lane: usize,
    b_lane: usize,
    s: usize,
    a_ch: usize,
    bld: usize,
}

impl PipesAt {
    /// `ldmatrix.x4` of the `A` fragment of the warp's 16-row block `mi`.
    #[inline(always)]
    fn a(self, sm: SharedSlice<U32x4>, mi: usize) -> FragA16 {
        let ca = self.base + self.a_lane + 16 * (PIPES_BK / 8) * mi + (self.s ^ (2 * self.kk));
        FragA16(mma::ldmatrix_x4(sm, ca))
    }
    /// `ldmatrix.x4.trans` of the `B` fragments of the warp's 8-column
    /// blocks `2 nj` and `2 nj + 1`.
    #[inline(always)]
    fn b(self, sm: SharedSlice<U32x4>, nj: usize, fb: &mut [FragB16; 8]) {
        let rows = 16 * self.bld * self.kk;
        let cb = self.base + self.a_ch + self.b_lane + rows + (self.s ^ (2 * nj));
        let r = mma::ldmatrix_x4_trans(sm, cb);
        fb[2 * nj] = FragB16([r[0], r[1]]);
        fb[2 * nj + 1] = FragB16([r[2], r[3]]);
    }
}

/// One `k16` step of a rung-3d warp (64 x 64: 4 x 8 `mma`) on the
/// fragments `fa`, `fb`, loading the next step's fragments from `next`
/// (when given) as it goes: the 4 `A` fragments into `fa_next` first,
/// then each pair of `B` fragments into `fb` right after the last `mma`
/// that reads the pair (so only `A` needs two register sets: 16 registers
/// fewer than two full sets, which is what keeps the rung from spilling;
/// the counts are in `docs/workloads/matmul.md`).
#[inline(always)]
fn pipes_step<T: Half16>(
    acc: &mut [[FragC; 8]; 4],
    sm: SharedSlice<U32x4>,
    fa: &[FragA16; 4],
    fb: &mut [FragB16; 8],
    fa_next: &mut [FragA16; 4],
    next: Option<PipesAt>,
) {
    if let Some(at) = next {
        unroll!(mi in [0, 1, 2, 3] {
            fa_next[mi] = at.a(sm, mi);
        });
    }
    unroll!(nj in [0, 1, 2, 3] {
        unroll!(h in [0, 1] {
            unroll!(mi in [0, 1, 2, 3] {
                mma::mma_m16n8k16::<T>(&mut acc[mi][2 * nj + h], &fa[mi], &fb[2 * nj + h]);
            });
        });
        if let Some(at) = next {
            at.b(sm, nj, fb);
        }
    });
}

/// One thread's share of the copy of a rung-3d/3e stage: a `BM x 64`
/// tile of `A` and a `64 x BN` tile of `B`, 16-byte chunks, swizzled.
///
/// Thread `t` of `threads` copies `A` rows `ar + a_step j` (`ar = t / 8`,
/// `a_step = threads / 8`) at chunk `aq = t % 8`, and `B` rows
/// `br + b_step j` (`br = t / bld`, `b_step = threads / bld`, `bld = BN / 8`
/// chunks a row) at chunk `bq = t % bld`: both row steps are multiples of
/// 8, so the swizzled chunk is the same for every `j`.
///
/// When every row of `A` and `B` is 16-byte aligned (`k` and `n`
/// multiples of 8) the plan is made once: the 16-byte group of the
/// thread's first chunk in tile 0 (`a_g`, `b_g`), the groups between its
/// chunks `j` and `j + 1` (`a_gj`, `b_gj`) and between tiles (`A`: 8,
/// `b_gt`), which of its `A` rows are inside `m` (bit `j` of `a_rows`) and
/// whether its `B` column is inside `n`. Per chunk and tile that leaves an
/// add, a compare and the `cp.async`, about 12 instructions. (The
/// general [`copy_chunk16`], the other path, recomputes the row, column,
/// bounds and products of every chunk: in rungs 3 to 3c, several times
/// more integer instructions per tile than `mma`; see
/// [`matmul_pipes_f16`].)
///
/// The tile-derived values (`bld`, the steps, the counts per thread) are
/// fields, not associated constants: they fold to constants after
/// inlining all the same, but a version with associated constants changed
/// ptxas's schedule of the rung, and it is the schedule measured on the
/// device that stays (`docs/workloads/matmul.md`, 3d).
#[derive(Clone, Copy)]
struct PipesCopy {
    m: usize,
    n: usize,
    k: usize,
    bm: usize,
    bn: usize,
    ar: usize,
    aq: usize,
    br: usize,
    bq: usize,
    a_step: usize,
    b_step: usize,
    a_dst: usize,
    b_dst: usize,
    bld: usize,
    a_per: usize,
    b_per: usize,
    a_g: usize,
    a_gj: usize,
    b_g: usize,
    b_gj: usize,
    b_gt: usize,
    a_rows: u32,
    b_col: bool,
}

impl PipesCopy {
    /// Thread `t`'s plan for the block tile at `(bm, bn)` of `C` (`m x n`,
    /// depth `k`).
    #[inline(always)]
    fn new<const BM: usize, const BN: usize>(
        t: usize,
        bm: usize,
        bn: usize,
        m: usize,
        n: usize,
        k: usize,
    ) -> Self {
        const ALD: usize = PIPES_BK / 8;
        let (threads, bld) = (pipes_threads(BM, BN), BN / 8);
        let (ar, aq, br, bq) = (t / 8, t % 8, t / bld, t % bld);
        let (a_step, b_step) = (threads / 8, threads / bld);
        let a_per = BM * ALD / threads;
        let mut a_rows = 0u32;
        for j in 0..a_per {
            a_rows |= ((bm + ar + a_step * j < m) as u32) << j;
        }
        PipesCopy {
            m,
            n,
            k,
            bm,
            bn,
            ar,
            aq,
            br,
            bq,
            a_step,
            b_step,
            a_dst: ar * ALD + swizzle(ar, aq),
            b_dst: BM * ALD + br * bld + swizzle(br, bq),
            bld,
            a_per,
            b_per: PIPES_BK * bld / threads,
            a_g: ((bm + ar) * k + 8 * aq) / 8,
            a_gj: a_step * k / 8,
            b_g: (br * n + bn + 8 * bq) / 8,
            b_gj: b_step * n / 8,
            b_gt: PIPES_BK * n / 8,
            a_rows,
            b_col: bn + 8 * bq < n,
        }
    }

    /// Starts the copies of tile `tile` (`k` from `64 tile`) into the
    /// stage at chunk `base` of `sm` (not committed); `FAST`: every row of
    /// `A` and `B` is 16-byte aligned.
    #[inline(always)]
    fn issue<const FAST: bool>(
        &self,
        sm: SharedSlice<U32x4>,
        a: DeviceSlice<u16>,
        b: DeviceSlice<u16>,
        base: usize,
        tile: usize,
    ) {
        const ALD: usize = PIPES_BK / 8;
        let (k0, bld) = (tile * PIPES_BK, self.bld);
        let (m, n, k, bm, bn) = (self.m, self.n, self.k, self.bm, self.bn);
        let (ar, aq, br, bq) = (self.ar, self.aq, self.br, self.bq);
        let (a_step, b_step) = (self.a_step, self.b_step);
        if FAST {
            let a_col = k0 + 8 * aq < k;
            unroll!(j in [0, 1, 2, 3, 4, 5, 6, 7] {
                if j < self.a_per {
                    let valid = a_col && (self.a_rows >> j) & 1 != 0;
                    let at = base + self.a_dst + a_step * ALD * j;
                    let g = self.a_g + ALD * tile + self.a_gj * j;
                    // SAFETY: `at` is inside the stage at `base`; when
                    // `valid`, row `bm + ar + a_step j < m` and column
                    // `k0 + 8 aq < k` with `k` a multiple of 8, so group
                    // `g` is inside `a` (256-byte aligned).
                    unsafe { sm.copy_async(at, a, g, valid) };
                }
            });
            unroll!(j in [0, 1, 2, 3, 4, 5, 6, 7] {
                if j < self.b_per {
                    let valid = self.b_col && k0 + br + b_step * j < k;
                    let at = base + self.b_dst + b_step * bld * j;
                    let g = self.b_g + self.b_gt * tile + self.b_gj * j;
                    // SAFETY: as above, with row `k0 + br + b_step j < k`
                    // and column `bn + 8 bq < n`, `n` a multiple of 8.
                    unsafe { sm.copy_async(at, b, g, valid) };
                }
            });
        } else {
            let (a_al, b_al) = (k.is_multiple_of(8), n.is_multiple_of(8));
            for j in 0..self.a_per {
                let at = base + self.a_dst + a_step * ALD * j;
                copy_chunk16(sm, at, a, bm + ar + a_step * j, m, k0 + 8 * aq, k, a_al);
            }
            for j in 0..self.b_per {
                let at = base + self.b_dst + b_step * bld * j;
                copy_chunk16(sm, at, b, k0 + br + b_step * j, k, bn + 8 * bq, n, b_al);
            }
        }
    }
}

/// Rung 3d's body (see [`matmul_pipes_f16`]) for a `BM x BN` block tile
/// of `(BM / 64) x (BN / 64)` warps, each 64 x 64, tiles 64 deep and `S`
/// stages (`WAIT = S - 2`, the copy groups still in flight when a tile is
/// needed). Rung 3d is `<128, 128, 3>`, 3e `<256, 128, 4>`.
///
/// The body is compiled twice, for aligned rows (`k` and `n` multiples of
/// 8: the lean copies of [`PipesCopy`]) and for the rest, so that neither
/// keeps the other's copy state in registers (with both, ptxas spilled).
#[inline(always)]
fn pipes_body<T: Half16, const BM: usize, const BN: usize, const S: usize, const WAIT: u32>(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    if k.is_multiple_of(8) && n.is_multiple_of(8) {
        pipes_main::<T, BM, BN, S, WAIT, true>(a, b, c, m, n, k);
    } else {
        pipes_main::<T, BM, BN, S, WAIT, false>(a, b, c, m, n, k);
    }
}

/// [`pipes_body`] for rows aligned (`FAST`) or not.
#[inline(always)]
fn pipes_main<
    T: Half16,
    const BM: usize,
    const BN: usize,
    const S: usize,
    const WAIT: u32,
    const FAST: bool,
>(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    const BK: usize = PIPES_BK;
    const ALD: usize = BK / 8;
    // Four `k16` steps per tile, an even number: step 0 of every tile uses
    // fragment set 0. Rows of whole 128-byte lines for the swizzle.
    const { assert!(BK == 64 && BM.is_multiple_of(64) && BN.is_multiple_of(64)) };
    const { assert!(S >= 2 && WAIT as usize + 2 == S) };
    // At most eight chunks of each operand per thread and tile (`unroll!`).
    const { assert!(BM * BK / 8 <= 8 * pipes_threads(BM, BN)) };
    const { assert!(BK * BN / 8 <= 8 * pipes_threads(BM, BN)) };
    let bld = BN / 8;
    let a_ch = BM * ALD;
    let stage = pipes_stage_chunks(BM, BN);
    let (m, n, k) = (m as usize, n as usize, k as usize);
    check_lengths(a, b, c, m, n, k);
    let sm = shared::dynamic_shared::<U32x4>(0, S * stage);
    let t = thread::thread_idx_x() as usize;
    let l = warp::lane_id() as usize;
    let w = t / 32;
    let (wm, wn) = (w / (BN / 64), w % (BN / 64));
    let gx = thread::grid_dim_x() as usize;
    let bid = thread::block_idx_y() as usize * gx + thread::block_idx_x() as usize;
    let (tr, tc) = raster(bid, gx, thread::grid_dim_y() as usize, PIPES_GROUP);
    let (bm, bn) = (tr * BM, tc * BN);
    let copy = PipesCopy::new::<BM, BN>(t, bm, bn, m, n, k);
    let issue = |st: usize, tile: usize| copy.issue::<FAST>(sm, a, b, st * stage, tile);
    let s = (l / 16) ^ (l % 8);
    let (a_lane, b_lane) = ((64 * wm + l % 16) * ALD, (l % 16) * bld + 8 * wn);
    let at = |base: usize, kk: usize| PipesAt { base, kk, a_lane, b_lane, s, a_ch, bld };
    let mut acc = [[FragC::default(); 8]; 4];
    let mut fa = [[FragA16::default(); 4]; 2];
    let mut fb = [FragB16::default(); 8];
    let ntiles = k.div_ceil(BK);
    for st in 0..S - 1 {
        if st < ntiles {
            issue(st, st);
        }
        shared::commit_async_copies();
    }
    shared::wait_async_copies::<WAIT>();
    sync_threads();
    unroll!(mi in [0, 1, 2, 3] {
        fa[0][mi] = at(0, 0).a(sm, mi);
    });
    unroll!(nj in [0, 1, 2, 3] {
        at(0, 0).b(sm, nj, &mut fb);
    });
    // The stage being read and the stage the next copy fills.
    let (mut rd, mut wr) = (0, S - 1);
    let mut tile = 0;
    while tile < ntiles {
        let base = rd * stage;
        rd = if rd + 1 == S { 0 } else { rd + 1 };
        unroll!(kk in [0, 1, 2, 3] {
            let next = if kk < 3 {
                Some(at(base, kk + 1))
            } else if tile + 1 < ntiles {
                shared::wait_async_copies::<WAIT>();
                sync_threads();
                Some(at(rd * stage, 0))
            } else {
                None
            };
            let [f0, f1] = &mut fa;
            let (cur, nxt) = if kk.is_multiple_of(2) { (&*f0, f1) } else { (&*f1, f0) };
            pipes_step::<T>(&mut acc, sm, cur, &mut fb, nxt, next);
            if kk == 0 {
                let next = tile + S - 1;
                if next < ntiles {
                    issue(wr, next);
                }
                shared::commit_async_copies();
                wr = if wr + 1 == S { 0 } else { wr + 1 };
            }
        });
        tile += 1;
    }
    store_warp16::<T, 4, 8>(c, &acc, bm + 64 * wm, bn + 64 * wn, m, n);
}

/// Rung 3e block tile rows (columns: [`PIPES_BN`]).
pub const PIPET_BM: usize = 256;
/// Rung 3e tiles in flight (`cp.async` stages, 48 KiB each).
pub const PIPET_STAGES: usize = 4;
/// Rung 3e threads: eight warps, 4 x 2, each a 64 x 64 warp tile.
pub const PIPET_THREADS: u32 = pipes_threads(PIPET_BM, PIPES_BN) as u32;

/// Dynamic shared memory of rung 3e: [`PIPET_STAGES`] stages of a
/// 256 x 64 `A` tile and a 64 x 128 `B` tile, swizzled, no padding
/// (196,608 bytes: one block per SM).
pub const fn pipet_shared_bytes() -> usize {
    shared::shared_bytes::<U32x4>(0, PIPET_STAGES * pipes_stage_chunks(PIPET_BM, PIPES_BN))
}

/// Rung 3e, BF16: see [`matmul_pipet_f16`].
#[kernel(launch_bounds(256, 1))]
pub fn matmul_pipet_bf16(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    pipes_body::<Bf16, PIPET_BM, PIPES_BN, PIPET_STAGES, { PIPET_STAGES as u32 - 2 }>(
        a, b, c, m, n, k,
    );
}

/// Rung 3e: rung 3d with 256 x 128 block tiles, eight warps and four
/// stages.
///
/// What it tries: a 128 x 128 block tile brings `(128 + 128) k` values
/// into shared memory for `128 * 128 k` multiply-adds (16 GiB from L2 at
/// 8192^3); a 256 x 128 tile brings `(256 + 128) k` for twice the work, a
/// quarter less traffic per FLOP. The block has the 256 threads of two 3d
/// blocks (one block per SM: its threads take the whole register file),
/// and 192 KiB of shared memory holds four stages, three tiles in flight.
///
/// What it teaches: it is not faster than 3d at square sizes. With L2
/// traffic no longer the limit, what decides is latency hiding: 3d's two
/// independent blocks per SM wait at their barriers at different times,
/// while 3e's one barrier stops all eight warps of the SM at once. The
/// figures (and the dropped 128 x 256 transpose) are in
/// `docs/workloads/matmul.md` ("The rungs", 3e).
///
/// Thread mapping as 3d with warp `w` at rows `64 (w / 2)`, columns
/// `64 (w % 2)`; copies: thread `t` copies `A` rows `t / 8 + 32 j`
/// (`j < 8`) at chunk `t % 8` and `B` rows `t / 16 + 16 j` (`j < 4`) at
/// chunk `t % 16`. Shared layout per stage: `As[256][8]` then `Bs[64][16]`
/// (16-byte chunks, swizzled as [`swizzle`]).
#[kernel(launch_bounds(256, 1))]
pub fn matmul_pipet_f16(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    pipes_body::<F16, PIPET_BM, PIPES_BN, PIPET_STAGES, { PIPET_STAGES as u32 - 2 }>(
        a, b, c, m, n, k,
    );
}

/// 3xTF32 on `mma.sync`: `C = A B` in f32 from TF32 tensor-core products.
///
/// Each operand value `x` is split in registers into `big = rna(x)` and
/// `small = rna(x - big)` ([`mma::tf32_split`]); `big + small` holds about
/// 21 of f32's 24 bits. Per tile the warp computes `small_a big_b +
/// big_a small_b + big_a big_b` (small terms first) and drops
/// `small_a small_b` (about `2^-22` relative): the result has f32 SGEMM
/// accuracy (errors within the SGEMM ladder's bound, against f64), from
/// three TF32 `mma` instead of one.
///
/// Tiling: a block of eight warps (2 x 4) computes 128 x 128; a warp
/// 64 x 32 = 4 x 4 tiles of 16 x 8. Tiles 16 deep (f32: 64 bytes per row
/// of `A`), four `cp.async` stages as in rung 3. Per 8 of depth a warp
/// loads 4 `A` fragments by `ldmatrix.x4` (a 16 x 8 f32 block is four 8x8
/// matrices of 16-bit halves: lane `(gid, tig)` gets f32 `(gid, tig)` of
/// each, exactly [`FragATf32`]) and 4 `B` fragments by scalar loads
/// (`Bs` rows of 136 words: conflict-free), splits them (24 `cvt.rna` +
/// 24 subtractions) and issues 48 `mma.m16n8k8`.
///
/// Accuracy: the tensor core accumulates with truncation, so a chain of
/// accumulating `mma` over all of `k` drifts one way (the error grows
/// linearly with `k`; measured in `docs/workloads/matmul.md`, "3xTF32").
/// So each 16-deep tile's six products go into fresh accumulators and are
/// added to the running sum with an ordinary f32 add (round to nearest):
/// the biased chains are six long whatever `k`.
///
/// Shared layout per stage (16-byte chunks): `As[128][5]` then `Bs[16][34]`.
#[kernel(launch_bounds(256))]
pub fn matmul_tf32x3_f32(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    const BM: usize = TF32_BM;
    const BN: usize = TF32_BN;
    const BK: usize = TF32_BK;
    // Two `k8` steps per tile (the `kk` unroll below).
    const { assert!(BK == 16) };
    const S: usize = TF32_STAGES;
    const ALD: usize = TF32_A_LD / 4;
    const BLD: usize = TF32_B_LD / 4;
    const ACH: usize = BM * ALD;
    const STAGE: usize = TF32_STAGE / 4;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    check_lengths(a, b, c, m, n, k);
    let sm = shared::dynamic_shared::<U32x4>(0, S * STAGE);
    let sw = shared::dynamic_shared::<f32>(0, 4 * S * STAGE);
    let t = thread::thread_idx_x() as usize;
    let l = warp::lane_id();
    let (gid, tig) = mma::gid_tig(l);
    let w = t / 32;
    let (wm, wn) = (w / 4, w % 4);
    let bm = thread::block_idx_y() as usize * BM;
    let bn = thread::block_idx_x() as usize * BN;
    let (a_al, b_al) = (k.is_multiple_of(4), n.is_multiple_of(4));
    let issue = |stage: usize, tile: usize| {
        let k0 = tile * BK;
        let base = stage * STAGE;
        for j in 0..2 {
            let ch = t + 256 * j;
            let (r, q) = (ch / (BK / 4), ch % (BK / 4));
            copy_chunk32(sm, base + r * ALD + q, a, bm + r, m, k0 + 4 * q, k, a_al);
            let (r, q) = (ch / (BN / 4), ch % (BN / 4));
            copy_chunk32(
                sm,
                base + ACH + r * BLD + q,
                b,
                k0 + r,
                k,
                bn + 4 * q,
                n,
                b_al,
            );
        }
    };
    let mut acc = [[FragC::default(); 4]; 4];
    let ntiles = k.div_ceil(BK);
    for s in 0..S - 1 {
        if s < ntiles {
            issue(s, s);
        }
        shared::commit_async_copies();
    }
    let mut tile = 0;
    while tile < ntiles {
        shared::wait_async_copies::<{ (TF32_STAGES - 2) as u32 }>();
        sync_threads();
        let next = tile + S - 1;
        if next < ntiles {
            issue(next % S, next);
        }
        shared::commit_async_copies();
        let base = (tile % S) * STAGE;
        let bw = 4 * (base + ACH);
        // Both 8-deep steps' fragments first (A: 2 x 4 x 2 parts, B: 2 x 4
        // x 2 parts), split in registers.
        let lr = l as usize;
        let mut a_big = [[FragATf32::default(); 4]; 2];
        let mut a_small = [[FragATf32::default(); 4]; 2];
        let mut b_big = [[FragBTf32::default(); 4]; 2];
        let mut b_small = [[FragBTf32::default(); 4]; 2];
        unroll!(kk in [0, 1] {
            unroll!(mi in [0, 1, 2, 3] {
                let row = 64 * wm + 16 * mi + lr % 16;
                let r = mma::ldmatrix_x4(sm, base + row * ALD + 2 * kk + lr / 16);
                unroll!(i in [0, 1, 2, 3] {
                    let (hi, lo) = mma::tf32_split(f32::from_bits(r[i]));
                    a_big[kk][mi].0[i] = hi.to_bits();
                    a_small[kk][mi].0[i] = lo.to_bits();
                });
            });
            unroll!(ni in [0, 1, 2, 3] {
                unroll!(i in [0, 1] {
                    let (r, q) = (8 * kk + tig + 4 * i, 32 * wn + 8 * ni + gid);
                    // SAFETY: `r < 16` rows of `TF32_B_LD` words and
                    // `q < 128`: inside the stage's `Bs`, inside `sw`.
                    let v = unsafe { sw.get_unchecked(bw + r * TF32_B_LD + q) };
                    let (hi, lo) = mma::tf32_split(v);
                    b_big[kk][ni].0[i] = hi.to_bits();
                    b_small[kk][ni].0[i] = lo.to_bits();
                });
            });
        });
        // Per 16 x 8 output tile: the tile's 6 products into fresh
        // accumulators, then one rounded f32 add into the running sum.
        unroll!(mi in [0, 1, 2, 3] {
            unroll!(ni in [0, 1, 2, 3] {
                let mut part = FragC::default();
                unroll!(kk in [0, 1] {
                    mma::mma_m16n8k8_tf32(&mut part, &a_small[kk][mi], &b_big[kk][ni]);
                    mma::mma_m16n8k8_tf32(&mut part, &a_big[kk][mi], &b_small[kk][ni]);
                    mma::mma_m16n8k8_tf32(&mut part, &a_big[kk][mi], &b_big[kk][ni]);
                });
                unroll!(i in [0, 1, 2, 3] {
                    acc[mi][ni].0[i] += part.0[i];
                });
            });
        });
        tile += 1;
    }
    unroll!(mi in [0, 1, 2, 3] {
        unroll!(ni in [0, 1, 2, 3] {
            let (r0, c0) = (bm + 64 * wm + 16 * mi, bn + 32 * wn + 8 * ni);
            store_frag32(c, &acc[mi][ni], r0, c0, m, n);
        });
    });
}

/// Threads per block of the split kernels (32 x 8).
pub const SPLIT_BLOCK: (u32, u32) = (32, 8);

/// Dynamic shared memory of [`matmul_split_tf32_t_f32`]: a 32 x 33 tile.
pub const fn split_t_shared_bytes() -> usize {
    shared::shared_bytes::<f32>(0, 32 * 33)
}

/// 3xTF32's operand split, for the `wgmma` kernel
/// ([`matmul_tf32x3w_f32`](crate::hopper::matmul_tf32x3w_f32)):
/// `hi[i] = rna(x[i])`, `lo[i] = rna(x[i] - hi[i])` ([`mma::tf32_split`]).
/// One thread per element, grid-stride, coalesced: memory-bound (12 bytes
/// per element).
#[kernel(launch_bounds(256))]
pub fn matmul_split_tf32_f32(x: DeviceSlice<f32>, hi: DeviceSliceMut<f32>, lo: DeviceSliceMut<f32>) {
    if hi.len() < x.len() || lo.len() < x.len() {
        ptxlab_device::trap("split: an output is shorter than the input");
    }
    for i in thread::grid_stride(x.len()) {
        let (h, l) = mma::tf32_split(x.get(i));
        hi.set(i, h);
        lo.set(i, l);
    }
}

/// [`matmul_split_tf32_f32`] of a `rows x cols` row-major `x` into its
/// transpose: `hi`, `lo` are `cols x rows` (TF32 `wgmma` reads `B` only
/// K-major, so `B` (`k x n`) goes in as `B^T`, `n x k`).
///
/// Thread mapping: blocks of 32 x 8 threads, one 32 x 32 tile each; the
/// tile goes through shared memory (rows padded to 33 floats, so the
/// column reads of the transposed write-out hit 32 banks), both global
/// sides coalesced.
#[kernel(launch_bounds(256))]
pub fn matmul_split_tf32_t_f32(
    x: DeviceSlice<f32>,
    hi: DeviceSliceMut<f32>,
    lo: DeviceSliceMut<f32>,
    rows: u32,
    cols: u32,
) {
    let (rows, cols) = (rows as usize, cols as usize);
    if x.len() < rows * cols || hi.len() < rows * cols || lo.len() < rows * cols {
        ptxlab_device::trap("split: a buffer is shorter than its matrix");
    }
    let s = shared::dynamic_shared::<f32>(0, 32 * 33);
    let (tx, ty) = (thread::thread_idx_x() as usize, thread::thread_idx_y() as usize);
    let (c0, r0) = (thread::block_idx_x() as usize * 32, thread::block_idx_y() as usize * 32);
    for j in 0..4 {
        let (r, c) = (r0 + ty + 8 * j, c0 + tx);
        if r < rows && c < cols {
            s.set((ty + 8 * j) * 33 + tx, x.get(r * cols + c));
        }
    }
    sync_threads();
    for j in 0..4 {
        // Output row `c0 + ty + 8j` (a column of `x`), column `r0 + tx`.
        let (orow, ocol) = (c0 + ty + 8 * j, r0 + tx);
        if orow < cols && ocol < rows {
            let (h, l) = mma::tf32_split(s.get(tx * 33 + ty + 8 * j));
            hi.set(orow * rows + ocol, h);
            lo.set(orow * rows + ocol, l);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_memory_sizes() {
        assert_eq!(mma_shared_bytes(), 4096);
        assert_eq!(ldsm_shared_bytes(), 64 * 80 + 32 * 144);
        assert_eq!(pipe_shared_bytes(), 4 * (128 * 80 + 32 * 272));
        assert_eq!(tf32x3_shared_bytes(), 4 * (128 * 80 + 16 * 544));
        assert!(pipe_shared_bytes() <= 227 * 1024);
        assert_eq!(pipes_shared_bytes(), 3 * (128 * 128 + 64 * 256));
        assert!(2 * pipes_shared_bytes() <= 227 * 1024);
        // Rung 3e: 256 x 64 and 64 x 128 per stage, four stages, one block.
        assert_eq!(pipet_shared_bytes(), 4 * (256 * 128 + 64 * 256));
        assert!(pipet_shared_bytes() <= 227 * 1024);
        // The kernels' `launch_bounds` say 128 and 256.
        assert_eq!((PIPES_THREADS, PIPET_THREADS), (128, 256));
    }

    #[test]
    fn swizzle_spreads_every_ldmatrix_matrix_and_copied_line_over_all_banks() {
        // An `ldmatrix` matrix: rows r0..r0 + 8 (r0 a multiple of 8, as in
        // the kernel) at one logical chunk; the bank group of a chunk is its
        // position in its 128-byte line (rows are whole lines).
        for r0 in [0, 8, 56] {
            for q in 0..16 {
                let mut seen = [false; 8];
                for r in r0..r0 + 8 {
                    let p = swizzle(r, q);
                    assert_eq!(p / 8, q / 8, "a chunk stays in its line");
                    seen[p % 8] = true;
                }
                assert!(seen.iter().all(|s| *s), "rows {r0}.. chunk {q}");
            }
        }
        // A copied line (one row's eight chunks) is a permutation.
        for r in 0..16 {
            let mut seen = [false; 8];
            for q in 0..8 {
                seen[swizzle(r, q)] = true;
            }
            assert!(seen.iter().all(|s| *s), "row {r}");
        }
        assert_eq!(swizzle(3, 1), 2);
        assert_eq!(swizzle(9, 9), 8);
    }

    #[test]
    fn raster_visits_every_tile_once() {
        for (gx, gy) in [(1, 1), (5, 3), (3, 17), (64, 64), (55, 79)] {
            let mut seen = [0u8; 64 * 79];
            for bid in 0..gx * gy {
                let (r, c) = raster(bid, gx, gy, PIPES_GROUP);
                assert!(r < gy && c < gx, "{gx}x{gy} block {bid}: ({r}, {c})");
                seen[r * gx + c] += 1;
            }
            assert!(seen[..gx * gy].iter().all(|v| *v == 1), "{gx}x{gy}");
        }
        // Consecutive blocks walk down a group of 8 rows, then move right.
        assert_eq!(raster(0, 64, 64, 8), (0, 0));
        assert_eq!(raster(7, 64, 64, 8), (7, 0));
        assert_eq!(raster(8, 64, 64, 8), (0, 1));
        assert_eq!(raster(8 * 64, 64, 64, 8), (8, 0));
        // The last, shorter group of 79 = 9 x 8 + 7 rows.
        assert_eq!(raster(72 * 55 + 7, 55, 79, 8), (72, 1));
    }
}
