//! SGEMM ladder, `C = A B` (f32, row-major, any `m`, `n`, `k`), and the
//! column sum of a product, `colsum(A B)`, two ways.
//!
//! Shapes: `A` is `m x k`, `B` is `k x n`, `C` is `m x n`, all row-major.
//! Axis convention: `x` is the column (fastest-varying), `y` the row.
//!
//! The ladder, in order (each rung says what changed and what it buys):
//!
//! 1. [`matmul_naive_f32`]: one thread per output, operands from global memory.
//! 2. [`matmul_tiled_f32`]: 32x32 shared-memory tiles, one output per thread.
//! 3. [`matmul_regblock_f32`]: 64x64 block tile, 4x4 outputs per thread in
//!    registers.
//! 4. [`matmul_vec_f32`]: 128x128 block tile, 8x8 outputs per thread, 16-byte
//!    loads, `A` transposed (and padded) in shared memory, double-buffered.
//!    4b [`matmul_vec1_f32`]: the same with one block per SM and no spill.
//!    4c [`matmul_vec16_f32`]: tiles 16 deep (one barrier per 1024 FMAs per
//!    thread); 4d [`matmul_vec16x2_f32`]: 4c with two blocks per SM;
//!    4e [`matmul_vec16s_f32`]: 4c with grouped block order for L2 reuse.
//!    4f [`matmul_vecf_f32`]: 4b with a branch-free fast path for interior
//!    blocks (unchecked 16-byte loads and stores, indices advanced by
//!    constants); 4g [`matmul_vecf2_f32`]: 4f with two blocks per SM.
//! 5. [`matmul_async_f32`]: rung 4b's tile with asynchronous copies
//!    (`cp.async`) four stages deep, `A` row-major in shared memory;
//!    5b [`matmul_async2_f32`]: the same with two blocks per SM;
//!    5c [`matmul_asyncs2_f32`]: `A` read per step (8 registers, not 32) so
//!    two blocks per SM fit without a spill; 5d [`matmul_asyncs_f32`]: 5c
//!    with one block per SM.
//!
//! Every rung handles ragged edges: loads outside the matrices read zero,
//! stores outside are skipped, so `m`, `n`, `k` need not be tile multiples.
//!
//! The column sum: [`matmul_colsum_f32`] (column reduction of a matrix, rows
//! split in chunks, one atomic per column and chunk), [`matmul_vecmat_f32`]
//! (`out += v B`, the same shape of work with a weight per row) and
//! [`matmul_zero2_f32`] (clears the two accumulators first). Variants timed
//! beside them: eight loads in flight ([`matmul_colsum8_f32`],
//! [`matmul_vecmat8_f32`]; the chunk length is a run-time parameter of all
//! four) and both halves in one ticketed launch
//! ([`matmul_colsum_product_f32`] after [`matmul_zero3_f32`]).

use core::sync::atomic::{AtomicU32, Ordering, fence};
use ptxlab_device::mem::F32x4;
use ptxlab_device::prelude::*;

/// Rung 1 block: 32 columns x 8 rows of threads.
pub const NAIVE_BLOCK: (u32, u32) = (32, 8);

/// Rung 2 tile edge (outputs and `k` per tile).
pub const TILED_T: usize = 32;

/// Rung 3 block tile (`BM x BN` outputs), `k` depth per tile, outputs per thread edge.
pub const RB_BM: usize = 64;
/// Rung 3 block tile columns.
pub const RB_BN: usize = 64;
/// Rung 3 `k` per tile.
pub const RB_BK: usize = 16;
/// Rung 3 outputs per thread along each axis (4x4).
pub const RB_TM: usize = 4;
/// Rung 3 threads per block: `(64/4) * (64/4)`.
pub const RB_THREADS: u32 = ((RB_BM / RB_TM) * (RB_BN / RB_TM)) as u32;

/// Rung 4 block tile rows.
pub const VEC_BM: usize = 128;
/// Rung 4 block tile columns.
pub const VEC_BN: usize = 128;
/// Rung 4 `k` per tile.
pub const VEC_BK: usize = 8;
/// Rung 4 padded row of the transposed `A` tile (132 floats: the transposed
/// stores of one warp hit 32 different banks, and rows stay 16-byte aligned).
pub const VEC_AS_LD: usize = VEC_BM + 4;
/// Rung 4 threads per block (16 x 16, 8x8 outputs each).
pub const VEC_THREADS: u32 = 256;

/// Threads per block of the column-sum kernels.
pub const COLSUM_BLOCK: u32 = 256;
/// Rows each block of the column-sum kernels reduces by default (one atomic
/// per column per chunk). Small chunks give many short-lived blocks and
/// keep every SM streaming to the end; the chunk-length sweep that chose 16
/// is in `docs/workloads/matmul.md` ("The column sum").
pub const COLSUM_ROWS: usize = 16;

/// Dynamic shared memory of rung 2: one `A` tile and one `B` tile of 32x32 f32.
pub const fn tiled_shared_bytes() -> usize {
    shared::shared_bytes::<f32>(0, 2 * TILED_T * TILED_T)
}

/// Dynamic shared memory of rung 3: `As[BM][BK]` then `Bs[BK][BN]`.
pub const fn regblock_shared_bytes() -> usize {
    shared::shared_bytes::<f32>(0, RB_BM * RB_BK + RB_BK * RB_BN)
}

const VEC_AS_LEN: usize = 2 * VEC_BK * VEC_AS_LD;
const VEC_BS_LEN: usize = 2 * VEC_BK * VEC_BN;

/// Dynamic shared memory of rung 4: two stages of `As[BK][132]` (transposed)
/// then two stages of `Bs[BK][BN]`.
pub const fn vec_shared_bytes() -> usize {
    shared::shared_bytes::<f32>(0, VEC_AS_LEN + VEC_BS_LEN)
}

/// Rungs 4c to 4e: `k` per tile.
pub const VEC16_BK: usize = 16;

/// Dynamic shared memory of rungs 4c to 4e: rung 4's layout with tiles
/// [`VEC16_BK`] deep (33,280 bytes).
pub const fn vec16_shared_bytes() -> usize {
    shared::shared_bytes::<f32>(0, 2 * VEC16_BK * VEC_AS_LD + 2 * VEC16_BK * VEC_BN)
}

/// Rung 1: naive. One thread per output `C[row, col]`; the `k` loop reads a
/// row of `A` (the same address for a whole warp: a broadcast) and a column
/// of `B` (consecutive threads read consecutive columns: coalesced).
///
/// Thread mapping: `x` = column, `y` = row; 32 x 8 blocks. Every operand is
/// fetched from L1/L2 `k` times per output: the kernel is bound by the load
/// path, not by the FMA units (about 2 FLOP per 4-byte load at best).
#[kernel(launch_bounds(256))]
pub fn matmul_naive_f32(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    let (col, row) = thread::index_2d();
    let (m, n, k) = (m as usize, n as usize, k as usize);
    if row >= m || col >= n {
        return;
    }
    let mut acc = 0.0f32;
    let mut p = 0;
    while p < k {
        acc = a.get(row * k + p).mul_add(b.get(p * n + col), acc);
        p += 1;
    }
    c.set(row * n + col, acc);
}

/// Rung 2: shared-memory tiles of 32x32, one output per thread.
///
/// What changed: the block (32x32 threads) copies a 32x32 tile of `A` and of
/// `B` into shared memory once per step of 32 along `k`, then every thread
/// reads its row of the `A` tile and its column of the `B` tile from shared
/// memory. What it buys: each global element is loaded once per block instead
/// of 32 times, so global traffic drops 32x; the kernel becomes bound by
/// shared-memory loads (2 loads per FMA).
///
/// Shared layout: `As[ty][p]` at `ty*32 + p`, `Bs[p][tx]` at `1024 + p*32 + tx`.
/// `As` reads are broadcasts (one address per warp), `Bs` reads are 32
/// consecutive words: no bank conflicts. Out-of-range elements are stored as 0.
#[kernel(launch_bounds(1024))]
pub fn matmul_tiled_f32(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    const T: usize = TILED_T;
    let s = shared::dynamic_shared::<f32>(0, 2 * T * T);
    let (tx, ty) = (
        thread::thread_idx_x() as usize,
        thread::thread_idx_y() as usize,
    );
    let col = thread::block_idx_x() as usize * T + tx;
    let row = thread::block_idx_y() as usize * T + ty;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let mut acc = 0.0f32;
    let mut k0 = 0;
    while k0 < k {
        let ak = k0 + tx;
        let av = if row < m && ak < k {
            a.get(row * k + ak)
        } else {
            0.0
        };
        let bk = k0 + ty;
        let bv = if bk < k && col < n {
            b.get(bk * n + col)
        } else {
            0.0
        };
        s.set(ty * T + tx, av);
        s.set(T * T + ty * T + tx, bv);
        sync_threads();
        let mut p = 0;
        while p < T {
            // SAFETY: `ty*T + p < T*T` and `T*T + p*T + tx < 2*T*T` = the view's length.
            unsafe {
                acc = s
                    .get_unchecked(ty * T + p)
                    .mul_add(s.get_unchecked(T * T + p * T + tx), acc);
            }
            p += 1;
        }
        sync_threads();
        k0 += T;
    }
    if row < m && col < n {
        c.set(row * n + col, acc);
    }
}

