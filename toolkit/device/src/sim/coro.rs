//! Stackful coroutines for simulated threads: the only module of the
//! simulator that switches stacks, on top of `corosensei`.
//!
//! A [`Fiber`] runs a closure on a stack of its own; inside it, a
//! [`Suspender`] hands the CPU back to the scheduler, which later resumes
//! the fiber where it stopped. Stacks come from a per-OS-thread pool and go
//! back to it when a fiber finishes, so a launch of many blocks maps and
//! unmaps no memory after its first block. The scheduler always runs a
//! fiber to completion before the data the closure borrows goes away (a
//! fiber that is dropped early is unwound first), which is what makes the
//! borrowed closures sound.

use core::marker::PhantomData;
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::cell::RefCell;
use std::vec::Vec;

/// Default stack of one fiber, in KiB: room for kernel frames, a panic
/// message being formatted and a backtrace printed by the panic hook. A
/// generic kernel is compiled in the crate that instantiates it, at that
/// crate's optimisation level; without optimisation, every inlined call
/// keeps its own stack slots, and a kernel with many inlined FFT passes
/// needs a few hundred KiB of frame.
const DEFAULT_STACK_KIB: usize = 2048;

/// The variable that sets the fiber stack size, in KiB.
const STACK_VAR: &str = "PTXLAB_SIM_STACK_KIB";

/// Bytes of one fiber's stack: `PTXLAB_SIM_STACK_KIB` KiB (64 to 1048576),
/// else [`DEFAULT_STACK_KIB`]. Read once per process; a value out of range
/// or not a number is reported on stderr and the default used.
pub(crate) fn stack_bytes() -> usize {
    static BYTES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        let kib = match std::env::var(STACK_VAR) {
            Err(_) => DEFAULT_STACK_KIB,
            Ok(v) => match v.trim().parse::<usize>() {
                Ok(k) if (64..=1 << 20).contains(&k) => k,
                _ => {
                    std::eprintln!(
                        "warning: {STACK_VAR}={v:?} is not a size in KiB from 64 to 1048576; \
                         the simulator uses {DEFAULT_STACK_KIB} KiB per thread"
                    );
                    DEFAULT_STACK_KIB
                }
            },
        };
        kib * 1024
    })
}

/// Most stacks an OS thread keeps for reuse (a block has at most 1024
/// threads, so at most 1024 fibers).
const POOL_MAX: usize = 1024;

std::thread_local! {
    static POOL: RefCell<Vec<DefaultStack>> = const { RefCell::new(Vec::new()) };
}

/// The handle a running fiber uses to give the CPU back to its scheduler.
/// It is only valid inside the fiber that received it.
#[derive(Clone, Copy)]
pub(crate) struct Suspender(*const Yielder<(), ()>);

impl Suspender {
    /// Switches back to the scheduler; returns when the fiber is resumed.
    pub(crate) fn suspend(self) {
        // SAFETY: a `Suspender` is made in `Fiber::new` from the yielder of
        // the fiber that runs the closure, which lives as long as that
        // fiber; the simulator only calls `suspend` on the current thread's
        // own suspender (`ThreadCtx::suspender`), that is, from inside the
        // fiber it belongs to, as `Yielder::suspend` requires.
        unsafe { (*self.0).suspend(()) }
    }
}

/// A coroutine whose closure may borrow data of lifetime `'a`.
pub(crate) struct Fiber<'a> {
    co: Option<Coroutine<(), (), (), DefaultStack>>,
    /// Address range of the stack's guard page, for [`overflow`].
    guard: (usize, usize),
    _borrows: PhantomData<&'a ()>,
}

impl<'a> Fiber<'a> {
    /// A fiber that will run `body` (not started yet).
    pub(crate) fn new(body: impl FnOnce(Suspender) + 'a) -> std::io::Result<Self> {
        overflow::install();
        let stack = match POOL.with(|p| p.borrow_mut().pop()) {
            Some(s) => s,
            None => DefaultStack::new(stack_bytes())?,
        };
        // `DefaultStack` maps one guard page (no access) below the stack:
        // `limit` is its first byte.
        let low = corosensei::stack::Stack::limit(&stack).get();
        let guard = (low, low + page_bytes());
        // SAFETY: `with_stack_unchecked` needs everything `body` borrows to
        // stay valid until the coroutine completes or is dropped. `body` is
        // `'a`, and so is the `Fiber` that owns the coroutine: it cannot
        // outlive the borrows, and dropping it unwinds an unfinished
        // coroutine (corosensei's `Drop`), so the closure never runs after
        // `'a`. The fiber is never leaked (`mem::forget`) by this crate.
        let co = unsafe {
            Coroutine::with_stack_unchecked(stack, move |y: &Yielder<(), ()>, ()| {
                body(Suspender(y as *const _))
            })
        };
        Ok(Self {
            co: Some(co),
            guard,
            _borrows: PhantomData,
        })
    }

    /// Runs the fiber until it suspends (`false`) or finishes (`true`); a
    /// finished fiber's stack goes back to the pool.
    pub(crate) fn resume(&mut self) -> bool {
        let Some(co) = self.co.as_mut() else {
            return true;
        };
        let outer = overflow::enter(self.guard);
        let result = co.resume(());
        overflow::enter(outer);
        match result {
            CoroutineResult::Yield(()) => false,
            CoroutineResult::Return(()) => {
                if let Some(co) = self.co.take() {
                    let stack = co.into_stack();
                    POOL.with(|p| {
                        let mut p = p.borrow_mut();
                        if p.len() < POOL_MAX {
                            p.push(stack);
                        }
                    });
                }
                true
            }
        }
    }
}

