//! mbarriers (PTX ISA 9.7.13.15): a count of arrivals and a transaction
//! (byte) count per phase; a phase completes when both reach zero, and the
//! barrier moves to the next phase (parity flips).
//!
//! The simulator keeps each barrier in a side table of the block (keyed by
//! its shared-memory address), with the absolute number of completed
//! phases, so it can say which phase a waiter missed. Misuses stop the
//! launch with a report instead of hanging or corrupting the count:
//! * an operation on a barrier nobody initialised, or one initialised by
//!   another thread with no block barrier since (the init is not visible
//!   yet), or a TMA load completing on a barrier whose init was not fenced
//!   (`fence.mbarrier_init`);
//! * more arrivals in one phase than the barrier's count;
//! * a waiter that can never be released (every thread waits: wrong
//!   parity, an arrival count or byte count that never completes the
//!   phase) is a deadlock, reported by the scheduler with each waiting
//!   barrier's state ([`deadlock_note`]).

use super::{AsyncState, misuse, state};
use crate::sim::block::{self, Block, Wait};
use crate::sim::error::Fault;
use crate::sim::state::asyncs::Mbar;
use std::format;
use std::panic::Location;
use std::string::String;
use std::vec::Vec;

/// The barrier at `addr`, if initialised.
pub(crate) fn find(st: &AsyncState, addr: u32) -> Option<u32> {
    st.bars
        .iter()
        .position(|m| m.addr == addr)
        .map(|i| i as u32)
}

/// The barrier at `addr` for thread `rank`: an error when it was never
/// initialised or its init is not visible to this thread yet.
pub(crate) fn usable(
    b: &Block<'_>,
    st: &AsyncState,
    addr: u32,
    rank: u32,
    what: &str,
    loc: &'static Location<'static>,
) -> Result<u32, Fault> {
    let Some(i) = find(st, addr) else {
        return Err(misuse(
            b,
            "mbarrier",
            rank,
            loc,
            format!(
                "{what} on the mbarrier at shared byte {addr}, which no thread has initialised \
                 (mbarrier.init by one thread, fence_mbarrier_init, then sync_threads, before \
                 any use)"
            ),
        ));
    };
    let m = &st.bars[i as usize];
    if m.init_rank != rank && m.init_gen == st.barriers {
        return Err(misuse(
            b,
            "mbarrier",
            m.init_rank,
            m.init_loc,
            format!(
                "{what} on the mbarrier at shared byte {addr} by thread {} before a sync_threads \
                 made its initialisation visible: thread {} initialised it at {} in the same \
                 barrier interval",
                b.thread_of(rank),
                b.thread_of(m.init_rank),
                m.init_loc
            ),
        ));
    }
    Ok(i)
}

/// `mbarrier.init`.
pub(crate) fn init(addr: u32, count: u32, loc: &'static Location<'static>) {
    let fault = block::with_block(|t, b| -> Option<Fault> {
        let mut st = state(b);
        if count == 0 || count >= 1 << 20 {
            return Some(misuse(
                b,
                "mbarrier",
                t.rank,
                loc,
                format!("mbarrier.init with count {count}; allowed 1..=2^20-1"),
            ));
        }
        if let Some(i) = find(&st, addr) {
            let m = &st.bars[i as usize];
            if !m.waiters.is_empty() {
                return Some(misuse(
                    b,
                    "mbarrier",
                    t.rank,
                    loc,
                    format!(
                        "mbarrier.init of the barrier at shared byte {addr} while {} thread(s) \
                         wait on it",
                        m.waiters.len()
                    ),
                ));
            }
        }
        let passed = st.barriers;
        let m = Mbar {
            addr,
            count,
            pending: count,
            tx: 0,
            completed: 0,
            init_rank: t.rank,
            init_gen: passed,
            init_loc: loc,
            fenced: false,
            waiters: Vec::new(),
            last: None,
            expect: None,
            tx_done: 0,
            tx_last: None,
            max_seen: 0,
            published: 0,
        };
        match find(&st, addr) {
            Some(i) => {
                st.bars[i as usize] = m;
                for ta in &mut st.threads {
                    if let Some(s) = ta.seen.get_mut(i as usize) {
                        *s = 0;
                    }
                }
            }
            None => st.bars.push(m),
        }
        st.epoch += 1;
        drop(st);
        b.cluster().note_mbar_init(b.crank, t.rank, addr, loc);
        None
    });
    if let Some(f) = fault {
        block::fail_at(f, loc)
    }
}

