//! Lomb-Scargle periodogram: the ladder of the material, and, for evenly
//! spaced frequencies, variants below the SFU floor: recurrences per
//! (sample, frequency) pair (rungs 9-11) and Taylor moments per run of
//! frequencies (rung 12).
//!
//! For each angular frequency `w` and samples `(x_j, y_j)` (SciPy's
//! definition, Townsend's one-pass form):
//!
//! ```text
//! c_j = cos(w x_j), s_j = sin(w x_j)
//! XC = sum y c, XS = sum y s, CC = sum c^2, SS = sum s^2, CS = sum c s
//! 2 w tau = atan2(2 CS, CC - SS)              (= atan2(sum sin 2wx, sum cos 2wx))
//! ct = cos(w tau), st = sin(w tau)
//! P(w) = 0.5 [ (ct XC + st XS)^2 / (ct^2 CC + 2 ct st CS + st^2 SS)
//!            + (ct XS - st XC)^2 / (ct^2 SS - 2 ct st CS + st^2 CC) ]
//! ```
//!
//! The kernels take `scale` instead of the 0.5: 0.5 for SciPy's plain
//! periodogram, `1 / sum y^2` for `normalize=True`; `precenter` is applied to
//! `y` on the host. `x` and `y` must have the same length (a kernel traps
//! otherwise; the host checks first).
//!
//! Launch shape (the material's): `SM count x 20` blocks of [`BLOCK`] threads,
//! a grid-stride loop over frequencies, each thread one frequency at a time,
//! looping over every sample. Every thread of a warp reads the same `x_j`,
//! `y_j` (a broadcast through L1).
//!
//! The build-time rungs (JIT on every call, cached module, fast math, register
//! cap, cubin) launch the same [`lomb_direct`](fn@lomb_direct) kernel from
//! another module; the source rungs are separate kernels below.
//!
//! Every kernel is generic over its element type, `f32` or `f64`
//! ([`LombFloat`]), and built for both (`lomb_direct_f32`,
//! `lomb_direct_f64`). The even-grid kernels have a `LONG` instance too
//! (split phases for long time spans, `phase`): `lomb_rotate::<true, f32>`
//! is the entry `lomb_rotate_long_f32`; the direct-family `_long` kernels,
//! whose parameters differ (the low parts of the times and frequencies),
//! are kernels of their own (`lomb_direct_long`).

use ptxlab_device::mem::{F32x4, F64x2};
use ptxlab_device::precise::{Ln, Trig};
use ptxlab_device::prelude::*;

/// Threads per block of the material's launch shape.
pub const BLOCK: u32 = 128;
/// Blocks per SM of the material's launch shape (`SM count x 20` blocks).
pub const BLOCKS_PER_SM: u32 = 20;
/// Consecutive frequencies per thread in [`lomb_rotate`](fn@lomb_rotate) (f32).
pub const ROT_RUN_F32: usize = 16;
/// Consecutive frequencies per thread in [`lomb_rotate`](fn@lomb_rotate) (f64).
pub const ROT_RUN_F64: usize = 8;
/// Consecutive frequencies per thread in [`lomb_cheby`](fn@lomb_cheby) (f32).
pub const CHEBY_RUN_F32: usize = 16;
/// Consecutive frequencies per thread in [`lomb_cheby`](fn@lomb_cheby) (f64).
pub const CHEBY_RUN_F64: usize = 8;

/// An evenly spaced grid of angular frequencies, a kernel parameter by
/// value: frequency `k` is `start + k step` (`step` may be negative). The
/// number of frequencies is the output's length (or, in a batch, its
/// length over the curves), so it has no field here.
#[derive(Debug, Clone, Copy, PartialEq, KernelParams)]
#[repr(C)]
pub struct Grid<T> {
    /// The first frequency.
    pub start: T,
    /// The spacing.
    pub step: T,
}

