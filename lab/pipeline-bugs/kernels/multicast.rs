//! The TMA multicast planted bugs (sm_90, built into the sm_90a module):
//! the cluster's batched matrix-vector product of [`crate::cluster`]
//! (each block loads a slice of every tile of the shared matrix and
//! multicasts it to the whole cluster; consumers release each stage on
//! the `empty` barrier of every block) with one of the classic mistakes
//! of multicast pipelines. Same launch and result as
//! `cluster_multicast_matvec_f32`.

use crate::cluster::{
    MC_CONSUMERS, MC_MAX_CLUSTER, MC_STAGES, MC_TILE, MC_TILE_BYTES, multicast_matvec_shared_bytes,
    tile_base,
};
use ptxlab_device::cluster;
use ptxlab_device::hopper::{
    Mbarrier, fence_mbarrier_init, fence_tensormap_acquire, tma_load_2d_multicast,
};
use ptxlab_device::prelude::*;

/// The mistakes the planted bugs make in [`multicast_matvec`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Multicast {
    /// The correct kernel.
    Correct,
    /// Each block multicasts its slice only to itself: the mask misses
    /// the peers, whose tiles never fill.
    MaskMissesPeer,
    /// `expect_tx` counts only this block's slice, though the slices of
    /// every block land in it.
    ExpectTxOneBlock,
    /// Consumers release a stage on their own block's `empty` barrier
    /// only (`arrive_remote(own rank)`): the peers that refill it never
    /// learn it is free.
    ArriveOwnRankOnly,
}

/// The body of `cluster_multicast_matvec_f32`, making mistake `bug`.
#[inline(always)]
fn multicast_matvec(
    a_map: DeviceSlice<u64>,
    x: DeviceSlice<f32>,
    y: DeviceSliceMut<f32>,
    m: u32,
    k: u32,
    bug: Multicast,
) {
    const S: usize = MC_STAGES;
    let (m, k) = (m as usize, k as usize);
    let c = cluster::num_blocks();
    let rank = cluster::block_rank();
    if c > MC_MAX_CLUSTER || !MC_TILE.is_multiple_of(c as usize) {
        ptxlab_device::trap("multicast matvec: the cluster must have 1, 2, 4 or 8 blocks");
    }
    if x.len() < c as usize * k || y.len() < c as usize * m {
        ptxlab_device::trap("multicast matvec: x or y is shorter than (cluster size) x (k or m)");
    }
    let (base, pad) = tile_base(multicast_matvec_shared_bytes());
    let bars = shared::dynamic_shared::<u64>(pad + S * MC_TILE_BYTES, 2 * S);
    let full = |s: usize| Mbarrier::at(bars, s);
    let empty = |s: usize| Mbarrier::at(bars, S + s);
    let t = thread::thread_idx_x() as usize;
    if t == 0 {
        for s in 0..S {
            full(s).init(1);
            // Every consumer of every block of the cluster releases the
            // stage here: this block's multicast refills it in all of them.
            empty(s).init(MC_CONSUMERS * c);
        }
        fence_mbarrier_init();
        fence_tensormap_acquire(a_map);
    }
    // The inits are visible to every block before any peer multicasts
    // into this block or arrives on its barriers.
    cluster::sync();
    let row0 = (thread::block_idx_x() / c) as usize * MC_TILE;
    let slice_rows = MC_TILE / c as usize;
    let slice_bytes = slice_rows * MC_TILE * 4;
    let all = ((1u32 << c) - 1) as u16;
    let ktiles = k.div_ceil(MC_TILE);
    if t == 0 {
        // The producer: this block's slice of each tile, to every block.
        for it in 0..ktiles {
            let s = it % S;
            if it >= S {
                empty(s).wait((((it / S) & 1) ^ 1) as u32);
            }
            let bytes = if bug == Multicast::ExpectTxOneBlock {
                slice_bytes
            } else {
                // All `c` slices land here: the whole tile.
                MC_TILE_BYTES
            };
            full(s).arrive_expect_tx(bytes as u32);
            let mask = if bug == Multicast::MaskMissesPeer {
                1u16 << rank
            } else {
                all
            };
            let at = base + (s * MC_TILE_BYTES + rank as usize * slice_bytes) as u32;
            let y0 = row0 + rank as usize * slice_rows;
            tma_load_2d_multicast(at, a_map, (it * MC_TILE) as i32, y0 as i32, full(s), mask);
        }
    } else if t >= 32 {
        let cons = t - 32;
        let (r, q) = (cons / 4, cons % 4);
        let xv = rank as usize * k;
        let mut acc = 0.0f32;
        for it in 0..ktiles {
            let s = it % S;
            full(s).wait(((it / S) & 1) as u32);
            let tile = shared::dynamic_shared::<f32>(pad + s * MC_TILE_BYTES, MC_TILE * MC_TILE);
            let col0 = it * MC_TILE + 8 * q;
            for i in 0..8 {
                // The box is zero past k, but x is not: skip those columns.
                if col0 + i < k {
                    acc += tile.get(r * MC_TILE + 8 * q + i) * x.get(xv + col0 + i);
                }
            }
            // This thread is done with the stage: tell every block whose
            // multicast refills it.
            if bug == Multicast::ArriveOwnRankOnly {
                empty(s).arrive_remote(rank);
            } else {
                for p in 0..c {
                    empty(s).arrive_remote(p);
                }
            }
        }
        acc += warp::shfl_xor(FULL_MASK, acc, 1);
        acc += warp::shfl_xor(FULL_MASK, acc, 2);
        if q == 0 && row0 + r < m {
            y.set(rank as usize * m + row0 + r, acc);
        }
    }
    // No block exits while a peer's multicast may still land in it or a
    // peer still arrives on its barriers.
    cluster::sync();
}

