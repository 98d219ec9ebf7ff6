//! The FFT ladder: complex transforms of any length, batched along rows or
//! strided along columns, in f32 and f64, and the real-to-complex and
//! complex-to-real transforms built on them.
//!
//! Complex arrays are interleaved (`re, im, re, im, ...`) slices of `T`:
//! complex element `i` is `(x[2i], x[2i+1])`. Forward transforms use
//! `exp(-2 pi i jk/n)`, inverse ones `exp(+2 pi i jk/n)`; every kernel's
//! output is multiplied by a `scale` the host chooses (NumPy's conventions:
//! 1 forward, `1/n` on the last pass of an inverse).
//!
//! The algorithm is Stockham's autosort FFT: for `n = R_1 R_2 ... R_p`,
//! pass `s` (radix `R = R_s`, `Ns = R_1 ... R_{s-1}` already combined) reads
//! `R` elements `j + r n/R`, multiplies element `r` by the twiddle
//! `w^(r k)` (`k = j mod Ns`, `w = exp(-2 pi i / (Ns R))`), does a length-`R`
//! DFT in registers and writes its outputs to `(j / Ns) Ns R + k + r Ns`.
//! The output of the last pass is in natural order: no bit reversal.
//! Twiddles come from a table `tw[m] = exp(-2 pi i m / n)` the host builds
//! in f64 (`w^(r k) = tw[r k n / (Ns R)]`), rounded once to `T`; the
//! four-step twiddles of long transforms are computed on the device with
//! the precise f64 `sincos`.
//!
//! Kernels, in ladder order:
//! 1. [`global`]: one launch per pass, every pass through global memory
//!    (radix 2, and 3, 5, 7 for the other factors); any layout (rows or
//!    strided columns).
//! 2. [`shared`]: one block per transform, the whole transform in shared
//!    memory (radix 8, 4, 2, 3, 5, 7 passes separated by barriers): one
//!    read and one write of global memory per transform. Columns go through
//!    [`aux::fft_transpose`] (32 x 32 shared-memory tiles); lengths larger
//!    than shared memory through the four-step split (column transforms,
//!    twiddle, row transforms, transpose).
//! 3. [`register`]: each thread holds 16 points in registers and runs
//!    radix-16 butterflies there, exchanging through one shared buffer only
//!    between passes; the first pass loads from global memory and the last
//!    stores to it directly. A block takes several lines, rows or adjacent
//!    columns (so 2-D transforms need no transpose kernel), and long
//!    power-of-two lengths take two launches of it (four-step, the twiddle
//!    and the transpose folded into its loads and stores).
//! 4. [`coalesced`]: rung 3's data path sized to the register file: 16
//!    points per thread in f32 and 8 in f64 under a 64-register cap (no
//!    spills), 32-bit shift-and-mask indexing, and tiles of adjacent columns
//!    a whole 32-byte sector wide, so every global load and store uses all
//!    the bytes it moves. One read and one write of global memory per axis
//!    up to 16384 points (f32) or 8192 (f64), four-step in two launches
//!    above.
//!
//! [`aux`] holds what the rungs share: Bluestein's chirp kernels, the
//! real-transform pre- and post-processing, the transpose and copies.

pub mod aux;
pub mod coalesced;
pub mod global;
pub mod register;
pub mod shared;

pub use coalesced::Complex;
use core::ops::{Add, Mul, Sub};
use ptxlab_device::math::Real;
use ptxlab_device::mem::{DeviceSlice, DeviceSliceMut};

/// Threads per block of the element-wise and pass kernels.
pub const BLOCK: u32 = 256;

/// Largest radix of any pass.
pub const MAX_RADIX: usize = 8;

/// Dynamic shared memory available to one block of [`shared::fft_shared`]:
/// two ping-pong copies of the transform.
pub const SHARED_FFT_BYTES: usize = 128 * 1024;

/// Longest transform [`shared::fft_shared`] takes for an element of
/// `elem_bytes` bytes (`T`; a complex value is two of them).
pub const fn shared_max_len(elem_bytes: usize) -> usize {
    SHARED_FFT_BYTES / (4 * elem_bytes)
}

/// Dynamic shared memory of [`shared::fft_shared`] for length `n`.
pub const fn shared_bytes(n: usize, elem_bytes: usize) -> usize {
    4 * n * elem_bytes
}

/// Edge of the square tiles of [`aux::fft_transpose`].
pub const TILE: u32 = 32;
/// Rows of threads per transpose block (each thread moves `TILE / TILE_ROWS`
/// elements).
pub const TILE_ROWS: u32 = 8;

/// Dynamic shared memory of [`aux::fft_transpose`]: one tile of complex
/// values with one padding column (no bank conflicts on the transposed read).
pub const fn transpose_shared_bytes(elem_bytes: usize) -> usize {
    (TILE as usize) * (TILE as usize + 1) * 2 * elem_bytes
}

