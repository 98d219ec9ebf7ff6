//! The toolkit the math functions are written in, once for f32 and f64.
//!
//! [`Fp`] gives each function what differs between the two types: bit
//! manipulation, the constants (split in two where a product must stay
//! exact), the range limits and the fitted polynomials. The algorithms in
//! the sibling files are generic over it and written once; each instance
//! computes in its own type (an f32 function never touches f64).
//!
//! Pairs `(hi, lo)` are unevaluated sums ("double-double" for f64,
//! "float-float" for f32): `hi + lo` holds about twice the type's
//! precision. The helpers below are the classic error-free transformations
//! (Knuth's two-sum, Dekker's fast two-sum, the FMA product) and they rely on
//! IEEE round-to-nearest with no reassociation, which both the host and
//! the GPU build give (the fast-math build changes f32 division, square root
//! and subnormals, not the order of operations).
//!
//! The polynomial coefficients come from `toolkit/device/tools/fit_math.py`
//! (minimax fits in mpmath, rounded coefficient by coefficient to the
//! type); each `*_poly` says which fit it is and on which interval.

// The coefficients are written as fit_math.py prints them: the shortest
// literals that round to the fitted values.
#![allow(clippy::excessive_precision)]

use crate::real::Real;

/// `p(z) = c0 + z (c1 + z (c2 + ...))`, with one FMA per coefficient.
macro_rules! horner {
    ($t:ty; $z:expr; $c0:expr) => { ($c0 as $t) };
    ($t:ty; $z:expr; $c0:expr, $($c:expr),+) => {
        horner!($t; $z; $($c),+).mul_add($z, $c0)
    };
}

/// The per-type part of the math functions (f32 and f64 only; sealed by
/// being `pub(crate)`).
pub(crate) trait Fp: Real {
    /// 2.
    const TWO: Self;
    /// 1/2.
    const HALF: Self;
    /// +infinity.
    const INF: Self;
    /// A quiet NaN.
    const NAN: Self;
    /// The smallest positive normal number.
    const MIN_NORMAL: Self;
    /// `1.5 * 2^(p-1)`: `v + MAGIC` rounds `v` to an integer (ties to even)
    /// and leaves it in the low bits, for `|v| < 2^(p-2)`.
    const MAGIC: Self;

    /// `ln 2` split for Cody-Waite: `HI` has its low bits zero, so `k * HI`
    /// is exact for every `k` the functions produce (`|k| < 2^11` in f64,
    /// `2^8` in f32); `LO` is `ln 2 - HI` rounded.
    const LN2_HI: Self;
    /// See [`Fp::LN2_HI`].
    const LN2_LO: Self;
    /// `log10 2` split the same way (for `exp10` and `log10`).
    const LOG10_2_HI: Self;
    /// See [`Fp::LOG10_2_HI`].
    const LOG10_2_LO: Self;
    /// `1 / ln 2`, rounded.
    const LOG2E: Self;
    /// `log2 10`, rounded.
    const LOG2_10: Self;
    /// `ln 2` as a pair.
    const LN2: (Self, Self);
    /// `ln 10` as a pair.
    const LN10: (Self, Self);
    /// `1 / ln 2` as a pair.
    const INV_LN2: (Self, Self);
    /// `1 / ln 10` as a pair.
    const INV_LN10: (Self, Self);
    /// pi as a pair.
    const PI: (Self, Self);
    /// pi/2 as a pair.
    const PI_2: (Self, Self);
    /// pi/4 as a pair.
    const PI_4: (Self, Self);
    /// 2/3 as a pair.
    const TWO_THIRDS: (Self, Self);
    /// `tan(pi/8)`, rounded: where `atan` switches to `(t - 1) / (t + 1)`.
    const TAN_PI_8: Self;
    /// `2^(1/3)`, rounded.
    const CBRT2: Self;
    /// `2^(2/3)`, rounded.
    const CBRT4: Self;

