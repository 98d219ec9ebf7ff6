//! Tensor-core GEMM ladder, Hopper rungs (sm_90a: `wgmma`, TMA,
//! `setmaxnreg`): rungs 4 and 5 of the BF16/FP16 ladder of
//! [`tensor`](crate::tensor), and 3xTF32 on `wgmma`.
//!
//! Shapes and types as in `tensor`: `C = A B`, `A` `m x k`, `B` `k x n`,
//! row-major, 16-bit values as bits, f32 accumulation, the output rounded
//! to the input type. The operands arrive through TMA tensor maps (the
//! host makes them: `ptxlab_runtime::TensorMap`), which zero-fill boxes
//! past the matrix edges, so any `m` works and `k`, `n` need only rows
//! 16-byte aligned (multiples of 8 values); stores past the edges are
//! skipped.
//!
//! 4. [`matmul_wgmma`]: `wgmma.mma_async` with both operands in
//!    128-byte-swizzled shared memory, filled by TMA, four stages guarded
//!    by mbarriers.
//! 5. [`matmul_ws`]: warp specialisation (a producer warpgroup with few
//!    registers issues the copies, two consumer warpgroups with many do
//!    the math), 128 x 256 tiles, a persistent grid walking the tiles in
//!    L2-friendly groups.
//!
//! Both are generic over the 16-bit type and built for BF16 and FP16
//! (`instances(Bf16, F16)`: `matmul_wgmma_bf16`, `matmul_ws_f16`, ...).
//!
//! And [`matmul_tf32x3w_f32`]: 3xTF32 with rung 5's structure on
//! `wgmma.m64n128k8.tf32`, from operands split beforehand
//! ([`matmul_split_tf32_f32`](crate::tensor::matmul_split_tf32_f32)).
//!
//! Shared-memory layout (all kernels): tiles from the first 1024-byte
//! boundary of the block's dynamic shared memory (the swizzle pattern
//! repeats every 1024 bytes and must start with the tile), stage after
//! stage, then the mbarriers: `full[s]` (the stage's copies landed) and
//! `empty[s]` (its readers are done).

use ptxlab_device::hopper::{
    Mbarrier, Swizzle, fence_mbarrier_init, fence_tensormap_acquire, setmaxnreg_dec,
    setmaxnreg_inc, tma_load_2d,
};
use ptxlab_device::mem::U32x4;
use ptxlab_device::mma::{self, Bf16, F16, Half16, shared_addr};
use ptxlab_device::prelude::*;
use ptxlab_device::unroll;
use ptxlab_device::wgmma::{
    self, SmemDesc, acc_coord, fence_operands, wgmma_commit_group, wgmma_fence, wgmma_wait_group,
};

/// Rows of the block tile of rungs 4, 5 and 3xTF32 (two consumer
/// warpgroups of 64 rows each).
pub const WG_BM: usize = 128;
/// Rung 4 block tile columns (one `m64n128k16` per warpgroup and `k16`).
pub const WG_BN: usize = 128;
/// `k` per stage of the 16-bit rungs: 64 values, 128 bytes per row of `A`
/// (one swizzle span).
pub const WG_BK: usize = 64;
/// Rung 4 stages.
pub const WG_STAGES: usize = 4;
/// Rung 4 threads: two warpgroups, both issuing `wgmma`; thread 0 also
/// issues the copies.
pub const WG_THREADS: u32 = 256;
/// Rung 5 block tile columns (one `m64n256k16` per consumer warpgroup).
pub const WS_BN: usize = 256;
/// Rung 5 stages.
pub const WS_STAGES: usize = 4;
/// Rungs 5 and 3xTF32 threads: a producer warpgroup and two consumers.
pub const WS_THREADS: u32 = 384;
/// Tile rows per group of the persistent tile order: consecutive tiles
/// of a block walk 8 tile rows of one column band before the next band,
/// so the `B` band they share stays in L2.
pub const WS_GROUP: usize = 8;
/// 3xTF32 (`wgmma`) block tile columns.
pub const TF32W_BN: usize = 128;
/// 3xTF32 (`wgmma`) `k` per stage: 32 f32, 128 bytes per row.
pub const TF32W_BK: usize = 32;
/// 3xTF32 (`wgmma`) stages.
pub const TF32W_STAGES: usize = 3;