impl<T: Real> Grid<T> {
    /// Frequency `k` (`k` an index of the grid, converted to `T`).
    #[inline(always)]
    pub fn at(self, k: T) -> T {
        self.start + k * self.step
    }
}

/// The periodogram value from the five sums (`scale` is 0.5, or `1/sum y^2`).
#[inline(always)]
pub fn finish<T: Real + Trig>(xc: T, xs: T, cc: T, ss: T, cs: T, scale: T) -> T {
    // 2 w tau; the kernels rotate by w tau directly instead of dividing by w
    // and multiplying back (one division less, no 0 * inf at w = 0).
    let wtau = T::from_f64(0.5) * (cs + cs).atan2(cc - ss);
    let (st, ct) = wtau.sincos();
    finish_at((ct, st), xc, xs, cc, ss, cs, scale)
}

/// As [`finish`], without trigonometry (rung 11): `cos(w tau)` and
/// `sin(w tau)` from the double angle by half-angle formulas.
///
/// With `u = CC - SS`, `v = 2 CS`, `r = sqrt(u^2 + v^2)`, the double angle
/// has `cos 2 w tau = u / r`, `sin 2 w tau = v / r`. Then `cos w tau =
/// sqrt((1 + cos 2 w tau) / 2)` and `sin w tau = sin 2 w tau / (2 cos w
/// tau)` when `cos 2 w tau >= 0`; otherwise the other way round from `sin w
/// tau = sqrt((1 - cos 2 w tau) / 2)`, so the square root never takes a
/// difference of nearly equal numbers and the division never a small one.
/// That picks `w tau` or `w tau + pi`, and `P` does not see the difference
/// (it depends on `ct^2`, `st^2` and `ct st` only). `r = 0` (no preferred
/// angle) gives `tau = 0`, as `atan2(0, 0) = 0` does in [`finish`]. Costs two
/// square roots and two divisions instead of an `atan2` and a `sincos`.
#[inline(always)]
pub fn finish_half<T: Real + Trig>(xc: T, xs: T, cc: T, ss: T, cs: T, scale: T) -> T {
    let (u, v) = (cc - ss, cs + cs);
    let r = u.mul_add(u, v * v).sqrt();
    let half = T::from_f64(0.5);
    let (ct, st) = if r > T::ZERO {
        let inv = T::ONE / r;
        let (c2, s2) = (u * inv, v * inv);
        if c2 >= T::ZERO {
            let ct = half.mul_add(c2, half).sqrt();
            (ct, s2 / (ct + ct))
        } else {
            let st = (-half).mul_add(c2, half).sqrt();
            (s2 / (st + st), st)
        }
    } else {
        (T::ONE, T::ZERO)
    };
    finish_at((ct, st), xc, xs, cc, ss, cs, scale)
}

/// The periodogram value from the five sums and `(ct, st) = (cos, sin)(w
/// tau)`.
#[inline(always)]
fn finish_at<T: Real>((ct, st): (T, T), xc: T, xs: T, cc: T, ss: T, cs: T, scale: T) -> T {
    let (ct2, st2, cst) = (ct * ct, st * st, (ct + ct) * st);
    let a = ct * xc + st * xs;
    let b = ct * xs - st * xc;
    let d1 = ct2 * cc + cst * cs + st2 * ss;
    let d2 = ct2 * ss - cst * cs + st2 * cc;
    scale * (a * a / d1 + b * b / d2)
}

#[inline(always)]
fn check_lengths<T: Copy>(x: &DeviceSlice<T>, y: &DeviceSlice<T>) {
    if x.len() != y.len() {
        ptxlab_device::trap("lomb: x and y lengths differ");
    }
}

/// Frequencies a kernel computes: the shorter of `freqs` and `out`.
#[inline(always)]
fn freq_count<T: Copy>(freqs: &DeviceSlice<T>, out: &DeviceSliceMut<T>) -> usize {
    if freqs.len() < out.len() {
        freqs.len()
    } else {
        out.len()
    }
}