    /// `exp` and `pow` clamp `ln` of the result to `±EXP_CLAMP` (beyond the
    /// overflow and underflow thresholds, so the clamped value still
    /// overflows to infinity or underflows to 0, and `k` stays small).
    const EXP_CLAMP: Self;
    /// The same clamp for `exp2`'s argument.
    const EXP2_CLAMP: Self;
    /// The same clamp for `exp10`'s argument.
    const EXP10_CLAMP: Self;
    /// Above this, `exp_m1(x)` is `exp(x)` rounded (the `- 1` is below half
    /// an ulp).
    const EXPM1_BIG: Self;
    /// Below this, `exp_m1(x)` rounds to -1.
    const EXPM1_NEG: Self;
    /// Above this, `e^-|x|` is below 2^-(p+6) of `e^|x|`: `sinh` and
    /// `cosh` are `e^|x| / 2`.
    const HYP_BIG: Self;
    /// Above this, `tanh` rounds to ±1.
    const TANH_ONE: Self;
    /// Above this, `erf` rounds to ±1 (and `erfc(-x)` to 2).
    const ERF_ONE: Self;
    /// Above this, `erfc` is 0 (below half the smallest subnormal).
    const ERFC_ZERO: Self;
    /// Above this, `atan` is pi/2 rounded (`1/|x|` is below half an ulp).
    const ATAN_BIG: Self;

    /// From an `i32` (exact for the values used: `|k| < 2^p`).
    fn from_i32(k: i32) -> Self;
    /// `(t - MAGIC, k)`: the integer `MAGIC` rounded into `t`, as a float and
    /// as an `i32` (from the low bits: no conversion instruction).
    fn magic_int(t: Self) -> (Self, i32);
    /// `2^k` for `k` in the normal exponent range.
    fn pow2i(k: i32) -> Self;
    /// `x = 2^k m` with `m` in `[sqrt(2)/2, sqrt(2))`, for finite `x > 0`
    /// (subnormals included).
    fn frexp_sqrt2(self) -> (i32, Self);
    /// `x = 2^k m` with `m` in `[1, 2)`, for finite `x > 0` (subnormals
    /// included).
    fn frexp1(self) -> (i32, Self);
    /// `|self|` with the sign bit of `s`.
    fn copysign(self, s: Self) -> Self;
    /// The sign bit.
    fn sign_bit(self) -> bool;
    /// `true` for NaN.
    fn is_nan(self) -> bool;
    /// `(is an integer, is an odd integer)` for finite `self`.
    fn int_class(self) -> (bool, bool);
    /// `n` as a pair `hi + lo` (exact).
    fn split_i32(n: i32) -> (Self, Self);

    /// `(e^r - 1 - r) / r^2` on `|r| <= ln(2)/2`.
    fn exp_poly(r: Self) -> Self;
    /// `(2 atanh(s) - 2s - 2s^3/3) / s^5` in `z = s^2`, `|s| <= 3 - 2 sqrt(2)`.
    fn log_poly(z: Self) -> Self;
    /// `(atan(x) - x) / x^3` in `z = x^2`, `|x| <= tan(pi/8)`.
    fn atan_poly(z: Self) -> Self;
    /// `(asin(x) - x) / x^3` in `z = x^2`, `|x| <= 1/2`.
    fn asin_poly(z: Self) -> Self;
    /// `erf(x) / x - 1` in `z = x^2`, `|x| <= 0.84375`.
    fn erf_poly(z: Self) -> Self;
    /// `(1 + 2x) e^(x^2) erfc(x)` as a pair, in `y = (x - 4) / (x + 4)`,
    /// for `x` from 1/2 to [`Fp::ERFC_ZERO`].
    fn erfcx_poly(y: Self) -> (Self, Self);
    /// `cbrt(m)` on `[1, 2]` to about 2^-19 (f64) or 2^-13 (f32), the seed
    /// of the Newton steps.
    fn cbrt_seed(m: Self) -> Self;
    /// f64 takes one plain Newton step from the seed (2^-19 -> 2^-38);
    /// f32 takes none. The last, accurate step is common.
    fn cbrt_refine(y: Self, a: Self) -> Self;
}

