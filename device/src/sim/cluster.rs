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
//! * **DSMEM** ([`remote`]): an access to block `r` of the cluster goes to
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

use super::error::{AsyncHazard, Fault, Race, RaceAccess};
use super::sched::{self, Block, ThreadCtx, Wait};
use crate::dim3::Dim3;
use core::cell::{Cell, RefCell};
use std::boxed::Box;
use std::collections::HashMap;
use std::format;
use std::panic::Location;
use std::string::{String, ToString};
use std::vec::Vec;

/// Largest cluster the simulator accepts: the portable cluster size of
/// CUDA (8 blocks), which every sm_90 GPU runs without an opt-in.
pub const MAX_CLUSTER_BLOCKS: u32 = 8;

/// One access in the cluster's race shadow.
#[derive(Clone, Copy)]
struct Acc {
    /// Block (rank in the cluster) of the thread.
    block: u32,
    /// Thread rank in its block.
    thread: u32,
    write: bool,
    /// Cluster-barrier arrivals the thread had made before the access.
    rel: u32,
    /// Cluster-barrier waits the thread had completed before the access.
    acq: u32,
    loc: &'static Location<'static>,
}

impl Acc {
    /// `self` (earlier) happens before `later` through the cluster barrier.
    fn before(&self, later: &Acc) -> bool {
        self.rel < later.acq
    }
}

#[derive(Default)]
struct WordState {
    write: Option<Acc>,
    reads: Vec<Acc>,
}

/// The cluster barrier's counts and each thread's arrivals and waits.
#[derive(Default)]
struct ClusterBarrier {
    /// Threads of the cluster.
    total: u32,
    /// Threads that have exited.
    exited: u32,
    /// Arrivals in the current (incomplete) phase.
    arrived: u32,
    /// Phases completed.
    phase: u32,
    /// Per thread (block rank * threads per block + thread rank).
    arrivals: Vec<u32>,
    waits: Vec<u32>,
    gone: Vec<bool>,
    /// Blocked waiters: (block rank, fiber).
    waiters: Vec<(u32, u32)>,
    /// Where each block's threads last passed a cluster barrier wait.
    last_wait: Vec<Option<&'static Location<'static>>>,
    /// Where threads wait now (for a deadlock report).
    wait_site: Option<&'static Location<'static>>,
}

/// One cluster in flight: its blocks and what they share.
pub(crate) struct Cluster {
    /// Blocks per dimension.
    pub(crate) dims: Dim3,
    /// The cluster's index in the grid of clusters.
    pub(crate) idx: Dim3,
    /// Its blocks, by rank (set once each block is built).
    blocks: Vec<Cell<*const Block<'static>>>,
    /// Blocks whose every thread has exited.
    finished: Vec<Cell<bool>>,
    threads_per_block: u32,
    barrier: RefCell<ClusterBarrier>,
    /// The DSMEM race shadow, keyed by (block rank, word).
    shadow: Option<RefCell<HashMap<(u32, usize), WordState>>>,
    /// Per mbarrier (block rank, shared byte): the cluster-barrier
    /// arrivals its initialising thread had made before the init, and the
    /// init's line (clusters of two or more blocks only).
    inits: RefCell<HashMap<(u32, u32), MbarInit>>,
    /// The TMA multicasts issued so far, one entry per (issuing block,
    /// line, mbarrier): for deadlock reports.
    multicasts: RefCell<Vec<MulticastNote>>,
    /// Per mbarrier (block rank, shared byte): the phase of its latest
    /// arrival and the ranks of the blocks that arrived in that phase.
    arrivals: RefCell<HashMap<(u32, u32), (u64, u16)>>,
}

/// An mbarrier init as the cluster sees it: the initialising thread's
/// cluster-barrier arrivals before it, and its line.
type MbarInit = (u32, &'static Location<'static>);

/// A TMA multicast as a deadlock report names it.
#[derive(Clone, Copy)]
struct MulticastNote {
    issuer: u32,
    thread: u32,
    loc: &'static Location<'static>,
    mask: u16,
    bar: u32,
}

impl Cluster {
    /// A cluster of `dims` blocks of `threads` threads each, at `idx` in
    /// the grid of clusters.
    pub(crate) fn new(dims: Dim3, idx: Dim3, threads: u32, race: bool) -> Self {
        let n = dims.volume() as usize;
        Cluster {
            dims,
            idx,
            blocks: (0..n).map(|_| Cell::new(core::ptr::null())).collect(),
            finished: (0..n).map(|_| Cell::new(false)).collect(),
            threads_per_block: threads,
            barrier: RefCell::new(ClusterBarrier {
                total: threads * n as u32,
                last_wait: std::vec![None; n],
                ..ClusterBarrier::default()
            }),
            shadow: (race && n > 1).then(|| RefCell::new(HashMap::new())),
            inits: RefCell::new(HashMap::new()),
            multicasts: RefCell::new(Vec::new()),
            arrivals: RefCell::new(HashMap::new()),
        }
    }

