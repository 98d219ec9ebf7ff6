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
//! cap, cubin) launch the same `lomb_direct_*` kernel from another module; the
//! source rungs are separate kernels below.

use ptxlab_device::mem::{F32x4, F64x2};
use ptxlab_device::precise::Trig;
use ptxlab_device::prelude::*;

/// Threads per block of the material's launch shape.
pub const BLOCK: u32 = 128;
/// Blocks per SM of the material's launch shape (`SM count x 20` blocks).
pub const BLOCKS_PER_SM: u32 = 20;
/// Consecutive frequencies per thread in `lomb_rotate_f32`.
pub const ROT_RUN_F32: usize = 16;
/// Consecutive frequencies per thread in `lomb_rotate_f64`.
pub const ROT_RUN_F64: usize = 8;
/// Consecutive frequencies per thread in `lomb_cheby_f32`.
pub const CHEBY_RUN_F32: usize = 16;
/// Consecutive frequencies per thread in `lomb_cheby_f64`.
pub const CHEBY_RUN_F64: usize = 8;

/// The periodogram value from the five sums (`scale` is 0.5, or `1/sum y^2`).
#[inline(always)]
pub fn finish<T: Real + Trig>(xc: T, xs: T, cc: T, ss: T, cs: T, scale: T) -> T {
    // 2 w tau; the kernels rotate by w tau directly instead of dividing by w
    // and multiplying back (one division less, no 0 * inf at w = 0).
    let wtau = T::from_f64(0.5) * (cs + cs).atan2(cc - ss);
    let (st, ct) = wtau.sincos();
    finish_at(ct, st, xc, xs, cc, ss, cs, scale)
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
    finish_at(ct, st, xc, xs, cc, ss, cs, scale)
}

/// The periodogram value from the five sums and `(cos, sin)(w tau)`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn finish_at<T: Real>(ct: T, st: T, xc: T, xs: T, cc: T, ss: T, cs: T, scale: T) -> T {
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

/// The samples `(x_j, y_j)` of the direct and lean kernels, walked in order:
/// four at a time with 16-byte loads when both arrays start on a 16-byte
/// boundary (device allocations do), with a 32-bit counter, then the rest
/// one at a time. Per pair that is half a load and a quarter of a loop step,
/// not two loads and a 64-bit compare. On the SFU-bound fast-math rungs the
/// issue slots this frees are what lets the two `MUFU` per pair run back to
/// back.
struct Samples<'a, T: Copy> {
    x: DeviceSlice<'a, T>,
    y: DeviceSlice<'a, T>,
    /// Chunks of four for the 16-byte loads (0 when not aligned).
    n4: u32,
}

impl<'a, T: Pack4> Samples<'a, T> {
    /// Traps when `x` and `y` differ in length.
    #[inline(always)]
    fn new(x: DeviceSlice<'a, T>, y: DeviceSlice<'a, T>) -> Self {
        check_lengths(&x, &y);
        let aligned = (x.as_ptr() as usize | y.as_ptr() as usize).is_multiple_of(16);
        let n4 = if aligned { (x.len() / 4) as u32 } else { 0 };
        Samples { x, y, n4 }
    }

    /// Number of samples.
    #[inline(always)]
    fn len(&self) -> usize {
        self.x.len()
    }

    /// Calls `visit(x_j, y_j)` for every sample, in order.
    #[inline(always)]
    fn for_each(&self, mut visit: impl FnMut(T, T)) {
        let mut q = 0u32;
        while q < self.n4 {
            // SAFETY: `4q + 4 <= 4 n4 <= x.len() = y.len()` (`new`), and
            // both start on a 16-byte boundary when `n4 > 0`.
            let (xv, yv) =
                unsafe { (T::load4(&self.x, q as usize), T::load4(&self.y, q as usize)) };
            visit(xv[0], yv[0]);
            visit(xv[1], yv[1]);
            visit(xv[2], yv[2]);
            visit(xv[3], yv[3]);
            q += 1;
        }
        let mut j = 4 * self.n4 as usize;
        while j < self.x.len() {
            // SAFETY: `j < x.len() = y.len()` (`new`).
            let (xj, yj) = unsafe { (self.x.get_unchecked(j), self.y.get_unchecked(j)) };
            visit(xj, yj);
            j += 1;
        }
    }
}

/// Four consecutive values with 16-byte loads (one for f32, two for f64)
/// instead of four scalar loads: `x`, `y` in the direct kernels, the packed
/// per-sample table of the recurrence kernels.
pub trait Pack4: Real + Trig {
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

mod direct;
mod lean;
mod recurrence;
mod table;
mod taylor;

pub use direct::*;
pub use lean::*;
pub use recurrence::*;
pub use table::*;
pub use taylor::*;