macro_rules! fp_bits {
    ($t:ty, $u:ty, $i:ty, $p:expr, $bias:expr, $sqrt2:expr) => {
        #[inline(always)]
        fn from_i32(k: i32) -> Self {
            k as $t
        }
        #[inline(always)]
        fn magic_int(t: Self) -> (Self, i32) {
            // `t = 1.5 * 2^(p-1) + k`: the low bits of the significand hold
            // `k` in two's complement (the 1.5 part cancels below).
            let k = (t.to_bits() as $i).wrapping_sub(Self::MAGIC.to_bits() as $i) as i32;
            (t - Self::MAGIC, k)
        }
        #[inline(always)]
        fn pow2i(k: i32) -> Self {
            <$t>::from_bits(((k + $bias) as $u) << ($p - 1))
        }
        #[inline(always)]
        fn frexp_sqrt2(self) -> (i32, Self) {
            let (k, m) = self.frexp1();
            // m in [1, 2): halve it (exactly) when above sqrt(2).
            let big = m > $sqrt2;
            let m = if big { m * Self::HALF } else { m };
            (k + big as i32, m)
        }
        #[inline(always)]
        fn frexp1(self) -> (i32, Self) {
            let mut b = self.to_bits();
            let mut k = 0;
            if b < (1 as $u) << ($p - 1) {
                // Subnormal: scale by 2^p into the normal range.
                b = (self * Self::pow2i($p)).to_bits();
                k = -$p;
            }
            let e = (b >> ($p - 1)) as i32 - $bias;
            let m =
                <$t>::from_bits((b & (((1 as $u) << ($p - 1)) - 1)) | (($bias as $u) << ($p - 1)));
            (k + e, m)
        }
        #[inline(always)]
        fn copysign(self, s: Self) -> Self {
            const SIGN: $u = 1 << (<$u>::BITS - 1);
            <$t>::from_bits((self.to_bits() & !SIGN) | (s.to_bits() & SIGN))
        }
        #[inline(always)]
        fn is_nan(self) -> bool {
            <$t>::is_nan(self)
        }
        #[inline(always)]
        fn sign_bit(self) -> bool {
            self.to_bits() >> (<$u>::BITS - 1) != 0
        }
        #[inline(always)]
        fn int_class(self) -> (bool, bool) {
            let b = self.to_bits();
            let e = ((b >> ($p - 1)) as i32 & (2 * $bias + 1)) - $bias;
            if e < 0 {
                // |y| < 1: an integer only if 0.
                (self == 0.0, false)
            } else if e >= $p {
                (true, false)
            } else {
                // The bit of weight 1 sits at (p - 1 - e); the ones below are
                // the fraction.
                let sh = ($p - 1 - e) as u32;
                let frac = b & (((1 as $u) << sh) - 1);
                (frac == 0, frac == 0 && (b >> sh) & 1 != 0)
            }
        }
    };
}

impl Fp for f64 {
    const TWO: f64 = 2.0;
    const HALF: f64 = 0.5;
    const INF: f64 = f64::INFINITY;
    const NAN: f64 = f64::NAN;
    const MIN_NORMAL: f64 = f64::MIN_POSITIVE;
    const MAGIC: f64 = 6_755_399_441_055_744.0;

    const LN2_HI: f64 = 6.931471805598903e-1;
    const LN2_LO: f64 = 5.497923018708371e-14;
    const LOG10_2_HI: f64 = 3.0102999566395283e-1;
    const LOG10_2_LO: f64 = 2.8363394551044964e-14;
    const LOG2E: f64 = core::f64::consts::LOG2_E;
    const LOG2_10: f64 = core::f64::consts::LOG2_10;
    const LN2: (f64, f64) = (core::f64::consts::LN_2, 2.3190468138462996e-17);
    const LN10: (f64, f64) = (core::f64::consts::LN_10, -2.1707562233822494e-16);
    const INV_LN2: (f64, f64) = (core::f64::consts::LOG2_E, 2.0355273740931033e-17);
    const INV_LN10: (f64, f64) = (core::f64::consts::LOG10_E, 1.098319650216765e-17);
    const PI: (f64, f64) = (core::f64::consts::PI, 1.2246467991473532e-16);
    const PI_2: (f64, f64) = (core::f64::consts::FRAC_PI_2, 6.123233995736766e-17);
    const PI_4: (f64, f64) = (core::f64::consts::FRAC_PI_4, 3.061616997868383e-17);
    const TWO_THIRDS: (f64, f64) = (6.666666666666666e-1, 3.700743415417188e-17);
    const TAN_PI_8: f64 = 4.1421356237309503e-1;
    const CBRT2: f64 = 1.2599210498948732;
    const CBRT4: f64 = 1.5874010519681996;

