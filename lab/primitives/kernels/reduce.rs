//! Sum reduction: the ladder from a shared-memory tree to a single-pass,
//! bandwidth-bound kernel, in f32, f64 and i32.
//!
//! Every rung writes (or atomically adds) the sum into `out[slot]`, so a
//! benchmark can hand each timed call its own pre-zeroed slot instead of
//! clearing the output inside the timed region.
//!
//! | rung | kernel | launches | what the block does |
//! |---|---|---|---|
//! | 1 | `reduce_tree_*` | `ceil(log_{2B} n)` passes | shared-memory tree, one partial per block |
//! | 2 | `reduce_shuffle_*` | as rung 1 | warp shuffles, one shared slot per warp |
//! | 3 | `reduce_atomic_thread_*` | 1 | nothing: every thread does `atomicAdd(out, x[i])` (the anti-pattern) |
//! | 4 | `reduce_atomic_warp_*` | 1 | warp shuffle, then one atomic per warp |
//! | 5 | `reduce_gridstride_*` | 1 | fixed grid, 16-byte loads, many elements per thread, one atomic per block |
//!
//! Integer sums wrap modulo 2^32 (two's complement), on the GPU, in the
//! simulator and in the CPU reference alike, so they are exact in any order.
//! Float sums depend on the order; the host checks them against an f64 sum
//! with the bound `|s - S| <= gamma_h * sum |x_i|`, `gamma_h = h u / (1 - h u)`,
//! where `h` is the depth of the rung's summation tree (see `SumPlan::depth` in
//! the room's host code, `lab/primitives/host/reduce.rs`) and `u` the unit roundoff.

use ptxlab_device::atomic::AtomicAdd;
use ptxlab_device::mem::{DeviceCopy, F32x4, F64x2};
use ptxlab_device::prelude::*;
use ptxlab_device::warp::ShuffleValue;

/// Threads per block of every reduction rung (a power of two, a multiple of 32).
pub const BLOCK: u32 = 256;

/// Four `i32` in one 16-byte aligned group, so a load is one `ld.global.v4`.
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct I32x4(pub [i32; 4]);
// SAFETY: a repr(C) array of i32: no padding, every bit pattern valid.
unsafe impl DeviceCopy for I32x4 {}

/// Element types the reductions sum: an addition (wrapping for integers),
/// warp shuffles, a hardware atomic add, and a 16-byte group for wide loads.
pub trait SumElem: Copy + ShuffleValue + AtomicAdd + DeviceCopy {
    /// Additive identity.
    const ZERO: Self;
    /// `self + o`; wraps for integers.
    fn add(self, o: Self) -> Self;
    /// 16 bytes of elements, aligned for one wide load.
    type Group: DeviceCopy;
    /// Elements per [`Self::Group`].
    const LANES: usize;
    /// The zero group.
    const GROUP_ZERO: Self::Group;
    /// Lane-wise sum of two groups.
    fn group_add(a: Self::Group, b: Self::Group) -> Self::Group;
    /// Sum of the lanes of a group, pairwise (depth `log2(LANES)`).
    fn group_total(a: Self::Group) -> Self;
}

impl SumElem for f32 {
    const ZERO: Self = 0.0;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self + o
    }
    type Group = F32x4;
    const LANES: usize = 4;
    const GROUP_ZERO: F32x4 = F32x4([0.0; 4]);
    #[inline(always)]
    fn group_add(a: F32x4, b: F32x4) -> F32x4 {
        F32x4([
            a.0[0] + b.0[0],
            a.0[1] + b.0[1],
            a.0[2] + b.0[2],
            a.0[3] + b.0[3],
        ])
    }
    #[inline(always)]
    fn group_total(a: F32x4) -> f32 {
        (a.0[0] + a.0[1]) + (a.0[2] + a.0[3])
    }
}

