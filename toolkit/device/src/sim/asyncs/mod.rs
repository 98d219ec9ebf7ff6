//! The asynchronous operations of the simulator: `cp.async` with its
//! commit groups ([`copy`]), mbarriers with phases and transaction counts
//! ([`mbar`]), TMA loads and stores ([`tma`]) and `wgmma` groups
//! ([`wgmma`]), each in flight from its issue until the wait that the PTX
//! ISA says completes it.
//!
//! # What is tracked
//! A block gets an [`AsyncState`] at its first asynchronous operation; a
//! block that issues none pays one flag test per shared-memory access.
//! From then on every 16-byte chunk of its shared memory has a
//! [`Chunk`](super::state::asyncs::Chunk):
//! * the asynchronous write that owns it: a `cp.async` copy (in flight
//!   until a `wait_async_copies` of its thread covers its group), or a TMA
//!   load (in flight until it lands, then tagged with the mbarrier phase
//!   its bytes completed);
//! * the asynchronous reads in flight on it: `wgmma` operands (until every
//!   thread of the warpgroup has waited for the group) and TMA store
//!   sources (until the issuing thread's `bulk_wait_group_read`).
//!
//! An ordinary access (through a `SharedSlice`) to a chunk that a copy
//! still writes, or to a TMA destination whose phase this thread has not
//! seen complete, and a write to a chunk that an asynchronous read still
//! reads, stop the launch with [`Fault::Async`] naming the operation (its
//! thread, line and group) and the access. The landing of a copy is a
//! write by its thread for the shared-memory race detector, at the wait
//! that completes it, so another thread that reads it without a barrier
//! after that wait races with it.
//!
//! # When a copy lands
//! In order (`Schedule::InOrder`) every copy lands at
//! its issue: the bytes move then, and the checks above still treat the
//! destination as in flight until the wait. A random schedule moves each
//! landing to a random later point of its window (up to the covering wait,
//! or for a TMA load until some thread would otherwise wait forever), so a
//! program whose result depends on when a copy lands shows it.

pub(crate) mod copy;
pub(crate) mod mbar;
pub(crate) mod tma;
pub(crate) mod wgmma;

#[cfg(test)]
mod tests;

use super::block::Block;
use super::error::{AsyncHazard, Fault};
pub(crate) use super::state::asyncs::{AsyncState, CHUNK, Op, OpKind, Reads};
use std::boxed::Box;
use std::format;
use std::panic::Location;
use std::string::{String, ToString};
use std::vec::Vec;

/// The block's asynchronous state, created at its first asynchronous
/// operation.
pub(crate) fn state<'b>(b: &'b Block<'_>) -> core::cell::RefMut<'b, AsyncState> {
    if !b.async_on.get() {
        let mut s = b.asyncs.borrow_mut();
        s.reset(b.launch.spec.shared_bytes, b.total as usize);
        drop(s);
        b.async_on.set(true);
    }
    b.asyncs.borrow_mut()
}

/// The block (its grid index) whose thread issued `op` of block `b`: the
/// issuer of a TMA multicast from a peer, `b` otherwise.
fn issuing_block(b: &Block<'_>, op: &Op) -> crate::dim3::Dim3 {
    match op.kind {
        OpKind::TmaLoad {
            multicast: Some(m), ..
        } if m.issuer != b.crank => b.cluster().index_of(m.issuer),
        _ => b.idx,
    }
}

/// `who` for the issuer of `op`: "thread T of block B" when a peer's
/// multicast, "this thread" or "thread T" otherwise.
fn issuer(b: &Block<'_>, op: &Op, me: u32) -> String {
    let from = issuing_block(b, op);
    if from == b.idx {
        who(b, op.rank, me)
    } else {
        format!("thread {} of block {from}", b.thread_of(op.rank))
    }
}

/// A hazard report about op `op` of the block.
pub(crate) fn hazard(b: &Block<'_>, op: &Op, detail: String) -> Fault {
    Fault::Async(Box::new(AsyncHazard {
        op: op.name(),
        block: issuing_block(b, op),
        thread: b.thread_of(op.rank),
        location: op.loc.to_string(),
        detail,
    }))
}