    const EXP_CLAMP: f64 = 800.0;
    const EXP2_CLAMP: f64 = 1100.0;
    const EXP10_CLAMP: f64 = 350.0;
    const EXPM1_BIG: f64 = 40.0;
    const EXPM1_NEG: f64 = -40.0;
    const HYP_BIG: f64 = 22.0;
    const TANH_ONE: f64 = 20.0;
    const ERF_ONE: f64 = 6.0;
    const ERFC_ZERO: f64 = 27.3;
    const ATAN_BIG: f64 = 1.152921504606847e18; // 2^60

    fp_bits!(f64, u64, i64, 53, 1023, core::f64::consts::SQRT_2);

    #[inline(always)]
    fn split_i32(n: i32) -> (f64, f64) {
        (n as f64, 0.0)
    }

    /// fit_math.py `exp_f64`: 11 coefficients on `[-0.3466, 0.3466]`,
    /// weighted error 2^-63.2 (in the final result).
    #[inline(always)]
    fn exp_poly(r: f64) -> f64 {
        horner!(f64; r; 5.0e-1, 1.6666666666666688e-1, 4.1666666666666824e-2, 8.33333333331389e-3,
            1.3888888888777787e-3, 1.9841269903390246e-4, 2.4801587559921058e-5,
            2.7557228643656117e-6, 2.755706669996484e-7, 2.511394900638832e-8,
            2.097816542118362e-9)
    }

    /// fit_math.py `log_f64`: 8 coefficients on `[0, 0.02944]`, weighted
    /// error 2^-71.9 (relative to `ln m`).
    #[inline(always)]
    fn log_poly(z: f64) -> f64 {
        horner!(f64; z; 3.9999999999999997e-1, 2.8571428571436525e-1, 2.222222221894321e-1,
            1.818181876089361e-1, 1.5384561023521395e-1, 1.3336257056281703e-1,
            1.1674450107365876e-1, 1.2002674892580324e-1)
    }

    /// fit_math.py `atan_f64`: 11 coefficients on `[0, 0.17157]`, weighted
    /// error 2^-59.3.
    #[inline(always)]
    fn atan_poly(z: f64) -> f64 {
        horner!(f64; z; -3.333333333333328e-1, 1.9999999999971957e-1, -1.4285714281709913e-1,
            1.1111110848202599e-1, -9.090899397510338e-2, 7.692086426339291e-2,
            -6.663375743478492e-2, 5.8497122764758505e-2, -5.046946035394399e-2,
            3.824645871999718e-2, -1.8094943451307303e-2)
    }

    /// fit_math.py `asin_f64`: 13 coefficients on `[0, 0.25]`, weighted
    /// error 2^-59.7.
    #[inline(always)]
    fn asin_poly(z: f64) -> f64 {
        horner!(f64; z; 1.6666666666666693e-1, 7.499999999984418e-2, 4.4642857164082325e-2,
            3.0381943136940343e-2, 2.2372204402037296e-2, 1.7351782002929063e-2,
            1.3978970451374695e-2, 1.1412819910590628e-2, 1.0707950873953579e-2,
            3.961692380650237e-3, 2.1123071771651573e-2, -2.0216748534173906e-2,
            3.2163647372603486e-2)
    }

    /// fit_math.py `erf_f64`: 11 coefficients on `[0, 0.7119]` (`|x| <
    /// 0.84375`), weighted error 2^-56.0.
    #[inline(always)]
    fn erf_poly(z: f64) -> f64 {
        horner!(f64; z; 1.2837916709551256e-1, -3.7612638903183254e-1, 1.1283791670928267e-1,
            -2.6866170639462256e-2, 5.2239775638795345e-3, -8.548323111423737e-4,
            1.2055177477567776e-4, -1.4921662958045598e-5, 1.6395981530518997e-6,
            -1.5676013445309989e-7, 1.0615516719463583e-8)
    }

