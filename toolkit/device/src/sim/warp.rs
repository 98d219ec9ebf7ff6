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
use std::vec::Vec;

/// The rendezvous of one warp, and its lanes' ordering facts for the race
/// detector.
#[derive(Default)]
pub(crate) struct WarpState {
    /// Lanes that deposited a value for the exchange in progress.
    pub(crate) arrived: u32,
    /// Lanes the exchange in progress needs (mask ∩ lanes that exist).
    pub(crate) expected: u32,
    /// Value buffers: the exchange in progress collects into `bufs[cur]`;
    /// a completed exchange's buffer stays until its waiting lanes have
    /// read it (`readers` counts them down). Usually two buffers.
    bufs: Vec<Buf>,
    cur: usize,
    /// Fiber of each waiting lane.
    fiber: [u32; 32],
    /// The buffer each waiting lane reads when it is woken.
    slot: [u8; 32],
    exited: u32,
    /// Race detector: id of the last collective each lane took part in.
    pub(crate) last: [u64; 32],
    /// Race detector: `joint[l][a]` = id of the last collective lanes `l`
    /// and `a` both took part in.
    pub(crate) joint: [[u64; 32]; 32],
}

#[derive(Clone, Copy)]
struct Buf {
    values: [u64; 32],
    readers: u32,
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
        if self.bufs.is_empty() {
            self.bufs.push(Buf {
                values: [0; 32],
                readers: 0,
            });
        }
        for b in &mut self.bufs {
            b.readers = 0;
        }
        self.cur = 0;
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
        self.bufs[self.cur].values[lane as usize] = value;
        self.arrived |= bit;
        if self.arrived != self.expected {
            self.fiber[lane as usize] = fiber;
            return Ok(Exchange::Wait);
        }
        // The last lane: the waiting lanes will read this buffer; collect
        // the next exchange in a free one.
        let done = self.cur;
        let mut waiting = self.arrived & !bit;
        let mut wake = [0u32; 32];
        let mut n = 0;
        while waiting != 0 {
            let l = waiting.trailing_zeros() as usize;
            waiting &= waiting - 1;
            self.slot[l] = done as u8;
            wake[n] = self.fiber[l];
            n += 1;
        }
        self.bufs[done].readers = n as u32;
        self.arrived = 0;
        self.cur = match self.bufs.iter().position(|b| b.readers == 0) {
            Some(i) => i,
            None => {
                self.bufs.push(Buf {
                    values: [0; 32],
                    readers: 0,
                });
                self.bufs.len() - 1
            }
        };
        Ok(Exchange::Done { buf: done, wake, n })
    }

    /// The values of a completed exchange, for the lane that completed it.
    pub(crate) fn values(&self, buf: usize) -> &[u64; 32] {
        &self.bufs[buf].values
    }

    /// What the exchange that released waiting lane `lane` gave it; valid
    /// until [`Self::release`].
    pub(crate) fn result(&self, lane: u32) -> &[u64; 32] {
        &self.bufs[self.slot[lane as usize] as usize].values
    }

    /// Waiting lane `lane` has read its result.
    pub(crate) fn release(&mut self, lane: u32) {
        self.bufs[self.slot[lane as usize] as usize].readers -= 1;
    }
}

/// What an arrival at a warp exchange leads to.
pub(crate) enum Exchange {
    /// Wait for the other lanes.
    Wait,
    /// The last lane: the values are in buffer `buf`; wake the first `n`
    /// fibers of `wake` (the lanes that waited).
    Done {
        buf: usize,
        wake: [u32; 32],
        n: usize,
    },
}
