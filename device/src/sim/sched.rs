//! One block on one OS thread: its simulated threads as cooperative
//! coroutines ([`Fiber`]s), the run queue that switches between them, and
//! the per-thread context device functions read ([`ThreadCtx`]).
//!
//! A fiber runs threads one after the other (thread `r`, then the next one
//! not yet started, ...) until one of them has to wait: at a barrier, in a
//! warp collective or at a [`yield_point`]. The scheduler then starts a new
//! fiber for the next thread, or resumes a fiber that became ready. A kernel
//! that never waits therefore runs its whole block on one fiber, one thread
//! after the other, with no switch at all. The order is: ready fibers first
//! (in the order they became ready), then threads not yet started, then
//! fibers that yielded. When nothing can run but some threads still wait,
//! every thread waits for another one that waits too: a deadlock, reported
//! as [`Fault::Deadlock`] instead of a hang.

use super::barrier::BarrierState;
use super::coro::{Fiber, Suspender};
use super::error::{Fault, SimError};
use super::race::global::GlobalCache;
use super::race::shared::SharedRace;
use super::spec::LaunchState;
use super::warp::WarpState;
use crate::dim3::Dim3;
use core::cell::{Cell, RefCell};
use std::boxed::Box;
use std::collections::VecDeque;
use std::format;
use std::panic::{AssertUnwindSafe, Location};
use std::string::{String, ToString};
use std::vec::Vec;

/// Per-thread view of the launch, reachable from device functions.
#[derive(Debug)]
pub struct ThreadCtx {
    /// `threadIdx`.
    pub thread_idx: Dim3,
    /// `blockIdx`.
    pub block_idx: Dim3,
    /// `blockDim`.
    pub block_dim: Dim3,
    /// `gridDim`.
    pub grid_dim: Dim3,
    /// Lanes that exist in this thread's warp (partial last warp: fewer bits).
    pub warp_present: u32,
    /// Linear index of the thread in its block (`x` fastest).
    pub(crate) rank: u32,
    /// The fiber running this thread.
    fiber: u32,
    suspender: Suspender,
    block: *const Block<'static>,
}

impl ThreadCtx {
    /// The fiber running this thread (to wake it later).
    pub(crate) fn fiber_id(&self) -> u32 {
        self.fiber
    }
}

impl core::fmt::Debug for Suspender {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Suspender")
    }
}

std::thread_local! {
    static CURRENT: Cell<*const ThreadCtx> = const { Cell::new(core::ptr::null()) };
}

/// Calls `f` with the current simulated thread.
///
/// # Panics
/// When called outside a simulated launch (a device function used from plain
/// host code), with a message saying so.
pub fn with_thread<R>(f: impl FnOnce(&ThreadCtx) -> R) -> R {
    let p = CURRENT.with(|c| c.get());
    assert!(
        !p.is_null(),
        "a device function was called outside a kernel launch; launch the kernel through \
         the simulator (ptxlab_device::sim::launch or the host's Device::sim())"
    );
    // SAFETY: `CURRENT` is non-null only while a simulated thread runs (set
    // in `run_thread` and after every resume in `suspend`), and then points
    // to that thread's `ThreadCtx`, which lives on its fiber's stack until
    // the thread's kernel call has returned.
    f(unsafe { &*p })
}

