//! The race detector: every access through a kernel view
//! ([`DeviceSlice`](crate::DeviceSlice), [`DeviceSliceMut`](crate::DeviceSliceMut),
//! [`SharedSlice`](crate::SharedSlice)) is checked against a shadow record of
//! the 4-byte words it touches. Atomics, and the raw accessors
//! [`sim::mem`](super::mem), are not recorded.
//!
//! * **Shared memory** ([`shared::SharedRace`], one per block): between two barriers,
//!   a word written by one thread and read or written by another is a race,
//!   unless both threads are lanes of one warp and took part together in a
//!   warp collective (shuffle, vote) after the first access: that orders
//!   them, as on Volta and later GPUs.
//! * **Global memory** ([`global::GlobalShadow`], one per launch): a word written by
//!   one block and read or written by another block of the same launch is a
//!   race; blocks of a launch are not ordered. Accesses of one block to its
//!   own words are not checked.
//!
//! The report names both threads (block and thread index), both source
//! lines and the interval: [`Fault::Race`](super::Fault::Race).

pub(crate) mod global;
pub(crate) mod shared;

use super::error::{Fault, Race, RaceAccess};
use super::sched::{self, Block, ThreadCtx};
use crate::dim3::Dim3;
use global::Other;
use shared::{Access, SharedRace};
use std::boxed::Box;
use std::panic::Location;
use std::string::ToString;

/// Records a shared-memory access of `size` bytes at `addr` by the current
/// thread (from a [`SharedSlice`](crate::SharedSlice)); a race, or an
/// access to bytes an asynchronous operation still owns
/// ([`asyncs::generic_access`](super::asyncs::generic_access)), stops the
/// launch with [`Fault::Race`] or [`Fault::Async`](super::Fault::Async).
#[inline]
pub(crate) fn shared_access(
    addr: usize,
    size: usize,
    write: bool,
    loc: &'static Location<'static>,
) {
    let outcome = sched::try_with_block(|t, b| {
        let off = addr.wrapping_sub(b.shared_base as usize);
        if b.async_on.get()
            && let Some(f) = super::asyncs::generic_access(b, t.rank, off, size, write)
        {
            return Err(f);
        }
        if let Some(r) = b.race.as_ref() {
            let lane = (t.rank % 32) as usize;
            let warp = b.warps[(t.rank / 32) as usize].borrow();
            for word in off / 4..=(off + size.max(1) - 1) / 4 {
                if let Err(other) =
                    r.access(word, t.rank, write, loc, &warp.last, &warp.joint[lane])
                {
                    return Err(shared_race(t, b, r, word, other, write, loc));
                }
            }
        }
        Ok(b.preempts())
    });
    match outcome {
        Some(Ok(true)) => sched::maybe_preempt_access(),
        Some(Err(fault)) => sched::fail_at(fault, loc),
        _ => {}
    }
}

/// Records a shared-memory access of `size` bytes at byte offset `off` of
/// the block's shared memory by thread `t`, for the race detector only (an
/// asynchronous copy's write on behalf of its thread); returns the race.
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

/// Records a global-memory access of `size` bytes at `addr` (element
/// `index` of its view) by the current thread; a race with another block
/// stops the launch with [`Fault::Race`], and so does (with
/// [`Fault::Async`](super::Fault::Async)) a write of the source of one of
/// the thread's own `cp.async` copies in flight.
#[inline]
pub(crate) fn global_access(
    addr: usize,
    size: usize,
    index: usize,
    write: bool,
    loc: &'static Location<'static>,
) {
    let outcome = sched::try_with_block(|t, b| global_check(t, b, addr, size, index, write, loc));
    match outcome {
        Some(Ok(true)) => sched::maybe_preempt_access(),
        Some(Err(fault)) => sched::fail_at(fault, loc),
        _ => {}
    }
}

/// The checks of a global access: the thread's own `cp.async` sources in
/// flight (a write), then the race shadow; `Ok(true)` when a random
/// schedule interrupts the thread here.
#[inline]
fn global_check(
    t: &ThreadCtx,
    b: &Block<'_>,
    addr: usize,
    size: usize,
    index: usize,
    write: bool,
    loc: &'static Location<'static>,
) -> Result<bool, Fault> {
    if write
        && b.async_on.get()
        && let Some(f) = super::asyncs::copy::source_write(b, t.rank, addr, size)
    {
        return Err(f);
    }
    if let Some(g) = b.launch.global.as_ref() {
        let me = b.id + 1;
        for word in addr / 4..=(addr + size.max(1) - 1) / 4 {
            let shadow = b.gcache.word(g, word);
            if let Err(other) = shadow.access(me, write, t.rank, loc) {
                return Err(global_race(t, b, other, addr, index, write, loc));
            }
        }
    }
    Ok(b.preempts())
}

/// A global store of `v` at `p` (element `index` of its view) by the
/// current thread: the checks of [`global_access`], a check that `v` holds
/// no `wgmma` accumulator poison (in a block that issued a `wgmma`), then
/// the relaxed store.
///
/// # Safety
/// `p` valid for writes of `T` and aligned.
#[inline]
pub(crate) unsafe fn global_store<T: Copy>(
    p: *mut T,
    index: usize,
    v: T,
    loc: &'static Location<'static>,
) {
    let size = core::mem::size_of::<T>();
    let outcome = sched::try_with_block(|t, b| {
        let r = global_check(t, b, p as usize, size, index, true, loc);
        if r.is_ok()
            && b.async_on.get()
            && size.is_multiple_of(4)
            && core::mem::align_of::<T>() >= 4
        {
            // SAFETY: `T` is `Copy`, its size a multiple of 4 and its
            // alignment at least 4: its bytes read as whole `u32` words.
            let words =
                unsafe { core::slice::from_raw_parts(&v as *const T as *const u32, size / 4) };
            if let Some(f) =
                super::asyncs::wgmma::check_value(b, t.rank, words, "a global store writes")
            {
                return Err(f);
            }
        }
        r
    });
    match outcome {
        Some(Ok(true)) => sched::maybe_preempt_access(),
        Some(Err(fault)) => sched::fail_at(fault, loc),
        _ => {}
    }
    // SAFETY: forwarded from the caller.
    unsafe { super::mem::write(p, v) }
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