/// Rung 3: register blocking. 64x64 block tile, 16 deep, 256 threads, each
/// computing a 4x4 patch of `C` in registers.
///
/// What changed: a thread now owns 16 outputs. Per step of `p` it loads 4
/// values of `A` and 4 of `B` from shared memory into registers and does
/// 16 FMAs with them (outer product), so shared-memory traffic per FMA drops
/// from 2 loads to 0.5. What it buys: the FMA units, not the shared-memory
/// pipe, start to set the pace.
///
/// Thread mapping: `tx = rank % 16` owns columns `4tx..4tx+4`, `ty = rank / 16`
/// rows `4ty..4ty+4` of the block tile. Loads: each thread copies 4 elements
/// of the `A` tile (64x16) and 4 of the `B` tile (16x64), coalesced along rows.
/// Shared layout: `As[r][p]` at `r*16 + p`, then `Bs[p][c]` at `1024 + p*64 + c`.
#[kernel(launch_bounds(256))]
pub fn matmul_regblock_f32(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    const BM: usize = RB_BM;
    const BN: usize = RB_BN;
    const BK: usize = RB_BK;
    const TM: usize = RB_TM;
    const NT: usize = RB_THREADS as usize;
    let s = shared::dynamic_shared::<f32>(0, BM * BK + BK * BN);
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let t = thread::thread_rank() as usize;
    let tx = t % (BN / TM);
    let ty = t / (BN / TM);
    let bm = thread::block_idx_y() as usize * BM;
    let bn = thread::block_idx_x() as usize * BN;
    let mut acc = [[0.0f32; TM]; TM];
    let mut k0 = 0;
    while k0 < k {
        // A tile: 64 rows x 16 columns = 1024 elements, 4 per thread.
        let mut q = 0;
        while q < (BM * BK) / NT {
            let e = t + q * NT;
            let (r, p) = (e / BK, e % BK);
            let (gr, gp) = (bm + r, k0 + p);
            let v = if gr < m && gp < k {
                a.get(gr * k + gp)
            } else {
                0.0
            };
            s.set(r * BK + p, v);
            q += 1;
        }
        // B tile: 16 rows x 64 columns, 4 per thread.
        let mut q = 0;
        while q < (BK * BN) / NT {
            let e = t + q * NT;
            let (p, cc) = (e / BN, e % BN);
            let (gp, gc) = (k0 + p, bn + cc);
            let v = if gp < k && gc < n {
                b.get(gp * n + gc)
            } else {
                0.0
            };
            s.set(BM * BK + p * BN + cc, v);
            q += 1;
        }
        sync_threads();
        let mut p = 0;
        while p < BK {
            let mut af = [0.0f32; TM];
            let mut bf = [0.0f32; TM];
            for i in 0..TM {
                // SAFETY: `(4ty + i)*16 + p < 64*16` and
                // `1024 + p*64 + 4tx + i < 1024 + 16*64`: inside the view.
                unsafe {
                    af[i] = s.get_unchecked((ty * TM + i) * BK + p);
                    bf[i] = s.get_unchecked(BM * BK + p * BN + tx * TM + i);
                }
            }
            for i in 0..TM {
                for j in 0..TM {
                    acc[i][j] = af[i].mul_add(bf[j], acc[i][j]);
                }
            }
            p += 1;
        }
        sync_threads();
        k0 += BK;
    }
    for i in 0..TM {
        let r = bm + ty * TM + i;
        for j in 0..TM {
            let cc = bn + tx * TM + j;
            if r < m && cc < n {
                c.set(r * n + cc, acc[i][j]);
            }
        }
    }
}

#[inline(always)]
fn ld4(s: SharedSlice<F32x4>, i: usize) -> [f32; 4] {
    // SAFETY: callers pass `i` inside the view (indices derived from the tile
    // constants); the simulator checks it anyway.
    unsafe { s.get_unchecked(i).0 }
}

/// One step `p` of rung 4's tile: two float4 of `As[p]`, two of `Bs[p]`,
/// and the 8x8 outer product into `acc`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn outer_step(
    acc: &mut [[f32; 8]; 8],
    sa4: SharedSlice<F32x4>,
    sb4: SharedSlice<F32x4>,
    abase: usize,
    bbase: usize,
    p: usize,
    tx: usize,
    ty: usize,
) {
    let a0 = ld4(sa4, abase + p * VEC_AS_LD / 4 + ty);
    let a1 = ld4(sa4, abase + p * VEC_AS_LD / 4 + 16 + ty);
    let af = [a0[0], a0[1], a0[2], a0[3], a1[0], a1[1], a1[2], a1[3]];
    outer8(acc, af, sb4, bbase + p * VEC_BN / 4, tx);
}

/// The 8x8 outer product of one step of rungs 4 and 5: this thread's 8 `A`
/// values `af` times the two float4 of `Bs` row `brow` (float4 index of the
/// row's start) it owns, columns `4tx..4tx+4` and `64+4tx..+4`, into `acc`.
#[inline(always)]
fn outer8(acc: &mut [[f32; 8]; 8], af: [f32; 8], sb4: SharedSlice<F32x4>, brow: usize, tx: usize) {
    let b0 = ld4(sb4, brow + tx);
    let b1 = ld4(sb4, brow + 16 + tx);
    let bf = [b0[0], b0[1], b0[2], b0[3], b1[0], b1[1], b1[2], b1[3]];
    for i in 0..8 {
        for j in 0..8 {
            acc[i][j] = af[i].mul_add(bf[j], acc[i][j]);
        }
    }
}

/// Rung 4: 128x128 block tile, 8 deep, 256 threads with 8x8 outputs each,
/// 16-byte loads, `A` transposed in shared memory, two shared stages.
///
/// What changed from rung 3:
/// * 64 outputs per thread: per step of `p` a thread loads 8 `A` values and
///   8 `B` values and does 64 FMAs (16 FMAs per 16-byte shared load).
/// * `A` is stored transposed, `As[p][r]`, so the 8 `A` values a thread needs
///   for one `p` are contiguous and come in two `ld.shared.v4` (rung 3 needed
///   one scalar load each). Rows of `As` are padded to 132 floats so the
///   scalar transposed stores of a warp fall in 32 distinct banks.
/// * Global loads are 16-byte (`ld.global.v4`) when the row length is a
///   multiple of 4 and the group is inside the matrix; otherwise the group is
///   loaded element by element with zero fill (ragged edges, odd `k`/`n`).
/// * Two shared stages: the next tile is fetched into registers while the
///   current one is multiplied, then stored to the other stage; one barrier
///   per tile. Global latency hides behind 512 FMAs per thread.
/// * `launch_bounds(256, 2)`: ptxas must fit 128 registers so two blocks
///   (16 warps) share an SM, at the price of a small spill; without the `2`
///   (rung 4b) there is no spill but only one block per SM. Register and
///   spill counts: `docs/workloads/matmul.md` ("The ladder").
///
/// Thread mapping: `tx = rank % 16`, `ty = rank / 16`. The 8x8 patch is split
/// in 2x2 blocks of 4x4: rows `4ty..4ty+4` and `64+4ty..64+4ty+4`, columns
/// `4tx..4tx+4` and `64+4tx..64+4tx+4`, so the 16 lanes with different `tx`
/// read 16 consecutive float4 of `Bs` (conflict-free) and `As` reads are
/// broadcasts. Tile loads: thread `t` loads `A[bm + t/2, k0 + 4(t%2)..+4]`
/// and `B[k0 + t/32, bn + 4(t%32)..+4]`.
///
/// Shared layout (floats): `As[stage][p][r]` at `stage*8*132 + p*132 + r`,
/// then `Bs[stage][p][c]` at `2*8*132 + stage*8*128 + p*128 + c`.
#[kernel(launch_bounds(256, 2))]
pub fn matmul_vec_f32(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    vec_body::<VEC_BK, false>(a, b, c, m, n, k);
}

/// Rung 4b: [`matmul_vec_f32`] with `launch_bounds(256)` only, so ptxas may
/// use up to 255 registers: no spill, but one block (8 warps) per SM instead
/// of two. The benchmark runs both in the same process to show which side of
/// the registers-against-occupancy trade wins on the device at hand.
#[kernel(launch_bounds(256))]
pub fn matmul_vec1_f32(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    vec_body::<VEC_BK, false>(a, b, c, m, n, k);
}

