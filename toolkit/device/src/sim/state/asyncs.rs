//! What the asynchronous engine (the `asyncs` module of the simulator) keeps
//! per block: the operations in flight ([`Op`]), the state of every 16-byte
//! chunk of shared memory ([`Chunk`]: its asynchronous writer and its
//! asynchronous readers), each thread's groups and waits ([`ThreadAsync`]),
//! the mbarriers ([`Mbar`]) and the warpgroups' `wgmma` records
//! ([`Warpgroup`]). Plain data and its bookkeeping; what the operations
//! mean, and when they complete, is the engine's.

use core::panic::Location;
use std::collections::VecDeque;
use std::vec::Vec;

/// Bytes per tracked chunk: one `cp.async` (16 bytes), and the unit of
/// TMA boxes and `wgmma` operand rows.
pub(crate) const CHUNK: usize = 16;

/// What one 16-byte chunk of shared memory has to do with asynchronous
/// operations.
#[derive(Clone, Copy, Default)]
pub(crate) struct Chunk {
    /// Index + 1 of the operation that writes (or last wrote) the chunk
    /// asynchronously; 0 for none.
    pub(crate) writer: u32,
    /// Asynchronous reads in flight on the chunk (their operations are in
    /// [`AsyncState::reading`]).
    pub(crate) readers: u32,
}

/// An asynchronous operation of the block.
pub(crate) struct Op {
    pub(crate) kind: OpKind,
    /// Rank (linear thread index) of the issuing thread.
    pub(crate) rank: u32,
    /// The kernel line that issued it.
    pub(crate) loc: &'static Location<'static>,
    /// Chunks (or records) that still name it; freed at 0.
    pub(crate) refs: u32,
}

/// A TMA store's or `wgmma`'s reads of shared memory.
pub(crate) struct Reads {
    /// The chunks read.
    pub(crate) chunks: Vec<u32>,
    /// The issuing thread's group.
    pub(crate) group: u32,
    /// TMA loads whose data it reads (each reader must have seen their
    /// phases).
    pub(crate) sources: Vec<u32>,
}

pub(crate) enum OpKind {
    /// A free slot.
    Free,
    /// `cp.async`: 16 bytes from `src` (zeros when `!valid`) to shared
    /// byte offset `dst`.
    Copy {
        dst: u32,
        src: usize,
        valid: bool,
        group: u32,
        landed: bool,
    },
    /// A TMA load of `bytes` at `dst`, completing on barrier `bar` (an
    /// index into [`AsyncState::bars`]); `phase` is the phase its bytes
    /// completed, once landed. `multicast`: the load is this block's copy
    /// of a multicast (`None` for a plain load).
    TmaLoad {
        dst: u32,
        map: crate::tensor_map::SimTensorMap,
        x: i32,
        y: i32,
        bar: u32,
        phase: Option<u64>,
        multicast: Option<Multicast>,
    },
    /// A `wgmma` instruction of a warpgroup: the operand chunks it reads.
    Wgmma { reads: Reads },
    /// A TMA store: the shared chunks it reads, and the box it writes.
    TmaStore {
        reads: Reads,
        map: crate::tensor_map::SimTensorMap,
        x: i32,
        y: i32,
        src: u32,
        landed: bool,
    },
}

/// Where the copy of a TMA multicast in a block comes from: the issuing
/// thread is thread [`Op::rank`] of block `issuer` (its rank in the
/// cluster), and the load lands in every block of `mask`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Multicast {
    pub(crate) issuer: u32,
    pub(crate) mask: u16,
}

impl Op {
    pub(crate) fn name(&self) -> &'static str {
        match self.kind {
            OpKind::Free => "(free)",
            OpKind::Copy { .. } => "cp.async",
            OpKind::TmaLoad {
                multicast: Some(_), ..
            } => "TMA multicast",
            OpKind::TmaLoad { .. } => "TMA load",
            OpKind::Wgmma { .. } => "wgmma",
            OpKind::TmaStore { .. } => "TMA store",
        }
    }
}

