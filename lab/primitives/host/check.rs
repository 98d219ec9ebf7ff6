//! Checks: the error bound of a float sum, a rung's sum against its
//! reference, the values a float sum accepts, a histogram against the CPU,
//! and [`sim_check`] (every kernel of the workload on the simulator).

use super::{
    HistKey, HistRung, PiLayout, ReduceRung, SumElement, SumPlan, SumRef, cpu_histogram_serial,
    cpu_pi_serial, histogram, pi_hits, random_inputs, random_keys, reference, sum,
};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::runtime::{Buffer, Device};
/// Error bound of a float sum of depth `h` (0 for integers).
pub fn sum_bound<T: SumElement>(h: f64, n: usize, r: &SumRef) -> f64 {
    let u = T::UNIT_ROUNDOFF;
    if u == 0.0 {
        return 0.0;
    }
    let hu = h * u;
    // For h u >= 1/2 the a-priori bound says nothing useful; keep a finite
    // (vacuous, but NaN-catching) value.
    let gamma = if hu < 0.5 { hu / (1.0 - hu) } else { 2.0 * hu };
    gamma * r.abs_sum + n as f64 * (1.0 / (1u64 << 53) as f64) * r.abs_sum
}
/// Outcome of a reduction check.
#[derive(Debug, Clone)]
pub struct SumCheck {
    /// The device's sum.
    pub got: f64,
    /// The reference.
    pub reference: SumRef,
    /// `|got - S|`.
    pub err: f64,
    /// The bound it must stay within (0: exact).
    pub bound: f64,
    /// Depth used for the bound.
    pub depth: f64,
}

impl SumCheck {
    /// `true` when within the bound (false for NaN).
    pub fn ok(&self) -> bool {
        self.err <= self.bound
    }
    /// The a-priori bound says nothing (`h u >= 1/2`, for example 2^28
    /// sequential f32 atomic adds) and the sum is off by more than 1e-3
    /// relative: the rung "passes" only because its bound is vacuous.
    pub fn inaccurate(&self, unit_roundoff: f64) -> bool {
        self.depth * unit_roundoff >= 0.5 && self.rel_err() > 1e-3
    }
    /// `|got - S| / |S|`.
    pub fn rel_err(&self) -> f64 {
        self.err / self.reference.sum.abs().max(f64::MIN_POSITIVE)
    }
    pub(super) fn verify(&self, what: &str) -> Result<()> {
        if self.ok() {
            Ok(())
        } else {
            Err(Error::Verification {
                what: what.to_string(),
                detail: format!(
                    "sum {} against reference {}: error {:.3e} exceeds the bound {:.3e} (depth {})",
                    self.got, self.reference.sum, self.err, self.bound, self.depth
                ),
            })
        }
    }
}

/// Runs `rung` on `x` (already on the device) and compares with its reference.
pub fn check_buffer<T: SumElement>(
    dev: &Device,
    rung: ReduceRung,
    hx: &[T],
    x: &Buffer<T>,
) -> Result<SumCheck> {
    let plan = SumPlan::<T>::new(dev, rung, hx.len())?;
    let depth = plan.depth();
    drop(plan);
    let got = sum(dev, rung, x)?.as_f64();
    let r = reference(hx);
    Ok(SumCheck {
        got,
        reference: r,
        err: (got - r.sum).abs(),
        bound: sum_bound::<T>(depth, hx.len(), &r),
        depth,
    })
}