/// Rung 4c: [`matmul_vec1_f32`] with tiles 16 deep instead of 8.
///
/// What changed: `BK = 16`. A tile is now 128x16 of `A` and 16x128 of `B`;
/// each thread fetches two float4 of each (two passes of rung 4's mapping:
/// `A[bm + t/2, k0 + 4(t%2) + 8j..+4]` and `B[k0 + t/32 + 8j, bn + 4(t%32)..+4]`
/// for `j = 0, 1`), and between two barriers it does 16 outer-product steps,
/// 1024 FMAs, instead of 8 (512).
///
/// Why it should be faster: with one block (8 warps) per SM, every
/// `bar.sync` drains the SM: the warps that arrive first idle until the last
/// one has stored its share of the next tile, and after the barrier every
/// warp restarts with shared loads before its first FMA. Rung 4b pays that
/// bubble (tens of cycles) once per 512 FMAs per thread (about 1000 issue
/// cycles per scheduler); here once per 1024, and the per-tile overhead
/// (global loads, stores to shared, loop, index arithmetic) is amortised over
/// twice the FMAs. The cost: two stages of 16-deep tiles are 33,280 bytes of
/// shared memory (rung 4: 16,640), still under the 48 KiB default, and 8 more
/// registers for the prefetched tile.
///
/// Shared layout (floats): `As[stage][p][r]` at `stage*16*132 + p*132 + r`,
/// then `Bs[stage][p][c]` at `2*16*132 + stage*16*128 + p*128 + c`. The
/// transposed `As` stores of a warp (16 rows x 2 column groups, for each of
/// the four floats of a group) still fall in 32 distinct banks.
///
/// One block of 256 threads per SM, as rung 4b (two would need <= 128
/// registers; the counts are in `docs/workloads/matmul.md`).
#[kernel(launch_bounds(256))]
pub fn matmul_vec16_f32(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    vec_body::<VEC16_BK, false>(a, b, c, m, n, k);
}

/// Rung 4d: [`matmul_vec16_f32`] with `launch_bounds(256, 2)`, as rung 4 is to
/// rung 4b: ptxas must fit 128 registers so two blocks share an SM, and the
/// barrier bubble of one block is filled by the other block's FMAs. Two
/// blocks take 66,560 bytes of shared memory (an H100 SM has up to 228 KiB).
///
/// At 128 registers the body spills more than rung 4's does; whether 16
/// warps per SM pay for that local-memory traffic is the question this rung
/// asks the device (counts and answer: `docs/workloads/matmul.md`).
#[kernel(launch_bounds(256, 2))]
pub fn matmul_vec16x2_f32(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    vec_body::<VEC16_BK, false>(a, b, c, m, n, k);
}

/// Rung 4e: [`matmul_vec16_f32`] with grouped block rasterization.
///
/// What changed: the block-tile a block computes is no longer
/// `(blockIdx.y, blockIdx.x)`. The linear block id `L = y*gx + x` (the order
/// in which the hardware dispatches blocks) walks down a group of
/// [`VEC_GROUP`] block rows first, then moves one block column right:
/// `group = L / (8 gx)`, `by = 8 group + (L % (8 gx)) % rows_in_group`,
/// `bx = (L % (8 gx)) / rows_in_group` (the last group may have fewer rows).
/// It is a bijection on the grid, so every tile is still computed once.
///
/// Why it could be faster: the blocks resident at one time (one per SM, 132
/// on an H100) then cover about 8 block rows x 17 block columns of `C`
/// instead of 4 rows x 32 columns, so together they read about 25 panels of
/// `A` and `B` instead of 36: less L2 traffic per FMA and, where the working
/// set would not fit in L2, less DRAM traffic. At 4096^3 the row-major order
/// already hits L2 well (the blocks move along `k` roughly together), so
/// this rung measures how much is left to gain from the order alone
/// (`docs/workloads/matmul.md` has the answer).
#[kernel(launch_bounds(256))]
pub fn matmul_vec16s_f32(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    vec_body::<VEC16_BK, true>(a, b, c, m, n, k);
}

/// Rung 4f: rung 4b with a fast path for interior blocks: every block whose
/// 128x128 tile of `C` lies inside `C`, when `k % 8 == 0` and `n % 4 == 0`,
/// runs a main loop with no bounds check at all; the other blocks (the last
/// block row and column when `m` or `n` is not a multiple of 128, or every
/// block when `k` or `n` breaks the alignment) run rung 4b's checked body,
/// unchanged.
///
/// Why: in rung 4b's main loop ptxas emits, per tile, the checked loads of
/// `load_group!` (a compare pair per condition on 64-bit indices, a branch to
/// the element-by-element fallback with its `BSSY`/`BSYNC` convergence
/// barriers) and recomputes the 64-bit load addresses from products: many
/// instructions besides the 512 FFMA and 32 LDS.128 even when every load is
/// in bounds. They take issue slots from the FFMAs, and the branches cut the
/// tile into basic blocks across which ptxas does not move instructions.
///
/// What changed, for interior blocks (`vec_interior`):
/// * The tile loads are `get_vec_unchecked` with no condition: every group
///   is inside its matrix and 16-byte aligned for the whole `k` loop (the
///   interior test below is the proof).
/// * Float4 indices advance by constants per tile (`A`: 2 float4 along the
///   row, `B`: 8 rows, `2n` float4) instead of being recomputed from
///   `row * cols + col`.
/// * The last tile's prefetch is not skipped by a branch: the indices stop
///   advancing (a select) and the last tile's groups are loaded again and
///   stored into the idle stage, which nobody reads any more. So the loop
///   body, 8 steps of 64 FMAs with the prefetch and the stores to shared
///   memory, is one basic block that ptxas may schedule as a whole.
/// * `C` is written with 16 unchecked 16-byte stores per thread.
///
/// The decision is block-uniform (it depends on `blockIdx`, `m`, `n`, `k`
/// and the buffer lengths only), so no warp diverges on it. Thread mapping,
/// shared layout (two stages of `As[8][132]` transposed, `Bs[8][128]`) and
/// arithmetic are rung 4's, so results are bitwise those of rung 4b.
///
/// Why it is faster than rung 4b: the interior loop's FFMAs take a larger
/// share of the issue slots (fewer integer and control instructions per
/// tile). The SASS instruction counts, the variants tried and not kept and
/// the measured speed-up are in `docs/workloads/matmul.md` ("Rungs 4f/4g by
/// the SASS").
#[kernel(launch_bounds(256))]
pub fn matmul_vecf_f32(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    vec_fast_body(a, b, c, m, n, k);
}

/// Rung 4g: [`matmul_vecf_f32`] with `launch_bounds(256, 2)` (two blocks per
/// SM if the body fits 128 registers), as rung 4 is to rung 4b: the fast
/// path needs no registers for bounds, indices of the fallback or its
/// predicates.
///
/// Why it is faster than rung 4f: at 128 registers the kernel spills, but
/// only in the checked path of edge blocks (the kernel's one register count
/// covers both paths); the interior path has no local-memory access and the
/// same loop as rung 4f. With the spills off the hot path, the second
/// block's 8 warps fill each block's barrier bubbles for free (rung 4, whose
/// spill loads are in its loop, gains nothing from its second block). The
/// fastest SGEMM rung, `Rung::BEST`; figures in `docs/workloads/matmul.md`.
#[kernel(launch_bounds(256, 2))]
pub fn matmul_vecf2_f32(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    vec_fast_body(a, b, c, m, n, k);
}

/// `x[row, col..col+4]` of a row-major `rows x cols` matrix, zero outside
/// it: one 16-byte load when the group is inside and `vec_ok` (`cols % 4 ==
/// 0`, so the group is aligned), element by element otherwise. A macro, not
/// a function, so rung 4's loads expand to exactly the code that was
/// measured (as a function, ptxas spilled more; see
/// `docs/workloads/matmul.md`).
macro_rules! load_group {
    ($x:ident, $row:ident, $rows:ident, $col:ident, $cols:ident, $vec_ok:expr) => {
        if $row < $rows && $col + 4 <= $cols && $vec_ok {
            // SAFETY: the group `x[row, col..col+4]` is inside `x` (checked
            // above) and starts at a multiple of 4 because `cols % 4 == 0`
            // and callers pass `col % 4 == 0`.
            unsafe { $x.get_vec_unchecked::<F32x4>(($row * $cols + $col) / 4).0 }
        } else {
            let mut v = [0.0f32; 4];
            for q in 0..4 {
                if $row < $rows && $col + q < $cols {
                    v[q] = $x.get($row * $cols + $col + q);
                }
            }
            v
        }
    };
}

/// Rung 5: stages in flight (tiles copied ahead of the one being multiplied).
pub const ASYNC_STAGES: usize = 4;
/// Rung 5: `k` per tile.
pub const ASYNC_BK: usize = 8;

/// Rung 5: floats per row of `As` (`A`'s 8 columns, unpadded).
pub const ASYNC_AS_LD: usize = 8;
/// Rungs 5c and 5d: floats per row of `As`, padded from 8 to 12 so the two
/// rows a warp reads with one scalar load (4 apart: 192 bytes) fall in
/// different banks; still a multiple of 4 (16-byte `cp.async` targets).
pub const ASYNC_AS_LD_SCALAR: usize = 12;

