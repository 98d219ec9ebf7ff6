//! `log2`, `log10`, `ln_1p`, and the logarithm as a pair that `powf` uses.
//!
//! `x = 2^k m`, `m` in `[sqrt(2)/2, sqrt(2))`, `f = m - 1` (exact), and
//! `ln m = 2 atanh(s) = 2s + 2s^3/3 + s^5 R(s^2)` with `s = f / (2 + f)`,
//! `|s| <= 0.1716` (fdlibm's reduction, `e_log.c`). fdlibm rounds `s` and
//! keeps `f - f^2/2` in a split form; here `s`, `s^3` and `2/3 s^3` are
//! carried as pairs (FMA products, the exact division residual), and only
//! `s^5 R` (2^-12.5 of the result at most) is in plain precision, so
//! [`log_pair`] is accurate to about 2^-70 (f64) and 2^-36 (f32), enough
//! for `powf` to scale it by up to 745 (f64) or 104 (f32). `log2` and
//! `log10` multiply the pair by `1/ln 2` or `1/ln 10` as pairs and add `k`
//! (or `k log10 2`) before the one rounding. `ln` itself stays fdlibm's
//! (`super::ln_f64`, `super::ln_f32`).

use super::fp::{Fp, fast_two_sum, two_prod, two_sum};

/// `ln(1 + f)` as a pair, for `f` in `[sqrt(2)/2 - 1, sqrt(2) - 1]`.
#[inline(always)]
fn log1p_reduced<T: Fp>(f: T) -> (T, T) {
    // s = f / (2 + f) as a pair: 2 + f exactly as dh + dl, then the
    // division's residual.
    let (dh, dl) = fast_two_sum(T::TWO, f);
    let sh = f / dh;
    let r = (-sh).mul_add(dh, f);
    let r = (-sh).mul_add(dl, r);
    let sl = r / dh;
    // s^2 and s^3 as pairs.
    let (zh, zl) = two_prod(sh, sh);
    let zl = (T::TWO * sh).mul_add(sl, zl);
    let (ch, cl) = two_prod(zh, sh);
    let cl = zh.mul_add(sl, zl.mul_add(sh, cl));
    // 2/3 s^3 as a pair.
    let (t3h, t3l) = two_prod(ch, T::TWO_THIRDS.0);
    let t3l = ch.mul_add(T::TWO_THIRDS.1, cl.mul_add(T::TWO_THIRDS.0, t3l));
    // s^5 R(s^2).
    let t5 = ch * zh * T::log_poly(zh);
    // Renormalised: `lo` below an ulp of `hi` (t5 alone reaches 2^-12.5 of
    // the result), as `powf` needs to keep `y lo` small.
    let (h, l) = fast_two_sum(T::TWO * sh, t3h);
    fast_two_sum(h, l + (T::TWO * sl + (t3l + t5)))
}

/// `ln x = k ln 2 + hi + lo` for finite `x > 0`: `(k, hi, lo)` with `k`
/// as a float.
#[inline(always)]
pub(crate) fn log_pair<T: Fp>(x: T) -> (T, T, T) {
    let (k, m) = x.frexp_sqrt2();
    let (h, l) = log1p_reduced(m - T::ONE);
    (T::from_i32(k), h, l)
}

/// The special values of `log2` and `log10` (and `ln`): `Some` for `x <= 0`,
/// NaN and infinity.
#[inline(always)]
fn log_special<T: Fp>(x: T) -> Option<T> {
    if x > T::ZERO && x < T::INF {
        None
    } else if x == T::ZERO {
        Some(-T::INF)
    } else if x == T::INF {
        Some(x)
    } else {
        Some(T::NAN)
    }
}

/// `log2 x`: exact at powers of two.
#[inline(always)]
pub(crate) fn log2<T: Fp>(x: T) -> T {
    if let Some(s) = log_special(x) {
        return s;
    }
    let (kf, h, l) = log_pair(x);
    let (ph, pl) = two_prod(h, T::INV_LN2.0);
    let pl = h.mul_add(T::INV_LN2.1, l.mul_add(T::INV_LN2.0, pl));
    let (sh, sl) = two_sum(kf, ph);
    sh + (sl + pl)
}

/// `log10 x`.
#[inline(always)]
pub(crate) fn log10<T: Fp>(x: T) -> T {
    if let Some(s) = log_special(x) {
        return s;
    }
    let (kf, h, l) = log_pair(x);
    let (ph, pl) = two_prod(h, T::INV_LN10.0);
    let pl = h.mul_add(T::INV_LN10.1, l.mul_add(T::INV_LN10.0, pl));
    // k log10(2): the high product is exact.
    let (sh, sl) = two_sum(kf * T::LOG10_2_HI, ph);
    sh + (sl + kf.mul_add(T::LOG10_2_LO, pl))
}

/// `ln(1 + x)`: `1 + x = u + e` exactly (two-sum), `ln(1 + x) = ln u +
/// e/u` to within `(e/u)^2`, below 2^-2p.
#[inline(always)]
pub(crate) fn ln_1p<T: Fp>(x: T) -> T {
    if x.is_nan() || x == T::ZERO || x == T::INF {
        return x + x;
    }
    if x <= -T::ONE {
        return if x == -T::ONE { -T::INF } else { T::NAN };
    }
    let (u, e) = two_sum(T::ONE, x);
    let (kf, h, l) = log_pair(u);
    let (sh, sl) = two_sum(kf * T::LN2_HI, h);
    sh + (sl + (kf.mul_add(T::LN2_LO, l) + e / u))
}
