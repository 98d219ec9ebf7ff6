//! Phases of long time spans: `w x mod 2 pi` to f32 accuracy when `w x` is
//! far beyond what an f32 product can hold.
//!
//! A plain f32 kernel computes the phase as `w * x` in f32. Its rounding
//! error is `|w x| 2^-24`, plus as much again from `w` and `x` themselves
//! rounded to f32: at 300 samples over `t` in `[0, 5000]` and `w` up to 50
//! (phases of 2.5e5 rad) that is about 0.02 rad, and the periodogram is off
//! by 3e-3 of its peak. The f64 reference does not have the problem (its
//! phase error at 1e7 rad is 1e-9 rad).
//!
//! The `_long` kernels carry each operand as an unevaluated sum of two f32,
//! `w = wh + wl` and `x - x0 = uh + ul` (the host splits the f64 values:
//! `hi = f32(v)`, `lo = f32(v - hi)`, 48 bits together), and form the phase
//! as `p + lo` with
//!
//! ```text
//! p  = wh uh                       (rounded)
//! e  = fma(wh, uh, -p)             (exactly the rounding error of p)
//! lo = fma(wl, uh, fma(wh, ul, e)) (the cross terms; wl ul is below 2^-48 |w x|)
//! ```
//!
//! then take `p` modulo 2 pi: `n = round(p / 2 pi)` by the `1.5 2^23` trick
//! (two FP32 operations, no conversion unit), `p - n C1 - n C2` with `C1 +
//! C2 = 2 pi` to 48 bits, each step one FMA (the first is exact up to one
//! rounding of a result below 4), and add `lo`. The reduced phase is within
//! about `3e-7` rad of `w x mod 2 pi` for `|w x|` up to [`SPLIT_PHASE_MAX_F32`]
//! (2.5e7 rad, where `n` stops being exact), whatever the span: f32 accuracy
//! for `sincos`, which then sees an argument below 5 in magnitude (so the
//! precise `sincos` never takes its huge-argument path, and the SFU's
//! `sin.approx` stays on the range where its error is 2^-21).
//!
//! The recurrence and Taylor kernels need a phase per (sample, run of
//! frequencies) only, at frequency index `k` of an even grid: `(start + k
//! step) u = alpha + k beta` with `alpha = start u mod 2 pi` and `beta =
//! step u mod 2 pi` reduced on the host in f64 and split in two. [`Phase::anchor`]
//! forms `k beta` exactly (`k < 2^24` is exact in f32) the same way.
//!
//! The f64 implementation is the same code with `lo` parts that are zero
//! (the host passes f64 values whole): its products are accurate to 1e-16
//! relative, and the reduction keeps the precise f64 `sincos` on its
//! Cody-Waite path beyond 2^20 rad, where it would otherwise take the
//! Payne-Hanek path on every pair.

use ptxlab_device::math::Real;
use ptxlab_device::precise::Trig;

/// Largest `max |w| max |x - x0|` for which the host runs the plain f32
/// kernels (phase as one f32 product): there the phase error is below about
/// `1.2e-4` rad (the rounding of `w`, `x` and their product at 1024 rad)
/// and the periodogram well inside the 1e-4 bound (measured:
/// `docs/book/src/workloads/lomb-scargle.md`, "Spans and precision: split phases");
/// beyond, the `_long` kernels.
pub const PLAIN_PHASE_MAX_F32: f64 = 1024.0;
/// Largest phase of the plain f64 kernels: beyond it the precise f64 `sincos`
/// reduces every pair by Payne-Hanek (correct, slow), so the host runs the
/// `_long` kernels, which reduce modulo 2 pi first.
pub const PLAIN_PHASE_MAX_F64: f64 = 1_048_576.0;
/// Largest `|w (x - x0)|` the f32 `_long` kernels reduce exactly: `p / 2 pi`
/// must stay below 2^22 for the rounding trick (2.6e7 rad).
pub const SPLIT_PHASE_MAX_F32: f64 = 2.5e7;

const MAGIC_F32: f32 = 12_582_912.0; // 1.5 * 2^23
const INV_TAU_F32: f32 = (1.0 / core::f64::consts::TAU) as f32;
const TAU_F1: f32 = core::f32::consts::TAU;
const TAU_F2: f32 = (core::f64::consts::TAU - core::f32::consts::TAU as f64) as f32;

const MAGIC_F64: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52
const INV_TAU_F64: f64 = 1.0 / core::f64::consts::TAU;
const TAU_D1: f64 = core::f64::consts::TAU;
/// `2 pi - TAU_D1` (twice fdlibm's `pi_lo`).
const TAU_D2: f64 = f64::from_bits(0x3CB1_A626_3314_5C07);

/// Phases modulo 2 pi from split operands (see the module documentation).
pub trait Phase: Real + Trig {
    /// `p - 2 pi round(p / 2 pi)`: in `[-pi, pi]` up to a rounding, for
    /// `|p|` up to [`SPLIT_PHASE_MAX_F32`] (f32) or 2^51 (f64).
    fn reduce_2pi(p: Self) -> Self;

    /// `(wh + wl)(uh + ul) mod 2 pi`, in about `[-pi - 1.5, pi + 1.5]` (the
    /// low part is added after the reduction).
    #[inline(always)]
    fn split_phase(wh: Self, wl: Self, uh: Self, ul: Self) -> Self {
        let p = wh * uh;
        let e = wh.mul_add(uh, -p);
        let lo = wl.mul_add(uh, wh.mul_add(ul, e));
        Self::reduce_2pi(p) + lo
    }

    /// `alpha + k beta mod 2 pi` for `alpha = ah + al`, `beta = bh + bl`
    /// (each reduced to `[-pi, pi]` by the host) and an integer `k < 2^24`:
    /// the phase of frequency index `k` of an even grid. In about
    /// `[-2 pi - 1, 2 pi + 1]`.
    #[inline(always)]
    fn anchor(ah: Self, al: Self, bh: Self, bl: Self, k: Self) -> Self {
        let p = k * bh;
        let e = k.mul_add(bh, -p);
        let lo = k.mul_add(bl, e) + al;
        Self::reduce_2pi(p) + (ah + lo)
    }
}

impl Phase for f32 {
    #[inline(always)]
    fn reduce_2pi(p: f32) -> f32 {
        // `p / 2 pi + 1.5 2^23` lies in [2^23, 2^24), where the f32 spacing is
        // 1: the sum is rounded to an integer, and subtracting the constant
        // back is exact.
        let n = p.mul_add(INV_TAU_F32, MAGIC_F32) - MAGIC_F32;
        (-n).mul_add(TAU_F2, (-n).mul_add(TAU_F1, p))
    }
}

impl Phase for f64 {
    #[inline(always)]
    fn reduce_2pi(p: f64) -> f64 {
        let n = p.mul_add(INV_TAU_F64, MAGIC_F64) - MAGIC_F64;
        (-n).mul_add(TAU_D2, (-n).mul_add(TAU_D1, p))
    }
}

/// The phase of one (sample, frequency) pair of the direct-family kernels:
/// `w x` in the plain kernels (`SPLIT = false`: the low parts are not
/// read), [`Phase::split_phase`] in the `_long` ones.
#[inline(always)]
pub fn pair_phase<T: Phase, const SPLIT: bool>(wh: T, wl: T, xh: T, xl: T) -> T {
    if SPLIT {
        T::split_phase(wh, wl, xh, xl)
    } else {
        wh * xh
    }
}