/// Dynamic shared memory of rungs 5 to 5d: [`ASYNC_STAGES`] stages of
/// `As[128][a_ld]` (row-major, as in global memory) then as many of
/// `Bs[8][128]`: 32 KiB with `a_ld = 8`, 40 KiB with 12.
pub const fn async_shared_bytes(a_ld: usize) -> usize {
    shared::shared_bytes::<f32>(0, ASYNC_STAGES * (VEC_BM * a_ld + ASYNC_BK * VEC_BN))
}

/// Rung 5: rung 4b's 128x128 tile and 8x8 outputs per thread, with the
/// tiles brought in by asynchronous copies (`cp.async`, sm_80+), four stages
/// deep, and `A` kept row-major in shared memory.
///
/// What changed from rung 4:
/// * Global to shared without registers: each thread starts one 16-byte
///   `cp.async` for `A` and one for `B` per tile
///   ([`SharedSlice::copy_async`]); rung 4 loaded them into 8 registers,
///   kept them live across the tile's 512 FMAs, then stored them.
/// * Four stages instead of two: tiles `t+1..t+3` are in flight while tile
///   `t` is multiplied, so a tile has three tiles' worth of FMAs (about
///   3000 issue cycles per scheduler) to arrive from L2 instead of one.
///   Per tile: `wait_group 2` (this thread's copies of tile `t` landed),
///   one barrier (everyone's landed, and everyone is done with tile `t-1`,
///   whose stage the next copies overwrite), start tile `t+3`, commit.
/// * `A` is not transposed: `cp.async` copies bytes as they are, so `As`
///   keeps `A`'s layout, `As[r][p]`. A thread reads, per half tile (4 of
///   depth), one float4 `As[r][4h..4h+4]` for each of its 8 rows: 8
///   `ld.shared.v4` per 4 steps, two per step as in rung 4, at the price of
///   32 registers holding 4 steps of `A` (the 8 staging registers are gone).
///   The two rows a warp reads at once are in different quarter-warps of the
///   16-byte access, so there is no bank conflict.
///
/// Thread mapping as rung 4 (`tx = rank % 16`, `ty = rank / 16`; rows
/// `4ty..4ty+4` and `64+4ty..+4`, columns `4tx..4tx+4` and `64+4tx..+4`).
/// Copies: thread `t` copies `A[bm + t/2, k0 + 4(t%2)..+4]` to float4
/// `t` of the `A` stage and `B[k0 + t/32, bn + 4(t%32)..+4]` to float4 `t`
/// of the `B` stage (a warp writes 512 contiguous bytes). Groups outside
/// the matrix are zero-filled (`src-size` 0). When `k` (or `n`) is not a
/// multiple of 4 the rows of `A` (or `B`) are not 16-byte aligned; that
/// operand is then loaded element by element and stored synchronously,
/// which the same wait-and-barrier orders.
///
/// Shared layout (float4 units): `As[s]` at `512 s + 2 r + h`, then `Bs[s]`
/// at `512 S + 256 s + 32 p + c4` for stage `s < S = 4`.
///
/// What it tests: whether rung 4 waits on global memory. On the device the
/// deeper pipeline does not pay, so it does not; the rung stays as that
/// lesson (figures and registers: `docs/workloads/matmul.md`, "What rung 5
/// taught").
#[kernel(launch_bounds(256))]
pub fn matmul_async_f32(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    async_body::<false>(a, b, c, m, n, k);
}

/// Rung 5b: [`matmul_async_f32`] with `launch_bounds(256, 2)`: two blocks
/// (16 warps) per SM if ptxas fits the body in 128 registers. Rung 5 holds
/// no prefetched tile in registers, but the 32 registers of `A` fragments
/// cost more than the 8 staging registers they replace, so at 128 registers
/// it spills (counts and timings: `docs/workloads/matmul.md`).
#[kernel(launch_bounds(256, 2))]
pub fn matmul_async2_f32(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    async_body::<false>(a, b, c, m, n, k);
}

/// Rung 5c: rung 5 with `A` read one float per row and step (8 scalar
/// `ld.shared` per step, rows padded to 12 floats) instead of a float4 per
/// row and half tile, and `launch_bounds(256, 2)`.
///
/// Why: rung 5b has to hold 4 steps of `A` (32 registers) and spills at
/// 128. Reading `A` per step needs 8 registers, so the body should fit in
/// 128 without a spill and two blocks (16 warps) share an SM, twice the
/// warps to hide shared-load and barrier latency. The price: 10 shared
/// loads per 64 FMAs instead of 4.
///
/// LLVM merges the per-step loads of a row back into `ld.shared.v4` and
/// ptxas hoists them, so at 128 registers the body still spills (outside
/// the main loop); what that cost on the device is in
/// `docs/workloads/matmul.md` ("What rung 5 taught").
#[kernel(launch_bounds(256, 2))]
pub fn matmul_asyncs2_f32(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    async_body::<true>(a, b, c, m, n, k);
}

/// Rung 5d: [`matmul_asyncs2_f32`] with `launch_bounds(256)` (one block per
/// SM), to separate the effect of the scalar `A` reads from that of the
/// occupancy.
#[kernel(launch_bounds(256))]
pub fn matmul_asyncs_f32(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    async_body::<true>(a, b, c, m, n, k);
}

/// One step `p` of rungs 5c/5d: the 8 `A` values of this thread's rows at
/// depth `p` (scalar loads from `As[r][p]`, row stride `ld`), two float4 of
/// `Bs[p]`, 64 FMAs.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn async_step_scalar(
    acc: &mut [[f32; 8]; 8],
    sa: SharedSlice<f32>,
    abase: usize,
    ld: usize,
    p: usize,
    sb4: SharedSlice<F32x4>,
    bbase: usize,
    tx: usize,
    ty: usize,
) {
    let mut af = [0.0f32; 8];
    for i in 0..8 {
        let r = (i / 4) * 64 + 4 * ty + i % 4;
        // SAFETY: `abase + r*ld + p` is inside one stage of `As` (`r < 128`,
        // `p < 8 <= ld`), and the view holds every stage.
        af[i] = unsafe { sa.get_unchecked(abase + r * ld + p) };
    }
    outer8(acc, af, sb4, bbase + p * (VEC_BN / 4), tx);
}

/// One step `p` of rung 5: `A` for this step from the registers `av`
/// (column `q` of the half tile), two float4 of `Bs[p]`, 64 FMAs.
#[inline(always)]
fn async_step(
    acc: &mut [[f32; 8]; 8],
    av: &[[f32; 4]; 8],
    q: usize,
    sb4: SharedSlice<F32x4>,
    bbase: usize,
    tx: usize,
) {
    let af = [
        av[0][q], av[1][q], av[2][q], av[3][q], av[4][q], av[5][q], av[6][q], av[7][q],
    ];
    outer8(acc, af, sb4, bbase, tx);
}

/// Half `h` of a rung-5 tile (depth `4h..4h+4`): 8 float4 of `As`, then
/// four steps.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn async_half(
    acc: &mut [[f32; 8]; 8],
    sa4: SharedSlice<F32x4>,
    sb4: SharedSlice<F32x4>,
    abase: usize,
    bbase: usize,
    h: usize,
    tx: usize,
    ty: usize,
) {
    let mut av = [[0.0f32; 4]; 8];
    for i in 0..8 {
        let r = (i / 4) * 64 + 4 * ty + i % 4;
        av[i] = ld4(sa4, abase + (ASYNC_AS_LD / 4) * r + h);
    }
    let b = bbase + 4 * h * (VEC_BN / 4);
    async_step(acc, &av, 0, sb4, b, tx);
    async_step(acc, &av, 1, sb4, b + VEC_BN / 4, tx);
    async_step(acc, &av, 2, sb4, b + 2 * (VEC_BN / 4), tx);
    async_step(acc, &av, 3, sb4, b + 3 * (VEC_BN / 4), tx);
}

