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

/// Stack of one fiber: room for kernel frames, a panic message being
/// formatted and a backtrace printed by the panic hook.
pub(crate) const STACK_BYTES: usize = 512 * 1024;

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
    _borrows: PhantomData<&'a ()>,
}

impl<'a> Fiber<'a> {
    /// A fiber that will run `body` (not started yet).
    pub(crate) fn new(body: impl FnOnce(Suspender) + 'a) -> std::io::Result<Self> {
        let stack = match POOL.with(|p| p.borrow_mut().pop()) {
            Some(s) => s,
            None => DefaultStack::new(STACK_BYTES)?,
        };
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
            _borrows: PhantomData,
        })
    }

    /// Runs the fiber until it suspends (`false`) or finishes (`true`); a
    /// finished fiber's stack goes back to the pool.
    pub(crate) fn resume(&mut self) -> bool {
        let Some(co) = self.co.as_mut() else {
            return true;
        };
        match co.resume(()) {
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