/// The mbarrier at `addr` of `peer` (another block of the cluster), for
/// `what` by thread `t` of `b`: an error when no thread of the peer has
/// initialised it, when no cluster barrier orders the init before this
/// use, or (`fenced`: the asynchronous proxy completes on it) when no
/// `fence_mbarrier_init` followed the init.
#[allow(clippy::too_many_arguments)]
pub(crate) fn remote_usable(
    peer: &Block<'_>,
    st: &AsyncState,
    addr: u32,
    b: &Block<'_>,
    t: &block::ThreadCtx,
    what: &str,
    fenced: bool,
    loc: &'static Location<'static>,
) -> Result<u32, Fault> {
    let rank = peer.crank;
    let found = find(st, addr);
    let hidden = b.cluster().mbar_init_hidden(b.crank, t.rank, rank, addr);
    let Some(i) = found else {
        return Err(misuse(
            b,
            "mbarrier",
            t.rank,
            loc,
            format!(
                "{what} on the mbarrier at shared byte {addr} of block {} (cluster rank {rank}), \
                 which no thread of that block has initialised (each block initialises its \
                 mbarriers, fence_mbarrier_init, then cluster::sync() before any block of the \
                 cluster uses them)",
                peer.idx
            ),
        ));
    };
    let m = &st.bars[i as usize];
    if let Some(init) = hidden {
        let init = init.unwrap_or(m.init_loc);
        return Err(misuse(
            b,
            "mbarrier",
            t.rank,
            loc,
            format!(
                "{what} by thread {} of block {} at {loc} on the mbarrier at shared byte {addr} \
                 of block {} (cluster rank {rank}) before a cluster barrier made its \
                 initialisation (at {init}) visible: the initialising block runs \
                 fence_mbarrier_init, then every block runs cluster::sync() before a peer uses it",
                t.thread_idx, b.idx, peer.idx
            ),
        ));
    }
    if fenced && !m.fenced {
        return Err(misuse(
            b,
            "mbarrier",
            t.rank,
            loc,
            format!(
                "{what} by thread {} of block {} at {loc} completes on the mbarrier at shared \
                 byte {addr} of block {} whose initialisation (at {}) no fence_mbarrier_init \
                 made visible to the asynchronous proxy",
                t.thread_idx, b.idx, peer.idx, m.init_loc
            ),
        ));
    }
    Ok(i)
}

/// `mbarrier.arrive.release.cluster.shared::cluster` on the mbarrier at
/// shared byte `addr` of block `rank` of the cluster (`mapa`): one arrival
/// counted on that block's barrier, waking its waiters when it completes
/// the phase. The current block's own rank is an ordinary arrive.
pub(crate) fn arrive_remote(addr: u32, rank: u32, loc: &'static Location<'static>) {
    let what = "mbarrier.arrive.shared::cluster";
    let r = block::with_block(|t, b| -> Result<bool, Fault> {
        if b.is_aborted() {
            block::unwind()
        }
        let c = b.cluster();
        if rank >= c.size() {
            return Err(misuse(
                b,
                "mbarrier",
                t.rank,
                loc,
                format!(
                    "{what} to block rank {rank} of a cluster of {} blocks; allowed ranks: \
                     0..{}",
                    c.size(),
                    c.size()
                ),
            ));
        }
        if rank == b.crank {
            return Ok(true);
        }
        let peer = match c.peer(rank) {
            Ok(p) => p,
            Err(last) => {
                return Err(misuse(
                    b,
                    "mbarrier",
                    t.rank,
                    loc,
                    format!(
                        "{what} by thread {} of block {} at {loc} on the mbarrier at shared byte \
                         {addr} of block {} (cluster rank {rank}), which has exited (its shared \
                         memory is released; its threads last passed the cluster barrier at {}): \
                         a block must not exit while peers still arrive on its mbarriers",
                        t.thread_idx,
                        b.idx,
                        c.index_of(rank),
                        last.map_or_else(|| "(never)".into(), |l| format!("{l}")),
                    ),
                ));
            }
        };
        let mut st = state(peer);
        let i = remote_usable(peer, &st, addr, b, t, what, false, loc)?;
        let m = &mut st.bars[i as usize];
        if m.pending == 0 {
            let (completed, tx, init, count) = (m.completed, m.tx, m.init_loc, m.count);
            return Err(misuse(
                b,
                "mbarrier",
                t.rank,
                loc,
                format!(
                    "{what} by thread {} of block {} at {loc} on the mbarrier at shared byte \
                     {addr} of block {} (initialised at {init} with count {count}), whose phase \
                     {completed} has all its arrivals and still waits for {tx} transaction \
                     bytes: an arrival for the next phase before this one completed (more \
                     arrivals per phase than its count, or a remote arrive on the wrong block)",
                    t.thread_idx, b.idx, peer.idx
                ),
            ));
        }
        m.pending -= 1;
        let phase = m.completed;
        c.note_arrival(rank, addr, phase, b.crank);
        let wake = settle(
            &mut st,
            i,
            t.rank,
            loc,
            "a remote arrive (mbarrier.arrive.shared::cluster)",
        );
        drop(st);
        for f in wake {
            peer.wake(f);
        }
        Ok(false)
    });
    match r {
        Ok(true) => arrive(addr, 1, 0, loc),
        Ok(false) => block::maybe_preempt(),
        Err(f) => block::fail_at(f, loc),
    }
}

