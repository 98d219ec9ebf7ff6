//! The points where a simulated thread may have to wait for others:
//! [`sync_threads`] (the block barrier) and [`warp_exchange`] (the
//! rendezvous under every shuffle and vote). Each updates the state of
//! [`super::barrier`] or [`super::warp`], then either suspends the thread's
//! fiber or wakes the fibers it releases. A release also tells the race
//! detector: a barrier opens a new interval, a warp exchange orders its
//! lanes.

use super::barrier::Arrival;
use super::error::Fault;
use super::sched::{self, Wait};
use super::warp::Exchange;
use std::panic::Location;

/// Block barrier with divergence detection (see [`super::barrier`]).
pub fn sync_threads(site: &'static Location<'static>) {
    sched::with_block(|t, b| {
        if b.is_aborted() {
            sched::unwind()
        }
        let arrival = b.barrier.borrow_mut().arrive(site, t.fiber_id(), b.total);
        match arrival {
            Err(detail) => sched::fail_at(Fault::DivergentBarrier { detail }, site),
            Ok(Arrival::Wait) => sched::suspend(t, b, Wait::Barrier),
            Ok(Arrival::Release(waiters)) => {
                if let Some(r) = &b.race {
                    r.barrier(site);
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
    let site = Location::caller();
    sched::with_block(|t, b| {
        if b.is_aborted() {
            sched::unwind()
        }
        let (warp, lane) = (t.rank / 32, t.rank % 32);
        let participants = mask & t.warp_present;
        let cell = &b.warps[warp as usize];
        let outcome = cell
            .borrow_mut()
            .arrive(warp, lane, mask, participants, value, t.fiber_id());
        match outcome {
            Err(detail) => sched::fail_at(Fault::WarpMask { detail }, site),
            Ok(Exchange::Done { values, wake, n }) => {
                if let Some(r) = &b.race {
                    cell.borrow_mut().ordered(participants, r.next_tick());
                }
                for &f in &wake[..n] {
                    b.wake(f);
                }
                (values, participants)
            }
            Ok(Exchange::Wait) => {
                sched::suspend(t, b, Wait::Warp(site));
                (cell.borrow().result(lane), participants)
            }
        }
    })
}