/// `f(thread, block)` for the current thread, or `None` outside a launch.
#[inline]
pub(crate) fn try_with_block<R>(f: impl FnOnce(&ThreadCtx, &Block<'static>) -> R) -> Option<R> {
    let p = CURRENT.with(|c| c.get());
    if p.is_null() {
        return None;
    }
    // SAFETY: as in `with_thread`.
    let t = unsafe { &*p };
    // SAFETY: a thread's block outlives it (`run_block` drives every fiber
    // to completion before the `Block` is dropped).
    let b = unsafe { &*t.block };
    Some(f(t, b))
}

/// `f(thread, block)` for the current thread (panics outside a launch).
pub(crate) fn with_block<R>(f: impl FnOnce(&ThreadCtx, &Block<'static>) -> R) -> R {
    with_thread(|t| {
        // SAFETY: see `try_with_block`.
        f(t, unsafe { &*t.block })
    })
}

/// What a fiber is doing, for wake-ups and deadlock reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Running, ready, or yielded.
    Run,
    /// At the block barrier.
    Barrier,
    /// In a warp collective, called at this line.
    Warp(&'static Location<'static>),
}

#[derive(Clone, Copy)]
struct FiberInfo {
    rank: u32,
    wait: Wait,
}

/// The run queue of a block.
#[derive(Default)]
pub(crate) struct Sched {
    ready: VecDeque<u32>,
    yielded: VecDeque<u32>,
    fibers: Vec<FiberInfo>,
    next_rank: u32,
}

/// Payload used to unwind a simulated thread after a fault was recorded.
pub(crate) struct SimAbort;

pub(crate) fn unwind() -> ! {
    std::panic::resume_unwind(Box::new(SimAbort))
}

/// One block in flight: everything its threads share. It lives on the OS
/// thread that runs the block and is touched by no other.
pub(crate) struct Block<'l> {
    pub(crate) launch: &'l LaunchState<'l>,
    pub(crate) idx: Dim3,
    /// Linear index of the block in the grid.
    pub(crate) id: u64,
    /// Threads in the block.
    pub(crate) total: u32,
    /// Base of the block's dynamic shared memory.
    pub(crate) shared_base: *mut u8,
    aborted: Cell<bool>,
    sched: RefCell<Sched>,
    pub(crate) barrier: RefCell<BarrierState>,
    pub(crate) warps: Vec<RefCell<WarpState>>,
    /// Shared-memory race detection, when on.
    pub(crate) race: Option<SharedRace>,
    /// Shadow pages of global memory this block used last.
    pub(crate) gcache: GlobalCache,
    /// Buffers reused by the next block on this OS thread.
    shared_mem: Vec<u128>,
}

/// Buffers an OS thread keeps from one block to the next.
#[derive(Default)]
struct Scratch {
    shared: Vec<u128>,
    warps: Vec<RefCell<WarpState>>,
    race: Option<SharedRace>,
}

std::thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl<'l> Block<'l> {
    fn new(launch: &'l LaunchState<'l>, id: u64) -> Self {
        let spec = launch.spec;
        let g = spec.grid;
        let idx = Dim3::new(
            (id % g.x as u64) as u32,
            ((id / g.x as u64) % g.y as u64) as u32,
            (id / (g.x as u64 * g.y as u64)) as u32,
        );
        let total = spec.block.volume() as u32;
        let Scratch {
            shared: mut shared_mem,
            mut warps,
            race,
        } = SCRATCH.with(|s| core::mem::take(&mut *s.borrow_mut()));
        // Poison: 0xFF bytes read as NaN (f32/f64) or all-ones integers.
        shared_mem.clear();
        shared_mem.resize(spec.shared_bytes.div_ceil(16).max(1), u128::MAX);
        let nwarps = total.div_ceil(32) as usize;
        if warps.len() < nwarps {
            warps.resize_with(nwarps, || RefCell::new(WarpState::default()));
        }
        let race = launch.race_shared.then(|| {
            let mut r = race.unwrap_or_default();
            r.start_block(spec.shared_bytes);
            r
        });
        let tick = race.as_ref().map_or(0, |r| r.tick());
        for cell in warps.iter_mut().take(nwarps) {
            cell.get_mut().reset(tick);
        }
        let shared_base = shared_mem.as_mut_ptr() as *mut u8;
        Block {
            launch,
            idx,
            id,
            total,
            shared_base,
            aborted: Cell::new(false),
            sched: RefCell::new(Sched::default()),
            barrier: RefCell::new(BarrierState::default()),
            warps,
            race,
            gcache: GlobalCache::default(),
            shared_mem,
        }
    }

    /// Gives the buffers back for the next block on this OS thread.
    fn recycle(self) {
        let keep = Scratch {
            shared: self.shared_mem,
            warps: self.warps,
            race: self.race,
        };
        SCRATCH.with(|sc| {
            let mut sc = sc.borrow_mut();
            let race = keep.race.or(sc.race.take());
            *sc = Scratch { race, ..keep };
        });
    }

    /// `true` once this block or another block of the launch has failed.
    pub(crate) fn is_aborted(&self) -> bool {
        if self.aborted.get() {
            return true;
        }
        if self
            .launch
            .aborted
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            self.aborted.set(true);
            return true;
        }
        false
    }

    /// The thread index of linear thread `rank`.
    pub(crate) fn thread_of(&self, rank: u32) -> Dim3 {
        let b = self.launch.spec.block;
        Dim3::new(rank % b.x, (rank / b.x) % b.y, rank / (b.x * b.y))
    }

    /// Records `fault` for `thread` (the launch keeps the first) and stops
    /// the block; waiting threads unwind when next resumed.
    pub(crate) fn record(&self, thread: Dim3, fault: Fault, location: Option<String>) {
        self.launch.record(SimError {
            kernel: self.launch.spec.kernel.to_string(),
            block: self.idx,
            thread,
            fault,
            location,
        });
        self.aborted.set(true);
    }

    /// Makes fiber `f` ready to run.
    pub(crate) fn wake(&self, f: u32) {
        let mut s = self.sched.borrow_mut();
        s.fibers[f as usize].wait = Wait::Run;
        s.ready.push_back(f);
    }

    fn next_thread(&self) -> Option<u32> {
        if self.is_aborted() {
            return None;
        }
        let mut s = self.sched.borrow_mut();
        (s.next_rank < self.total).then(|| {
            s.next_rank += 1;
            s.next_rank - 1
        })
    }

    /// Describes who waits where, when no thread can run.
    fn deadlock_detail(&self) -> (u32, String) {
        let s = self.sched.borrow();
        let waiting: Vec<FiberInfo> = s
            .fibers
            .iter()
            .copied()
            .filter(|f| f.wait != Wait::Run)
            .collect();
        let at_barrier = waiting.iter().filter(|f| f.wait == Wait::Barrier).count();
        let mut parts = Vec::new();
        if at_barrier > 0 {
            let site = self.barrier.borrow().site;
            parts.push(format!(
                "{at_barrier} of {} threads wait at sync_threads at {}",
                self.total,
                site.map(|s| s.to_string()).unwrap_or_default()
            ));
        }
        for f in waiting.iter().filter(|f| f.wait != Wait::Barrier) {
            if let Wait::Warp(site) = f.wait {
                let w = self.warps[(f.rank / 32) as usize].borrow();
                parts.push(format!(
                    "thread {} waits in a warp function at {site} for lanes {:#010x} of warp {}",
                    self.thread_of(f.rank),
                    w.expected & !w.arrived,
                    f.rank / 32
                ));
                break;
            }
        }
        let first = waiting.first().map_or(0, |f| f.rank);
        (
            first,
            format!(
                "{}; no thread can go on (a barrier or warp function that some threads \
                 never reach)",
                parts.join("; ")
            ),
        )
    }
}

