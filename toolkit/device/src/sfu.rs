//! SFU approximations (f32), re-exported as [`crate::math::fast`]. Each is
//! one PTX instruction on the GPU; the host versions (simulator) use the
//! exact `std` functions, which is within the approximations' documented
//! error.

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
