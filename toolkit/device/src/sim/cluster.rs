//! Thread-block clusters in the simulator: the blocks of a cluster run
//! together on one OS thread (co-scheduled, as the hardware guarantees), so
//! each can read and write the others' shared memory (distributed shared
//! memory, DSMEM) and all of them meet at the cluster barrier.
//!
//! * **Scheduling.** The launch's worker (`sched::run_worker`) takes whole clusters; it
//!   runs a block of the cluster until every thread of it has exited or
//!   waits at the cluster barrier, then the next block, round after round,
//!   until every block of the cluster has finished. A launch without
//!   clusters is a grid of 1x1x1 clusters, as on the GPU.
//! * **The cluster barrier** ([`arrive`], [`wait`]) has phases: a phase
//!   completes when every thread of the cluster that has not exited has
//!   arrived (`barrier.cluster.arrive`); a thread's `barrier.cluster.wait`
//!   returns once the phase of its last arrival has completed. A thread
//!   alternates arrive and wait; a second arrive before the wait, or a
//!   wait without an arrive, is reported. If every block of a cluster
//!   waits and none can go on, that is a deadlock report naming the
//!   threads that never arrived.
//! * **DSMEM** (`remote_target`): an access to block `r` of the cluster goes to
//!   that block's own shared-memory buffer. An access to a block that has
//!   exited (its shared memory is released) stops the launch, naming the
//!   access and the last cluster barrier the exited block passed.
//! * **Races.** With the race detector on, every shared-memory word of a
//!   cluster of two or more blocks has a shadow record of its last write
//!   and the reads since, each with the thread's cluster-barrier counts: an
//!   access of thread X is ordered before one of thread Y when X arrived
//!   at a phase after the access that Y then waited for (X's arrivals
//!   before the access < Y's completed waits). Two accesses from different
//!   blocks, at least one a write, that are not ordered so are a
//!   [`Fault::Race`] in "distributed shared memory" naming both. Accesses
//!   within one block are the block-level detector's (`race`);
//!   atomics never count.
//!
//! The cluster's records are plain data (`state::cluster`) that each
//! block reaches through the block layer; this file gives them their
//! meaning. It sits above the scheduler and the asynchronous engine (a
//! completed phase is a block barrier for it); the launch calls
//! `thread_exit` on the scheduler's behalf.

use super::block::{self, Block, Cluster, ThreadCtx, Wait};
use super::error::{AsyncHazard, Fault, Race, RaceAccess};
use super::state::cluster::{Acc, Waiter};
use crate::dim3::Dim3;
use std::boxed::Box;
use std::format;
use std::panic::Location;
use std::string::{String, ToString};
use std::vec::Vec;

/// Largest cluster the simulator accepts: the portable cluster size of
/// CUDA (8 blocks), which every sm_90 GPU runs without an opt-in.
pub const MAX_CLUSTER_BLOCKS: u32 = 8;

/// After a completed phase: the cluster barrier is also a barrier of
/// each block (a new interval for the block-level race detector), and
/// its waiters go on.
fn release(c: &Cluster, done: Option<(Vec<Waiter>, &'static Location<'static>)>) {
    let Some((waiters, site)) = done else {
        return;
    };
    for rank in 0..c.size() {
        let blk = c.block(rank);
        if let Some(r) = &blk.race {
            r.barrier(site);
        }
        // It orders the block's threads as a block barrier does:
        // mbarrier inits and observed phases become visible.
        if blk.async_on.get() {
            super::asyncs::on_barrier(blk);
        }
    }
    for (rank, fiber, _) in waiters {
        c.block(rank).wake(fiber);
    }
}

/// Thread `rank` of `b` returned from the kernel: it no longer counts at
/// the cluster barrier.
pub(crate) fn thread_exit(b: &Block<'_>, rank: u32) {
    let c = b.cluster();
    let slot = c.slot(b.crank, rank);
    let waiters = {
        let mut bar = c.barrier.borrow_mut();
        if bar.arrivals.is_empty() && c.size() == 1 {
            // A lone block that never used the cluster barrier (every
            // launch without clusters): nothing waits, nothing to undo.
            bar.exited += 1;
            return;
        }
        bar.ensure_threads();
        if bar.gone[slot] {
            return;
        }
        bar.gone[slot] = true;
        if bar.arrivals[slot] > bar.phase {
            // It arrived at the current phase and left without waiting.
            bar.arrived -= 1;
        }
        bar.exited += 1;
        bar.try_complete(Location::caller())
    };
    release(c, waiters);
}

