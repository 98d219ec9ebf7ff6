//! The CPU simulator: runs any `#[kernel]` on the host from the same source.
//!
//! # Model
//! * Every GPU thread of a block is an OS thread, so the threads of a block
//!   really run concurrently and code that relies on [`sync_threads`] behaves
//!   as on the GPU. Blocks run in parallel on as many CPU cores as there are.
//! * [`sync_threads`](crate::thread::sync_threads) is a barrier for the block.
//!   If some threads wait at it while the others have exited, or threads wait
//!   at two different call sites, the launch stops with a *divergent barrier*
//!   error instead of hanging.
//! * Dynamic shared memory is one buffer per block, of the size the launch
//!   asked for, filled with `0xFF` bytes (NaN for floats) so a read of a slot
//!   nobody wrote shows up in the result.
//! * Warp functions exchange values through a per-warp rendezvous: each lane
//!   named in the mask deposits its value and waits for the others, following
//!   CUDA's rules for partial warps and masks.
//! * Memory accesses are relaxed atomics of the element's bits, and atomics are
//!   `std` atomics, so an atomic counter over many blocks is exact and a racy
//!   kernel gives a wrong (schedule-dependent) answer, never undefined
//!   behaviour on the host.
//! * Every access through [`DeviceSlice`](crate::DeviceSlice),
//!   [`DeviceSliceMut`](crate::DeviceSliceMut) and
//!   [`SharedSlice`](crate::SharedSlice) is bounds-checked, unchecked ones
//!   included; a failure names the kernel, block, thread, index and the line
//!   of kernel source.
//!
//! # Debugging a kernel with it
//! Launch it through the host's `Device::sim()` (or [`launch`] directly) on a
//! small problem: `println!` works inside a kernel on the host, a debugger can
//! break in the kernel's source, and an out-of-bounds index or a divergent
//! barrier comes back as a [`SimError`] instead of a corrupted result.

use crate::thread::Dim3;
use std::boxed::Box;
use std::cell::Cell;
use std::fmt;
use std::format;
use std::panic::{AssertUnwindSafe, Location};
use std::string::{String, ToString};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::vec::Vec;

/// Largest block the simulator accepts (the CUDA limit on every GPU since sm_20).
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;
/// Largest dynamic shared memory per block it accepts (Hopper's opt-in limit).
pub const MAX_SHARED_BYTES: usize = 227 * 1024;
const THREAD_STACK: usize = 512 * 1024;

/// One kernel launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchSpec {
    /// Kernel name, for messages.
    pub kernel: &'static str,
    /// Blocks in the grid.
    pub grid: Dim3,
    /// Threads in each block.
    pub block: Dim3,
    /// Dynamic shared memory per block, in bytes.
    pub shared_bytes: usize,
}

/// What went wrong inside a simulated kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// An index past the end of a buffer or shared-memory view.
    OutOfBounds {
        /// `"shared memory"`, `"device buffer (read)"`, ...
        space: &'static str,
        /// The index used.
        index: usize,
        /// The length of the view.
        len: usize,
    },
    /// A shared-memory view larger than the launch's dynamic shared memory.
    SharedTooSmall {
        /// Bytes the view needs (offset + length).
        needed: usize,
        /// Bytes the launch provided.
        available: usize,
    },
    /// A wide access at an address not aligned to its width.
    Misaligned {
        /// Address.
        addr: usize,
        /// Required alignment.
        align: usize,
    },
    /// A `sync_threads` not reached by every thread of the block.
    DivergentBarrier {
        /// Which threads arrived where.
        detail: String,
    },
    /// A warp function called with an inconsistent or invalid mask.
    WarpMask {
        /// What was wrong.
        detail: String,
    },
    /// The kernel called `trap`.
    Trap {
        /// Why.
        reason: String,
    },
    /// The kernel panicked (for example an arithmetic overflow in a debug build).
    Panic {
        /// The panic message.
        message: String,
    },
    /// The launch itself is invalid.
    InvalidLaunch {
        /// What is wrong and what is allowed.
        detail: String,
    },
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::OutOfBounds { space, index, len } => {
                write!(
                    f,
                    "out-of-bounds access to {space}: index {index}, length {len}"
                )
            }
            Fault::SharedTooSmall { needed, available } => write!(
                f,
                "shared-memory view needs {needed} bytes but the launch provides {available}; \
                 raise the launch's shared_bytes"
            ),
            Fault::Misaligned { addr, align } => {
                write!(
                    f,
                    "misaligned wide access at {addr:#x}: needs {align}-byte alignment"
                )
            }
            Fault::DivergentBarrier { detail } => write!(f, "divergent barrier: {detail}"),
            Fault::WarpMask { detail } => write!(f, "invalid warp operation: {detail}"),
            Fault::Trap { reason } => write!(f, "trap: {reason}"),
            Fault::Panic { message } => write!(f, "panic: {message}"),
            Fault::InvalidLaunch { detail } => write!(f, "invalid launch: {detail}"),
        }
    }
}

