//! Floating-point math for kernels.
//!
//! * [`Real`]: the trait that lets one generic device function serve both f32
//!   and f64 kernels. In Rust there is no implicit promotion: `x * 2.0` in an
//!   f32 function is an f32 multiply, and mixing f32 with f64 is a compile
//!   error, so the "accidental double" the CUDA/Numba material warns about
//!   cannot happen. Constants enter through [`Real::from_f64`], rounded once
//!   at compile time.
//! * [`fast`]: the SFU approximations (`sin.approx.f32`, `ex2.approx.f32`,
//!   `rcp.approx`, `sqrt.approx`) through the NVVM intrinsics. Their errors are
//!   absolute, not relative: about 2^-21 for `sin`/`cos` on `[-pi, pi]`,
//!   growing with the argument.
//! * Exact operations (`sqrt`, `mul_add`, division) round correctly on the GPU
//!   (`sqrt.rn`, `fma.rn`, `div.rn`).
//! * The functions a kernel writer expects are methods of [`Real`], so a
//!   generic `T: Real` kernel writes a softmax as `(x - m).exp()`: `exp`,
//!   `exp2`, `exp10`, `exp_m1`, `ln`, `log2`, `log10`, `ln_1p`, `powf`,
//!   `powi`, `cbrt`, `hypot`, `sinh`, `cosh`, `tanh`, `asin`, `acos`,
//!   `atan`, `erf`, `erfc`. On the GPU they are [`crate::precise`]'s pure
//!   Rust code (in every build, fast-math included; `docs/book/src/math.md` has
//!   the algorithms and the errors measured on an H100). On the host, where
//!   the simulator runs the same kernel, they are the host's own functions
//!   (Rust's `std`, that is the C library's `libm`), as a CPU build of a
//!   CUDA kernel would use; `precise::exp_f32` and friends run the GPU's
//!   code on the host. `sin`, `cos`, `sincos` and `atan2` are in
//!   [`crate::precise::Trig`] (their f32 versions are the SFU
//!   approximations in the fast-math build).

pub use crate::real::Real;
/// SFU approximations (f32): one PTX instruction each on the GPU.
pub use crate::sfu as fast;

/// One method of [`Real`]: `precise`'s pure Rust on the GPU, `std`'s on the
/// host (the simulator).
macro_rules! real_fn {
    ($name:ident($x:ident $(, $a:ident: $at:ty)*), $gpu:expr, $host:expr) => {
        #[inline(always)]
        fn $name(self $(, $a: $at)*) -> Self {
            let $x = self;
            #[cfg(target_arch = "nvptx64")]
            {
                $gpu
            }
            #[cfg(not(target_arch = "nvptx64"))]
            {
                $host
            }
        }
    };
}

macro_rules! real_impl {
    ($t:ident, $fma:ident, $sqrt:ident, $ln:ident) => {
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                core::intrinsics::$fma(self, a, b)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                core::intrinsics::$sqrt(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn min(self, o: Self) -> Self {
                <$t>::min(self, o)
            }
            #[inline(always)]
            fn max(self, o: Self) -> Self {
                <$t>::max(self, o)
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            real_fn!(exp(x), crate::precise::exp::exp(x), std::primitive::$t::exp(x));
            real_fn!(exp2(x), crate::precise::exp::exp2(x), std::primitive::$t::exp2(x));
            // The C library's exp10 is a GNU extension Rust does not bind;
            // pow with the exact base 10 is the same function.
            real_fn!(exp10(x), crate::precise::exp::exp10(x), std::primitive::$t::powf(10.0, x));
            real_fn!(exp_m1(x), crate::precise::exp::exp_m1(x), std::primitive::$t::exp_m1(x));
            real_fn!(ln(x), crate::precise::$ln(x), std::primitive::$t::ln(x));
            real_fn!(log2(x), crate::precise::log::log2(x), std::primitive::$t::log2(x));
            real_fn!(log10(x), crate::precise::log::log10(x), std::primitive::$t::log10(x));
            real_fn!(ln_1p(x), crate::precise::log::ln_1p(x), std::primitive::$t::ln_1p(x));
            real_fn!(powf(x, y: Self), crate::precise::pow::powf(x, y), std::primitive::$t::powf(x, y));
            // Not std's powi: it multiplies repeatedly, and its error grows
            // with |n| (docs/book/src/math.md measures it); the C library's pow, in
            // f64 so that any i32 is exact.
            real_fn!(powi(x, n: i32), crate::precise::pow::powi(x, n), std::primitive::f64::powf(x as f64, n as f64) as $t);
            real_fn!(cbrt(x), crate::precise::root::cbrt(x), std::primitive::$t::cbrt(x));
            real_fn!(hypot(x, o: Self), crate::precise::root::hypot(x, o), std::primitive::$t::hypot(x, o));
            real_fn!(sinh(x), crate::precise::exp::sinh(x), std::primitive::$t::sinh(x));
            real_fn!(cosh(x), crate::precise::exp::cosh(x), std::primitive::$t::cosh(x));
            real_fn!(tanh(x), crate::precise::exp::tanh(x), std::primitive::$t::tanh(x));
            real_fn!(asin(x), crate::precise::atrig::asin(x), std::primitive::$t::asin(x));
            real_fn!(acos(x), crate::precise::atrig::acos(x), std::primitive::$t::acos(x));
            real_fn!(atan(x), crate::precise::atrig::atan(x), std::primitive::$t::atan(x));
            real_fn!(erf(x), crate::precise::erf::erf(x), std::primitive::$t::erf(x));
            real_fn!(erfc(x), crate::precise::erf::erfc(x), std::primitive::$t::erfc(x));
        }
    };
}
real_impl!(f32, fmaf32, sqrtf32, ln_f32);
real_impl!(f64, fmaf64, sqrtf64, ln_f64);
