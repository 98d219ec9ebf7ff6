//! The check of a rung against the f64 reference (outputs poisoned first)
//! and [`sim_check`].

use super::cpu::{random_input, reference};
use super::launch::Rung;
use super::lines::Element;
use super::problem::{Fft, Spec};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::rng::rel_err_norm;
use ptxlab_common::runtime::Device;

/// Largest relative error (by norm, against rustfft in f64) a check
/// accepts: f32 transforms are good to a few units of f32 rounding times
/// the number of passes, f64 ones to a few of f64.
pub fn tolerance<T: Element>() -> f64 {
    if size_of::<T>() == 4 { 2e-5 } else { 1e-12 }
}

/// Result of [`check`].
#[derive(Debug, Clone)]
pub struct Check {
    /// Relative error by norm against the f64 reference.
    pub rel_err: f64,
    /// How the plans compute.
    pub plan: String,
}

/// Runs `fft` once on `input` (as `T`) with the output poisoned (NaN) and
/// returns its result in f64.
pub fn run_once<T: Element>(dev: &Device, fft: &mut Fft<T>, input: &[f64]) -> Result<Vec<f64>> {
    let x: Vec<T> = input.iter().map(|v| T::from_f64(*v)).collect();
    let x = dev.upload(&x)?;
    let mut out = dev.alloc_filled(fft.spec.output_len(), T::from_f64(f64::NAN))?;
    fft.run(dev, &x, &mut out)?;
    Ok(dev.download(&out)?.iter().map(|v| v.to_f64()).collect())
}

/// The relative error by norm of `got` against `want`; an error when it is
/// above the tolerance of `T` (or not finite).
pub fn compare<T: Element>(what: &str, got: &[f64], want: &[f64]) -> Result<f64> {
    let e = rel_err_norm(got, want);
    let tol = tolerance::<T>();
    if e.is_nan() || e > tol {
        return Err(Error::Verification {
            what: what.to_string(),
            detail: format!(
                "relative error {e:.3e} against rustfft in f64; at most {tol:.0e} allowed"
            ),
        });
    }
    Ok(e)
}

/// `spec` on `rung` with random input from `seed`, against rustfft in f64
/// (the input rounded to `T` first, so only the transform's error counts).
pub fn check<T: Element>(dev: &Device, spec: Spec, rung: Rung, seed: u64) -> Result<Check> {
    let input: Vec<f64> = random_input(&spec, seed)
        .into_iter()
        .map(|v| T::from_f64(v).to_f64())
        .collect();
    let want = reference(&spec, &input);
    let mut fft = Fft::<T>::new(dev, spec, rung)?;
    let got = run_once(dev, &mut fft, &input)?;
    let what = format!(
        "fft {} {} {spec:?} ({})",
        T::NAME,
        rung.label(),
        fft.describe()
    );
    Ok(Check {
        rel_err: compare::<T>(&what, &got, &want)?,
        plan: fft.describe(),
    })
}

/// The shapes of the simulator check: together they launch every `fft_*`
/// kernel on every rung (Bluestein at 97, mixed radix, 2-D with strided and
/// transposed columns, real transforms of even and odd lengths).
pub fn sim_specs() -> Vec<Spec> {
    let s = |rows, n, two_d, real, inverse| Spec {
        rows,
        n,
        two_d,
        real,
        inverse,
    };
    vec![
        s(3, 97, false, false, false),
        s(21, 20, true, false, true),
        s(12, 10, true, true, false),
        s(2, 15, false, true, true),
        s(2, 9, false, true, false),
        s(2, 16, false, true, true),
        s(1, 1, false, false, false),
    ]
}

/// Every FFT kernel on the simulator against rustfft in f64, every rung,
/// f32 and f64, one f64 transform longer than shared memory (the
/// four-step split), and the register and coalesced rungs' column tiles
/// and two-launch four-step.
pub fn sim_check() -> Result<()> {
    let dev = Device::sim();
    for rung in Rung::ALL {
        for (i, spec) in sim_specs().into_iter().enumerate() {
            check::<f32>(&dev, spec, rung, i as u64)?;
            check::<f64>(&dev, spec, rung, i as u64 + 100)?;
        }
    }
    let long = Spec {
        rows: 1,
        n: 2 * kernels_gpu::fft::shared_max_len(8),
        two_d: false,
        real: false,
        inverse: true,
    };
    check::<f64>(&dev, long, Rung::Shared, 7)?;
    // The register and coalesced rungs' own kernels: rows, column tiles and
    // the four-step split (the shapes above are not powers of two; 2^15 is
    // four-step for both rungs in both types).
    for (i, spec) in [
        Spec {
            rows: 24,
            n: 32,
            two_d: true,
            real: false,
            inverse: false,
        },
        Spec {
            rows: 2,
            n: 1 << 13,
            two_d: false,
            real: false,
            inverse: true,
        },
        Spec {
            rows: 1,
            n: 1 << 15,
            two_d: false,
            real: false,
            inverse: false,
        },
    ]
    .into_iter()
    .enumerate()
    {
        for rung in [Rung::Register, Rung::Coalesced] {
            check::<f32>(&dev, spec, rung, 200 + i as u64)?;
            check::<f64>(&dev, spec, rung, 210 + i as u64)?;
        }
    }
    Ok(())
}
