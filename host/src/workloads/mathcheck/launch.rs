//! The launcher of `math_eval` (the only place its name appears) and, per
//! element type, the pure-Rust functions the GPU runs, callable on the CPU.

use super::reference::Ty;
use crate::error::{Error, Result};
use crate::launch;
use crate::runtime::{Buffer, Device, LaunchConfig};
use cudarc::driver::DeviceRepr;
use kernels_gpu::mathcheck::{BLOCK, NAMES};
use ptxlab_device::math::Real;
use ptxlab_device::precise as p;

/// f32 or f64: the kernel instance and the `precise` functions of the type.
pub trait MathElem: Real + DeviceRepr + Send + Sync + std::fmt::Debug {
    /// The type, for the ulp measure.
    const TY: Ty;
    /// Launches `math_eval_<type>`.
    fn launch(
        dev: &Device,
        cfg: LaunchConfig,
        func: u32,
        x: &Buffer<Self>,
        y: &Buffer<Self>,
        out: &mut Buffer<Self>,
    ) -> Result<()>;
    /// The pure-Rust function (`ptxlab_device::precise`) the GPU runs for
    /// `name`, called on the host (`y` as for the kernel).
    fn precise(name: &str) -> Option<fn(Self, Self) -> Self>;
}

macro_rules! precise_table {
    ($t:ty, $name:expr, $($n:literal => $f:expr),* $(,)?) => {
        match $name {
            $($n => Some($f as fn($t, $t) -> $t),)*
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
        out: &mut Buffer<f32>,
    ) -> Result<()> {
        launch!(dev, cfg, mathcheck::math_eval_f32(func, x, y, out))
    }
    fn precise(name: &str) -> Option<fn(f32, f32) -> f32> {
        precise_table!(f32, name,
            "exp" => |x, _| p::exp_f32(x),
            "exp2" => |x, _| p::exp2_f32(x),
            "exp10" => |x, _| p::exp10_f32(x),
            "exp_m1" => |x, _| p::exp_m1_f32(x),
            "ln" => |x, _| p::ln_f32(x),
            "log2" => |x, _| p::log2_f32(x),
            "log10" => |x, _| p::log10_f32(x),
            "ln_1p" => |x, _| p::ln_1p_f32(x),
            "powf" => p::powf_f32,
            "powi" => |x, y| p::powi_f32(x, y as i32),
            "cbrt" => |x, _| p::cbrt_f32(x),
            "hypot" => p::hypot_f32,
            "sinh" => |x, _| p::sinh_f32(x),
            "cosh" => |x, _| p::cosh_f32(x),
            "tanh" => |x, _| p::tanh_f32(x),
            "asin" => |x, _| p::asin_f32(x),
            "acos" => |x, _| p::acos_f32(x),
            "atan" => |x, _| p::atan_f32(x),
            "erf" => |x, _| p::erf_f32(x),
            "erfc" => |x, _| p::erfc_f32(x),
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
        out: &mut Buffer<f64>,
    ) -> Result<()> {
        launch!(dev, cfg, mathcheck::math_eval_f64(func, x, y, out))
    }
    fn precise(name: &str) -> Option<fn(f64, f64) -> f64> {
        precise_table!(f64, name,
            "exp" => |x, _| p::exp_f64(x),
            "exp2" => |x, _| p::exp2_f64(x),
            "exp10" => |x, _| p::exp10_f64(x),
            "exp_m1" => |x, _| p::exp_m1_f64(x),
            "ln" => |x, _| p::ln_f64(x),
            "log2" => |x, _| p::log2_f64(x),
            "log10" => |x, _| p::log10_f64(x),
            "ln_1p" => |x, _| p::ln_1p_f64(x),
            "powf" => p::powf_f64,
            "powi" => |x, y| p::powi_f64(x, y as i32),
            "cbrt" => |x, _| p::cbrt_f64(x),
            "hypot" => p::hypot_f64,
            "sinh" => |x, _| p::sinh_f64(x),
            "cosh" => |x, _| p::cosh_f64(x),
            "tanh" => |x, _| p::tanh_f64(x),
            "asin" => |x, _| p::asin_f64(x),
            "acos" => |x, _| p::acos_f64(x),
            "atan" => |x, _| p::atan_f64(x),
            "erf" => |x, _| p::erf_f64(x),
            "erfc" => |x, _| p::erfc_f64(x),
        )
    }
}

/// `out[i] = f(x[i], y[i])` on `dev` for the function `name` (one of
/// `kernels_gpu::mathcheck::NAMES`). Checks the lengths and the name.
pub fn eval<T: MathElem>(
    dev: &Device,
    name: &str,
    x: &Buffer<T>,
    y: &Buffer<T>,
    out: &mut Buffer<T>,
) -> Result<()> {
    let func = NAMES.iter().position(|n| *n == name).ok_or_else(|| {
        Error::input(
            "math function",
            format!("`{name}`; allowed: {}", NAMES.join(", ")),
        )
    })?;
    let n = out.len();
    if x.len() != n || y.len() != n || n == 0 {
        return Err(Error::input(
            "math_eval",
            format!(
                "lengths x {}, y {}, out {}: all three must be equal and not 0",
                x.len(),
                y.len(),
                n
            ),
        ));
    }
    let cfg = LaunchConfig::for_threads(n, BLOCK)?;
    T::launch(dev, cfg, func as u32, x, y, out)
}
