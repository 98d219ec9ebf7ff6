//! Rungs 4 to 4g of the SGEMM ladder: a 128x128 block tile, 8x8 outputs per
//! thread, 16-byte loads, `A` transposed in shared memory, two stages
//! ([`matmul_vec`], five rungs as instances), and the branch-free interior
//! path of rungs 4f and 4g ([`matmul_vecf`]).

use super::tile::{Stage, ld4, outer8, store_patch};
use super::*;
use ptxlab_device::mem::F32x4;

/// One step `p` of rung 4's tile in stage `s`: two float4 of `As[p]`, two
/// of `Bs[p]`, and the 8x8 outer product into `acc`.
#[inline(always)]
fn outer_step(acc: &mut [[f32; 8]; 8], s: Stage<F32x4>, p: usize, tx: usize, ty: usize) {
    let a0 = ld4(s.a, s.a0 + p * VEC_AS_LD / 4 + ty);
    let a1 = ld4(s.a, s.a0 + p * VEC_AS_LD / 4 + 16 + ty);
    let af = [a0[0], a0[1], a0[2], a0[3], a1[0], a1[1], a1[2], a1[3]];
    outer8(acc, af, s.b, s.b0 + p * VEC_BN / 4, tx);
}

/// Rungs 4 to 4e: 128x128 block tile, 256 threads with 8x8 outputs each,
/// 16-byte loads, `A` transposed in shared memory, two shared stages. The
/// instance `<BK, GROUPED, BLOCKS>` is the rung: `BK` the tile depth (8 or
/// 16), `GROUPED` the grouped block order of rung 4e, `BLOCKS` the blocks
/// per SM its launch bounds ask for (the body does not read it; it is what
/// tells rung 4 from 4b and 4c from 4d):
///
/// | rung | instance | entry | launch bounds |
/// |---|---|---|---|
/// | 4 | `<VEC_BK, false, 2>` | `matmul_vec_f32` | `(256, 2)` |
/// | 4b | `<VEC_BK, false, 1>` | `matmul_vec1_f32` | `(256)` |
/// | 4c | `<VEC16_BK, false, 1>` | `matmul_vec16_f32` | `(256)` |
/// | 4d | `<VEC16_BK, false, 2>` | `matmul_vec16x2_f32` | `(256, 2)` |
/// | 4e | `<VEC16_BK, true, 1>` | `matmul_vec16s_f32` | `(256)` |
///
/// # Rung 4
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
///   spill counts: `docs/book/src/workloads/matmul.md` ("The ladder").
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
///
/// # Rung 4b
///
/// Rung 4 with `launch_bounds(256)` only, so ptxas may use up to 255
/// registers: no spill, but one block (8 warps) per SM instead of two. The
/// benchmark runs both in the same process to show which side of the
/// registers-against-occupancy trade wins on the device at hand.
///
/// # Rung 4c
///
/// Rung 4b with tiles 16 deep instead of 8.
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
/// registers; the counts are in `docs/book/src/workloads/matmul.md`).
///
/// # Rung 4d
///
/// Rung 4c with `launch_bounds(256, 2)`, as rung 4 is to rung 4b: ptxas
/// must fit 128 registers so two blocks share an SM, and the barrier bubble
/// of one block is filled by the other block's FMAs. Two blocks take
/// 66,560 bytes of shared memory (an H100 SM has up to 228 KiB).
///
/// At 128 registers the body spills more than rung 4's does; whether 16
/// warps per SM pay for that local-memory traffic is the question this rung
/// asks the device (counts and answer: `docs/book/src/workloads/matmul.md`).
///
/// # Rung 4e
///
/// Rung 4c with grouped block rasterization.
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
/// (`docs/book/src/workloads/matmul.md` has the answer).
#[kernel(
    launch_bounds(256),
    instances(
        <VEC_BK, false, 2> => (launch_bounds(256, 2), name = "matmul_vec_f32"),
        <VEC_BK, false, 1> => (name = "matmul_vec1_f32"),
        <VEC16_BK, false, 1> => (name = "matmul_vec16_f32"),
        <VEC16_BK, false, 2> => (launch_bounds(256, 2), name = "matmul_vec16x2_f32"),
        <VEC16_BK, true, 1> => (name = "matmul_vec16s_f32"),
    )
)]
pub fn matmul_vec<const BK: usize, const GROUPED: bool, const BLOCKS: u32>(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    vec_body::<BK, GROUPED>(a, b, c, m, n, k);
}

/// Rungs 4f and 4g: rung 4b with a fast path for interior blocks: every
/// block whose 128x128 tile of `C` lies inside `C`, when `k % 8 == 0` and
/// `n % 4 == 0`, runs a main loop with no bounds check at all; the other
/// blocks (the last block row and column when `m` or `n` is not a multiple
/// of 128, or every block when `k` or `n` breaks the alignment) run rung
/// 4b's checked body, unchanged. `BLOCKS` is the blocks per SM of the
/// instance's launch bounds: rung 4f `<1>` (`matmul_vecf_f32`,
/// `launch_bounds(256)`), rung 4g `<2>` (`matmul_vecf2_f32`,
/// `launch_bounds(256, 2)`).
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
/// Why 4f is faster than rung 4b: the interior loop's FFMAs take a larger
/// share of the issue slots (fewer integer and control instructions per
/// tile). The SASS instruction counts, the variants tried and not kept and
/// the measured speed-up are in `docs/book/src/workloads/matmul.md` ("Rungs 4f/4g by
/// the SASS").
///
/// Why 4g is faster than 4f: at 128 registers the kernel spills, but only
/// in the checked path of edge blocks (the kernel's one register count
/// covers both paths); the interior path has no local-memory access and the
/// same loop as rung 4f. With the spills off the hot path, the second
/// block's 8 warps fill each block's barrier bubbles for free (rung 4, whose
/// spill loads are in its loop, gains nothing from its second block). The
/// fastest SGEMM rung, `Rung::BEST`; figures in `docs/book/src/workloads/matmul.md`.
#[kernel(
    launch_bounds(256),
    instances(
        <1> => (name = "matmul_vecf_f32"),
        <2> => (launch_bounds(256, 2), name = "matmul_vecf2_f32"),
    )
)]
pub fn matmul_vecf<const BLOCKS: u32>(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    vec_fast_body(a, b, c, m, n, k);
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

/// Eight steps `p0..p0+8` of a tile in stage `s`, written out (512 FMAs,
/// 32 shared loads, straight-line code).
#[inline(always)]
fn steps8(acc: &mut [[f32; 8]; 8], s: Stage<F32x4>, p0: usize, tx: usize, ty: usize) {
    outer_step(acc, s, p0, tx, ty);
    outer_step(acc, s, p0 + 1, tx, ty);
    outer_step(acc, s, p0 + 2, tx, ty);
    outer_step(acc, s, p0 + 3, tx, ty);
    outer_step(acc, s, p0 + 4, tx, ty);
    outer_step(acc, s, p0 + 5, tx, ty);
    outer_step(acc, s, p0 + 6, tx, ty);
    outer_step(acc, s, p0 + 7, tx, ty);
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
        let s = Stage {
            a: sa4,
            a0: stage * BK * LDA / 4,
            b: sb4,
            b0: stage * BK * BN / 4,
        };
        steps8(&mut acc, s, 0, tx, ty);
        if BK == 16 {
            steps8(&mut acc, s, 8, tx, ty);
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
        let s = Stage {
            a: sa4,
            a0: stage * (A_STAGE / 4),
            b: sb4,
            b0: stage * B_STAGE4,
        };
        steps8(&mut acc, s, 0, tx, ty);
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
