//! `cbrt` and `hypot`.
//!
//! `cbrt`: `|x| = 2^(3q + r) m`, `m` in `[1, 2)`, `r` in `{0, 1, 2}`; a
//! minimax seed for `cbrt(m)` times `2^(r/3)`, Newton steps on `y^3 = 2^r
//! m`, the last one with the residual `y^3 - a` computed exactly enough
//! (FMA pair for `y^2`) that the correction is good to about 2^-50
//! relatively; then one rounding. (The classic scheme: fdlibm's `s_cbrt.c`
//! starts from a bit-level guess instead of a polynomial.)
//!
//! `hypot`: scale the larger of `|x|`, `|y|` into `[1, 2)` by a power of
//! two (exact), `x^2 + y^2` as a pair (FMA products), then `sqrt` with one
//! Newton correction from the pair's low part, scale back. No overflow or
//! underflow in between; the result is rounded once (twice when it is
//! subnormal).

use super::fp::{Fp, fast_two_sum, mul_pow2, two_prod};

/// `cbrt x`; `cbrt(-x) = -cbrt(x)`; exact for perfect cubes of moderate size.
#[inline(always)]
pub(crate) fn cbrt<T: Fp>(x: T) -> T {
    if x == T::ZERO || !x.is_finite() {
        return x + x;
    }
    let (e, m) = x.abs().frexp1();
    let q = e.div_euclid(3);
    let r = e - 3 * q;
    let a = m * T::pow2i(r);
    let c = if r == 0 {
        T::ONE
    } else if r == 1 {
        T::CBRT2
    } else {
        T::CBRT4
    };
    let y = T::cbrt_refine(T::cbrt_seed(m) * c, a);
    // y - (y^3 - a) / (3 y^2), with y^3 - a from the exact y^2 = y2h + y2l.
    let (y2h, y2l) = two_prod(y, y);
    let d = y2h.mul_add(y, -a) + y2l * y;
    let y = y - d / (T::from_i32(3) * y2h);
    (y * T::pow2i(q)).copysign(x)
}

/// `sqrt(x^2 + y^2)` without undue overflow or underflow; infinity if
/// either is infinite (even with a NaN), NaN if either is NaN otherwise.
#[inline(always)]
pub(crate) fn hypot<T: Fp>(x: T, y: T) -> T {
    let (ax, ay) = (x.abs(), y.abs());
    if ax == T::INF || ay == T::INF {
        return T::INF;
    }
    if ax.is_nan() || ay.is_nan() {
        return ax + ay;
    }
    let (a, b) = if ax >= ay { (ax, ay) } else { (ay, ax) };
    if b == T::ZERO {
        return a;
    }
    let (e, _) = a.frexp1();
    let (a, b) = (mul_pow2(a, -e), mul_pow2(b, -e));
    let (ah, al) = two_prod(a, a);
    let (bh, bl) = two_prod(b, b);
    let (sh, sl) = fast_two_sum(ah, bh);
    let sl = sl + (al + bl);
    let r = sh.sqrt();
    let d = (-r).mul_add(r, sh) + sl;
    let r = r + d / (T::TWO * r);
    mul_pow2(r, e)
}
