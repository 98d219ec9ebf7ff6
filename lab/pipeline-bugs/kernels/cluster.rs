//! The cluster planted bugs (sm_90, built into the sm_90a module): the
//! cluster sum of [`crate::cluster`] (each block sums its slice into its
//! own shared memory; block 0 of the cluster gathers the block sums over
//! distributed shared memory) with one of the two classic mistakes of
//! DSMEM code. Same launch and result as `cluster_sum_f32`.

use crate::cluster::{CLUSTER_SUM_ITEMS, CLUSTER_SUM_PER_BLOCK, CLUSTER_SUM_THREADS};
use ptxlab_device::cluster;
use ptxlab_device::prelude::*;

/// The mistakes of [`gather_sum`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Gather {
    /// Both cluster barriers.
    Correct,
    /// Block 0 reads its peers' sums before the first `cluster::sync()`.
    ReadBeforeSync,
    /// No `cluster::sync()` after the gather.
    ExitWhileRead,
}

/// The cluster sum (`cluster_sum_f32`), making mistake `g`.
#[inline(always)]
fn gather_sum(x: DeviceSlice<f32>, mut out: DeviceSliceMut<f32>, n: u32, g: Gather) {
    const T: usize = CLUSTER_SUM_THREADS as usize;
    let n = n as usize;
    let t = thread::thread_idx_x() as usize;
    let b = thread::block_idx_x() as usize;
    let mut partial = shared::dynamic_shared::<f32>(0, T);
    let base = b * CLUSTER_SUM_PER_BLOCK;
    let mut s = 0.0f32;
    for j in 0..CLUSTER_SUM_ITEMS {
        let i = base + t + j * T;
        if i < n {
            s += x[i];
        }
    }
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
    if g != Gather::ReadBeforeSync {
        cluster::sync();
    }
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
    if g == Gather::ReadBeforeSync {
        cluster::sync();
    }
    if g != Gather::ExitWhileRead {
        cluster::sync();
    }
}

/// `cluster_sum_f32`; with `bug != 0` block 0 reads its peers' sums
/// *before* the first `cluster::sync()`: nothing orders the read after the
/// peer's write of its sum (a block barrier orders one block only), so it
/// may read the poison or a partial sum. The simulator reports a data
/// race in distributed shared memory naming the remote read and the
/// peer's write.
#[kernel(launch_bounds(256))]
pub fn cluster_remote_read_before_sync(
    x: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    n: u32,
    bug: u32,
) {
    let g = if bug != 0 {
        Gather::ReadBeforeSync
    } else {
        Gather::Correct
    };
    gather_sum(x, out, n, g);
}

/// `cluster_sum_f32`; with `bug != 0` the kernel ends without the second
/// `cluster::sync()`: a peer block exits (and its shared memory is
/// released) while block 0 may still read it. The simulator reports the
/// read of an exited block's shared memory, naming it and the last
/// cluster barrier the exited block passed.
#[kernel(launch_bounds(256))]
pub fn cluster_exit_while_read(x: DeviceSlice<f32>, out: DeviceSliceMut<f32>, n: u32, bug: u32) {
    let g = if bug != 0 {
        Gather::ExitWhileRead
    } else {
        Gather::Correct
    };
    gather_sum(x, out, n, g);
}
