//! Checks against the f64 reference: the accuracy measure, one rung's
//! check, and every kernel on the simulator (`sim_check`).

use super::Options;
use super::cpu::reference_rayon;
use super::input::{even_grid, material_freqs, material_samples, random_samples};
use super::ladder::{Rung, Shape};
use super::launch::{Elem, periodogram};
use crate::error::{Error, Result};
use crate::runtime::Device;

/// Accuracy of a periodogram against the reference.
#[derive(Debug, Clone, Copy)]
pub struct Accuracy {
    /// max |got - ref| / max |ref|.
    pub err_over_peak: f64,
    /// Largest relative error where the reference is above 1e-3 of its peak
    /// (the material's check passes when this is at most 1e-3).
    pub material_rel: f64,
}

/// Compares `got` with `want` (NaN anywhere gives an infinite error).
pub fn accuracy(got: &[f64], want: &[f64]) -> Accuracy {
    let peak = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let mut abs = 0.0f64;
    let mut rel = 0.0f64;
    for (g, w) in got.iter().zip(want) {
        let e = if g.is_finite() {
            (g - w).abs()
        } else {
            f64::INFINITY
        };
        abs = abs.max(e);
        if w.abs() > 1e-3 * peak {
            rel = rel.max(e / w.abs());
        }
    }
    if got.len() != want.len() {
        abs = f64::INFINITY;
    }
    Accuracy {
        err_over_peak: if peak > 0.0 { abs / peak } else { abs },
        material_rel: rel,
    }
}

/// Runs `rung` and checks it against `want` (the f64 reference) within `T::TOL`
/// of the peak and the material's 1e-3 relative check.
pub fn check<T: Elem>(
    dev: &Device,
    rung: Rung,
    x: &[f64],
    y: &[f64],
    freqs: &[f64],
    opts: Options,
    want: &[f64],
    shape: Shape,
) -> Result<Accuracy> {
    let got = periodogram::<T>(dev, rung, x, y, freqs, opts, shape)?;
    let acc = accuracy(&got, want);
    if acc.err_over_peak.is_nan() || acc.err_over_peak > T::TOL || acc.material_rel > 1e-3 {
        return Err(Error::Verification {
            what: format!(
                "lomb-scargle {} {} ({} samples x {} freqs) on {}",
                T::NAME,
                rung.name(),
                x.len(),
                freqs.len(),
                dev.name()
            ),
            detail: format!(
                "max |error| / peak = {:.3e} (tolerance {:.0e}); material check max rel error {:.3e} (tolerance 1e-3)",
                acc.err_over_peak,
                T::TOL,
                acc.material_rel
            ),
        });
    }
    Ok(acc)
}

/// A coarse even grid over long times, `(x, y, freqs)`: 61 samples spread
/// over about 190 time units, 203 frequencies 0.05 apart. The step angles
/// `0.05 x_j` span many turns, so no single shift suits the three-term
/// recurrence ([`cheby_shift`] is `None`) and the Taylor plan takes short
/// runs.
pub fn coarse_case() -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let x: Vec<f64> = (0..61)
        .map(|j| 0.37 + 3.1 * j as f64 + (j % 7) as f64 * 0.21)
        .collect();
    let y = x
        .iter()
        .map(|&t| (0.9 * t).sin() + 0.3 * (2.3 * t).cos())
        .collect();
    let f = (0..203).map(|k| 0.1 + k as f64 * 0.05).collect();
    (x, y, f)
}

/// Every kernel of the workload on the simulator, f32 and f64, on random and
/// on the material's samples (57 and 114 samples, about 1000 frequencies,
/// even, uneven and coarse grids, every option), against the CPU reference.
pub fn sim_check() -> Result<()> {
    let dev = Device::sim();
    let shape = Shape::material(&dev);
    let (mx, my) = material_samples()?;
    let (rx, ry) = random_samples(57, 5);
    let even = material_freqs(1001);
    let mut uneven = even.clone();
    for (i, f) in uneven.iter_mut().enumerate() {
        *f += 1e-3 * ((i * 7919) % 13) as f64;
    }
    // A coarse grid over long times: no shift suits the three-term
    // recurrence, so its rungs run the rotation kernels (`lomb_rotate_tab*`
    // included).
    let (cx, cy, coarse) = coarse_case();
    let rungs = [
        Rung::Cached,
        Rung::FastLean,
        Rung::Bounds,
        Rung::Shared,
        Rung::Rotate,
        Rung::Cheby,
        Rung::ChebyTab,
        Rung::ChebyTabPipe,
        Rung::Taylor,
    ];
    type Case<'a> = (&'a [f64], &'a [f64], &'a [f64], Options);
    let cases: [Case; 5] = [
        (&rx, &ry, &even, Options::default()),
        (&cx, &cy, &coarse, Options::default()),
        (
            &mx,
            &my,
            &even,
            Options {
                precenter: true,
                normalize: false,
            },
        ),
        (
            &rx,
            &ry,
            &uneven,
            Options {
                precenter: true,
                normalize: true,
            },
        ),
        (
            &mx,
            &my,
            &even[..997],
            Options {
                precenter: false,
                normalize: true,
            },
        ),
    ];
    for (x, y, f, opts) in cases {
        let want = reference_rayon(x, y, f, opts)?;
        for rung in rungs {
            if rung.kernel().needs_even_grid() && even_grid(f).is_none() {
                continue;
            }
            check::<f32>(&dev, rung, x, y, f, opts, &want, shape)?;
            check::<f64>(&dev, rung, x, y, f, opts, &want, shape)?;
        }
    }
    Ok(())
}