/// `cluster_multicast_matvec_f32`; with `bug != 0` each block multicasts
/// its slice with the mask of its own rank only: the mask misses the
/// peers that wait for that slice, so their `full` barriers never get the
/// whole tile's bytes. The simulator reports the deadlock naming the
/// waiting consumer, the `expect_tx`, and the multicast whose mask leaves
/// the waiting block out.
#[kernel(launch_bounds(160, 1))]
pub fn multicast_mask_misses_peer(
    a_map: DeviceSlice<u64>,
    x: DeviceSlice<f32>,
    y: DeviceSliceMut<f32>,
    m: u32,
    k: u32,
    bug: u32,
) {
    let g = if bug != 0 {
        Multicast::MaskMissesPeer
    } else {
        Multicast::Correct
    };
    multicast_matvec(a_map, x, y, m, k, g);
}

/// `cluster_multicast_matvec_f32`; with `bug != 0` the producer's
/// `arrive_expect_tx` counts only the bytes of its own block's slice,
/// though every block's slice lands in it: the phase completes as soon as
/// one slice has landed, and the consumers read the others before they
/// land (or after the next phase's data overwrote them). The simulator
/// reports the read of a slice that landed in a later phase, naming the
/// read and the multicast.
#[kernel(launch_bounds(160, 1))]
pub fn multicast_expect_tx_one_block(
    a_map: DeviceSlice<u64>,
    x: DeviceSlice<f32>,
    y: DeviceSliceMut<f32>,
    m: u32,
    k: u32,
    bug: u32,
) {
    let g = if bug != 0 {
        Multicast::ExpectTxOneBlock
    } else {
        Multicast::Correct
    };
    multicast_matvec(a_map, x, y, m, k, g);
}

/// `cluster_multicast_matvec_f32`; with `bug != 0` the consumers release
/// a stage only on their own block's `empty` barrier (a remote arrive on
/// the wrong rank): the peers whose multicasts also refill that stage
/// never count these arrivals, so their producers wait forever. The
/// simulator reports the deadlock naming the producer's wait and the
/// arrivals its barrier still expects.
#[kernel(launch_bounds(160, 1))]
pub fn multicast_arrive_own_rank_only(
    a_map: DeviceSlice<u64>,
    x: DeviceSlice<f32>,
    y: DeviceSliceMut<f32>,
    m: u32,
    k: u32,
    bug: u32,
) {
    let g = if bug != 0 {
        Multicast::ArriveOwnRankOnly
    } else {
        Multicast::Correct
    };
    multicast_matvec(a_map, x, y, m, k, g);
}