    /// fit_math.py `erfc_f64`: 22 coefficients on `[-0.7778, 0.7444]`
    /// (`x` from 1/2 to 27.3), relative error 2^-58.3; the constant term
    /// is a pair.
    #[inline(always)]
    fn erfcx_poly(y: f64) -> (f64, f64) {
        let p = y * horner!(f64; y; -1.396211168405625e-1, 1.5379652102619022e-2,
            6.809705425469044e-2, -1.0103906603625315e-1, 9.373283499844628e-2,
            -6.63303658136297e-2, 3.7167515535546175e-2, -1.6197734037921047e-2,
            5.031969999731775e-3, -7.577734513654772e-4, -1.992568455431676e-4,
            1.5062250700939808e-4, -2.439853095725067e-5, -1.1224763216495214e-5,
            5.707663807807637e-6, 2.9960485661926e-7, -8.212638696827202e-7,
            6.69863994355134e-8, 1.0472213840739765e-7, -1.2211304465469457e-8,
            -1.0173687359946587e-8);
        let (h, l) = fast_two_sum(1.2329951186255526, p);
        (h, l + -4.386082207613712e-17)
    }

    /// fit_math.py `cbrt_f64`: 6 coefficients on `[1, 2]`, 2^-19.6.
    #[inline(always)]
    fn cbrt_seed(m: f64) -> f64 {
        horner!(f64; m; 4.733306789134959e-1, 8.381600355478965e-1, -4.692287245956595e-1,
            2.0277723436412534e-1, -5.038654116990043e-2, 5.348547905987635e-3)
    }

    #[inline(always)]
    fn cbrt_refine(y: f64, a: f64) -> f64 {
        let y2 = y * y;
        y - (y2 * y - a) / (3.0 * y2)
    }
}

impl Fp for f32 {
    const TWO: f32 = 2.0;
    const HALF: f32 = 0.5;
    const INF: f32 = f32::INFINITY;
    const NAN: f32 = f32::NAN;
    const MIN_NORMAL: f32 = f32::MIN_POSITIVE;
    const MAGIC: f32 = 12_582_912.0;

    const LN2_HI: f32 = 6.9314575e-1;
    const LN2_LO: f32 = 1.4286068e-6;
    const LOG10_2_HI: f32 = 3.0103302e-1;
    const LOG10_2_LO: f32 = -3.0243555e-6;
    const LOG2E: f32 = core::f32::consts::LOG2_E;
    const LOG2_10: f32 = core::f32::consts::LOG2_10;
    const LN2: (f32, f32) = (core::f32::consts::LN_2, -1.9046542e-9);
    const LN10: (f32, f32) = (core::f32::consts::LN_10, -3.1975436e-8);
    const INV_LN2: (f32, f32) = (core::f32::consts::LOG2_E, 1.925963e-8);
    const INV_LN10: (f32, f32) = (core::f32::consts::LOG10_E, -1.010305e-8);
    const PI: (f32, f32) = (core::f32::consts::PI, -8.742278e-8);
    const PI_2: (f32, f32) = (core::f32::consts::FRAC_PI_2, -4.371139e-8);
    const PI_4: (f32, f32) = (core::f32::consts::FRAC_PI_4, -2.1855694e-8);
    const TWO_THIRDS: (f32, f32) = (6.666667e-1, -1.9868216e-8);
    const TAN_PI_8: f32 = 4.1421357e-1;
    const CBRT2: f32 = 1.2599211;
    const CBRT4: f32 = 1.587401;

    const EXP_CLAMP: f32 = 120.0;
    const EXP2_CLAMP: f32 = 160.0;
    const EXP10_CLAMP: f32 = 50.0;
    const EXPM1_BIG: f32 = 18.0;
    const EXPM1_NEG: f32 = -18.0;
    const HYP_BIG: f32 = 11.0;
    const TANH_ONE: f32 = 10.0;
    const ERF_ONE: f32 = 4.0;
    const ERFC_ZERO: f32 = 10.1;
    const ATAN_BIG: f32 = 1.0737418e9; // 2^30

    fp_bits!(f32, u32, i32, 24, 127, core::f32::consts::SQRT_2);

    #[inline(always)]
    fn split_i32(n: i32) -> (f32, f32) {
        let hi = n as f32;
        (hi, (n as i64 - hi as i64) as f32)
    }

    /// fit_math.py `exp_f32`: 5 coefficients, weighted error 2^-28.2.
    #[inline(always)]
    fn exp_poly(r: f32) -> f32 {
        horner!(f32; r; 4.9999994e-1, 1.6666517e-1, 4.1668102e-2, 8.3691925e-3, 1.3838903e-3)
    }