/// The shape of a product `C = A B`: `A` is `m x k`, `B` is `k x n` (the
/// FP8 GEMM reads `B^T`, `n x k`), `C` is `m x n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, KernelParams)]
#[repr(C)]
pub struct GemmDims {
    /// Rows of `A` and `C`.
    pub m: u32,
    /// Columns of `B` and `C`.
    pub n: u32,
    /// Columns of `A`, rows of `B`: the depth of the sums.
    pub k: u32,
}

/// Where a tile of the output lands: its first row and column in `C`, and
/// `C`'s shape (`m x n`, row-major), against which every store is checked.
#[derive(Clone, Copy)]
pub(crate) struct OutTile {
    /// The tile's first row in `C`.
    pub row0: usize,
    /// The tile's first column in `C`.
    pub col0: usize,
    /// Rows of `C`.
    pub m: usize,
    /// Columns of `C`.
    pub n: usize,
}

/// Bytes of one 16-bit stage of rung 4: `A` (128 x 64) then `B` as two
/// boxes of 64 rows of `k` x 64 columns.
const WG_STAGE: usize = (WG_BM + WG_BN) * WG_BK * 2;
/// Bytes of one stage of rung 5: `A` (128 x 64) then four `B` boxes.
const WS_STAGE: usize = (WG_BM + WS_BN) * WG_BK * 2;
/// Bytes of one 3xTF32 stage: `A` high and low parts (128 x 32 f32 each),
/// then `B^T` high and low parts (128 x 32 each).
const TF32W_STAGE: usize = 2 * (WG_BM + TF32W_BN) * TF32W_BK * 4;

/// Dynamic shared memory of a layout with `stages` stages of `stage`
/// bytes: 1024 bytes of alignment slack, the tiles, two barriers per stage.
const fn hopper_shared(stages: usize, stage: usize) -> usize {
    1024 + stages * stage + 16 * stages
}

/// Dynamic shared memory of rung 4 (132,160 bytes).
pub const fn wgmma_shared_bytes() -> usize {
    hopper_shared(WG_STAGES, WG_STAGE)
}

/// Dynamic shared memory of rung 5 (197,696 bytes).
pub const fn ws_shared_bytes() -> usize {
    hopper_shared(WS_STAGES, WS_STAGE)
}

/// Dynamic shared memory of 3xTF32 on `wgmma` (197,680 bytes).
pub const fn tf32x3w_shared_bytes() -> usize {
    hopper_shared(TF32W_STAGES, TF32W_STAGE)
}

/// The block's tile area (shared address, 1024-aligned), byte offset of
/// that address from the start of dynamic shared memory, and the barrier
/// slots (`full[0..S]`, `empty[0..S]`) after `S` stages of `stage` bytes.
#[inline(always)]
fn layout(stages: usize, stage: usize) -> (u32, usize, SharedSlice<u64>) {
    let all = shared::dynamic_shared::<U32x4>(0, hopper_shared(stages, stage) / 16);
    let raw = shared_addr(all.as_mut_ptr());
    let pad = ((1024 - raw % 1024) % 1024) as usize;
    let bars = shared::dynamic_shared::<u64>(pad + stages * stage, 2 * stages);
    (raw + pad as u32, pad, bars)
}

/// Thread 0 initialises `full[s]` (one arrival: the copies' issuer) and
/// `empty[s]` (`readers` arrivals) and fences the tensor maps; then a block
/// barrier publishes them.
#[inline(always)]
fn init_barriers(bars: SharedSlice<u64>, stages: usize, readers: u32, maps: &[DeviceSlice<u64>]) {
    if thread::thread_idx_x() == 0 {
        for s in 0..stages {
            Mbarrier::at(bars, s).init(1);
            Mbarrier::at(bars, stages + s).init(readers);
        }
        fence_mbarrier_init();
        for map in maps {
            fence_tensormap_acquire(*map);
        }
    }
    sync_threads();
}