/// Suspends the current thread until another one wakes it (`wait` says why).
/// Unwinds instead of returning when the block has failed meanwhile.
pub(crate) fn suspend(t: &ThreadCtx, b: &Block<'_>, wait: Wait) {
    b.sched.borrow_mut().fibers[t.fiber as usize].wait = wait;
    t.suspender.suspend();
    CURRENT.with(|c| c.set(t));
    if b.is_aborted() {
        unwind()
    }
}

/// A scheduling point: lets the other simulated threads of the block run
/// before this one goes on. Device code that spins on a condition another
/// thread will make true (an `mbarrier` try-wait loop, a flag in shared or
/// global memory) calls it in every turn of the loop; a thread that spins
/// without it never lets the thread it waits for run. Outside a launch it
/// yields the OS thread.
pub fn yield_point() {
    let inside = try_with_block(|t, b| {
        if b.is_aborted() {
            unwind()
        }
        b.sched.borrow_mut().yielded.push_back(t.fiber);
        suspend(t, b, Wait::Run);
    });
    if inside.is_none() {
        std::thread::yield_now();
    }
}

/// Records `fault` for the current thread at `location`, stops the launch,
/// and unwinds the thread.
pub(crate) fn fail_at(fault: Fault, location: &Location<'_>) -> ! {
    if CURRENT.with(|c| c.get()).is_null() {
        panic!("{fault} (outside a simulated launch, at {location})");
    }
    with_block(|t, b| b.record(t.thread_idx, fault, Some(location.to_string())));
    unwind()
}

/// Records `fault` for the current thread, stops the launch, and unwinds the
/// thread. The location is the kernel source line that made the access.
#[track_caller]
pub fn fail(fault: Fault) -> ! {
    fail_at(fault, Location::caller())
}

/// Checks a wide access's alignment.
#[track_caller]
pub fn check_align(addr: usize, align: usize) {
    if !addr.is_multiple_of(align) {
        fail(Fault::Misaligned { addr, align })
    }
}

/// Base of the block's dynamic shared memory, after checking that `need` bytes
/// exist and `offset` is aligned to `align`.
#[track_caller]
pub fn shared_base(need: usize, offset: usize, align: usize) -> *mut u8 {
    let (base, available) = with_block(|_, b| (b.shared_base, b.launch.spec.shared_bytes));
    if need > available {
        fail(Fault::SharedTooSmall {
            needed: need,
            available,
        })
    }
    if !offset.is_multiple_of(align) {
        fail(Fault::Misaligned {
            addr: offset,
            align,
        })
    }
    base
}