impl SumElem for f64 {
    const ZERO: Self = 0.0;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self + o
    }
    type Group = F64x2;
    const LANES: usize = 2;
    const GROUP_ZERO: F64x2 = F64x2([0.0; 2]);
    #[inline(always)]
    fn group_add(a: F64x2, b: F64x2) -> F64x2 {
        F64x2([a.0[0] + b.0[0], a.0[1] + b.0[1]])
    }
    #[inline(always)]
    fn group_total(a: F64x2) -> f64 {
        a.0[0] + a.0[1]
    }
}

impl SumElem for i32 {
    const ZERO: Self = 0;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    type Group = I32x4;
    const LANES: usize = 4;
    const GROUP_ZERO: I32x4 = I32x4([0; 4]);
    #[inline(always)]
    fn group_add(a: I32x4, b: I32x4) -> I32x4 {
        I32x4([
            a.0[0].wrapping_add(b.0[0]),
            a.0[1].wrapping_add(b.0[1]),
            a.0[2].wrapping_add(b.0[2]),
            a.0[3].wrapping_add(b.0[3]),
        ])
    }
    #[inline(always)]
    fn group_total(a: I32x4) -> i32 {
        a.0[0]
            .wrapping_add(a.0[1])
            .wrapping_add(a.0[2].wrapping_add(a.0[3]))
    }
}

/// Hit counts of the Monte-Carlo kernel (no wide loads: the group is unused).
impl SumElem for u64 {
    const ZERO: Self = 0;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    type Group = [u64; 2];
    const LANES: usize = 2;
    const GROUP_ZERO: [u64; 2] = [0; 2];
    #[inline(always)]
    fn group_add(a: [u64; 2], b: [u64; 2]) -> [u64; 2] {
        [a[0].wrapping_add(b[0]), a[1].wrapping_add(b[1])]
    }
    #[inline(always)]
    fn group_total(a: [u64; 2]) -> u64 {
        a[0].wrapping_add(a[1])
    }
}

/// Dynamic shared memory of the tree rung: one element per thread.
pub const fn tree_shared_bytes<T>(block: u32) -> usize {
    shared::shared_bytes::<T>(0, block as usize)
}

/// Dynamic shared memory of the shuffle-based block sum: one slot per warp.
pub const fn warp_slots_shared_bytes<T>(block: u32) -> usize {
    shared::shared_bytes::<T>(0, block.div_ceil(WARP_SIZE) as usize)
}

/// Elements one block of the two multi-pass rungs consumes (two per thread).
pub const fn per_block_multipass(block: u32) -> usize {
    2 * block as usize
}

/// Stops the kernel unless the block is 1D and made of whole warps (the
/// shuffle reductions use the full mask), and a power of two when `pow2`.
#[inline(always)]
pub(crate) fn require_block(pow2: bool) {
    let b = thread::block_dim_x();
    if !b.is_multiple_of(WARP_SIZE)
        || thread::block_dim_y() != 1
        || thread::block_dim_z() != 1
        || (pow2 && b & (b - 1) != 0)
    {
        ptxlab_device::trap(
            "reduction kernels need a 1D block of whole warps (a power of two for the tree)",
        );
    }
}

/// Butterfly sum over a full warp (`shfl.bfly` 16, 8, 4, 2, 1): every lane
/// ends with the warp's total, depth 5.
#[inline(always)]
pub fn warp_sum<T: SumElem>(v: T) -> T {
    let mut v = v;
    let mut m = 16;
    while m > 0 {
        v = v.add(warp::shfl_xor(FULL_MASK, v, m));
        m /= 2;
    }
    v
}

/// Block sum by shuffles: each warp reduces by [`warp_sum`], lane 0 of each
/// warp writes one slot of `slots` (one per warp), and warp 0 reduces the
/// slots. The result is valid in warp 0 (thread 0 uses it). Every thread of
/// the block must call it (it contains a barrier); the block is made of whole
/// warps. Depth: `5 + log2(warps)`.
#[inline(always)]
pub fn block_sum<T: SumElem>(v: T, slots: SharedSlice<T>) -> T {
    let lane = warp::lane_id();
    let w = warp::warp_id();
    let s = warp_sum(v);
    if lane == 0 {
        slots.set(w as usize, s);
    }
    sync_threads();
    let warps = thread::block_dim_x() / WARP_SIZE;
    let mut total = T::ZERO;
    if w == 0 {
        let mine = if lane < warps {
            slots.get(lane as usize)
        } else {
            T::ZERO
        };
        total = warp_sum(mine);
    }
    total
}

