//! [`Real`], the trait of the numbers a kernel can be generic over,
//! re-exported as [`crate::math::Real`] (where the overview is). Its
//! implementations for `f32` and `f64` are in [`crate::math`], which builds
//! them on [`crate::precise`]; the trait itself depends on neither, so
//! `precise` can be generic over it.

use core::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};

/// Real numbers a kernel can be generic over: `f32` and `f64`.
///
/// ```
/// use ptxlab_device::math::Real;
///
/// /// A numerically safe softmax, written once for f32 and f64.
/// fn softmax<T: Real>(x: &[T], y: &mut [T]) {
///     let m = x.iter().fold(x[0], |m, v| m.max(*v));
///     let mut sum = T::ZERO;
///     for (yi, xi) in y.iter_mut().zip(x) {
///         *yi = (*xi - m).exp();
///         sum += *yi;
///     }
///     for yi in y.iter_mut() {
///         *yi = *yi / sum;
///     }
/// }
///
/// let mut y = [0.0f32; 3];
/// softmax(&[1.0f32, 2.0, 3.0], &mut y);
/// assert!((y[2] - 0.665_240_9).abs() < 1e-6);
/// ```
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
    + crate::param::ParamField
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

    /// `e^x`.
    fn exp(self) -> Self;
    /// `2^x`.
    fn exp2(self) -> Self;
    /// `10^x`.
    fn exp10(self) -> Self;
    /// `e^x - 1`, accurate near 0.
    fn exp_m1(self) -> Self;
    /// Natural logarithm (NaN below 0, `-inf` at ±0).
    fn ln(self) -> Self;
    /// Base-2 logarithm.
    fn log2(self) -> Self;
    /// Base-10 logarithm.
    fn log10(self) -> Self;
    /// `ln(1 + x)`, accurate near 0.
    fn ln_1p(self) -> Self;
    /// `self^y` (IEEE special cases; NaN for a negative base and a
    /// non-integer exponent).
    fn powf(self, y: Self) -> Self;
    /// `self^n`; `n` in `{0, 1, 2, -1}` is one operation, any other `n`
    /// costs a `powf` (and is as accurate).
    fn powi(self, n: i32) -> Self;
    /// Cube root.
    fn cbrt(self) -> Self;
    /// `sqrt(self^2 + o^2)` without undue overflow or underflow.
    fn hypot(self, o: Self) -> Self;
    /// Hyperbolic sine.
    fn sinh(self) -> Self;
    /// Hyperbolic cosine.
    fn cosh(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// Arcsine (NaN outside `[-1, 1]`).
    fn asin(self) -> Self;
    /// Arccosine (NaN outside `[-1, 1]`).
    fn acos(self) -> Self;
    /// Arctangent.
    fn atan(self) -> Self;
    /// The error function.
    fn erf(self) -> Self;
    /// `1 - erf(self)`, relatively accurate in the right tail.
    fn erfc(self) -> Self;
}
