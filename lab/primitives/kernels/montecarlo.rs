//! Monte-Carlo estimate of pi: the fraction of uniform points of the unit
//! square inside the quarter disc is pi/4.
//!
//! Random numbers: one xoroshiro128+ generator per GPU thread, seeded on the
//! GPU from the run's seed and the thread's global id
//! (`SplitMix64(SplitMix64(seed) ^ id)` expanded into the two state words). The
//! generator and the per-thread sample loop are plain Rust functions
//! ([`Xoroshiro128Plus`], [`thread_hits`], [`samples_for_thread`]) that the
//! kernel and the CPU baseline both call, so for the same seed and the same
//! thread layout the CPU and the GPU count exactly the same hits.
//!
//! Why not the material's version: it built the generator states inside the
//! kernel from one shared seed (and again on every call). If every thread
//! seeds from the same value, all threads draw the same stream: `T` threads
//! produce `T` copies of one sample sequence, and the error shrinks like
//! `1/sqrt(samples per thread)`, not `1/sqrt(total samples)`. Re-seeding with
//! the same seed on every call repeats the same numbers call after call, so
//! averaging calls gains nothing. Here every thread has its own state derived
//! from its id (distinct, decorrelated streams: SplitMix64 is a bijective
//! mixer of `seed ^ id`, and xoroshiro128+ has period 2^128 - 1, so streams of
//! thousands of draws do not overlap in practice), and a new seed per call
//! gives new numbers.
//!
//! Per sample: one 64-bit output gives both coordinates, `x` = bits 40..63
//! and `y` = bits 16..39 (the top 24 bits each; the lowest bits of
//! xoroshiro128+ are its weak ones and are not used). The point
//! `(x / 2^24, y / 2^24)` is inside when `x^2 + y^2 < 2^48`, computed exactly
//! in integers (two `mul.wide.u32`), which is the exact comparison of the
//! f32 values `x / 2^24`, `y / 2^24` without any rounding.

use ptxlab_device::prelude::*;

/// Threads per block.
pub const BLOCK: u32 = 256;
/// Blocks of the default layout: 132 SMs x 32 (four waves of 8 resident
/// blocks of 256 threads per SM on an H100). The layout is fixed, not read
/// from the GPU, so a seed gives the same count on every GPU and on the CPU.
pub const DEFAULT_BLOCKS: u32 = 132 * 32;

/// Dynamic shared memory of the kernel: one u64 slot per warp.
pub const fn pi_shared_bytes(block: u32) -> usize {
    crate::reduce::warp_slots_shared_bytes::<u64>(block)
}

/// One SplitMix64 step (the same as the host's `rng::SplitMix64`).
#[inline(always)]
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// xoroshiro128+ (Blackman and Vigna, parameters 24, 16, 37).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Xoroshiro128Plus {
    /// State word 0.
    pub s0: u64,
    /// State word 1.
    pub s1: u64,
}

impl Xoroshiro128Plus {
    /// The state of stream `id` for `seed`: the seed is hashed first
    /// (`k = SplitMix64(seed)`), then `SplitMix64(k ^ id)` gives the two
    /// words (never both zero).
    ///
    /// Hashing the seed first matters: with `SplitMix64(seed ^ id)` directly,
    /// seeds 1 and 2 over 256 threads give the *same set* of streams
    /// (`1 ^ id` and `2 ^ id` run over the same ids), only permuted among
    /// the threads, so two "different" runs count exactly the same hits.
    #[inline(always)]
    pub fn seeded(seed: u64, id: u64) -> Self {
        let mut k = seed;
        let mut z = splitmix64(&mut k) ^ id;
        let s0 = splitmix64(&mut z);
        let s1 = splitmix64(&mut z);
        if s0 | s1 == 0 {
            Self { s0: 1, s1: 0 }
        } else {
            Self { s0, s1 }
        }
    }
    /// Next 64 bits.
    #[inline(always)]
    pub fn next_u64(&mut self) -> u64 {
        let s0 = self.s0;
        let mut s1 = self.s1;
        let r = s0.wrapping_add(s1);
        s1 ^= s0;
        self.s0 = s0.rotate_left(24) ^ s1 ^ (s1 << 16);
        self.s1 = s1.rotate_left(37);
        r
    }
}

/// 1 when the point drawn from 64 random bits is outside the quarter disc,
/// 0 inside. `x^2 + y^2 < 2^49`, so bit 48 alone says which: counting misses
/// as `d >> 48` costs one shift and one add, no compare and select.
#[inline(always)]
pub fn outside(r: u64) -> u32 {
    let x = (r >> 40) as u32;
    let y = ((r >> 16) as u32) & 0x00FF_FFFF;
    let d = (x as u64) * (x as u64) + (y as u64) * (y as u64);
    (d >> 48) as u32
}

/// Whether the point drawn from 64 random bits is inside the quarter disc.
#[inline(always)]
pub fn inside(r: u64) -> bool {
    outside(r) == 0
}

/// Samples thread `id` of `threads` draws for `total` samples: `total /
/// threads`, plus one for the first `total % threads` threads.
#[inline(always)]
pub fn samples_for_thread(total: u64, threads: u64, id: u64) -> u64 {
    total / threads + (id < total % threads) as u64
}

/// Hits among `count` samples of stream `id` for `seed`: the whole
/// per-thread work, shared by the kernel and the CPU baseline.
#[inline(always)]
pub fn thread_hits(seed: u64, id: u64, count: u32) -> u32 {
    let mut g = Xoroshiro128Plus::seeded(seed, id);
    let mut misses = 0u32;
    let mut i = 0u32;
    while i < count {
        misses += outside(g.next_u64());
        i += 1;
    }
    count - misses
}

/// Monte-Carlo pi: `total` samples over the launch's threads; the hit count
/// is added to `hits[slot]` (zero before the launch).
///
/// Thread mapping: thread `id` (global 1D index) of `T` threads draws
/// [`samples_for_thread`]`(total, T, id)` samples from its own generator
/// ([`thread_hits`]); the host keeps that below 2^32. The block sums its
/// threads' counts by warp shuffles with one u64 shared slot per warp
/// ([`pi_shared_bytes`]), and thread 0 does one `atom.add.u64` per block.
/// `launch_bounds(256, 8)` caps registers at 32 so 8 blocks (2048 threads)
/// fit per SM: the loop is integer ALU work (about 17 instructions per
/// sample), latency is hidden by occupancy, and memory is touched once per
/// block.
#[kernel(launch_bounds(256, 8))]
pub fn montecarlo_pi(hits: DeviceSliceMut<u64>, slot: u32, seed: u64, total: u64) {
    crate::reduce::require_block(false);
    let id = thread::index_1d() as u64;
    let threads = thread::grid_size_1d() as u64;
    let count = samples_for_thread(total, threads, id);
    if count > u32::MAX as u64 {
        ptxlab_device::trap("montecarlo_pi: more than 2^32 - 1 samples per thread");
    }
    let h = thread_hits(seed, id, count as u32) as u64;
    let slots =
        shared::dynamic_shared::<u64>(0, thread::block_dim_x().div_ceil(WARP_SIZE) as usize);
    let s = crate::reduce::block_sum(h, slots);
    if thread::thread_idx_x() == 0 {
        hits.atomic_add(slot as usize, s);
    }
}