/// The samples of the direct-family kernels: times `x`, values `y` and,
/// with `SPLIT` (the `_long` kernels), the times' low parts `xl`
/// ([`phase`]; never read otherwise), checked to have one length.
#[derive(Clone, Copy)]
struct Points<'a, T: Copy, const SPLIT: bool> {
    x: DeviceSlice<'a, T>,
    xl: DeviceSlice<'a, T>,
    y: DeviceSlice<'a, T>,
}

impl<'a, T: Copy, const SPLIT: bool> Points<'a, T, SPLIT> {
    /// Traps when `x` (and `xl` with `SPLIT`) and `y` differ in length.
    #[inline(always)]
    fn new(x: DeviceSlice<'a, T>, xl: DeviceSlice<'a, T>, y: DeviceSlice<'a, T>) -> Self {
        check_lengths(&x, &y);
        if SPLIT {
            check_lengths(&xl, &y);
        }
        Points { x, xl, y }
    }
}

/// The samples `(x_j, y_j)` of the direct and lean kernels, walked in order:
/// four at a time with 16-byte loads when both arrays start on a 16-byte
/// boundary (device allocations do), with a 32-bit counter, then the rest
/// one at a time. Per pair that is half a load and a quarter of a loop step,
/// not two loads and a 64-bit compare. On the SFU-bound fast-math rungs the
/// issue slots this frees are what lets the two `MUFU` per pair run back to
/// back.
///
/// `SPLIT` (the `_long` kernels): the times come in two parts, `x` the high
/// and `xl` the low one ([`phase`]), loaded alongside; otherwise `xl` is
/// never read and the low part is 0.
struct Samples<'a, T: Copy, const SPLIT: bool> {
    x: DeviceSlice<'a, T>,
    xl: DeviceSlice<'a, T>,
    y: DeviceSlice<'a, T>,
    /// Chunks of four for the 16-byte loads (0 when not aligned).
    n4: u32,
}

impl<'a, T: Pack4, const SPLIT: bool> Samples<'a, T, SPLIT> {
    /// Traps when `x` (and `xl` with `SPLIT`) and `y` differ in length.
    #[inline(always)]
    fn new(x: DeviceSlice<'a, T>, xl: DeviceSlice<'a, T>, y: DeviceSlice<'a, T>) -> Self {
        let Points { x, xl, y } = Points::<T, SPLIT>::new(x, xl, y);
        let mut addr = x.as_ptr() as usize | y.as_ptr() as usize;
        if SPLIT {
            addr |= xl.as_ptr() as usize;
        }
        let n4 = if addr.is_multiple_of(16) {
            (x.len() / 4) as u32
        } else {
            0
        };
        Samples { x, xl, y, n4 }
    }

    /// Number of samples.
    #[inline(always)]
    fn len(&self) -> usize {
        self.x.len()
    }

    /// Calls `visit(x_j, xl_j, y_j)` for every sample, in order (`xl_j = 0`
    /// unless `SPLIT`).
    #[inline(always)]
    fn for_each(&self, mut visit: impl FnMut(T, T, T)) {
        let mut q = 0u32;
        while q < self.n4 {
            // SAFETY: `4q + 4 <= 4 n4 <= x.len() = y.len()` (= `xl.len()`
            // with `SPLIT`, `new`), and they start on a 16-byte boundary when
            // `n4 > 0`.
            let (xv, yv) =
                unsafe { (T::load4(&self.x, q as usize), T::load4(&self.y, q as usize)) };
            let lv = if SPLIT {
                // SAFETY: as above.
                unsafe { T::load4(&self.xl, q as usize) }
            } else {
                [T::ZERO; 4]
            };
            visit(xv[0], lv[0], yv[0]);
            visit(xv[1], lv[1], yv[1]);
            visit(xv[2], lv[2], yv[2]);
            visit(xv[3], lv[3], yv[3]);
            q += 1;
        }
        let mut j = 4 * self.n4 as usize;
        while j < self.x.len() {
            // SAFETY: `j < x.len() = y.len()` (= `xl.len()` with `SPLIT`, `new`).
            let (xj, yj) = unsafe { (self.x.get_unchecked(j), self.y.get_unchecked(j)) };
            let lj = if SPLIT {
                // SAFETY: as above.
                unsafe { self.xl.get_unchecked(j) }
            } else {
                T::ZERO
            };
            visit(xj, lj, yj);
            j += 1;
        }
    }
}

