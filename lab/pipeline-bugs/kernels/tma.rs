//! The Hopper planted bugs (sm_90a): a TMA ring guarded by `full`/`empty`
//! mbarriers, a `wgmma` pipeline with one group in flight, and a TMA store
//! epilogue.

use ptxlab_device::hopper::{
    Mbarrier, Swizzle, bulk_commit_group, bulk_wait_group_read, fence_mbarrier_init,
    fence_proxy_async_shared, fence_tensormap_acquire, tma_load_2d, tma_store_2d,
};
use ptxlab_device::mem::U32x4;
use ptxlab_device::mma::{Bf16, shared_addr};
use ptxlab_device::prelude::*;
use ptxlab_device::wgmma::{
    self, SmemDesc, acc_coord, fence_operands, wgmma_commit_group, wgmma_fence, wgmma_wait_group,
};

/// Side of the square f32 boxes of the TMA ring and the TMA store kernel
/// (32 floats: 128-byte rows, no swizzle).
pub const TMA_BOX: usize = 32;
/// Stages of the TMA ring.
pub const TMA_STAGES: usize = 3;
/// Threads of the TMA ring: a producer warp, then four consumer warps.
pub const TMA_THREADS: u32 = 160;
/// Bytes of one box.
const BOX_BYTES: usize = TMA_BOX * TMA_BOX * 4;

/// Dynamic shared memory of the TMA ring: 128 bytes of alignment slack,
/// the stages, then `full[s]` and `empty[s]`.
pub const fn tma_ring_shared_bytes() -> usize {
    128 + TMA_STAGES * BOX_BYTES + 16 * TMA_STAGES
}

/// The tile area's shared address (aligned to `align`) and its byte
/// offset from the start of dynamic shared memory.
#[inline(always)]
fn aligned_base(bytes: usize, align: u32) -> (u32, usize) {
    let all = shared::dynamic_shared::<U32x4>(0, bytes / 16);
    let raw = shared_addr(all.as_mut_ptr());
    let pad = ((align - raw % align) % align) as usize;
    (raw + pad as u32, pad)
}

/// The mistakes of [`tma_ring`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ring {
    Correct,
    WrongParity,
    ExpectTxPartial,
    RefillEarly,
}

/// Row sums `y[r] = sum_j A[r, j]` of a row-major `m x k` f32 matrix,
/// whose tiles arrive by TMA (`map`: boxes of 32 x 32) through a ring of
/// [`TMA_STAGES`] stages.
///
/// Warp specialisation: thread 0 (warp 0) is the producer: for each tile
/// it waits for `empty[s]` (the consumers released the stage), announces
/// the box's bytes on `full[s]` (`arrive.expect_tx`) and issues the TMA
/// load. Warps 1-4 consume: wait for `full[s]` with the stage's phase
/// parity, add their eight floats of a row (consumer thread `c` owns row
/// `c / 4`, columns `8 (c % 4)..+8`), and arrive on `empty[s]` (128
/// arrivals complete it). Boxes past the matrix's edges arrive
/// zero-filled, so the sums need no bounds checks.
#[inline(always)]
fn tma_ring(map: DeviceSlice<u64>, y: DeviceSliceMut<f32>, m: u32, k: u32, mistake: Ring) {
    const S: usize = TMA_STAGES;
    let (m, k) = (m as usize, k as usize);
    if y.len() < m {
        ptxlab_device::trap("tma ring: y is shorter than m");
    }
    let (base, pad) = aligned_base(tma_ring_shared_bytes(), 128);
    let bars = shared::dynamic_shared::<u64>(pad + S * BOX_BYTES, 2 * S);
    let full = |s: usize| Mbarrier::at(bars, s);
    let empty = |s: usize| Mbarrier::at(bars, S + s);
    let t = thread::thread_idx_x() as usize;
    if t == 0 {
        for s in 0..S {
            full(s).init(1);
            empty(s).init(TMA_THREADS - 32);
        }
        fence_mbarrier_init();
        fence_tensormap_acquire(map);
    }
    sync_threads();
    let row0 = thread::block_idx_x() as usize * TMA_BOX;
    let ktiles = k.div_ceil(TMA_BOX);
    if t < 32 {
        if t == 0 {
            for it in 0..ktiles {
                let s = it % S;
                if it >= S && mistake != Ring::RefillEarly {
                    empty(s).wait((((it / S) & 1) ^ 1) as u32);
                }
                let bytes = if mistake == Ring::ExpectTxPartial {
                    // The mistake: only the part of the box inside the matrix.
                    let rows = (m - row0).min(TMA_BOX);
                    let cols = (k - it * TMA_BOX).min(TMA_BOX);
                    rows * cols * 4
                } else {
                    BOX_BYTES
                };
                full(s).arrive_expect_tx(bytes as u32);
                let at = base + (s * BOX_BYTES) as u32;
                tma_load_2d(at, map, (it * TMA_BOX) as i32, row0 as i32, full(s));
            }
        }
    } else {
        let c = t - 32;
        let (r, q) = (c / 4, c % 4);
        let mut acc = 0.0f32;
        for it in 0..ktiles {
            let s = it % S;
            let parity = ((it / S) & 1) as u32;
            full(s).wait(if mistake == Ring::WrongParity {
                parity ^ 1
            } else {
                parity
            });
            let tile = shared::dynamic_shared::<f32>(pad + s * BOX_BYTES, TMA_BOX * TMA_BOX);
            for i in 0..8 {
                acc += tile.get(r * TMA_BOX + 8 * q + i);
            }
            empty(s).arrive();
        }
        acc += warp::shfl_xor(FULL_MASK, acc, 1);
        acc += warp::shfl_xor(FULL_MASK, acc, 2);
        if q == 0 && row0 + r < m {
            y.set(row0 + r, acc);
        }
    }
}

