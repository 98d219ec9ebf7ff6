//! `cp.async` (PTX ISA 9.7.9.25.3): 16-byte copies from global to shared
//! memory, grouped by `cp.async.commit_group` and completed by
//! `cp.async.wait_group N` (all but the `N` most recent groups of the
//! thread).
//!
//! A copy is in flight from its issue until a wait of its own thread
//! covers its group. Until then its 16 destination bytes belong to it: any
//! ordinary access to them, by any thread, is an error, and so is another
//! copy or TMA load into them; a write of its source by its own thread is
//! an error too. At the covering wait it is a write of the issuing thread
//! for the race detector (another thread needs a barrier after that wait
//! before it reads).

use super::{
    AsyncState, CHUNK, OpKind, check_writer, defer, hazard, issue_op, overwrite_detail, state,
};
use crate::sim::block::{self, Block, ThreadCtx};
use crate::sim::error::Fault;
use crate::sim::race;
use std::format;
use std::panic::Location;

/// Issues a copy of 16 bytes from `src` (host address of the simulated
/// global memory; none when `!valid`) to the shared-memory element at host
/// address `to`.
pub(crate) fn issue(to: usize, src: usize, valid: bool, loc: &'static Location<'static>) {
    issue_op(loc, |t, b| {
        let dst = to.wrapping_sub(b.shared_base as usize);
        let chunk = dst / CHUNK;
        let mut st = state(b);
        if chunk >= st.chunks.len() {
            return None; // the bounds check of the view reported it
        }
        if let Some(f) = check_target(b, &st, chunk, t.rank, dst, "a cp.async into it") {
            return Some(f);
        }
        let ta = &st.threads[t.rank as usize];
        let group = ta.committed;
        let op = st.push(
            OpKind::Copy {
                dst: dst as u32,
                src,
                valid,
                group,
                landed: false,
            },
            t.rank,
            loc,
        );
        st.set_writer(chunk, op);
        st.threads[t.rank as usize].copies.push_back(op);
        if !defer(b, st, op) {
            land_copy(b, op);
        }
        // The copy may write its destination from now on: a write for the
        // race detector, against reads of other threads in this interval.
        race::record_shared(t, b, dst, CHUNK, true, loc)
    });
}

/// Whether an asynchronous write into `chunk` (a copy or a TMA load) may
/// start: no other asynchronous write in flight there, no asynchronous
/// read in flight, and a TMA destination's phase seen by this thread.
pub(crate) fn check_target(
    b: &Block<'_>,
    st: &AsyncState,
    chunk: usize,
    rank: u32,
    off: usize,
    what: &str,
) -> Option<Fault> {
    let ch = st.chunks[chunk];
    if ch.writer != 0 {
        let w = ch.writer - 1;
        match st.ops[w as usize].kind {
            // A landed TMA destination may be refilled by whoever issues
            // the next load (the consumers' release is the empty barrier's
            // business, checked through the readers below).
            OpKind::TmaLoad { phase: Some(_), .. } => {}
            _ => {
                if let Some(f) = check_writer(b, st, w, rank, off, true, what) {
                    return Some(f);
                }
            }
        }
    }
    if ch.readers > 0
        && let Some(r) = super::reader_conflict(st, chunk as u32, rank)
    {
        let op = &st.ops[r as usize];
        return Some(hazard(b, op, overwrite_detail(b, st, op, off, rank)));
    }
    None
}

/// Moves copy `i`'s bytes (the source as it is now).
pub(crate) fn land_copy(b: &Block<'_>, i: u32) {
    let mut st = b.asyncs.borrow_mut();
    let OpKind::Copy {
        dst,
        src,
        valid,
        landed,
        ..
    } = &mut st.ops[i as usize].kind
    else {
        return;
    };
    if *landed {
        return;
    }
    *landed = true;
    let (dst, src, valid) = (*dst as usize, *src, *valid);
    drop(st);
    let base = b.shared_base;
    for w in 0..CHUNK / 4 {
        let v: u32 = if valid {
            // SAFETY: the issuing view checked that the 16 source bytes lie
            // inside a live buffer and are 16-byte aligned; global memory
            // outlives the launch.
            unsafe { crate::sim::mem::read((src + 4 * w) as *const u32) }
        } else {
            0
        };
        // SAFETY: `dst` is a 16-byte aligned element of a view inside the
        // block's shared memory (checked at issue).
        unsafe { crate::sim::mem::write(base.add(dst + 4 * w) as *mut u32, v) };
    }
}

