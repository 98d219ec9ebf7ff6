//! The check of a rung against the CPU (bitwise, outputs poisoned) and
//! [`sim_check`].

use super::{Element, Rung, add, cpu_serial, inputs};
use crate::error::{Error, Result};
use crate::rng::rel_err_norm;
use crate::runtime::{Device, ModuleKey};

/// Bitwise equal, or both NaN (a NaN input gives a NaN sum, whose payload
/// bits the GPU need not keep).
pub fn same_value<T: Element>(a: T, b: T) -> bool {
    let (a, b) = (a.to_f64(), b.to_f64());
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Result of [`check`].
#[derive(Debug, Clone)]
pub struct Check {
    /// Elements that differ from the CPU result (bitwise).
    pub mismatches: usize,
    /// Relative error by norm against the f64 sum.
    pub rel_err: f64,
}

/// Runs `rung` on random inputs of length `n` with the output poisoned (NaN)
/// and compares with the CPU: the sum of two floats is correctly rounded on
/// both, so the results must be bitwise equal.
pub fn check<T: Element>(dev: &Device, n: usize, rung: Rung, seed: u64) -> Result<Check> {
    let (ha, hb) = inputs::<T>(n, seed);
    let a = dev.upload(&ha)?;
    let b = dev.upload(&hb)?;
    let mut c = dev.alloc_filled(n, T::from_f64(f64::NAN))?;
    add(dev, rung, ModuleKey::default(), &a, &b, &mut c)?;
    let got = dev.download(&c)?;
    let mut want = vec![T::ZERO; n];
    cpu_serial(&ha, &hb, &mut want);
    let mismatches = got
        .iter()
        .zip(&want)
        .filter(|(g, w)| !same_value(**g, **w))
        .count();
    let g64: Vec<f64> = got.iter().map(|v| v.to_f64()).collect();
    let r64: Vec<f64> = ha
        .iter()
        .zip(&hb)
        .map(|(a, b)| a.to_f64() + b.to_f64())
        .collect();
    Ok(Check {
        mismatches,
        rel_err: rel_err_norm(&g64, &r64),
    })
}

/// Every vector-add kernel on the simulator, odd lengths, against the CPU.
pub fn sim_check() -> Result<()> {
    let dev = Device::sim();
    for n in [1usize, 7, 1001] {
        for rung in Rung::ALL {
            let c32 = check::<f32>(&dev, n, rung, n as u64)?;
            let c64 = check::<f64>(&dev, n, rung, n as u64)?;
            for (p, c) in [("f32", c32), ("f64", c64)] {
                if c.mismatches != 0 {
                    return Err(Error::Verification {
                        what: format!("vector add {p} {} n={n} (simulator)", rung.label()),
                        detail: format!("{} elements differ from the CPU", c.mismatches),
                    });
                }
            }
        }
    }
    Ok(())
}
