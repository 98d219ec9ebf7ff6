//! The CPU simulator: runs any `#[kernel]` on the host from the same source,
//! and reports out-of-bounds accesses, divergent barriers and data races.
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
//!   join), with a *deadlock* error, instead of hanging.
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
//! # Debugging a kernel with it
//! Launch it through the host's `Device::sim()` (or [`launch`] directly) on a
//! small problem: `println!` works inside a kernel on the host, a debugger can
//! break in the kernel's source, and an out-of-bounds index, a divergent
//! barrier or a race comes back as a [`SimError`] instead of a corrupted
//! result.

mod asyncs;
mod barrier;
mod collective;
mod coro;
mod error;
mod launch;
pub mod mem;
mod race;
mod record;
mod sched;
mod spec;
mod warp;

pub(crate) use asyncs::{
    copy as async_copy, mbar as async_mbar, proxy_fence, tma as async_tma, wgmma as async_wgmma,
};
pub use collective::{sync_threads, warp_ballot, warp_exchange, warp_shuffle};
pub use error::{AsyncHazard, Fault, Race, RaceAccess, SimError};
pub use launch::{launch, launch_with, launched_kernels};
pub(crate) use race::{global_access, global_store, shared_access};
pub use record::{Download, read_record, record_download, recording};
pub use sched::{ThreadCtx, check_align, fail, shared_base, with_thread, yield_point};
pub use spec::{
    LaunchSpec, MAX_SHARED_BYTES, MAX_THREADS_PER_BLOCK, Schedule, SimOptions, race_check_default,
    schedule_default, set_race_check, set_schedule,
};
