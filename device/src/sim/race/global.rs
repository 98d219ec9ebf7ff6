//! Global-memory race detection across the blocks of one launch.
//!
//! Blocks run in parallel on several OS threads, so the shadow is
//! concurrent: one `AtomicU64` per 4-byte word holds the block (index + 1)
//! that wrote it and up to two blocks that read it, 21 bits each, updated by
//! compare-and-swap; three `AtomicU32` beside it keep, for the report, the
//! thread and source line of each of those accesses. A write by block B
//! conflicts with a writer or reader other than B; a read by B with a
//! writer other than B. A second reader block is recorded so that a later
//! write by the first one is still caught.
//!
//! The shadow lives only for the launch, in pages of 4096 words allocated
//! when a page of memory is first touched (so it follows whatever buffers
//! the kernel reaches, registered or not); the launch frees them. Each block
//! finds its pages through a small cache, and takes the launch's lock only
//! on a miss.

use core::cell::Cell;
use std::boxed::Box;
use std::collections::HashMap;
use std::panic::Location;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::vec::Vec;

const BITS: u32 = 21;
const MASK: u64 = (1 << BITS) - 1;
/// Words per page (16 KiB of memory).
const PAGE_WORDS: usize = 4096;
/// Source lines a side record can name.
const MAX_LOCS: u32 = (1 << 22) - 1;

#[derive(Default)]
pub(crate) struct Word {
    /// writer | reader1 << 21 | reader2 << 42 (block index + 1, 0 = none).
    state: AtomicU64,
    /// (line id + 1) << 10 | thread rank, of the writer and the two readers.
    side: [AtomicU32; 3],
}

/// The other access of a conflict.
pub(crate) struct Other {
    /// Linear index of its block.
    pub(crate) block: u64,
    pub(crate) rank: Option<u32>,
    pub(crate) write: bool,
    pub(crate) loc: Option<&'static Location<'static>>,
}

impl Word {
    /// Checks and records an access by block `me` (index + 1).
    pub(crate) fn access(
        &self,
        me: u64,
        write: bool,
        rank: u32,
        loc: &'static Location<'static>,
    ) -> Result<(), Other> {
        let mut s = self.state.load(Relaxed);
        loop {
            let (w, r1, r2) = (s & MASK, (s >> BITS) & MASK, (s >> (2 * BITS)) & MASK);
            if w != 0 && w != me {
                return Err(self.other(w, 0, true));
            }
            let (new, slot) = if write {
                if r1 != 0 && r1 != me {
                    return Err(self.other(r1, 1, false));
                }
                if r2 != 0 && r2 != me {
                    return Err(self.other(r2, 2, false));
                }
                if w == me {
                    return Ok(());
                }
                (s | me, 0)
            } else if w == me || r1 == me || r2 == me {
                return Ok(());
            } else if r1 == 0 {
                (s | me << BITS, 1)
            } else if r2 == 0 {
                (s | me << (2 * BITS), 2)
            } else {
                // Two other blocks already read it: any write conflicts.
                return Ok(());
            };
            match self.state.compare_exchange_weak(s, new, Relaxed, Relaxed) {
                Ok(_) => {
                    self.side[slot].store(side(rank, loc), Relaxed);
                    return Ok(());
                }
                Err(now) => s = now,
            }
        }
    }

    fn other(&self, block: u64, slot: usize, write: bool) -> Other {
        // The other thread stores its side record right after its
        // compare-and-swap; give it a moment if it is not there yet.
        let mut v = self.side[slot].load(Relaxed);
        let mut spins = 0;
        while v == 0 && spins < 100_000 {
            std::thread::yield_now();
            v = self.side[slot].load(Relaxed);
            spins += 1;
        }
        Other {
            block: block - 1,
            rank: (v != 0).then_some(v & 0x3ff),
            write,
            loc: (v != 0).then(|| location(v >> 10)).flatten(),
        }
    }
}

/// The launch's shadow of global memory.
pub(crate) struct GlobalShadow {
    pages: Mutex<HashMap<usize, Box<[Word]>>>,
}

impl GlobalShadow {
    /// Blocks a launch may have for its global shadow (their indices + 1
    /// must fit in 21 bits); a larger grid runs without global race checks.
    pub(crate) const MAX_BLOCKS: u64 = MASK;

    pub(crate) fn new() -> Self {
        Self {
            pages: Mutex::new(HashMap::new()),
        }
    }

    fn page(&self, page: usize) -> *const Word {
        let mut pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        pages
            .entry(page)
            .or_insert_with(|| (0..PAGE_WORDS).map(|_| Word::default()).collect())
            .as_ptr()
    }
}

/// A block's cache of shadow pages (page number, first word).
pub(crate) struct GlobalCache {
    entries: [Cell<(usize, *const Word)>; 8],
}

impl Default for GlobalCache {
    fn default() -> Self {
        Self {
            entries: core::array::from_fn(|_| Cell::new((usize::MAX, core::ptr::null()))),
        }
    }
}

impl GlobalCache {
    /// The shadow of the word at byte address `4 * word`.
    pub(crate) fn word<'s>(&self, g: &'s GlobalShadow, word: usize) -> &'s Word {
        let page = word / PAGE_WORDS;
        let e = &self.entries[page % 8];
        let (p, base) = e.get();
        let base = if p == page {
            base
        } else {
            let b = g.page(page);
            e.set((page, b));
            b
        };
        // SAFETY: `base` points to a page of `PAGE_WORDS` words owned by `g`
        // (boxed, never moved or freed before `g` is dropped at the end of
        // the launch, and this cache belongs to a block of that launch), and
        // `word % PAGE_WORDS < PAGE_WORDS`.
        unsafe { &*base.add(word % PAGE_WORDS) }
    }
}

/// Source lines named by side records: id `i + 1` is `list[i]`.
struct Locations {
    list: Vec<&'static Location<'static>>,
    ids: Option<HashMap<usize, u32>>,
}

static LOCS: Mutex<Locations> = Mutex::new(Locations {
    list: Vec::new(),
    ids: None,
});

std::thread_local! {
    static LOC_CACHE: [Cell<(usize, u32)>; 32] =
        core::array::from_fn(|_| Cell::new((0, 0)));
}

/// Packs a side record: (line id + 1) << 10 | rank (0 when the line cannot
/// be named).
fn side(rank: u32, loc: &'static Location<'static>) -> u32 {
    let key = loc as *const Location<'static> as usize;
    let id = LOC_CACHE.with(|c| {
        let e = &c[(key >> 3) % 32];
        let (k, id) = e.get();
        if k == key {
            return id;
        }
        let mut l = LOCS.lock().unwrap_or_else(|e| e.into_inner());
        let Locations { list, ids } = &mut *l;
        let id = *ids
            .get_or_insert_with(HashMap::new)
            .entry(key)
            .or_insert_with(|| {
                list.push(loc);
                list.len() as u32
            });
        e.set((key, id));
        id
    });
    if id > MAX_LOCS {
        0
    } else {
        id << 10 | (rank & 0x3ff)
    }
}

fn location(id: u32) -> Option<&'static Location<'static>> {
    let l = LOCS.lock().unwrap_or_else(|e| e.into_inner());
    l.list.get((id as usize).checked_sub(1)?).copied()
}
