//! The state of a block's barrier, with divergence detection. The waiting
//! itself (suspending and waking fibers) is in [`super::collective`].
//!
//! A thread that arrives waits until every thread of the block has arrived
//! at the same call site; the last one to arrive releases the others and
//! goes on. Threads that arrive at another call site, or threads that exit
//! while others wait, make the launch fail with a *divergent barrier* error
//! instead of hanging.

use std::format;
use std::panic::Location;
use std::string::{String, ToString};
use std::vec::Vec;

/// The barrier of one block.
#[derive(Default)]
pub(crate) struct BarrierState {
    arrived: u32,
    exited: u32,
    /// Where the waiting threads called `sync_threads`.
    pub(crate) site: Option<&'static Location<'static>>,
    waiters: Vec<u32>,
}

/// What an arrival leads to.
pub(crate) enum Arrival {
    /// Wait for the others.
    Wait,
    /// The last thread: release these fibers and go on.
    Release(Vec<u32>),
}

impl BarrierState {
    /// The thread running on fiber `fiber`, of a block of `total` threads,
    /// arrives at the barrier at `site`; an error names a divergence.
    pub(crate) fn arrive(
        &mut self,
        site: &'static Location<'static>,
        fiber: u32,
        total: u32,
    ) -> Result<Arrival, String> {
        // Same call site: the same `Location` static, or (when the compiler
        // made two copies of it) an equal one.
        if let Some(s) = self.site
            && self.arrived > 0
            && !core::ptr::eq(s, site)
            && s != site
        {
            return Err(format!(
                "threads of one block wait at sync_threads at {s} and at {site}; every thread \
                 must reach the same barrier"
            ));
        }
        self.site = Some(site);
        self.arrived += 1;
        if self.arrived + self.exited < total {
            self.waiters.push(fiber);
            Ok(Arrival::Wait)
        } else if self.exited > 0 {
            Err(format!(
                "{} of {total} threads reached sync_threads at {site}, {} had already exited \
                 (a barrier inside a branch or after an early return)",
                self.arrived, self.exited
            ))
        } else {
            self.arrived = 0;
            Ok(Arrival::Release(core::mem::take(&mut self.waiters)))
        }
    }

    /// Hands back the vector of a release, to keep its capacity.
    pub(crate) fn recycle(&mut self, mut waiters: Vec<u32>) {
        if self.waiters.is_empty() {
            waiters.clear();
            self.waiters = waiters;
        }
    }

    /// A thread of a block of `total` exited; an error when that leaves
    /// the threads waiting here with nobody to release them.
    pub(crate) fn exit(&mut self, total: u32) -> Option<String> {
        self.exited += 1;
        (self.arrived > 0 && self.arrived + self.exited == total).then(|| {
            format!(
                "{} of {total} threads wait at sync_threads at {}, the others exited without \
                 reaching it",
                self.arrived,
                self.site.map(|s| s.to_string()).unwrap_or_default()
            )
        })
    }
}