/// Stores a warpgroup's 64 x `N` accumulator tile (`R = N / 2` values per
/// thread of rank `t` in the warpgroup) at `out` in `C`, rounded to `T`:
/// neighbouring pairs as one 32-bit store when inside `C` and `n` is even,
/// one by one otherwise.
#[inline(always)]
fn store_acc16<T: Half16, const R: usize>(
    c: DeviceSliceMut<u16>,
    acc: &[f32; R],
    t: u32,
    out: OutTile,
) {
    unroll!(p in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63] {
        if p < R / 2 {
            store_pair::<T>(c, acc[2 * p], acc[2 * p + 1], acc_coord(t, 2 * p), out);
        }
    });
}

/// One neighbouring pair of [`store_acc16`] at `(r, cc)` of the tile `out`.
#[inline(always)]
fn store_pair<T: Half16>(
    c: DeviceSliceMut<u16>,
    lo: f32,
    hi: f32,
    (r, cc): (usize, usize),
    out: OutTile,
) {
    let OutTile { row0, col0, m, n } = out;
    {
        let (row, col) = (row0 + r, col0 + cc);
        if row >= m {
            return;
        }
        let w = mma::pack_rn::<T>(lo, hi);
        if n.is_multiple_of(2) && col + 1 < n {
            // SAFETY: `C[row, col..col + 2]` is inside `C` (its length was
            // checked against `m n`, `row < m`, `col + 1 < n`) and 4-byte
            // aligned (`n`, `col` even).
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

/// Starts the copies of `k` tile `tile` into stage `s` of a 16-bit layout
/// (`A` box then `B` boxes of 64 columns), completing on `full`, for the
/// block tile whose first row of `A` is `bm` and first column of `B` `bn`.
#[inline(always)]
fn load_stage16<const BN: usize>(
    base: u32,
    stage: usize,
    a_map: DeviceSlice<u64>,
    b_map: DeviceSlice<u64>,
    full: Mbarrier,
    tile: usize,
    (bm, bn): (usize, usize),
) {
    let bytes = (WG_BM + BN) * WG_BK * 2;
    let at = base + (stage * bytes) as u32;
    let k0 = (tile * WG_BK) as i32;
    full.arrive_expect_tx(bytes as u32);
    tma_load_2d(at, a_map, k0, bm as i32, full);
    let b0 = at + (WG_BM * WG_BK * 2) as u32;
    for j in 0..BN / 64 {
        tma_load_2d(
            b0 + (j * 64 * WG_BK * 2) as u32,
            b_map,
            (bn + 64 * j) as i32,
            k0,
            full,
        );
    }
}

/// The descriptors of `k16` step `kk` of stage `s` for warpgroup `wg`
/// (rows `64 wg..` of the tile): `A` K-major (rows of 128 bytes, 8-row
/// groups 1024 bytes apart, the step 32 bytes into the span), `B`
/// N-major (64-column boxes `64 * 128` bytes apart, 8-row groups of `k`
/// 1024 bytes apart, the step 16 rows of `k` further).
#[inline(always)]
fn descs16<const BN: usize>(base: u32, stage: usize, wg: usize, kk: usize) -> (SmemDesc, SmemDesc) {
    let bytes = (WG_BM + BN) * WG_BK * 2;
    let at = base + (stage * bytes) as u32;
    let a =
        SmemDesc::new(at + (wg * 64 * 128) as u32, 16, 1024, Swizzle::B128).offset(32 * kk as u32);
    let b0 = at + (WG_BM * WG_BK * 2) as u32;
    let b = SmemDesc::new(b0 + (kk * 16 * 128) as u32, 64 * 128, 1024, Swizzle::B128);
    (a, b)
}

/// Rung 4: `wgmma` from shared memory, TMA copies, an mbarrier pipeline.
///
/// What changed from rung 3:
/// * The math is `wgmma.mma_async.m64n128k16`: one instruction per
///   warpgroup (128 threads) multiplies 64 x 16 by 16 x 128, reading both
///   operands from shared memory itself, asynchronously; no fragments pass
///   through registers (rung 3: per warp and `k16`, 8 `ldmatrix` for 32
///   `mma.sync`). Hopper's `mma.sync` runs at about a third of this rate.
/// * Copies are TMA boxes (`cp.async.bulk.tensor`): thread 0 issues three
///   per stage (`A` 128 x 64, `B` two 64 x 64) and the copy engine writes
///   them 128-byte-swizzled, the layout `wgmma` reads without bank
///   conflicts; no thread computes an address or moves a byte, and boxes
///   past the edges are zero-filled by the hardware.
/// * Stages are guarded by mbarriers instead of `__syncthreads`:
///   `full[s]` completes when the stage's bytes have landed (the copies'
///   transaction count), `empty[s]` when all 256 threads have finished the
///   `wgmma` that read it; thread 0 waits on `empty[s]` before refilling.
///
/// Tiling: 128 x 128 per block; warpgroup `wg` owns rows `64 wg..+64` (64
/// accumulators per thread). `k` in tiles of 64 (4 `wgmma` per tile and
/// warpgroup), [`WG_STAGES`] stages of 32 KiB. Each tile waits for its
/// `wgmma` to finish (`wait_group 0`) before releasing the stage: simple,
/// but the tensor core idles while a warpgroup turns around, and thread
/// 0's warpgroup stalls whenever it refills. Rung 5 removes both.
#[kernel(launch_bounds(256, 1), instances(Bf16, F16))]
pub fn matmul_wgmma<T: Half16>(
    a_map: DeviceSlice<u64>,
    b_map: DeviceSlice<u64>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    // A body of its own: inlined straight into the kernel, LLVM numbers the
    // PTX registers differently (the PTX is kept as it was measured).
    wgmma_body::<T>(a_map, b_map, c, m, n, k);
}

/// Rung 4's body (see [`matmul_wgmma`]).
#[inline(always)]
fn wgmma_body<T: Half16>(
    a_map: DeviceSlice<u64>,
    b_map: DeviceSlice<u64>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    const S: usize = WG_STAGES;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    if c.len() < m * n {
        ptxlab_device::trap("matmul: C is shorter than m n");
    }
    let (base, _, bars) = layout(S, WG_STAGE);
    init_barriers(bars, S, WG_THREADS, &[a_map, b_map]);
    let t = thread::thread_idx_x() as usize;
    let wg = t / 128;
    let bm = thread::block_idx_y() as usize * WG_BM;
    let bn = thread::block_idx_x() as usize * WG_BN;
    let ntiles = k.div_ceil(WG_BK);
    let full = |s: usize| Mbarrier::at(bars, s);
    let empty = |s: usize| Mbarrier::at(bars, S + s);
    if t == 0 {
        for s in 0..S.min(ntiles) {
            load_stage16::<WG_BN>(base, s, a_map, b_map, full(s), s, (bm, bn));
        }
    }
    let mut acc = [0f32; 64];
    for tile in 0..ntiles {
        let s = tile % S;
        let phase = ((tile / S) & 1) as u32;
        full(s).wait(phase);
        wgmma_fence();
        unroll!(kk in [0, 1, 2, 3] {
            let (da, db) = descs16::<WG_BN>(base, s, wg, kk);
            wgmma::wgmma_m64n128k16::<T, true>(&mut acc, da, db, true);
        });
        wgmma_commit_group();
        wgmma_wait_group::<0>();
        fence_operands(&mut acc);
        empty(s).arrive();
        let next = tile + S;
        if t == 0 && next < ntiles {
            empty(s).wait(phase);
            load_stage16::<WG_BN>(base, s, a_map, b_map, full(s), next, (bm, bn));
        }
    }
    let out = OutTile {
        row0: bm + 64 * wg,
        col0: bn,
        m,
        n,
    };
    store_acc16::<T, 64>(c, &acc, (t % 128) as u32, out);
}

/// Tile `i` of a `tiles_m x tiles_n` grid in the grouped order of
/// [`WS_GROUP`]: `(tile row, tile column)`.
#[inline(always)]
pub const fn grouped_tile(i: usize, tiles_m: usize, tiles_n: usize) -> (usize, usize) {
    // `tiles_n >= 1` and `first < tiles_m` for every tile index; the
    // `max(1)`s only tell the compiler the divisors are not zero (no panic
    // path in the PTX).
    let per_group = WS_GROUP * if tiles_n > 1 { tiles_n } else { 1 };
    let first = (i / per_group) * WS_GROUP;
    let left = tiles_m.saturating_sub(first);
    let rows = if left < WS_GROUP {
        if left > 1 { left } else { 1 }
    } else {
        WS_GROUP
    };
    let local = i % per_group;
    (first + local % rows, local / rows)
}

/// Rung 5: a producer warpgroup, two consumer warpgroups, a persistent
/// grid.
///
/// What changed from rung 4:
/// * Warp specialisation: warpgroup 0 only copies (one thread issues the
///   TMA boxes; `setmaxnreg.dec 40` hands its registers back), warpgroups 1
///   and 2 only multiply (`setmaxnreg.inc 232`: room for the 128
///   accumulators of a 64 x 256 tile per thread, as two `m64n128k16`). The producer runs up to [`WS_STAGES`] tiles
///   ahead, waiting only on `empty`; consumers wait only on `full` — no
///   thread that does math ever waits for a copy to be issued.
/// * Consumers keep one `wgmma` group in flight: after issuing tile `t`
///   they `wait_group 1` (tile `t - 1` is done) and release tile `t - 1`'s
///   stage, so the tensor core always has queued work.
/// * 128 x 256 tiles: each loaded byte feeds twice the multiply-adds of
///   rung 4's 128 x 128 in `B`'s direction.
/// * A persistent grid: one block per SM walks the tiles in groups of
///   [`WS_GROUP`] tile rows ([`grouped_tile`]), so the producer streams the
///   next tile's stages while the consumers store the last one, and tiles
///   that share a band of `B` run at the same time (L2 hits).
///
/// Stage layout (48 KiB): `A` 128 x 64, then `B` as four boxes of 64 `k`
/// rows x 64 columns. Barriers: `full[s]` expects one arrival (the
/// producer's, with the stage's byte count), `empty[s]` 256 (every
/// consumer thread, after the `wgmma` that read the stage completed).
#[kernel(launch_bounds(384, 1), instances(Bf16, F16))]
pub fn matmul_ws<T: Half16>(
    a_map: DeviceSlice<u64>,
    b_map: DeviceSlice<u64>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    const S: usize = WS_STAGES;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    if c.len() < m * n {
        ptxlab_device::trap("matmul: C is shorter than m n");
    }
    let (base, _, bars) = layout(S, WS_STAGE);
    init_barriers(bars, S, 2 * 128, &[a_map, b_map]);
    let t = thread::thread_idx_x() as usize;
    let (tiles_m, tiles_n) = (m.div_ceil(WG_BM), n.div_ceil(WS_BN));
    let tiles = tiles_m * tiles_n;
    let ktiles = k.div_ceil(WG_BK);
    let (first, step) = (
        thread::block_idx_x() as usize,
        thread::grid_dim_x() as usize,
    );
    let full = |s: usize| Mbarrier::at(bars, s);
    let empty = |s: usize| Mbarrier::at(bars, S + s);
    // The warpgroup index through a shuffle: the same value in every lane
    // (CUTLASS's `canonical_warp_group_idx`), so the compiler knows each
    // role's branch is uniform per warpgroup and keeps the `wgmma` async.
    let role = warp::shfl_idx(FULL_MASK, (t / 128) as u32, 0);
    if role == 0 {
        setmaxnreg_dec::<40>();
        if t == 0 {
            let mut it = 0;
            let mut tile = first;
            while tile < tiles {
                let (tm, tn) = grouped_tile(tile, tiles_m, tiles_n);
                for kt in 0..ktiles {
                    let s = it % S;
                    if it >= S {
                        empty(s).wait((((it / S) & 1) ^ 1) as u32);
                    }
                    load_stage16::<WS_BN>(
                        base,
                        s,
                        a_map,
                        b_map,
                        full(s),
                        kt,
                        (tm * WG_BM, tn * WS_BN),
                    );
                    it += 1;
                }
                tile += step;
            }
        }
    } else {
        setmaxnreg_inc::<232>();
        let wg = role as usize - 1;
        let mut it = 0;
        let mut tile = first;
        while tile < tiles {
            let (tm, tn) = grouped_tile(tile, tiles_m, tiles_n);
            // Columns 0..128 and 128..256 of the warpgroup's 64 x 256: two
            // `m64n128k16` per step (LLVM keeps two 64-value arrays in
            // registers, where it moved one of 128 to local memory).
            let mut lo = [0f32; 64];
            let mut hi = [0f32; 64];
            for kt in 0..ktiles {
                let s = it % S;
                full(s).wait(((it / S) & 1) as u32);
                wgmma_fence();
                unroll!(kk in [0, 1, 2, 3] {
                    let (da, db) = descs16::<WS_BN>(base, s, wg, kk);
                    // The second half of B: two 64-column boxes further.
                    let db_hi = db.offset(2 * 64 * 128);
                    wgmma::wgmma_m64n128k16::<T, true>(&mut lo, da, db, true);
                    wgmma::wgmma_m64n128k16::<T, true>(&mut hi, da, db_hi, true);
                });
                wgmma_commit_group();
                // Tile `kt - 1`'s group is done (its stage can go back);
                // this tile's still writes the accumulators, which nothing
                // else touches until `wait_group 0` below.
                wgmma_wait_group::<1>();
                empty((it + S - 1) % S).arrive_if(kt > 0);
                it += 1;
            }
            wgmma_wait_group::<0>();
            fence_operands(&mut lo);
            fence_operands(&mut hi);
            if ktiles > 0 {
                empty((it - 1) % S).arrive();
            }
            let tw = (t % 128) as u32;
            let (row0, col0) = (tm * WG_BM + 64 * wg, tn * WS_BN);
            let out = OutTile { row0, col0, m, n };
            store_acc16::<T, 64>(c, &lo, tw, out);
            let out = OutTile {
                col0: col0 + 128,
                ..out
            };
            store_acc16::<T, 64>(c, &hi, tw, out);
            tile += step;
        }
    }
}

/// 3xTF32 on `wgmma`: f32 `C = A B` from three TF32 products per term.
///
/// The operands come split: `A = a_hi + a_lo` and `B^T = b_hi + b_lo`
/// (each part a TF32 value, rounded to nearest by
/// [`matmul_split_tf32_f32`](crate::tensor::matmul_split_tf32_f32), with
/// `B` transposed to `n x k` because TF32 `wgmma` reads both operands
/// K-major). Structure as rung 5: a producer warpgroup copying four
/// 16 KiB boxes per stage (`a_hi`, `a_lo`, `b_hi`, `b_lo`, 128 rows x 32
/// f32, 128-byte swizzled), two consumer warpgroups, a persistent grid.
/// Per 8 of depth a consumer issues `a_lo b_hi`, `a_hi b_lo`, `a_hi b_hi`
/// (`m64n128k8.tf32`, small terms first).
///
/// Accuracy: the tensor core accumulates with truncation, so a long chain
/// of accumulating `wgmma` drifts (on `mma.sync` the error grew linearly
/// with `k`: `docs/book/src/workloads/matmul.md`, "3xTF32"). Each 32-deep tile therefore
/// goes into fresh accumulators (12 `wgmma`, zeroed by the first), and the
/// tile's sum is added to the running total with an ordinary f32 add,
/// rounded to nearest: the biased chains are 12 long whatever `k` is.
#[kernel(launch_bounds(384, 1))]
pub fn matmul_tf32x3w_f32(
    a_hi: DeviceSlice<u64>,
    a_lo: DeviceSlice<u64>,
    b_hi: DeviceSlice<u64>,
    b_lo: DeviceSlice<u64>,
    c: DeviceSliceMut<f32>,
    dims: GemmDims,
) {
    const S: usize = TF32W_STAGES;
    const BOX: usize = WG_BM * TF32W_BK * 4;
    let (m, n, k) = (dims.m as usize, dims.n as usize, dims.k as usize);
    if c.len() < m * n {
        ptxlab_device::trap("matmul: C is shorter than m n");
    }
    let (base, _, bars) = layout(S, TF32W_STAGE);
    init_barriers(bars, S, 2 * 128, &[a_hi, a_lo, b_hi, b_lo]);
    let t = thread::thread_idx_x() as usize;
    let (tiles_m, tiles_n) = (m.div_ceil(WG_BM), n.div_ceil(TF32W_BN));
    let tiles = tiles_m * tiles_n;
    let ktiles = k.div_ceil(TF32W_BK);
    let (first, step) = (
        thread::block_idx_x() as usize,
        thread::grid_dim_x() as usize,
    );
    let full = |s: usize| Mbarrier::at(bars, s);
    let empty = |s: usize| Mbarrier::at(bars, S + s);
    let stage_at = |s: usize| base + (s * TF32W_STAGE) as u32;
    let role = warp::shfl_idx(FULL_MASK, (t / 128) as u32, 0);
    if role == 0 {
        setmaxnreg_dec::<40>();
        if t == 0 {
            let mut it = 0;
            let mut tile = first;
            while tile < tiles {
                let (tm, tn) = grouped_tile(tile, tiles_m, tiles_n);
                for kt in 0..ktiles {
                    let s = it % S;
                    if it >= S {
                        empty(s).wait((((it / S) & 1) ^ 1) as u32);
                    }
                    let (at, k0) = (stage_at(s), (kt * TF32W_BK) as i32);
                    let f = full(s);
                    f.arrive_expect_tx(TF32W_STAGE as u32);
                    let (rm, rn) = ((tm * WG_BM) as i32, (tn * TF32W_BN) as i32);
                    tma_load_2d(at, a_hi, k0, rm, f);
                    tma_load_2d(at + BOX as u32, a_lo, k0, rm, f);
                    tma_load_2d(at + 2 * BOX as u32, b_hi, k0, rn, f);
                    tma_load_2d(at + 3 * BOX as u32, b_lo, k0, rn, f);
                    it += 1;
                }
                tile += step;
            }
        }
    } else {
        setmaxnreg_inc::<232>();
        let wg = role as usize - 1;
        let mut it = 0;
        let mut tile = first;
        while tile < tiles {
            let (tm, tn) = grouped_tile(tile, tiles_m, tiles_n);
            let mut acc = [0f32; 64];
            for _ in 0..ktiles {
                let s = it % S;
                full(s).wait(((it / S) & 1) as u32);
                let at = stage_at(s);
                let desc = |part: usize, rows0: usize, kk: usize| {
                    let start = at + (part * BOX + rows0 * 128) as u32;
                    SmemDesc::new(start, 16, 1024, Swizzle::B128).offset(32 * kk as u32)
                };
                let mut part = [0f32; 64];
                wgmma_fence();
                unroll!(kk in [0, 1, 2, 3] {
                    let (ah, al) = (desc(0, 64 * wg, kk), desc(1, 64 * wg, kk));
                    let (bh, bl) = (desc(2, 0, kk), desc(3, 0, kk));
                    wgmma::wgmma_m64n128k8_tf32(&mut part, al, bh, kk != 0);
                    wgmma::wgmma_m64n128k8_tf32(&mut part, ah, bl, true);
                    wgmma::wgmma_m64n128k8_tf32(&mut part, ah, bh, true);
                });
                wgmma_commit_group();
                wgmma_wait_group::<0>();
                fence_operands(&mut part);
                empty(s).arrive();
                unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63] {
                    acc[i] += part[i];
                });
                it += 1;
            }
            let tw = (t % 128) as u32;
            let (row0, col0) = (tm * WG_BM + 64 * wg, tn * TF32W_BN);
            unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63] {
                let (r, cc) = acc_coord(tw, i);
                let (row, col) = (row0 + r, col0 + cc);
                if row < m && col < n {
                    // SAFETY: inside `C` (length checked, `row < m`, `col < n`).
                    unsafe { c.set_unchecked(row * n + col, acc[i]) };
                }
            });
            tile += step;
        }
    }
}
