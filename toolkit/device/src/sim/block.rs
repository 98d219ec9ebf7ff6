//! One block in flight and the thread running in it: the layer every
//! engine of the simulator stands on. It holds the [`Block`] (everything
//! the threads of a block share, with the engines' records as plain data
//! from [`state`](super::state)), the current thread's context
//! ([`ThreadCtx`], reached with [`with_thread`] and [`with_block`]), what
//! a blocked thread waits for ([`Wait`]) and the run-queue records, and
//! the few scheduling operations an engine needs: [`suspend`] a thread
//! until another wakes it ([`Block::wake`]), [`yield_point`], a
//! preemption under a random schedule, and [`fail`] (record a fault and
//! unwind the thread).
//!
//! The scheduler ([`sched`](super::sched)) drives the fibers above this
//! layer and the engines (`asyncs`, `race`, `cluster`, `collective`,
//! `access`) act on it from above; this file imports neither. The few
//! questions the scheduler must ask of the engines go through the
//! [`Engines`] trait, which the launch implements and passes down.

use super::barrier::BarrierState;
use super::coro::Suspender;
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
use std::panic::{AssertUnwindSafe, Location};
use std::string::{String, ToString};
use std::sync::atomic::Ordering;
use std::vec::Vec;

/// The cluster a block belongs to, as this layer's blocks see it.
pub(crate) type Cluster = super::state::cluster::Cluster<Block<'static>>;

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
    /// The context of thread `rank` of `b`, run by fiber `fiber`.
    pub(crate) fn new(b: &Block<'_>, rank: u32, fiber: u32, suspender: Suspender) -> Self {
        let spec = b.launch.spec;
        let base = rank / 32 * 32;
        let in_warp = (b.total - base).min(32);
        ThreadCtx {
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
        }
    }

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

/// Runs `kernel` as thread `ctx` (the current thread while it runs), to
/// its end or its unwinding: what `catch_unwind` returns.
pub(crate) fn run_as(ctx: &ThreadCtx, kernel: &dyn Fn()) -> std::thread::Result<()> {
    CURRENT.with(|c| c.set(ctx));
    let r = std::panic::catch_unwind(AssertUnwindSafe(kernel));
    CURRENT.with(|c| c.set(core::ptr::null()));
    r
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
    // in `run_as` and after every resume in `suspend`), and then points to
    // that thread's `ThreadCtx`, which lives on its fiber's stack until the
    // thread's kernel call has returned (`run_as` clears it then).
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
    // SAFETY: a thread's block outlives it (`run_worker` drives every fiber
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
    pub(crate) fn is_blocked(self) -> bool {
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

/// What a fiber of the block runs and does.
#[derive(Clone, Copy)]
pub(crate) struct FiberInfo {
    /// The thread rank it runs (or ran last).
    pub(crate) rank: u32,
    pub(crate) wait: Wait,
}

/// The run queue of a block: the scheduler ([`sched`](super::sched))
/// picks from it, the operations of this file fill it.
#[derive(Default)]
pub(crate) struct Sched {
    /// Fibers woken, in the order they became ready.
    pub(crate) ready: VecDeque<u32>,
    /// Fibers that yielded.
    pub(crate) yielded: VecDeque<u32>,
    /// Per fiber of the OS thread.
    pub(crate) fibers: Vec<FiberInfo>,
    /// Threads started so far.
    pub(crate) next_rank: u32,
}

/// What the scheduler asks of the engines above it (the cluster barrier
/// and the asynchronous operations' engine): implemented by the launch,
/// which passes it down, so that neither the scheduler nor this layer
/// imports an engine.
pub(crate) trait Engines: Sync {
    /// Thread `rank` of `b` returned from the kernel: it no longer counts
    /// at the cluster barrier, and its asynchronous operations still in
    /// flight complete, or their misuse is the returned fault.
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
    pub(crate) engines: &'l dyn Engines,
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
    /// The run queue.
    pub(crate) sched: RefCell<Sched>,
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
    /// The order in which threads start (a random schedule's warp order;
    /// empty: index order).
    pub(crate) order: Vec<u32>,
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
    /// Block `crank` of `cluster`, with buffers left by the block before
    /// it on this OS thread.
    pub(crate) fn new(
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
    pub(crate) fn recycle(self) {
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

    /// Whether the block runs under a random schedule.
    pub(crate) fn is_random(&self) -> bool {
        self.rng.is_some()
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

/// Bytes of dynamic shared memory the launch gave the block.
pub fn shared_available() -> usize {
    with_block(|_, b| b.launch.spec.shared_bytes)
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