/// `fence.mbarrier_init`: the inits of this thread so far are visible to
/// the asynchronous proxy.
pub(crate) fn fence_init() {
    block::with_block(|t, b| {
        if !b.async_on.get() {
            return;
        }
        let mut st = b.asyncs.borrow_mut();
        for m in &mut st.bars {
            if m.init_rank == t.rank {
                m.fenced = true;
            }
        }
    });
}

/// `arrivals` arrivals and `expect` more transaction bytes (an
/// `arrive.expect_tx`) by the current thread.
pub(crate) fn arrive(addr: u32, arrivals: u32, expect: u32, loc: &'static Location<'static>) {
    let fault = block::with_block(|t, b| -> Option<Fault> {
        let mut st = state(b);
        let what = if expect > 0 {
            "mbarrier.arrive.expect_tx"
        } else {
            "mbarrier.arrive"
        };
        let i = match usable(b, &st, addr, t.rank, what, loc) {
            Ok(i) => i,
            Err(f) => return Some(f),
        };
        let m = &mut st.bars[i as usize];
        if expect > 0 {
            m.tx += expect as i64;
            m.expect = Some((t.rank, loc, expect));
        }
        if arrivals > m.pending && m.tx != 0 {
            let (completed, tx) = (m.completed, m.tx);
            let init = m.init_loc;
            return Some(misuse(
                b,
                "mbarrier",
                t.rank,
                loc,
                format!(
                    "{what} on the mbarrier at shared byte {addr} (initialised at {init}) whose \
                     phase {completed} has all its arrivals and still waits for {tx} transaction \
                     bytes: an arrival for the next phase before this one completed (a stage \
                     refilled before its last fill landed and was consumed)"
                ),
            ));
        }
        if arrivals > m.pending {
            let (count, pending, completed) = (m.count, m.pending, m.completed);
            return Some(misuse(
                b,
                "mbarrier",
                m.init_rank,
                m.init_loc,
                format!(
                    "{what} by thread {} at {loc}: {arrivals} arrival(s) on the mbarrier at shared \
                     byte {addr} (initialised at {} with count {count}) when only {pending} are \
                     pending in phase {completed}: more threads arrive per phase than its count",
                    b.thread_of(t.rank),
                    st.bars[i as usize].init_loc,
                ),
            ));
        }
        m.pending -= arrivals;
        let phase = m.completed;
        b.cluster().note_arrival(b.crank, addr, phase, b.crank);
        let wake = settle(&mut st, i, t.rank, loc, what);
        drop(st);
        for f in wake {
            b.wake(f);
        }
        None
    });
    if let Some(f) = fault {
        block::fail_at(f, loc)
    }
    block::maybe_preempt();
}

/// Completes the phase of barrier `i` if both counts are zero; returns the
/// fibers to wake.
pub(crate) fn settle(
    st: &mut AsyncState,
    i: u32,
    rank: u32,
    loc: &'static Location<'static>,
    what: &'static str,
) -> Vec<u32> {
    st.epoch += 1;
    let m = &mut st.bars[i as usize];
    if m.pending == 0 && m.tx == 0 {
        m.completed += 1;
        m.pending = m.count;
        m.last = Some((rank, loc, what));
        m.expect = None;
        m.tx_done = 0;
        m.tx_last = None;
        core::mem::take(&mut m.waiters)
    } else {
        Vec::new()
    }
}

