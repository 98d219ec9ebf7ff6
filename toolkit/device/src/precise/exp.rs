//! `exp`, `exp2`, `exp10`, `exp_m1`, `sinh`, `cosh`, `tanh`.
//!
//! One kernel serves all seven: [`exp_parts`] returns `e^x` as
//! `2^k (h + l)` with `h + l` a pair accurate to about 2^-(2p-10). The
//! reduction is Cody-Waite's (`x = k ln 2 + r`, `|r| <= ln(2)/2`, with
//! `ln 2` in two parts so `x - k ln2_hi` is exact), `e^r = 1 + r + r^2
//! P(r)` with a minimax `P` (fdlibm and musl use the same reduction; they
//! then use a rational form or a table, here it is one polynomial of 11
//! (f64) or 5 (f32) terms, no table, no division). Keeping `1 + r` as a
//! pair is what gives the extra bits: the functions that cancel (`exp_m1`,
//! `sinh`, `tanh` near 0) subtract 1 from the pair before rounding, so
//! they need no separate polynomial near 0 (fdlibm's `expm1`, `sinh` and
//! `tanh` each carry one). The results are scaled by `2^k` in two exact
//! steps ([`mul_pow2`]): overflow gives infinity, and a subnormal result
//! is rounded once more (within 1 ulp there).

use super::fp::{Fp, dd_div, fast_two_sum, mul_pow2, two_prod, two_sum};

/// `e^(x + xl) = 2^k (h + l)`, for `|x| <= EXP_CLAMP` and `|xl|` at most
/// about ulp(x) (the reduced argument must stay within the polynomial's
/// interval). `h` is `1 + r` rounded and `|l| < 0.07`: the pair is not
/// renormalised (the callers round `h + l` or add it into pairs of their
/// own).
#[inline(always)]
pub(crate) fn exp_parts<T: Fp>(x: T, xl: T) -> (i32, T, T) {
    let (kf, k) = T::magic_int(x.mul_add(T::LOG2E, T::MAGIC));
    // Exact: k ln2_hi has the low bits of ln2_hi's zeros to spare, and the
    // difference is a multiple of the smaller ulp below 0.35.
    let r_hi = (-kf).mul_add(T::LN2_HI, x);
    let r_lo = (-kf).mul_add(T::LN2_LO, xl);
    let (r, rl) = two_sum(r_hi, r_lo);
    // e^(r + rl) = (1 + r + q2)(1 + rl) with q2 = e^r - 1 - r.
    let q2 = r * r * T::exp_poly(r);
    let tail = rl.mul_add(r + q2, rl) + q2;
    let (h, l) = fast_two_sum(T::ONE, r);
    (k, h, l + tail)
}

/// `e^x - 1` as a pair from [`exp_parts`]' output, for `|k|` below the
/// exponent range (the callers keep `|x| <= 40`).
#[inline(always)]
fn expm1_pair<T: Fp>(k: i32, h: T, l: T) -> (T, T) {
    let s = T::pow2i(k);
    let (a, b) = two_sum(h * s, -T::ONE);
    fast_two_sum(a, b + l * s)
}

/// `e^x`.
#[inline(always)]
pub(crate) fn exp<T: Fp>(x: T) -> T {
    if x.is_nan() {
        return x + x;
    }
    let x = x.max(-T::EXP_CLAMP).min(T::EXP_CLAMP);
    let (k, h, l) = exp_parts(x, T::ZERO);
    mul_pow2(h + l, k)
}

/// `2^x`: `x = k + f` (exact, `|f| <= 1/2`), `2^f = e^(f ln 2)` with the
/// product kept as a pair.
#[inline(always)]
pub(crate) fn exp2<T: Fp>(x: T) -> T {
    if x.is_nan() {
        return x + x;
    }
    let x = x.max(-T::EXP2_CLAMP).min(T::EXP2_CLAMP);
    let (kf, k) = T::magic_int(x + T::MAGIC);
    let f = x - kf;
    let (r, e) = two_prod(f, T::LN2.0);
    let (k2, h, l) = exp_parts(r, f.mul_add(T::LN2.1, e));
    mul_pow2(h + l, k + k2)
}