/// The first add of the multi-pass rungs: thread `t` of block `b` loads
/// `x[2bB + t]` and `x[2bB + B + t]` (zero past the end) and adds them.
#[inline(always)]
fn load_pair<T: SumElem>(x: DeviceSlice<T>) -> T {
    let b = thread::block_dim_x() as usize;
    let i = thread::block_idx_x() as usize * 2 * b + thread::thread_idx_x() as usize;
    let n = x.len();
    let mut v = T::ZERO;
    if i < n {
        v = x.get(i);
    }
    if i + b < n {
        v = v.add(x.get(i + b));
    }
    v
}

/// Rung 1: the classic shared-memory tree (sequential addressing).
///
/// Thread mapping: block `b` of `B` threads reduces `x[2bB .. 2bB + 2B]`;
/// thread `t` adds elements `2bB + t` and `2bB + B + t` while loading (so no
/// thread idles in the first step), stores the pair sum in `s[t]`, then
/// `log2(B)` halving steps `s[t] += s[t + stride]` each end with a barrier.
/// Thread 0 writes the block's partial to `out[offset + b]`; the host
/// launches again on the partials until one value is left (`offset` = the
/// caller's slot on the last pass).
/// Shared memory: `B` elements ([`tree_shared_bytes`]); `B` must be a power
/// of two. What it buys over a serial sum: `n/2B` blocks in parallel and
/// coalesced loads; what it costs: `log2(B)` barriers and shared round trips
/// per block, idle threads in every step, and a launch per pass.
#[kernel(launch_bounds(1024), instances(f32, f64, i32))]
pub fn reduce_tree<T: SumElem>(x: DeviceSlice<T>, out: DeviceSliceMut<T>, offset: u32) {
    require_block(true);
    let b = thread::block_dim_x() as usize;
    let tid = thread::thread_idx_x() as usize;
    let s = shared::dynamic_shared::<T>(0, b);
    s.set(tid, load_pair(x));
    sync_threads();
    let mut stride = b / 2;
    while stride > 0 {
        if tid < stride {
            s.set(tid, s.get(tid).add(s.get(tid + stride)));
        }
        sync_threads();
        stride /= 2;
    }
    if tid == 0 {
        out.set(offset as usize + thread::block_idx_x() as usize, s.get(0));
    }
}

/// Rung 2: the same passes as rung 1, block sum by warp shuffles.
///
/// What changed: after the pair add, each warp sums its 32 values with five
/// `shfl.sync.bfly` steps (registers only, no barrier), lane 0 writes one
/// shared slot per warp ([`warp_slots_shared_bytes`]: `B/32` elements), one
/// barrier, and warp 0 sums the slots by shuffles. What it buys: one barrier
/// instead of `log2(B)`, `B/32` shared stores instead of `2B`, no idle-thread
/// steps. Passes and launches are as in rung 1.
#[kernel(launch_bounds(1024), instances(f32, f64, i32))]
pub fn reduce_shuffle<T: SumElem>(x: DeviceSlice<T>, out: DeviceSliceMut<T>, offset: u32) {
    require_block(false);
    let slots = shared::dynamic_shared::<T>(0, thread::block_dim_x().div_ceil(WARP_SIZE) as usize);
    let s = block_sum(load_pair(x), slots);
    if thread::thread_idx_x() == 0 {
        out.set(offset as usize + thread::block_idx_x() as usize, s);
    }
}