/// The frequencies of the direct-family kernels: `freqs[i]`, and with
/// `SPLIT` the low part `freqs_lo[i]` (never read otherwise).
#[derive(Clone, Copy)]
struct Freqs<'a, T: Copy, const SPLIT: bool> {
    hi: DeviceSlice<'a, T>,
    lo: DeviceSlice<'a, T>,
}

impl<'a, T: Real, const SPLIT: bool> Freqs<'a, T, SPLIT> {
    /// Traps when `SPLIT` and the two parts differ in length.
    #[inline(always)]
    fn new(hi: DeviceSlice<'a, T>, lo: DeviceSlice<'a, T>) -> Self {
        if SPLIT && hi.len() != lo.len() {
            ptxlab_device::trap("lomb: freqs and freqs_lo lengths differ");
        }
        Freqs { hi, lo }
    }

    /// `(hi, lo)` of frequency `i`.
    ///
    /// # Safety
    /// `i < hi.len()`.
    #[inline(always)]
    unsafe fn get(&self, i: usize) -> (T, T) {
        // SAFETY: the caller's contract; `lo.len() = hi.len()` with `SPLIT`.
        unsafe {
            (
                self.hi.get_unchecked(i),
                if SPLIT {
                    self.lo.get_unchecked(i)
                } else {
                    T::ZERO
                },
            )
        }
    }
}

/// Four consecutive values with 16-byte loads (one for f32, two for f64)
/// instead of four scalar loads: `x`, `y` in the direct kernels, the packed
/// per-sample table of the recurrence kernels.
pub trait Pack4: Phase + Ln {
    /// `tab[4j..4j+4]`.
    ///
    /// # Safety
    /// `4j + 4 <= tab.len()`, and `tab` starts on a 16-byte boundary (device
    /// allocations do).
    unsafe fn load4(tab: &DeviceSlice<Self>, j: usize) -> [Self; 4];
}

impl Pack4 for f32 {
    #[inline(always)]
    unsafe fn load4(tab: &DeviceSlice<f32>, j: usize) -> [f32; 4] {
        // SAFETY: the caller's contract: float4 `j` is inside `tab` and aligned.
        unsafe { tab.get_vec_unchecked::<F32x4>(j).0 }
    }
}

impl Pack4 for f64 {
    #[inline(always)]
    unsafe fn load4(tab: &DeviceSlice<f64>, j: usize) -> [f64; 4] {
        // SAFETY: the caller's contract: double2 `2j` and `2j+1` are inside
        // `tab` and aligned.
        let (a, b) = unsafe {
            (
                tab.get_vec_unchecked::<F64x2>(2 * j).0,
                tab.get_vec_unchecked::<F64x2>(2 * j + 1).0,
            )
        };
        [a[0], a[1], b[0], b[1]]
    }
}

/// The element types of the Lomb-Scargle kernels, `f32` and `f64`, and what
/// the generic kernels choose per type: the f32 instances take runs of 16
/// frequencies per thread, 5 Taylor terms and (rungs 9-10) the pipelined
/// sample loop; the f64 ones runs of 8 (their accumulators take twice the
/// registers), 8 Taylor terms and the plain loop. The constants name each
/// choice for the host (launch shapes, tables).
pub trait LombFloat: Pack4 + BatchAnchor + warp::ShuffleValue {
    /// `true` for f32: the kernels take the f32 choices above.
    const SINGLE: bool;
    /// Frequencies per thread of [`lomb_rotate`](fn@lomb_rotate).
    const ROT_RUN: usize;
    /// Frequencies per thread of [`lomb_cheby`](fn@lomb_cheby).
    const CHEBY_RUN: usize;
    /// Frequencies per thread of the table-anchored kernels (rung 11).
    const TAB_RUN: usize;
    /// Frequencies per thread of [`lomb_batch_rotate`](fn@lomb_batch_rotate).
    const BATCH_RUN: usize;
    /// Taylor terms of [`lomb_taylor`](fn@lomb_taylor).
    const TAYLOR_P: usize;
}

