//! Shared-memory race detection within a block: one shadow record per
//! 4-byte word, valid for one barrier interval.
//!
//! A record keeps the last writer and up to two readers of the word in the
//! current interval (thread, source line, and the thread's warp-collective
//! clock at the time). A write conflicts with the writer and the readers, a
//! read with the writer, unless the other access is the same thread's or is
//! ordered by a warp collective: lanes `a` and `b` of one warp are ordered
//! when the last collective both took part in (`joint[b][a]`) came after
//! `a`'s access (whose clock was `a`'s last collective then). A write
//! forgets the readers it was checked against. Records are tagged with the
//! interval (a clock value), so a barrier costs one increment, not a clear.
//!
//! The last writer outlives its interval (tagged with the interval of the
//! write): the asynchronous proxy's readers (`wgmma`, TMA stores) ask who
//! wrote a word last and whether that thread executed a
//! `fence.proxy.async` since ([`SharedRace::unfenced_write`]).

use core::cell::{Cell, RefCell};
use std::format;
use std::panic::Location;
use std::string::String;
use std::vec::Vec;

std::thread_local! {
    /// The clock of this OS thread: intervals and warp collectives take the
    /// next value, so a value is never reused on this thread.
    static TICK: Cell<u64> = const { Cell::new(0) };
}

fn next_tick() -> u64 {
    TICK.with(|t| {
        let v = t.get() + 1;
        t.set(v);
        v
    })
}

const NONE: u16 = u16::MAX;

/// One access in a shadow record.
#[derive(Clone, Copy)]
pub(crate) struct Access {
    /// Thread rank in the block; `NONE` for no access.
    pub(crate) rank: u16,
    /// The thread's last warp collective when it made the access.
    clock: u64,
    pub(crate) write: bool,
    pub(crate) loc: Option<&'static Location<'static>>,
}

const EMPTY: Access = Access {
    rank: NONE,
    clock: 0,
    write: false,
    loc: None,
};

#[derive(Clone, Copy)]
struct Word {
    interval: u64,
    /// The interval of the last write (the writer stays after it).
    written: u64,
    writer: Access,
    readers: [Access; 2],
}

const FRESH: Word = Word {
    interval: 0,
    written: 0,
    writer: EMPTY,
    readers: [EMPTY; 2],
};

/// The shadow of one block's shared memory.
#[derive(Default)]
pub(crate) struct SharedRace {
    words: RefCell<Vec<Word>>,
    interval: Cell<u64>,
    /// The barrier that opened the current interval (`None`: the block's start).
    site: Cell<Option<&'static Location<'static>>>,
    /// The interval that started the block (earlier writers are another
    /// block's).
    start: Cell<u64>,
    /// Per thread: the interval of its last `fence.proxy.async`.
    fences: RefCell<Vec<u64>>,
}

impl SharedRace {
    /// A new block of `threads` threads with `bytes` of shared memory: a
    /// fresh interval.
    pub(crate) fn start_block(&mut self, bytes: usize, threads: usize) {
        let words = self.words.get_mut();
        let n = bytes.div_ceil(4);
        if words.len() < n {
            words.resize(n, FRESH);
        }
        let fences = self.fences.get_mut();
        fences.clear();
        fences.resize(threads, 0);
        let now = next_tick();
        self.interval.set(now);
        self.start.set(now);
        self.site.set(None);
    }

    /// Thread `rank` executed `fence.proxy.async`: its writes so far are
    /// visible to the asynchronous proxy.
    pub(crate) fn proxy_fence(&self, rank: u32) {
        if let Some(f) = self.fences.borrow_mut().get_mut(rank as usize) {
            *f = self.interval.get();
        }
    }

    /// The last write of `word` in this block, when the thread that made
    /// it has executed no `fence.proxy.async` since (in the interval of the
    /// write or a later one): its rank and line. A fence earlier in the
    /// same interval than the write counts too (the record keeps intervals,
    /// not instants).
    pub(crate) fn unfenced_write(&self, word: usize) -> Option<(u32, &'static Location<'static>)> {
        let words = self.words.borrow();
        let w = words.get(word)?;
        if w.writer.rank == NONE || w.written < self.start.get() {
            return None;
        }
        let fenced = self.fences.borrow().get(w.writer.rank as usize).copied()?;
        if fenced >= w.written {
            return None;
        }
        Some((w.writer.rank as u32, w.writer.loc?))
    }

    /// The clock now (every collective of this block will be later).
    pub(crate) fn tick(&self) -> u64 {
        self.interval.get()
    }

    /// A new id for a warp collective.
    pub(crate) fn next_tick(&self) -> u64 {
        next_tick()
    }

    /// A barrier at `site` released the block: a new interval.
    pub(crate) fn barrier(&self, site: &'static Location<'static>) {
        self.interval.set(next_tick());
        self.site.set(Some(site));
    }

    /// The current interval, for a report.
    pub(crate) fn interval(&self) -> String {
        let start = match self.site.get() {
            None => String::from("after the start of the block, before its first barrier"),
            Some(s) => format!("after the barrier at {s}, before the next one"),
        };
        format!("{start}, with no barrier or warp collective of both threads between them")
    }

    /// Checks and records an access to `word` by thread `rank`. `last` holds
    /// the last collective of each lane of its warp, `joint[a]` the last
    /// collective the thread took part in with lane `a`. Returns the
    /// conflicting earlier access.
    pub(crate) fn access(
        &self,
        word: usize,
        rank: u32,
        write: bool,
        loc: &'static Location<'static>,
        last: &[u64; 32],
        joint: &[u64; 32],
    ) -> Result<(), Access> {
        let mut words = self.words.borrow_mut();
        let Some(w) = words.get_mut(word) else {
            // Outside the block's shared memory: the bounds check reports it.
            return Ok(());
        };
        let interval = self.interval.get();
        if w.interval != interval {
            w.interval = interval;
            w.readers = [EMPTY; 2];
        }
        let me = rank as u16;
        let warp = rank / 32;
        let conflicts = |a: &Access| {
            a.rank != NONE
                && a.rank != me
                && !(a.rank as u32 / 32 == warp && joint[a.rank as usize % 32] > a.clock)
        };
        if w.written == interval && conflicts(&w.writer) {
            return Err(w.writer);
        }
        let mine = Access {
            rank: me,
            clock: last[rank as usize % 32],
            write,
            loc: Some(loc),
        };
        if write {
            for r in &w.readers {
                if conflicts(r) {
                    return Err(*r);
                }
            }
            w.writer = mine;
            w.written = interval;
            w.readers = [EMPTY; 2];
        } else if w.written != interval || w.writer.rank != me {
            // Keep the first reader and the latest other one; a reader
            // already recorded only moves its clock and line forward.
            let slot = if w.readers[0].rank == NONE || w.readers[0].rank == me {
                0
            } else {
                1
            };
            w.readers[slot] = mine;
        }
        Ok(())
    }
}