/// `cp.async.commit_group`.
pub(crate) fn commit() {
    block::with_block(|t, b| {
        if !b.async_on.get() {
            // No copy yet: an empty group still counts.
            let _ = state(b);
        }
        let mut st = b.asyncs.borrow_mut();
        st.threads[t.rank as usize].committed += 1;
        st.tick += 1;
    });
    block::maybe_preempt();
}

/// `cp.async.wait_group n`: completes the copies of every group but the
/// `n` most recent of the thread.
pub(crate) fn wait(n: u32, loc: &'static Location<'static>) {
    let fault = block::with_block(|t, b| -> Option<Fault> {
        if !b.async_on.get() {
            return None;
        }
        complete(t, b, n, loc)
    });
    if let Some(f) = fault {
        block::fail_at(f, loc)
    }
    block::maybe_preempt();
}

/// Completes the copies of `t` that `wait_group n` covers; returns a race
/// of their landing (a write of the thread) with another thread's access.
fn complete(
    t: &ThreadCtx,
    b: &Block<'_>,
    n: u32,
    loc: &'static Location<'static>,
) -> Option<Fault> {
    let done: std::vec::Vec<u32> = {
        let mut st = b.asyncs.borrow_mut();
        let st = &mut *st;
        let ta = &mut st.threads[t.rank as usize];
        ta.last_wait = Some((loc, n));
        let limit = ta.committed.saturating_sub(n);
        let mut done = std::vec::Vec::new();
        while let Some(&op) = ta.copies.front() {
            let group = match st.ops[op as usize].kind {
                OpKind::Copy { group, .. } => group,
                _ => u32::MAX,
            };
            if group >= limit {
                break;
            }
            ta.copies.pop_front();
            done.push(op);
        }
        st.tick += 1;
        done
    };
    let mut fault = None;
    for op in done {
        super::land(b, op);
        let (dst, issued) = {
            let mut st = b.asyncs.borrow_mut();
            let (dst, issued) = match st.ops[op as usize].kind {
                OpKind::Copy { dst, .. } => (dst as usize, st.ops[op as usize].loc),
                _ => continue,
            };
            st.clear_writer(dst / CHUNK, op);
            (dst, issued)
        };
        if fault.is_none() {
            // The bytes are this thread's write from here on.
            fault = race::record_shared(t, b, dst, CHUNK, true, issued);
        }
    }
    fault
}

/// A thread ended: its copies land (the hardware completes them).
pub(crate) fn exit(b: &Block<'_>, rank: u32) {
    let ops: std::vec::Vec<u32> = {
        let mut st = b.asyncs.borrow_mut();
        st.threads[rank as usize].copies.drain(..).collect()
    };
    for op in ops {
        super::land(b, op);
        let mut st = b.asyncs.borrow_mut();
        if let OpKind::Copy { dst, .. } = st.ops[op as usize].kind {
            st.clear_writer(dst as usize / CHUNK, op);
        }
    }
}

/// A global write by thread `rank` of `size` bytes at `addr`: an error when
/// it overwrites the source of one of its own copies in flight.
pub(crate) fn source_write(b: &Block<'_>, rank: u32, addr: usize, size: usize) -> Option<Fault> {
    let st = b.asyncs.borrow();
    let ta = st.threads.get(rank as usize)?;
    for &op in &ta.copies {
        let o = &st.ops[op as usize];
        if let OpKind::Copy {
            src,
            valid: true,
            group,
            ..
        } = o.kind
            && addr < src + CHUNK
            && src < addr + size.max(1)
        {
            return Some(hazard(
                b,
                o,
                format!(
                    "global memory at {addr:#x} written while this thread's cp.async copy still \
                     reads it: issued at {} in group {group}, not yet covered by a \
                     wait_async_copies; wait before writing its source",
                    o.loc
                ),
            ));
        }
    }
    None
}
