//! Vector add, `c[i] = a[i] + b[i]`: the first workload, and the smallest
//! complete example of a kernel.
//!
//! It is memory-bound: 2 reads and 1 write per element and one add, so the
//! only figure of merit is bytes per second against the device-to-device copy
//! bandwidth measured in the same run (12 bytes per f32 element).
//!
//! Launch shape: 1D, `BLOCK` threads per block, one thread per element (rung
//! 1) or per group of 16 bytes (rung 2). No shared memory.

use ptxlab_device::mem::{DeviceCopy, F32x4, F64x2};
use ptxlab_device::prelude::*;

/// Threads per block used by the host launchers.
pub const BLOCK: u32 = 256;

/// Rung 1: one element per thread.
///
/// Thread mapping: thread `i = blockIdx.x * blockDim.x + threadIdx.x` adds
/// element `i`; consecutive threads touch consecutive words, so each warp's
/// access is one coalesced transaction per array. Indexing is checked: `a[i]`
/// stops the kernel if `i >= a.len()` (the host launcher makes the three
/// lengths equal, so the checks never fire, but the kernel stays safe if
/// misused).
#[kernel(launch_bounds(1024), instances(f32, f64))]
pub fn vector_add<T: Real>(a: DeviceSlice<T>, b: DeviceSlice<T>, mut c: DeviceSliceMut<T>) {
    let i = thread::index_1d();
    if i < c.len() {
        c[i] = a[i] + b[i];
    }
}

/// Elements of `T` in one 16-byte access.
pub const fn lanes<T>() -> usize {
    16 / core::mem::size_of::<T>()
}

/// Element types of the wide rung: sixteen bytes of them in one access.
pub trait Wide: Real {
    /// Sixteen bytes of `Self`, aligned for one `ld.global.v4.f32` /
    /// `ld.global.v2.f64`.
    type V: DeviceCopy;
    /// The element-wise sum of two groups.
    fn add_lanes(x: Self::V, y: Self::V) -> Self::V;
}

impl Wide for f32 {
    type V = F32x4;
    #[inline(always)]
    fn add_lanes(x: F32x4, y: F32x4) -> F32x4 {
        F32x4([
            x.0[0] + y.0[0],
            x.0[1] + y.0[1],
            x.0[2] + y.0[2],
            x.0[3] + y.0[3],
        ])
    }
}

impl Wide for f64 {
    type V = F64x2;
    #[inline(always)]
    fn add_lanes(x: F64x2, y: F64x2) -> F64x2 {
        F64x2([x.0[0] + y.0[0], x.0[1] + y.0[1]])
    }
}

/// Rung 2: sixteen bytes per thread (four f32 or two f64) with 16-byte
/// loads and stores.
///
/// What changed: thread `i` handles elements `L i .. L i + L` (`L =
/// lanes::<T>()`) with one `ld.global.v4.f32` (`.v2.f64`) per input and one
/// 16-byte store. What it buys: a quarter (half) of the memory instructions
/// and more bytes in flight per thread, which is what it takes to get close
/// to the copy bandwidth on HBM3 (rung 1 leaves a few percent on the table).
/// The last thread handles the `n % L` tail element by element.
#[kernel(launch_bounds(1024), instances(f32, f64))]
pub fn vector_add_wide<T: Wide>(a: DeviceSlice<T>, b: DeviceSlice<T>, mut c: DeviceSliceMut<T>) {
    let n = c.len();
    if a.len() != n || b.len() != n {
        ptxlab_device::trap("vector_add_wide: lengths differ");
    }
    let l = lanes::<T>();
    let i = thread::index_1d();
    let first = i * l;
    if first + l <= n {
        // SAFETY: `first + l <= n` = each buffer's length, and device
        // allocations are 256-byte aligned, so group `i` is in bounds and aligned.
        unsafe {
            let x: T::V = a.get_vec_unchecked(i);
            let y: T::V = b.get_vec_unchecked(i);
            c.set_vec_unchecked(i, T::add_lanes(x, y));
        }
    } else {
        let mut j = first;
        while j < n {
            c[j] = a[j] + b[j];
            j += 1;
        }
    }
}

/// Threads needed by each rung for `n` elements.
pub const fn threads_needed(n: usize, per_thread: usize) -> usize {
    n.div_ceil(per_thread)
}
