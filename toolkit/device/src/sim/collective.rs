//! The points where a simulated thread may have to wait for others:
//! [`sync_threads`] (the block barrier) and [`warp_exchange`] (the
//! rendezvous under every shuffle and vote). Each updates the state of
//! [`super::barrier`] or [`super::warp`], then either suspends the thread's
//! fiber or wakes the fibers it releases. A release also tells the race
//! detector: a barrier opens a new interval, a warp exchange orders its
//! lanes.

use super::barrier::Arrival;
use super::block::{self, Wait};
use super::error::Fault;
use super::warp::Exchange;
use std::panic::Location;

/// Block barrier: the thread waits until every thread of the block has
/// arrived at this same call site. Threads that arrive at another call site,
/// or that exit while others wait, fail the launch with a *divergent
/// barrier* error instead of hanging.
pub fn sync_threads(site: &'static Location<'static>) {
    block::with_block(|t, b| {
        if b.is_aborted() {
            block::unwind()
        }
        let arrival = b.barrier.borrow_mut().arrive(site, t.fiber_id(), b.total);
        match arrival {
            Err(detail) => block::fail_at(Fault::DivergentBarrier { detail }, site),
            Ok(Arrival::Wait) => block::suspend(t, b, Wait::Barrier),
            Ok(Arrival::Release(waiters)) => {
                if let Some(r) = &b.race {
                    r.barrier(site);
                }
                if b.async_on.get() {
                    super::asyncs::on_barrier(b);
                }
                for &f in &waiters {
                    b.wake(f);
                }
                b.barrier.borrow_mut().recycle(waiters);
            }
        }
    })
}

/// Warp rendezvous: every lane of `mask` deposits `value`; each gets all the
/// values and the set of lanes that took part (`mask` ∩ lanes that exist).
#[track_caller]
pub fn warp_exchange(mask: u32, value: u64) -> ([u64; 32], u32) {
    exchange(mask, value, Location::caller(), |v| *v)
}

/// A shuffle: the rendezvous of [`warp_exchange`], of which this lane only
/// needs the value of lane `src` (its own `value` when `src` is `None` or
/// did not take part). Cheaper than copying all 32 values.
#[track_caller]
pub fn warp_shuffle(mask: u32, value: u64, src: Option<u32>) -> u64 {
    let (v, present) = exchange(mask, value, Location::caller(), |v| {
        src.map(|s| v[(s % 32) as usize])
    });
    match (src, v) {
        (Some(s), Some(v)) if present & (1 << (s % 32)) != 0 => v,
        _ => value,
    }
}

/// A vote: bit `l` is set when lane `l` took part with `pred` true.
#[track_caller]
pub fn warp_ballot(mask: u32, pred: bool) -> u32 {
    let (bits, present) = exchange(mask, pred as u64, Location::caller(), |v| {
        v.iter()
            .enumerate()
            .fold(0u32, |m, (l, &p)| m | (((p != 0) as u32) << l))
    });
    bits & present
}

/// The rendezvous: deposits `value`, waits for the other lanes of `mask`,
/// and returns `read(values)` with the lanes that took part.
#[inline]
fn exchange<R>(
    mask: u32,
    value: u64,
    site: &'static Location<'static>,
    read: impl FnOnce(&[u64; 32]) -> R,
) -> (R, u32) {
    block::with_block(|t, b| {
        if b.is_aborted() {
            block::unwind()
        }
        let (warp, lane) = (t.rank / 32, t.rank % 32);
        let participants = mask & t.warp_present;
        let cell = &b.warps[warp as usize];
        let outcome = cell
            .borrow_mut()
            .arrive(warp, lane, mask, participants, value, t.fiber_id());
        match outcome {
            Err(detail) => block::fail_at(Fault::WarpMask { detail }, site),
            Ok(Exchange::Done { buf, wake, n }) => {
                if let Some(r) = &b.race {
                    cell.borrow_mut().ordered(participants, r.next_tick());
                }
                for &f in &wake[..n] {
                    b.wake(f);
                }
                (read(cell.borrow().values(buf)), participants)
            }
            Ok(Exchange::Wait) => {
                block::suspend(t, b, Wait::Warp(site));
                let mut w = cell.borrow_mut();
                let r = read(w.result(lane));
                w.release(lane);
                (r, participants)
            }
        }
    })
}