/// A failed simulated launch: the fault, and where it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimError {
    /// Kernel name.
    pub kernel: String,
    /// Block of the faulting thread.
    pub block: Dim3,
    /// Faulting thread within its block.
    pub thread: Dim3,
    /// What went wrong.
    pub fault: Fault,
    /// Source location in the kernel, when known.
    pub location: Option<String>,
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kernel `{}`, block {}, thread {}: {}",
            self.kernel, self.block, self.thread, self.fault
        )?;
        if let Some(l) = &self.location {
            write!(f, " (at {l})")?;
        }
        Ok(())
    }
}

impl std::error::Error for SimError {}

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
    rank: u32,
    block: *const BlockState<'static>,
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
    // SAFETY: `CURRENT` is set only for the lifetime of the thread's kernel
    // call in `run_block`, where the `ThreadCtx` lives on that thread's stack.
    f(unsafe { &*p })
}

fn with_block<R>(f: impl FnOnce(&ThreadCtx, &BlockState<'static>) -> R) -> R {
    // SAFETY: the block state outlives all of its threads (scoped threads).
    with_thread(|t| f(t, unsafe { &*t.block }))
}

/// Payload used to unwind a simulated thread after a fault was recorded.
struct SimAbort;

struct BarrierState {
    arrived: usize,
    exited: usize,
    generation: u64,
    site: Option<&'static Location<'static>>,
}

struct WarpInner {
    arrived: u32,
    expected: u32,
    values: [u64; 32],
    result: [u64; 32],
    readers_left: u32,
    distributing: bool,
    generation: u64,
    exited: u32,
}

struct WarpState {
    inner: Mutex<WarpInner>,
    cv: Condvar,
}

struct BlockState<'a> {
    spec: &'a LaunchSpec,
    block_idx: Dim3,
    total: usize,
    barrier: Mutex<BarrierState>,
    barrier_cv: Condvar,
    warps: Vec<WarpState>,
    shared: *mut u8,
    aborted: AtomicBool,
    launch: &'a LaunchState,
}

// SAFETY: the raw `shared` pointer is only dereferenced through relaxed atomics
// (`sim::mem`), and every other field is `Sync`.
unsafe impl Sync for BlockState<'_> {}

struct LaunchState {
    error: Mutex<Option<SimError>>,
    aborted: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl BlockState<'_> {
    fn record(&self, thread: Dim3, fault: Fault, location: Option<String>) {
        let mut e = lock(&self.launch.error);
        if e.is_none() {
            *e = Some(SimError {
                kernel: self.spec.kernel.to_string(),
                block: self.block_idx,
                thread,
                fault,
                location,
            });
        }
        drop(e);
        self.launch.aborted.store(true, Ordering::SeqCst);
        self.abort_block();
    }
    fn abort_block(&self) {
        self.aborted.store(true, Ordering::SeqCst);
        // Take and release each lock so a waiter is either already waiting
        // (and gets the notification) or will see the flag.
        drop(lock(&self.barrier));
        self.barrier_cv.notify_all();
        for w in &self.warps {
            drop(lock(&w.inner));
            w.cv.notify_all();
        }
    }
    fn is_aborted(&self) -> bool {
        self.aborted.load(Ordering::SeqCst)
    }
}

fn unwind() -> ! {
    std::panic::resume_unwind(Box::new(SimAbort))
}

