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

use ptxlab_device::cluster;
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
