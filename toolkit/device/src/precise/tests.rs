//! Special values (IEEE 754 / C99 Annex F), exact cases and the invariants
//! of the constants. The accuracy over many points, against a binary128
//! reference, is `tests/math.rs` (workspace root).

use super::fp::Fp;
use super::*;
use std::format;

/// Both types through one generic body.
macro_rules! both {
    ($body:ident) => {
        $body::<f32>();
        $body::<f64>();
    };
}

/// The pure-Rust functions by name, generic over the type.
trait Funcs: Fp + core::fmt::Debug {
    fn f(name: &str, x: Self) -> Self;
    fn fpow(x: Self, y: Self) -> Self;
    fn ipow(x: Self, n: i32) -> Self;
    fn hyp(x: Self, y: Self) -> Self;
    fn bits(self) -> u64;
    const MAX: Self;
}

macro_rules! funcs_impl {
    ($t:ty, $($name:literal => $f:path),*; $pow:path, $powi:path, $hypot:path) => {
        impl Funcs for $t {
            fn f(name: &str, x: $t) -> $t {
                match name {
                    $($name => $f(x),)*
                    _ => panic!("no function {name}"),
                }
            }
            fn fpow(x: $t, y: $t) -> $t {
                $pow(x, y)
            }
            fn ipow(x: $t, n: i32) -> $t {
                $powi(x, n)
            }
            fn hyp(x: $t, y: $t) -> $t {
                $hypot(x, y)
            }
            fn bits(self) -> u64 {
                self.to_bits() as u64
            }
            const MAX: $t = <$t>::MAX;
        }
    };
}

funcs_impl!(f32, "exp" => exp_f32, "exp2" => exp2_f32, "exp10" => exp10_f32,
    "exp_m1" => exp_m1_f32, "ln" => ln_f32, "log2" => log2_f32, "log10" => log10_f32,
    "ln_1p" => ln_1p_f32, "cbrt" => cbrt_f32, "sinh" => sinh_f32, "cosh" => cosh_f32,
    "tanh" => tanh_f32, "asin" => asin_f32, "acos" => acos_f32, "atan" => atan_f32,
    "erf" => erf_f32, "erfc" => erfc_f32; powf_f32, powi_f32, hypot_f32);
funcs_impl!(f64, "exp" => exp_f64, "exp2" => exp2_f64, "exp10" => exp10_f64,
    "exp_m1" => exp_m1_f64, "ln" => ln_f64, "log2" => log2_f64, "log10" => log10_f64,
    "ln_1p" => ln_1p_f64, "cbrt" => cbrt_f64, "sinh" => sinh_f64, "cosh" => cosh_f64,
    "tanh" => tanh_f64, "asin" => asin_f64, "acos" => acos_f64, "atan" => atan_f64,
    "erf" => erf_f64, "erfc" => erfc_f64; powf_f64, powi_f64, hypot_f64);

fn c<T: Fp>(v: f64) -> T {
    T::from_f64(v)
}

/// `got` is `want` bit for bit (any NaN for a NaN).
#[track_caller]
fn same<T: Funcs>(what: &str, got: T, want: T) {
    let ok = if want.is_nan() {
        got.is_nan()
    } else {
        got.bits() == want.bits()
    };
    assert!(ok, "{what}: got {got:?}, want {want:?}");
}

