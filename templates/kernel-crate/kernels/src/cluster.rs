//! Thread-block clusters and distributed shared memory (DSMEM): the blocks
//! of a cluster run at the same time on neighbouring SMs, meet at a cluster
//! barrier, and read and write each other's shared memory.
//!
//! Clusters need sm_90 (H100, H200): these kernels build into the crate's
//! `sm_90` module only (the `sm90` feature on `nvptx64`; `build.rs` asks
//! for that module), and the CPU simulator runs them like any kernel,
//! checking every DSMEM access (a read the cluster barrier does not order
//! after the peer's write is a race; a read of a block that has exited is
//! an error).

use ptxlab_device::cluster;
use ptxlab_device::prelude::*;

/// Blocks per cluster of [`neighbour_sum`] (the host launches it with
/// `LaunchConfig::with_cluster(CLUSTER, 1, 1)`).
pub const CLUSTER: u32 = 2;

/// Threads per block of [`neighbour_sum`].
pub const CLUSTER_BLOCK: u32 = 128;

/// Dynamic shared memory of [`neighbour_sum`]: one f32 per thread.
pub const fn neighbour_sum_shared_bytes() -> usize {
    shared::shared_bytes::<f32>(0, CLUSTER_BLOCK as usize)
}

/// `out[i] = x[i] + x[j]`, where `j` is element `i`'s thread in the next
/// block of its cluster (block rank `r + 1`, wrapping around), read from
/// that block's shared memory; `x` is taken as 0 past its end.
///
/// Thread mapping: one element per thread, `i = blockIdx.x * blockDim.x +
/// threadIdx.x`; launch a whole number of clusters (the grid's blocks a
/// multiple of [`CLUSTER`]) with [`neighbour_sum_shared_bytes`] of dynamic
/// shared memory.
///
/// 1. Each thread stores its `x[i]` in its block's `tile[t]`.
/// 2. `cluster::sync()`: every block's tile is written and visible to the
///    whole cluster (a `sync_threads` orders the threads of one block only).
/// 3. Each thread reads `tile[t]` of the next block over DSMEM
///    (`tile.in_block(rank)`).
/// 4. `cluster::sync()` again: a block's shared memory goes away when it
///    exits, so no block may leave while its neighbour still reads it.
#[kernel(launch_bounds(128))]
pub fn neighbour_sum(x: DeviceSlice<f32>, mut out: DeviceSliceMut<f32>) {
    let t = thread::thread_idx_x() as usize;
    let i = thread::index_1d();
    let mut tile = shared::dynamic_shared::<f32>(0, CLUSTER_BLOCK as usize);
    let mine = if i < x.len() { x[i] } else { 0.0 };
    tile[t] = mine;
    cluster::sync();
    // The next block's rank, wrapping around (no `%`: no division).
    let r = cluster::block_rank() + 1;
    let next = if r == cluster::num_blocks() { 0 } else { r };
    let theirs = tile.in_block(next).get(t);
    if i < out.len() {
        out[i] = mine + theirs;
    }
    cluster::sync();
}