    /// Blocks in the cluster.
    pub(crate) fn size(&self) -> u32 {
        self.blocks.len() as u32
    }

    /// The block index (in the grid) of block `rank` of the cluster.
    pub(crate) fn block_idx(&self, rank: u32) -> Dim3 {
        let d = self.dims;
        Dim3::new(
            self.idx.x * d.x + rank % d.x,
            self.idx.y * d.y + (rank / d.x) % d.y,
            self.idx.z * d.z + rank / (d.x * d.y),
        )
    }

    /// Registers block `rank` (the block must stay where it is until the
    /// cluster has finished).
    pub(crate) fn set_block(&self, rank: u32, b: &Block<'_>) {
        self.blocks[rank as usize].set((b as *const Block<'_>).cast());
    }

    /// Block `rank` has finished: its shared memory is released.
    pub(crate) fn block_finished(&self, rank: u32) {
        self.finished[rank as usize].set(true);
    }

    /// Block `rank` of the cluster, if it has not exited; `Err` with the
    /// last cluster barrier its threads passed otherwise.
    pub(crate) fn peer(
        &self,
        rank: u32,
    ) -> Result<&Block<'static>, Option<&'static Location<'static>>> {
        if self.finished[rank as usize].get() {
            return Err(self.barrier.borrow().last_wait[rank as usize]);
        }
        Ok(self.block(rank))
    }

    /// The grid index of block `rank` of the cluster, for reports.
    pub(crate) fn index_of(&self, rank: u32) -> Dim3 {
        self.block_idx(rank)
    }

    /// Thread `t` of `b` initialised the mbarrier at shared byte `addr`:
    /// noted with its cluster-barrier arrivals so far, so that a peer's use
    /// can be checked to come after a cluster barrier.
    pub(crate) fn note_mbar_init(
        &self,
        b: &Block<'_>,
        t: &ThreadCtx,
        addr: u32,
        loc: &'static Location<'static>,
    ) {
        if self.size() < 2 {
            return;
        }
        let rel = {
            let mut bar = self.barrier.borrow_mut();
            Self::ensure_threads(&mut bar);
            bar.arrivals[self.slot(b, t.rank)]
        };
        self.inits.borrow_mut().insert((b.crank, addr), (rel, loc));
    }

    /// `None` when thread `t` of `b` may use the mbarrier at shared byte
    /// `addr` of block `owner` (its init is ordered before by a cluster
    /// barrier); otherwise the init's line (`None` inside: no init noted).
    pub(crate) fn mbar_init_hidden(
        &self,
        b: &Block<'_>,
        t: &ThreadCtx,
        owner: u32,
        addr: u32,
    ) -> Option<Option<&'static Location<'static>>> {
        let Some(&(rel, loc)) = self.inits.borrow().get(&(owner, addr)) else {
            return Some(None);
        };
        let acq = {
            let mut bar = self.barrier.borrow_mut();
            Self::ensure_threads(&mut bar);
            bar.waits[self.slot(b, t.rank)]
        };
        (rel >= acq).then_some(Some(loc))
    }

    /// Notes a TMA multicast by thread `thread` of block `issuer` at `loc`
    /// to the blocks of `mask`, completing on the mbarrier at `bar`.
    pub(crate) fn note_multicast(
        &self,
        issuer: u32,
        thread: u32,
        loc: &'static Location<'static>,
        mask: u16,
        bar: u32,
    ) {
        let mut v = self.multicasts.borrow_mut();
        let same = |n: &MulticastNote| n.issuer == issuer && n.loc == loc && n.bar == bar;
        match v.iter_mut().find(|n| same(n)) {
            Some(n) => n.mask = mask,
            None => v.push(MulticastNote {
                issuer,
                thread,
                loc,
                mask,
                bar,
            }),
        }
    }

    /// For a deadlock report of block `rank` waiting on its mbarrier at
    /// shared byte `bar`: the multicasts that complete bytes on the
    /// mbarrier at that offset in other blocks but leave block `rank` out
    /// of their mask (empty when there are none).
    pub(crate) fn multicast_note(&self, b: &Block<'_>, rank: u32, bar: u32) -> String {
        let v = self.multicasts.borrow();
        let missing = v.iter().find(|n| n.bar == bar && n.mask & (1 << rank) == 0);
        let Some(n) = missing else {
            return String::new();
        };
        format!(
            "; the TMA multicast by thread {} of block {} at {} (cta_mask {:#b}) completes bytes \
             on the mbarrier at this offset in blocks of ranks {} but not in this block (cluster \
             rank {rank}): its mask misses a block that waits for its data",
            b.thread_of(n.thread),
            self.block_idx(n.issuer),
            n.loc,
            n.mask,
            ranks(n.mask),
        )
    }

    /// Block `from` arrived on the mbarrier at shared byte `addr` of block
    /// `owner` in its phase `phase` (clusters of two or more blocks only).
    pub(crate) fn note_arrival(&self, owner: u32, addr: u32, phase: u64, from: u32) {
        if self.size() < 2 {
            return;
        }
        let mut map = self.arrivals.borrow_mut();
        let e = map.entry((owner, addr)).or_insert((phase, 0));
        if e.0 != phase {
            *e = (phase, 0);
        }
        e.1 |= 1 << from;
    }

    /// For a deadlock report of the mbarrier at shared byte `addr` of
    /// block `owner`, in phase `phase` with arrivals pending: which blocks
    /// its arrivals of that phase came from, when not from all of them
    /// (empty otherwise).
    pub(crate) fn arrival_note(&self, owner: u32, addr: u32, phase: u64) -> String {
        let n = self.size();
        if n < 2 {
            return String::new();
        }
        let all = ((1u32 << n) - 1) as u16;
        let from = match self.arrivals.borrow().get(&(owner, addr)) {
            Some(&(p, m)) if p == phase => m,
            _ => 0,
        };
        if from == all {
            return String::new();
        }
        let (got, never) = (ranks(from), ranks(all & !from));
        format!(
            "; in this phase it has arrivals from the blocks of cluster ranks [{got}] and none \
             from ranks [{never}] (Mbarrier::arrive_remote(rank) counts on block `rank`: a block \
             whose arrivals are expected here arrives elsewhere, or not at all)"
        )
    }

    pub(crate) fn block(&self, rank: u32) -> &Block<'static> {
        // SAFETY: every block of the cluster is registered before any of
        // its threads runs and lives until the whole cluster has finished
        // (`run_worker` drops them together, after the last fiber of the
        // cluster has stopped).
        unsafe { &*self.blocks[rank as usize].get() }
    }