/// Whether the phase of parity `parity` of the barrier at `addr` has
/// completed for the current thread (`mbarrier.try_wait.parity`), noting
/// what the thread has seen.
pub(crate) fn try_wait(addr: u32, parity: u32, loc: &'static Location<'static>) -> bool {
    let r = block::with_block(|t, b| -> Result<bool, Fault> {
        let mut st = state(b);
        let i = usable(b, &st, addr, t.rank, "mbarrier.try_wait", loc)?;
        let done = observe(&mut st, i, t.rank, parity);
        let epoch = st.epoch;
        let ta = &mut st.threads[t.rank as usize];
        ta.spin = if done { 0 } else { epoch + 1 };
        ta.spin_at = Some((addr, parity, loc));
        Ok(done)
    });
    match r {
        Ok(d) => d,
        Err(f) => block::fail_at(f, loc),
    }
}

/// The test of `try_wait.parity` on barrier `i` for `rank`; on success
/// records the phases it has seen.
fn observe(st: &mut AsyncState, i: u32, rank: u32, parity: u32) -> bool {
    let m = &st.bars[i as usize];
    let c = m.completed;
    let done = (c % 2) as u32 != (parity & 1);
    if done {
        let seen = &mut st.threads[rank as usize].seen;
        if seen.len() <= i as usize {
            seen.resize(i as usize + 1, 0);
        }
        seen[i as usize] = seen[i as usize].max(c);
        let m = &mut st.bars[i as usize];
        m.max_seen = m.max_seen.max(c);
    }
    done
}

/// Waits until the phase of parity `parity` of the barrier at `addr` has
/// completed: the thread is blocked (not spinning) until the barrier
/// changes, so a wait that can never end is a deadlock report.
pub(crate) fn wait(addr: u32, parity: u32, loc: &'static Location<'static>) {
    loop {
        let r = block::with_block(|t, b| -> Result<bool, Fault> {
            let mut st = state(b);
            let i = usable(b, &st, addr, t.rank, "mbarrier wait", loc)?;
            if observe(&mut st, i, t.rank, parity) {
                return Ok(true);
            }
            st.bars[i as usize].waiters.push(t.fiber_id());
            drop(st);
            block::suspend(
                t,
                b,
                Wait::Mbar {
                    site: loc,
                    addr,
                    parity,
                },
            );
            Ok(false)
        });
        match r {
            Ok(true) => break,
            Ok(false) => {}
            Err(f) => block::fail_at(f, loc),
        }
    }
    block::maybe_preempt();
}

/// Completes `bytes` transaction bytes of barrier `i` (a TMA load
/// landing), issued by `rank` at `loc` as op `op`; returns the phase they
/// completed in and the fibers to wake.
pub(crate) fn complete_tx(
    st: &mut AsyncState,
    i: u32,
    bytes: u32,
    rank: u32,
    loc: &'static Location<'static>,
    op: u32,
) -> (u64, Vec<u32>) {
    let m = &mut st.bars[i as usize];
    let phase = m.completed;
    m.tx -= bytes as i64;
    m.tx_done += bytes as u64;
    m.tx_last = Some(op);
    let wake = settle(st, i, rank, loc, "the TMA load");
    (phase, wake)
}

/// Checks that a TMA load may complete on the barrier at `addr`: it is
/// initialised, visible, and its init fenced for the asynchronous proxy.
pub(crate) fn for_tma(
    b: &Block<'_>,
    st: &AsyncState,
    addr: u32,
    rank: u32,
    loc: &'static Location<'static>,
) -> Result<u32, Fault> {
    let i = usable(b, st, addr, rank, "a TMA load completing", loc)?;
    let m = &st.bars[i as usize];
    if !m.fenced {
        return Err(misuse(
            b,
            "mbarrier",
            m.init_rank,
            m.init_loc,
            format!(
                "a TMA load issued by thread {} at {loc} completes on the mbarrier at shared byte \
                 {} whose initialisation (at {}) no fence_mbarrier_init made visible to the \
                 asynchronous proxy",
                b.thread_of(rank),
                m.addr,
                m.init_loc
            ),
        ));
    }
    Ok(i)
}

