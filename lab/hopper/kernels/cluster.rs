//! Thread-block clusters and distributed shared memory (sm_90, built into
//! the sm_90a module): a cluster-wide sum, the teaching example of
//! `ptxlab_device::cluster`.
//!
//! [`cluster_sum_f32`] sums `x` cluster by cluster: `out[c]` is the sum of
//! the [`CLUSTER_SUM_ITEMS`] x [`CLUSTER_SUM_THREADS`] x (blocks per
//! cluster) elements of cluster `c`, so the grid is one block per such
//! slice, rounded up to whole clusters. Without clusters the block sums
//! would travel through global memory and a second launch (or atomics on
//! one word); with them, block 0 of the cluster collects its peers' sums
//! straight from their shared memory.
//!
//! Thread mapping: block `b` of the grid owns elements
//! `b * T * I .. (b + 1) * T * I` (`T` threads, `I` items each); thread `t`
//! reads `x[base + t + j T]` for `j < I` (consecutive threads, consecutive
//! addresses: coalesced), and the block reduces the `T` partial sums in
//! its shared memory (a tree of `sync_threads` steps). Then:
//!
//! 1. `cluster::sync()`: every block's sum is in its `partial[0]`, and the
//!    barrier's release/acquire makes it visible to the whole cluster (a
//!    block barrier only orders the threads of one block);
//! 2. in block 0 of the cluster, lane `r` of warp 0 reads `partial[0]` of
//!    block `r` over DSMEM (`partial.in_block(r)`), and a warp reduction
//!    adds them: `out[cluster]`;
//! 3. `cluster::sync()` again: a block's shared memory disappears when it
//!    exits, so no block may leave while block 0 still reads it.
//!
//! Shared memory: `T` f32 partial sums ([`cluster_sum_shared_bytes`]).
//!
//! [`cluster_multicast_matvec_f32`] is the TMA multicast example: a batch
//! of matrix-vector products `y_v = A x_v` with one shared matrix, where
//! the blocks of a cluster share each tile of `A` through one multicast
//! load instead of one load per block (see its docs).

use ptxlab_device::cluster;
use ptxlab_device::hopper::{
    Mbarrier, fence_mbarrier_init, fence_tensormap_acquire, tma_load_2d_multicast,
};
use ptxlab_device::mem::U32x4;
use ptxlab_device::mma::shared_addr;
use ptxlab_device::prelude::*;

/// Threads per block of [`cluster_sum_f32`].
pub const CLUSTER_SUM_THREADS: u32 = 256;
/// Elements each thread reads.
pub const CLUSTER_SUM_ITEMS: usize = 4;
/// Elements per block.
pub const CLUSTER_SUM_PER_BLOCK: usize = CLUSTER_SUM_THREADS as usize * CLUSTER_SUM_ITEMS;

/// Dynamic shared memory of [`cluster_sum_f32`]: one f32 per thread.
pub const fn cluster_sum_shared_bytes() -> usize {
    shared::shared_bytes::<f32>(0, CLUSTER_SUM_THREADS as usize)
}

/// `out[c] = sum of cluster c's slice of x` (see the module docs):
/// launch with `CLUSTER_SUM_THREADS` threads, one block per
/// [`CLUSTER_SUM_PER_BLOCK`] elements rounded up to whole clusters,
/// [`cluster_sum_shared_bytes`] of dynamic shared memory and
/// `LaunchConfig::with_cluster(c, 1, 1)`; `out` has one element per
/// cluster.
#[kernel(launch_bounds(256))]
pub fn cluster_sum_f32(x: DeviceSlice<f32>, mut out: DeviceSliceMut<f32>, n: u32) {
    const T: usize = CLUSTER_SUM_THREADS as usize;
    let n = n as usize;
    let t = thread::thread_idx_x() as usize;
    let b = thread::block_idx_x() as usize;
    let mut partial = shared::dynamic_shared::<f32>(0, T);
    // This block's slice, coalesced: thread t reads every T-th element.
    let base = b * CLUSTER_SUM_PER_BLOCK;
    let mut s = 0.0f32;
    for j in 0..CLUSTER_SUM_ITEMS {
        let i = base + t + j * T;
        if i < n {
            s += x[i];
        }
    }
    // The block's sum into its own shared memory: partial[0].
    partial[t] = s;
    sync_threads();
    let mut half = T / 2;
    while half > 0 {
        if t < half {
            let v = partial[t + half];
            partial[t] += v;
        }
        sync_threads();
        half /= 2;
    }
    // 1. Publish: after this barrier every block's partial[0] is final and
    //    visible to the whole cluster.
    cluster::sync();
    // 2. Gather: lane r of block 0's first warp reads block r's sum over
    //    DSMEM; a warp reduction adds them.
    let blocks = cluster::num_blocks();
    if cluster::block_rank() == 0 && t < 32 {
        let lane = t as u32;
        let mine = if lane < blocks {
            partial.in_block(lane).get(0)
        } else {
            0.0
        };
        let total = warp::reduce_sum(mine);
        if t == 0 {
            let c = b / blocks as usize;
            if c < out.len() {
                out[c] = total;
            }
        }
    }
    // 3. Keep every block (and so its shared memory) alive until block 0
    //    has read it.
    cluster::sync();
}

