//! Histogram of `u8` or `u32` keys into `bins` bins (a power of two, at most
//! [`MAX_BINS`]; 256 by default): key `k` goes to bin `k & (bins - 1)`.
//!
//! Two rungs over the same loads, so the comparison isolates where the
//! atomics go:
//!
//! | rung | kernel | atomics |
//! |---|---|---|
//! | 1 | `histogram_global_*` | one global `atomicAdd` per key |
//! | 2 | `histogram_shared_*` | one shared-memory atomic per key, then one global atomic per non-empty bin per block |
//!
//! Both read the keys in 16-byte groups (16 `u8` or 4 `u32` keys per load)
//! with a grid-stride loop over a fixed grid, and write counts with atomics
//! into `hist[offset .. offset + bins]`, which must be zero before the launch
//! (a benchmark gives each timed call its own zeroed range). Counts are
//! integers, so the result is exact in any order.

use ptxlab_device::mem::DeviceCopy;
use ptxlab_device::prelude::*;

/// Threads per block of both rungs.
pub const BLOCK: u32 = 256;
/// Default number of bins.
pub const BINS: u32 = 256;
/// Largest bin count: `MAX_BINS` u32 counters are 32 KB of shared memory per
/// block, under the 48 KB available without opt-in.
pub const MAX_BINS: u32 = 8192;

/// Sixteen bytes as four `u32` words, aligned for one `ld.global.v4.u32`.
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct U32x4(pub [u32; 4]);
// SAFETY: a repr(C) array of u32: no padding, every bit pattern valid.
unsafe impl DeviceCopy for U32x4 {}

/// Dynamic shared memory of the privatised rung: `bins` u32 counters.
pub const fn histogram_shared_bytes(bins: u32) -> usize {
    shared::shared_bytes::<u32>(0, bins as usize)
}

/// Key types: how many fit in a 16-byte group, and how to visit them.
pub trait Key: DeviceCopy {
    /// Keys per 16-byte group.
    const PER_GROUP: usize;
    /// The key as a `u32`.
    fn to_u32(self) -> u32;
    /// Calls `f` on every key of a 16-byte group (read as four words).
    fn each(g: U32x4, f: &mut impl FnMut(u32));
}

impl Key for u8 {
    const PER_GROUP: usize = 16;
    #[inline(always)]
    fn to_u32(self) -> u32 {
        self as u32
    }
    #[inline(always)]
    fn each(g: U32x4, f: &mut impl FnMut(u32)) {
        for w in [g.0[0], g.0[1], g.0[2], g.0[3]] {
            f(w & 0xff);
            f((w >> 8) & 0xff);
            f((w >> 16) & 0xff);
            f(w >> 24);
        }
    }
}

impl Key for u32 {
    const PER_GROUP: usize = 4;
    #[inline(always)]
    fn to_u32(self) -> u32 {
        self
    }
    #[inline(always)]
    fn each(g: U32x4, f: &mut impl FnMut(u32)) {
        f(g.0[0]);
        f(g.0[1]);
        f(g.0[2]);
        f(g.0[3]);
    }
}

/// Visits this thread's keys: whole 16-byte groups by a grid-stride loop,
/// then at most one of the `n % PER_GROUP` tail keys.
#[inline(always)]
fn scan_keys<K: Key>(keys: DeviceSlice<K>, mut f: impl FnMut(u32)) {
    let n = keys.len();
    let groups = n / K::PER_GROUP;
    for g in thread::grid_stride(groups) {
        // SAFETY: `g < groups = n / PER_GROUP`, so the group lies inside the
        // buffer; device allocations are 256-byte aligned.
        let v: U32x4 = unsafe { keys.get_vec_unchecked(g) };
        K::each(v, &mut f);
    }
    let tail = groups * K::PER_GROUP + thread::index_1d();
    if tail < n {
        f(keys.get(tail).to_u32());
    }
}

/// Stops the kernel unless `bins` is a power of two in `1..=MAX_BINS` and
/// `hist` holds `offset + bins` counters.
#[inline(always)]
fn require_bins(hist: &DeviceSliceMut<u32>, bins: u32, offset: u32) {
    if bins == 0
        || bins > MAX_BINS
        || bins & (bins - 1) != 0
        || (offset as usize + bins as usize) > hist.len()
    {
        ptxlab_device::trap("histogram: bins must be a power of two <= MAX_BINS and fit in hist");
    }
}

/// Rung 1 (u8 keys): every key is one global `atomicAdd` on its bin.
///
/// Thread mapping: fixed grid, grid-stride over 16-byte groups (16 keys per
/// `ld.global.v4.u32`). No shared memory. What it costs: `n` atomics on only
/// `bins` global addresses, serialised per address in the L2, so the time is
/// set by atomic contention, not by the bytes read.
#[kernel(launch_bounds(1024), instances(u8, u32))]
pub fn histogram_global<T: Key>(
    keys: DeviceSlice<T>,
    hist: DeviceSliceMut<u32>,
    bins: u32,
    offset: u32,
) {
    require_bins(&hist, bins, offset);
    let mask = bins - 1;
    let base = offset as usize;
    scan_keys(keys, |k| {
        hist.atomic_add(base + (k & mask) as usize, 1);
    });
}

/// Rung 2 (u8 keys): privatised bins in shared memory.
///
/// What changed from rung 1: each block keeps its own `bins` u32 counters in
/// dynamic shared memory ([`histogram_shared_bytes`]), zeroes them, counts
/// its keys there with shared-memory atomics (`atom.shared.add.u32`, handled
/// in the SM, no L2 round trip, contention only among the block's threads),
/// then after a barrier adds each non-empty counter to the global histogram:
/// `bins` global atomics per block instead of one per key. What it buys: the
/// kernel becomes limited by the shared atomics and the loads, not by L2
/// contention.
#[kernel(launch_bounds(1024), instances(u8, u32))]
pub fn histogram_shared<T: Key>(
    keys: DeviceSlice<T>,
    hist: DeviceSliceMut<u32>,
    bins: u32,
    offset: u32,
) {
    require_bins(&hist, bins, offset);
    let s = shared::dynamic_shared::<u32>(0, bins as usize);
    let tid = thread::thread_idx_x() as usize;
    let bd = thread::block_dim_x() as usize;
    let mut b = tid;
    while b < bins as usize {
        s.set(b, 0);
        b += bd;
    }
    sync_threads();
    let mask = bins - 1;
    let counters = s.as_mut_ptr();
    scan_keys(keys, |k| {
        // SAFETY: `k & mask < bins = s.len()` because `bins` is a power of two
        // (checked by `require_bins`), so the counter lies in the block's view.
        unsafe { atomic::add(counters.add((k & mask) as usize), 1u32) };
    });
    sync_threads();
    let mut b = tid;
    while b < bins as usize {
        let c = s.get(b);
        if c != 0 {
            hist.atomic_add(offset as usize + b, c);
        }
        b += bd;
    }
}