    /// fit_math.py `log_f32`: 3 coefficients, weighted error 2^-36.6.
    #[inline(always)]
    fn log_poly(z: f32) -> f32 {
        horner!(f32; z; 4.000014e-1, 2.8548086e-1, 2.3399463e-1)
    }

    /// fit_math.py `atan_f32`: 5 coefficients, weighted error 2^-30.5.
    #[inline(always)]
    fn atan_poly(z: f32) -> f32 {
        horner!(f32; z; -3.3333316e-1, 1.9998533e-1, -1.4244512e-1, 1.06001884e-1, -6.092794e-2)
    }

    /// fit_math.py `asin_f32`: 6 coefficients, weighted error 2^-31.7.
    #[inline(always)]
    fn asin_poly(z: f32) -> f32 {
        horner!(f32; z; 1.666666e-1, 7.500521e-2, 4.4513635e-2, 3.1836055e-2, 1.4329189e-2,
            3.7673127e-2)
    }

    /// fit_math.py `erf_f32`: 6 coefficients on `[0, 0.7119]`, weighted
    /// error 2^-27.3.
    #[inline(always)]
    fn erf_poly(z: f32) -> f32 {
        horner!(f32; z; 1.2837917e-1, -3.7612593e-1, 1.1282912e-1, -2.6809536e-2, 5.0618816e-3,
            -6.374964e-4)
    }

    /// fit_math.py `erfc_f32`: 10 coefficients on `[-0.7778, 0.4326]`
    /// (`x` from 1/2 to 10.1), relative error 2^-27.9; the constant term is
    /// a pair.
    #[inline(always)]
    fn erfcx_poly(y: f32) -> (f32, f32) {
        let p = y * horner!(f32; y; -1.3962117e-1, 1.5379712e-2, 6.809787e-2, -1.0103952e-1,
            9.3739584e-2, -6.631782e-2, 3.7046116e-2, -1.6395954e-2, 5.374851e-3);
        let (h, l) = fast_two_sum(1.2329952, p);
        (h, l + -3.4791437e-8)
    }

    /// fit_math.py `cbrt_f32`: 4 coefficients on `[1, 2]`, 2^-13.7.
    #[inline(always)]
    fn cbrt_seed(m: f32) -> f32 {
        horner!(f32; m; 5.528234e-1, 5.871143e-1, -1.6296966e-1, 2.3104964e-2)
    }

    #[inline(always)]
    fn cbrt_refine(y: f32, _a: f32) -> f32 {
        y
    }
}

// ---- error-free transformations ------------------------------------------------

/// `a * b = hi + lo` exactly (FMA).
#[inline(always)]
pub(crate) fn two_prod<T: Fp>(a: T, b: T) -> (T, T) {
    let h = a * b;
    (h, a.mul_add(b, -h))
}

/// `a + b = s + e` exactly, if `|a| >= |b|` (or `a` is 0).
#[inline(always)]
pub(crate) fn fast_two_sum<T: Fp>(a: T, b: T) -> (T, T) {
    let s = a + b;
    (s, b - (s - a))
}

/// `a + b = s + e` exactly, for any order of magnitude.
#[inline(always)]
pub(crate) fn two_sum<T: Fp>(a: T, b: T) -> (T, T) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `(ah + al) / (bh + bl)` as a pair, to about twice the type's precision
/// (the residual `ah - q bh` of the first quotient is exact under FMA).
#[inline(always)]
pub(crate) fn dd_div<T: Fp>(ah: T, al: T, bh: T, bl: T) -> (T, T) {
    let q = ah / bh;
    let r = (-q).mul_add(bh, ah);
    let r = (-q).mul_add(bl, r + al);
    (q, r / bh)
}

/// `x * 2^k` for `k` up to twice the exponent range, in two exact steps
/// and one rounding (the last step rounds once into the subnormals, or
/// overflows).
#[inline(always)]
pub(crate) fn mul_pow2<T: Fp>(x: T, k: i32) -> T {
    let k1 = k >> 1;
    x * T::pow2i(k1) * T::pow2i(k - k1)
}