/// Records `fault` for the current thread, stops the launch, and unwinds the
/// thread. The location is the kernel source line that made the access.
#[track_caller]
pub fn fail(fault: Fault) -> ! {
    let loc = Location::caller();
    if CURRENT.with(|c| c.get()).is_null() {
        panic!("{fault} (outside a simulated launch, at {loc})");
    }
    with_block(|t, b| b.record(t.thread_idx, fault, Some(loc.to_string())));
    unwind()
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
    let (base, available) = with_block(|_, b| (b.shared, b.spec.shared_bytes));
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

/// Block barrier with divergence detection (see the module docs).
pub fn sync_threads(site: &'static Location<'static>) {
    let outcome = with_block(|_, b| {
        let mut g = lock(&b.barrier);
        if b.is_aborted() {
            return Err(None);
        }
        match g.site {
            Some(s) if g.arrived > 0 && s != site => {
                return Err(Some(format!(
                    "threads of one block wait at sync_threads at {s} and at {site}; \
                     every thread must reach the same barrier"
                )));
            }
            _ => g.site = Some(site),
        }
        g.arrived += 1;
        if g.arrived + g.exited == b.total {
            if g.exited > 0 {
                return Err(Some(format!(
                    "{} of {} threads reached sync_threads at {site}, {} had already exited \
                     (a barrier inside a branch or after an early return)",
                    g.arrived, b.total, g.exited
                )));
            }
            g.arrived = 0;
            g.generation += 1;
            drop(g);
            b.barrier_cv.notify_all();
            return Ok(());
        }
        let gen_now = g.generation;
        while g.generation == gen_now && !b.is_aborted() {
            g = b.barrier_cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        if g.generation == gen_now {
            Err(None)
        } else {
            Ok(())
        }
    });
    match outcome {
        Ok(()) => {}
        Err(None) => unwind(),
        Err(Some(detail)) => {
            with_block(|t, b| {
                b.record(
                    t.thread_idx,
                    Fault::DivergentBarrier { detail },
                    Some(site.to_string()),
                )
            });
            unwind()
        }
    }
}

/// A scheduling point: lets the other simulated threads of the block run.
/// Device code that spins on a condition another thread will make true (an
/// `mbarrier` try-wait loop, a flag in shared or global memory) calls it in
/// every turn of the loop, so the simulator makes progress whatever its
/// scheduling model is.
pub fn yield_point() {
    std::thread::yield_now();
}

/// Warp rendezvous: every lane of `mask` deposits `value`; each gets all the
/// values and the set of lanes that took part (`mask` ∩ lanes that exist).
#[track_caller]
pub fn warp_exchange(mask: u32, value: u64) -> ([u64; 32], u32) {
    let site = Location::caller();
    let r = with_block(|t, b| {
        let lane = t.rank % 32;
        let bit = 1u32 << lane;
        if mask & bit == 0 {
            return Err(Some(format!(
                "lane {lane} called a warp function with mask {mask:#010x}, which does not \
                 include it"
            )));
        }
        let participants = mask & t.warp_present;
        let w = &b.warps[(t.rank / 32) as usize];
        let mut g = lock(&w.inner);
        while g.distributing && !b.is_aborted() {
            g = w.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        if b.is_aborted() {
            return Err(None);
        }
        if g.arrived == 0 {
            g.expected = participants;
        } else if g.expected != participants {
            return Err(Some(format!(
                "lanes of warp {} disagree on the mask: {:#010x} and {:#010x}",
                t.rank / 32,
                g.expected,
                participants
            )));
        }
        if participants & g.exited != 0 {
            return Err(Some(format!(
                "mask {mask:#010x} names lanes that have already exited ({:#010x})",
                participants & g.exited
            )));
        }
        g.values[lane as usize] = value;
        g.arrived |= bit;
        if g.arrived == g.expected {
            g.result = g.values;
            g.distributing = true;
            g.readers_left = g.expected.count_ones();
            g.generation += 1;
            w.cv.notify_all();
        } else {
            let gen_now = g.generation;
            while g.generation == gen_now && !b.is_aborted() {
                g = w.cv.wait(g).unwrap_or_else(|e| e.into_inner());
            }
            if g.generation == gen_now {
                return Err(None);
            }
        }
        let out = g.result;
        g.readers_left -= 1;
        if g.readers_left == 0 {
            g.distributing = false;
            g.arrived = 0;
            w.cv.notify_all();
        }
        Ok((out, participants))
    });
    match r {
        Ok(v) => v,
        Err(None) => unwind(),
        Err(Some(detail)) => {
            with_block(|t, b| {
                b.record(
                    t.thread_idx,
                    Fault::WarpMask { detail },
                    Some(site.to_string()),
                )
            });
            unwind()
        }
    }
}

fn thread_exited(b: &BlockState<'_>, t: &ThreadCtx) {
    {
        let mut g = lock(&b.barrier);
        g.exited += 1;
        if g.arrived > 0 && g.arrived + g.exited == b.total {
            let detail = format!(
                "{} of {} threads wait at sync_threads at {}, the others exited without reaching it",
                g.arrived,
                b.total,
                g.site.map(|s| s.to_string()).unwrap_or_default()
            );
            drop(g);
            b.record(t.thread_idx, Fault::DivergentBarrier { detail }, None);
        }
    }
    let w = &b.warps[(t.rank / 32) as usize];
    let bit = 1u32 << (t.rank % 32);
    let mut g = lock(&w.inner);
    g.exited |= bit;
    if g.arrived != 0 && g.expected & bit != 0 && g.arrived & bit == 0 {
        let detail = format!(
            "lane {} exited while lanes {:#010x} wait for it in a warp function",
            t.rank % 32,
            g.arrived
        );
        drop(g);
        b.record(t.thread_idx, Fault::WarpMask { detail }, None);
    }
}

fn validate(spec: &LaunchSpec) -> Result<(), String> {
    let b = spec.block;
    let g = spec.grid;
    if b.x == 0 || b.y == 0 || b.z == 0 || g.x == 0 || g.y == 0 || g.z == 0 {
        return Err(format!(
            "grid {g} and block {b} must have every dimension >= 1"
        ));
    }
    if b.volume() > MAX_THREADS_PER_BLOCK as u64 || b.z > 64 {
        return Err(format!(
            "block {b} has {} threads; at most {MAX_THREADS_PER_BLOCK} per block (z at most 64)",
            b.volume()
        ));
    }
    if g.y > 65535 || g.z > 65535 {
        return Err(format!("grid {g}: y and z are limited to 65535"));
    }
    if spec.shared_bytes > MAX_SHARED_BYTES {
        return Err(format!(
            "{} bytes of dynamic shared memory requested; at most {MAX_SHARED_BYTES} per block",
            spec.shared_bytes
        ));
    }
    Ok(())
}

static LAUNCHED: Mutex<std::collections::BTreeSet<&'static str>> =
    Mutex::new(std::collections::BTreeSet::new());

/// Names of every kernel launched on the simulator by this process so far
/// (the simulator coverage test compares it with `KERNELS`).
pub fn launched_kernels() -> Vec<&'static str> {
    lock(&LAUNCHED).iter().copied().collect()
}

/// Runs `kernel` (a closure calling the `#[kernel]` function with its
/// arguments) over the launch's grid, one OS thread per GPU thread.
pub fn launch<F: Fn() + Sync>(spec: &LaunchSpec, kernel: F) -> Result<(), SimError> {
    lock(&LAUNCHED).insert(spec.kernel);
    if let Err(detail) = validate(spec) {
        return Err(SimError {
            kernel: spec.kernel.to_string(),
            block: Dim3::default(),
            thread: Dim3::default(),
            fault: Fault::InvalidLaunch { detail },
            location: None,
        });
    }
    let state = LaunchState {
        error: Mutex::new(None),
        aborted: AtomicBool::new(false),
    };
    let nblocks = spec.grid.volume();
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1) as u64;
    let workers = workers.min(nblocks).max(1);
    let next = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= nblocks || state.aborted.load(Ordering::SeqCst) {
                        break;
                    }
                    let g = spec.grid;
                    let bidx = Dim3::new(
                        (i % g.x as u64) as u32,
                        ((i / g.x as u64) % g.y as u64) as u32,
                        (i / (g.x as u64 * g.y as u64)) as u32,
                    );
                    run_block(spec, bidx, &kernel, &state);
                }
            });
        }
    });
    match state.error.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn run_block<F: Fn() + Sync>(spec: &LaunchSpec, block_idx: Dim3, kernel: &F, launch: &LaunchState) {
    let total = spec.block.volume() as usize;
    let nwarps = total.div_ceil(32);
    // Poison: 0xFF bytes read as NaN (f32/f64) or all-ones integers.
    let mut shared = std::vec![u128::MAX; spec.shared_bytes.div_ceil(16).max(1)];
    let warps = (0..nwarps)
        .map(|_| WarpState {
            inner: Mutex::new(WarpInner {
                arrived: 0,
                expected: 0,
                values: [0; 32],
                result: [0; 32],
                readers_left: 0,
                distributing: false,
                generation: 0,
                exited: 0,
            }),
            cv: Condvar::new(),
        })
        .collect();
    let block = BlockState {
        spec,
        block_idx,
        total,
        barrier: Mutex::new(BarrierState {
            arrived: 0,
            exited: 0,
            generation: 0,
            site: None,
        }),
        barrier_cv: Condvar::new(),
        warps,
        shared: shared.as_mut_ptr() as *mut u8,
        aborted: AtomicBool::new(false),
        launch,
    };
    let block_ref = &block;
    std::thread::scope(|s| {
        for rank in 0..total as u32 {
            let bd = spec.block;
            let thread_idx = Dim3::new(rank % bd.x, (rank / bd.x) % bd.y, rank / (bd.x * bd.y));
            let warp_base = rank / 32 * 32;
            let in_warp = (total as u32 - warp_base).min(32);
            let warp_present = if in_warp == 32 {
                u32::MAX
            } else {
                (1u32 << in_warp) - 1
            };
            let spawned = std::thread::Builder::new()
                .stack_size(THREAD_STACK)
                .spawn_scoped(s, move || {
                    let ctx = ThreadCtx {
                        thread_idx,
                        block_idx,
                        block_dim: spec.block,
                        grid_dim: spec.grid,
                        warp_present,
                        rank,
                        block: (block_ref as *const BlockState<'_>).cast::<BlockState<'static>>(),
                    };
                    CURRENT.with(|c| c.set(&ctx));
                    let r = std::panic::catch_unwind(AssertUnwindSafe(kernel));
                    CURRENT.with(|c| c.set(core::ptr::null()));
                    match r {
                        Ok(()) => thread_exited(block_ref, &ctx),
                        Err(p) if p.is::<SimAbort>() => {}
                        Err(p) => {
                            let message = p
                                .downcast_ref::<&str>()
                                .map(|s| s.to_string())
                                .or_else(|| p.downcast_ref::<String>().cloned())
                                .unwrap_or_else(|| "non-string panic payload".into());
                            block_ref.record(thread_idx, Fault::Panic { message }, None);
                        }
                    }
                });
            if let Err(e) = spawned {
                block_ref.record(
                    thread_idx,
                    Fault::InvalidLaunch {
                        detail: format!("could not start a simulator thread: {e}"),
                    },
                    None,
                );
                break;
            }
        }
    });
    drop(shared);
}

/// Memory accesses of the simulator: relaxed atomics of the element's bits.
pub mod mem {
    use core::mem::{MaybeUninit, align_of, size_of};
    use core::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering::Relaxed};

    macro_rules! chunked {
        ($p:expr, $t:ty, |$chunk:ident, $atomic:ident, $bits:ident, $off:ident| $body:block) => {{
            let size = size_of::<$t>();
            let align = align_of::<$t>();
            if size % 8 == 0 && align >= 8 {
                for $off in (0..size).step_by(8) {
                    type $atomic = AtomicU64;
                    type $bits = u64;
                    let $chunk = 8;
                    let _ = $chunk;
                    $body
                }
            } else if size % 4 == 0 && align >= 4 {
                for $off in (0..size).step_by(4) {
                    type $atomic = AtomicU32;
                    type $bits = u32;
                    let $chunk = 4;
                    let _ = $chunk;
                    $body
                }
            } else if size % 2 == 0 && align >= 2 {
                for $off in (0..size).step_by(2) {
                    type $atomic = AtomicU16;
                    type $bits = u16;
                    let $chunk = 2;
                    let _ = $chunk;
                    $body
                }
            } else {
                for $off in 0..size {
                    type $atomic = AtomicU8;
                    type $bits = u8;
                    let $chunk = 1;
                    let _ = $chunk;
                    $body
                }
            }
        }};
    }

    /// Reads `*p` as relaxed atomic loads of its bits.
    ///
    /// # Safety
    /// `p` valid for reads and aligned.
    pub unsafe fn read<T: Copy>(p: *const T) -> T {
        let mut out = MaybeUninit::<T>::uninit();
        let dst = out.as_mut_ptr() as *mut u8;
        let src = p as *const u8;
        chunked!(p, T, |chunk, A, B, off| {
            // SAFETY: `off` is inside `T`, aligned to the chunk width because
            // `T`'s alignment is at least that width; `p` is valid (caller).
            unsafe {
                let v = A::from_ptr(src.add(off) as *mut B).load(Relaxed);
                (dst.add(off) as *mut B).write(v);
            }
        });
        // SAFETY: every byte of `out` was written above.
        unsafe { out.assume_init() }
    }

    /// Writes `*p = v` as relaxed atomic stores of its bits.
    ///
    /// # Safety
    /// `p` valid for writes and aligned.
    pub unsafe fn write<T: Copy>(p: *mut T, v: T) {
        let src = &v as *const T as *const u8;
        let dst = p as *mut u8;
        chunked!(p, T, |chunk, A, B, off| {
            // SAFETY: as in `read`.
            unsafe {
                let bits = (src.add(off) as *const B).read();
                A::from_ptr(dst.add(off) as *mut B).store(bits, Relaxed);
            }
        });
    }
}
