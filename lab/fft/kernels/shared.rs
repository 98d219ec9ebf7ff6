//! Rung 2: one block per transform, every pass in shared memory.
//!
//! What changed from rung 1: the block reads its transform from global
//! memory once, runs all its passes between two shared-memory buffers
//! (barriers between passes instead of kernel launches), and writes the
//! result once. A length-4096 transform moves its data through DRAM twice
//! instead of twelve times (radix 2 in global memory), and radix 8 and 4
//! passes need a third and a half of the passes and barriers of radix 2.

use super::{C, MAX_RADIX, RADIX_BITS, butterfly, with_radix};
use core::ops::Mul;
use ptxlab_device::prelude::*;

/// `batches = src.len() / (2 n)` length-`n` transforms of the rows of
/// `src`, written to the rows of `dst`, output times `scale`.
///
/// Thread mapping: block `b` (`blockIdx.x`, plus `gridDim.x` strides for
/// more rows than blocks) transforms row `b`; its threads share the
/// butterflies of each pass (`j = threadIdx.x, + blockDim.x, ...`).
/// `radices` holds the passes' radices, [`RADIX_BITS`] bits each, first
/// pass lowest; `passes` how many. Shared memory: two buffers of `n`
/// complex values (`[re, im]` interleaved), ping-pong between passes;
/// `super::shared_bytes(n, size_of::<T>())` bytes.
///
/// With `four_step != 0` element `k` of row `b` is also multiplied by
/// `exp(-+2 pi i (j k mod four_step) / four_step)` on the way out, `j = b mod
/// (four_step / n)` (the twiddle step of four-step transforms of length
/// `four_step`, each `four_step / n` consecutive rows), computed with the
/// precise f64 `sincos`.
#[kernel(launch_bounds(1024), instances(f32, f64))]
#[allow(
    clippy::too_many_arguments,
    reason = "a struct of these scalars measured slower on an H200 (docs/results/2026-11-29-h200-window-structs)"
)]
pub fn fft_shared<T: Real>(
    src: DeviceSlice<T>,
    dst: DeviceSliceMut<T>,
    tw: DeviceSlice<T>,
    n: u32,
    radices: u64,
    passes: u32,
    inverse: u32,
    scale: T,
    four_step: u32,
) {
    let n = n as usize;
    let bufs = [
        shared::dynamic_shared::<T>(0, 2 * n),
        shared::dynamic_shared::<T>(2 * n * core::mem::size_of::<T>(), 2 * n),
    ];
    let tid = thread::thread_idx_x() as usize;
    let bdim = thread::block_dim_x() as usize;
    let rows = src.len() / (2 * n);
    let inv = inverse != 0;
    let mut row = thread::block_idx_x() as usize;
    while row < rows {
        let base = 2 * row * n;
        let mut i = tid;
        while i < 2 * n {
            bufs[0].set(i, src.get(base + i));
            i += bdim;
        }
        sync_threads();
        let mut cur = 0;
        let mut ns = 1;
        for p in 0..passes {
            let r = ((radices >> (RADIX_BITS * p)) & ((1 << RADIX_BITS) - 1)) as usize;
            let (a, b) = (bufs[cur], bufs[1 - cur]);
            let stage = Stage { n, ns, inverse: inv };
            with_radix!(r, R => shared_pass::<T, R>(a, b, &tw, stage, tid, bdim));
            ns *= r;
            cur = 1 - cur;
            sync_threads();
        }
        let out = bufs[cur];
        let mut k = tid;
        while k < n {
            let mut v = C::new(out.get(2 * k), out.get(2 * k + 1)).scale(scale);
            if four_step != 0 {
                let j = row % (four_step as usize / n);
                v = v.mul(four_step_twiddle::<T>(j, k, four_step as usize, inv));
            }
            dst.set(base + 2 * k, v.re);
            dst.set(base + 2 * k + 1, v.im);
            k += bdim;
        }
        // The next row's loads overwrite the buffer this row read from.
        sync_threads();
        row += thread::grid_dim_x() as usize;
    }
}

/// `exp(-+2 pi i (b k mod m) / m)`, the angle reduced to `[-pi, pi]` in
/// f64 before the precise `sincos`.
#[inline(always)]
pub fn four_step_twiddle<T: Real>(b: usize, k: usize, m: usize, inverse: bool) -> C<T> {
    let e = ((b as u64 * k as u64) % m as u64) as f64 / m as f64;
    let e = if e > 0.5 { e - 1.0 } else { e };
    let (s, c) = ptxlab_device::precise::sincos_f64(2.0 * core::f64::consts::PI * e);
    let s = if inverse { s } else { -s };
    C::new(T::from_f64(c), T::from_f64(s))
}

/// One pass of a shared-memory transform: length `n`, the radices of the
/// passes before it multiplying to `ns`, inverse or forward.
#[derive(Clone, Copy)]
struct Stage {
    n: usize,
    ns: usize,
    inverse: bool,
}

/// A radix-`R` Stockham pass from `a` to `b` (interleaved complex values
/// in shared memory), thread `tid` of `bdim` taking butterflies `tid`,
/// `tid + bdim`, ...
#[inline(always)]
fn shared_pass<T: Real, const R: usize>(
    a: SharedSlice<T>,
    b: SharedSlice<T>,
    tw: &DeviceSlice<T>,
    stage: Stage,
    tid: usize,
    bdim: usize,
) {
    let Stage { n, ns, inverse } = stage;
    let per = n / R;
    let mut j = tid;
    while j < per {
        let mut v = [C::zero(); MAX_RADIX];
        for q in 0..R {
            let i = j + q * per;
            v[q] = C::new(a.get(2 * i), a.get(2 * i + 1));
        }
        let o = butterfly::<T, R>(&mut v, tw, n, ns, j, inverse);
        for q in 0..R {
            let i = o + q * ns;
            b.set(2 * i, v[q].re);
            b.set(2 * i + 1, v[q].im);
        }
        j += bdim;
    }
}
