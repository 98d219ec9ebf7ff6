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
//! as [`Fault::Deadlock`] instead of a hang (after landing any
//! asynchronous copy still pending, which might release them).
//!
//! The scheduler knows nothing of asynchronous operations or races: the
//! engines above it (the asynchronous engine, the race detector) keep
//! their per-block records in the [`Block`] as plain data
//! ([`state`](super::state)), and the few things the scheduler must ask
//! of them (land pending copies, a thread's exit, what a waiter waits for)
//! go through the [`Engines`] trait that the launch passes down.
//!
//! Under a random [`Schedule`](super::Schedule) the block's warps start in
//! a random order, the next fiber is a random ready one (or a new thread),
//! and threads are interrupted at random points; the random numbers come
//! from the seed and the block's index only, so a seed replays the same
//! schedule whatever the number of cores.

use super::barrier::BarrierState;
use super::cluster::Cluster;
use super::coro::{Fiber, Suspender};
use super::error::{Fault, SimError};
use super::spec::LaunchState;
use super::state::asyncs::AsyncState;
use super::state::global::GlobalCache;
use super::state::shared::SharedRace;
use super::warp::WarpState;
use crate::dim3::Dim3;
use core::cell::{Cell, RefCell};
use std::boxed::Box;
use std::collections::VecDeque;
use std::format;
use std::panic::{AssertUnwindSafe, Location};
use std::string::{String, ToString};
use std::sync::atomic::{AtomicU64, Ordering};
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
#[inline]
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
#[inline]
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
    /// Waiting at this line for the phase of parity `parity` of the
    /// mbarrier at shared byte `addr`.
    Mbar {
        site: &'static Location<'static>,
        addr: u32,
        parity: u32,
    },
    /// In `wgmma_wait_group` at this line, for the other threads of the
    /// warpgroup to issue its `wgmma` instruction `n`.
    Wgmma {
        site: &'static Location<'static>,
        n: u64,
    },
    /// At the cluster barrier (`barrier.cluster.wait`) at this line, for
    /// the threads of the cluster that have not arrived yet.
    Cluster(&'static Location<'static>),
    /// No thread: the block had none left to start.
    Idle,
}

