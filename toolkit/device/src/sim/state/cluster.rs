//! One thread-block cluster in flight, as plain data: its blocks, the
//! cluster barrier's counts, the DSMEM race shadow and the mbarrier notes
//! that deadlock reports read. What the records mean (arriving, waiting,
//! checking a DSMEM access) is decided in the cluster engine
//! (`sim/cluster.rs`), which sits above the block layer.
//!
//! The cluster is generic over its block type `B` so that it needs
//! nothing above it: the block layer's `Block` holds a `Cluster<Block>`.

use crate::dim3::Dim3;
use core::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::format;
use std::panic::Location;
use std::string::{String, ToString};
use std::vec::Vec;

/// One access in the cluster's race shadow.
#[derive(Clone, Copy)]
pub(crate) struct Acc {
    /// Block (rank in the cluster) of the thread.
    pub(crate) block: u32,
    /// Thread rank in its block.
    pub(crate) thread: u32,
    pub(crate) write: bool,
    /// Cluster-barrier arrivals the thread had made before the access.
    pub(crate) rel: u32,
    /// Cluster-barrier waits the thread had completed before the access.
    pub(crate) acq: u32,
    pub(crate) loc: &'static Location<'static>,
}

impl Acc {
    /// `self` (earlier) happens before `later` through the cluster barrier.
    pub(crate) fn before(&self, later: &Acc) -> bool {
        self.rel < later.acq
    }
}

/// The race shadow of one shared-memory word of the cluster.
#[derive(Default)]
pub(crate) struct WordState {
    pub(crate) write: Option<Acc>,
    pub(crate) reads: Vec<Acc>,
}

/// A blocked waiter at the cluster barrier: (block rank, fiber, thread
/// rank).
pub(crate) type Waiter = (u32, u32, u32);

/// The cluster barrier's counts and each thread's arrivals and waits.
#[derive(Default)]
pub(crate) struct ClusterBarrier {
    /// Threads of the cluster.
    pub(crate) total: u32,
    /// Threads that have exited.
    pub(crate) exited: u32,
    /// Arrivals in the current (incomplete) phase.
    pub(crate) arrived: u32,
    /// Phases completed.
    pub(crate) phase: u32,
    /// Per thread (block rank * threads per block + thread rank).
    pub(crate) arrivals: Vec<u32>,
    pub(crate) waits: Vec<u32>,
    pub(crate) gone: Vec<bool>,
    /// Blocked waiters.
    pub(crate) waiters: Vec<Waiter>,
    /// Where each block's threads last passed a cluster barrier wait.
    pub(crate) last_wait: Vec<Option<&'static Location<'static>>>,
    /// Where threads wait now (for a deadlock report).
    pub(crate) wait_site: Option<&'static Location<'static>>,
}

impl ClusterBarrier {
    /// Sizes the per-thread records at the first use of the barrier.
    pub(crate) fn ensure_threads(&mut self) {
        if self.arrivals.is_empty() {
            let n = self.total as usize;
            self.arrivals = std::vec![0; n];
            self.waits = std::vec![0; n];
            self.gone = std::vec![false; n];
        }
    }

    /// Completes the phase if every live thread has arrived; returns the
    /// waiters to wake and the barrier's site, or `None`.
    pub(crate) fn try_complete(
        &mut self,
        site: &'static Location<'static>,
    ) -> Option<(Vec<Waiter>, &'static Location<'static>)> {
        if self.arrived > 0 && self.arrived + self.exited >= self.total {
            self.phase += 1;
            self.arrived = 0;
            let site = self.wait_site.take().unwrap_or(site);
            Some((core::mem::take(&mut self.waiters), site))
        } else {
            None
        }
    }
}