/// One thread's asynchronous state.
#[derive(Default)]
pub(crate) struct ThreadAsync {
    /// Its `cp.async` copies not yet covered by a wait, in issue order.
    pub(crate) copies: VecDeque<u32>,
    /// `cp.async` groups committed so far.
    pub(crate) committed: u32,
    /// Its last `wait_async_copies`: line and `N`.
    pub(crate) last_wait: Option<(&'static Location<'static>, u32)>,
    /// Per mbarrier (index into [`AsyncState::bars`]): phases it has seen
    /// complete (through its own waits).
    pub(crate) seen: Vec<u64>,
    /// The mbarrier epoch + 1 of its last failed `try_wait` (a spin), and
    /// what that try was: barrier address, parity, line.
    pub(crate) spin: u64,
    pub(crate) spin_at: Option<(u32, u32, &'static Location<'static>)>,
    /// `wgmma` state.
    pub(crate) wg: ThreadWgmma,
    /// TMA stores not yet covered by a `bulk_wait_group_read`, in issue
    /// order, and bulk groups committed.
    pub(crate) stores: VecDeque<u32>,
    pub(crate) bulk_committed: u32,
}

/// The asynchronous state of one block.
#[derive(Default)]
pub(crate) struct AsyncState {
    pub(crate) chunks: Vec<Chunk>,
    pub(crate) ops: Vec<Op>,
    pub(crate) free: Vec<u32>,
    pub(crate) threads: Vec<ThreadAsync>,
    pub(crate) bars: Vec<Mbar>,
    pub(crate) groups: Vec<Warpgroup>,
    /// Block barriers passed (mbarrier inits are visible to other threads
    /// after the next one).
    pub(crate) barriers: u64,
    /// Counts mbarrier state changes (a spinning `try_wait` that sees no
    /// change is waiting for something that does not happen).
    pub(crate) epoch: u64,
    /// Operations whose landing a random schedule deferred, with the block
    /// tick at which they land.
    pub(crate) deferred: Vec<(u32, u64)>,
    /// Asynchronous events of the block so far (the clock of `deferred`).
    pub(crate) tick: u64,
    /// The `wgmma` accumulator poison records (see the `wgmma` engine).
    pub(crate) accs: Vec<AccRecord>,
    /// Operations with asynchronous reads in flight (`wgmma`, TMA stores).
    pub(crate) reading: Vec<u32>,
}

impl AsyncState {
    /// Clears the state for a new block of `threads` threads with `bytes` of
    /// shared memory, keeping the allocations.
    pub(crate) fn reset(&mut self, bytes: usize, threads: usize) {
        self.chunks.clear();
        self.chunks.resize(bytes.div_ceil(CHUNK), Chunk::default());
        self.ops.clear();
        self.free.clear();
        for t in &mut self.threads {
            *t = ThreadAsync::default();
        }
        self.threads.resize_with(threads, ThreadAsync::default);
        self.threads.truncate(threads);
        self.bars.clear();
        self.groups.clear();
        self.groups
            .resize_with(threads.div_ceil(128), Warpgroup::default);
        self.barriers = 0;
        self.epoch = 0;
        self.deferred.clear();
        self.tick = 0;
        self.accs.clear();
        self.reading.clear();
    }

    /// A new operation; returns its index.
    pub(crate) fn push(&mut self, kind: OpKind, rank: u32, loc: &'static Location<'static>) -> u32 {
        let op = Op {
            kind,
            rank,
            loc,
            refs: 0,
        };
        match self.free.pop() {
            Some(i) => {
                self.ops[i as usize] = op;
                i
            }
            None => {
                self.ops.push(op);
                (self.ops.len() - 1) as u32
            }
        }
    }

    /// One reference to op `i` fewer; frees it at zero.
    pub(crate) fn unref(&mut self, i: u32) {
        let op = &mut self.ops[i as usize];
        op.refs = op.refs.saturating_sub(1);
        if op.refs == 0 && !matches!(op.kind, OpKind::Free) {
            op.kind = OpKind::Free;
            self.free.push(i);
        }
    }

    /// Makes op `i` the asynchronous writer of `chunk`, dropping the old one.
    pub(crate) fn set_writer(&mut self, chunk: usize, i: u32) {
        let old = self.chunks[chunk].writer;
        self.chunks[chunk].writer = i + 1;
        self.ops[i as usize].refs += 1;
        if old != 0 {
            self.unref(old - 1);
        }
    }

    /// Clears `chunk`'s writer if it is op `i`.
    pub(crate) fn clear_writer(&mut self, chunk: usize, i: u32) {
        if self.chunks[chunk].writer == i + 1 {
            self.chunks[chunk].writer = 0;
            self.unref(i);
        }
    }