/// `tma_ring`; with `bug != 0` the consumers wait for the other parity
/// (`(it / S + 1) & 1`): on a fresh barrier that wait returns at once, so
/// they read a stage before its phase has completed.
#[kernel(launch_bounds(160, 1))]
pub fn tma_wrong_parity(map: DeviceSlice<u64>, y: DeviceSliceMut<f32>, m: u32, k: u32, bug: u32) {
    let mistake = if bug != 0 {
        Ring::WrongParity
    } else {
        Ring::Correct
    };
    tma_ring(map, y, m, k, mistake);
}

/// `tma_ring`; with `bug != 0` the producer's `expect_tx` counts only the
/// rows and columns of an edge box that lie inside the matrix, but TMA
/// always delivers (and counts) the whole box: the phase's transaction
/// count never returns to zero.
#[kernel(launch_bounds(160, 1))]
pub fn tma_expect_tx_partial(
    map: DeviceSlice<u64>,
    y: DeviceSliceMut<f32>,
    m: u32,
    k: u32,
    bug: u32,
) {
    let mistake = if bug != 0 {
        Ring::ExpectTxPartial
    } else {
        Ring::Correct
    };
    tma_ring(map, y, m, k, mistake);
}

/// `tma_ring`; with `bug != 0` the producer refills a stage without
/// waiting for its `empty` barrier: it may overwrite a tile the consumers
/// have not read, and run a `full` barrier two phases ahead of them.
#[kernel(launch_bounds(160, 1))]
pub fn tma_refill_early(map: DeviceSlice<u64>, y: DeviceSliceMut<f32>, m: u32, k: u32, bug: u32) {
    let mistake = if bug != 0 {
        Ring::RefillEarly
    } else {
        Ring::Correct
    };
    tma_ring(map, y, m, k, mistake);
}

/// Rows of the `wgmma` pipeline's block tile (one warpgroup).
pub const WGP_ROWS: usize = 64;
/// Columns of `B` and `C` of the `wgmma` pipeline (one `m64n128k16`).
pub const WGP_N: usize = 128;
/// `k` per stage: 64 BF16 values, one 128-byte swizzle span per row of `A`.
pub const WGP_TK: usize = 64;
/// Stages of the `wgmma` pipeline.
pub const WGP_STAGES: usize = 2;
/// Threads of the `wgmma` pipeline: one warpgroup.
pub const WGP_THREADS: u32 = 128;
/// Bytes of one stage: `A` 64 x 64 then `B` as two boxes of 64 `k` rows
/// x 64 columns.
const WGP_STAGE: usize = (WGP_ROWS + WGP_N) * WGP_TK * 2;

/// Dynamic shared memory of the `wgmma` pipeline: 1024 bytes of alignment
/// slack (the swizzle pattern starts with the tile), the stages, `full[s]`.
pub const fn wgmma_pipe_shared_bytes() -> usize {
    1024 + WGP_STAGES * WGP_STAGE + 8 * WGP_STAGES
}