fn unary_specials<T: Funcs>() {
    let (inf, nan, z, one) = (T::INF, T::NAN, T::ZERO, T::ONE);
    // (function, x, expected)
    let cases: &[(&str, T, T)] = &[
        ("exp", nan, nan),
        ("exp", inf, inf),
        ("exp", -inf, z),
        ("exp", z, one),
        ("exp", -z, one),
        ("exp", c(1000.0), inf),
        ("exp", c(-1000.0), z),
        ("exp2", c(10.0), c(1024.0)),
        ("exp2", c(-3.0), c(0.125)),
        ("exp2", inf, inf),
        ("exp2", -inf, z),
        ("exp2", c(1e30), inf),
        ("exp10", c(2.0), c(100.0)),
        ("exp10", c(-1e30), z),
        ("exp10", inf, inf),
        ("exp_m1", z, z),
        ("exp_m1", -z, -z),
        ("exp_m1", inf, inf),
        ("exp_m1", -inf, -one),
        ("exp_m1", c(-100.0), -one),
        ("exp_m1", c(1000.0), inf),
        ("exp_m1", nan, nan),
        ("ln", one, z),
        ("ln", z, -inf),
        ("ln", -z, -inf),
        ("ln", c(-1.0), nan),
        ("ln", inf, inf),
        ("log2", c(1024.0), c(10.0)),
        ("log2", c(0.125), c(-3.0)),
        ("log2", z, -inf),
        ("log2", -z, -inf),
        ("log2", c(-2.0), nan),
        ("log2", -inf, nan),
        ("log2", inf, inf),
        ("log2", nan, nan),
        ("log10", one, z),
        ("log10", c(100.0), c(2.0)),
        ("log10", c(1000.0), c(3.0)),
        ("log10", z, -inf),
        ("log10", c(-1.0), nan),
        ("log10", inf, inf),
        ("ln_1p", z, z),
        ("ln_1p", -z, -z),
        ("ln_1p", c(-1.0), -inf),
        ("ln_1p", c(-2.0), nan),
        ("ln_1p", -inf, nan),
        ("ln_1p", inf, inf),
        ("ln_1p", nan, nan),
        ("cbrt", c(27.0), c(3.0)),
        ("cbrt", c(-8.0), c(-2.0)),
        ("cbrt", c(0.125), c(0.5)),
        ("cbrt", z, z),
        ("cbrt", -z, -z),
        ("cbrt", inf, inf),
        ("cbrt", -inf, -inf),
        ("cbrt", nan, nan),
        ("sinh", z, z),
        ("sinh", -z, -z),
        ("sinh", inf, inf),
        ("sinh", -inf, -inf),
        ("sinh", c(1000.0), inf),
        ("sinh", c(-1000.0), -inf),
        ("cosh", z, one),
        ("cosh", -z, one),
        ("cosh", -inf, inf),
        ("cosh", c(-1000.0), inf),
        ("tanh", z, z),
        ("tanh", -z, -z),
        ("tanh", inf, one),
        ("tanh", -inf, -one),
        ("tanh", c(30.0), one),
        ("tanh", nan, nan),
        ("asin", z, z),
        ("asin", -z, -z),
        ("asin", one, T::PI_2.0),
        ("asin", -one, -T::PI_2.0),
        ("asin", c(1.5), nan),
        ("asin", -inf, nan),
        ("acos", one, z),
        ("acos", -one, T::PI.0),
        ("acos", z, T::PI_2.0),
        ("acos", c(-1.5), nan),
        ("acos", nan, nan),
        ("atan", z, z),
        ("atan", -z, -z),
        ("atan", one, T::PI_4.0),
        ("atan", inf, T::PI_2.0),
        ("atan", -inf, -T::PI_2.0),
        ("atan", nan, nan),
        ("erf", z, z),
        ("erf", -z, -z),
        ("erf", inf, one),
        ("erf", -inf, -one),
        ("erf", c(10.0), one),
        ("erf", nan, nan),
        ("erfc", inf, z),
        ("erfc", -inf, c(2.0)),
        ("erfc", z, one),
        ("erfc", c(30.0), z),
        ("erfc", c(-10.0), c(2.0)),
        ("erfc", nan, nan),
    ];
    for &(name, x, want) in cases {
        same(&format!("{name}({x:?})"), T::f(name, x), want);
    }
    // Odd functions: f(-x) = -f(x) exactly.
    for name in ["sinh", "tanh", "asin", "atan", "erf", "cbrt"] {
        for v in [1e-30, 0.1, 0.5, 0.75, 1.0, 3.0] {
            let x: T = c(v);
            if name == "asin" && v > 1.0 {
                continue;
            }
            same(name, T::f(name, -x), -T::f(name, x));
        }
    }
    // Subnormal arguments where f(x) ~ x.
    let tiny = T::MIN_NORMAL * c(0.25);
    for name in ["exp_m1", "ln_1p", "sinh", "tanh", "asin", "atan"] {
        same(name, T::f(name, tiny), tiny);
    }
}