impl LombFloat for f32 {
    const SINGLE: bool = true;
    const ROT_RUN: usize = ROT_RUN_F32;
    const CHEBY_RUN: usize = CHEBY_RUN_F32;
    const TAB_RUN: usize = TAB_RUN_F32;
    const BATCH_RUN: usize = BATCH_RUN_F32;
    const TAYLOR_P: usize = TAYLOR_P_F32;
}

impl LombFloat for f64 {
    const SINGLE: bool = false;
    const ROT_RUN: usize = ROT_RUN_F64;
    const CHEBY_RUN: usize = CHEBY_RUN_F64;
    const TAB_RUN: usize = TAB_RUN_F64;
    const BATCH_RUN: usize = BATCH_RUN_F64;
    const TAYLOR_P: usize = TAYLOR_P_F64;
}

/// Values per sample of the recurrence tables (rungs 9-11): `(x, y, p, q)`
/// in the plain kernels; `(alpha_hi, alpha_lo, beta_hi, beta_lo, y, p, q,
/// 0)` in the `_long` ones, `alpha = start (x - x0)` and `beta = step (x -
/// x0)` reduced modulo 2 pi and split by the host ([`Phase::anchor`]).
pub const fn rec_stride(split: bool) -> usize {
    if split { 8 } else { 4 }
}

/// Sample `j` of a recurrence table: the phase of its anchor at frequency
/// index `k0` of the grid (`w0 x_j` in the plain kernels, `w0 = start + k0
/// step`; [`Phase::anchor`] with `SPLIT`), and `(y_j, p_j, q_j)`.
///
/// # Safety
/// `j < tab.len() / rec_stride(SPLIT)`, and `tab` starts on a 16-byte
/// boundary (device allocations do).
#[inline(always)]
unsafe fn rec_entry<T: Pack4, const SPLIT: bool>(
    tab: &DeviceSlice<T>,
    j: usize,
    w0: T,
    k0: T,
) -> (T, [T; 3]) {
    if SPLIT {
        // SAFETY: the caller's contract: entries `2j` and `2j + 1` of four.
        let ([ah, al, bh, bl], [y, p, q, _]) =
            unsafe { (T::load4(tab, 2 * j), T::load4(tab, 2 * j + 1)) };
        (T::anchor(ah, al, bh, bl, k0), [y, p, q])
    } else {
        // SAFETY: the caller's contract.
        let [x, y, p, q] = unsafe { T::load4(tab, j) };
        (w0 * x, [y, p, q])
    }
}

