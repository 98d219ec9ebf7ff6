//! What the Hopper rungs (3-5, [`super::hopper`], [`super::wide`],
//! [`super::fp8`]) and their shared loop ([`super::ws`]) have in common,
//! below all of them: the block's query rows, the mbarrier slots and their
//! initialisation, the turn barriers between the consumer warpgroups, the
//! test of whether a key tile needs its mask, and the fence that keeps
//! only the used accumulators alive.

use ptxlab_device::hopper::{Mbarrier, fence_mbarrier_init, fence_tensormap_acquire};
use ptxlab_device::prelude::*;
#[cfg(target_arch = "nvptx64")]
use ptxlab_device::unroll;

/// Query rows of a block: two warpgroups of 64.
pub const HP_BM: usize = 128;
/// Consumer threads (the two computing warpgroups).
pub(super) const CONSUMERS: u32 = 256;
/// Barrier slots reserved after the tiles.
pub(super) const BAR_SLOTS: usize = 20;

/// The mbarrier slots: `Q` landed; per stage `K` landed, `V` landed (rung
/// 3: both, on the `K` slot), `K` released, `V` released; and the two
/// turn barriers of rung 4 in the simulator ([`Turn`]).
#[derive(Clone, Copy)]
pub(super) struct Bar(pub(super) SharedSlice<u64>);

impl Bar {
    #[inline(always)]
    pub(super) fn q_full(self) -> Mbarrier {
        Mbarrier::at(self.0, 0)
    }
    #[inline(always)]
    pub(super) fn k_full(self, s: usize) -> Mbarrier {
        Mbarrier::at(self.0, 1 + s)
    }
    #[inline(always)]
    pub(super) fn v_full(self, s: usize) -> Mbarrier {
        Mbarrier::at(self.0, 5 + s)
    }
    #[inline(always)]
    pub(super) fn k_empty(self, s: usize) -> Mbarrier {
        Mbarrier::at(self.0, 9 + s)
    }
    #[inline(always)]
    pub(super) fn v_empty(self, s: usize) -> Mbarrier {
        Mbarrier::at(self.0, 13 + s)
    }
    #[inline(always)]
    pub(super) fn turn(self, i: usize) -> Mbarrier {
        Mbarrier::at(self.0, 17 + i)
    }
}

/// A named barrier between the two consumer warpgroups of rung 4: one
/// waits at it (`bar.sync id, 256`), the other arrives without waiting
/// (`bar.arrive id, 256`). In the simulator it is the mbarrier slot
/// `slot` with 256 expected arrivals, each thread counting its own uses to
/// know which phase to wait for.
#[derive(Clone, Copy)]
pub(super) struct Turn {
    #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
    id: u32,
    #[cfg_attr(target_arch = "nvptx64", allow(dead_code))]
    slot: Mbarrier,
    uses: u32,
}

impl Turn {
    /// Consumer `wg`'s own turn barrier (`mine`: named barrier `1 + wg`)
    /// or the other consumer's (`2 - wg`), in the simulator the barrier
    /// slot of the same warpgroup.
    #[inline(always)]
    pub(super) fn of(bars: Bar, wg: usize, mine: bool) -> Self {
        let owner = if mine { wg } else { 1 - wg };
        Turn {
            id: 1 + owner as u32,
            slot: bars.turn(owner),
            uses: 0,
        }
    }
    /// Waits until the other warpgroup has arrived (and lets it go on).
    #[inline(always)]
    #[track_caller]
    pub(super) fn sync(&mut self) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: a barrier among the 256 consumer threads (whole warps);
        // every `sync` has its matching `arrive` (see `attn_ws`).
        unsafe {
            core::arch::asm!("bar.sync {id}, {n};", id = in(reg32) self.id, n = const CONSUMERS,
                options(nostack));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            self.slot.arrive();
            self.slot.wait(self.uses & 1);
        }
        self.uses += 1;
    }
    /// Signals the warpgroup waiting at this barrier, without waiting.
    #[inline(always)]
    #[track_caller]
    pub(super) fn arrive(&mut self) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: as `sync`.
        unsafe {
            core::arch::asm!("bar.arrive {id}, {n};", id = in(reg32) self.id, n = const CONSUMERS,
                options(nostack));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        self.slot.arrive();
        self.uses += 1;
    }
}

/// Thread 0 initialises the barriers (`full` ones: one arrival, the copy
/// issuer's; `empty` and turn ones: the 256 consumer threads) and fences
/// the tensor maps; a block barrier publishes them.
#[inline(always)]
pub(super) fn init_barriers(bars: Bar, stages: usize, maps: [DeviceSlice<u64>; 3]) {
    if thread::thread_idx_x() == 0 {
        bars.q_full().init(1);
        for s in 0..stages {
            bars.k_full(s).init(1);
            bars.v_full(s).init(1);
            bars.k_empty(s).init(CONSUMERS);
            bars.v_empty(s).init(CONSUMERS);
        }
        bars.turn(0).init(CONSUMERS);
        bars.turn(1).init(CONSUMERS);
        fence_mbarrier_init();
        for map in maps {
            fence_tensormap_acquire(map);
        }
    }
    sync_threads();
}

/// Whether key tile `j` (of `bn` keys) needs masking for the 64 rows from
/// `row_min`: it runs past `skv`, or (causal) holds a key after one of the
/// rows.
#[inline(always)]
pub(super) fn needs_mask(j: usize, bn: usize, skv: usize, causal: bool, row_min: usize) -> bool {
    let end = (j + 1) * bn;
    end > skv || (causal && end - 1 > row_min)
}

/// [`fence_operands`](ptxlab_device::wgmma::fence_operands) on the first `n` accumulators only (the rest of a
/// `D = 64` array is never used and must not be kept alive).
#[inline(always)]
pub(super) fn fence_first<const N: usize>(d: &mut [f32; N], n: usize) {
    #[cfg(target_arch = "nvptx64")]
    unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127] {
        if i < N && i < n {
            // SAFETY: an empty instruction that "modifies" one register.
            unsafe { core::arch::asm!("// {0}", inout(reg32) d[i], options(nomem, nostack)) };
        }
    });
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (d, n);
}
