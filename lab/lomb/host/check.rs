//! Checks against the f64 reference: the accuracy measure, one rung's
//! check, and every kernel on the simulator (`sim_check`).

use super::Options;
use super::batch::{batch_peaks, batch_periodogram, batch_reference, host_row_peaks, survey_batch};
use super::cpu::reference_rayon;
use super::general::periodogram_general;
use super::input::{even_grid, material_freqs, material_samples, random_samples};
use super::ladder::{Rung, Shape};
use super::launch::Elem;
use super::model::{General, Normalization, reference_general};
use super::phase::Phases;
use super::run::periodogram_with;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::runtime::Device;

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
#[allow(clippy::too_many_arguments)]
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
    check_with::<T>(dev, rung, x, y, freqs, opts, want, shape, Phases::Auto)
}

/// As [`check`], with the plain or `_long` kernels as `phases` says.
#[allow(clippy::too_many_arguments)]
pub fn check_with<T: Elem>(
    dev: &Device,
    rung: Rung,
    x: &[f64],
    y: &[f64],
    freqs: &[f64],
    opts: Options,
    want: &[f64],
    shape: Shape,
    phases: Phases,
) -> Result<Accuracy> {
    let got = periodogram_with::<T>(dev, rung, x, y, freqs, opts, shape, phases)?;
    let what = || {
        format!(
            "lomb-scargle {} {} ({} samples x {} freqs) on {}",
            T::NAME,
            rung.name(),
            x.len(),
            freqs.len(),
            dev.name()
        )
    };
    verify::<T>(&got, want, what)
}

/// `got` against `want` within `T::TOL` of the peak and the material's 1e-3
/// relative check; the error names `what`.
pub fn verify<T: Elem>(got: &[f64], want: &[f64], what: impl Fn() -> String) -> Result<Accuracy> {
    let acc = accuracy(got, want);
    if acc.err_over_peak.is_nan() || acc.err_over_peak > T::TOL || acc.material_rel > 1e-3 {
        return Err(Error::Verification {
            what: what(),
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
/// recurrence (`cheby_shift` is `None`) and the Taylor plan takes short
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
/// even, uneven and coarse grids, every option), against the CPU reference;
/// then the `_long` kernels, the floating-mean ones and the batch ones.
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
    // The `_long` kernels (forced: these spans do not need them), on a grid
    // the three-term recurrence suits and on the coarse one.
    for (x, y, f) in [(&rx, &ry, &even[..401]), (&cx, &cy, &coarse)] {
        let opts = Options {
            precenter: true,
            normalize: false,
        };
        let want = reference_rayon(x, y, f, opts)?;
        for rung in rungs {
            check_with::<f32>(&dev, rung, x, y, f, opts, &want, shape, Phases::Long)?;
            check_with::<f64>(&dev, rung, x, y, f, opts, &want, shape, Phases::Long)?;
        }
    }
    sim_check_general(&dev, shape)?;
    sim_check_batch(&dev)
}

/// The floating-mean kernels on the simulator: astropy's defaults with
/// `dy`, and no mean fit with the `log` normalization, on an even grid.
fn sim_check_general(dev: &Device, shape: Shape) -> Result<()> {
    let (x, y) = random_samples(45, 9);
    let mut r = ptxlab_common::rng::SplitMix64(4);
    let dy: Vec<f64> = x.iter().map(|_| r.uniform(0.5, 1.5)).collect();
    let f = material_freqs(333);
    let log = General {
        fit_mean: false,
        center_data: true,
        normalization: Normalization::Log,
    };
    for (d, g) in [(Some(&dy[..]), General::default()), (None, log)] {
        let want = reference_general(&x, &y, d, &f, g)?;
        for rung in [Rung::Cached, Rung::Bounds, Rung::Taylor] {
            check_general::<f32>(dev, rung, &x, &y, d, &f, g, &want, shape)?;
            check_general::<f64>(dev, rung, &x, &y, d, &f, g, &want, shape)?;
        }
    }
    Ok(())
}

/// The batch kernels on the simulator: 5 ragged curves on an even grid
/// (rotation) and an uneven one (direct), against each curve's reference;
/// then each curve's peak found on the device (`lomb_row_peaks`), which
/// must be the host's argmax of the same periodograms, bit for bit.
fn sim_check_batch(dev: &Device) -> Result<()> {
    let batch = survey_batch(5, 17, 41, 60.0, false, 21);
    let even = material_freqs(301);
    let mut uneven = even.clone();
    uneven[7] += 1e-3;
    let g = General::default();
    for f in [&even, &uneven] {
        let p32 = batch_periodogram::<f32>(dev, &batch, f, g)?;
        let p64 = batch_periodogram::<f64>(dev, &batch, f, g)?;
        let idx: Vec<usize> = (0..f.len()).collect();
        for c in 0..batch.curves() {
            let want = batch_reference(&batch, f, g, c, &idx)?;
            let what = || format!("lomb-scargle batch curve {c} of {}", batch.curves());
            let row = |p: &[f64]| p[c * f.len()..(c + 1) * f.len()].to_vec();
            let g32: Vec<f64> = p32.iter().map(|v| f64::from(*v)).collect();
            verify::<f32>(&row(&g32), &want, what)?;
            verify::<f64>(&row(&p64), &want, what)?;
        }
        let g32: Vec<f64> = p32.iter().map(|v| f64::from(*v)).collect();
        for (name, got, p) in [
            ("f32", batch_peaks::<f32>(dev, &batch, f, g)?, &g32),
            ("f64", batch_peaks::<f64>(dev, &batch, f, g)?, &p64),
        ] {
            let want = host_row_peaks(p, batch.curves(), f.len());
            let same = got
                .iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()));
            if !same {
                return Err(Error::Verification {
                    what: format!("lomb-scargle {name} batch peaks on {}", dev.name()),
                    detail: format!("{got:?}, the host's argmax of the same periodograms {want:?}"),
                });
            }
        }
    }
    Ok(())
}

/// Runs `rung` of the floating-mean model and checks it against `want`
/// (the f64 reference, [`super::reference_general`]) within `T::TOL` of the
/// peak and the material's 1e-3 relative check.
#[allow(clippy::too_many_arguments)]
pub fn check_general<T: Elem>(
    dev: &Device,
    rung: Rung,
    x: &[f64],
    y: &[f64],
    dy: Option<&[f64]>,
    freqs: &[f64],
    g: General,
    want: &[f64],
    shape: Shape,
) -> Result<Accuracy> {
    let got = periodogram_general::<T>(dev, rung, x, y, dy, freqs, g, shape)?;
    verify::<T>(&got, want, || {
        format!(
            "lomb-scargle {} {} floating-mean ({g:?}, dy {}; {} samples x {} freqs) on {}",
            T::NAME,
            rung.name(),
            if dy.is_some() { "given" } else { "none" },
            x.len(),
            freqs.len(),
            dev.name()
        )
    })
}
