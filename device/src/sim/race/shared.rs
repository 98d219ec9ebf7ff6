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
    writer: Access,
    readers: [Access; 2],
}

const FRESH: Word = Word {
    interval: 0,
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
}

impl SharedRace {
    /// A new block with `bytes` of shared memory: a fresh interval.
    pub(crate) fn start_block(&mut self, bytes: usize) {
        let words = self.words.get_mut();
        let n = bytes.div_ceil(4);
        if words.len() < n {
            words.resize(n, FRESH);
        }
        self.interval.set(next_tick());
        self.site.set(None);
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
            *w = Word { interval, ..FRESH };
        }
        let me = rank as u16;
        let warp = rank / 32;
        let conflicts = |a: &Access| {
            a.rank != NONE
                && a.rank != me
                && !(a.rank as u32 / 32 == warp && joint[a.rank as usize % 32] > a.clock)
        };
        if conflicts(&w.writer) {
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
            w.readers = [EMPTY; 2];
        } else if w.writer.rank != me {
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
