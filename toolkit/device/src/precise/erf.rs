//! `erf` and `erfc`.
//!
//! Near 0 (`|x| < 0.84375` for `erf`, as fdlibm, `|x| < 0.625` for
//! `erfc = 1 - erf`): `erf x = x + x Q(x^2)`, a minimax polynomial (11
//! terms in f64, 6 in f32).
//!
//! Beyond, `erfc x = e^(-x^2) erfcx(x)` (and `erf = 1 - erfc`), where the scaled function
//! `erfcx(x) = e^(x^2) erfc(x)` is smooth and slowly varying. One
//! polynomial covers it from 1/2 to the underflow of `erfc` (27.3 in f64,
//! 10.1 in f32), in the variable `y = (x - 4) / (x + 4)` and normalised by
//! `1 + 2x`: `(1 + 2x) erfcx(x)` only moves between 1.15 and 1.24 there,
//! so 22 (f64) or 10 (f32) terms reach the precision with no branch on
//! `x` (this mapping and normalisation are those of Shepherd and
//! Laframboise, Math. Comp. 36 (1981), who expand in Chebyshev
//! polynomials; the coefficients here are a minimax fit of our own).
//! `e^(-x^2)` takes `x^2` as an exact pair into [`exp_parts`], and the
//! quotient by `1 + 2x` is taken on pairs, so the result is rounded once
//! (twice where it is subnormal, from about x = 26.5 in f64 and 9.2 in
//! f32: the far tail is within an ulp of the subnormal spacing, not
//! relatively). fdlibm's `s_erf.c` uses four intervals and rational
//! functions instead.

use super::exp::exp_parts;
use super::fp::{Fp, dd_div, fast_two_sum, mul_pow2, two_prod};

/// The centre of the variable `y = (x - K) / (x + K)`.
const K: f64 = 4.0;
/// Below this `|x|`, `erf` is the polynomial.
const ERF_SPLIT: f64 = 0.84375;
/// Below this `|x|`, `erfc` is `1 - erf` from the polynomial (there
/// `1 - erf` loses less than the `erfcx` route, fitted from 1/2).
const ERFC_SPLIT: f64 = 0.625;

/// `erf` near 0 as a pair `x + x Q(x^2)`, for `|x| < ERF_SPLIT`.
#[inline(always)]
fn erf_small<T: Fp>(x: T) -> (T, T) {
    fast_two_sum(x, x * T::erf_poly(x * x))
}

/// `erfc x` for `1/2 <= x <= ERFC_ZERO`.
#[inline(always)]
fn erfc_big<T: Fp>(x: T) -> T {
    let (qh, ql) = two_prod(x, x);
    let (k, h, l) = exp_parts(-qh, -ql);
    let kk = T::from_f64(K);
    let (gh, gl) = T::erfcx_poly((x - kk) / (x + kk));
    // e^(-x^2) (1 + 2x) erfcx(x) / (1 + 2x), on pairs.
    let (nh, nl) = two_prod(h, gh);
    let nl = h.mul_add(gl, l.mul_add(gh, nl));
    let (dh, dl) = fast_two_sum(T::TWO * x, T::ONE);
    let (q, ql) = dd_div(nh, nl, dh, dl);
    mul_pow2(q + ql, k)
}

/// `erf x`, odd, `±1` beyond `ERF_ONE`.
#[inline(always)]
pub(crate) fn erf<T: Fp>(x: T) -> T {
    if x.is_nan() {
        return x + x;
    }
    let a = x.abs();
    let r = if a < T::from_f64(ERF_SPLIT) {
        let (h, l) = erf_small(a);
        h + l
    } else if a > T::ERF_ONE {
        T::ONE
    } else {
        T::ONE - erfc_big(a)
    };
    r.copysign(x)
}

/// `erfc x = 1 - erf x`, accurate relatively in the right tail (down to
/// the subnormals) and 2 in the left.
#[inline(always)]
pub(crate) fn erfc<T: Fp>(x: T) -> T {
    if x.is_nan() {
        return x + x;
    }
    let a = x.abs();
    if a < T::from_f64(ERFC_SPLIT) {
        let (h, l) = erf_small(x);
        let (s, e) = fast_two_sum(T::ONE, -h);
        return s + (e - l);
    }
    if x > T::ZERO {
        if x > T::ERFC_ZERO {
            T::ZERO
        } else {
            erfc_big(x)
        }
    } else if a > T::ERF_ONE {
        T::TWO
    } else {
        T::TWO - erfc_big(a)
    }
}