/// The mistakes of [`wgmma_pipe`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wg {
    Correct,
    AccEarly,
    OperandOverwrite,
}

/// `C = A B` for `A` `m x k` and `B` `k x 128` (BF16, row-major, `k` a
/// multiple of 8), `C` `m x 128` in f32: one warpgroup per 64 rows,
/// `wgmma.m64n128k16` from 128-byte-swizzled tiles that thread 0 brings
/// in by TMA (`a_map`: boxes of 64 x 64; `b_map`: boxes of 64 `k` rows x
/// 64 columns), [`WGP_STAGES`] stages guarded by `full[s]`.
///
/// One `wgmma` group stays in flight: after issuing tile `t`'s four
/// `wgmma` the warpgroup waits with `wgmma_wait_group::<1>` (tile `t - 1`
/// is done: its stage is free), then thread 0 refills that stage with
/// tile `t + S - 1`. After the last tile, `wgmma_wait_group::<0>` and the
/// accumulators (thread `t` holds [`acc_coord`]`(t, i)`) go to `C`.
#[inline(always)]
fn wgmma_pipe(
    a_map: DeviceSlice<u64>,
    b_map: DeviceSlice<u64>,
    c: DeviceSliceMut<f32>,
    m: u32,
    k: u32,
    mistake: Wg,
) {
    const S: usize = WGP_STAGES;
    let (m, k) = (m as usize, k as usize);
    if c.len() < m * WGP_N {
        ptxlab_device::trap("wgmma pipe: C is shorter than m x 128");
    }
    let (base, pad) = aligned_base(wgmma_pipe_shared_bytes(), 1024);
    let bars = shared::dynamic_shared::<u64>(pad + S * WGP_STAGE, S);
    let full = |s: usize| Mbarrier::at(bars, s);
    let t = thread::thread_idx_x() as usize;
    if t == 0 {
        for s in 0..S {
            full(s).init(1);
        }
        fence_mbarrier_init();
        fence_tensormap_acquire(a_map);
        fence_tensormap_acquire(b_map);
    }
    sync_threads();
    let row0 = thread::block_idx_x() as usize * WGP_ROWS;
    let ktiles = k.div_ceil(WGP_TK);
    let stage_at = |s: usize| base + (s * WGP_STAGE) as u32;
    let load = |s: usize, tile: usize| {
        let (at, k0) = (stage_at(s), (tile * WGP_TK) as i32);
        full(s).arrive_expect_tx(WGP_STAGE as u32);
        tma_load_2d(at, a_map, k0, row0 as i32, full(s));
        let b0 = at + (WGP_ROWS * WGP_TK * 2) as u32;
        tma_load_2d(b0, b_map, 0, k0, full(s));
        tma_load_2d(b0 + (64 * WGP_TK * 2) as u32, b_map, 64, k0, full(s));
    };
    if t == 0 {
        for s in 0..S.min(ktiles) {
            load(s, s);
        }
    }
    let mut acc = [0f32; 64];
    for tile in 0..ktiles {
        let s = tile % S;
        full(s).wait(((tile / S) & 1) as u32);
        wgmma_fence();
        let at = stage_at(s);
        let b0 = at + (WGP_ROWS * WGP_TK * 2) as u32;
        ptxlab_device::unroll!(kk in [0, 1, 2, 3] {
            let da = SmemDesc::new(at, 16, 1024, Swizzle::B128).offset(32 * kk as u32);
            let db = SmemDesc::new(b0 + (kk * 16 * 128) as u32, 64 * 128, 1024, Swizzle::B128);
            wgmma::wgmma_m64n128k16::<Bf16, true>(&mut acc, da, db, true);
        });
        wgmma_commit_group();
        let refill = t == 0 && tile >= 1 && tile - 1 + S < ktiles;
        if refill && mistake == Wg::OperandOverwrite {
            // The mistake: tile `t - 1`'s group may still be reading the stage.
            load((tile - 1) % S, tile - 1 + S);
        }
        wgmma_wait_group::<1>();
        if refill && mistake != Wg::OperandOverwrite {
            load((tile - 1) % S, tile - 1 + S);
        }
    }
    if mistake != Wg::AccEarly {
        wgmma_wait_group::<0>();
    }
    fence_operands(&mut acc);
    for (i, v) in acc.iter().enumerate() {
        let (r, cc) = acc_coord(t as u32, i);
        if row0 + r < m {
            c.set((row0 + r) * WGP_N + cc, *v);
        }
    }
    if mistake == Wg::AccEarly {
        // The mistake: the wait comes after the accumulators were read.
        wgmma_wait_group::<0>();
    }
}