fn hazard(
    b: &Block<'_>,
    t: &ThreadCtx,
    op: &'static str,
    loc: &Location<'_>,
    detail: String,
) -> Fault {
    Fault::Async(Box::new(AsyncHazard {
        op,
        block: b.idx,
        thread: t.thread_idx,
        location: loc.to_string(),
        detail,
    }))
}

/// `%cluster_ctarank`, `%cluster_nctarank`, `%cluster_ctaid`, `%cluster_nctaid`
/// of the current thread.
pub fn info() -> (u32, u32, Dim3, Dim3) {
    block::with_block(|_, b| {
        let c = b.cluster();
        let d = c.dims;
        let r = b.crank;
        (
            r,
            c.size(),
            Dim3::new(r % d.x, (r / d.x) % d.y, r / (d.x * d.y)),
            d,
        )
    })
}

/// `barrier.cluster.arrive`: the thread's arrival at the current phase.
pub fn arrive(loc: &'static Location<'static>) {
    let outcome = block::with_block(|t, b| {
        if b.is_aborted() {
            block::unwind()
        }
        let c = b.cluster();
        let slot = c.slot(b.crank, t.rank);
        let waiters = {
            let mut bar = c.barrier.borrow_mut();
            bar.ensure_threads();
            if bar.arrivals[slot] > bar.waits[slot] {
                return Err(hazard(
                    b,
                    t,
                    "cluster barrier",
                    loc,
                    format!(
                        "thread {} of block {} arrives at the cluster barrier at {loc} a \
                         second time without waiting in between: each thread alternates \
                         cluster::arrive() and cluster::wait() (or calls cluster::sync())",
                        t.thread_idx, b.idx
                    ),
                ));
            }
            bar.arrivals[slot] += 1;
            bar.arrived += 1;
            bar.try_complete(loc)
        };
        release(c, waiters);
        Ok(())
    });
    if let Err(f) = outcome {
        block::fail_at(f, loc)
    }
}

/// `barrier.cluster.wait`: blocks until the phase of the thread's last
/// arrival has completed.
pub fn wait(loc: &'static Location<'static>) {
    let outcome = block::with_block(|t, b| {
        if b.is_aborted() {
            block::unwind()
        }
        let c = b.cluster();
        let slot = c.slot(b.crank, t.rank);
        let must_wait = {
            let mut bar = c.barrier.borrow_mut();
            bar.ensure_threads();
            if bar.arrivals[slot] == bar.waits[slot] {
                return Err(hazard(
                    b,
                    t,
                    "cluster barrier",
                    loc,
                    format!(
                        "thread {} of block {} waits at the cluster barrier at {loc} without \
                         having arrived: call cluster::arrive() first (or cluster::sync())",
                        t.thread_idx, b.idx
                    ),
                ));
            }
            let target = bar.arrivals[slot];
            if bar.phase < target {
                bar.waiters.push((b.crank, t.fiber_id(), t.rank));
                bar.wait_site.get_or_insert(loc);
                true
            } else {
                false
            }
        };
        if must_wait {
            block::suspend(t, b, Wait::Cluster(loc));
        }
        let mut bar = c.barrier.borrow_mut();
        bar.waits[slot] += 1;
        bar.last_wait[b.crank as usize] = Some(loc);
        Ok(())
    });
    if let Err(f) = outcome {
        block::fail_at(f, loc)
    }
}

/// How a DSMEM access touches the peer's word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteKind {
    /// `ld.shared::cluster`.
    Read,
    /// `st.shared::cluster`.
    Write,
    /// `red.shared::cluster` / `atom.shared::cluster` (never a race).
    Atomic,
}

