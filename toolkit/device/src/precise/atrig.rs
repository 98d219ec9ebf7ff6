//! `atan`, `asin`, `acos`.
//!
//! `atan`: `|x| > 1` goes through `pi/2 - atan(1/|x|)`, then `t > tan(pi/8)`
//! through `pi/4 + atan((t - 1) / (t + 1))` (Cephes' reduction), leaving
//! `|w| <= tan(pi/8)` for `w + w^3 P(w^2)`, a minimax polynomial of 11
//! (f64) or 5 (f32) terms. fdlibm uses four breakpoints and stores
//! `atan` at each; here the reciprocal and the quotient are carried as
//! pairs (FMA residuals) and their low parts enter as `wl / (1 + w^2)`,
//! and pi/4, pi/2 are pairs, so the only roundings that count are the
//! last two additions.
//!
//! `asin`: `|x| <= 1/2`: `x + x^3 P(x^2)`; above, `pi/2 - 2 asin(s)` with
//! `s = sqrt((1 - |x|) / 2)` as a pair (the square root's residual), the
//! same `P` on `[0, 1/4]` (fdlibm's `e_asin.c` reduction, its rational
//! function replaced by a 13 (f64) / 6 (f32) term polynomial). `acos`
//! reuses both halves: `pi/2 - asin(x)`, `2 asin(s)` and `pi - 2 asin(s)`.

use super::fp::{Fp, dd_div, fast_two_sum};

/// `atan x`, odd, `±pi/2` at `±inf`.
#[inline(always)]
pub(crate) fn atan<T: Fp>(x: T) -> T {
    if x.is_nan() {
        return x + x;
    }
    let a = x.abs();
    if a > T::ATAN_BIG {
        return T::PI_2.0.copysign(x);
    }
    // t + tl = min(a, 1/a).
    let inv = a > T::ONE;
    let (t, tl) = if inv {
        let t = T::ONE / a;
        (t, t * (-t).mul_add(a, T::ONE))
    } else {
        (a, T::ZERO)
    };
    // w + wl = t, or (t - 1) / (t + 1) with base pi/4.
    let (w, wl, bh, bl) = if t > T::TAN_PI_8 {
        let (nh, nl) = fast_two_sum(-T::ONE, t);
        let (dh, dl) = fast_two_sum(T::ONE, t);
        let (w, wl) = dd_div(nh, nl + tl, dh, dl + tl);
        (w, wl, T::PI_4.0, T::PI_4.1)
    } else {
        (t, tl, T::ZERO, T::ZERO)
    };
    // atan(w + wl) = w + w^3 P(w^2) + wl / (1 + w^2).
    let z = w * w;
    let tail = (w * z).mul_add(T::atan_poly(z), wl.mul_add(-z, wl));
    let (rh, rl) = fast_two_sum(bh, w);
    let rl = rl + (bl + tail);
    let r = if inv {
        let (h, l) = fast_two_sum(T::PI_2.0, -rh);
        h + (l + (T::PI_2.1 - rl))
    } else {
        rh + rl
    };
    r.copysign(x)
}

/// `asin` of `s + sl`, `s = sqrt(w)`, `w` in `[0, 1/4]`, as `s + (sl + s w
/// P(w))` (the tail part): returns `(s, tail)`.
#[inline(always)]
fn asin_sqrt<T: Fp>(w: T) -> (T, T) {
    let s = w.sqrt();
    // The square root's residual; (2s) floored so w = 0 gives 0, not NaN.
    let sl = (-s).mul_add(s, w) / (T::TWO * s).max(T::MIN_NORMAL);
    (s, (s * w).mul_add(T::asin_poly(w), sl))
}

/// `asin x`, odd; NaN outside `[-1, 1]`.
#[inline(always)]
pub(crate) fn asin<T: Fp>(x: T) -> T {
    if x.is_nan() {
        return x + x;
    }
    let a = x.abs();
    if a > T::ONE {
        return T::NAN;
    }
    let r = if a <= T::HALF {
        let z = a * a;
        a.mul_add(z * T::asin_poly(z), a)
    } else {
        let (s, tail) = asin_sqrt((T::ONE - a) * T::HALF);
        let (h, l) = fast_two_sum(T::PI_2.0, -T::TWO * s);
        h + (l + (-T::TWO).mul_add(tail, T::PI_2.1))
    };
    r.copysign(x)
}

/// `acos x`; NaN outside `[-1, 1]`.
#[inline(always)]
pub(crate) fn acos<T: Fp>(x: T) -> T {
    if x.is_nan() {
        return x + x;
    }
    let a = x.abs();
    if a > T::ONE {
        return T::NAN;
    }
    if a <= T::HALF {
        let z = x * x;
        let p = x * z * T::asin_poly(z);
        let (h, l) = fast_two_sum(T::PI_2.0, -x);
        return h + (l + (T::PI_2.1 - p));
    }
    let (s, tail) = asin_sqrt((T::ONE - a) * T::HALF);
    if x > T::ZERO {
        T::TWO.mul_add(s, T::TWO * tail)
    } else {
        let (h, l) = fast_two_sum(T::PI.0, -T::TWO * s);
        h + (l + (-T::TWO).mul_add(tail, T::PI.1))
    }
}
