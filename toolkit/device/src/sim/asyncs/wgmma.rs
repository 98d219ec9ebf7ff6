//! `wgmma` (PTX ISA 9.7.15.5-8): `wgmma.fence`, `wgmma.mma_async`,
//! `wgmma.commit_group`, `wgmma.wait_group N`.
//!
//! * **Operands.** Each `wgmma` instruction of a warpgroup reads its `A` and
//!   `B` tiles from shared memory from the moment all 128 threads have
//!   issued it until a `wgmma_wait_group` covers its group; a write to
//!   those bytes before is an error, and so is reading bytes that an
//!   asynchronous copy has not delivered (or that ordinary stores wrote
//!   with no `fence.proxy.async` since). The simulator registers the tiles
//!   once per warpgroup instruction (at its first thread). A wait that
//!   covers an instruction some threads of the warpgroup have not issued
//!   yet blocks until they do (the tensor core starts it only then), so a
//!   `wgmma` that not every thread of the warpgroup reaches is a deadlock
//!   report; the first wait after it releases the tiles.
//! * **Accumulators.** The simulator computes the product at the issue,
//!   keeps it aside and fills the accumulator array with poison: NaNs whose
//!   payload names the instruction. The `wgmma_wait_group` that covers the
//!   group writes the product into the array (after checking the poison is
//!   still there: an array written or moved meanwhile is an error). A
//!   poisoned value stored to global memory, packed by `pack_rn` or read by
//!   a TMA store is an error naming the `wgmma`: the accumulators were read
//!   before the wait. Further `wgmma` on an array in flight chain on the
//!   value kept aside, as the hardware does for one accumulator chain.
//! * **Fences.** A `wgmma` that starts a new accumulator chain (its array is
//!   not in flight) needs a `wgmma_fence` since the thread's last
//!   `wgmma_wait_group` (or its start).
//! * A thread that ends with a `wgmma` in flight is an error.

use super::{AsyncState, OpKind, Reads, check_async_read, check_writer, misuse, state, who};
use crate::sim::block::{self, Block};
use crate::sim::error::Fault;
use crate::sim::state::asyncs::{Acc, AccRecord, Record, add_readers, drop_readers};
use std::format;
use std::panic::Location;
use std::string::String;
use std::vec::Vec;

/// The payload of accumulator poison: a quiet NaN with these bits set, the
/// low 16 bits naming the record in [`AsyncState::accs`].
const POISON: u32 = 0x7FD5_0000;

fn poison(id: u32) -> f32 {
    f32::from_bits(POISON | (id & 0xFFFF))
}

/// The record a poison value names, if it is one.
fn poisoned(st: &AsyncState, bits: u32) -> Option<AccRecord> {
    if bits & 0xFFFF_0000 != POISON {
        return None;
    }
    st.accs.get((bits & 0xFFFF) as usize).copied()
}

