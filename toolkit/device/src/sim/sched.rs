//! The scheduler: runs the blocks of a cluster on one OS thread, the
//! threads of each block as cooperative coroutines ([`Fiber`]s), switching
//! between them when one has to wait.
//!
//! A fiber runs threads one after the other (thread `r`, then the next one
//! not yet started, ...) until one of them has to wait: at a barrier, in a
//! warp collective or at a [`yield_point`](super::block::yield_point). The
//! scheduler then starts a new fiber for the next thread, or resumes a
//! fiber that became ready. A kernel that never waits therefore runs its
//! whole block on one fiber, one thread after the other, with no switch at
//! all. The order is: ready fibers first (in the order they became ready),
//! then threads not yet started, then fibers that yielded. When nothing can
//! run but some threads still wait, every thread waits for another one that
//! waits too: a deadlock, reported as [`Fault::Deadlock`] instead of a hang
//! (after landing any asynchronous copy still pending, which might release
//! them).
//!
//! The scheduler stands on the block layer ([`block`](super::block): the
//! [`Block`], the current thread, the run queue that the waiting
//! operations fill) and knows nothing of asynchronous operations, races
//! or the cluster barrier: the few things it must ask of those engines
//! (land pending copies, a thread's exit, what a waiter waits for) go
//! through the [`Engines`] trait that the launch passes down. Nothing but
//! the launch imports this file.
//!
//! Under a random [`Schedule`](super::Schedule) the block's warps start in
//! a random order, the next fiber is a random ready one (or a new thread),
//! and threads are interrupted at random points; the random numbers come
//! from the seed and the block's index only, so a seed replays the same
//! schedule whatever the number of cores.

use super::block::{Block, Cluster, Engines, FiberInfo, SimAbort, ThreadCtx, Wait, run_as};
use super::coro::{Fiber, Suspender};
use super::error::Fault;
use super::spec::LaunchState;
use crate::dim3::Dim3;
use core::cell::Cell;
use std::format;
use std::string::{String, ToString};
use std::sync::atomic::{AtomicU64, Ordering};
use std::vec::Vec;

/// The next thread of `b` to start, if any is left (none once it failed).
fn next_thread(b: &Block<'_>) -> Option<u32> {
    if b.is_aborted() {
        return None;
    }
    let mut s = b.sched.borrow_mut();
    (s.next_rank < b.total).then(|| {
        s.next_rank += 1;
        match b.order.get(s.next_rank as usize - 1) {
            Some(&r) => r,
            None => s.next_rank - 1,
        }
    })
}

/// Describes who waits where in `b`, when no thread can run.
fn deadlock_detail(b: &Block<'_>) -> (u32, String) {
    let s = b.sched.borrow();
    let waiting: Vec<FiberInfo> = s
        .fibers
        .iter()
        .copied()
        .filter(|f| f.wait.is_blocked())
        .collect();
    let at_barrier = waiting.iter().filter(|f| f.wait == Wait::Barrier).count();
    let mut parts = Vec::new();
    if at_barrier > 0 {
        let site = b.barrier.borrow().site;
        parts.push(format!(
            "{at_barrier} of {} threads wait at sync_threads at {}",
            b.total,
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
            let note = b.engines.wait_note(b, f.rank, f.wait);
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
            parts.push(b.engines.wait_note(b, f.rank, f.wait));
            break;
        }
    }
    for f in waiting.iter().filter(|f| f.wait != Wait::Barrier) {
        if let Wait::Warp(site) = f.wait {
            let w = b.warps[(f.rank / 32) as usize].borrow();
            parts.push(format!(
                "thread {} waits in a warp function at {site} for lanes {:#010x} of warp {}",
                b.thread_of(f.rank),
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
                    && p.contains(&std::format!("thread {}", b.thread_of(f.rank)))
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

/// Runs one thread of `b` on the current fiber, to its end.
fn run_thread(b: &Block<'_>, rank: u32, fiber: u32, suspender: Suspender) {
    let ctx = ThreadCtx::new(b, rank, fiber, suspender);
    b.sched.borrow_mut().fibers[fiber as usize].rank = rank;
    let r = run_as(&ctx, b.launch.kernel);
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
    if let Some(fault) = b.engines.thread_exit(b, t.rank) {
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
/// then the next, round after round (the cluster engine, `cluster.rs`,
/// describes the model).
pub(crate) fn run_worker(launch: &LaunchState<'_>, engines: &dyn Engines, next: &AtomicU64) {
    let g = launch.spec.grid;
    let cd = launch.cluster;
    let cgrid = Dim3::new(g.x / cd.x, g.y / cd.y, g.z / cd.z);
    let nclusters = cgrid.volume();
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
            match next_thread(b) {
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
        let cluster = Cluster::new(cd, cidx, launch.spec.block, launch.race_shared);
        let blocks: Vec<Block<'_>> = (0..cluster.size())
            .map(|r| Block::new(launch, engines, &cluster, r))
            .collect();
        for b in &blocks {
            cluster.set_block(b.crank, (b as *const Block<'_>).cast());
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
                            deadlock_detail(b)
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
        if b.is_random() {
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
                                deadlock_detail(b)
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