/// Runs one thread of `b` on the current fiber, to its end.
fn run_thread(b: &Block<'_>, rank: u32, fiber: u32, suspender: Suspender) {
    let spec = b.launch.spec;
    let base = rank / 32 * 32;
    let in_warp = (b.total - base).min(32);
    let ctx = ThreadCtx {
        thread_idx: b.thread_of(rank),
        block_idx: b.idx,
        block_dim: spec.block,
        grid_dim: spec.grid,
        warp_present: if in_warp == 32 {
            u32::MAX
        } else {
            (1u32 << in_warp) - 1
        },
        rank,
        fiber,
        suspender,
        block: (b as *const Block<'_>).cast::<Block<'static>>(),
    };
    b.sched.borrow_mut().fibers[fiber as usize].rank = rank;
    CURRENT.with(|c| c.set(&ctx));
    let r = std::panic::catch_unwind(AssertUnwindSafe(|| (b.launch.kernel)()));
    CURRENT.with(|c| c.set(core::ptr::null()));
    match r {
        Ok(()) => thread_exited(b, &ctx),
        Err(p) if p.is::<SimAbort>() => {}
        Err(p) => {
            let message = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".into());
            b.record(ctx.thread_idx, Fault::Panic { message }, None);
        }
    }
}

/// Bookkeeping when a thread returns from the kernel: threads still waiting
/// for it at a barrier or in a warp function can no longer be released.
fn thread_exited(b: &Block<'_>, t: &ThreadCtx) {
    if let Some(detail) = b.barrier.borrow_mut().exit(b.total) {
        b.record(t.thread_idx, Fault::DivergentBarrier { detail }, None);
    }
    if let Some(detail) = b.warps[(t.rank / 32) as usize]
        .borrow_mut()
        .exit(t.rank % 32)
    {
        b.record(t.thread_idx, Fault::WarpMask { detail }, None);
    }
}

/// Runs block `id` of the launch on this OS thread.
pub(crate) fn run_block(launch: &LaunchState<'_>, id: u64) {
    let block = Block::new(launch, id);
    run_fibers(&block);
    block.recycle();
}

fn run_fibers(b: &Block<'_>) {
    // A fiber's body: threads one after the other until the block has none
    // left to start (or failed).
    let body = |fiber: u32, s: Suspender| {
        while let Some(rank) = b.next_thread() {
            run_thread(b, rank, fiber, s);
        }
    };
    let body = &body;
    let mut fibers: Vec<Option<Fiber<'_>>> = Vec::new();
    let mut live = 0usize;
    loop {
        let next = {
            let mut s = b.sched.borrow_mut();
            s.ready.pop_front()
        };
        let f = match next {
            Some(f) => f,
            None if b.sched.borrow().next_rank < b.total && !b.is_aborted() => {
                let id = fibers.len() as u32;
                match Fiber::new(move |s| body(id, s)) {
                    Ok(fiber) => {
                        fibers.push(Some(fiber));
                        b.sched.borrow_mut().fibers.push(FiberInfo {
                            rank: 0,
                            wait: Wait::Run,
                        });
                        live += 1;
                        id
                    }
                    Err(e) => {
                        b.record(
                            b.thread_of(b.sched.borrow().next_rank),
                            Fault::InvalidLaunch {
                                detail: format!("could not map a simulator stack: {e}"),
                            },
                            None,
                        );
                        continue;
                    }
                }
            }
            None => {
                let y = b.sched.borrow_mut().yielded.pop_front();
                match y {
                    Some(f) => f,
                    None if live == 0 => break,
                    None => {
                        if !b.is_aborted() {
                            let (rank, detail) = b.deadlock_detail();
                            b.record(b.thread_of(rank), Fault::Deadlock { detail }, None);
                        }
                        // Resume every waiting thread so that it unwinds.
                        let waiting: Vec<u32> = {
                            let s = b.sched.borrow();
                            (0..s.fibers.len() as u32)
                                .filter(|&i| {
                                    s.fibers[i as usize].wait != Wait::Run
                                        && fibers[i as usize].is_some()
                                })
                                .collect()
                        };
                        if waiting.is_empty() {
                            break;
                        }
                        for f in waiting {
                            b.wake(f);
                        }
                        continue;
                    }
                }
            }
        };
        if let Some(fiber) = fibers[f as usize].as_mut()
            && fiber.resume()
        {
            fibers[f as usize] = None;
            live -= 1;
        }
    }
}
