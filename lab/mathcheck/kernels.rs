//! The math functions of [`Real`] evaluated over arrays, to measure their
//! error on the GPU (`ptxlab math-accuracy`, `docs/book/src/math.md`).
//!
//! `out[i] = f(x[i], y[i])` for the function numbered `func` in [`NAMES`]
//! (`y` is read only by `powf` and `hypot`; `powi` reads its exponent from
//! `n`, so the f32 kernel has no f64 instruction at all). The kernel calls the methods a kernel writer calls,
//! `x.exp()`, `x.powf(y)`: on the GPU they are `ptxlab_device::precise`'s
//! pure-Rust code, on the simulator the host's `std` functions, so the same
//! launch measures both.
//!
//! Launch shape: 1D, [`BLOCK`] threads per block, a grid-stride loop (any
//! grid covers any length). No shared memory. `func` is uniform over the
//! launch, so the `match` costs one branch and no divergence.

use ptxlab_device::prelude::*;

/// Threads per block used by the host launcher.
pub const BLOCK: u32 = 256;

/// The functions, by number: `NAMES[func]` is the `Real` method the
/// kernel's `func` argument selects.
pub const NAMES: [&str; 20] = [
    "exp", "exp2", "exp10", "exp_m1", "ln", "log2", "log10", "ln_1p", "powf", "powi", "cbrt",
    "hypot", "sinh", "cosh", "tanh", "asin", "acos", "atan", "erf", "erfc",
];

/// `f(x, y)` (or `x^n`) for the function numbered `func` in [`NAMES`]; NaN
/// for an unknown number.
#[inline(always)]
pub fn apply<T: Real>(func: u32, x: T, y: T, n: i32) -> T {
    match func {
        0 => x.exp(),
        1 => x.exp2(),
        2 => x.exp10(),
        3 => x.exp_m1(),
        4 => x.ln(),
        5 => x.log2(),
        6 => x.log10(),
        7 => x.ln_1p(),
        8 => x.powf(y),
        9 => x.powi(n),
        10 => x.cbrt(),
        11 => x.hypot(y),
        12 => x.sinh(),
        13 => x.cosh(),
        14 => x.tanh(),
        15 => x.asin(),
        16 => x.acos(),
        17 => x.atan(),
        18 => x.erf(),
        19 => x.erfc(),
        _ => T::from_f64(f64::NAN),
    }
}

#[inline(always)]
fn eval<T: Real>(
    func: u32,
    x: DeviceSlice<T>,
    y: DeviceSlice<T>,
    n: DeviceSlice<i32>,
    out: DeviceSliceMut<T>,
) {
    for i in thread::grid_stride(out.len()) {
        out.set(i, apply(func, x.get(i), y.get(i), n.get(i)));
    }
}

/// `out[i] = f(x[i], y[i])` (`powi`: `x[i]^n[i]`) in f32, `f` =
/// `NAMES[func]`.
///
/// Thread mapping: a grid-stride loop over `i`, one element per step.
#[kernel(launch_bounds(256))]
pub fn math_eval_f32(
    func: u32,
    x: DeviceSlice<f32>,
    y: DeviceSlice<f32>,
    n: DeviceSlice<i32>,
    out: DeviceSliceMut<f32>,
) {
    eval(func, x, y, n, out);
}

/// `out[i] = f(x[i], y[i])` in f64 (see [`math_eval_f32`]).
#[kernel(launch_bounds(256))]
pub fn math_eval_f64(
    func: u32,
    x: DeviceSlice<f64>,
    y: DeviceSlice<f64>,
    n: DeviceSlice<i32>,
    out: DeviceSliceMut<f64>,
) {
    eval(func, x, y, n, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `apply`'s numbering matches `NAMES` (each number gives the named
    /// method, on the host `std`'s).
    #[test]
    fn numbers_match_names() {
        let (x, y) = (0.375f64, 2.5f64);
        for (i, name) in NAMES.iter().enumerate() {
            let want = match *name {
                "exp" => x.exp(),
                "exp2" => x.exp2(),
                "exp10" => 10f64.powf(x),
                "exp_m1" => x.exp_m1(),
                "ln" => x.ln(),
                "log2" => x.log2(),
                "log10" => x.log10(),
                "ln_1p" => x.ln_1p(),
                "powf" => x.powf(y),
                "powi" => x.powi(2),
                "cbrt" => x.cbrt(),
                "hypot" => x.hypot(y),
                "sinh" => x.sinh(),
                "cosh" => x.cosh(),
                "tanh" => x.tanh(),
                "asin" => x.asin(),
                "acos" => x.acos(),
                "atan" => x.atan(),
                // std's erf is unstable: the trait method is the same call.
                "erf" => Real::erf(x),
                "erfc" => Real::erfc(x),
                _ => panic!("{name} has no reference here"),
            };
            assert_eq!(apply(i as u32, x, y, 2).to_bits(), want.to_bits(), "{name} (number {i})");
        }
        assert!(apply(NAMES.len() as u32, x, y, 2).is_nan());
    }
}