#[test]
fn unary_special_values() {
    both!(unary_specials);
}

fn exact_cases<T: Funcs>() {
    // exp2 and log2 are exact at powers of two, over the whole range.
    for k in -149..128 {
        let x: T = T::from_i32(k);
        if k >= -126 {
            let p = T::pow2i(k);
            same(&format!("exp2({k})"), T::f("exp2", x), p);
            same(&format!("log2(2^{k})"), T::f("log2", p), x);
            same(&format!("powi(2, {k})"), T::ipow(T::TWO, k), p);
        }
    }
    // Subnormal powers of two.
    for k in 1..20 {
        let p = T::MIN_NORMAL * T::pow2i(-k);
        let x = T::from_i32(-k) + T::f("log2", T::MIN_NORMAL);
        same(&format!("exp2(emin - {k})"), T::f("exp2", x), p);
        same(&format!("log2(2^(emin - {k}))"), T::f("log2", p), x);
    }
    // Perfect cubes.
    for i in 1..200 {
        let x: T = T::from_i32(i);
        same(&format!("cbrt({i}^3)"), T::f("cbrt", x * x * x), x);
    }
    // Pythagorean triples.
    for (a, b, h) in [
        (3.0, 4.0, 5.0),
        (5.0, 12.0, 13.0),
        (8.0, 15.0, 17.0),
        (20.0, 21.0, 29.0),
    ] {
        same("hypot", T::hyp(c(a), c(b)), c(h));
        same("hypot", T::hyp(c(-b), c(a)), c(h));
    }
    // Small integer powers of small integers.
    for b in 2..6 {
        for e in 0..8 {
            let want: T = c((b as f64).powi(e));
            same(
                &format!("powf({b}, {e})"),
                T::fpow(c(b as f64), c(e as f64)),
                want,
            );
            same(&format!("powi({b}, {e})"), T::ipow(c(b as f64), e), want);
        }
    }
}

#[test]
fn exact_results() {
    both!(exact_cases);
}

fn pow_specials<T: Funcs>() {
    let (inf, nan, z, one) = (T::INF, T::NAN, T::ZERO, T::ONE);
    let (two, half, three) = (T::TWO, T::HALF, c::<T>(3.0));
    // C99 Annex F.9.4.4, case by case: (x, y, pow(x, y)).
    let cases: &[(T, T, T)] = &[
        (nan, z, one),
        (nan, -z, one),
        (one, nan, one),
        (one, inf, one),
        (nan, one, nan),
        (two, nan, nan),
        (z, -three, inf),
        (-z, -three, -inf),
        (z, -two, inf),
        (-z, -two, inf),
        (-z, -half, inf),
        (z, -inf, inf),
        (-z, -inf, inf),
        (z, three, z),
        (-z, three, -z),
        (-z, two, z),
        (-z, half, z),
        (-one, inf, one),
        (-one, -inf, one),
        (half, -inf, inf),
        (two, -inf, z),
        (half, inf, z),
        (two, inf, inf),
        (-inf, -three, -z),
        (-inf, -two, z),
        (-inf, -half, z),
        (-inf, three, -inf),
        (-inf, two, inf),
        (-inf, half, inf),
        (inf, -half, z),
        (inf, half, inf),
        (-two, half, nan),
        (c(-8.0), c(1.0 / 3.0), nan),
        (-two, three, c(-8.0)),
        (-two, -three, c(-0.125)),
        (-one, c(1e30), one),
        (two, c(1e30), inf),
        (two, c(-1e30), z),
        (half, c(1e30), z),
        (c(10.0), c(1e5), inf),
        (c(-10.0), c(1e5), inf),
        (c(-10.0), c(-1e5), z),
    ];
    for &(x, y, want) in cases {
        same(&format!("powf({x:?}, {y:?})"), T::fpow(x, y), want);
    }
    let icases: &[(T, i32, T)] = &[
        (nan, 0, one),
        (nan, 3, nan),
        (z, -3, inf),
        (-z, -3, -inf),
        (-z, -2, inf),
        (-z, 3, -z),
        (-inf, 3, -inf),
        (-inf, -3, -z),
        (-one, i32::MIN, one),
        (-one, i32::MAX, -one),
        (two, -1, half),
        (-z, -1, -inf),
        (two, i32::MAX, inf),
        (two, i32::MIN, z),
        (-two, i32::MAX, -inf),
    ];
    for &(x, n, want) in icases {
        same(&format!("powi({x:?}, {n})"), T::ipow(x, n), want);
    }
}