/// A hazard report with no operation behind it (an mbarrier misuse).
pub(crate) fn misuse(
    b: &Block<'_>,
    op: &'static str,
    rank: u32,
    loc: &'static Location<'static>,
    detail: String,
) -> Fault {
    Fault::Async(Box::new(AsyncHazard {
        op,
        block: b.idx,
        thread: b.thread_of(rank),
        location: loc.to_string(),
        detail,
    }))
}

/// Issues an asynchronous operation: runs `f` on the current thread's block
/// (unwinding when the launch has aborted), fails at `loc` with the fault it
/// returns, then lets a random schedule switch threads.
pub(crate) fn issue_op(
    loc: &'static Location<'static>,
    f: impl FnOnce(&super::block::ThreadCtx, &Block<'static>) -> Option<Fault>,
) {
    let fault = super::block::with_block(|t, b| {
        if b.is_aborted() {
            super::block::unwind()
        }
        f(t, b)
    });
    if let Some(f) = fault {
        super::block::fail_at(f, loc)
    }
    super::block::maybe_preempt();
}

/// `thread T of block B` for reports: "this thread" when it is `me`.
pub(crate) fn who(b: &Block<'_>, rank: u32, me: u32) -> String {
    if rank == me {
        "this thread".into()
    } else {
        format!("thread {}", b.thread_of(rank))
    }
}

/// What an ordinary shared-memory access of `size` bytes at byte offset
/// `off` by thread `rank` finds: `None` when it may go on.
pub(crate) fn generic_access(
    b: &Block<'_>,
    rank: u32,
    off: usize,
    size: usize,
    write: bool,
) -> Option<Fault> {
    let mut st = b.asyncs.borrow_mut();
    let first = off / CHUNK;
    let last = (off + size.max(1) - 1) / CHUNK;
    for c in first..=last.min(st.chunks.len().saturating_sub(1)) {
        let ch = st.chunks[c];
        if ch.writer == 0 && (ch.readers == 0 || !write) {
            continue;
        }
        if ch.writer != 0 {
            let w = ch.writer - 1;
            if let Some(f) = check_writer(b, &st, w, rank, off, write, "") {
                return Some(f);
            }
            if write {
                // This thread saw the data land and now overwrites it: the
                // chunk is ordinary memory again.
                st.clear_writer(c, w);
            }
        }
        if write
            && ch.readers > 0
            && let Some(r) = reader_conflict(&st, c as u32, rank)
        {
            let op = &st.ops[r as usize];
            return Some(hazard(b, op, overwrite_detail(b, &st, op, off, rank)));
        }
    }
    None
}

/// Whether thread `rank` may touch a chunk that op `w` writes
/// asynchronously (`access` names the access for the report).
pub(crate) fn check_writer(
    b: &Block<'_>,
    st: &AsyncState,
    w: u32,
    rank: u32,
    off: usize,
    write: bool,
    access: &str,
) -> Option<Fault> {
    let op = &st.ops[w as usize];
    let verb = match (write, access) {
        (true, "") => String::from("written"),
        (false, "") => String::from("read"),
        (true, a) => format!("written ({a})"),
        (false, a) => format!("read ({a})"),
    };
    match &op.kind {
        OpKind::Copy { group, .. } => {
            let owner = &st.threads[op.rank as usize];
            let how = if *group >= owner.committed {
                "it was never committed (commit_async_copies closes its group)".to_string()
            } else {
                let newer = owner.committed - group - 1;
                let waited = match owner.last_wait {
                    Some((l, n)) => format!(
                        "; the thread's last wait, wait_async_copies::<{n}>() at {l}, leaves \
                         {n} group{} in flight",
                        if n == 1 { "" } else { "s" }
                    ),
                    None => String::from("; the thread has not waited yet"),
                };
                format!(
                    "{newer} newer group{} committed since, so a wait_async_copies with N <= \
                     {newer} covers it{waited}",
                    if newer == 1 { " was" } else { "s were" }
                )
            };
            let then = if op.rank == rank {
                "wait for it first"
            } else {
                "its thread must wait for it, then a sync_threads must come between"
            };
            Some(hazard(
                b,
                op,
                format!(
                    "shared memory byte {off} {verb} while a cp.async copy into it is still in \
                     flight: issued by {} at {} in group {group}, which no wait_async_copies has \
                     covered yet ({how}); {then}",
                    who(b, op.rank, rank),
                    op.loc
                ),
            ))
        }
        OpKind::TmaLoad {
            bar,
            phase,
            multicast,
            ..
        } => {
            let m = &st.bars[*bar as usize];
            let (name, by) = match multicast {
                Some(mc) => (
                    format!(
                        "TMA multicast (cta_mask {:#b}, a copy into this block)",
                        mc.mask
                    ),
                    issuer(b, op, rank),
                ),
                None => (String::from("TMA load"), who(b, op.rank, rank)),
            };
            match phase {
                None => Some(hazard(
                    b,
                    op,
                    format!(
                        "shared memory byte {off} {verb} while a {name} into it is still in \
                         flight: issued by {by} at {}, completing on the mbarrier at \
                         shared byte {} (phase {} in progress); wait for that phase first",
                        op.loc, m.addr, m.completed
                    ),
                )),
                Some(p) if st.seen(rank, *bar) <= *p => {
                    let seen = st.seen(rank, *bar);
                    let why = if multicast.is_some() && seen == *p && *p > 0 {
                        format!(
                            ": phase {} completed before these bytes landed, so the \
                             expect_tx of that phase counted fewer bytes than land in this \
                             block (every multicast whose mask holds this block completes \
                             its whole box here: expect the bytes of all of them)",
                            p - 1
                        )
                    } else {
                        mbar::last_wait_note(st, rank, *bar)
                    };
                    Some(hazard(
                        b,
                        op,
                        format!(
                            "shared memory byte {off} {verb} before this thread waited for the \
                             mbarrier phase that completes it: a {name} issued by {by} at {} \
                             landed in phase {p} of the mbarrier at shared byte {}, and this \
                             thread has seen {seen} phases of it complete{why}",
                            op.loc, m.addr,
                        ),
                    ))
                }
                Some(_) => None,
            }
        }
        _ => None,
    }
}

/// The chunks of `bytes` at shared offset `at`, checked for an
/// asynchronous read by thread `rank` (a TMA store's source or a `wgmma`
/// operand): nothing in flight writes them, TMA data among them was seen
/// complete by `rank`, and ordinary writes to them were fenced for the
/// asynchronous proxy. Returns the TMA loads whose data they hold.
pub(crate) fn check_async_read(
    b: &Block<'_>,
    st: &AsyncState,
    chunks: &[u32],
    rank: u32,
    op: &'static str,
    what: &str,
    loc: &'static Location<'static>,
) -> Result<Vec<u32>, Fault> {
    let mut sources: Vec<u32> = Vec::new();
    for &c in chunks {
        let ch = st.chunks[c as usize];
        if ch.writer != 0 {
            let w = ch.writer - 1;
            if let Some(f) = check_writer(b, st, w, rank, c as usize * CHUNK, false, what) {
                return Err(f);
            }
            if !sources.contains(&w) {
                sources.push(w);
            }
        } else if let Some(r) = &b.race {
            for word in c as usize * 4..c as usize * 4 + 4 {
                if let Some((wr, wl)) = r.unfenced_write(word) {
                    return Err(misuse(
                        b,
                        op,
                        rank,
                        loc,
                        format!(
                            "shared memory byte {} read by the asynchronous proxy ({what} issued \
                             by thread {} at {loc}) after an ordinary write by thread {} at {wl} \
                             with no fence.proxy.async of the writer in between: the \
                             asynchronous proxy may read the old bytes; call \
                             fence_proxy_async_shared() after the writes, before the barrier",
                            word * 4,
                            b.thread_of(rank),
                            b.thread_of(wr),
                        ),
                    ));
                }
            }
        }
    }
    Ok(sources)
}

/// The asynchronous read in flight on `chunk` that a write by thread
/// `rank` would overwrite: a TMA store not yet covered by its thread's
/// `bulk_wait_group_read`, or a `wgmma` that this thread (in its
/// warpgroup) has not waited for, or (outside it) that not every thread
/// of its warpgroup has waited for.
pub(crate) fn reader_conflict(st: &AsyncState, chunk: u32, rank: u32) -> Option<u32> {
    st.reading.iter().copied().find(|&op| {
        let o = &st.ops[op as usize];
        let reads = match &o.kind {
            OpKind::Wgmma { reads } => reads,
            OpKind::TmaStore { reads, .. } => reads,
            _ => return false,
        };
        if reads.chunks.binary_search(&chunk).is_err() {
            return false;
        }
        match &o.kind {
            OpKind::Wgmma { .. } => !wgmma::waited(st, o.rank, rank, op),
            _ => true,
        }
    })
}

/// The report of a write to shared memory that asynchronous read `op`
/// still reads.
pub(crate) fn overwrite_detail(
    b: &Block<'_>,
    st: &AsyncState,
    op: &Op,
    off: usize,
    rank: u32,
) -> String {
    match &op.kind {
        OpKind::Wgmma { reads } => format!(
            "shared memory byte {off} written while a wgmma still reads it as an operand: issued \
             by {} at {} in wgmma group {}, which no wgmma_wait_group has covered yet; wait for \
             it (and release the stage) first",
            who(b, op.rank, rank),
            op.loc,
            reads.group
        ),
        OpKind::TmaStore { reads, .. } => format!(
            "shared memory byte {off} written while a TMA store still reads it: issued by {} at \
             {} in bulk group {}; bulk_wait_group_read must cover it first",
            who(b, op.rank, rank),
            op.loc,
            reads.group
        ),
        _ => {
            let _ = st;
            format!(
                "shared memory byte {off} written while {} at {} uses it",
                op.name(),
                op.loc
            )
        }
    }
}

/// A block barrier released the block: mbarrier inits and observed
/// phases become visible to every thread.
pub(crate) fn on_barrier(b: &Block<'_>) {
    let mut st = b.asyncs.borrow_mut();
    st.barriers += 1;
    for m in &mut st.bars {
        m.published = m.published.max(m.max_seen);
    }
    st.tick += 1;
}

/// Thread `rank` of `b` returned from the kernel: its copies land, and a
/// `wgmma` still in flight is an error (its accumulators were never waited
/// for).
pub(crate) fn thread_exit(b: &Block<'_>, rank: u32) -> Option<Fault> {
    let fault = wgmma::exit_check(b, rank);
    copy::exit(b, rank);
    tma::exit(b, rank);
    fault
}

/// Lands the deferred operations that are due (or all of them with
/// `all`); returns whether any landed.
pub(crate) fn land_due(b: &Block<'_>, all: bool) -> bool {
    if !b.async_on.get() {
        return false;
    }
    let due: Vec<u32> = {
        let mut st = b.asyncs.borrow_mut();
        if st.deferred.is_empty() {
            return false;
        }
        st.tick += 1;
        let now = st.tick;
        let mut due = Vec::new();
        st.deferred.retain(|&(op, at)| {
            if all || at <= now {
                due.push(op);
                false
            } else {
                true
            }
        });
        due
    };
    let any = !due.is_empty();
    for op in due {
        land(b, op);
    }
    any
}

/// Lands op `i` now if it has not landed.
pub(crate) fn land(b: &Block<'_>, i: u32) {
    let kind = {
        let st = b.asyncs.borrow();
        match &st.ops[i as usize].kind {
            OpKind::Copy { landed: false, .. } => 1,
            OpKind::TmaLoad { phase: None, .. } => 2,
            OpKind::TmaStore { landed: false, .. } => 3,
            _ => 0,
        }
    };
    match kind {
        1 => copy::land_copy(b, i),
        2 => tma::land_load(b, i),
        3 => tma::land_store(b, i),
        _ => {}
    }
    b.asyncs.borrow_mut().deferred.retain(|&(op, _)| op != i);
}

/// Counts new asynchronous copy `op` as one of the block's asynchronous
/// events and releases the state `st`; returns whether the copy is deferred
/// (a random schedule only): one in four lands at its issue, one in four at
/// the last moment (the wait that covers it, or when every thread would
/// otherwise wait), the others after a random number (1 to 64) of the
/// block's asynchronous events.
pub(crate) fn defer(b: &Block<'_>, mut st: core::cell::RefMut<'_, AsyncState>, op: u32) -> bool {
    st.tick += 1;
    let Some(r) = b.random() else {
        return false;
    };
    let at = match r % 4 {
        0 => return false,
        1 => u64::MAX,
        _ => st.tick + 1 + (r >> 8) % 64,
    };
    st.deferred.push((op, at));
    true
}

/// `fence.proxy.async.shared::cta` by the current thread: its ordinary
/// shared-memory writes so far are visible to the asynchronous proxy
/// (recorded by the race detector's shadow, so only with race detection on).
pub(crate) fn proxy_fence() {
    super::block::try_with_block(|t, b| {
        if let Some(r) = &b.race {
            r.proxy_fence(t.rank);
        }
    });
}