/// Radices the host packs 4 bits each, first pass in the lowest bits, into
/// the `radices` argument of [`shared::fft_shared`].
pub const RADIX_BITS: u32 = 4;

/// A complex number of the kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct C<T> {
    /// Real part.
    pub re: T,
    /// Imaginary part.
    pub im: T,
}

impl<T: Real> core::ops::Add for C<T> {
    type Output = Self;
    /// Sum.
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        C::new(self.re + o.re, self.im + o.im)
    }
}

impl<T: Real> core::ops::Sub for C<T> {
    type Output = Self;
    /// Difference.
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        C::new(self.re - o.re, self.im - o.im)
    }
}

impl<T: Real> core::ops::Mul for C<T> {
    type Output = Self;
    /// Product (fused multiply-adds).
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        C::new(
            self.re.mul_add(o.re, -(self.im * o.im)),
            self.re.mul_add(o.im, self.im * o.re),
        )
    }
}

impl<T: Real> C<T> {
    /// `re + i im`.
    #[inline(always)]
    pub fn new(re: T, im: T) -> Self {
        C { re, im }
    }
    /// 0.
    #[inline(always)]
    pub fn zero() -> Self {
        C::new(T::ZERO, T::ZERO)
    }
    /// Product with a real.
    #[inline(always)]
    pub fn scale(self, s: T) -> Self {
        C::new(self.re * s, self.im * s)
    }
    /// Complex conjugate.
    #[inline(always)]
    pub fn conj(self) -> Self {
        C::new(self.re, -self.im)
    }
    /// `self * i` when `neg` is false, `self * -i` when it is true.
    #[inline(always)]
    pub fn mul_i(self, neg: bool) -> Self {
        if neg {
            C::new(self.im, -self.re)
        } else {
            C::new(-self.im, self.re)
        }
    }
}

/// Reads complex element `i` of an interleaved global array.
#[inline(always)]
#[track_caller]
pub fn load<T: Real>(x: &DeviceSlice<T>, i: usize) -> C<T> {
    C::new(x.get(2 * i), x.get(2 * i + 1))
}

/// Reads complex element `i` of an interleaved array the kernel also writes.
#[inline(always)]
#[track_caller]
pub fn load_mut<T: Real>(x: &DeviceSliceMut<T>, i: usize) -> C<T> {
    C::new(x.get(2 * i), x.get(2 * i + 1))
}

/// Writes complex element `i` of an interleaved global array.
#[inline(always)]
#[track_caller]
pub fn store<T: Real>(x: &DeviceSliceMut<T>, i: usize, v: C<T>) {
    x.set(2 * i, v.re);
    x.set(2 * i + 1, v.im);
}

/// Twiddle `m` of the table (`exp(-2 pi i m / n)`), conjugated for an
/// inverse transform.
#[inline(always)]
#[track_caller]
pub fn twiddle<T: Real>(tw: &DeviceSlice<T>, m: usize, inverse: bool) -> C<T> {
    let w = load(tw, m);
    if inverse { w.conj() } else { w }
}

/// `cos(2 pi m / R)` and `sin(2 pi m / R)` for `R = 3, 5, 7`, `m < R`.
const COS3: [f64; 3] = [1.0, -0.5, -0.5];
const SIN3: [f64; 3] = [0.0, 0.866_025_403_784_438_6, -0.866_025_403_784_438_6];
const COS5: [f64; 5] = [
    1.0,
    0.309_016_994_374_947_45,
    -0.809_016_994_374_947_5,
    -0.809_016_994_374_947_5,
    0.309_016_994_374_947_45,
];
const SIN5: [f64; 5] = [
    0.0,
    0.951_056_516_295_153_5,
    0.587_785_252_292_473_1,
    -0.587_785_252_292_473_1,
    -0.951_056_516_295_153_5,
];
const COS7: [f64; 7] = [
    1.0,
    0.623_489_801_858_733_5,
    -0.222_520_933_956_314_4,
    -0.900_968_867_902_419_1,
    -0.900_968_867_902_419_1,
    -0.222_520_933_956_314_4,
    0.623_489_801_858_733_5,
];
const SIN7: [f64; 7] = [
    0.0,
    0.781_831_482_468_029_8,
    0.974_927_912_181_823_6,
    0.433_883_739_117_558_1,
    -0.433_883_739_117_558_1,
    -0.974_927_912_181_823_6,
    -0.781_831_482_468_029_8,
];

