//! Global-memory race detection across the blocks of one launch.
//!
//! Blocks run in parallel on several OS threads, so the shadow is
//! concurrent: one `AtomicU64` per 4-byte word holds the block (index + 1)
//! that wrote it and up to two blocks that read it, 21 bits each, updated by
//! compare-and-swap; three more beside it keep, for the report, the thread
//! and source line of each of those accesses (32 bytes per word). A write by block B
//! conflicts with a writer or reader other than B; a read by B with a
//! writer other than B. A second reader block is recorded so that a later
//! write by the first one is still caught.
//!
//! The shadow lives only for the launch, in pages of 4096 words allocated
//! when a page of memory is first touched (so it follows whatever buffers
//! the kernel reaches, registered or not); the launch frees them, into a
//! small pool for the next launches. Each block finds its pages through a
//! small cache, and takes the launch's lock only on a miss.

use core::cell::Cell;
use std::boxed::Box;
use std::collections::HashMap;
use std::panic::Location;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::vec::Vec;

const BITS: u32 = 21;
const MASK: u64 = (1 << BITS) - 1;
/// Words per page (16 KiB of memory).
const PAGE_WORDS: usize = 4096;
/// A side record: the address of the access's `Location` (user-space
/// addresses fit in 54 bits) with the thread's rank in the 10 bits above.
const RANK_SHIFT: u32 = 54;

#[derive(Default)]
pub(crate) struct Word {
    /// writer | reader1 << 21 | reader2 << 42 (block index + 1, 0 = none).
    state: AtomicU64,
    /// Side records of the writer and the two readers (see [`side`]).
    side: [AtomicU64; 3],
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
        let loc = (v & ((1 << RANK_SHIFT) - 1)) as usize as *const Location<'static>;
        Other {
            block: block - 1,
            rank: (v != 0).then_some((v >> RANK_SHIFT) as u32),
            // SAFETY: a non-zero side record holds the address of a
            // `&'static Location` stored by `side` (user-space addresses
            // are below 2^54, so masking the rank off gives it back).
            loc: (v != 0).then(|| unsafe { &*loc }),
            write,
        }
    }
}

/// The launch's shadow of global memory.
pub(crate) struct GlobalShadow {
    pages: Mutex<HashMap<usize, Box<[Word]>, BuildPageHasher>>,
}

/// Pages kept for the next launches (cleared when taken), at most
/// [`POOL_PAGES`]: reusing them is cheaper than fresh, page-faulting memory.
static POOL: Mutex<Vec<Box<[Word]>>> = Mutex::new(Vec::new());
/// 256 pages of 128 KiB: 32 MiB.
const POOL_PAGES: usize = 256;

impl GlobalShadow {
    /// Blocks a launch may have for its global shadow (their indices + 1
    /// must fit in 21 bits); a larger grid runs without global race checks.
    pub(crate) const MAX_BLOCKS: u64 = MASK;

    pub(crate) fn new() -> Self {
        Self {
            pages: Mutex::new(HashMap::with_hasher(BuildPageHasher)),
        }
    }

    fn page(&self, page: usize) -> *const Word {
        let mut pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        pages
            .entry(page)
            .or_insert_with(|| {
                let pooled = POOL.lock().unwrap_or_else(|e| e.into_inner()).pop();
                match pooled {
                    Some(mut p) => {
                        for w in p.iter_mut() {
                            *w = Word::default();
                        }
                        p
                    }
                    None => (0..PAGE_WORDS).map(|_| Word::default()).collect(),
                }
            })
            .as_ptr()
    }
}

impl Drop for GlobalShadow {
    fn drop(&mut self) {
        let pages = self.pages.get_mut().unwrap_or_else(|e| e.into_inner());
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        for (_, p) in pages.drain() {
            if pool.len() >= POOL_PAGES {
                break;
            }
            pool.push(p);
        }
    }
}

/// Page numbers are spread enough to hash by one multiplication.
#[derive(Default, Clone, Copy)]
struct BuildPageHasher;

#[derive(Default)]
struct PageHasher(u64);

impl core::hash::BuildHasher for BuildPageHasher {
    type Hasher = PageHasher;
    fn build_hasher(&self) -> PageHasher {
        PageHasher(0)
    }
}

impl core::hash::Hasher for PageHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_usize(&mut self, v: usize) {
        self.0 = (v as u64 ^ self.0).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// Entries of a block's page cache.
const CACHE: usize = 64;

/// A block's cache of shadow pages (page number, first word).
pub(crate) struct GlobalCache {
    entries: [Cell<(usize, *const Word)>; CACHE],
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
    #[inline]
    pub(crate) fn word<'s>(&self, g: &'s GlobalShadow, word: usize) -> &'s Word {
        let page = word / PAGE_WORDS;
        let slot = (page as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - CACHE.ilog2());
        let e = &self.entries[slot as usize];
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

/// Packs a side record: the `Location`'s address, and `rank` above it (0
/// only for "not recorded").
fn side(rank: u32, loc: &'static Location<'static>) -> u64 {
    let addr = loc as *const Location<'static> as usize as u64;
    debug_assert!(addr < 1 << RANK_SHIFT);
    addr | (rank as u64 & 0x3ff) << RANK_SHIFT
}
