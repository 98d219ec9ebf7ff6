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
//!
//! Every rung handles ragged edges: loads outside the matrices read zero,
//! stores outside are skipped, so `m`, `n`, `k` need not be tile multiples.
//!
//! The column sum: [`matmul_colsum_f32`] (column reduction of a matrix, rows
//! split in chunks, one atomic per column and chunk), [`matmul_vecmat_f32`]
//! (`out += v B`, the same shape of work with a weight per row) and
//! [`matmul_zero2_f32`] (clears the two accumulators first).

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
/// Rows each block of the column-sum kernels reduces (one atomic per column per chunk).
pub const COLSUM_ROWS: usize = 64;

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
    let b0 = ld4(sb4, bbase + p * VEC_BN / 4 + tx);
    let b1 = ld4(sb4, bbase + p * VEC_BN / 4 + 16 + tx);
    let af = [a0[0], a0[1], a0[2], a0[3], a1[0], a1[1], a1[2], a1[3]];
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
///   (16 warps) share an SM. Measured with ptxas 13.0 for sm_90: 128
///   registers and a 44-byte spill; without the `2` it takes 155 registers
///   and no spill but only one block per SM.
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
    vec_body(a, b, c, m, n, k);
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
    vec_body(a, b, c, m, n, k);
}

/// The body of rungs 4 and 4b (their launch bounds differ).
#[inline(always)]
fn vec_body(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    const BM: usize = VEC_BM;
    const BN: usize = VEC_BN;
    const BK: usize = VEC_BK;
    const LDA: usize = VEC_AS_LD;
    let sa = shared::dynamic_shared::<f32>(0, VEC_AS_LEN);
    let sa4 = shared::dynamic_shared::<F32x4>(0, VEC_AS_LEN / 4);
    let sb4 = shared::dynamic_shared::<F32x4>(VEC_AS_LEN * 4, VEC_BS_LEN / 4);
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let t = thread::thread_idx_x() as usize;
    let tx = t % 16;
    let ty = t / 16;
    let bm = thread::block_idx_y() as usize * BM;
    let bn = thread::block_idx_x() as usize * BN;
    let a_vec_ok = k % 4 == 0;
    let b_vec_ok = n % 4 == 0;
    // This thread's share of each tile load.
    let a_row = bm + t / 2;
    let a_col = (t % 2) * 4;
    let b_row = t / 32;
    let b_col = bn + (t % 32) * 4;

    let load_a = |k0: usize| -> [f32; 4] {
        let gc = k0 + a_col;
        if a_row < m && gc + 4 <= k && a_vec_ok {
            // SAFETY: the group `A[a_row, gc..gc+4]` is inside `A` (checked
            // above) and starts at a multiple of 4 because `k % 4 == 0`.
            unsafe { a.get_vec_unchecked::<F32x4>((a_row * k + gc) / 4).0 }
        } else {
            let mut v = [0.0f32; 4];
            for q in 0..4 {
                if a_row < m && gc + q < k {
                    v[q] = a.get(a_row * k + gc + q);
                }
            }
            v
        }
    };
    let load_b = |k0: usize| -> [f32; 4] {
        let gr = k0 + b_row;
        if gr < k && b_col + 4 <= n && b_vec_ok {
            // SAFETY: `B[gr, b_col..b_col+4]` is inside `B` and 16-byte
            // aligned because `n % 4 == 0` and `b_col % 4 == 0`.
            unsafe { b.get_vec_unchecked::<F32x4>((gr * n + b_col) / 4).0 }
        } else {
            let mut v = [0.0f32; 4];
            for q in 0..4 {
                if gr < k && b_col + q < n {
                    v[q] = b.get(gr * n + b_col + q);
                }
            }
            v
        }
    };
    let store = |stage: usize, av: [f32; 4], bv: [f32; 4]| {
        let base = stage * BK * LDA;
        for q in 0..4 {
            // SAFETY: `a_col + q < 8` and `t/2 < 128`: inside one stage of `As`.
            unsafe { sa.set_unchecked(base + (a_col + q) * LDA + t / 2, av[q]) };
        }
        // SAFETY: float4 index `(stage*8*128 + b_row*128 + 4(t%32)) / 4` is
        // inside the `Bs` view (two stages of 8x128).
        unsafe { sb4.set_unchecked((stage * BK * BN + b_row * BN) / 4 + t % 32, F32x4(bv)) };
    };

    let mut acc = [[0.0f32; 8]; 8];
    let ntiles = k.div_ceil(BK);
    let av = load_a(0);
    let bv = load_b(0);
    store(0, av, bv);
    sync_threads();
    let mut tile = 0;
    while tile < ntiles {
        let stage = tile % 2;
        let has_next = tile + 1 < ntiles;
        let (mut nav, mut nbv) = ([0.0f32; 4], [0.0f32; 4]);
        if has_next {
            nav = load_a((tile + 1) * BK);
            nbv = load_b((tile + 1) * BK);
        }
        let abase = stage * BK * LDA / 4;
        let bbase = stage * BK * BN / 4;
        // The 8 steps of the tile written out, so the whole tile is
        // straight-line code (512 FMAs, 32 shared loads, no loop overhead).
        outer_step(&mut acc, sa4, sb4, abase, bbase, 0, tx, ty);
        outer_step(&mut acc, sa4, sb4, abase, bbase, 1, tx, ty);
        outer_step(&mut acc, sa4, sb4, abase, bbase, 2, tx, ty);
        outer_step(&mut acc, sa4, sb4, abase, bbase, 3, tx, ty);
        outer_step(&mut acc, sa4, sb4, abase, bbase, 4, tx, ty);
        outer_step(&mut acc, sa4, sb4, abase, bbase, 5, tx, ty);
        outer_step(&mut acc, sa4, sb4, abase, bbase, 6, tx, ty);
        outer_step(&mut acc, sa4, sb4, abase, bbase, 7, tx, ty);
        if has_next {
            store(1 - stage, nav, nbv);
        }
        sync_threads();
        tile += 1;
    }
    // Epilogue: one call per row of the patch with a constant index, so
    // `acc` is never indexed dynamically and stays in registers.
    let row0 = bm + ty * 4;
    let col0 = bn + tx * 4;
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

#[inline(always)]
fn column_chunk<const WEIGHTED: bool>(
    w: DeviceSlice<f32>,
    x: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    rows: usize,
    cols: usize,
) {
    let col = thread::index_1d();
    if col >= cols {
        return;
    }
    let r0 = thread::block_idx_y() as usize * COLSUM_ROWS;
    let r1 = if r0 + COLSUM_ROWS < rows {
        r0 + COLSUM_ROWS
    } else {
        rows
    };
    // Four independent partial sums keep four loads in flight per thread.
    let mut s = [0.0f32; 4];
    let mut r = r0;
    while r + 4 <= r1 {
        for (q, acc) in s.iter_mut().enumerate() {
            // SAFETY: `r + q < r1 <= rows` and `col < cols`, so the index is
            // inside the `rows x cols` matrix the launcher checked.
            let v = unsafe { x.get_unchecked((r + q) * cols + col) };
            *acc = if WEIGHTED {
                w.get(r + q).mul_add(v, *acc)
            } else {
                *acc + v
            };
        }
        r += 4;
    }
    while r < r1 {
        let v = x.get(r * cols + col);
        s[0] = if WEIGHTED {
            w.get(r).mul_add(v, s[0])
        } else {
            s[0] + v
        };
        r += 1;
    }
    if r0 < r1 {
        out.atomic_add(col, (s[0] + s[1]) + (s[2] + s[3]));
    }
}

/// Column sum of a row-major `rows x cols` matrix: `out[j] += sum_i x[i, j]`.
///
/// Thread mapping: `x` = column (consecutive threads read consecutive words of
/// a row: coalesced), `blockIdx.y` = a chunk of [`COLSUM_ROWS`] rows. A thread
/// sums its column over the chunk with four independent accumulators, then
/// adds the partial sum into `out[j]` with one atomic. Splitting the rows is
/// what makes the grid large enough to fill the GPU (one thread per column,
/// the material's mapping, gives only `cols` threads). `out` must be zeroed
/// first ([`matmul_zero2_f32`]). Memory-bound: 4 bytes read per element.
///
/// Tried and measured slower on an H100 (fused column sum 139 us against
/// 131 us for this version): four columns per thread with 16-byte loads and
/// 128-row chunks, which gave the grid a third as many threads.
#[kernel(launch_bounds(256))]
pub fn matmul_colsum_f32(x: DeviceSlice<f32>, out: DeviceSliceMut<f32>, rows: u32, cols: u32) {
    column_chunk::<false>(x, x, out, rows as usize, cols as usize);
}

/// Vector-matrix product `out[j] += sum_i v[i] B[i, j]`, `B` row-major `k x n`.
///
/// The second half of the fused column sum `colsum(A B) = colsum(A) B`: the
/// same mapping as [`matmul_colsum_f32`] (thread = output column, reading `B`
/// row by row, coalesced; `blockIdx.y` = chunk of rows, one atomic per column
/// and chunk) with each row weighted by `v[i]` (a broadcast load).
#[kernel(launch_bounds(256))]
pub fn matmul_vecmat_f32(
    v: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    k: u32,
    n: u32,
) {
    column_chunk::<true>(v, b, out, k as usize, n as usize);
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
