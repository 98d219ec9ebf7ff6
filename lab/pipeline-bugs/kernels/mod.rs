//! Planted bugs of asynchronous pipelines: each kernel is a correct
//! pipeline of this project's kind (a `cp.async` ring, a TMA ring guarded
//! by mbarriers, a `wgmma` pipeline, a TMA store epilogue) that makes one
//! classic mistake when its last parameter `bug` is not 0, and runs the
//! correct pipeline when it is 0.
//!
//! They exist to show what catches each mistake: the simulator's
//! asynchronous checks (`ptxlab pipeline-bugs --backend sim` names the
//! kernel, block, thread and both source lines of every one of them),
//! compute-sanitizer on a GPU, or only a wrong result. Never launched
//! outside those checks; `docs/book/src/debugging.md` shows the
//! reports, and `docs/results/` the GPU table.
//!
//! | kernel | mistake (when `bug != 0`) |
//! |---|---|
//! | `pipe_missing_wait` | no `wait_async_copies` before the tile is read |
//! | `pipe_wait_too_shallow` | `wait_async_copies::<S - 1>` instead of `<S - 2>` |
//! | `pipe_stage_off_by_one` | the next tile is copied into stage `next + 1`: the stage being read |
//! | `pipe_missing_barrier` | no `sync_threads` between the wait and the reads of other threads' copies |
//! | `pipe_inplace_prefetch` | the result is written back in place while the next tile's halo copy may still read it (found only by a non-default schedule: `ptxlab sim-fuzz`) |
//! | `tma_wrong_parity` | consumers wait for the wrong mbarrier parity |
//! | `tma_expect_tx_partial` | `expect_tx` counts only the part of an edge box inside the matrix (TMA always delivers the whole box) |
//! | `tma_refill_early` | the producer refills a stage without waiting for its `empty` barrier |
//! | `wgmma_acc_early` | the accumulators are stored before `wgmma_wait_group::<0>` |
//! | `wgmma_operand_overwrite` | a stage is refilled while the `wgmma` reading it is still in flight |
//! | `tma_store_no_fence` | no `fence_proxy_async_shared` between ordinary stores and the TMA store that reads them |
//! | `cluster_remote_read_before_sync` | block 0 of a cluster reads its peers' shared memory (DSMEM) before the `cluster::sync()` that publishes their writes |
//! | `cluster_exit_while_read` | no `cluster::sync()` at the end: a block exits while block 0 still reads its shared memory |
//! | `multicast_mask_misses_peer` | each block's TMA multicast has a mask of its own rank only: the peers that wait for its slice never get it |
//! | `multicast_expect_tx_one_block` | `expect_tx` counts one block's slice, though the multicasts of every block land in it |
//! | `multicast_arrive_own_rank_only` | consumers release a stage on their own block's `empty` barrier only, not on the peers' whose multicasts refill it |
//!
//! The `cp.async` kernels are portable (sm_80); the others need sm_90a and
//! build into its module with [`hopper`](crate::hopper). Beside them,
//! `debug_println` shows `ptxlab_device::println!`, whose lines are the
//! same on the GPU and in the simulator.

#[cfg(not(all(target_arch = "nvptx64", feature = "sm90a")))]
mod print;
#[cfg(not(all(target_arch = "nvptx64", feature = "sm90a")))]
pub use print::*;

#[cfg(not(all(target_arch = "nvptx64", feature = "sm90a")))]
mod cp_async;
#[cfg(not(all(target_arch = "nvptx64", feature = "sm90a")))]
pub use cp_async::*;

#[cfg(any(not(target_arch = "nvptx64"), feature = "sm90a"))]
mod tma;
#[cfg(any(not(target_arch = "nvptx64"), feature = "sm90a"))]
pub use tma::*;

#[cfg(any(not(target_arch = "nvptx64"), feature = "sm90a"))]
mod cluster;
#[cfg(any(not(target_arch = "nvptx64"), feature = "sm90a"))]
pub use cluster::*;

#[cfg(any(not(target_arch = "nvptx64"), feature = "sm90a"))]
mod multicast;
#[cfg(any(not(target_arch = "nvptx64"), feature = "sm90a"))]
pub use multicast::*;
