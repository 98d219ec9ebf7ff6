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

/// One pass of [`fft_global_pass`](fn@fft_global_pass), a kernel
/// parameter by value: the transforms' length and [`Layout`] (in 32-bit
/// fields), the pass's radix and place, the thread mapping and the
/// direction.
///
/// The two flags travel as 32-bit words, 0 or 1, read through
/// [`GlobalPass::batch_fastest`] and [`GlobalPass::inverse`]: the kernel
/// tests each word where it uses it, as it tests any integer, while a
/// `bool` field is narrowed to a predicate where it is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, KernelParams)]
#[repr(C)]
pub struct GlobalPass {
    /// The transform length `n`.
    pub n: u32,
    /// The product of the radices of the passes before this one.
    pub ns: u32,
    /// This pass's radix (2, 3, 4, 5, 7 or 8).
    pub radix: u32,
    /// Transforms.
    pub batches: u32,
    /// Complex elements between consecutive elements of one transform.
    pub elem_stride: u32,
    /// Complex elements between the first elements of consecutive
    /// transforms.
    pub batch_stride: u32,
    /// 1: consecutive threads take consecutive transforms at the same
    /// butterfly, 0: consecutive butterflies of one transform (only
    /// [`GlobalPass::new`] writes it).
    batch_fastest: u32,
    /// 1: inverse transform, 0: forward (only [`GlobalPass::new`] writes
    /// it).
    inverse: u32,
}

impl GlobalPass {
    /// The radix-`radix` pass after passes whose radices multiply to `ns`,
    /// of length-`n` transforms laid out as `lay` says (every size below
    /// `2^32`), the threads batch-fastest or element-fastest, inverse or
    /// forward.
    pub fn new(
        n: usize,
        ns: usize,
        radix: usize,
        lay: Layout,
        batch_fastest: bool,
        inverse: bool,
    ) -> Self {
        Self {
            n: n as u32,
            ns: ns as u32,
            radix: radix as u32,
            batches: lay.batches as u32,
            elem_stride: lay.elem_stride as u32,
            batch_stride: lay.batch_stride as u32,
            batch_fastest: batch_fastest as u32,
            inverse: inverse as u32,
        }
    }

    /// Whether consecutive threads take consecutive transforms.
    #[inline(always)]
    pub const fn batch_fastest(&self) -> bool {
        self.batch_fastest != 0
    }

    /// Whether the transform is inverse (`exp(+2 pi i jk / n)`).
    #[inline(always)]
    pub const fn inverse(&self) -> bool {
        self.inverse != 0
    }
}

/// One radix-`radix` Stockham pass of `batches` length-`n` transforms,
/// `src` to `dst` (both in the same layout), output times `scale`; the
/// pass and the layout in [`GlobalPass`].
///
/// Thread mapping: one thread per butterfly, `n / radix * batches` threads
/// (grid-stride). With `batch_fastest` consecutive threads take
/// consecutive transforms at the same butterfly (coalesced when the
/// transforms are the columns of a matrix, `batch_stride = 1`); otherwise
/// consecutive butterflies of one transform (coalesced along rows). `ns` is
/// the product of the radices of the passes before this one; `tw` the
/// length-`n` twiddle table. No shared memory.
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn fft_global_pass<T: Real>(
    src: DeviceSlice<T>,
    dst: DeviceSliceMut<T>,
    tw: DeviceSlice<T>,
    step: GlobalPass,
    scale: T,
) {
    let lay = Layout {
        batches: step.batches as usize,
        elem_stride: step.elem_stride as usize,
        batch_stride: step.batch_stride as usize,
    };
    let pass_of = Pass {
        n: step.n as usize,
        ns: step.ns as usize,
        lay,
        batch_fastest: step.batch_fastest(),
        inverse: step.inverse(),
    };
    with_radix!(step.radix, R => pass::<T, R>(&src, &dst, &tw, pass_of, scale))
}

/// One pass as [`pass`] takes it: length `n`, the radices before it
/// multiplying to `ns`, the layout, the thread order and the direction.
#[derive(Clone, Copy)]
struct Pass {
    n: usize,
    ns: usize,
    lay: Layout,
    batch_fastest: bool,
    inverse: bool,
}

/// [`fft_global_pass`] with its radix `R` known.
#[inline(always)]
fn pass<T: Real, const R: usize>(
    src: &DeviceSlice<T>,
    dst: &DeviceSliceMut<T>,
    tw: &DeviceSlice<T>,
    p: Pass,
    scale: T,
) {
    let Pass {
        n,
        ns,
        lay,
        batch_fastest,
        inverse,
    } = p;
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