    fn slot(&self, b: &Block<'_>, rank: u32) -> usize {
        (b.crank * self.threads_per_block + rank) as usize
    }

    fn ensure_threads(bar: &mut ClusterBarrier) {
        if bar.arrivals.is_empty() {
            let n = bar.total as usize;
            bar.arrivals = std::vec![0; n];
            bar.waits = std::vec![0; n];
            bar.gone = std::vec![false; n];
        }
    }

    /// Completes the phase if every live thread has arrived; returns the
    /// waiters to wake and the barrier's site, or `None`.
    fn try_complete(
        bar: &mut ClusterBarrier,
        site: &'static Location<'static>,
    ) -> Option<(Vec<(u32, u32)>, &'static Location<'static>)> {
        if bar.arrived > 0 && bar.arrived + bar.exited >= bar.total {
            bar.phase += 1;
            bar.arrived = 0;
            let site = bar.wait_site.take().unwrap_or(site);
            Some((core::mem::take(&mut bar.waiters), site))
        } else {
            None
        }
    }

    /// After a completed phase: the cluster barrier is also a barrier of
    /// each block (a new interval for the block-level race detector), and
    /// its waiters go on.
    fn release(&self, done: Option<(Vec<(u32, u32)>, &'static Location<'static>)>) {
        let Some((waiters, site)) = done else {
            return;
        };
        for rank in 0..self.size() {
            let blk = self.block(rank);
            if let Some(r) = &blk.race {
                r.barrier(site);
            }
            // It orders the block's threads as a block barrier does:
            // mbarrier inits and observed phases become visible.
            if blk.async_on.get() {
                super::asyncs::on_barrier(blk);
            }
        }
        for (rank, fiber) in waiters {
            self.block(rank).wake(fiber);
        }
    }

    /// Thread `rank` of `b` returned from the kernel: it no longer counts
    /// at the cluster barrier.
    pub(crate) fn thread_exit(&self, b: &Block<'_>, rank: u32) {
        let slot = self.slot(b, rank);
        let waiters = {
            let mut bar = self.barrier.borrow_mut();
            if bar.arrivals.is_empty() && self.size() == 1 {
                // A lone block that never used the cluster barrier (every
                // launch without clusters): nothing waits, nothing to undo.
                bar.exited += 1;
                return;
            }
            Self::ensure_threads(&mut bar);
            if bar.gone[slot] {
                return;
            }
            bar.gone[slot] = true;
            if bar.arrivals[slot] > bar.phase {
                // It arrived at the current phase and left without waiting.
                bar.arrived -= 1;
            }
            bar.exited += 1;
            Self::try_complete(&mut bar, Location::caller())
        };
        self.release(waiters);
    }