/// Rows of `A` per cluster of [`cluster_multicast_matvec_f32`], and
/// columns per tile (one 128-byte row of f32: no swizzle).
pub const MC_TILE: usize = 32;
/// Stages of its ring of tiles.
pub const MC_STAGES: usize = 3;
/// Its threads: a producer warp, then four consumer warps (one thread per
/// quarter row of a tile).
pub const MC_THREADS: u32 = 160;
/// Largest cluster it takes (its tiles split in at least 4-row slices).
pub const MC_MAX_CLUSTER: u32 = 8;
/// Bytes of one tile.
pub(crate) const MC_TILE_BYTES: usize = MC_TILE * MC_TILE * 4;
/// Consumer threads per block.
pub(crate) const MC_CONSUMERS: u32 = MC_THREADS - 32;

/// Dynamic shared memory of [`cluster_multicast_matvec_f32`]: 128 bytes of
/// alignment slack, the stages, then `full[s]` and `empty[s]`.
pub const fn multicast_matvec_shared_bytes() -> usize {
    128 + MC_STAGES * MC_TILE_BYTES + 16 * MC_STAGES
}

/// Rows of the TMA box (and of the slice of each tile a block loads) for
/// clusters of `c` blocks: the tensor map of `A` has boxes of
/// [`MC_TILE`] columns by this many rows.
pub const fn multicast_box_rows(c: u32) -> u32 {
    MC_TILE as u32 / c
}

/// The tile area's shared address (aligned to 128 bytes) and its byte
/// offset from the start of dynamic shared memory: the same in every block
/// of the launch, so a multicast lands at the same place in each.
#[inline(always)]
pub(crate) fn tile_base(bytes: usize) -> (u32, usize) {
    let all = shared::dynamic_shared::<U32x4>(0, bytes / 16);
    let raw = shared_addr(all.as_mut_ptr());
    let pad = ((128 - raw % 128) % 128) as usize;
    (raw + pad as u32, pad)
}

/// `y_v = A x_v` for a batch of `c` vectors sharing one matrix (`c` the
/// cluster size: 1, 2, 4 or 8): `A` is row-major `m x k` f32 behind the
/// tensor map `a_map` (boxes of [`MC_TILE`] columns by
/// [`multicast_box_rows`]`(c)` rows), `x` holds the `c` vectors of length
/// `k` one after the other, `y` the `c` results of length `m`.
///
/// Launch: [`MC_THREADS`] threads, `c * ceil(m / 32)` blocks,
/// [`multicast_matvec_shared_bytes`] of dynamic shared memory,
/// `LaunchConfig::with_cluster(c, 1, 1)`. Cluster `j` computes rows
/// `32 j .. 32 j + 32`; block `v` of the cluster computes them for vector
/// `v`. Every block needs the same tiles of `A`, so each loads only its
/// `32 / c` rows of every tile and **multicasts** them to the whole
/// cluster ([`tma_load_2d_multicast`]): `A` crosses L2 once per cluster
/// instead of once per block.
///
/// The ring (the TMA ring of the pipeline bugs, made cluster-wide): thread
/// 0 of each block is its producer; it waits for `empty[s]`, announces the
/// *whole tile's* bytes on its own `full[s]` (every block's slice lands in
/// every block), and multicasts its slice with the mask of all blocks.
/// Warps 1-4 consume: wait for `full[s]`, add their eight products of a
/// row (thread `i` owns row `i / 4`, columns `8 (i % 4)..+8`), and release
/// the stage on the `empty[s]` of **every** block of the cluster
/// ([`Mbarrier::arrive_remote`]), since each of them refills it; so
/// `empty[s]` counts `128 c` arrivals. A cluster barrier after the
/// barrier inits (with `fence_mbarrier_init`) publishes them to the peers,
/// and one at the end keeps every block alive until the last multicast
/// into it and the last remote arrival on it.
#[kernel(launch_bounds(160, 1))]
pub fn cluster_multicast_matvec_f32(
    a_map: DeviceSlice<u64>,
    x: DeviceSlice<f32>,
    y: DeviceSliceMut<f32>,
    m: u32,
    k: u32,
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
            // All `c` slices land here: the whole tile.
            full(s).arrive_expect_tx(MC_TILE_BYTES as u32);
            let at = base + (s * MC_TILE_BYTES + rank as usize * slice_bytes) as u32;
            let y0 = row0 + rank as usize * slice_rows;
            tma_load_2d_multicast(at, a_map, (it * MC_TILE) as i32, y0 as i32, full(s), all);
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
            for p in 0..c {
                empty(s).arrive_remote(p);
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
