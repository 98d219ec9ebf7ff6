//! `powf` and `powi`: `x^y = e^(y ln x)`, with `ln x` as a pair
//! ([`log_pair`]), the product `y ln x` as a pair (FMA), and
//! [`exp_parts`] taking the pair. The classic route (fdlibm's `e_pow.c`,
//! musl's and CORE-MATH's `pow` with tables); an error `d` in `y ln x`
//! is a relative error `d` in the result, and `|y ln x|` reaches 745, so
//! the logarithm carries about 2^-70 (f64) / 2^-36 (f32) and the product
//! keeps its low part. `powi(x, n)` is the same computation with `n`
//! exact (in f32, `n` becomes a pair when `|n| > 2^24`), so its error does
//! not grow with `n` as repeated multiplication's does; `n` in
//! `{0, 1, 2, -1}` is `1`, `x`, `x * x`, `1 / x` (correctly rounded, and
//! what a constant `powi(x, 2)` compiles to).

use super::exp::exp_parts;
use super::fp::{Fp, mul_pow2, two_sum};
use super::log::log_pair;

/// `x^y` with IEEE 754 / C99 special cases: `pow(x, ±0) = 1` and
/// `pow(1, y) = 1` even for NaN; `pow(-1, ±inf) = 1`; a negative finite
/// `x` with a non-integer `y` gives NaN; zeros and infinities by the sign
/// of `y` and the parity of an integer `y`.
#[inline(always)]
pub(crate) fn powf<T: Fp>(x: T, y: T) -> T {
    if y == T::ZERO || x == T::ONE {
        return T::ONE;
    }
    if x.is_nan() || y.is_nan() {
        return x + y;
    }
    if y.abs() == T::INF {
        let ax = x.abs();
        return if ax == T::ONE {
            T::ONE
        } else if (ax > T::ONE) == (y > T::ZERO) {
            T::INF
        } else {
            T::ZERO
        };
    }
    let (int, odd) = y.int_class();
    pow_finite(x, y, T::ZERO, int, odd)
}

/// `x^n` (see the module docs).
#[inline(always)]
pub(crate) fn powi<T: Fp>(x: T, n: i32) -> T {
    match n {
        0 => T::ONE,
        1 => x,
        2 => x * x,
        -1 => T::ONE / x,
        _ => {
            let (yh, yl) = T::split_i32(n);
            pow_finite(x, yh, yl, true, n & 1 != 0)
        }
    }
}

/// `x^(yh + yl)` for a finite, nonzero `y`, whose class (integer, odd) is
/// given.
#[inline(always)]
fn pow_finite<T: Fp>(x: T, yh: T, yl: T, int: bool, odd: bool) -> T {
    if x.is_nan() {
        return x + x;
    }
    let ax = x.abs();
    if x < T::ZERO && ax != T::INF && !int {
        return T::NAN;
    }
    let r = if ax == T::ZERO {
        if yh < T::ZERO { T::INF } else { T::ZERO }
    } else if ax == T::INF {
        if yh < T::ZERO { T::ZERO } else { T::INF }
    } else {
        // ln|x| = k ln2 + h + l, then y ln|x| as a pair.
        let (kf, h, l) = log_pair(ax);
        let (sh, sl) = two_sum(kf * T::LN2_HI, h);
        let sl = sl + kf.mul_add(T::LN2_LO, l);
        let ph = yh * sh;
        if ph.abs() > T::EXP_CLAMP {
            // Far beyond the overflow or underflow threshold (or y ln|x|
            // overflowed itself).
            if ph > T::ZERO { T::INF } else { T::ZERO }
        } else {
            let pl = yh.mul_add(sh, -ph) + yh.mul_add(sl, yl * sh);
            let (k, eh, el) = exp_parts(ph, pl);
            mul_pow2(eh + el, k)
        }
    };
    if odd && x.sign_bit() { -r } else { r }
}
