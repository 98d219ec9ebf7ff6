//! Both pipelines against the f64 reference, and [`sim_check`].

use super::{COEFFS, TinyGraph, fused, input, plain, reference, unfused};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::rng::rel_err_norm;
use ptxlab_common::runtime::{Buffer, Device};

/// Runs both pipelines on `n` random elements (outputs poisoned) and returns
/// `(rel err unfused, rel err fused)` against f64.
pub fn check(dev: &Device, n: usize, seed: u64) -> Result<(f64, f64)> {
    let (a, b, c) = COEFFS;
    let hx = input(n, seed);
    let x = dev.upload(&hx)?;
    let mut y = dev.alloc_filled(n, f32::NAN)?;
    let mut z = dev.alloc_filled(n, f32::NAN)?;
    let mut w = dev.alloc_filled(n, f32::NAN)?;
    let mut w2 = dev.alloc_filled(n, f32::NAN)?;
    unfused(dev, &x, &mut y, &mut z, &mut w, a, b, c)?;
    fused(dev, &x, &mut w2, a, b, c)?;
    let want = reference(&hx, a, b, c);
    let e = |buf: &Buffer<f32>| -> Result<f64> {
        let g: Vec<f64> = dev.download(buf)?.into_iter().map(f64::from).collect();
        Ok(rel_err_norm(&g, &want))
    };
    Ok((e(&w)?, e(&w2)?))
}

/// Every fusion kernel on the simulator at odd sizes; the graph path must
/// be refused there with a hint.
pub fn sim_check() -> Result<()> {
    let dev = Device::sim();
    for n in [1usize, 7, 1001] {
        let (eu, ef) = check(&dev, n, n as u64)?;
        if !(eu < 1e-6 && ef < 1e-6) {
            return Err(Error::Verification {
                what: format!("fusion pipeline n={n} (simulator)"),
                detail: format!("rel err unfused {eu:.1e}, fused {ef:.1e}"),
            });
        }
    }
    let mut x = dev.upload(&[0.0f32; 29])?;
    plain(&dev, &mut x, 5)?;
    if dev.download(&x)?.iter().any(|v| *v != 5.0) {
        return Err(Error::Verification {
            what: "tiny kernel (simulator)".into(),
            detail: "5 launches did not add 5".into(),
        });
    }
    match TinyGraph::capture(&dev, &mut x, 3) {
        Err(Error::Runtime(ptxlab_common::runtime::Error::Unsupported { .. })) => Ok(()),
        Err(e) => Err(e),
        Ok(_) => Err(Error::Verification {
            what: "graph capture on the simulator".into(),
            detail: "should be unsupported".into(),
        }),
    }
}