/// Where a DSMEM access of thread `t` of `b` goes: `addr`, an address in
/// `b`'s shared memory, translated to the same offset in the shared
/// memory of block `rank` of the cluster (`mapa.shared::cluster`), after
/// the checks of an access of `size` bytes of `kind`: the rank exists,
/// the block has not exited, and (race detection on) no unordered access
/// of another block touched the words. `Ok((addr, true))` when block
/// `rank` is `b` itself: an ordinary shared access, whose checks are the
/// caller's ([`access`](super::access) puts them together).
pub(crate) fn remote_target(
    t: &ThreadCtx,
    b: &Block<'_>,
    addr: usize,
    size: usize,
    rank: u32,
    kind: RemoteKind,
    loc: &'static Location<'static>,
) -> Result<(usize, bool), Fault> {
    let c = b.cluster();
    if rank >= c.size() {
        return Err(Fault::OutOfBounds {
            space: "the cluster's blocks (distributed shared memory rank)",
            index: rank as usize,
            len: c.size() as usize,
        });
    }
    let off = addr.wrapping_sub(b.shared_base as usize);
    if rank == b.crank {
        return Ok((addr, true));
    }
    let peer = c.block(rank);
    if c.is_finished(rank) {
        let last = c.barrier.borrow().last_wait[rank as usize];
        let peer_idx = c.block_idx(rank);
        return Err(hazard(
            b,
            t,
            "distributed shared memory",
            loc,
            format!(
                "thread {} of block {} {} the shared memory of block {peer_idx} (cluster \
                 rank {rank}) at {loc}, but that block has exited, so its shared memory is \
                 released; its threads last passed the cluster barrier at {}: a block \
                 must not exit while a peer still reads or writes its shared memory (end \
                 the kernel with cluster::sync())",
                t.thread_idx,
                b.idx,
                match kind {
                    RemoteKind::Read => "reads",
                    RemoteKind::Write => "writes",
                    RemoteKind::Atomic => "adds to",
                },
                last.map_or_else(|| "(never)".to_string(), |l| l.to_string()),
            ),
        ));
    }
    if kind != RemoteKind::Atomic
        && let Some(f) = record(c, t, b, rank, off, size, kind == RemoteKind::Write, loc)
    {
        return Err(f);
    }
    Ok(((peer.shared_base as usize).wrapping_add(off), false))
}

/// The cluster part of a local shared-memory access (from
/// `access::shared_access`): recorded in the DSMEM shadow when
/// the block is in a cluster of two or more with race detection on.
#[inline]
pub(crate) fn local_access(
    t: &ThreadCtx,
    b: &Block<'_>,
    off: usize,
    size: usize,
    write: bool,
    loc: &'static Location<'static>,
) -> Result<(), Fault> {
    let c = b.cluster();
    if c.shadow.is_none() {
        return Ok(());
    }
    match record(c, t, b, b.crank, off, size, write, loc) {
        Some(f) => Err(f),
        None => Ok(()),
    }
}

/// Records an access by thread `t` of `b` to the words at `off..off+size`
/// of block `owner`'s shared memory; returns the race it finds.
#[allow(clippy::too_many_arguments)]
fn record(
    c: &Cluster,
    t: &ThreadCtx,
    b: &Block<'_>,
    owner: u32,
    off: usize,
    size: usize,
    write: bool,
    loc: &'static Location<'static>,
) -> Option<Fault> {
    let shadow = c.shadow.as_ref()?;
    let (rel, acq) = {
        let mut bar = c.barrier.borrow_mut();
        bar.ensure_threads();
        let s = c.slot(b.crank, t.rank);
        (bar.arrivals[s], bar.waits[s])
    };
    let me = Acc {
        block: b.crank,
        thread: t.rank,
        write,
        rel,
        acq,
        loc,
    };
    let mut map = shadow.borrow_mut();
    for word in off / 4..=(off + size.max(1) - 1) / 4 {
        let st = map.entry((owner, word)).or_default();
        let conflict = st
            .write
            .iter()
            .chain(if write { st.reads.iter() } else { [].iter() })
            .find(|o| o.block != me.block && !o.before(&me))
            .copied();
        if let Some(o) = conflict {
            return Some(race(c, owner, word, o, me));
        }
        if write {
            st.reads.clear();
            st.write = Some(me);
        } else if let Some(r) = st
            .reads
            .iter_mut()
            .find(|r| r.block == me.block && r.thread == me.thread)
        {
            *r = me;
        } else {
            st.reads.push(me);
        }
    }
    None
}

#[cold]
fn race(c: &Cluster, owner: u32, word: usize, first: Acc, second: Acc) -> Fault {
    let side = |a: Acc| RaceAccess {
        block: c.block_idx(a.block),
        thread: c.thread_of(a.thread),
        write: a.write,
        location: a.loc.to_string(),
    };
    Fault::Race(Box::new(Race {
        space: "distributed shared memory",
        word: format!(
            "word {word} (byte offset {}) of block {}'s shared memory",
            word * 4,
            c.block_idx(owner)
        ),
        first: side(first),
        second: side(second),
        interval: "with no cluster barrier between them (the first thread must arrive \
                   after its access, and the second wait, before its own: cluster::sync())"
            .into(),
    }))
}
