//! The GPU kernels of this project, in `#![no_std]` Rust.
//!
//! Each `#[kernel]` function compiles twice: for `nvptx64-nvidia-cuda`, where
//! it becomes a PTX `.entry` (build.rs does that with ptxlab-builder), and for
//! the host, where the CPU simulator runs it once per simulated thread. Add a
//! kernel by writing another `#[kernel] pub fn` here; launch it from
//! src/main.rs with `launch!(&dev, &KERNELS, cfg, kernels::your_kernel(...))`.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_gpu_kernel))]

use ptxlab_device::prelude::*;

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
pub fn saxpy(a: f32, x: DeviceSlice<f32>, y: DeviceSlice<f32>, out: DeviceSliceMut<f32>) {
    let i = thread::index_1d();
    if i < out.len() {
        out.set(i, a.mul_add(x.get(i), y.get(i)));
    }
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
pub fn stencil(x: DeviceSlice<f32>, y: DeviceSliceMut<f32>) {
    let n = y.len();
    let b = thread::block_dim_x() as usize;
    let t = thread::thread_idx_x() as usize;
    let start = thread::block_idx_x() as usize * b;
    let tile = shared::dynamic_shared::<f32>(0, b + 2 * RADIUS);
    // x[j], or 0 outside the array (j may be "negative": it wraps, and the
    // single comparison with n catches both ends).
    let load = |j: usize| if j < n && j < x.len() { x.get(j) } else { 0.0 };
    tile.set(t + RADIUS, load(start + t));
    if t < RADIUS {
        tile.set(t, load((start + t).wrapping_sub(RADIUS)));
        tile.set(b + RADIUS + t, load(start + b + t));
    }
    sync_threads();
    let i = start + t;
    if i < n {
        let mut acc = 0.0f32;
        for (k, w) in WEIGHTS.iter().enumerate() {
            acc = w.mul_add(tile.get(t + k), acc);
        }
        y.set(i, acc);
    }
}