/// The body of rungs 5 to 5d; `SCALAR_A` selects 5c/5d's per-step scalar
/// `A` reads and padded `As` rows.
#[inline(always)]
fn async_body<const SCALAR_A: bool>(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    const S: usize = ASYNC_STAGES;
    const BK: usize = ASYNC_BK;
    const BM: usize = VEC_BM;
    const BN: usize = VEC_BN;
    // Floats per row of `As`, and float4 per stage of each operand.
    let ld = if SCALAR_A {
        ASYNC_AS_LD_SCALAR
    } else {
        ASYNC_AS_LD
    };
    let a4 = BM * ld / 4;
    const B4: usize = BK * BN / 4;
    let sa4 = shared::dynamic_shared::<F32x4>(0, S * a4);
    let sa = shared::dynamic_shared::<f32>(0, S * a4 * 4);
    let sb4 = shared::dynamic_shared::<F32x4>(S * a4 * 16, S * B4);
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let t = thread::thread_idx_x() as usize;
    let tx = t % 16;
    let ty = t / 16;
    let bm = thread::block_idx_y() as usize * BM;
    let bn = thread::block_idx_x() as usize * BN;
    let a_vec_ok = k % 4 == 0;
    let b_vec_ok = n % 4 == 0;
    let a_row = bm + t / 2;
    let a_col = (t % 2) * 4;
    let b_row = t / 32;
    let b_col = bn + (t % 32) * 4;

    // Starts (or, for unaligned rows, performs) the copies of tile `tile`
    // into stage `stage`: float4 `(t/2)(ld/4) + t%2` of the `A` stage (row
    // `t/2`, half `t%2`; `< a4`) and float4 `t` of the `B` stage (`< B4`).
    let a_dst = (t / 2) * (ld / 4) + t % 2;
    let issue = |stage: usize, tile: usize| {
        let k0 = tile * BK;
        copy_group(
            sa4,
            stage * a4 + a_dst,
            a,
            a_row,
            m,
            k0 + a_col,
            k,
            a_vec_ok,
        );
        copy_group(sb4, stage * B4 + t, b, k0 + b_row, k, b_col, n, b_vec_ok);
    };

    let mut acc = [[0.0f32; 8]; 8];
    let ntiles = k.div_ceil(BK);
    // Prologue: tiles 0..S-1 in flight, one commit group each (empty groups
    // past the last tile keep the count uniform).
    for s in 0..S - 1 {
        if s < ntiles {
            issue(s, s);
        }
        shared::commit_async_copies();
    }
    let mut tile = 0;
    while tile < ntiles {
        // Groups committed: S - 1 + tile; at most S - 2 pending means the
        // first tile + 1 are complete, tile `tile` included.
        shared::wait_async_copies::<{ (ASYNC_STAGES - 2) as u32 }>();
        sync_threads();
        let next = tile + S - 1;
        if next < ntiles {
            issue(next % S, next);
        }
        shared::commit_async_copies();
        let stage = tile % S;
        if SCALAR_A {
            let (ab, bb) = (stage * a4 * 4, stage * B4);
            async_step_scalar(&mut acc, sa, ab, ld, 0, sb4, bb, tx, ty);
            async_step_scalar(&mut acc, sa, ab, ld, 1, sb4, bb, tx, ty);
            async_step_scalar(&mut acc, sa, ab, ld, 2, sb4, bb, tx, ty);
            async_step_scalar(&mut acc, sa, ab, ld, 3, sb4, bb, tx, ty);
            async_step_scalar(&mut acc, sa, ab, ld, 4, sb4, bb, tx, ty);
            async_step_scalar(&mut acc, sa, ab, ld, 5, sb4, bb, tx, ty);
            async_step_scalar(&mut acc, sa, ab, ld, 6, sb4, bb, tx, ty);
            async_step_scalar(&mut acc, sa, ab, ld, 7, sb4, bb, tx, ty);
        } else {
            async_half(&mut acc, sa4, sb4, stage * a4, stage * B4, 0, tx, ty);
            async_half(&mut acc, sa4, sb4, stage * a4, stage * B4, 1, tx, ty);
        }
        tile += 1;
    }
    store_patch(c, bm + ty * 4, bn + tx * 4, m, n, &acc);
}

/// Block rows per group of the grouped rasterization of rung 4e.
pub const VEC_GROUP: usize = 8;

/// `(bx, by)`, the block tile of this block: `(blockIdx.x, blockIdx.y)`, or
/// with `GROUPED` the grouped order of rung 4e (a bijection on the grid).
#[inline(always)]
fn block_tile<const GROUPED: bool>() -> (usize, usize) {
    let (bx, by) = (
        thread::block_idx_x() as usize,
        thread::block_idx_y() as usize,
    );
    if !GROUPED {
        return (bx, by);
    }
    let (gx, gy) = (thread::grid_dim_x() as usize, thread::grid_dim_y() as usize);
    let linear = by * gx + bx;
    // `gx >= 1` and `first <= by < gy` on every launch; the `max(1)`s only
    // tell the compiler the divisors are not zero (no panic path in the PTX).
    let per_group = (VEC_GROUP * gx).max(1);
    let first = (linear / per_group) * VEC_GROUP;
    let rows = gy.saturating_sub(first).clamp(1, VEC_GROUP);
    let local = linear % per_group;
    (local / rows, first + local % rows)
}

/// Eight steps `p0..p0+8` of a tile, written out (512 FMAs, 32 shared loads,
/// straight-line code).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn steps8(
    acc: &mut [[f32; 8]; 8],
    sa4: SharedSlice<F32x4>,
    sb4: SharedSlice<F32x4>,
    abase: usize,
    bbase: usize,
    p0: usize,
    tx: usize,
    ty: usize,
) {
    outer_step(acc, sa4, sb4, abase, bbase, p0, tx, ty);
    outer_step(acc, sa4, sb4, abase, bbase, p0 + 1, tx, ty);
    outer_step(acc, sa4, sb4, abase, bbase, p0 + 2, tx, ty);
    outer_step(acc, sa4, sb4, abase, bbase, p0 + 3, tx, ty);
    outer_step(acc, sa4, sb4, abase, bbase, p0 + 4, tx, ty);
    outer_step(acc, sa4, sb4, abase, bbase, p0 + 5, tx, ty);
    outer_step(acc, sa4, sb4, abase, bbase, p0 + 6, tx, ty);
    outer_step(acc, sa4, sb4, abase, bbase, p0 + 7, tx, ty);
}

/// The body of rungs 4 to 4e: `BK` is the tile depth (8 or 16), `GROUPED`
/// selects the grouped block order of rung 4e.
#[inline(always)]
fn vec_body<const BK: usize, const GROUPED: bool>(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    const BM: usize = VEC_BM;
    const BN: usize = VEC_BN;
    const LDA: usize = VEC_AS_LD;
    const { assert!(BK == 8 || BK == 16) };
    // Passes of the tile load: each thread fetches one float4 of `A` and one
    // of `B` per 8 of depth.
    let passes = BK / 8;
    let as_len = 2 * BK * LDA;
    let bs_len = 2 * BK * BN;
    let sa = shared::dynamic_shared::<f32>(0, as_len);
    let sa4 = shared::dynamic_shared::<F32x4>(0, as_len / 4);
    let sb4 = shared::dynamic_shared::<F32x4>(as_len * 4, bs_len / 4);
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let t = thread::thread_idx_x() as usize;
    let tx = t % 16;
    let ty = t / 16;
    let (bx, by) = block_tile::<GROUPED>();
    let bm = by * BM;
    let bn = bx * BN;
    let a_vec_ok = k % 4 == 0;
    let b_vec_ok = n % 4 == 0;
    // This thread's share of each tile load (pass `j` adds `8j` to the
    // column of `A` and to the row of `B`).
    let a_row = bm + t / 2;
    let a_col = (t % 2) * 4;
    let b_row = t / 32;
    let b_col = bn + (t % 32) * 4;

    let load_a = |k0: usize| -> [f32; 4] {
        let gc = k0 + a_col;
        load_group!(a, a_row, m, gc, k, a_vec_ok)
    };
    let load_b = |k0: usize| -> [f32; 4] {
        let gr = k0 + b_row;
        load_group!(b, gr, k, b_col, n, b_vec_ok)
    };
    // Fetches pass `j` of the tile starting at depth `k0`.
    let load = |k0: usize, j: usize| (load_a(k0 + 8 * j), load_b(k0 + 8 * j));
    let store = |stage: usize, j: usize, av: [f32; 4], bv: [f32; 4]| {
        let base = stage * BK * LDA;
        for q in 0..4 {
            // SAFETY: `a_col + 8j + q < BK` and `t/2 < 128 <= LDA`: inside
            // one stage of `As` (`BK x LDA`), and `stage < 2`.
            unsafe { sa.set_unchecked(base + (a_col + 8 * j + q) * LDA + t / 2, av[q]) };
        }
        // SAFETY: float4 index `(stage*BK*128 + (b_row + 8j)*128 + 4(t%32)) / 4`
        // with `b_row + 8j < BK`: inside the `Bs` view (two stages of BK x 128).
        unsafe {
            sb4.set_unchecked(
                (stage * BK * BN + (b_row + 8 * j) * BN) / 4 + t % 32,
                F32x4(bv),
            )
        };
    };

    let mut acc = [[0.0f32; 8]; 8];
    let ntiles = k.div_ceil(BK);
    for j in 0..passes {
        let (av, bv) = load(0, j);
        store(0, j, av, bv);
    }
    sync_threads();
    let mut tile = 0;
    while tile < ntiles {
        let stage = tile % 2;
        let has_next = tile + 1 < ntiles;
        // Two register slots for the prefetch; `BK = 8` uses the first only.
        let mut next = [([0.0f32; 4], [0.0f32; 4]); 2];
        if has_next {
            for j in 0..passes {
                next[j] = load((tile + 1) * BK, j);
            }
        }
        let abase = stage * BK * LDA / 4;
        let bbase = stage * BK * BN / 4;
        steps8(&mut acc, sa4, sb4, abase, bbase, 0, tx, ty);
        if BK == 16 {
            steps8(&mut acc, sa4, sb4, abase, bbase, 8, tx, ty);
        }
        if has_next {
            for j in 0..passes {
                store(1 - stage, j, next[j].0, next[j].1);
            }
        }
        sync_threads();
        tile += 1;
    }
    store_patch(c, bm + ty * 4, bn + tx * 4, m, n, &acc);
}