/// Length-`R` DFT of an odd prime radix (3, 5, 7) in registers, by the
/// definition with the radix's constant roots of unity.
#[inline(always)]
fn dft_odd<T: Real, const R: usize>(v: &mut [C<T>; MAX_RADIX], inverse: bool) {
    let (cs, sn): (&[f64], &[f64]) = match R {
        3 => (&COS3, &SIN3),
        5 => (&COS5, &SIN5),
        _ => (&COS7, &SIN7),
    };
    // Forward: exp(-2 pi i m / R) = cos - i sin.
    let sgn = if inverse { 1.0 } else { -1.0 };
    let mut out = [C::zero(); MAX_RADIX];
    for k in 0..R {
        let mut acc = v[0];
        for r in 1..R {
            let m = (r * k) % R;
            let w = C::new(T::from_f64(cs[m]), T::from_f64(sgn * sn[m]));
            acc = acc.add(v[r].mul(w));
        }
        out[k] = acc;
    }
    *v = out;
}

/// Length-4 DFT in registers.
#[inline(always)]
pub(crate) fn dft4<T: Real>(a0: C<T>, a1: C<T>, a2: C<T>, a3: C<T>, inverse: bool) -> [C<T>; 4] {
    let (s02, d02) = (a0.add(a2), a0.sub(a2));
    let (s13, d13) = (a1.add(a3), a1.sub(a3));
    // Forward: X1 = d02 - i d13, X3 = d02 + i d13.
    let t = d13.mul_i(!inverse);
    [s02.add(s13), d02.add(t), s02.sub(s13), d02.sub(t)]
}

/// The length-`r` DFT of `v[..r]` in registers (`r` one of 2, 3, 4, 5, 7,
/// 8), in place.
#[inline(always)]
pub fn dft_small<T: Real>(v: &mut [C<T>; MAX_RADIX], r: usize, inverse: bool) {
    match r {
        2 => {
            let (a, b) = (v[0], v[1]);
            v[0] = a.add(b);
            v[1] = a.sub(b);
        }
        3 => dft_odd::<T, 3>(v, inverse),
        4 => {
            let x = dft4(v[0], v[1], v[2], v[3], inverse);
            v[..4].copy_from_slice(&x);
        }
        5 => dft_odd::<T, 5>(v, inverse),
        7 => dft_odd::<T, 7>(v, inverse),
        8 => {
            let e = dft4(v[0], v[2], v[4], v[6], inverse);
            let o = dft4(v[1], v[3], v[5], v[7], inverse);
            let h = T::from_f64(core::f64::consts::FRAC_1_SQRT_2);
            let sg = if inverse { T::ONE } else { -T::ONE };
            // w8^k for k = 0..4: 1, h(1 -+ i), -+i, h(-1 -+ i).
            let w = [
                C::new(T::ONE, T::ZERO),
                C::new(h, sg * h),
                C::new(T::ZERO, sg),
                C::new(-h, sg * h),
            ];
            for k in 0..4 {
                let t = o[k].mul(w[k]);
                v[k] = e[k].add(t);
                v[k + 4] = e[k].sub(t);
            }
        }
        _ => ptxlab_device::trap("fft: radix must be 2, 3, 4, 5, 7 or 8"),
    }
}

/// One radix-`R` Stockham butterfly of a length-`n` transform: given
/// `v[q] = in(j + q n/R)` (read by the caller), multiplies by the twiddles
/// of the pass that follows `ns` combined points, transforms, and returns
/// the output positions' base `(j / ns) ns R + j mod ns` (output `q` goes
/// to `base + q ns`). `R` is a constant, so the loops unroll and `v` stays
/// in registers.
#[inline(always)]
pub fn butterfly<T: Real, const R: usize>(
    v: &mut [C<T>; MAX_RADIX],
    tw: &DeviceSlice<T>,
    n: usize,
    ns: usize,
    j: usize,
    inverse: bool,
) -> usize {
    let k = j % ns;
    if ns > 1 {
        let step = n / (ns * R);
        for q in 1..R {
            v[q] = v[q].mul(twiddle(tw, q * k * step, inverse));
        }
    }
    dft_small(v, R, inverse);
    (j / ns) * ns * R + k
}

/// Calls `$body` with the constant `$R` bound to the run-time radix `$r`
/// (2, 3, 4, 5, 7 or 8); any other value stops the kernel.
macro_rules! with_radix {
    ($r:expr, $R:ident => $body:expr) => {
        match $r {
            2 => {
                const $R: usize = 2;
                $body
            }
            3 => {
                const $R: usize = 3;
                $body
            }
            4 => {
                const $R: usize = 4;
                $body
            }
            5 => {
                const $R: usize = 5;
                $body
            }
            7 => {
                const $R: usize = 7;
                $body
            }
            8 => {
                const $R: usize = 8;
                $body
            }
            _ => ptxlab_device::trap("fft: radix must be 2, 3, 4, 5, 7 or 8"),
        }
    };
}
pub(crate) use with_radix;
