//! Rung 1: Stockham passes through global memory, one launch per pass.
//!
//! Every pass reads the whole array and writes it to the other buffer of a
//! ping-pong pair, so a length-`2^k` transform moves `2k` times its size
//! through DRAM (with radix 2). Simple and correct for any layout: the
//! same kernel transforms rows (`elem_stride = 1`) or strided columns of a
//! row-major matrix (`elem_stride = nx`, `batch_stride = 1`). The next rung
//! keeps the data on chip between passes.

use super::{C, MAX_RADIX, butterfly, load, store, with_radix};
use ptxlab_device::prelude::*;

/// The layout of a batch of transforms in an interleaved complex array:
/// element `q` of transform `b` is complex element
/// `b * batch_stride + q * elem_stride`.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// Transforms.
    pub batches: usize,
    /// Complex elements between consecutive elements of one transform.
    pub elem_stride: usize,
    /// Complex elements between the first elements of consecutive transforms.
    pub batch_stride: usize,
}

/// One radix-`radix` Stockham pass of `batches` length-`n` transforms,
/// `src` to `dst` (both in the same layout), output times `scale`.
///
/// Thread mapping: one thread per butterfly, `n / radix * batches` threads
/// (grid-stride). With `batch_fastest != 0` consecutive threads take
/// consecutive transforms at the same butterfly (coalesced when the
/// transforms are the columns of a matrix, `batch_stride = 1`); otherwise
/// consecutive butterflies of one transform (coalesced along rows). `ns` is
/// the product of the radices of the passes before this one; `tw` the
/// length-`n` twiddle table. No shared memory.
#[kernel(launch_bounds(256), instances(f32, f64))]
#[allow(clippy::too_many_arguments)]
pub fn fft_global_pass<T: Real>(
    src: DeviceSlice<T>,
    dst: DeviceSliceMut<T>,
    tw: DeviceSlice<T>,
    n: u32,
    ns: u32,
    radix: u32,
    batches: u32,
    elem_stride: u32,
    batch_stride: u32,
    batch_fastest: u32,
    inverse: u32,
    scale: T,
) {
    let lay = Layout {
        batches: batches as usize,
        elem_stride: elem_stride as usize,
        batch_stride: batch_stride as usize,
    };
    with_radix!(radix, R => pass::<T, R>(
        &src,
        &dst,
        &tw,
        n as usize,
        ns as usize,
        lay,
        batch_fastest != 0,
        inverse != 0,
        scale,
    ))
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn pass<T: Real, const R: usize>(
    src: &DeviceSlice<T>,
    dst: &DeviceSliceMut<T>,
    tw: &DeviceSlice<T>,
    n: usize,
    ns: usize,
    lay: Layout,
    batch_fastest: bool,
    inverse: bool,
    scale: T,
) {
    let per = n / R;
    for t in thread::grid_stride(per * lay.batches) {
        let (b, j) = if batch_fastest {
            (t % lay.batches, t / lay.batches)
        } else {
            (t / per, t % per)
        };
        let base = b * lay.batch_stride;
        let mut v = [C::zero(); MAX_RADIX];
        for q in 0..R {
            v[q] = load(src, base + (j + q * per) * lay.elem_stride);
        }
        let o = butterfly::<T, R>(&mut v, tw, n, ns, j, inverse);
        for q in 0..R {
            store(
                dst,
                base + (o + q * ns) * lay.elem_stride,
                v[q].scale(scale),
            );
        }
    }
}