    /// The barrier-relevant phases `rank` has seen of barrier `bar`: its own
    /// observations, or what a block barrier since has published.
    pub(crate) fn seen(&self, rank: u32, bar: u32) -> u64 {
        let own = self.threads[rank as usize]
            .seen
            .get(bar as usize)
            .copied()
            .unwrap_or(0);
        own.max(self.bars[bar as usize].published)
    }
}

/// One mbarrier of the block.
pub(crate) struct Mbar {
    /// Its shared-memory byte offset.
    pub(crate) addr: u32,
    /// Arrivals per phase (the init count).
    pub(crate) count: u32,
    /// Arrivals still expected in this phase.
    pub(crate) pending: u32,
    /// Transaction bytes still expected in this phase (negative: more
    /// completed than expected so far).
    pub(crate) tx: i64,
    /// Phases completed.
    pub(crate) completed: u64,
    pub(crate) init_rank: u32,
    pub(crate) init_gen: u64,
    pub(crate) init_loc: &'static Location<'static>,
    /// A `fence.mbarrier_init` by the initialising thread came after the init.
    pub(crate) fenced: bool,
    /// Fibers blocked in a wait on it.
    pub(crate) waiters: Vec<u32>,
    /// What completed the last phase: thread rank and line.
    pub(crate) last: Option<(u32, &'static Location<'static>, &'static str)>,
    /// The last `expect_tx` of this phase: thread, line and bytes.
    pub(crate) expect: Option<(u32, &'static Location<'static>, u32)>,
    /// Bytes TMA loads completed in this phase, and the last of them.
    pub(crate) tx_done: u64,
    pub(crate) tx_last: Option<u32>,
    /// The most phases any thread has seen complete, and what the last
    /// block barrier published of it.
    pub(crate) max_seen: u64,
    pub(crate) published: u64,
}

/// Who made a poison value.
#[derive(Clone, Copy)]
pub(crate) struct AccRecord {
    pub(crate) rank: u32,
    pub(crate) loc: &'static Location<'static>,
    pub(crate) group: u32,
}

/// An accumulator array of a thread with a `wgmma` chain on it.
pub(crate) struct Acc {
    /// Its address and length (f32 elements).
    pub(crate) ptr: usize,
    pub(crate) len: usize,
    /// The product so far.
    pub(crate) vals: Vec<f32>,
    /// The group of its last `wgmma`.
    pub(crate) group: u32,
    /// Its poison record.
    pub(crate) id: u32,
    /// In flight (the array holds poison) or completed (the array holds `vals`).
    pub(crate) pending: bool,
}

/// One thread's `wgmma` state.
#[derive(Default)]
pub(crate) struct ThreadWgmma {
    /// A `wgmma_fence` since the last `wgmma_wait_group` (or the start).
    pub(crate) fenced: bool,
    /// `wgmma` instructions issued so far (the next one's index).
    pub(crate) issued: u64,
    /// Groups committed.
    pub(crate) committed: u32,
    /// Issued and not yet waited for: instruction index, group.
    pub(crate) inflight: VecDeque<(u64, u32)>,
    pub(crate) accs: Vec<Acc>,
    /// It has issued a `wgmma`: its stores are checked for poison.
    pub(crate) used: bool,
}

/// A `wgmma` instruction of a warpgroup whose operands are registered.
pub(crate) struct Record {
    /// Its index among the warpgroup's instructions.
    pub(crate) n: u64,
    /// Its operation (the operand reads).
    pub(crate) op: u32,
    /// Threads that have issued it, and that have waited for it, of
    /// `present`.
    pub(crate) issued: u32,
    pub(crate) waited: u32,
    pub(crate) present: u32,
    /// Fibers waiting for the others to issue it.
    pub(crate) waiters: Vec<u32>,
}

/// A warpgroup's `wgmma` instructions in flight.
#[derive(Default)]
pub(crate) struct Warpgroup {
    pub(crate) records: Vec<Record>,
}

/// Registers the reads of op `op` on `chunks` (sorted).
pub(crate) fn add_readers(st: &mut AsyncState, op: u32, chunks: &[u32]) {
    for &c in chunks {
        st.chunks[c as usize].readers += 1;
    }
    st.ops[op as usize].refs += 1;
    st.reading.push(op);
}

/// Releases the reads of op `op` on `chunks`.
pub(crate) fn drop_readers(st: &mut AsyncState, op: u32, chunks: &[u32]) {
    for &c in chunks {
        let ch = &mut st.chunks[c as usize];
        ch.readers = ch.readers.saturating_sub(1);
    }
    st.reading.retain(|&r| r != op);
    st.unref(op);
}
