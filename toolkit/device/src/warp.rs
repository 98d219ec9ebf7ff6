//! Warp-level primitives: shuffles, votes and reductions.
//!
//! A warp is 32 consecutive threads of a block (by [`thread_rank`](crate::thread::thread_rank)).
//! Every function takes the `mask` of lanes that take part, as the `*_sync`
//! intrinsics of CUDA do: each lane named in it must make the same call.
//!
//! Rules followed on the GPU and reproduced by the simulator:
//! * `shfl_down(v, d)`: lane `i` gets lane `i + d`'s value, or its own when
//!   `i + d > 31`; `shfl_up` likewise with `i - d < 0`; `shfl_xor(v, m)` reads
//!   lane `i ^ m`; `shfl_idx(v, s)` reads lane `s % 32`.
//! * Reading a lane that does not take part (outside `mask`, or beyond the end
//!   of a partial last warp) is undefined on the GPU; the simulator returns the
//!   reader's own value and the tests do not rely on it.
//! * Votes only count the lanes in `mask` that exist.

/// Threads per warp on every NVIDIA GPU to date.
pub const WARP_SIZE: u32 = 32;
/// All 32 lanes.
pub const FULL_MASK: u32 = 0xffff_ffff;

/// Values a shuffle can move: 32-bit types in one `shfl.sync`, 64-bit types in two.
pub trait ShuffleValue: Copy {
    /// The value as (low, high) 32-bit words.
    fn to_words(self) -> (u32, u32);
    /// Rebuild from words.
    fn from_words(lo: u32, hi: u32) -> Self;
    /// `true` for 64-bit types (two shuffles on the GPU).
    const WIDE: bool;
}
impl ShuffleValue for u32 {
    fn to_words(self) -> (u32, u32) {
        (self, 0)
    }
    fn from_words(lo: u32, _: u32) -> Self {
        lo
    }
    const WIDE: bool = false;
}
impl ShuffleValue for i32 {
    fn to_words(self) -> (u32, u32) {
        (self as u32, 0)
    }
    fn from_words(lo: u32, _: u32) -> Self {
        lo as i32
    }
    const WIDE: bool = false;
}
impl ShuffleValue for f32 {
    fn to_words(self) -> (u32, u32) {
        (self.to_bits(), 0)
    }
    fn from_words(lo: u32, _: u32) -> Self {
        f32::from_bits(lo)
    }
    const WIDE: bool = false;
}
impl ShuffleValue for f64 {
    fn to_words(self) -> (u32, u32) {
        let b = self.to_bits();
        (b as u32, (b >> 32) as u32)
    }
    fn from_words(lo: u32, hi: u32) -> Self {
        f64::from_bits(lo as u64 | ((hi as u64) << 32))
    }
    const WIDE: bool = true;
}
impl ShuffleValue for u64 {
    fn to_words(self) -> (u32, u32) {
        (self as u32, (self >> 32) as u32)
    }
    fn from_words(lo: u32, hi: u32) -> Self {
        lo as u64 | ((hi as u64) << 32)
    }
    const WIDE: bool = true;
}

#[derive(Clone, Copy)]
enum Mode {
    Idx,
    Up,
    Down,
    Xor,
}

#[cfg(target_arch = "nvptx64")]
mod imp {
    use super::Mode;
    #[allow(improper_ctypes)]
    unsafe extern "C" {
        #[link_name = "llvm.nvvm.shfl.sync.idx.i32"]
        fn shfl_idx(mask: u32, v: u32, b: u32, c: u32) -> u32;
        #[link_name = "llvm.nvvm.shfl.sync.up.i32"]
        fn shfl_up(mask: u32, v: u32, b: u32, c: u32) -> u32;
        #[link_name = "llvm.nvvm.shfl.sync.down.i32"]
        fn shfl_down(mask: u32, v: u32, b: u32, c: u32) -> u32;
        #[link_name = "llvm.nvvm.shfl.sync.bfly.i32"]
        fn shfl_bfly(mask: u32, v: u32, b: u32, c: u32) -> u32;
        #[link_name = "llvm.nvvm.vote.ballot.sync"]
        fn vote_ballot(mask: u32, p: bool) -> u32;
        #[link_name = "llvm.nvvm.activemask"]
        fn activemask() -> u32;
        #[link_name = "llvm.nvvm.read.ptx.sreg.laneid"]
        fn laneid() -> u32;
    }
    #[inline(always)]
    pub fn shfl_word(mode: Mode, mask: u32, v: u32, b: u32) -> u32 {
        // SAFETY: `shfl.sync` with a clamp for a full 32-lane width; the mask
        // contract (every named lane calls it) is the caller's, as in CUDA.
        unsafe {
            match mode {
                Mode::Idx => shfl_idx(mask, v, b, 0x1f),
                Mode::Up => shfl_up(mask, v, b, 0),
                Mode::Down => shfl_down(mask, v, b, 0x1f),
                Mode::Xor => shfl_bfly(mask, v, b, 0x1f),
            }
        }
    }
    #[inline(always)]
    pub fn ballot(mask: u32, p: bool) -> u32 {
        // SAFETY: `vote.sync.ballot.b32`; mask contract as above.
        unsafe { vote_ballot(mask, p) }
    }
    #[inline(always)]
    pub fn active_mask() -> u32 {
        // SAFETY: `activemask.b32` has no preconditions.
        unsafe { activemask() }
    }
    #[inline(always)]
    pub fn lane_id() -> u32 {
        // SAFETY: reads `%laneid`.
        unsafe { laneid() }
    }
}

