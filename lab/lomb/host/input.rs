//! Inputs of the Lomb-Scargle workload: the material's samples and grid,
//! random samples, validation, the options applied on the host, the even-grid
//! detection and the range check of an element type.

use super::{Elem, MATERIAL_F_RANGE, Options};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::rng::SplitMix64;

const MATERIAL_X_NPY: &[u8] = include_bytes!("../../../tests/fixtures/lomb/material_x.npy");
const MATERIAL_Y_NPY: &[u8] = include_bytes!("../../../tests/fixtures/lomb/material_y.npy");

/// Parses a little-endian float64 1-D `.npy` (version 1 or 2) from memory.
pub fn npy_f64(bytes: &[u8]) -> Result<Vec<f64>> {
    let bad = |d: &str| Error::input("embedded .npy", d.to_string());
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(bad("not an .npy file"));
    }
    let (hlen, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        _ if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        _ => return Err(bad("truncated header")),
    };
    let header = std::str::from_utf8(
        bytes
            .get(start..start + hlen)
            .ok_or_else(|| bad("truncated header"))?,
    )
    .map_err(|_| bad("header is not text"))?;
    if !header.contains("'<f8'") || header.contains("'fortran_order': True") {
        return Err(bad("expected a C-order <f8 array"));
    }
    let data = &bytes[start + hlen..];
    Ok(data
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect())
}

/// The material's samples (114 times and values, made by
/// `tests/fixtures/lomb/make_fixture.py` with NumPy's seed 1234).
pub fn material_samples() -> Result<(Vec<f64>, Vec<f64>)> {
    Ok((npy_f64(MATERIAL_X_NPY)?, npy_f64(MATERIAL_Y_NPY)?))
}

/// `linspace(a, b, n)` as NumPy computes it (`a + i * step`, last = b).
pub fn linspace(a: f64, b: f64, n: usize) -> Vec<f64> {
    if n == 0 {
        return Vec::new();
    }
    if n == 1 {
        return vec![a];
    }
    let step = (b - a) / (n - 1) as f64;
    (0..n)
        .map(|i| if i + 1 == n { b } else { a + i as f64 * step })
        .collect()
}

/// The material's frequency grid with `n` points.
pub fn material_freqs(n: usize) -> Vec<f64> {
    linspace(MATERIAL_F_RANGE.0, MATERIAL_F_RANGE.1, n)
}

/// Random samples like the material's: `n` sorted times in (0.01, 10 pi),
/// `y = 2 cos(x + pi/2)` plus uniform noise in [-0.5, 0.5).
pub fn random_samples(n: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut r = SplitMix64(seed);
    let mut x: Vec<f64> = (0..n)
        .map(|_| r.uniform(0.01, 10.0 * std::f64::consts::PI))
        .collect();
    x.sort_by(|a, b| a.total_cmp(b));
    let y = x
        .iter()
        .map(|&t| 2.0 * (t + 0.5 * std::f64::consts::PI).cos() + r.uniform(-0.5, 0.5))
        .collect();
    (x, y)
}

/// Checks the inputs: same non-zero lengths, finite values, non-zero frequencies.
pub fn validate(x: &[f64], y: &[f64], freqs: &[f64]) -> Result<()> {
    if x.len() != y.len() {
        return Err(Error::input(
            "lomb-scargle samples",
            format!(
                "x has {} values and y has {}; they must have the same length",
                x.len(),
                y.len()
            ),
        ));
    }
    if x.is_empty() {
        return Err(Error::input(
            "lomb-scargle samples",
            "x and y are empty; give at least one sample",
        ));
    }
    if freqs.is_empty() {
        return Err(Error::input(
            "lomb-scargle frequencies",
            "no frequencies; give at least one",
        ));
    }
    for (name, v) in [("x", x), ("y", y), ("freqs", freqs)] {
        if let Some(i) = v.iter().position(|a| !a.is_finite()) {
            return Err(Error::input(
                format!("lomb-scargle {name}"),
                format!(
                    "{name}[{i}] = {} is not finite; every value must be a finite number",
                    v[i]
                ),
            ));
        }
    }
    if let Some(i) = freqs.iter().position(|&f| f == 0.0) {
        return Err(Error::input(
            "lomb-scargle frequencies",
            format!(
                "freqs[{i}] = 0: a zero angular frequency has no periodogram value (tau = atan2(..)/(2w)); use non-zero frequencies"
            ),
        ));
    }
    Ok(())
}