/// The start of a `wgmma` by the current thread on the accumulators at
/// `d` (`len` f32): checks it, registers the warpgroup's operand reads
/// (`chunks` lists the shared-memory chunks of both operands), and returns
/// the accumulators' value to use (the chain's product when one is in
/// flight, else the array).
pub(crate) fn begin(
    d: &[f32],
    chunks: &dyn Fn() -> Vec<u32>,
    loc: &'static Location<'static>,
) -> Vec<f32> {
    let r = block::with_block(|t, b| -> Result<Vec<f32>, Fault> {
        let mut st = state(b);
        let rank = t.rank;
        let ptr = d.as_ptr() as usize;
        let tw = &st.threads[rank as usize].wg;
        let chained = tw.accs.iter().find(|a| a.ptr == ptr && a.pending);
        let input = match chained {
            Some(a) => a.vals.clone(),
            None => {
                if !tw.fenced {
                    return Err(misuse(
                        b,
                        "wgmma",
                        rank,
                        loc,
                        format!(
                            "a wgmma at {loc} starts an accumulator chain with no wgmma_fence \
                             since the thread's start or its last wgmma_wait_group: the fence \
                             orders the registers' earlier accesses before the tensor core's"
                        ),
                    ));
                }
                d.to_vec()
            }
        };
        // The warpgroup's instruction `n`: register its operand reads once.
        let n = st.threads[rank as usize].wg.issued;
        let wg = rank as usize / 128;
        let found = st.groups[wg].records.iter().position(|r| r.n == n);
        let op = match found {
            Some(i) => st.groups[wg].records[i].op,
            None => {
                let list = chunks();
                let sources = check_async_read(b, &st, &list, rank, "wgmma", "a wgmma", loc)?;
                let present = (b.total - (wg as u32) * 128).min(128);
                let group = st.threads[rank as usize].wg.committed;
                let op = st.push(
                    OpKind::Wgmma {
                        reads: Reads {
                            chunks: Vec::new(),
                            group,
                            sources,
                        },
                    },
                    rank,
                    loc,
                );
                add_readers(&mut st, op, &list);
                if let OpKind::Wgmma { reads } = &mut st.ops[op as usize].kind {
                    reads.chunks = list;
                }
                st.groups[wg].records.push(Record {
                    n,
                    op,
                    issued: 0,
                    waited: 0,
                    present,
                    waiters: Vec::new(),
                });
                op
            }
        };
        // This thread must have seen the data it reads delivered.
        let sources = match &st.ops[op as usize].kind {
            OpKind::Wgmma { reads } => reads.sources.clone(),
            _ => Vec::new(),
        };
        for w in sources {
            if let OpKind::TmaLoad { dst, .. } = st.ops[w as usize].kind
                && let Some(f) = check_writer(b, &st, w, rank, dst as usize, false, "a wgmma")
            {
                return Err(f);
            }
        }
        let group = st.threads[rank as usize].wg.committed;
        let tw = &mut st.threads[rank as usize].wg;
        tw.issued += 1;
        tw.used = true;
        tw.inflight.push_back((n, group));
        st.tick += 1;
        let mut wake = Vec::new();
        if let Some(r) = st.groups[wg].records.iter_mut().find(|r| r.n == n) {
            r.issued += 1;
            if r.issued >= r.present {
                wake = core::mem::take(&mut r.waiters);
            }
        }
        drop(st);
        for f in wake {
            b.wake(f);
        }
        Ok(input)
    });
    match r {
        Ok(v) => v,
        Err(f) => block::fail_at(f, loc),
    }
}

/// The end of the `wgmma` [`begin`] started: `out` is its product. Keeps
/// it aside and poisons the array `d`.
pub(crate) fn end(d: &mut [f32], out: &[f32], loc: &'static Location<'static>) {
    block::with_block(|t, b| {
        let mut st = b.asyncs.borrow_mut();
        let rank = t.rank;
        let group = st.threads[rank as usize].wg.committed;
        let id = st.accs.len() as u32 % 0x1_0000;
        let rec = AccRecord { rank, loc, group };
        if (id as usize) < st.accs.len() {
            st.accs[id as usize] = rec;
        } else {
            st.accs.push(rec);
        }
        let ptr = d.as_ptr() as usize;
        let tw = &mut st.threads[rank as usize].wg;
        let acc = match tw.accs.iter().position(|a| a.ptr == ptr) {
            Some(i) => &mut tw.accs[i],
            None => {
                tw.accs.push(Acc {
                    ptr,
                    len: d.len(),
                    vals: Vec::new(),
                    group,
                    id,
                    pending: true,
                });
                tw.accs.last_mut().expect("just pushed")
            }
        };
        acc.vals.clear();
        acc.vals.extend_from_slice(out);
        acc.len = d.len();
        acc.group = group;
        acc.id = id;
        acc.pending = true;
        let p = poison(id);
        for v in d.iter_mut() {
            *v = p;
        }
    });
    block::maybe_preempt();
}

/// `wgmma.fence`.
pub(crate) fn fence() {
    block::with_block(|t, b| {
        let mut st = state(b);
        st.threads[t.rank as usize].wg.fenced = true;
    });
}

/// `wgmma.commit_group`.
pub(crate) fn commit() {
    block::with_block(|t, b| {
        let mut st = state(b);
        st.threads[t.rank as usize].wg.committed += 1;
        st.tick += 1;
    });
}

/// `wgmma.wait_group n`: the groups of the thread but the `n` most recent
/// complete; their accumulators get their values, and their operands are
/// released. An instruction that other threads of the warpgroup have not
/// issued yet has not started: the thread waits for them.
pub(crate) fn wait(n: u32, loc: &'static Location<'static>) {
    loop {
        let r = block::with_block(|t, b| -> Result<bool, Fault> {
            if !b.async_on.get() {
                return Ok(true);
            }
            let mut st = b.asyncs.borrow_mut();
            let rank = t.rank;
            let limit = st.threads[rank as usize].wg.committed.saturating_sub(n);
            if let Some(i) = retire(&mut st, rank, limit) {
                // Instruction `i` of the warpgroup is not issued by all yet.
                let wg = rank as usize / 128;
                if let Some(r) = st.groups[wg].records.iter_mut().find(|r| r.n == i) {
                    r.waiters.push(t.fiber_id());
                }
                drop(st);
                block::suspend(t, b, block::Wait::Wgmma { site: loc, n: i });
                return Ok(false);
            }
            st.threads[rank as usize].wg.fenced = false;
            match writeback(b, &mut st, rank, limit, loc) {
                Some(f) => Err(f),
                None => Ok(true),
            }
        });
        match r {
            Ok(true) => break,
            Ok(false) => {}
            Err(f) => block::fail_at(f, loc),
        }
    }
    block::maybe_preempt();
}

