//! The race detector: every access through a kernel view
//! ([`DeviceSlice`](crate::DeviceSlice), [`DeviceSliceMut`](crate::DeviceSliceMut),
//! [`SharedSlice`](crate::SharedSlice)) is checked against a shadow record of
//! the 4-byte words it touches. Atomics, and the raw accessors
//! [`sim::mem`](super::mem), are not recorded.
//!
//! * **Shared memory** ([`SharedRace`], one per block): between two barriers,
//!   a word written by one thread and read or written by another is a race,
//!   unless both threads are lanes of one warp and took part together in a
//!   warp collective (shuffle, vote) after the first access: that orders
//!   them, as on Volta and later GPUs.
//! * **Global memory** ([`GlobalShadow`](super::state::global::GlobalShadow), one per launch): a word written by
//!   one block and read or written by another block of the same launch is a
//!   race; blocks of a launch are not ordered. Accesses of one block to its
//!   own words are not checked.
//!
//! The report names both threads (block and thread index), both source
//! lines and the interval: [`Fault::Race`].
//!
//! The shadow records are plain data that the block holds
//! ([`state`](super::state)); this file holds the checks, which need the
//! current block ([`block`](super::block)). The checks of a kernel view's access (asynchronous
//! hazards first, then races) are put together in [`access`](super::access).

use super::block::{Block, ThreadCtx};
use super::error::{Fault, Race, RaceAccess};
use super::state::global::Other;
use super::state::shared::{Access, SharedRace};
use crate::dim3::Dim3;
use std::boxed::Box;
use std::panic::Location;
use std::string::ToString;

/// Records a shared-memory access of `size` bytes at byte offset `off` of
/// the block's shared memory by thread `t`, for the race detector only (an
/// asynchronous copy's write on behalf of its thread); returns the race.
#[inline]
pub(crate) fn record_shared(
    t: &ThreadCtx,
    b: &Block<'_>,
    off: usize,
    size: usize,
    write: bool,
    loc: &'static Location<'static>,
) -> Option<Fault> {
    let r = b.race.as_ref()?;
    let lane = (t.rank % 32) as usize;
    let warp = b.warps[(t.rank / 32) as usize].borrow();
    for word in off / 4..=(off + size.max(1) - 1) / 4 {
        if let Err(other) = r.access(word, t.rank, write, loc, &warp.last, &warp.joint[lane]) {
            return Some(shared_race(t, b, r, word, other, write, loc));
        }
    }
    None
}

/// Records a global-memory write of `size` bytes at `addr` made on behalf
/// of thread `rank` of `b` (a TMA store landing, possibly outside the
/// thread); a race is recorded as the launch's fault.
pub(crate) fn global_write_by(
    b: &Block<'_>,
    rank: u32,
    addr: usize,
    size: usize,
    loc: &'static Location<'static>,
) {
    let Some(g) = b.launch.global.as_ref() else {
        return;
    };
    let me = b.id + 1;
    for word in addr / 4..=(addr + size.max(1) - 1) / 4 {
        let shadow = b.gcache.word(g, word);
        if let Err(other) = shadow.access(me, true, rank, loc) {
            let thread = b.thread_of(rank);
            let fault = global_race_at(b, thread, other, addr, addr, true, loc);
            b.record(thread, fault, Some(loc.to_string()));
            return;
        }
    }
}

/// The race check of a shared-memory access of `size` bytes at byte
/// offset `off` by thread `t` of `b`, when the detector is on.
#[inline]
pub(crate) fn shared_check(
    t: &ThreadCtx,
    b: &Block<'_>,
    off: usize,
    size: usize,
    write: bool,
    loc: &'static Location<'static>,
) -> Result<(), Fault> {
    match record_shared(t, b, off, size, write, loc) {
        Some(f) => Err(f),
        None => Ok(()),
    }
}

#[cold]
fn shared_race(
    t: &ThreadCtx,
    b: &Block<'_>,
    r: &SharedRace,
    word: usize,
    other: Access,
    write: bool,
    loc: &'static Location<'static>,
) -> Fault {
    Fault::Race(Box::new(Race {
        space: "shared memory",
        word: std::format!("word {word} (byte offset {})", word * 4),
        first: RaceAccess {
            block: b.idx,
            thread: b.thread_of(other.rank as u32),
            write: other.write,
            location: other.loc.map_or_else(Default::default, |l| l.to_string()),
        },
        second: RaceAccess {
            block: b.idx,
            thread: t.thread_idx,
            write,
            location: loc.to_string(),
        },
        interval: r.interval(),
    }))
}

/// The race check of a global-memory access of `size` bytes at `addr`
/// (element `index` of its view) by thread `t`: a word another block of
/// the launch wrote (or, for a write, touched) is a race.
#[inline]
pub(crate) fn global_check(
    t: &ThreadCtx,
    b: &Block<'_>,
    addr: usize,
    size: usize,
    index: usize,
    write: bool,
    loc: &'static Location<'static>,
) -> Result<(), Fault> {
    if let Some(g) = b.launch.global.as_ref() {
        let me = b.id + 1;
        for word in addr / 4..=(addr + size.max(1) - 1) / 4 {
            let shadow = b.gcache.word(g, word);
            if let Err(other) = shadow.access(me, write, t.rank, loc) {
                return Err(global_race(t, b, other, addr, index, write, loc));
            }
        }
    }
    Ok(())
}

#[cold]
fn global_race(
    t: &ThreadCtx,
    b: &Block<'_>,
    other: Other,
    addr: usize,
    index: usize,
    write: bool,
    loc: &'static Location<'static>,
) -> Fault {
    global_race_at(b, t.thread_idx, other, addr, index, write, loc)
}

#[cold]
fn global_race_at(
    b: &Block<'_>,
    thread: Dim3,
    other: Other,
    addr: usize,
    index: usize,
    write: bool,
    loc: &'static Location<'static>,
) -> Fault {
    let spec = b.launch.spec;
    let (gx, gy) = (spec.grid.x as u64, spec.grid.y as u64);
    let ob = other.block;
    let bd = spec.block;
    let first = RaceAccess {
        block: Dim3::new(
            (ob % gx) as u32,
            ((ob / gx) % gy) as u32,
            (ob / (gx * gy)) as u32,
        ),
        thread: other.rank.map_or_else(Dim3::default, |r| {
            Dim3::new(r % bd.x, (r / bd.x) % bd.y, r / (bd.x * bd.y))
        }),
        write: other.write,
        location: other
            .loc
            .map_or_else(|| "(line not recorded)".into(), |l| l.to_string()),
    };
    Fault::Race(Box::new(Race {
        space: "global memory",
        word: std::format!("element {index} (address {addr:#x})"),
        first,
        second: RaceAccess {
            block: b.idx,
            thread,
            write,
            location: loc.to_string(),
        },
        interval: "in one launch: the blocks of a launch run in no fixed order (write to \
                   another buffer, or split the work into two launches)"
            .into(),
    }))
}