/// Checks an input of a float sum: every value finite, and `sum |x|` within
/// the type's range (otherwise a partial sum overflows to inf). Integer sums
/// wrap by definition and need no check.
pub fn check_values<T: SumElement>(x: &[T]) -> Result<()> {
    if T::UNIT_ROUNDOFF == 0.0 {
        return Ok(());
    }
    if let Some(i) = x.iter().position(|v| !v.as_f64().is_finite()) {
        return Err(Error::input(
            "reduce input",
            format!(
                "element {i} is {:?}; every value must be finite (a sum with NaN or inf has no \
                 error bound to check): remove or replace it",
                x[i]
            ),
        ));
    }
    let max = if std::mem::size_of::<T>() == 4 {
        f32::MAX as f64
    } else {
        f64::MAX
    };
    let abs: f64 = x.iter().map(|v| v.as_f64().abs()).sum();
    if !(abs <= max) {
        return Err(Error::input(
            "reduce input",
            format!(
                "sum |x| = {abs:.3e} is beyond the largest {} ({max:.3e}): partial sums would \
                 overflow to inf; scale the input down{}",
                T::NAME,
                if std::mem::size_of::<T>() == 4 {
                    " or use --precision f64"
                } else {
                    ""
                }
            ),
        ));
    }
    Ok(())
}

/// Random input of length `n`, summed by `rung` on `dev`, against the reference.
pub fn check<T: SumElement>(
    dev: &Device,
    rung: ReduceRung,
    n: usize,
    seed: u64,
) -> Result<SumCheck> {
    let hx = random_inputs::<T>(n, seed);
    let x = dev.upload(&hx)?;
    check_buffer(dev, rung, &hx, &x)
}
/// Runs `rung` on `keys` and counts the bins that differ from the CPU.
pub fn check_histogram<K: HistKey>(
    dev: &Device,
    rung: HistRung,
    keys: &[K],
    bins: u32,
) -> Result<usize> {
    let b = dev.upload(keys)?;
    let got = histogram(dev, rung, &b, bins)?;
    let want = cpu_histogram_serial(keys, bins);
    Ok(got.iter().zip(&want).filter(|(g, w)| g != w).count())
}
// ---------------------------------------------------------------------------

/// Every kernel of the workload on the simulator at small odd sizes: sums
/// within their bounds (integers exact), histograms exact, and Monte-Carlo
/// counts equal to the CPU's for the same seed and layout.
pub fn sim_check() -> Result<()> {
    let dev = Device::sim();
    fn sums<T: SumElement>(dev: &Device) -> Result<()> {
        for rung in ReduceRung::ALL {
            for n in [1usize, 4097] {
                check::<T>(dev, rung, n, n as u64 ^ 5)?.verify(&format!(
                    "reduce {} {} n={n} (simulator)",
                    T::NAME,
                    rung.name()
                ))?;
            }
        }
        check::<T>(dev, ReduceRung::GridStride, 100_003, 9)?.verify(&format!(
            "reduce {} gridstride n=100003 (simulator)",
            T::NAME
        ))
    }
    sums::<f32>(&dev)?;
    sums::<f64>(&dev)?;
    sums::<i32>(&dev)?;
    fn hists<K: HistKey>(dev: &Device) -> Result<()> {
        for rung in HistRung::ALL {
            for (n, bins) in [(4097usize, 256u32), (100_003, 64)] {
                let keys = random_keys::<K>(n, n as u64);
                let bad = check_histogram(dev, rung, &keys, bins)?;
                if bad != 0 {
                    return Err(Error::Verification {
                        what: format!(
                            "histogram {} {} n={n} bins={bins} (simulator)",
                            K::NAME,
                            rung.label()
                        ),
                        detail: format!("{bad} bins differ from the CPU"),
                    });
                }
            }
        }
        Ok(())
    }
    hists::<u8>(&dev)?;
    hists::<u32>(&dev)?;
    for (samples, seed) in [(25_601u64, 1u64), (1000, 99)] {
        let got = pi_hits(&dev, PiLayout::SIM, samples, seed)?;
        let want = cpu_pi_serial(PiLayout::SIM, samples, seed)?;
        if got != want {
            return Err(Error::Verification {
                what: format!("monte-carlo-pi {samples} samples seed {seed} (simulator)"),
                detail: format!("{got} hits on the simulator, {want} on the CPU"),
            });
        }
    }
    Ok(())
}