/// Retires the thread's instructions of groups below `limit` (the whole
/// warpgroup has issued them: they are complete for this thread; their
/// operands are released once every thread of the warpgroup has waited);
/// returns the first one that not all have issued yet (the thread must
/// wait for the others).
fn retire(st: &mut AsyncState, rank: u32, limit: u32) -> Option<u64> {
    let wg = rank as usize / 128;
    loop {
        let &(n, group) = st.threads[rank as usize].wg.inflight.front()?;
        if group >= limit {
            return None;
        }
        if let Some(i) = st.groups[wg].records.iter().position(|r| r.n == n) {
            let r = &mut st.groups[wg].records[i];
            if r.issued < r.present {
                return Some(n);
            }
            r.waited += 1;
            if r.waited >= r.present {
                let op = r.op;
                st.groups[wg].records.swap_remove(i);
                let chunks = match &mut st.ops[op as usize].kind {
                    OpKind::Wgmma { reads } => core::mem::take(&mut reads.chunks),
                    _ => Vec::new(),
                };
                drop_readers(st, op, &chunks);
            }
        }
        st.threads[rank as usize].wg.inflight.pop_front();
    }
}

/// Whether thread `rank` has seen `wgmma` op `op` (issued by `issuer`)
/// complete: it is in the warpgroup and its own wait covered it.
pub(crate) fn waited(st: &AsyncState, issuer: u32, rank: u32, op: u32) -> bool {
    let wg = issuer as usize / 128;
    if rank as usize / 128 != wg {
        return false;
    }
    let Some(r) = st.groups[wg].records.iter().find(|r| r.op == op) else {
        return true;
    };
    let tw = &st.threads[rank as usize].wg;
    tw.issued > r.n && !tw.inflight.iter().any(|&(n, _)| n == r.n)
}

/// For a deadlock report: the threads of `rank`'s warpgroup that have not
/// issued its `wgmma` instruction `n`.
pub(crate) fn deadlock_note(
    b: &Block<'_>,
    rank: u32,
    site: &'static Location<'static>,
    n: u64,
) -> String {
    let st = b.asyncs.borrow();
    let wg = rank / 128;
    let missing: Vec<u32> = (wg * 128..((wg + 1) * 128).min(b.total))
        .filter(|&r| st.threads[r as usize].wg.issued <= n)
        .collect();
    let op = st.groups[wg as usize]
        .records
        .iter()
        .find(|r| r.n == n)
        .map(|r| st.ops[r.op as usize].loc);
    format!(
        "thread {} waits in wgmma_wait_group at {site} for the wgmma{} that {} thread(s) of its \
         warpgroup (the first: thread {}) have not issued: every thread of a warpgroup must \
         issue the same wgmma",
        b.thread_of(rank),
        op.map(|l| format!(" issued at {l}")).unwrap_or_default(),
        missing.len(),
        missing.first().map(|&r| b.thread_of(r)).unwrap_or_default()
    )
}

/// Writes the products of the thread's chains whose last group is below
/// `limit` into their arrays.
fn writeback(
    b: &Block<'_>,
    st: &mut AsyncState,
    rank: u32,
    limit: u32,
    loc: &'static Location<'static>,
) -> Option<Fault> {
    let accs = &mut st.threads[rank as usize].wg.accs;
    for a in accs.iter_mut() {
        if !a.pending || a.group >= limit {
            continue;
        }
        a.pending = false;
        let p = poison(a.id).to_bits();
        let base = a.ptr as *mut f32;
        // SAFETY: `ptr` is the accumulator array a `wgmma` of this thread
        // received as `&mut [f32; len]`, and the thread is still running:
        // by the wgmma contract the array stays where it is, untouched,
        // until this wait. The poison check below reads it first and writes
        // only when every element still holds the poison this simulator put
        // there (an array moved or reused meanwhile is reported instead);
        // the stack it lives on belongs to this thread's fiber for the
        // thread's whole run.
        let intact = (0..a.len).all(|i| unsafe { base.add(i).read_volatile() }.to_bits() == p);
        if !intact {
            let rec = st.accs[(a.id & 0xFFFF) as usize];
            return Some(misuse(
                b,
                "wgmma",
                rec.rank,
                rec.loc,
                format!(
                    "the accumulators of the wgmma issued at {} (group {}) were written, or the \
                     array moved, while it was in flight: nothing may touch them until the \
                     wgmma_wait_group that covers the group (this one, at {loc})",
                    rec.loc, rec.group
                ),
            ));
        }
        for (i, v) in a.vals.iter().enumerate().take(a.len) {
            // SAFETY: as above; `i < len`.
            unsafe { base.add(i).write_volatile(*v) };
        }
    }
    None
}

