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

use core::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};

/// Real numbers a kernel can be generic over: `f32` and `f64`.
pub trait Real:
    Copy
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + crate::warp::ShuffleValue
    + crate::atomic::AtomicAdd
    + crate::mem::DeviceCopy
    + crate::mem::KernelScalar
    + Default
{
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// Converts (rounds) an f64; used for constants.
    fn from_f64(v: f64) -> Self;
    /// Widens (exactly) to f64.
    fn to_f64(self) -> f64;
    /// `self * a + b` with one rounding (`fma.rn`).
    fn mul_add(self, a: Self, b: Self) -> Self;
    /// Correctly rounded square root (`sqrt.rn`).
    fn sqrt(self) -> Self;
    /// Absolute value.
    fn abs(self) -> Self;
    /// The smaller value (`min`; NaN-ignoring as PTX `min`).
    fn min(self, o: Self) -> Self;
    /// The larger value.
    fn max(self, o: Self) -> Self;
    /// `true` unless NaN or infinite.
    fn is_finite(self) -> bool;
}

macro_rules! real_impl {
    ($t:ty, $fma:ident, $sqrt:ident) => {
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
        }
    };
}
real_impl!(f32, fmaf32, sqrtf32);
real_impl!(f64, fmaf64, sqrtf64);

/// SFU approximations (f32). Each is one PTX instruction on the GPU; the host
/// versions (simulator) use the exact `std` functions, which is within the
/// approximations' documented error.
pub mod fast {
    #[cfg(target_arch = "nvptx64")]
    #[allow(improper_ctypes)]
    unsafe extern "C" {
        #[link_name = "llvm.nvvm.sin.approx.ftz.f"]
        fn sin_approx(x: f32) -> f32;
        #[link_name = "llvm.nvvm.cos.approx.ftz.f"]
        fn cos_approx(x: f32) -> f32;
        #[link_name = "llvm.nvvm.ex2.approx.ftz.f"]
        fn ex2_approx(x: f32) -> f32;
        #[link_name = "llvm.nvvm.rcp.approx.ftz.f"]
        fn rcp_approx(x: f32) -> f32;
        #[link_name = "llvm.nvvm.sqrt.approx.ftz.f"]
        fn sqrt_approx(x: f32) -> f32;
        #[link_name = "llvm.nvvm.rsqrt.approx.ftz.f"]
        fn rsqrt_approx(x: f32) -> f32;
    }

    macro_rules! fast_fn {
        ($(#[$doc:meta] $name:ident => $intr:ident, |$x:ident| $host:expr;)*) => {$(
            #[$doc]
            #[inline(always)]
            pub fn $name($x: f32) -> f32 {
                #[cfg(target_arch = "nvptx64")]
                {
                    // SAFETY: pure arithmetic intrinsic, defined for every input.
                    unsafe { $intr($x) }
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    $host
                }
            }
        )*};
    }

    fast_fn! {
        /// `sin.approx.ftz.f32`: absolute error about 2^-21 on [-pi, pi].
        sin => sin_approx, |x| std::primitive::f32::sin(x);
        /// `cos.approx.ftz.f32`: absolute error about 2^-21 on [-pi, pi].
        cos => cos_approx, |x| std::primitive::f32::cos(x);
        /// `ex2.approx.ftz.f32`: 2^x, relative error about 2^-22.
        exp2 => ex2_approx, |x| std::primitive::f32::exp2(x);
        /// `rcp.approx.ftz.f32`: 1/x, relative error about 2^-23.
        recip => rcp_approx, |x| 1.0 / x;
        /// `sqrt.approx.ftz.f32`.
        sqrt => sqrt_approx, |x| std::primitive::f32::sqrt(x);
        /// `rsqrt.approx.ftz.f32`: 1/sqrt(x).
        rsqrt => rsqrt_approx, |x| 1.0 / std::primitive::f32::sqrt(x);
    }

    /// `x / y` as `x * rcp.approx(y)` (the fast-math division).
    #[inline(always)]
    pub fn div(x: f32, y: f32) -> f32 {
        x * recip(y)
    }
}
