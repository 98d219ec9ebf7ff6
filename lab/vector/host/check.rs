//! The check of a rung against the CPU (bitwise, outputs poisoned) and
//! [`sim_check`].

use super::{Element, Rung, add, cpu_serial, inputs};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::rng::rel_err_norm_pairs;
use ptxlab_common::runtime::{Buffer, Device, ModuleKey};

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

/// The inputs of one length on the host and on the device, and the CPU
/// result: drawn, uploaded and summed once, then read by the check of
/// every rung (at 2^28 elements that is 2 GB of inputs and 1 GB of result
/// per length instead of per rung).
pub struct Prepared<T: Element> {
    /// Inputs on the host.
    pub ha: Vec<T>,
    /// Second input on the host.
    pub hb: Vec<T>,
    /// `ha` on the device.
    pub a: Buffer<T>,
    /// `hb` on the device.
    pub b: Buffer<T>,
    /// The CPU sum, the bitwise reference.
    pub want: Vec<T>,
}

/// Random inputs of length `n` from `seed`, uploaded, with their CPU sum.
pub fn prepare<T: Element>(dev: &Device, n: usize, seed: u64) -> Result<Prepared<T>> {
    let (ha, hb) = inputs::<T>(n, seed);
    let a = dev.upload(&ha)?;
    let b = dev.upload(&hb)?;
    let mut want = vec![T::ZERO; n];
    cpu_serial(&ha, &hb, &mut want);
    Ok(Prepared { ha, hb, a, b, want })
}

/// Runs `rung` on the prepared inputs with the output poisoned (NaN) and
/// compares with the CPU: the sum of two floats is correctly rounded on
/// both, so the results must be bitwise equal.
pub fn check_prepared<T: Element>(dev: &Device, p: &Prepared<T>, rung: Rung) -> Result<Check> {
    let mut c = dev.alloc_filled(p.want.len(), T::from_f64(f64::NAN))?;
    add(dev, rung, ModuleKey::default(), &p.a, &p.b, &mut c)?;
    let got = dev.download(&c)?;
    let mismatches = got
        .iter()
        .zip(&p.want)
        .filter(|(g, w)| !same_value(**g, **w))
        .count();
    let pairs = got
        .iter()
        .zip(p.ha.iter().zip(&p.hb))
        .map(|(g, (a, b))| (g.to_f64(), a.to_f64() + b.to_f64()));
    Ok(Check {
        mismatches,
        rel_err: rel_err_norm_pairs(pairs),
    })
}

/// Runs `rung` on random inputs of length `n` ([`prepare`], then
/// [`check_prepared`]).
pub fn check<T: Element>(dev: &Device, n: usize, rung: Rung, seed: u64) -> Result<Check> {
    check_prepared(dev, &prepare::<T>(dev, n, seed)?, rung)
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