/// Whether rungs 4f and 4g take the fast path for the block tile at row
/// `bm`, column `bn` of an `m x n x k` product (besides the buffer lengths,
/// which the kernel also checks): the 128x128 tile lies inside `C`, `k` is a
/// positive multiple of 8 (whole tiles along `k`, rows of `A` 16-byte
/// aligned) and `n` a multiple of 4 (rows of `B` and `C` 16-byte aligned).
/// Public so tests can tell which blocks of a launch run which path.
pub const fn vecf_fast_tile(bm: usize, bn: usize, m: usize, n: usize, k: usize) -> bool {
    bm + VEC_BM <= m
        && bn + VEC_BN <= n
        && k >= VEC_BK
        && k.is_multiple_of(VEC_BK)
        && n.is_multiple_of(4)
}

/// The body of rungs 4f and 4g: interior blocks take `vec_interior`, the
/// others rung 4b's checked `vec_body`.
#[inline(always)]
fn vec_fast_body(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    let (mu, nu, ku) = (m as usize, n as usize, k as usize);
    let bm = thread::block_idx_y() as usize * VEC_BM;
    let bn = thread::block_idx_x() as usize * VEC_BN;
    // Block-uniform: every operand of the test is the same for the whole
    // block. The lengths make the unchecked accesses' bounds a local fact
    // (the launcher passes exactly `m k`, `k n` and `m n` elements).
    let interior = vecf_fast_tile(bm, bn, mu, nu, ku)
        && a.len() >= mu * ku
        && b.len() >= ku * nu
        && c.len() >= mu * nu;
    if interior {
        vec_interior(a, b, c, nu, ku, bm, bn);
    } else {
        vec_body::<VEC_BK, false>(a, b, c, m, n, k);
    }
}

/// Rung 4f's interior block: the tile `C[bm..bm+128, bn..bn+128]`.
///
/// Contract (checked by `vec_fast_body`): `bm + 128 <= m`, `bn + 128 <= n`,
/// `k >= 8`, `k % 8 == 0`, `n % 4 == 0`, and `a`, `b`, `c` hold at least
/// `m k`, `k n` and `m n` elements and are 16-byte aligned (device
/// allocations are 256-byte aligned; the simulator checks it).
#[inline(always)]
fn vec_interior(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    n: usize,
    k: usize,
    bm: usize,
    bn: usize,
) {
    const LDA: usize = VEC_AS_LD;
    // Floats per stage of `As`, float4 per stage of `Bs`.
    const A_STAGE: usize = VEC_BK * VEC_AS_LD;
    const B_STAGE4: usize = VEC_BK * VEC_BN / 4;
    let sa = shared::dynamic_shared::<f32>(0, VEC_AS_LEN);
    let sa4 = shared::dynamic_shared::<F32x4>(0, VEC_AS_LEN / 4);
    let sb4 = shared::dynamic_shared::<F32x4>(VEC_AS_LEN * 4, VEC_BS_LEN / 4);
    let t = thread::thread_idx_x() as usize;
    let tx = t % 16;
    let ty = t / 16;
    let (k4, n4) = (k / 4, n / 4);
    // Float4 indices of this thread's groups of tile 0: `A[bm + t/2, 4(t%2)..+4]`
    // and `B[t/32, bn + 4(t%32)..+4]`; per tile `A` moves 8 columns (2
    // float4) and `B` 8 rows (`8 n/4` float4).
    let mut ga = (bm + t / 2) * k4 + t % 2;
    let mut gb = (t / 32) * n4 + bn / 4 + t % 32;
    let gb_step = VEC_BK * n4;
    // This thread's first element of `As` in stage 0 (column `4(t%2)`,
    // row `t/2`, transposed), and its float4 of `Bs` (`t`).
    let a_dst = (t % 2) * 4 * LDA + t / 2;
    let load = |ga: usize, gb: usize| -> ([f32; 4], [f32; 4]) {
        // SAFETY: by the contract, row `bm + t/2 < m` and columns
        // `k0 + 4(t%2)..+4 <= k` of `A`, and row `k0 + t/32 < k` and columns
        // `bn + 4(t%32)..+4 <= n` of `B`, for every tile `k0 = 8 i < k`
        // (`k % 8 == 0`); the lengths are at least `m k` and `k n`, and the
        // groups start at multiples of 4 floats of 16-byte aligned buffers
        // (`k % 4 == 0`, `n % 4 == 0`).
        let (av, bv) = unsafe {
            (
                a.get_vec_unchecked::<F32x4>(ga).0,
                b.get_vec_unchecked::<F32x4>(gb).0,
            )
        };
        (av, [bv[0], bv[1], bv[2], bv[3]])
    };
    let store = |stage: usize, av: [f32; 4], bv: [f32; 4]| {
        for q in 0..4 {
            // SAFETY: `stage < 2`, `4(t%2) + q < 8` and `t/2 < 128 <= 132`:
            // inside stage `stage` of `As` (two stages of 8 x 132 floats).
            unsafe { sa.set_unchecked(stage * A_STAGE + a_dst + q * LDA, av[q]) };
        }
        // SAFETY: `stage < 2` and `t < 256`: float4 `t` of stage `stage` of
        // `Bs` (two stages of 256 float4).
        unsafe { sb4.set_unchecked(stage * B_STAGE4 + t, F32x4([bv[0], bv[1], bv[2], bv[3]])) };
    };

    let mut acc = [[0.0f32; 8]; 8];
    let (av, bv) = load(ga, gb);
    store(0, av, bv);
    sync_threads();
    let mut left = (k / VEC_BK) as u32;
    let mut stage = 0;
    loop {
        // Next tile's groups; on the last tile the indices stay put and the
        // same groups are fetched again into the idle stage (never read): a
        // select, not a branch.
        let more = left > 1;
        ga += if more { 2 } else { 0 };
        gb += if more { gb_step } else { 0 };
        let (av, bv) = load(ga, gb);
        steps8(
            &mut acc,
            sa4,
            sb4,
            stage * (A_STAGE / 4),
            stage * B_STAGE4,
            0,
            tx,
            ty,
        );
        stage ^= 1;
        store(stage, av, bv);
        sync_threads();
        left -= 1;
        if left == 0 {
            break;
        }
    }
    // Rows `bm + 4ty + i` and `bm + 64 + 4ty + i`, columns `bn + 4tx..+4`
    // (float4 `gc`) and `bn + 64 + 4tx..+4` (`gc + 16`).
    let gc = (bm + 4 * ty) * n4 + bn / 4 + tx;
    for i in 0..8 {
        let row = gc + ((i / 4) * 64 + i % 4) * n4;
        let v = acc[i];
        // SAFETY: rows `< bm + 128 <= m`, columns `< bn + 128 <= n`, `c`
        // holds at least `m n` floats, and `n % 4 == 0` with columns at
        // multiples of 4: both groups are inside `C` and 16-byte aligned.
        unsafe {
            c.set_vec_unchecked(row, F32x4([v[0], v[1], v[2], v[3]]));
            c.set_vec_unchecked(row + 16, F32x4([v[4], v[5], v[6], v[7]]));
        }
    }
}

/// Puts `x[row, col..col+4]` (zero outside the matrix, as `load_group!`)
/// into float4 `i` of shared memory: by `cp.async` when `vec_ok`, else
/// loaded element by element and stored at once. `col % 4 == 0`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn copy_group(
    dst: SharedSlice<F32x4>,
    i: usize,
    x: DeviceSlice<f32>,
    row: usize,
    rows: usize,
    col: usize,
    cols: usize,
    vec_ok: bool,
) {
    if vec_ok {
        let valid = row < rows && col < cols;
        let j = if valid { (row * cols + col) / 4 } else { 0 };
        // SAFETY: callers pass `i` inside `dst`; when `valid`, `col < cols`
        // with both multiples of 4 gives `col + 4 <= cols`, so the group is
        // inside `x` and 16-byte aligned; callers read float4 `i` only after
        // the wait and barrier that complete the copy.
        unsafe { dst.copy_async(i, x, j, valid) };
    } else {
        let v = load_group!(x, row, rows, col, cols, false);
        // SAFETY: callers pass `i` inside `dst`.
        unsafe { dst.set_unchecked(i, F32x4(v)) };
    }
}