/// `wgmma_pipe`; with `bug != 0` the accumulators are stored before
/// `wgmma_wait_group::<0>()`: the last tile's group is still writing them.
#[kernel(launch_bounds(128, 1))]
pub fn wgmma_acc_early(
    a_map: DeviceSlice<u64>,
    b_map: DeviceSlice<u64>,
    c: DeviceSliceMut<f32>,
    m: u32,
    k: u32,
    bug: u32,
) {
    let mistake = if bug != 0 { Wg::AccEarly } else { Wg::Correct };
    wgmma_pipe(a_map, b_map, c, m, k, mistake);
}

/// `wgmma_pipe`; with `bug != 0` thread 0 refills the stage of tile
/// `t - 1` before `wgmma_wait_group::<1>()`: the `wgmma` of tile `t - 1`
/// may still be reading it.
#[kernel(launch_bounds(128, 1))]
pub fn wgmma_operand_overwrite(
    a_map: DeviceSlice<u64>,
    b_map: DeviceSlice<u64>,
    c: DeviceSliceMut<f32>,
    m: u32,
    k: u32,
    bug: u32,
) {
    let mistake = if bug != 0 {
        Wg::OperandOverwrite
    } else {
        Wg::Correct
    };
    wgmma_pipe(a_map, b_map, c, m, k, mistake);
}

/// Threads of [`tma_store_no_fence`].
pub const STORE_THREADS: u32 = 128;

/// Dynamic shared memory of [`tma_store_no_fence`]: 128 bytes of alignment
/// slack, the input box, the output box, one mbarrier.
pub const fn tma_store_shared_bytes() -> usize {
    128 + 2 * BOX_BYTES + 16
}

/// `y = alpha x` for `m x k` f32 matrices, one 32 x 32 box per block: the
/// box arrives by TMA (`x_map`), each thread scales eight of its floats
/// into a second box with ordinary shared-memory stores, and thread 0
/// writes that box to `y` with a TMA store (`y_map`; the parts past the
/// edges are not written). The TMA store reads shared memory through the
/// asynchronous proxy, so the ordinary stores must be made visible to it:
/// `fence_proxy_async_shared` by every writing thread, then a barrier.
/// With `bug != 0` the fence is missing.
///
/// Thread mapping: block `(bx, by)` owns the box at column `32 bx`, row
/// `32 by`; thread `t` scales floats `t + 128 j`, `j < 8`.
#[kernel(launch_bounds(128, 1))]
pub fn tma_store_no_fence(x_map: DeviceSlice<u64>, y_map: DeviceSlice<u64>, alpha: f32, bug: u32) {
    let (base, pad) = aligned_base(tma_store_shared_bytes(), 128);
    let input = shared::dynamic_shared::<f32>(pad, TMA_BOX * TMA_BOX);
    let output = shared::dynamic_shared::<f32>(pad + BOX_BYTES, TMA_BOX * TMA_BOX);
    let bar = Mbarrier::at(shared::dynamic_shared::<u64>(pad + 2 * BOX_BYTES, 1), 0);
    let t = thread::thread_idx_x() as usize;
    let (bx, by) = (
        (thread::block_idx_x() as usize * TMA_BOX) as i32,
        (thread::block_idx_y() as usize * TMA_BOX) as i32,
    );
    if t == 0 {
        bar.init(1);
        fence_mbarrier_init();
        fence_tensormap_acquire(x_map);
        fence_tensormap_acquire(y_map);
    }
    sync_threads();
    if t == 0 {
        bar.arrive_expect_tx(BOX_BYTES as u32);
        tma_load_2d(base, x_map, bx, by, bar);
    }
    bar.wait(0);
    for j in 0..TMA_BOX * TMA_BOX / STORE_THREADS as usize {
        let i = t + STORE_THREADS as usize * j;
        output.set(i, alpha * input.get(i));
    }
    if bug == 0 {
        fence_proxy_async_shared();
    }
    sync_threads();
    if t == 0 {
        tma_store_2d(y_map, bx, by, base + BOX_BYTES as u32);
        bulk_commit_group();
        bulk_wait_group_read::<0>();
    }
}