    /// The report when every block of the cluster waits and none can go
    /// on: the thread to name (block rank, thread rank) and the detail.
    pub(crate) fn deadlock_detail(&self) -> (u32, u32, String) {
        let bar = self.barrier.borrow();
        let waiting = bar.waiters.len();
        let missing = (0..bar.total as usize)
            .find(|&s| !bar.gone[s] && bar.arrivals.get(s).is_none_or(|&a| a <= bar.phase));
        let site = bar.wait_site.map(|s| s.to_string()).unwrap_or_default();
        let (first_block, first_thread) = bar
            .waiters
            .first()
            .map_or((0, 0), |&(r, f)| (r, self.block(r).fiber_rank(f)));
        let detail = match missing {
            Some(s) => {
                let (r, t) = (
                    s as u32 / self.threads_per_block,
                    s as u32 % self.threads_per_block,
                );
                format!(
                    "{waiting} threads of the cluster wait at the cluster barrier at {site}, \
                     but thread {} of block {} never arrives (it waits elsewhere: every \
                     thread of every block of the cluster must arrive, or exit); no thread \
                     can go on",
                    self.block(r).thread_of(t),
                    self.block_idx(r)
                )
            }
            None => format!(
                "{waiting} threads of the cluster wait at the cluster barrier at {site}; \
                 no thread can go on"
            ),
        };
        (first_block, first_thread, detail)
    }
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
    sched::with_block(|_, b| {
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
    let outcome = sched::with_block(|t, b| {
        if b.is_aborted() {
            sched::unwind()
        }
        let c = b.cluster();
        let slot = c.slot(b, t.rank);
        let waiters = {
            let mut bar = c.barrier.borrow_mut();
            Cluster::ensure_threads(&mut bar);
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
            Cluster::try_complete(&mut bar, loc)
        };
        c.release(waiters);
        Ok(())
    });
    if let Err(f) = outcome {
        sched::fail_at(f, loc)
    }
}

/// `barrier.cluster.wait`: blocks until the phase of the thread's last
/// arrival has completed.
pub fn wait(loc: &'static Location<'static>) {
    let outcome = sched::with_block(|t, b| {
        if b.is_aborted() {
            sched::unwind()
        }
        let c = b.cluster();
        let slot = c.slot(b, t.rank);
        let must_wait = {
            let mut bar = c.barrier.borrow_mut();
            Cluster::ensure_threads(&mut bar);
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
                bar.waiters.push((b.crank, t.fiber_id()));
                bar.wait_site.get_or_insert(loc);
                true
            } else {
                false
            }
        };
        if must_wait {
            sched::suspend(t, b, Wait::Cluster(loc));
        }
        let mut bar = c.barrier.borrow_mut();
        bar.waits[slot] += 1;
        bar.last_wait[b.crank as usize] = Some(loc);
        Ok(())
    });
    if let Err(f) = outcome {
        sched::fail_at(f, loc)
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

/// Translates `addr`, an address in the current block's shared memory, to
/// the same offset in the shared memory of block `rank` of the cluster
/// (`mapa.shared::cluster`), after the checks of an access of `size` bytes
/// of `kind`: the rank exists, the block has not exited, and (race
/// detection on) no unordered access of another block touched the words.
/// Block `rank` may be the current block: that is an ordinary shared
/// access.
pub fn remote(
    addr: usize,
    size: usize,
    rank: u32,
    kind: RemoteKind,
    loc: &'static Location<'static>,
) -> usize {
    let outcome = sched::with_block(|t, b| {
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
        if c.finished[rank as usize].get() {
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
    });
    match outcome {
        Ok((p, true)) => {
            if kind != RemoteKind::Atomic {
                super::shared_access(p, size, kind == RemoteKind::Write, loc);
            }
            p
        }
        Ok((p, false)) => p,
        Err(f) => sched::fail_at(f, loc),
    }
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
        Cluster::ensure_threads(&mut bar);
        let s = c.slot(b, t.rank);
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
        thread: c.block(a.block).thread_of(a.thread),
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

/// The ranks of the bits of `mask`, as "0, 1".
pub(crate) fn ranks(mask: u16) -> String {
    let v: Vec<String> = (0..16)
        .filter(|r| mask & (1 << r) != 0)
        .map(|r: u32| r.to_string())
        .collect();
    v.join(", ")
}