/// Rung 3: one `atomicAdd(&out[slot], x[i])` per thread: the
/// anti-pattern, measured.
///
/// Thread mapping: one element per thread, `n/B` blocks; `out[slot]` must be
/// zero before the launch. No shared memory, one launch. What it costs: all
/// `n` atomics hit one address, and the L2 serialises same-address atomics,
/// so the time grows with `n` at the atomic unit's rate, far below the
/// memory bandwidth. The float result depends on the (arbitrary) order.
#[kernel(launch_bounds(1024), instances(f32, f64, i32))]
pub fn reduce_atomic_thread<T: SumElem>(x: DeviceSlice<T>, out: DeviceSliceMut<T>, slot: u32) {
    let i = thread::index_1d();
    if i < x.len() {
        out.atomic_add(slot as usize, x.get(i));
    }
}

/// Rung 4: warp-aggregated atomics.
///
/// What changed from rung 3: the 32 lanes of a warp first sum their elements
/// with five shuffles (threads past the end contribute 0 and still take part,
/// so the full mask holds), then lane 0 alone does the atomic. What it buys:
/// 32x fewer atomics on the contended address, with no shared memory and no
/// barrier. Still one element per thread and `n/B` blocks.
#[kernel(launch_bounds(1024), instances(f32, f64, i32))]
pub fn reduce_atomic_warp<T: SumElem>(x: DeviceSlice<T>, out: DeviceSliceMut<T>, slot: u32) {
    require_block(false);
    let i = thread::index_1d();
    let v = if i < x.len() { x.get(i) } else { T::ZERO };
    let s = warp_sum(v);
    let first = i - warp::lane_id() as usize;
    if warp::lane_id() == 0 && first < x.len() {
        out.atomic_add(slot as usize, s);
    }
}

/// Rung 5: single pass over a fixed grid, 16-byte loads, one atomic
/// per block.
///
/// Thread mapping: a grid of about 8 blocks per SM (enough resident threads
/// to fill the SMs, independent of `n`); thread `i` of `T` threads reads the
/// 16-byte groups `i, i + T, i + 2T, ...` (`ld.global.v4.f32`, two loads in
/// flight per iteration into two accumulators), adds the lanes, takes one of
/// the `n % 4` tail elements, then the block sums by shuffles
/// ([`block_sum`], one shared slot per warp) and thread 0 does one atomic
/// into `out[slot]` (zero before the launch). What it buys over rungs 1-4:
/// one launch, a quarter of the load instructions, thousands of bytes in
/// flight per SM, and only `grid` atomics, so the kernel runs at the read
/// bandwidth of the memory.
#[kernel(launch_bounds(1024), instances(f32, f64, i32))]
pub fn reduce_gridstride<T: SumElem>(x: DeviceSlice<T>, out: DeviceSliceMut<T>, slot: u32) {
    require_block(false);
    let n = x.len();
    let groups = n / T::LANES;
    let stride = thread::grid_size_1d();
    let mut g = thread::index_1d();
    let mut a = T::GROUP_ZERO;
    let mut b = T::GROUP_ZERO;
    // Two independent 16-byte loads in flight per iteration and per thread.
    while g + stride < groups {
        // SAFETY: `g < g + stride < groups = n / LANES`, so both groups lie
        // inside the buffer; device allocations are 256-byte aligned.
        let (u, w) = unsafe {
            (
                x.get_vec_unchecked::<T::Group>(g),
                x.get_vec_unchecked::<T::Group>(g + stride),
            )
        };
        a = T::group_add(a, u);
        b = T::group_add(b, w);
        g += 2 * stride;
    }
    if g < groups {
        // SAFETY: `g < groups`, as above.
        a = T::group_add(a, unsafe { x.get_vec_unchecked::<T::Group>(g) });
    }
    let mut v = T::group_total(T::group_add(a, b));
    // The last `n % LANES` elements, one per thread of the first threads.
    let tail = groups * T::LANES + thread::index_1d();
    if tail < n {
        v = v.add(x.get(tail));
    }
    let slots = shared::dynamic_shared::<T>(0, thread::block_dim_x().div_ceil(WARP_SIZE) as usize);
    let s = block_sum(v, slots);
    if thread::thread_idx_x() == 0 {
        out.atomic_add(slot as usize, s);
    }
}