impl Wait {
    /// Waiting for other threads of the block.
    fn is_blocked(self) -> bool {
        matches!(
            self,
            Wait::Barrier
                | Wait::Warp(_)
                | Wait::Mbar { .. }
                | Wait::Wgmma { .. }
                | Wait::Cluster(_)
        )
    }
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

/// What the scheduler asks of the engines above it (the asynchronous
/// operations' engine): implemented there and passed down by the launch,
/// so that the scheduler imports none of them.
pub(crate) trait Engines: Sync {
    /// Thread `rank` of `b` returned from the kernel (only called once the
    /// block has issued an asynchronous operation): its operations still
    /// in flight complete, or their misuse is the returned fault.
    fn thread_exit(&self, b: &Block<'_>, rank: u32) -> Option<Fault>;
    /// Lands the deferred asynchronous operations that are due (all of
    /// them with `all`); whether any landed.
    fn land_due(&self, b: &Block<'_>, all: bool) -> bool;
    /// Whether every thread of `ranks` (the ones that yielded) spins on an
    /// mbarrier that nothing can complete any more.
    fn all_spinning(&self, b: &Block<'_>, ranks: &[u32]) -> bool;
    /// The report of spinning threads that can never go on: the thread to
    /// name and the detail.
    fn spin_detail(&self, b: &Block<'_>) -> (u32, String);
    /// What thread `rank`, blocked with `wait` (an mbarrier or `wgmma`
    /// wait), waits for, for a deadlock report.
    fn wait_note(&self, b: &Block<'_>, rank: u32, wait: Wait) -> String;
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
    /// The engines above the scheduler.
    engines: &'l dyn Engines,
    pub(crate) idx: Dim3,
    /// Linear index of the block in the grid.
    pub(crate) id: u64,
    /// The cluster the block belongs to (a 1x1x1 one without clusters).
    cluster: *const Cluster,
    /// The block's rank in its cluster (`%cluster_ctarank`).
    pub(crate) crank: u32,
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
    /// Asynchronous operations (the `asyncs` engine's), valid once
    /// `async_on`.
    pub(crate) asyncs: RefCell<AsyncState>,
    /// The block has issued an asynchronous operation.
    pub(crate) async_on: Cell<bool>,
    /// A random schedule's generator state (`None`: in order).
    rng: Option<Cell<u64>>,
    /// The order in which threads start (a random schedule's warp order).
    order: Vec<u32>,
    /// Buffers reused by the next block on this OS thread.
    shared_mem: Vec<u128>,
}

/// Buffers an OS thread keeps from one block to the next.
#[derive(Default)]
struct Scratch {
    shared: Vec<u128>,
    warps: Vec<RefCell<WarpState>>,
    race: Option<SharedRace>,
    asyncs: AsyncState,
    order: Vec<u32>,
}

/// SplitMix64: the random schedule's generator.
fn splitmix(state: u64) -> (u64, u64) {
    let s = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (s, z ^ (z >> 31))
}

std::thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl<'l> Block<'l> {
    fn new(
        launch: &'l LaunchState<'l>,
        engines: &'l dyn Engines,
        cluster: &Cluster,
        crank: u32,
    ) -> Self {
        let spec = launch.spec;
        let g = spec.grid;
        let idx = cluster.block_idx(crank);
        let id = idx.x as u64 + g.x as u64 * (idx.y as u64 + g.y as u64 * idx.z as u64);
        let total = spec.block.volume() as u32;
        let Scratch {
            shared: mut shared_mem,
            mut warps,
            race,
            asyncs,
            mut order,
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
            r.start_block(spec.shared_bytes, total as usize);
            r
        });
        let tick = race.as_ref().map_or(0, |r| r.tick());
        for cell in warps.iter_mut().take(nwarps) {
            cell.get_mut().reset(tick);
        }
        let shared_base = shared_mem.as_mut_ptr() as *mut u8;
        let rng = launch.seed.map(|seed| {
            let (s, _) = splitmix(seed ^ id.wrapping_mul(0xA24B_AED4_963E_E407));
            Cell::new(s)
        });
        order.clear();
        if let Some(r) = &rng {
            // Warps in a random order, the lanes of each in order.
            let mut warps_order: Vec<u32> = (0..nwarps as u32).collect();
            for i in (1..warps_order.len()).rev() {
                let (s, v) = splitmix(r.get());
                r.set(s);
                warps_order.swap(i, (v % (i as u64 + 1)) as usize);
            }
            for w in warps_order {
                order.extend(w * 32..((w + 1) * 32).min(total));
            }
        }
        Block {
            launch,
            engines,
            idx,
            id,
            cluster,
            crank,
            total,
            shared_base,
            aborted: Cell::new(false),
            sched: RefCell::new(Sched::default()),
            barrier: RefCell::new(BarrierState::default()),
            warps,
            race,
            gcache: GlobalCache::default(),
            asyncs: RefCell::new(asyncs),
            async_on: Cell::new(false),
            rng,
            order,
            shared_mem,
        }
    }

    /// Gives the buffers back for the next block on this OS thread.
    fn recycle(self) {
        let keep = Scratch {
            shared: self.shared_mem,
            warps: self.warps,
            race: self.race,
            asyncs: self.asyncs.into_inner(),
            order: self.order,
        };
        SCRATCH.with(|sc| {
            let mut sc = sc.borrow_mut();
            let race = keep.race.or(sc.race.take());
            *sc = Scratch { race, ..keep };
        });
    }

    /// The block's cluster.
    pub(crate) fn cluster(&self) -> &Cluster {
        // SAFETY: the cluster outlives its blocks (`run_worker` builds it
        // before them and drops it after them).
        unsafe { &*self.cluster }
    }

    /// The thread rank that fiber `f` runs (for reports).
    pub(crate) fn fiber_rank(&self, f: u32) -> u32 {
        self.sched
            .borrow()
            .fibers
            .get(f as usize)
            .map_or(0, |i| i.rank)
    }

    /// The next random number of a random schedule (`None` in order).
    pub(crate) fn random(&self) -> Option<u64> {
        let r = self.rng.as_ref()?;
        let (s, v) = splitmix(r.get());
        r.set(s);
        Some(v)
    }

    /// Under a random schedule, whether a memory access interrupts its
    /// thread (one in 16).
    #[inline]
    pub(crate) fn preempts(&self) -> bool {
        self.rng.is_some() && self.random().is_some_and(|v| v % 16 == 0)
    }

    /// `true` once this block or another block of the launch has failed.
    pub(crate) fn is_aborted(&self) -> bool {
        if self.aborted.get() {
            return true;
        }
        if self.launch.aborted.load(Ordering::Relaxed) {
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
        // Only a blocked fiber is woken. After an abort (another block's
        // fault, a deadlock) an mbarrier's or wgmma group's waiter list can
        // still name a fiber that the abort already woke (queued, `Run`) or
        // unwound (`Idle`, no thread left): waking it again would queue it
        // twice and resume it past its thread's end. Before an abort every
        // waiter entry names a fiber blocked on that very object.
        if !s.fibers[f as usize].wait.is_blocked() {
            return;
        }
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
            match self.order.get(s.next_rank as usize - 1) {
                Some(&r) => r,
                None => s.next_rank - 1,
            }
        })
    }

    /// Describes who waits where, when no thread can run.
    fn deadlock_detail(&self) -> (u32, String) {
        let s = self.sched.borrow();
        let waiting: Vec<FiberInfo> = s
            .fibers
            .iter()
            .copied()
            .filter(|f| f.wait.is_blocked())
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
        // One note per barrier and parity waited on (at most three), the
        // ones that say what is wrong first.
        let mut notes: Vec<(bool, (u32, u32), String)> = Vec::new();
        for f in waiting.iter() {
            if let Wait::Mbar { addr, parity, .. } = f.wait
                && !notes.iter().any(|n| n.1 == (addr, parity))
            {
                let note = self.engines.wait_note(self, f.rank, f.wait);
                let telling = note.contains("parity is wrong")
                    || note.contains("missed phase")
                    || note.contains("its mask misses")
                    || note.contains("none from ranks");
                notes.push((telling, (addr, parity), note));
            }
        }
        notes.sort_by_key(|n| !n.0);
        parts.extend(notes.into_iter().take(3).map(|n| n.2));
        for f in waiting.iter() {
            if let Wait::Wgmma { .. } = f.wait {
                parts.push(self.engines.wait_note(self, f.rank, f.wait));
                break;
            }
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
        let why = if waiting.iter().any(|f| matches!(f.wait, Wait::Wgmma { .. })) {
            "no thread can go on (a wgmma that not every thread of its warpgroup issues)"
        } else if waiting.iter().any(|f| matches!(f.wait, Wait::Mbar { .. })) {
            "no thread can go on (an mbarrier phase that never completes: a wrong parity, \
             or fewer arrivals or transaction bytes than the phase expects)"
        } else {
            "no thread can go on (a barrier or warp function that some threads never reach)"
        };
        // The report's thread: the waiter of the first note.
        let first = waiting
            .iter()
            .find(|f| match f.wait {
                Wait::Mbar { site, .. } => parts.first().is_some_and(|p| {
                    p.contains(&std::format!("waits at {site}"))
                        && p.contains(&std::format!("thread {}", self.thread_of(f.rank)))
                }),
                _ => false,
            })
            .or_else(|| {
                waiting
                    .iter()
                    .find(|f| matches!(f.wait, Wait::Mbar { .. } | Wait::Wgmma { .. }))
            })
            .map_or(first, |f| f.rank);
        (first, format!("{}; {why}", parts.join("; ")))
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

/// Under a random schedule, sometimes (one time in two) lets other threads
/// of the block run first: called after asynchronous operations, so their
/// order against other warps varies. Does nothing in order.
pub(crate) fn maybe_preempt() {
    try_with_block(|t, b| {
        if b.random().is_some_and(|v| v % 2 == 0) {
            preempt(t, b)
        }
    });
}

/// Interrupts the current thread (a random schedule decided so at a memory
/// access): it becomes ready again, to run at a random turn.
pub(crate) fn maybe_preempt_access() {
    try_with_block(preempt);
}

fn preempt(t: &ThreadCtx, b: &Block<'_>) {
    if b.is_aborted() {
        unwind()
    }
    b.sched.borrow_mut().ready.push_back(t.fiber);
    suspend(t, b, Wait::Run);
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
    b.cluster().thread_exit(b, t.rank);
    if b.async_on.get()
        && let Some(fault) = b.engines.thread_exit(b, t.rank)
    {
        b.record(t.thread_idx, fault, None);
    }
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

/// One OS thread's share of a launch: the block it runs now. Its fibers go
/// from one block to the next: a fiber whose block has no thread left to
/// start waits, idle, for the next block (a block of 256 threads with a
/// barrier needs 256 fibers, and the next block reuses them).
struct Worker<'l> {
    block: Cell<*const Block<'l>>,
    /// No block left: idle fibers return.
    done: Cell<bool>,
}

/// Runs clusters of the launch on this OS thread (a launch without
/// clusters has 1x1x1 ones: single blocks), taking their indices from
/// `next` (in index order, shared with the other workers) until none is
/// left or the launch failed. The blocks of a cluster run together: each
/// runs until all its threads have exited or wait at the cluster barrier,
/// then the next, round after round (see [`super::cluster`]).
pub(crate) fn run_worker(launch: &LaunchState<'_>, engines: &dyn Engines, next: &AtomicU64) {
    let g = launch.spec.grid;
    let cd = launch.cluster;
    let cgrid = Dim3::new(g.x / cd.x, g.y / cd.y, g.z / cd.z);
    let nclusters = cgrid.volume();
    let threads = launch.spec.block.volume() as u32;
    let worker = Worker {
        block: Cell::new(core::ptr::null()),
        done: Cell::new(false),
    };
    let worker = &worker;
    // A fiber's body: threads of the current block one after the other; idle
    // when the block has none left to start, until the next block or the end.
    let body = move |fiber: u32, s: Suspender| {
        loop {
            if worker.done.get() {
                return;
            }
            // SAFETY: `block` points to the block `run_worker` is running: it
            // is set before any fiber is resumed for that block, and the
            // block lives until `run_fibers` has returned, after which no
            // fiber runs until the pointer is set to the next block (or
            // `done` is set).
            let b = unsafe { &*worker.block.get() };
            match b.next_thread() {
                Some(rank) => run_thread(b, rank, fiber, s),
                None => {
                    b.sched.borrow_mut().fibers[fiber as usize].wait = Wait::Idle;
                    s.suspend();
                }
            }
        }
    };
    let body = &body;
    let mut fibers: Vec<Fiber<'_>> = Vec::new();
    let mut idle: Vec<u32> = Vec::new();
    loop {
        let id = next.fetch_add(1, Ordering::Relaxed);
        if id >= nclusters || launch.aborted.load(Ordering::Relaxed) {
            break;
        }
        let cidx = Dim3::new(
            (id % cgrid.x as u64) as u32,
            ((id / cgrid.x as u64) % cgrid.y as u64) as u32,
            (id / (cgrid.x as u64 * cgrid.y as u64)) as u32,
        );
        let cluster = Cluster::new(cd, cidx, threads, launch.race_shared);
        let blocks: Vec<Block<'_>> = (0..cluster.size())
            .map(|r| Block::new(launch, engines, &cluster, r))
            .collect();
        for b in &blocks {
            cluster.set_block(b.crank, b);
        }
        let mut live = std::vec![0usize; blocks.len()];
        let mut done = std::vec![false; blocks.len()];
        loop {
            for (r, b) in blocks.iter().enumerate() {
                if done[r] {
                    continue;
                }
                b.sched.borrow_mut().fibers.resize(fibers.len(), IDLE);
                worker.block.set(b);
                if run_fibers(b, &mut fibers, &mut idle, body, &mut live[r]) {
                    // Copies nobody waited for still land (a TMA store's writes).
                    engines.land_due(b, true);
                    cluster.block_finished(b.crank);
                    done[r] = true;
                }
            }
            if done.iter().all(|&d| d) {
                break;
            }
            let mut ready = blocks.iter().zip(&done).any(|(b, &d)| !d && runnable(b));
            if !ready {
                // A peer's TMA multicast whose landing a random schedule
                // deferred may still release a block: land them all.
                for (b, &d) in blocks.iter().zip(&done) {
                    ready |= !d && engines.land_due(b, true);
                }
            }
            if !ready && !launch.aborted.load(Ordering::Relaxed) {
                // Every unfinished block waits: on an mbarrier that no
                // block can complete any more (its report says why), or at
                // the cluster barrier for threads that can never arrive.
                let on_mbar = blocks.iter().zip(&done).find(|(b, d)| {
                    !**d && (spins(b)
                        || b.sched
                            .borrow()
                            .fibers
                            .iter()
                            .any(|f| matches!(f.wait, Wait::Mbar { .. })))
                });
                match on_mbar {
                    Some((b, _)) => {
                        let (rank, detail) = if spins(b) {
                            b.engines.spin_detail(b)
                        } else {
                            b.deadlock_detail()
                        };
                        b.record(b.thread_of(rank), Fault::Deadlock { detail }, None);
                    }
                    None => {
                        let (r, t, detail) = cluster.deadlock_detail();
                        let b = &blocks[r as usize];
                        b.record(b.thread_of(t), Fault::Deadlock { detail }, None);
                    }
                }
            }
        }
        for b in blocks {
            b.recycle();
        }
    }
    worker.done.set(true);
    for f in &mut fibers {
        f.resume();
    }
}

/// Whether every yielded fiber of `b` spins on an mbarrier that nothing
/// has changed since (none yielded: `false`).
fn spins(b: &Block<'_>) -> bool {
    let ranks: Vec<u32> = {
        let s = b.sched.borrow();
        s.yielded
            .iter()
            .map(|&f| s.fibers[f as usize].rank)
            .collect()
    };
    !ranks.is_empty() && b.engines.all_spinning(b, &ranks)
}

/// Whether a fiber of `b` can run: one is ready, or one yielded that does
/// not spin in vain.
fn runnable(b: &Block<'_>) -> bool {
    let s = b.sched.borrow();
    if !s.ready.is_empty() {
        return true;
    }
    let yielded = !s.yielded.is_empty();
    drop(s);
    yielded && !spins(b)
}

/// Whether the waiting threads of `b` (none can run; `spinning`: the
/// yielded ones spin on mbarriers) may be released by another block of
/// its cluster: some wait at the cluster barrier, or, in a cluster of
/// several blocks, on an mbarrier.
fn waits_for_peers(b: &Block<'_>, spinning: bool) -> bool {
    let s = b.sched.borrow();
    if s.fibers.iter().any(|f| matches!(f.wait, Wait::Cluster(_))) {
        return true;
    }
    b.cluster().size() > 1
        && (spinning || s.fibers.iter().any(|f| matches!(f.wait, Wait::Mbar { .. })))
}

const IDLE: FiberInfo = FiberInfo {
    rank: 0,
    wait: Wait::Idle,
};

/// Runs the threads of `b` until all have exited (`true`) or every one
/// left waits at the cluster barrier (`false`: run the other blocks of the
/// cluster, then this one again). `live` counts the fibers holding a
/// thread of this block, from one call to the next.
fn run_fibers<'f>(
    b: &Block<'_>,
    fibers: &mut Vec<Fiber<'f>>,
    idle: &mut Vec<u32>,
    body: &'f (impl Fn(u32, Suspender) + 'f),
    live: &mut usize,
) -> bool {
    loop {
        if b.rng.is_some() {
            b.engines.land_due(b, false);
        }
        let unstarted = b.sched.borrow().next_rank < b.total && !b.is_aborted();
        let next = pick_ready(b, unstarted);
        let f = match next {
            Some(f) => f,
            None if unstarted => {
                if let Some(f) = idle.pop() {
                    b.sched.borrow_mut().fibers[f as usize].wait = Wait::Run;
                    *live += 1;
                    f
                } else {
                    let id = fibers.len() as u32;
                    match Fiber::new(move |s| body(id, s)) {
                        Ok(fiber) => {
                            fibers.push(fiber);
                            b.sched.borrow_mut().fibers.push(FiberInfo {
                                rank: 0,
                                wait: Wait::Run,
                            });
                            *live += 1;
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
            }
            None => {
                let spinning = {
                    let s = b.sched.borrow();
                    let ranks: Vec<u32> = s
                        .yielded
                        .iter()
                        .map(|&f| s.fibers[f as usize].rank)
                        .collect();
                    drop(s);
                    b.engines.all_spinning(b, &ranks)
                };
                let y = if spinning {
                    None
                } else {
                    let mut s = b.sched.borrow_mut();
                    match b.random() {
                        Some(r) if !s.yielded.is_empty() => {
                            let i = (r % s.yielded.len() as u64) as usize;
                            s.yielded.remove(i)
                        }
                        _ => s.yielded.pop_front(),
                    }
                };
                match y {
                    Some(f) => f,
                    None if *live == 0 => return true,
                    None => {
                        // Every thread waits: an asynchronous copy that has
                        // not landed yet may still release them.
                        if !b.is_aborted() && b.engines.land_due(b, true) {
                            continue;
                        }
                        // Threads at the cluster barrier wait for the other
                        // blocks of the cluster: run them first. So do
                        // threads on an mbarrier in a cluster of several
                        // blocks (a peer's TMA multicast or remote arrive
                        // may complete it); `run_worker` reports the
                        // deadlock when no block of the cluster can go on.
                        if !b.is_aborted() && waits_for_peers(b, spinning) {
                            return false;
                        }
                        if !b.is_aborted() {
                            let (rank, detail) = if spinning {
                                b.engines.spin_detail(b)
                            } else {
                                b.deadlock_detail()
                            };
                            b.record(b.thread_of(rank), Fault::Deadlock { detail }, None);
                        }
                        // Resume every waiting thread so that it unwinds.
                        let waiting: Vec<u32> = {
                            let s = b.sched.borrow();
                            (0..s.fibers.len() as u32)
                                .filter(|&i| s.fibers[i as usize].wait.is_blocked())
                                .collect()
                        };
                        let yielded: Vec<u32> = b.sched.borrow_mut().yielded.drain(..).collect();
                        if waiting.is_empty() && yielded.is_empty() {
                            return true;
                        }
                        for f in waiting {
                            b.wake(f);
                        }
                        // Yielded fibers are `Run` and in no queue.
                        b.sched.borrow_mut().ready.extend(yielded);
                        continue;
                    }
                }
            }
        };
        fibers[f as usize].resume();
        if b.sched.borrow().fibers[f as usize].wait == Wait::Idle {
            idle.push(f);
            *live -= 1;
        }
    }
}

/// The next ready fiber: the oldest in order; under a random schedule a
/// random one, or none (start a new thread) at random when threads are
/// left to start.
fn pick_ready(b: &Block<'_>, unstarted: bool) -> Option<u32> {
    let mut s = b.sched.borrow_mut();
    if s.ready.is_empty() {
        return None;
    }
    match b.random() {
        None => s.ready.pop_front(),
        Some(r) => {
            let n = s.ready.len() as u64 + unstarted as u64;
            let i = (r % n) as usize;
            if i < s.ready.len() {
                s.ready.remove(i)
            } else {
                None
            }
        }
    }
}