/// Repeats `$body` with `$k` bound to the constants 0..16, so arrays indexed
/// by `$k` stay in registers (a run-time index would put them in local memory).
macro_rules! unroll16 {
    ($k:ident, $body:block) => {
        unroll16!(@ $k, $body, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    (@ $k:ident, $body:block, $($i:literal)*) => {
        $({
            #[allow(non_upper_case_globals)]
            const $k: usize = $i;
            $body
        })*
    };
}

/// The periodogram from four sums, without `tau` (rung 4c): `SS = n - CC`
/// and the least-squares form
///
/// ```text
/// P = scale (XC^2 SS - 2 XC XS CS + XS^2 CC) / (CC SS - CS^2)
/// ```
///
/// Why it equals [`finish`]: `tau` only rotates the basis `(c, s)` into the
/// eigenvectors of the 2x2 matrix `M = [[CC, CS], [CS, SS]]`; the sum of the
/// two quotients is the rotation-invariant quadratic form `b^T M^-1 b` with
/// `b = (XC, XS)` (the sum of squares that the best least-squares sinusoid
/// explains, halved by `scale = 0.5`), and `M^-1` is the adjugate over the
/// determinant. One division and no `atan2`, `sincos` or square root: one
/// SFU operation (the reciprocal) instead of five. Conditioning is that of
/// [`finish`]: both divide by the small eigenvalue's worth of `M`, formed
/// by cancellation, so where `M` is nearly singular (`w -> 0`, or all
/// sample phases nearly equal mod pi) the error grows as in [`finish`]'s `d2`.
#[inline(always)]
pub fn finish_ls<T: Real>(xc: T, xs: T, cc: T, ss: T, cs: T, scale: T) -> T {
    let det = cc.mul_add(ss, -(cs * cs));
    let num = (xc * xc).mul_add(ss, (xs * xs).mul_add(cc, -((xc + xc) * xs * cs)));
    scale * num / det
}

// ---- the floating-mean (generalized) model -------------------------------------

/// Normalization of the floating-mean kernels' output ([`normalize`]), a
/// kernel parameter by value (in [`GenOptions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, KernelParams)]
#[repr(u32)]
pub enum Norm {
    /// `scale p` (astropy's `standard` with `scale = 1 / YY`, its `psd`
    /// with `scale = 0.5 sum dy^-2`).
    Scale = 0,
    /// `p / (YY - p)` (astropy's `model`).
    Model = 1,
    /// `-ln(1 - p / YY)` (astropy's `log`).
    Log = 2,
}

/// What the floating-mean kernels are asked to compute, the same for every
/// curve of a batch: fit the mean or not, and the normalization. A kernel
/// parameter by value.
///
/// Whether to fit the mean travels as a 32-bit word, 0 or 1, read through
/// [`GenOptions::fit_mean`]: the kernels test the word where they use it,
/// as they test any integer, while a `bool` field is narrowed to a
/// predicate where it is loaded, one more value live across the sample
/// loops of the register-capped builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, KernelParams)]
#[repr(C)]
pub struct GenOptions {
    /// 1: fit the mean, 0: not (only [`GenOptions::new`] writes it).
    fit_mean: u32,
    /// The normalization of the output.
    norm: Norm,
}

impl GenOptions {
    /// Fit a constant offset at every frequency or not (astropy's
    /// `fit_mean`: the model `a cos + b sin + m` instead of `a cos + b
    /// sin`), and normalize the output with `norm`.
    #[inline(always)]
    pub const fn new(fit_mean: bool, norm: Norm) -> Self {
        Self {
            fit_mean: fit_mean as u32,
            norm,
        }
    }

    /// Whether to fit the mean.
    #[inline(always)]
    pub const fn fit_mean(&self) -> bool {
        self.fit_mean != 0
    }

    /// The normalization of the output.
    #[inline(always)]
    pub const fn norm(&self) -> Norm {
        self.norm
    }
}

/// The floating-mean model's scalars of one curve, from the host in the
/// kernel's precision: a kernel parameter of the single-curve kernels,
/// beside their [`GenOptions`] (the batch kernels read the scalars of each
/// curve from a table).
#[derive(Debug, Clone, Copy, PartialEq, KernelParams)]
#[repr(C)]
pub struct GenScalars<T> {
    /// `sum w` of the weights as rounded to `T` (1 up to rounding).
    pub w_sum: T,
    /// `sum w y` (0 when `y` was centred).
    pub y_mean: T,
    /// `sum w y^2`.
    pub yy: T,
    /// The scale of [`Norm::Scale`] (astropy's `standard`: `1 / yy`,
    /// `psd`: `0.5 sum dy^-2`).
    pub scale: T,
}

/// What [`finish_general`] and [`normalize`] read of one curve inside a
/// kernel: its scalars ([`GenScalars`]) and the options.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GenModel<T> {
    /// `sum w` of the weights as rounded to `T` (1 up to rounding).
    pub w_sum: T,
    /// `sum w y` (0 when `y` was centred).
    pub y_mean: T,
    /// `sum w y^2`.
    pub yy: T,
    /// The scale of [`Norm::Scale`].
    pub scale: T,
    /// Fit the mean, and the normalization.
    pub opts: GenOptions,
}

impl<T> GenModel<T> {
    /// The model of a curve with scalars `s`, computed as `opts` asks.
    #[inline(always)]
    pub fn new(s: GenScalars<T>, opts: GenOptions) -> Self {
        let GenScalars {
            w_sum,
            y_mean,
            yy,
            scale,
        } = s;
        Self {
            w_sum,
            y_mean,
            yy,
            scale,
            opts,
        }
    }
}

/// The floating-mean (Zechmeister-Kurster, astropy's `fit_mean=True`)
/// periodogram `p` from the weighted sums of one frequency, `[YC, YS, CC,
/// CS, C, S]`, with weights `w_j` normalised to `sum w = w_sum` (1 up to
/// rounding): `YC = sum w y c`, `YS = sum w y s`, `CC = sum w c^2`, `CS =
/// sum w c s`, `C = sum w c`, `S = sum w s`, and `y_mean = sum w y` (0 when
/// `y` was centred), `w_sum` and `y_mean` from `model`.
///
/// With `fit_mean` the model is `a cos + b sin + m`: every sum is taken
/// about its weighted mean (`CC~ = CC - C^2 / W`, `CS~ = CS - C S / W`,
/// `YC~ = YC - Y C / W`, ...), and `p = b~^T M~^-1 b~` with `M~ = [[CC~,
/// CS~], [CS~, SS~]]`, `b~ = (YC~, YS~)`: astropy computes the same
/// quadratic form in the basis that `tau` diagonalises (`YCtau^2 / CCtau +
/// YStau^2 / SStau`); here it is [`finish_ls`]'s adjugate form, one
/// division and no trigonometry. Without `fit_mean` the raw sums (`SS =
/// w_sum - CC`). (Where the phases of a frequency all lie near 0 the
/// variances cancel in f32: the kernels use [`finish_general_d`] there.)
#[inline(always)]
pub fn finish_general<T: Real>(sums: [T; 6], model: &GenModel<T>) -> T {
    let [yc, ys, cc, cs, c, s] = sums;
    let (w_sum, y_mean) = (model.w_sum, model.y_mean);
    let ss = w_sum - cc;
    if model.opts.fit_mean() {
        let (cw, sw) = (c / w_sum, s / w_sum);
        finish_ls(
            (-y_mean).mul_add(cw, yc),
            (-y_mean).mul_add(sw, ys),
            (-c).mul_add(cw, cc),
            (-s).mul_add(sw, ss),
            (-c).mul_add(sw, cs),
            T::ONE,
        )
    } else {
        finish_ls(yc, ys, cc, ss, cs, T::ONE)
    }
}

/// Below this `|w| h` (`h` the largest `|x - x0|`) the floating-mean kernels
/// take their sums in the versine form ([`finish_general_d`]): the phases
/// of such a frequency all lie within `3` rad of 0, so `cos` is close to 1
/// for every sample and `CC - C^2` (a variance of about `(w h)^4 / 45`)
/// would be the difference of two numbers near 1, losing `-log10((w
/// h)^4 / 45)` digits in f32 (3 at `w h = 0.6`, the first frequency of
/// astropy's automatic grid). At `w h = 3` the loss is under one digit.
pub const GEN_LOW_PHASE: f64 = 3.0;

/// `1 - cos r` to relative accuracy: its Taylor series to `r^18 / 18!` for
/// `|r| < 0.7` (the first term left out is below `2e-19` of the value: f64
/// accuracy), `1 - c` beyond, where `c = cos r` is at most `cos 0.7` and
/// the subtraction loses nothing. `r` must be the reduced phase (within
/// about 5 of 0, [`Phase::split_phase`]), so `c` near 1 means `r` near 0.
/// The kernels call it only for the few frequencies whose phases all lie
/// near 0 ([`GEN_LOW_PHASE`]) or once per anchor.
#[inline(always)]
pub fn versine<T: Real>(r: T, c: T) -> T {
    if r.abs() < T::from_f64(0.7) {
        let z = r * r;
        // 1/(2k)!, k = 9 down to 2, alternating in sign.
        const INV: [f64; 8] = [
            1.0 / 6_402_373_705_728_000.0,
            -1.0 / 20_922_789_888_000.0,
            1.0 / 87_178_291_200.0,
            -1.0 / 479_001_600.0,
            1.0 / 3_628_800.0,
            -1.0 / 40_320.0,
            1.0 / 720.0,
            -1.0 / 24.0,
        ];
        // d = z (1/2 + z h), h = -1/4! + z/6! - ... by Horner.
        let mut h = T::from_f64(INV[0]);
        for &a in &INV[1..] {
            h = z.mul_add(h, T::from_f64(a));
        }
        z * z.mul_add(h, T::from_f64(0.5))
    } else {
        T::ONE - c
    }
}

/// [`finish_general`] from the sums in the versine form, `d = 1 - c`:
/// `sums = [YD, YS, D, S, DD, DS]` with `YD = sum w y d`, `YS`, `D = sum w
/// d`, `S = sum w s`, `DD = sum w d^2`, `DS = sum w d s`. Then `C = W - D`,
/// `CC = W - 2 D + DD`, `CS = S - DS`, `SS = 2 D - DD` (`d^2 + s^2 = 2 d`)
/// and `YC = Y - YD`, and the mean-fitted ones without cancellation: `CC~ =
/// DD - D^2 / W`, `CS~ = D S / W - DS`, `YC~ = Y D / W - YD`. Where every
/// `d` is small these are small numbers formed from small numbers, so the
/// variances keep f32's relative accuracy.
#[inline(always)]
pub fn finish_general_d<T: Real>(sums: [T; 6], model: &GenModel<T>) -> T {
    let [yd, ys, d, s, dd, ds] = sums;
    let (w_sum, y_mean) = (model.w_sum, model.y_mean);
    let ss = d + d - dd;
    if model.opts.fit_mean() {
        let (dw, sw) = (d / w_sum, s / w_sum);
        finish_ls(
            y_mean.mul_add(dw, -yd),
            (-y_mean).mul_add(sw, ys),
            (-d).mul_add(dw, dd),
            (-s).mul_add(sw, ss),
            s.mul_add(dw, -ds),
            T::ONE,
        )
    } else {
        let cc = (w_sum - (d + d)) + dd;
        finish_ls(y_mean - yd, ys, cc, ss, s - ds, T::ONE)
    }
}

/// Astropy's normalizations of `p` ([`Norm`]) with the model's `yy = sum w
/// y^2` of the (centred) values and its `scale`.
#[inline(always)]
pub fn normalize<T: Real + Ln>(p: T, model: &GenModel<T>) -> T {
    // A `match` on the discriminant with the scale as its fallback, as on
    // any integer: an exhaustive match on the enum is a switch whose
    // impossible values the GPU build turns into traps, and a chain of
    // tests lays the branches out differently.
    const MODEL: u32 = Norm::Model as u32;
    const LOG: u32 = Norm::Log as u32;
    let yy = model.yy;
    match model.opts.norm() as u32 {
        MODEL => p / (yy - p),
        LOG => -((yy - p) / yy).ln(),
        _ => model.scale * p,
    }
}

mod batch;
mod direct;
mod general;
mod lean;
mod peaks;
mod phase;
mod recurrence;
mod table;
mod taylor;

pub use batch::*;
pub use direct::*;
pub use general::*;
pub use lean::*;
pub use peaks::*;
pub use phase::*;
pub use recurrence::*;
pub use table::*;
pub use taylor::*;
