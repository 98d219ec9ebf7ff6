//! The state of a warp's rendezvous, which every shuffle and vote is built
//! on. The waiting itself is in [`super::collective`].
//!
//! Each lane named in the mask deposits a value; the lanes that arrive
//! first wait, and the last one hands every waiting lane the 32 values and
//! goes on. CUDA's rules: a lane must be in the mask it passes, every lane
//! of the mask must pass the same mask, lanes beyond the end of a partial
//! last warp do not take part, and a lane named in the mask must not exit
//! while the others wait for it.

use std::format;
use std::string::String;

/// The rendezvous of one warp, and its lanes' ordering facts for the race
/// detector.
#[derive(Default)]
pub(crate) struct WarpState {
    /// Lanes that deposited a value for the exchange in progress.
    pub(crate) arrived: u32,
    /// Lanes the exchange in progress needs (mask ∩ lanes that exist).
    pub(crate) expected: u32,
    values: [u64; 32],
    /// Fiber of each waiting lane.
    fiber: [u32; 32],
    /// What each lane gets from the exchange that released it.
    results: [[u64; 32]; 32],
    exited: u32,
    /// Race detector: id of the last collective each lane took part in.
    pub(crate) last: [u64; 32],
    /// Race detector: `joint[l][a]` = id of the last collective lanes `l`
    /// and `a` both took part in.
    pub(crate) joint: [[u64; 32]; 32],
}

impl WarpState {
    /// Ready for a new block. `tick` is the race
    /// detector's clock at the block's start: every older `joint` entry is
    /// at most `tick`, so no access of this block is ordered by a
    /// collective of an earlier one.
    pub(crate) fn reset(&mut self, tick: u64) {
        self.arrived = 0;
        self.expected = 0;
        self.exited = 0;
        self.last = [tick; 32];
    }

    /// Lane `lane` exited; an error when lanes wait for it in an exchange.
    pub(crate) fn exit(&mut self, lane: u32) -> Option<String> {
        let bit = 1u32 << lane;
        self.exited |= bit;
        (self.arrived != 0 && self.expected & bit != 0 && self.arrived & bit == 0).then(|| {
            format!(
                "lane {lane} exited while lanes {:#010x} wait for it in a warp function",
                self.arrived
            )
        })
    }

    /// Records, for the race detector, that the lanes of `lanes` took part
    /// in collective `id` together.
    pub(crate) fn ordered(&mut self, lanes: u32, id: u64) {
        let mut m = lanes;
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            self.last[l] = id;
            let mut n = lanes;
            while n != 0 {
                let a = n.trailing_zeros() as usize;
                n &= n - 1;
                self.joint[l][a] = id;
            }
        }
    }

    /// Lane `lane` (running on fiber `fiber`) of warp number `warp` deposits
    /// `value` for an exchange among `participants` (its mask, restricted to
    /// the lanes that exist); an error names a broken rule.
    pub(crate) fn arrive(
        &mut self,
        warp: u32,
        lane: u32,
        mask: u32,
        participants: u32,
        value: u64,
        fiber: u32,
    ) -> Result<Exchange, String> {
        let bit = 1u32 << lane;
        if mask & bit == 0 {
            return Err(format!(
                "lane {lane} called a warp function with mask {mask:#010x}, which does not \
                 include it"
            ));
        }
        if self.arrived == 0 {
            self.expected = participants;
        }
        if self.expected != participants {
            return Err(format!(
                "lanes of warp {warp} disagree on the mask: {:#010x} and {participants:#010x}",
                self.expected
            ));
        }
        if participants & self.exited != 0 {
            return Err(format!(
                "mask {mask:#010x} names lanes that have already exited ({:#010x})",
                participants & self.exited
            ));
        }
        self.values[lane as usize] = value;
        self.arrived |= bit;
        if self.arrived != self.expected {
            self.fiber[lane as usize] = fiber;
            return Ok(Exchange::Wait);
        }
        // The last lane: hand the values to the waiting lanes.
        let values = self.values;
        let mut waiting = self.arrived & !bit;
        let mut wake = [0u32; 32];
        let mut n = 0;
        while waiting != 0 {
            let l = waiting.trailing_zeros() as usize;
            waiting &= waiting - 1;
            self.results[l] = values;
            wake[n] = self.fiber[l];
            n += 1;
        }
        self.arrived = 0;
        Ok(Exchange::Done { values, wake, n })
    }

    /// What the exchange that released waiting lane `lane` gave it.
    pub(crate) fn result(&self, lane: u32) -> [u64; 32] {
        self.results[lane as usize]
    }
}

/// What an arrival at a warp exchange leads to.
// Returned by value once per arrival: boxing `Done` would allocate on every
// exchange.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Exchange {
    /// Wait for the other lanes.
    Wait,
    /// The last lane: these are the values; wake the first `n` fibers of
    /// `wake` (the lanes that waited).
    Done {
        values: [u64; 32],
        wake: [u32; 32],
        n: usize,
    },
}