/// For a report: what the thread's view of barrier `bar` rests on.
pub(crate) fn last_wait_note(st: &AsyncState, rank: u32, bar: u32) -> String {
    let own = st.threads[rank as usize]
        .seen
        .get(bar as usize)
        .copied()
        .unwrap_or(0);
    if own == 0 && st.bars[bar as usize].published == 0 {
        String::from(" (a wait with the wrong parity returns at once on a new barrier)")
    } else {
        String::new()
    }
}

/// For a deadlock report: why a thread waiting at `site` for parity
/// `parity` of the barrier at `addr` cannot go on.
pub(crate) fn deadlock_note(
    b: &Block<'_>,
    rank: u32,
    site: &'static Location<'static>,
    addr: u32,
    parity: u32,
) -> String {
    let st = b.asyncs.borrow();
    let Some(i) = find(&st, addr) else {
        return format!(
            "thread {} waits at {site} on the mbarrier at shared byte {addr}, which is gone",
            b.thread_of(rank)
        );
    };
    let m = &st.bars[i as usize];
    let seen = st.seen(rank, i);
    let mut s = format!(
        "thread {} waits at {site} for the phase of parity {parity} of the mbarrier at shared \
         byte {addr} (initialised at {} with count {}), which is in phase {} (parity {}) with {} \
         of {} arrivals pending",
        b.thread_of(rank),
        m.init_loc,
        m.count,
        m.completed,
        m.completed % 2,
        m.pending,
        m.count
    );
    if m.pending > 0 && m.pending < m.count {
        s += &b.cluster().arrival_note(b.crank, addr, m.completed);
    }
    if m.tx != 0 {
        s += &format!(" and {} transaction bytes pending", m.tx);
        if let Some((r, l, bytes)) = m.expect {
            s += &format!(
                " (expect_tx of {bytes} bytes by thread {} at {l}",
                b.thread_of(r)
            );
            if m.tx < 0 {
                s += &format!(", but the copies completed {} bytes", m.tx_done);
                if let Some(op) = m.tx_last {
                    let o = &st.ops[op as usize];
                    s += &format!(
                        ", the last of them a TMA load by thread {} at {}",
                        b.thread_of(o.rank),
                        o.loc
                    );
                }
            }
            s += ")";
        }
    }
    let c = m.completed;
    if seen + 1 < c {
        s += &format!(
            "; this thread has seen {seen} of its {c} completed phases, so it missed phase \
             {seen}: the barrier went two phases past it (a stage refilled before this thread \
             released or waited for it)"
        );
    } else if seen + 1 == c && (c % 2) as u32 == parity & 1 {
        s += &format!(
            "; this thread never waited for phase {} (parity {}) and now waits for phase {c} \
             (parity {}): the wait's parity is wrong",
            c - 1,
            (c - 1) % 2,
            parity & 1
        );
    }
    if let Some((r, l, what)) = m.last {
        s += &format!(
            "; its last phase was completed by {what} of thread {} at {l}",
            b.thread_of(r)
        );
    }
    s += &b.cluster().multicast_note(b.crank, addr);
    s
}

/// Whether every fiber in `yielded` spins on a `try_wait` with no barrier
/// change since (and nothing else could change one).
pub(crate) fn all_spinning(b: &Block<'_>, ranks: &[u32]) -> bool {
    if !b.async_on.get() || ranks.is_empty() {
        return false;
    }
    let st = b.asyncs.borrow();
    let want = st.epoch + 1;
    ranks
        .iter()
        .all(|&r| st.threads.get(r as usize).is_some_and(|t| t.spin == want))
}

/// The deadlock report when every thread left spins on `try_wait`.
pub(crate) fn spin_detail(b: &Block<'_>) -> (u32, String) {
    let spinner = {
        let st = b.asyncs.borrow();
        st.threads
            .iter()
            .enumerate()
            .find(|(_, t)| t.spin == st.epoch + 1)
            .and_then(|(r, t)| t.spin_at.map(|s| (r as u32, s)))
    };
    match spinner {
        Some((rank, (addr, parity, site))) => (
            rank,
            format!(
                "{}; every thread left spins on mbarrier.try_wait and nothing can change a \
                 barrier any more (a wrong parity, or fewer arrivals or transaction bytes than \
                 the phase expects)",
                deadlock_note(b, rank, site, addr, parity)
            ),
        ),
        None => (
            0,
            String::from("every thread left spins on mbarrier.try_wait"),
        ),
    }
}