/// One cluster in flight: its blocks (of type `B`) and what they share.
pub(crate) struct Cluster<B> {
    /// Blocks per dimension.
    pub(crate) dims: Dim3,
    /// The cluster's index in the grid of clusters.
    pub(crate) idx: Dim3,
    /// Threads per block in each dimension (`blockDim`).
    block_dim: Dim3,
    /// Its blocks, by rank (set once each block is built).
    blocks: Vec<Cell<*const B>>,
    /// Blocks whose every thread has exited.
    finished: Vec<Cell<bool>>,
    pub(crate) threads_per_block: u32,
    pub(crate) barrier: RefCell<ClusterBarrier>,
    /// The DSMEM race shadow, keyed by (block rank, word).
    pub(crate) shadow: Option<RefCell<HashMap<(u32, usize), WordState>>>,
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

impl<B> Cluster<B> {
    /// A cluster of `dims` blocks of `block_dim` threads each, at `idx` in
    /// the grid of clusters (`race`: with the DSMEM race shadow).
    pub(crate) fn new(dims: Dim3, idx: Dim3, block_dim: Dim3, race: bool) -> Self {
        let n = dims.volume() as usize;
        let threads = block_dim.volume() as u32;
        Cluster {
            dims,
            idx,
            block_dim,
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

    /// The grid index of block `rank` of the cluster, for reports.
    pub(crate) fn index_of(&self, rank: u32) -> Dim3 {
        self.block_idx(rank)
    }

    /// The thread index of linear thread `rank` of a block.
    pub(crate) fn thread_of(&self, rank: u32) -> Dim3 {
        let b = self.block_dim;
        Dim3::new(rank % b.x, (rank / b.x) % b.y, rank / (b.x * b.y))
    }

    /// Registers block `rank` (the block must stay where it is until the
    /// cluster has finished).
    pub(crate) fn set_block(&self, rank: u32, b: *const B) {
        self.blocks[rank as usize].set(b);
    }

    /// Block `rank` of the cluster.
    pub(crate) fn block(&self, rank: u32) -> &B {
        // SAFETY: every block of the cluster is registered before any of
        // its threads runs and lives until the whole cluster has finished
        // (`run_worker` drops them together, after the last fiber of the
        // cluster has stopped).
        unsafe { &*self.blocks[rank as usize].get() }
    }

    /// Block `rank` has finished: its shared memory is released.
    pub(crate) fn block_finished(&self, rank: u32) {
        self.finished[rank as usize].set(true);
    }

    /// Whether block `rank` has finished.
    pub(crate) fn is_finished(&self, rank: u32) -> bool {
        self.finished[rank as usize].get()
    }

    /// Block `rank` of the cluster, if it has not exited; `Err` with the
    /// last cluster barrier its threads passed otherwise.
    pub(crate) fn peer(&self, rank: u32) -> Result<&B, Option<&'static Location<'static>>> {
        if self.is_finished(rank) {
            return Err(self.barrier.borrow().last_wait[rank as usize]);
        }
        Ok(self.block(rank))
    }

    /// The cluster barrier's slot of thread `rank` of block `crank`.
    pub(crate) fn slot(&self, crank: u32, rank: u32) -> usize {
        (crank * self.threads_per_block + rank) as usize
    }

    /// Thread `rank` of block `crank` initialised the mbarrier at shared
    /// byte `addr`: noted with its cluster-barrier arrivals so far, so that
    /// a peer's use can be checked to come after a cluster barrier.
    pub(crate) fn note_mbar_init(
        &self,
        crank: u32,
        rank: u32,
        addr: u32,
        loc: &'static Location<'static>,
    ) {
        if self.size() < 2 {
            return;
        }
        let rel = {
            let mut bar = self.barrier.borrow_mut();
            bar.ensure_threads();
            bar.arrivals[self.slot(crank, rank)]
        };
        self.inits.borrow_mut().insert((crank, addr), (rel, loc));
    }

    /// `None` when thread `rank` of block `crank` may use the mbarrier at
    /// shared byte `addr` of block `owner` (its init is ordered before by a
    /// cluster barrier); otherwise the init's line (`None` inside: no init
    /// noted).
    pub(crate) fn mbar_init_hidden(
        &self,
        crank: u32,
        rank: u32,
        owner: u32,
        addr: u32,
    ) -> Option<Option<&'static Location<'static>>> {
        let Some(&(rel, loc)) = self.inits.borrow().get(&(owner, addr)) else {
            return Some(None);
        };
        let acq = {
            let mut bar = self.barrier.borrow_mut();
            bar.ensure_threads();
            bar.waits[self.slot(crank, rank)]
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
    pub(crate) fn multicast_note(&self, rank: u32, bar: u32) -> String {
        let v = self.multicasts.borrow();
        let missing = v.iter().find(|n| n.bar == bar && n.mask & (1 << rank) == 0);
        let Some(n) = missing else {
            return String::new();
        };
        format!(
            "; the TMA multicast by thread {} of block {} at {} (cta_mask {:#b}) completes bytes \
             on the mbarrier at this offset in blocks of ranks {} but not in this block (cluster \
             rank {rank}): its mask misses a block that waits for its data",
            self.thread_of(n.thread),
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

    /// The report when every block of the cluster waits and none can go
    /// on: the thread to name (block rank, thread rank) and the detail.
    pub(crate) fn deadlock_detail(&self) -> (u32, u32, String) {
        let bar = self.barrier.borrow();
        let waiting = bar.waiters.len();
        let missing = (0..bar.total as usize)
            .find(|&s| !bar.gone[s] && bar.arrivals.get(s).is_none_or(|&a| a <= bar.phase));
        let site = bar.wait_site.map(|s| s.to_string()).unwrap_or_default();
        let (first_block, first_thread) = bar.waiters.first().map_or((0, 0), |&(r, _, t)| (r, t));
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
                    self.thread_of(t),
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

/// The ranks of the bits of `mask`, as "0, 1".
pub(crate) fn ranks(mask: u16) -> String {
    let v: Vec<String> = (0..16)
        .filter(|r| mask & (1 << r) != 0)
        .map(|r: u32| r.to_string())
        .collect();
    v.join(", ")
}