#[test]
fn pow_special_values() {
    both!(pow_specials);
}

fn hypot_specials<T: Funcs>() {
    let (inf, nan, z) = (T::INF, T::NAN, T::ZERO);
    for (x, y, want) in [
        (inf, nan, inf),
        (nan, -inf, inf),
        (-inf, c(1.0), inf),
        (nan, c(1.0), nan),
        (z, -z, z),
        (-z, -z, z),
        (c(-3.0), z, c(3.0)),
    ] {
        same(&format!("hypot({x:?}, {y:?})"), T::hyp(x, y), want);
    }
    // No overflow or underflow in between: the largest and the smallest.
    let h = T::hyp(T::MAX, T::MAX);
    assert!(h == T::INF, "hypot(max, max) overflows: {h:?}");
    let big = T::MAX * T::HALF;
    let h = T::hyp(big, big);
    assert!(h < T::INF && h > big, "hypot(max/2, max/2) = {h:?}");
    let tiny = T::MIN_NORMAL * T::pow2i(-3);
    let h = T::hyp(tiny, tiny);
    assert!(h > tiny && h < tiny * T::TWO, "hypot(tiny, tiny) = {h:?}");
}

#[test]
fn hypot_special_values() {
    both!(hypot_specials);
}

fn constants<T: Fp + core::fmt::Debug>(p: i32, kbits: i32) {
    // The Cody-Waite high parts leave `kbits` bits for the multiplier.
    for hi in [T::LN2_HI, T::LOG10_2_HI] {
        let (_, m) = hi.frexp1();
        // An integer iff `hi` has at most p - kbits significant bits.
        let scaled = m * T::pow2i(p - 1 - kbits);
        assert!(
            (scaled + T::MAGIC) - T::MAGIC == scaled,
            "{hi:?} has more than {} significant bits",
            p - kbits
        );
    }
    // The pairs are normalised: |lo| <= ulp(hi) / 2.
    for (hi, lo) in [
        T::LN2,
        T::LN10,
        T::INV_LN2,
        T::INV_LN10,
        T::PI,
        T::PI_2,
        T::PI_4,
        T::TWO_THIRDS,
    ] {
        assert!(hi + lo == hi, "pair ({hi:?}, {lo:?}) is not normalised");
    }
}

#[test]
fn constants_keep_their_invariants() {
    constants::<f32>(24, 8);
    constants::<f64>(53, 11);
}

#[test]
fn real_methods_are_the_host_functions() {
    // On the host, `Real` calls std (what the simulator runs); the GPU's
    // code is `precise`. They agree to within an ulp or two.
    use crate::real::Real;
    let x = 0.7f64;
    assert_eq!(Real::exp(x), x.exp());
    assert_eq!(Real::ln(x), x.ln());
    assert_eq!(Real::powi(x, 2), x * x);
    assert!((Real::exp(x) - exp_f64(x)).abs() <= 2.0 * f64::EPSILON);
    assert!((Real::erf(0.5f32) - erf_f32(0.5)).abs() <= 2.0 * f32::EPSILON);
}
