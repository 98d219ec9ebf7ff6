//! The GPU kernels of this project, in `#![no_std]` Rust.
//!
//! Each `#[kernel]` function compiles twice: for `nvptx64-nvidia-cuda`, where
//! it becomes a PTX `.entry` (build.rs does that with ptxlab-builder), and for
//! the host, where the CPU simulator runs it once per simulated thread. A
//! generic kernel names the instances to build (`instances(f32, f64)`): each
//! is an entry of its own (`axpy_f32`, `axpy_f64`). Add a kernel by writing
//! another `#[kernel] pub fn` here; launch it from src/main.rs with
//! `launch!(&dev, &KERNELS, cfg, kernels::your_kernel(...))`, or
//! `kernels::your_kernel::<f64>(...)` for an instance of a generic one.
//!
//! The kernels that need sm_90 (thread-block clusters: [`cluster`]) sit in
//! a module of their own, compiled for the host and, on `nvptx64`, with
//! the `sm90` feature only: `build.rs` builds the crate a second time with
//! it into an `sm_90` PTX module, which the runtime loads on an H100 or
//! newer, while the portable module stays loadable on sm_80. (That module
//! holds the portable kernels too; the runtime launches each kernel from
//! the newest module that holds it and runs on the GPU.)
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_gpu_kernel))]

use ptxlab_device::prelude::*;

#[cfg(any(not(target_arch = "nvptx64"), feature = "sm90"))]
pub mod cluster;

/// Threads per block of both kernels (and their launch bounds).
pub const BLOCK: u32 = 256;

/// `out[i] = a * x[i] + y[i]`.
///
/// Thread mapping: one element per thread, `i = blockIdx.x * blockDim.x +
/// threadIdx.x`; consecutive threads touch consecutive words, so every warp's
/// loads and stores are coalesced. No shared memory. Memory-bound: 12 bytes
/// per element.
///
/// `launch_bounds(256)` and `max_registers = 32` become the `.maxntid 256`
/// and `.maxnreg 32` directives of its PTX entry, which `ptxas` honours.
#[kernel(launch_bounds(256), max_registers = 32)]
pub fn saxpy(a: f32, x: DeviceSlice<f32>, y: DeviceSlice<f32>, mut out: DeviceSliceMut<f32>) {
    let i = thread::index_1d();
    if i < out.len() {
        out[i] = a.mul_add(x[i], y[i]);
    }
}

/// `y[i] = a * x[i] + y[i]`, for f32 and f64: one generic kernel, two PTX
/// entries (`axpy_f32`, `axpy_f64`). `T: Real` gives the arithmetic; the
/// host launches an instance by its type: `kernels::axpy::<f64>(...)`.
///
/// Thread mapping: one element per thread, as `saxpy`. `x[i]` and `y[i]`
/// are checked reads (out of bounds stops the kernel), `y[i] = v` a checked
/// write.
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn axpy<T: Real>(a: T, x: DeviceSlice<T>, mut y: DeviceSliceMut<T>) {
    let i = thread::index_1d();
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}

/// `out[r] = sum_c x[r * cols + c]`: the sum of each row of a row-major
/// matrix, with `W` independent partial sums per thread (so `W` additions
/// are in flight at once instead of one chain). `W` is a const parameter:
/// each instance is compiled with its own `W` (`row_sums_f32_4`,
/// `row_sums_f64_2`), and the `[T; W]` accumulator stays in registers.
///
/// Thread mapping: one row per thread.
#[kernel(launch_bounds(128), instances(<f32, 4>, <f64, 2>))]
pub fn row_sums<T: Real, const W: usize>(x: DeviceSlice<T>, mut out: DeviceSliceMut<T>, cols: u32) {
    let r = thread::index_1d();
    if r >= out.len() {
        return;
    }
    let (cols, base) = (cols as usize, r * cols as usize);
    let mut acc = [T::ZERO; W];
    let mut c = 0;
    while c + W <= cols {
        for (k, a) in acc.iter_mut().enumerate() {
            *a += x[base + c + k];
        }
        c += W;
    }
    while c < cols {
        acc[0] += x[base + c];
        c += 1;
    }
    let mut s = T::ZERO;
    for a in acc {
        s += a;
    }
    out[r] = s;
}

/// Radius of the stencil: each output reads `2 * RADIUS + 1` inputs.
pub const RADIUS: usize = 3;

/// Weights of the stencil (a binomial smoothing filter; they sum to 1).
pub const WEIGHTS: [f32; 2 * RADIUS + 1] = [
    1.0 / 64.0,
    6.0 / 64.0,
    15.0 / 64.0,
    20.0 / 64.0,
    15.0 / 64.0,
    6.0 / 64.0,
    1.0 / 64.0,
];

/// Dynamic shared memory of [`stencil`] for blocks of `block` threads: a
/// tile of `block + 2 * RADIUS` floats. The host launcher calls this same
/// function, so kernel and host cannot disagree.
pub const fn stencil_shared_bytes(block: u32) -> usize {
    shared::shared_bytes::<f32>(0, block as usize + 2 * RADIUS)
}

/// `y[i] = sum_k WEIGHTS[k] * x[i + k - RADIUS]`, with `x` taken as 0
/// outside `0..n`.
///
/// Thread mapping: one output per thread, `i = start + t` with `start =
/// blockIdx.x * blockDim.x` and `t = threadIdx.x`.
///
/// Shared memory: `tile[0 .. blockDim + 2 * RADIUS]`, where `tile[t + RADIUS]
/// = x[start + t]`; threads `t < RADIUS` also load the left halo `tile[t] =
/// x[start - RADIUS + t]` and the right halo `tile[blockDim + RADIUS + t]`.
/// After `sync_threads` every thread reads its `2 * RADIUS + 1` neighbours
/// from the tile.
///
/// Why: each input is needed by 7 outputs. Read from global memory seven
/// times it costs 7 loads per output; staged in shared memory once, about 1.
#[kernel(launch_bounds(256))]
pub fn stencil(x: DeviceSlice<f32>, mut y: DeviceSliceMut<f32>) {
    let n = y.len();
    let b = thread::block_dim_x() as usize;
    let t = thread::thread_idx_x() as usize;
    let start = thread::block_idx_x() as usize * b;
    let mut tile = shared::dynamic_shared::<f32>(0, b + 2 * RADIUS);
    // x[j], or 0 outside the array (j may be "negative": it wraps, and the
    // single comparison with n catches both ends).
    let load = |j: usize| if j < n && j < x.len() { x[j] } else { 0.0 };
    tile[t + RADIUS] = load(start + t);
    if t < RADIUS {
        tile[t] = load((start + t).wrapping_sub(RADIUS));
        tile[b + RADIUS + t] = load(start + b + t);
    }
    sync_threads();
    let i = start + t;
    if i < n {
        let mut acc = 0.0f32;
        for (k, w) in WEIGHTS.iter().enumerate() {
            acc = w.mul_add(tile[t + k], acc);
        }
        y[i] = acc;
    }
}