/// Stores a thread's 8x8 patch of rungs 4 and 5: rows `row0..row0+4` and
/// `row0+64..+4`, columns `col0..col0+4` and `col0+64..+4`. One call per
/// row with a constant index, so `acc` is never indexed dynamically and
/// stays in registers.
#[inline(always)]
fn store_patch(
    c: DeviceSliceMut<f32>,
    row0: usize,
    col0: usize,
    m: usize,
    n: usize,
    acc: &[[f32; 8]; 8],
) {
    store_row(c, row0, col0, m, n, acc[0]);
    store_row(c, row0 + 1, col0, m, n, acc[1]);
    store_row(c, row0 + 2, col0, m, n, acc[2]);
    store_row(c, row0 + 3, col0, m, n, acc[3]);
    store_row(c, row0 + 64, col0, m, n, acc[4]);
    store_row(c, row0 + 65, col0, m, n, acc[5]);
    store_row(c, row0 + 66, col0, m, n, acc[6]);
    store_row(c, row0 + 67, col0, m, n, acc[7]);
}

/// Stores `v[0..4]` at `C[r, c0..c0+4]` and `v[4..8]` at `C[r, c0+64..c0+68]`,
/// 16 bytes at a time when in bounds and aligned, element by element otherwise.
#[inline(always)]
fn store_row(c: DeviceSliceMut<f32>, r: usize, c0: usize, m: usize, n: usize, v: [f32; 8]) {
    if r >= m {
        return;
    }
    let halves = [[v[0], v[1], v[2], v[3]], [v[4], v[5], v[6], v[7]]];
    for h in 0..2 {
        let part = halves[h];
        let cc = c0 + h * 64;
        if n.is_multiple_of(4) && cc + 4 <= n {
            // SAFETY: `C[r, cc..cc+4]` is inside `C` (r < m, cc + 4 <= n) and
            // 16-byte aligned (n and cc are multiples of 4).
            unsafe { c.set_vec_unchecked((r * n + cc) / 4, F32x4(part)) };
        } else {
            for q in 0..4 {
                if cc + q < n {
                    c.set(r * n + cc + q, part[q]);
                }
            }
        }
    }
}

/// The sum over rows `r0..r1` of column `col` of a row-major matrix `x` with
/// `cols` columns, each row weighted by `w(r)` when `WEIGHTED`. `U` independent
/// partial sums: each step issues `U` loads (rows `r..r+U`, all in flight at
/// once) before it adds them; the partial sums are combined pairwise at the
/// end (`(s0 + s1) + (s2 + s3)` for `U = 4`).
///
/// The caller guarantees `r1 <= rows` of `x` and `col < cols`.
#[inline(always)]
fn column_partial<const U: usize, const WEIGHTED: bool>(
    x: DeviceSlice<f32>,
    cols: usize,
    col: usize,
    r0: usize,
    r1: usize,
    w: impl Fn(usize) -> f32,
) -> f32 {
    const { assert!(U.is_power_of_two()) };
    let mut s = [0.0f32; U];
    let mut r = r0;
    while r + U <= r1 {
        let mut v = [0.0f32; U];
        for q in 0..U {
            // SAFETY: `r + q < r1 <= rows` and `col < cols` (caller), so the
            // index is inside the `rows x cols` matrix the launcher checked.
            v[q] = unsafe { x.get_unchecked((r + q) * cols + col) };
        }
        for q in 0..U {
            s[q] = if WEIGHTED {
                w(r + q).mul_add(v[q], s[q])
            } else {
                s[q] + v[q]
            };
        }
        r += U;
    }
    while r < r1 {
        let v = x.get(r * cols + col);
        s[0] = if WEIGHTED {
            w(r).mul_add(v, s[0])
        } else {
            s[0] + v
        };
        r += 1;
    }
    let mut width = U;
    while width > 1 {
        for i in 0..width / 2 {
            s[i] = s[2 * i] + s[2 * i + 1];
        }
        width /= 2;
    }
    s[0]
}

/// One block of the column-sum kernels: the column of this thread
/// (`blockIdx.x * 256 + threadIdx.x`) over the rows of chunk `blockIdx.y`
/// (`chunk` rows), added into `out[col]` with one atomic.
#[inline(always)]
fn column_chunk<const U: usize, const WEIGHTED: bool>(
    w: DeviceSlice<f32>,
    x: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    rows: usize,
    cols: usize,
    chunk: usize,
) {
    let col = thread::index_1d();
    if col >= cols {
        return;
    }
    let r0 = thread::block_idx_y() as usize * chunk;
    let r1 = if r0 + chunk < rows { r0 + chunk } else { rows };
    if r0 < r1 {
        let s = column_partial::<U, WEIGHTED>(x, cols, col, r0, r1, |r| w.get(r));
        out.atomic_add(col, s);
    }
}

/// Column sum of a row-major `rows x cols` matrix: `out[j] += sum_i x[i, j]`.
///
/// Thread mapping: `x` = column (consecutive threads read consecutive words of
/// a row: coalesced), `blockIdx.y` = a chunk of `chunk` rows (a run-time
/// parameter; the default is [`COLSUM_ROWS`]). A thread sums its column over
/// the chunk with four independent accumulators (four loads in flight), then
/// adds the partial sum into `out[j]` with one atomic. Splitting the rows is
/// what makes the grid large enough to fill the GPU (one thread per column,
/// the material's mapping, gives only `cols` threads). `out` must be zeroed
/// first ([`matmul_zero2_f32`]). Memory-bound: 4 bytes read per element.
///
/// The chunk length trades the atomics (one per column and chunk) against
/// the tail of the grid: a thread's chunk is `chunk / 4` dependent round trips
/// to memory, and the last blocks of the grid run alone for that long.
/// One column per thread keeps many threads in flight (the variants tried
/// and measured are in `docs/workloads/matmul.md`, "The column sum").
#[kernel(launch_bounds(256))]
pub fn matmul_colsum_f32(
    x: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    rows: u32,
    cols: u32,
    chunk: u32,
) {
    column_chunk::<4, false>(x, x, out, rows as usize, cols as usize, chunk as usize);
}

/// [`matmul_colsum_f32`] with eight partial sums: eight loads in flight per
/// thread, so a chunk is half as many dependent round trips to memory (the
/// tail of the grid is shorter) and a resident block keeps twice as many
/// bytes in flight, and the registers still leave room for eight blocks of
/// 256 threads per SM (counts: `docs/workloads/matmul.md`).
#[kernel(launch_bounds(256))]
pub fn matmul_colsum8_f32(
    x: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    rows: u32,
    cols: u32,
    chunk: u32,
) {
    column_chunk::<8, false>(x, x, out, rows as usize, cols as usize, chunk as usize);
}

/// Vector-matrix product `out[j] += sum_i v[i] B[i, j]`, `B` row-major `k x n`.
///
/// The second half of the fused column sum `colsum(A B) = colsum(A) B`: the
/// same mapping as [`matmul_colsum_f32`] (thread = output column, reading `B`
/// row by row, coalesced; `blockIdx.y` = chunk of `chunk` rows, one atomic per
/// column and chunk) with each row weighted by `v[i]` (a broadcast load).
#[kernel(launch_bounds(256))]
pub fn matmul_vecmat_f32(
    v: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    k: u32,
    n: u32,
    chunk: u32,
) {
    column_chunk::<4, true>(v, b, out, k as usize, n as usize, chunk as usize);
}

/// [`matmul_vecmat_f32`] with eight loads in flight per thread (as
/// [`matmul_colsum8_f32`] is to [`matmul_colsum_f32`]).
#[kernel(launch_bounds(256))]
pub fn matmul_vecmat8_f32(
    v: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    k: u32,
    n: u32,
    chunk: u32,
) {
    column_chunk::<8, true>(v, b, out, k as usize, n as usize, chunk as usize);
}

/// Sets two buffers to zero (the accumulators of the column-sum kernels),
/// grid-stride over the longer one: one launch instead of two.
#[kernel(launch_bounds(256))]
pub fn matmul_zero2_f32(x: DeviceSliceMut<f32>, y: DeviceSliceMut<f32>) {
    let n = if x.len() > y.len() { x.len() } else { y.len() };
    for i in thread::grid_stride(n) {
        if i < x.len() {
            x.set(i, 0.0);
        }
        if i < y.len() {
            y.set(i, 0.0);
        }
    }
}

/// [`matmul_zero2_f32`] plus a buffer of `u32` counters: clears `v`, `out`
/// and the counters of [`matmul_colsum_product_f32`] in one launch.
#[kernel(launch_bounds(256))]
pub fn matmul_zero3_f32(x: DeviceSliceMut<f32>, y: DeviceSliceMut<f32>, z: DeviceSliceMut<u32>) {
    let mut n = if x.len() > y.len() { x.len() } else { y.len() };
    if z.len() > n {
        n = z.len();
    }
    for i in thread::grid_stride(n) {
        if i < x.len() {
            x.set(i, 0.0);
        }
        if i < y.len() {
            y.set(i, 0.0);
        }
        if i < z.len() {
            z.set(i, 0);
        }
    }
}