/// The thread at `rank` ended: a `wgmma` still in flight is an error.
pub(crate) fn exit_check(b: &Block<'_>, rank: u32) -> Option<Fault> {
    let mut st = b.asyncs.borrow_mut();
    let pending = st.threads[rank as usize]
        .wg
        .accs
        .iter()
        .find(|a| a.pending)
        .map(|a| st.accs[(a.id & 0xFFFF) as usize]);
    // The thread is done with what the warpgroup has fully issued; the
    // rest stays with the threads that still have it in flight.
    while retire(&mut st, rank, u32::MAX).is_some() {
        st.threads[rank as usize].wg.inflight.pop_front();
    }
    let rec = pending?;
    Some(misuse(
        b,
        "wgmma",
        rec.rank,
        rec.loc,
        format!(
            "the thread ended with a wgmma still in flight: issued at {} in group {}, never \
             covered by a wgmma_wait_group (wgmma_wait_group::<0>() must come before the \
             accumulators are read)",
            rec.loc, rec.group
        ),
    ))
}

/// An error when one of the 32-bit words of a value stored by `rank` is
/// accumulator poison: the accumulators were read before their wait.
pub(crate) fn check_value(b: &Block<'_>, rank: u32, words: &[u32], what: &str) -> Option<Fault> {
    let st = b.asyncs.borrow();
    if !st.threads.get(rank as usize).is_some_and(|t| t.wg.used) {
        return None;
    }
    for &w in words {
        if let Some(rec) = poisoned(&st, w) {
            return Some(misuse(
                b,
                "wgmma",
                rec.rank,
                rec.loc,
                format!(
                    "{what} an accumulator of the wgmma issued by {} at {} (group {}) before \
                     the wgmma_wait_group that covers its group: the value is not there yet \
                     (the simulator's poison NaN); wgmma_wait_group must come before the \
                     accumulators are read",
                    who(b, rec.rank, rank),
                    rec.loc,
                    rec.group
                ),
            ));
        }
    }
    None
}

/// Stops the launch when one of `words` (the bits of values the current
/// thread is about to use, `what` says how) is accumulator poison.
pub(crate) fn check_poison(words: &[u32], what: &str, loc: &'static Location<'static>) {
    let f = block::try_with_block(|t, b| {
        if !b.async_on.get() {
            return None;
        }
        check_value(b, t.rank, words, what)
    });
    if let Some(Some(f)) = f {
        block::fail_at(f, loc)
    }
}

/// For a TMA store of `bytes` at shared offset `src` by `rank`: an error
/// when the source holds accumulator poison.
pub(crate) fn poisoned_source(
    b: &Block<'_>,
    st: &AsyncState,
    src: usize,
    bytes: usize,
    rank: u32,
    loc: &'static Location<'static>,
) -> Option<Fault> {
    if st.accs.is_empty() {
        return None;
    }
    for off in (src..src + bytes).step_by(4) {
        // SAFETY: the box lies in the block's shared memory (checked by the
        // caller) and `off` is 4-byte aligned (the box is 128-aligned).
        let w: u32 = unsafe { crate::sim::mem::read(b.shared_base.add(off) as *const u32) };
        if let Some(rec) = poisoned(st, w) {
            return Some(misuse(
                b,
                "wgmma",
                rec.rank,
                rec.loc,
                format!(
                    "a TMA store issued by thread {} at {loc} reads shared byte {off}, which holds \
                     an accumulator of the wgmma issued by {} at {} (group {}) copied before \
                     its wgmma_wait_group",
                    b.thread_of(rank),
                    who(b, rec.rank, rank),
                    rec.loc,
                    rec.group
                ),
            ));
        }
    }
    None
}