#[inline(always)]
#[track_caller]
fn shuffle<T: ShuffleValue>(mode: Mode, mask: u32, v: T, b: u32) -> T {
    #[cfg(target_arch = "nvptx64")]
    {
        let (lo, hi) = v.to_words();
        let lo = imp::shfl_word(mode, mask, lo, b);
        let hi = if T::WIDE {
            imp::shfl_word(mode, mask, hi, b)
        } else {
            0
        };
        T::from_words(lo, hi)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let (lo, hi) = v.to_words();
        let mine = lo as u64 | ((hi as u64) << 32);
        let lane = lane_id();
        let src = match mode {
            Mode::Idx => Some(b % 32),
            Mode::Up => lane.checked_sub(b),
            Mode::Down => Some(lane + b).filter(|s| *s < 32),
            Mode::Xor => Some(lane ^ b).filter(|s| *s < 32),
        };
        let bits = crate::sim::warp_shuffle(mask, mine, src);
        T::from_words(bits as u32, (bits >> 32) as u32)
    }
}

/// `__shfl_sync`: the value of lane `src_lane % 32`.
#[inline(always)]
#[track_caller]
pub fn shfl_idx<T: ShuffleValue>(mask: u32, v: T, src_lane: u32) -> T {
    shuffle(Mode::Idx, mask, v, src_lane)
}
/// `__shfl_up_sync`: the value of lane `lane - delta` (own value below 0).
#[inline(always)]
#[track_caller]
pub fn shfl_up<T: ShuffleValue>(mask: u32, v: T, delta: u32) -> T {
    shuffle(Mode::Up, mask, v, delta)
}
/// `__shfl_down_sync`: the value of lane `lane + delta` (own value past 31).
#[inline(always)]
#[track_caller]
pub fn shfl_down<T: ShuffleValue>(mask: u32, v: T, delta: u32) -> T {
    shuffle(Mode::Down, mask, v, delta)
}
/// `__shfl_xor_sync`: the value of lane `lane ^ lane_mask` (butterfly).
#[inline(always)]
#[track_caller]
pub fn shfl_xor<T: ShuffleValue>(mask: u32, v: T, lane_mask: u32) -> T {
    shuffle(Mode::Xor, mask, v, lane_mask)
}

/// `__ballot_sync`: bit `i` set when lane `i` is in `mask` and its `pred` is true.
#[inline(always)]
#[track_caller]
pub fn ballot(mask: u32, pred: bool) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        imp::ballot(mask, pred)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::sim::warp_ballot(mask, pred)
    }
}
/// `__all_sync`: true when `pred` holds on every lane of `mask`.
#[inline(always)]
#[track_caller]
pub fn all(mask: u32, pred: bool) -> bool {
    let b = ballot(mask, pred);
    b == ballot(mask, true)
}
/// `__any_sync`: true when `pred` holds on some lane of `mask`.
#[inline(always)]
#[track_caller]
pub fn any(mask: u32, pred: bool) -> bool {
    ballot(mask, pred) != 0
}

/// `__activemask`: the lanes executing this call together.
///
/// In the simulator every existing lane of the warp counts as active (it
/// cannot see divergence without a collective), which matches a converged warp.
#[inline(always)]
pub fn active_mask() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        imp::active_mask()
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::sim::with_thread(|t| t.warp_present)
    }
}

/// This thread's lane in its warp (0..32).
#[inline(always)]
pub fn lane_id() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        imp::lane_id()
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::thread::thread_rank() % WARP_SIZE
    }
}

/// This thread's warp within its block.
#[inline(always)]
pub fn warp_id() -> u32 {
    crate::thread::thread_rank() / WARP_SIZE
}

/// Sum over the 32 lanes of a full warp by a butterfly (`shfl.bfly` 16, 8, 4,
/// 2, 1): five steps, no shared memory, and every lane ends with the total.
#[inline(always)]
#[track_caller]
pub fn reduce_sum<T: ShuffleValue + core::ops::Add<Output = T>>(v: T) -> T {
    let mut v = v;
    let mut m = 16;
    while m > 0 {
        v = v + shfl_xor(FULL_MASK, v, m);
        m /= 2;
    }
    v
}

/// Maximum over the 32 lanes of a full warp (butterfly).
#[inline(always)]
#[track_caller]
pub fn reduce_max<T: ShuffleValue + PartialOrd>(v: T) -> T {
    let mut v = v;
    let mut m = 16;
    while m > 0 {
        let o = shfl_xor(FULL_MASK, v, m);
        if o > v {
            v = o;
        }
        m /= 2;
    }
    v
}