/// `y` after `precenter`, and the kernels' `scale` (0.5, or `1 / sum y^2` with
/// `normalize`, which is SciPy's `0.5 * 2 / sum y^2`).
pub fn prepare(y: &[f64], opts: Options) -> Result<(Vec<f64>, f64)> {
    let mean = y.iter().sum::<f64>() / y.len().max(1) as f64;
    let yy: Vec<f64> = if opts.precenter {
        y.iter().map(|v| v - mean).collect()
    } else {
        y.to_vec()
    };
    let scale = if opts.normalize {
        let s2: f64 = yy.iter().map(|v| v * v).sum();
        if s2 == 0.0 || !s2.is_finite() {
            return Err(Error::input(
                "lomb-scargle y",
                "normalize needs sum(y^2) > 0, but y is all zeros (after precenter); drop --normalize or give a non-constant y",
            ));
        }
        1.0 / s2
    } else {
        0.5
    };
    Ok((yy, scale))
}

/// `Some((start, step))` when `freqs` is evenly spaced (each point within
/// 1e-9 of a step, plus 4 ulp of the largest value, of `start + k step`),
/// `None` otherwise.
pub fn even_grid(freqs: &[f64]) -> Option<(f64, f64)> {
    let n = freqs.len();
    let start = *freqs.first()?;
    if n == 1 {
        return Some((start, 0.0));
    }
    let step = (freqs[n - 1] - start) / (n - 1) as f64;
    if step == 0.0 || !step.is_finite() {
        return None;
    }
    // 1e-9 of a step, plus the rounding of the values themselves.
    let tol = 1e-9 * step.abs() + 4.0 * f64::EPSILON * start.abs().max(freqs[n - 1].abs());
    freqs
        .iter()
        .enumerate()
        .all(|(k, &f)| (f - (start + k as f64 * step)).abs() <= tol)
        .then_some((start, step))
}

/// Checks that the inputs fit the element type of the device run: every
/// value, the largest phase `w x` and `sum y^2` must be finite in `T` (f32
/// overflows at 3.4e38), or the kernel's result is inf/NaN.
pub fn check_range<T: Elem>(x: &[f64], y: &[f64], freqs: &[f64]) -> Result<()> {
    let max = if std::mem::size_of::<T>() == 4 {
        f32::MAX as f64
    } else {
        f64::MAX
    };
    let amax = |v: &[f64]| v.iter().fold(0.0f64, |m, a| m.max(a.abs()));
    let (mx, my, mf) = (amax(x), amax(y), amax(freqs));
    let yy: f64 = y.iter().map(|v| v * v).sum();
    let bad = |what: &str, value: f64| {
        Error::input(
            format!("lomb-scargle {what}"),
            format!(
                "{value:.3e} is beyond the largest {} ({max:.3e}): too large for {} arithmetic, so \
                 the periodogram would be inf/NaN; rescale x, y or the frequencies{}",
                T::NAME,
                T::NAME,
                if std::mem::size_of::<T>() == 4 {
                    ", or use --precision f64"
                } else {
                    ""
                }
            ),
        )
    };
    if mx > max {
        return Err(bad("x", mx));
    }
    if my > max {
        return Err(bad("y", my));
    }
    if mf > max {
        return Err(bad("freqs", mf));
    }
    if !(mf * mx <= max) {
        return Err(bad("phase max|w| * max|x|", mf * mx));
    }
    if !(yy <= max) {
        return Err(bad("sum of y^2", yy));
    }
    Ok(())
}