/// Bytes of a memory page.
fn page_bytes() -> usize {
    #[cfg(unix)]
    {
        // SAFETY: `sysconf` reads a configuration value; no memory is passed.
        let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(n).unwrap_or(4096).max(4096)
    }
    #[cfg(not(unix))]
    {
        4096
    }
}

/// Stack overflow of a fiber, reported: a `SIGSEGV`/`SIGBUS` handler that
/// recognises a fault in the guard page of the fiber running on the
/// faulting OS thread, prints what happened and how to raise the stack,
/// and aborts. Any other fault goes on to the handler installed before
/// (Rust's own, which reports overflows of OS thread stacks), or to the
/// default action. The handler runs on the OS thread's alternate signal
/// stack, which Rust sets up for every thread it spawns (the simulator's
/// rayon workers).
#[cfg(target_os = "linux")]
mod overflow {
    use core::cell::Cell;
    use core::ffi::{c_int, c_void};
    use std::sync::OnceLock;

    std::thread_local! {
        /// Guard page of the fiber running on this OS thread, `(0, 0)` when none.
        static GUARD: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
    }

    /// The signals a guard-page access raises.
    const SIGNALS: [c_int; 2] = [libc::SIGSEGV, libc::SIGBUS];

    /// The handlers that were installed before ours, and the message.
    struct Installed {
        previous: [libc::sigaction; 2],
        message: std::string::String,
    }

    static INSTALLED: OnceLock<Installed> = OnceLock::new();

    /// Installs the handler once per process.
    pub(super) fn install() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // What the handler reads is in place before it can run.
            INSTALLED.get_or_init(|| {
                let message = std::format!(
                    "\nptxlab simulator: a simulated GPU thread overflowed its stack \
                     ({} KiB). A kernel compiled without optimisation (a debug build of \
                     the crate that instantiates it) needs far more stack than an \
                     optimised one: build that crate with opt-level 1 or more, or raise \
                     {} (in KiB).\n",
                    super::stack_bytes() / 1024,
                    super::STACK_VAR
                );
                // SAFETY: an all-zero `sigaction` is a valid value of the C
                // struct (no handler, empty mask, no flags).
                let mut previous: [libc::sigaction; 2] = unsafe { core::mem::zeroed() };
                for (sig, prev) in SIGNALS.iter().zip(previous.iter_mut()) {
                    // SAFETY: `sigaction` with a null new action only reads
                    // the current one into `prev`, a valid, writable struct.
                    unsafe { libc::sigaction(*sig, core::ptr::null(), prev) };
                }
                Installed { previous, message }
            });
            for sig in SIGNALS {
                // SAFETY: as above, a zeroed `sigaction` is valid; `on_fault`
                // has the three-argument signature `SA_SIGINFO` requires and
                // only does async-signal-safe work (an atomic load of
                // `INSTALLED`, a thread-local `Cell` read, `write`, `abort`,
                // `sigaction`, or the previous handler).
                unsafe {
                    let mut act: libc::sigaction = core::mem::zeroed();
                    act.sa_sigaction = on_fault as *const () as usize;
                    act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                    libc::sigemptyset(&mut act.sa_mask);
                    libc::sigaction(sig, &act, core::ptr::null_mut());
                }
            }
        });
    }

    /// Marks `guard` as the guard page of the fiber about to run on this OS
    /// thread; returns the one marked before.
    pub(super) fn enter(guard: (usize, usize)) -> (usize, usize) {
        GUARD.with(|g| g.replace(guard))
    }

    extern "C" fn on_fault(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
        // SAFETY: the kernel passes a valid `siginfo_t` to an `SA_SIGINFO`
        // handler; `si_addr` is the faulting address for SIGSEGV and SIGBUS.
        let addr = unsafe { (*info).si_addr() } as usize;
        let (low, high) = GUARD.try_with(Cell::get).unwrap_or((0, 0));
        let installed = INSTALLED.get();
        if let Some(installed) = installed.filter(|_| low <= addr && addr < high) {
            let m = installed.message.as_bytes();
            // SAFETY: `write` of a live buffer to stderr and `abort` are
            // async-signal-safe.
            unsafe {
                libc::write(2, m.as_ptr().cast(), m.len());
                libc::abort();
            }
        }
        let i = usize::from(sig == libc::SIGBUS);
        let prev = installed.map(|s| &s.previous[i]);
        let handler = prev.map_or(libc::SIG_DFL, |p| p.sa_sigaction);
        let flags = prev.map_or(0, |p| p.sa_flags);
        if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
            // SAFETY: restores the default action; returning re-runs the
            // faulting instruction, which then ends the process as it would
            // have without this handler.
            unsafe {
                let mut act: libc::sigaction = core::mem::zeroed();
                act.sa_sigaction = libc::SIG_DFL;
                libc::sigemptyset(&mut act.sa_mask);
                libc::sigaction(sig, &act, core::ptr::null_mut());
            }
        } else if flags & libc::SA_SIGINFO != 0 {
            // SAFETY: a handler installed with `SA_SIGINFO` has this
            // three-argument signature; it gets the arguments we got.
            unsafe {
                let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                    core::mem::transmute(handler);
                f(sig, info, ctx);
            }
        } else {
            // SAFETY: a handler installed without `SA_SIGINFO` takes the
            // signal number only.
            unsafe {
                let f: extern "C" fn(c_int) = core::mem::transmute(handler);
                f(sig);
            }
        }
    }
}

/// Other systems: no handler (a fiber's overflow is the system's fault).
#[cfg(not(target_os = "linux"))]
mod overflow {
    pub(super) fn install() {}
    pub(super) fn enter(guard: (usize, usize)) -> (usize, usize) {
        guard
    }
}
