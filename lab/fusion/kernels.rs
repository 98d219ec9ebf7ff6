//! Kernel fusion and launch overhead.
//!
//! The pipeline `y = a*x + b; z = y*y; w = sqrt(z) + c` (f32, elementwise) as
//! three kernels ([`fusion_axpb_f32`], [`fusion_square_f32`],
//! [`fusion_sqrt_add_f32`]: 3 reads + 3 writes per element, 24 bytes) and as
//! one ([`fusion_fused_f32`]: 1 read + 1 write, 8 bytes). All are
//! memory-bound, so fusion should be about 3x faster.
//!
//! [`fusion_tiny_f32`] is the unit of the launch-overhead experiment: a
//! kernel that does almost nothing, launched many times plainly and from a
//! CUDA graph.
//!
//! Launch shape of the pipeline kernels: 1D, [`BLOCK`] threads, four
//! consecutive elements per thread with 16-byte loads and stores (the last
//! thread does the `n % 4` tail one element at a time).

use ptxlab_device::mem::F32x4;
use ptxlab_device::prelude::*;

/// Threads per block of the pipeline kernels.
pub const BLOCK: u32 = 256;
/// Elements per thread of the pipeline kernels.
pub const PER_THREAD: usize = 4;
/// Threads per block (and elements) of the tiny kernel.
pub const TINY_THREADS: u32 = 32;

/// Stage 1: `a*x + b`.
#[inline(always)]
pub fn stage1(x: f32, a: f32, b: f32) -> f32 {
    a * x + b
}
/// Stage 2: `y*y`.
#[inline(always)]
pub fn stage2(y: f32) -> f32 {
    y * y
}
/// Stage 3: `sqrt(z) + c` (IEEE `sqrt.rn`).
#[inline(always)]
pub fn stage3(z: f32, c: f32) -> f32 {
    Real::sqrt(z) + c
}

#[inline(always)]
fn map4(x: DeviceSlice<f32>, y: DeviceSliceMut<f32>, f: impl Fn(f32) -> f32) {
    let n = y.len();
    if x.len() != n {
        ptxlab_device::trap("fusion: input and output lengths differ");
    }
    let i = thread::index_1d();
    let first = i * PER_THREAD;
    if first + PER_THREAD <= n {
        // SAFETY: the group `first..first+4` is inside both buffers (checked
        // above, lengths equal) and device allocations are 256-byte aligned.
        unsafe {
            let v: F32x4 = x.get_vec_unchecked(i);
            y.set_vec_unchecked(i, F32x4([f(v.0[0]), f(v.0[1]), f(v.0[2]), f(v.0[3])]));
        }
    } else {
        let mut j = first;
        while j < n {
            y.set(j, f(x.get(j)));
            j += 1;
        }
    }
}

/// Unfused step 1: `y = a*x + b`. 8 bytes per element.
#[kernel(launch_bounds(256))]
pub fn fusion_axpb_f32(x: DeviceSlice<f32>, y: DeviceSliceMut<f32>, a: f32, b: f32) {
    map4(x, y, |v| stage1(v, a, b));
}

/// Unfused step 2: `z = y*y`. 8 bytes per element.
#[kernel(launch_bounds(256))]
pub fn fusion_square_f32(y: DeviceSlice<f32>, z: DeviceSliceMut<f32>) {
    map4(y, z, stage2);
}

/// Unfused step 3: `w = sqrt(z) + c`. 8 bytes per element.
#[kernel(launch_bounds(256))]
pub fn fusion_sqrt_add_f32(z: DeviceSlice<f32>, w: DeviceSliceMut<f32>, c: f32) {
    map4(z, w, |v| stage3(v, c));
}

/// Fused: `w = sqrt((a*x + b)^2) + c` in one pass.
///
/// What changed: the three steps run back to back in registers; the
/// intermediates `y` and `z` never reach memory. What it buys: 8 bytes per
/// element instead of 24, and one launch instead of three. The arithmetic is
/// the same expressions in the same order, so the result is bitwise equal to
/// the unfused pipeline.
#[kernel(launch_bounds(256))]
pub fn fusion_fused_f32(x: DeviceSlice<f32>, w: DeviceSliceMut<f32>, a: f32, b: f32, c: f32) {
    map4(x, w, |v| stage3(stage2(stage1(v, a, b)), c));
}

/// The tiny kernel of the launch-overhead experiment: thread `i` of one
/// block adds 1 to `x[i]` (for `i < x.len()`). It runs for well under a
/// microsecond, so a sequence of them measures the launch path: the plain
/// launch cost per kernel, or the per-node cost of a CUDA graph replay. After
/// `N` launches every element has grown by exactly `N` (exact in f32 up to
/// 2^24), which is how the host checks that none was lost.
#[kernel(launch_bounds(32))]
pub fn fusion_tiny_f32(x: DeviceSliceMut<f32>) {
    let i = thread::index_1d();
    if i < x.len() {
        x.set(i, x.get(i) + 1.0);
    }
}