/// `10^x`: `x = k log10(2) + f` (Cody-Waite with `log10 2` in two parts),
/// `10^f = e^(f ln 10)` with the product kept as a pair.
#[inline(always)]
pub(crate) fn exp10<T: Fp>(x: T) -> T {
    if x.is_nan() {
        return x + x;
    }
    let x = x.max(-T::EXP10_CLAMP).min(T::EXP10_CLAMP);
    let (kf, k) = T::magic_int(x.mul_add(T::LOG2_10, T::MAGIC));
    let f_hi = (-kf).mul_add(T::LOG10_2_HI, x);
    let f_lo = -kf * T::LOG10_2_LO;
    let (r, e) = two_prod(f_hi, T::LN10.0);
    let rl = e + f_hi.mul_add(T::LN10.1, f_lo * T::LN10.0);
    let (k2, h, l) = exp_parts(r, rl);
    mul_pow2(h + l, k + k2)
}

/// `e^x - 1`, accurate near 0: the pair `2^k (h + l) - 1`, rounded once.
#[inline(always)]
pub(crate) fn exp_m1<T: Fp>(x: T) -> T {
    if x.is_nan() || x == T::ZERO {
        return x + x;
    }
    if x > T::EXPM1_BIG {
        return exp(x);
    }
    if x < T::EXPM1_NEG {
        return -T::ONE;
    }
    let (k, h, l) = exp_parts(x, T::ZERO);
    let (th, tl) = expm1_pair(k, h, l);
    th + tl
}

/// `e^a - 1` as a pair, for `0 <= a <= HYP_BIG` (or `-2 TANH_ONE <= a <= 0`).
#[inline(always)]
fn expm1_pos<T: Fp>(a: T) -> (T, T) {
    let (k, h, l) = exp_parts(a, T::ZERO);
    expm1_pair(k, h, l)
}

/// `e^a / 2` for `a >= HYP_BIG` (overflows only where the result does).
#[inline(always)]
fn half_exp<T: Fp>(a: T) -> T {
    let (k, h, l) = exp_parts(a.min(T::EXP_CLAMP), T::ZERO);
    mul_pow2(h + l, k - 1)
}

/// `sinh x = (t + t / (1 + t)) / 2` with `t = e^|x| - 1` as a pair (no
/// cancellation near 0), `e^|x| / 2` beyond `HYP_BIG`.
#[inline(always)]
pub(crate) fn sinh<T: Fp>(x: T) -> T {
    if x.is_nan() {
        return x + x;
    }
    let a = x.abs();
    let r = if a > T::HYP_BIG {
        half_exp(a)
    } else {
        let (th, tl) = expm1_pos(a);
        let (dh, dl) = two_sum(T::ONE, th);
        let (uh, ul) = dd_div(th, tl, dh, dl + tl);
        let (sh, sl) = two_sum(th, uh);
        T::HALF * (sh + (sl + (tl + ul)))
    };
    r.copysign(x)
}

/// `cosh x = 1 + t^2 / (2 (1 + t))` with `t = e^|x| - 1` as a pair,
/// `e^|x| / 2` beyond `HYP_BIG`.
#[inline(always)]
pub(crate) fn cosh<T: Fp>(x: T) -> T {
    if x.is_nan() {
        return x + x;
    }
    let a = x.abs();
    if a > T::HYP_BIG {
        return half_exp(a);
    }
    let (th, tl) = expm1_pos(a);
    let (t2h, t2l) = two_prod(th, th);
    let t2l = (T::TWO * th).mul_add(tl, t2l);
    let (dh, dl) = two_sum(T::ONE, th);
    let (wh, wl) = dd_div(t2h, t2l, dh, dl + tl);
    let (ch, cl) = two_sum(T::ONE, T::HALF * wh);
    ch + (cl + T::HALF * wl)
}

/// `tanh x = -t / (t + 2)` with `t = e^(-2|x|) - 1` as a pair (fdlibm's
/// identity, here with the pair instead of a rounded `expm1`), ±1 beyond
/// `TANH_ONE`.
#[inline(always)]
pub(crate) fn tanh<T: Fp>(x: T) -> T {
    if x.is_nan() {
        return x + x;
    }
    let a = x.abs();
    let r = if a > T::TANH_ONE {
        T::ONE
    } else {
        let (th, tl) = expm1_pos(-T::TWO * a);
        let (dh, dl) = fast_two_sum(T::TWO, th);
        let (qh, ql) = dd_div(-th, -tl, dh, dl + tl);
        qh + ql
    };
    r.copysign(x)
}