/// Blocks of [`matmul_colsum_product_f32`] for `A` of `m x k`, `B` of `k x n`
/// and chunks of `chunk_a` rows of `A`, `chunk_b` rows of `B`:
/// `(blocks on A, blocks on B)`. The launch must have exactly their sum
/// (the kernel does nothing otherwise). Chunks of 0 rows give `(0, 0)`.
pub const fn colsum_product_blocks(
    m: usize,
    n: usize,
    k: usize,
    chunk_a: usize,
    chunk_b: usize,
) -> (usize, usize) {
    if chunk_a == 0 || chunk_b == 0 {
        return (0, 0);
    }
    let blk = COLSUM_BLOCK as usize;
    (
        k.div_ceil(blk) * m.div_ceil(chunk_a),
        n.div_ceil(blk) * k.div_ceil(chunk_b),
    )
}

/// Length of the counter buffer of [`matmul_colsum_product_f32`] for `k`
/// columns of `A`: the ticket, one completion count per 256 columns of `A`,
/// and a word that counts spin-waits that gave up (always 0 in a correct run).
pub const fn colsum_product_sync_len(k: usize) -> usize {
    k.div_ceil(COLSUM_BLOCK as usize) + 2
}

/// Dynamic shared memory of [`matmul_colsum_product_f32`]: the block's
/// ticket (16 bytes, for alignment), then the `chunk_b` weights `v[r0..r1]`.
pub const fn colsum_product_shared_bytes(chunk_b: usize) -> usize {
    shared::shared_bytes::<f32>(16, chunk_b)
}

/// Polls of one spin-wait on the GPU before it gives up and counts a timeout
/// (tens of seconds; a correct launch waits at most one block's run time).
pub const SPIN_LIMIT: u32 = 1 << 26;

/// A relaxed (strong, L1-bypassing on the GPU) load of `s[i]`'s bits.
#[inline(always)]
fn load_relaxed(s: DeviceSliceMut<u32>, i: usize) -> u32 {
    if i >= s.len() {
        return 0;
    }
    // SAFETY: `i < len` (checked), the launcher guarantees the buffer is
    // valid and 4-byte aligned for the whole launch, and every concurrent
    // access to it is atomic or a relaxed access of the same width
    // (the simulator's plain accesses are relaxed atomics too).
    unsafe { AtomicU32::from_ptr(s.as_mut_ptr().add(i)) }.load(Ordering::Relaxed)
}

/// A relaxed load of `s[i]` (an f32 read through its bits).
#[inline(always)]
fn load_relaxed_f32(s: DeviceSliceMut<f32>, i: usize) -> f32 {
    if i >= s.len() {
        return 0.0;
    }
    // SAFETY: as in `load_relaxed`; f32 and u32 have the same size and
    // alignment, and every other access to `s` is an atomic add or a store
    // of the same width.
    let bits =
        unsafe { AtomicU32::from_ptr(s.as_mut_ptr().add(i) as *mut u32) }.load(Ordering::Relaxed);
    f32::from_bits(bits)
}

/// The fused column sum `colsum(A B) = colsum(A) B` in ONE launch: blocks
/// that reduce columns of `A` into `v`, then blocks that compute `out += v B`,
/// ordered by a ticket so that the second kind never waits for a block that
/// has not started.
///
/// Why: the three-launch version ([`matmul_zero2_f32`], [`matmul_colsum_f32`],
/// [`matmul_vecmat_f32`]) drains the GPU twice: the last blocks of the
/// column sum of `A` run with the SMs half empty, then the launch of `v B`
/// waits for all of them. Here the blocks of `v B` fill the SMs as soon as
/// the blocks of `A` leave, and start as soon as the part of `v` they need
/// is complete.
///
/// How (all counters in `sync`, zeroed by [`matmul_zero3_f32`] first):
/// * Thread 0 takes a ticket (`atomicAdd(&sync[0], 1)`) and shares it through
///   shared memory. The grid is 1D, [`colsum_product_blocks`] blocks; a grid
///   of another size returns at once (no block would wait forever).
/// * Tickets `0..na` reduce `A`, column-block-major: ticket `t` takes the
///   256 columns `cb = t / ya` and row chunk `t % ya` (`ya` chunks of
///   `chunk_a` rows), adds its sums into `v` with one atomic per column,
///   then (after a barrier, then a fence by thread 0) counts itself in
///   `sync[1 + cb]`. Column-block-major means `v[0..256]` is complete first,
///   then `v[256..512]`, and so on.
/// * Tickets `na..na+nb` compute `v B`, row-chunk-major: ticket `na + u`
///   takes row chunk `u / gb` of `B` (`chunk_b` rows) and the 256 columns
///   `u % gb`. Thread 0 spins until `sync[1 + c] = ya` for the column blocks
///   `c` of `A` that cover those rows (relaxed loads), fences, and after a
///   barrier the block copies `v[r0..r1]` to shared memory with relaxed
///   loads (not cached in L1) and runs the weighted column sum.
///
/// Why it cannot deadlock: a block only takes its ticket once it runs, so
/// every ticket below a waiting block's belongs to a block that is resident
/// or finished; the blocks it waits for (tickets below `na`) never wait
/// themselves, so they finish. No assumption on how many blocks fit on the
/// GPU at once or in which order the hardware dispatches them. (The fence
/// pattern is that of cooperative groups' grid barrier.) As a guard on the
/// GPU only, a spin gives up after [`SPIN_LIMIT`] polls and counts that in
/// the last word of `sync`; the host checks that word when it verifies.
///
/// Eight loads in flight per thread (as [`matmul_colsum8_f32`]).
/// `launch_bounds(256, 8)` caps the body at 32 registers, so eight blocks
/// (64 warps, full occupancy) fit per SM as for the three-launch kernels
/// (without the cap ptxas takes more and only six fit; counts in
/// `docs/workloads/matmul.md`).
#[kernel(launch_bounds(256, 8))]
#[allow(clippy::too_many_arguments)]
pub fn matmul_colsum_product_f32(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    v: DeviceSliceMut<f32>,
    out: DeviceSliceMut<f32>,
    sync: DeviceSliceMut<u32>,
    m: u32,
    n: u32,
    k: u32,
    chunk_a: u32,
    chunk_b: u32,
) {
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let (ca, cb) = (chunk_a as usize, chunk_b as usize);
    let blk = COLSUM_BLOCK as usize;
    let (na, nb) = colsum_product_blocks(m, n, k, ca, cb);
    if ca == 0
        || cb == 0
        || na == 0
        || thread::grid_dim_x() as usize != na + nb
        || sync.len() < colsum_product_sync_len(k)
    {
        return;
    }
    // Both are at least 1 here (`na > 0` needs `m, k >= 1`, and `n >= 1` on
    // every launch); `max(1)` tells the compiler so (no panic path).
    let ya = m.div_ceil(ca).max(1);
    let gb = n.div_ceil(blk).max(1);
    let t = thread::thread_idx_x() as usize;
    let ticket_sh = shared::dynamic_shared::<u32>(0, 1);
    let wsh = shared::dynamic_shared::<f32>(16, cb);
    if t == 0 {
        ticket_sh.set(0, sync.atomic_add(0, 1));
    }
    sync_threads();
    let ticket = ticket_sh.get(0) as usize;
    if ticket < na {
        // Column sums of A: 256 columns, one chunk of rows.
        let (cblk, ch) = (ticket / ya, ticket % ya);
        let col = cblk * blk + t;
        let r0 = ch * ca;
        let r1 = if r0 + ca < m { r0 + ca } else { m };
        if col < k {
            let s = column_partial::<8, false>(a, k, col, r0, r1, |_| 1.0);
            v.atomic_add(col, s);
        }
        // Every thread's atomic is ordered before the barrier; thread 0's
        // fence then makes them visible before the count.
        sync_threads();
        if t == 0 {
            fence(Ordering::SeqCst);
            sync.atomic_add(1 + cblk, 1);
        }
    } else if ticket < na + nb {
        // `out += v B` over one chunk of rows of B and 256 columns.
        let u = ticket - na;
        let (rc, cblk) = (u / gb, u % gb);
        let r0 = rc * cb;
        let r1 = if r0 + cb < k { r0 + cb } else { k };
        if t == 0 {
            let mut c = r0 / blk;
            while c <= (r1 - 1) / blk {
                let mut polls = 0u32;
                while load_relaxed(sync, 1 + c) < ya as u32 {
                    polls += 1;
                    if cfg!(target_arch = "nvptx64") && polls >= SPIN_LIMIT {
                        sync.atomic_add(sync.len() - 1, 1);
                        break;
                    }
                    core::hint::spin_loop();
                }
                c += 1;
            }
            fence(Ordering::SeqCst);
        }
        sync_threads();
        let mut i = t;
        while i < r1 - r0 {
            wsh.set(i, load_relaxed_f32(v, r0 + i));
            i += blk;
        }
        sync_threads();
        let col = cblk * blk + t;
        if col < n {
            let s = column_partial::<8, true>(b, n, col, r0, r1, |r| wsh.get(r - r0));
            out.atomic_add(col, s);
        }
    }
}
