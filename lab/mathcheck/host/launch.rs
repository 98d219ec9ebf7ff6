//! The launcher of `math_eval` (the only place its name appears) and, per
//! element type, the pure-Rust functions the GPU runs, callable on the CPU.

use super::reference::Ty;
use kernels_gpu::mathcheck::{BLOCK, NAMES};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::{Buffer, Device, LaunchConfig};
use ptxlab_device::math::Real;
use ptxlab_device::precise as p;

/// f32 or f64: the kernel instance and the `precise` functions of the type.
pub trait MathElem: Real + ptxlab_common::runtime::Element + Send + Sync + std::fmt::Debug {
    /// The type, for the ulp measure.
    const TY: Ty;
    /// Launches `math_eval_<type>`.
    fn launch(
        dev: &Device,
        cfg: LaunchConfig,
        func: u32,
        x: &Buffer<Self>,
        y: &Buffer<Self>,
        n: &Buffer<i32>,
        out: &mut Buffer<Self>,
    ) -> Result<()>;
    /// The pure-Rust function (`ptxlab_device::precise`) the GPU runs for
    /// `name`, called on the host with the kernel's arguments `(x, y, n)`.
    fn precise(name: &str) -> Option<PreciseFn<Self>>;
}

/// A function of the kernel as the CPU calls it: `(x, y, n)`.
pub type PreciseFn<T> = fn(T, T, i32) -> T;

macro_rules! precise_table {
    ($t:ty, $name:expr, $($n:literal => $f:expr),* $(,)?) => {
        match $name {
            $($n => Some($f as PreciseFn<$t>),)*
            _ => None,
        }
    };
}

impl MathElem for f32 {
    const TY: Ty = Ty::F32;
    fn launch(
        dev: &Device,
        cfg: LaunchConfig,
        func: u32,
        x: &Buffer<f32>,
        y: &Buffer<f32>,
        n: &Buffer<i32>,
        out: &mut Buffer<f32>,
    ) -> Result<()> {
        launch!(dev, cfg, mathcheck::math_eval_f32(func, x, y, n, out))
    }
    fn precise(name: &str) -> Option<PreciseFn<f32>> {
        precise_table!(f32, name,
            "exp" => |x, _, _| p::exp_f32(x),
            "exp2" => |x, _, _| p::exp2_f32(x),
            "exp10" => |x, _, _| p::exp10_f32(x),
            "exp_m1" => |x, _, _| p::exp_m1_f32(x),
            "ln" => |x, _, _| p::ln_f32(x),
            "log2" => |x, _, _| p::log2_f32(x),
            "log10" => |x, _, _| p::log10_f32(x),
            "ln_1p" => |x, _, _| p::ln_1p_f32(x),
            "powf" => |x, y, _| p::powf_f32(x, y),
            "powi" => |x, _, n| p::powi_f32(x, n),
            "cbrt" => |x, _, _| p::cbrt_f32(x),
            "hypot" => |x, y, _| p::hypot_f32(x, y),
            "sinh" => |x, _, _| p::sinh_f32(x),
            "cosh" => |x, _, _| p::cosh_f32(x),
            "tanh" => |x, _, _| p::tanh_f32(x),
            "asin" => |x, _, _| p::asin_f32(x),
            "acos" => |x, _, _| p::acos_f32(x),
            "atan" => |x, _, _| p::atan_f32(x),
            "erf" => |x, _, _| p::erf_f32(x),
            "erfc" => |x, _, _| p::erfc_f32(x),
        )
    }
}

impl MathElem for f64 {
    const TY: Ty = Ty::F64;
    fn launch(
        dev: &Device,
        cfg: LaunchConfig,
        func: u32,
        x: &Buffer<f64>,
        y: &Buffer<f64>,
        n: &Buffer<i32>,
        out: &mut Buffer<f64>,
    ) -> Result<()> {
        launch!(dev, cfg, mathcheck::math_eval_f64(func, x, y, n, out))
    }
    fn precise(name: &str) -> Option<PreciseFn<f64>> {
        precise_table!(f64, name,
            "exp" => |x, _, _| p::exp_f64(x),
            "exp2" => |x, _, _| p::exp2_f64(x),
            "exp10" => |x, _, _| p::exp10_f64(x),
            "exp_m1" => |x, _, _| p::exp_m1_f64(x),
            "ln" => |x, _, _| p::ln_f64(x),
            "log2" => |x, _, _| p::log2_f64(x),
            "log10" => |x, _, _| p::log10_f64(x),
            "ln_1p" => |x, _, _| p::ln_1p_f64(x),
            "powf" => |x, y, _| p::powf_f64(x, y),
            "powi" => |x, _, n| p::powi_f64(x, n),
            "cbrt" => |x, _, _| p::cbrt_f64(x),
            "hypot" => |x, y, _| p::hypot_f64(x, y),
            "sinh" => |x, _, _| p::sinh_f64(x),
            "cosh" => |x, _, _| p::cosh_f64(x),
            "tanh" => |x, _, _| p::tanh_f64(x),
            "asin" => |x, _, _| p::asin_f64(x),
            "acos" => |x, _, _| p::acos_f64(x),
            "atan" => |x, _, _| p::atan_f64(x),
            "erf" => |x, _, _| p::erf_f64(x),
            "erfc" => |x, _, _| p::erfc_f64(x),
        )
    }
}

/// `out[i] = f(x[i], y[i])` (`powi`: `x[i]^n[i]`) on `dev` for the
/// function `name` (one of `kernels_gpu::mathcheck::NAMES`). Checks the
/// lengths and the name.
pub fn eval<T: MathElem>(
    dev: &Device,
    name: &str,
    x: &Buffer<T>,
    y: &Buffer<T>,
    n: &Buffer<i32>,
    out: &mut Buffer<T>,
) -> Result<()> {
    let func = NAMES.iter().position(|n| *n == name).ok_or_else(|| {
        Error::input(
            "math function",
            format!("`{name}`; allowed: {}", NAMES.join(", ")),
        )
    })?;
    let len = out.len();
    if x.len() != len || y.len() != len || n.len() != len || len == 0 {
        return Err(Error::input(
            "math_eval",
            format!(
                "lengths x {}, y {}, n {}, out {}: all four must be equal and not 0",
                x.len(),
                y.len(),
                n.len(),
                len
            ),
        ));
    }
    let cfg = LaunchConfig::for_threads(len, BLOCK)?;
    T::launch(dev, cfg, func as u32, x, y, n, out)
}
