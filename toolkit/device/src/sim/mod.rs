//! The CPU simulator: runs any `#[kernel]` on the host from the same source,
//! and reports out-of-bounds accesses, divergent barriers, data races and
//! misused asynchronous operations (`cp.async`, TMA, mbarriers, `wgmma`).
//!
//! # Model
//! * The threads of a block are cooperative coroutines (stackful, each with
//!   its own stack) on one OS thread. A thread runs until it has to wait: at
//!   [`sync_threads`](crate::thread::sync_threads), in a warp collective
//!   (shuffle, vote: [`warp_exchange`]) or at a [`yield_point`]; then
//!   another thread of the block runs. A kernel with no barrier and no warp
//!   collective runs each thread to completion, one after the other, with no
//!   switch at all. Blocks are handed out in index order to as many OS
//!   threads as rayon has (one per core), one block at a time each.
//! * [`sync_threads`](crate::thread::sync_threads) is a barrier for the
//!   block. If some threads wait at it while the others have exited, or
//!   threads wait at two different call sites, the launch stops with a
//!   *divergent barrier* error; if every thread waits for another one that
//!   waits too (a warp collective that a thread blocked at a barrier should
//!   join, an mbarrier phase that never completes), with a *deadlock*
//!   error, instead of hanging.
//! * Dynamic shared memory is one buffer per block, of the size the launch
//!   asked for, filled with `0xFF` bytes (NaN for floats) so a read of a slot
//!   nobody wrote shows up in the result.
//! * Warp functions meet in a per-warp rendezvous: each lane named in the
//!   mask deposits its value and waits for the others, following CUDA's
//!   rules for partial warps and masks.
//! * Memory accesses are relaxed atomics of the element's bits ([`mem`]),
//!   and atomics are `std` atomics, so an atomic counter over many blocks is
//!   exact and a racy kernel gives a wrong (schedule-dependent) answer, never
//!   undefined behaviour on the host. A failed compare-and-swap is a
//!   scheduling point (a spin lock lets its holder run).
//! * Every access through [`DeviceSlice`](crate::DeviceSlice),
//!   [`DeviceSliceMut`](crate::DeviceSliceMut) and
//!   [`SharedSlice`](crate::SharedSlice) is bounds-checked, unchecked ones
//!   included; a failure names the kernel, block, thread, index and the line
//!   of kernel source.
//!
//! * A launch with thread-block clusters ([`launch_cluster`]) runs the
//!   blocks of each cluster together on one OS thread, so they can read
//!   and write each other's shared memory (distributed shared memory) and
//!   meet at the cluster barrier ([`cluster`] holds the model).
//!
//! # Race detection
//! On by default ([`SimOptions`]; `PTXLAB_SIM_RACECHECK=0` or
//! [`set_race_check`] turns it off). Between two barriers, a shared-memory
//! word written by one thread and read or written by another is a race,
//! unless a warp collective both threads took part in orders the two
//! accesses; in global memory, a word written by one block and read or
//! written by another block of the same launch is a race. Atomics never
//! count. The report ([`Fault::Race`]) names both threads, both source lines
//! and the interval. It costs time (about half the speed on kernels that
//! are mostly memory accesses; `ptxlab sim-bench` measures it) and a shadow
//! record per touched word (32 bytes per 4-byte global word, freed after the
//! launch). The detector sees the accesses of the kernel views, not those of
//! the raw accessors in [`mem`].
//!
//! # Asynchronous operations
//! `cp.async`, TMA loads and stores, mbarriers and `wgmma` run
//! asynchronously, as the PTX ISA defines them; each is in flight from its
//! issue until the wait that completes it (`asyncs` holds the model):
//! * a `cp.async` copy until a `wait_async_copies` of its thread covers
//!   its group: any access to its destination before is an error, as is
//!   another copy into it or a write of its source by its thread; its
//!   landing is its thread's write for the race detector, at that wait;
//! * a TMA load until it lands and its bytes complete its mbarrier's
//!   phase: only a thread that has seen that phase complete (or a block
//!   barrier after one that did) may touch the destination;
//! * an mbarrier is a record with its phase count: wrong parities,
//!   arrival or byte counts that never complete a phase, uninitialised or
//!   unfenced barriers are reported (a wait that can never end is a
//!   deadlock, not a hang);
//! * a `wgmma` until a `wgmma_wait_group` covers its group: its operand
//!   tiles must not be written before, its accumulators hold poison until
//!   then (storing one is an error naming the `wgmma`), and what it reads
//!   must have been delivered (a TMA phase seen, ordinary stores fenced
//!   with `fence.proxy.async`); a TMA store's source likewise.
//!
//! The report ([`Fault::Async`]) names the operation (its thread, line and
//! group) and the access that found it. A block that issues no
//! asynchronous operation pays one flag test per shared-memory access.
//!
//! # Schedules
//! [`Schedule::InOrder`] (the default) runs threads in index order and
//! lands every copy at its issue. [`Schedule::Random`] (`--sim-schedule
//! random --sim-seed N`, `PTXLAB_SIM_SCHEDULE=random PTXLAB_SIM_SEED=N`)
//! starts the warps in a random order, interrupts threads at random points
//! and lands each copy at a random point of its window, reproducibly from
//! the seed; `ptxlab sim-fuzz` runs a command under many seeds and reports
//! the first error or change in what it reads back ([`record_download`]).
//!
//! # Debugging a kernel with it
//! Launch it through the host's `Device::sim()` (or [`launch`] directly) on a
//! small problem: [`println!`](crate::println) prints the same lines here
//! and on a GPU, a debugger can break in the kernel's source, and an
//! out-of-bounds index, a divergent barrier, a race or a misused
//! asynchronous operation comes back as a [`SimError`] instead of a
//! corrupted result.

mod access;
mod asyncs;
mod barrier;
mod block;
pub mod cluster;
#[cfg(test)]
mod cluster_tests;
mod collective;
mod coro;
mod error;
mod launch;
pub mod mem;
mod race;
mod record;
mod sched;
mod spec;
#[cfg(all(test, target_os = "linux"))]
mod stack_tests;
mod state;
mod warp;

pub(crate) use access::{global_access, global_store, remote_access, shared_access};
pub(crate) use asyncs::{
    copy as async_copy, mbar as async_mbar, proxy_fence, tma as async_tma, wgmma as async_wgmma,
};
pub use block::{
    ThreadCtx, check_align, fail, shared_available, shared_base, with_thread, yield_point,
};
pub use collective::{sync_threads, warp_ballot, warp_exchange, warp_shuffle};
pub use error::{AsyncHazard, Fault, Race, RaceAccess, SimError};
pub use launch::{check_cluster, launch, launch_cluster, launch_with, launched_kernels};
pub use record::{Download, read_record, record_download, recording};
pub use spec::{
    LaunchSpec, MAX_SHARED_BYTES, MAX_THREADS_PER_BLOCK, Schedule, SimOptions, race_check_default,
    schedule_default, set_race_check, set_schedule,
};
