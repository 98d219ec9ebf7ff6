//! Launchers for the demonstration kernels of `kernels_gpu::demo` (register
//! caps and fast math), with their CPU references.
// Checks are written `!(err < tol)` on purpose: a NaN error must fail them.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use kernels_gpu::demo::DEMO_WIDTH;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::rng::{rel_err_norm, uniform_vec};
use ptxlab_common::runtime::{Device, LaunchConfig, ModuleKey};

/// CPU reference of `demo_regs` (same operation order, in f64).
pub fn regs_reference(x: &[f32]) -> Vec<f64> {
    x.chunks_exact(DEMO_WIDTH)
        .map(|v| {
            let v: Vec<f64> = v.iter().map(|&a| a as f64).collect();
            let mut acc = v.clone();
            for r in 1..8 {
                for k in 0..DEMO_WIDTH {
                    acc[k] = acc[k] * v[(k + r) % DEMO_WIDTH] + v[(k * 7 + r) % DEMO_WIDTH];
                }
            }
            (0..DEMO_WIDTH)
                .map(|k| acc[k] * v[(k + 3) % DEMO_WIDTH])
                .sum()
        })
        .collect()
}

/// Runs `demo_regs` (capped or not) on `threads` threads; returns the
/// relative error against the CPU reference.
pub fn regs(dev: &Device, threads: usize, capped: bool, module: ModuleKey) -> Result<f64> {
    let len = threads.checked_mul(DEMO_WIDTH).ok_or_else(|| {
        Error::input(
            "demo_regs threads",
            format!("{threads} threads x {DEMO_WIDTH} inputs overflow a length; use fewer threads"),
        )
    })?;
    ptxlab_common::runtime::host_mem::check_host_alloc(
        "demo_regs threads",
        len as u128 * 4,
        "use fewer threads",
    )?;
    let hx: Vec<f32> = uniform_vec(5, len, -0.5, 0.5)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    let x = dev.upload(&hx)?;
    let mut out = dev.alloc_filled(threads, f32::NAN)?;
    let cfg = LaunchConfig::for_threads(threads, 128)?.with_module(module);
    if capped {
        launch!(dev, cfg, demo::demo_regs_capped(&x, &mut out))?;
    } else {
        launch!(dev, cfg, demo::demo_regs(&x, &mut out))?;
    }
    let got: Vec<f64> = dev.download(&out)?.into_iter().map(|v| v as f64).collect();
    Ok(rel_err_norm(&got, &regs_reference(&hx)))
}

/// Runs `demo_fast_sincos`; returns the maximum absolute error against
/// `sin(x) cos(x)` in f64 (the SFU's error is absolute, about 1e-6).
pub fn fast_sincos(dev: &Device, n: usize, module: ModuleKey) -> Result<f64> {
    ptxlab_common::runtime::host_mem::check_host_alloc(
        "demo_fast_sincos n",
        n as u128 * 8,
        "use a smaller n",
    )?;
    let hx: Vec<f32> = uniform_vec(9, n, -std::f64::consts::PI, std::f64::consts::PI)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    let x = dev.upload(&hx)?;
    let mut out = dev.alloc_filled(n, f32::NAN)?;
    let cfg = LaunchConfig::for_threads(n, 128)?.with_module(module);
    launch!(dev, cfg, demo::demo_fast_sincos(&x, &mut out))?;
    let got = dev.download(&out)?;
    Ok(got
        .iter()
        .zip(&hx)
        .map(|(g, x)| {
            let x = *x as f64;
            if g.is_finite() {
                (*g as f64 - x.sin() * x.cos()).abs()
            } else {
                f64::INFINITY
            }
        })
        .fold(0.0, f64::max))
}

/// Launches the planted out-of-bounds kernel over a buffer of `n` elements:
/// exactly the thread `i == n` writes past the end (see
/// `kernels_gpu::demo::demo_oob_write`).
pub fn planted_oob_write(dev: &Device, n: usize) -> Result<()> {
    let mut out = dev.alloc_filled(n, 0.0f32)?;
    launch!(
        dev,
        LaunchConfig::for_threads(n + 1, 128)?,
        demo::demo_oob_write(&mut out)
    )?;
    Ok(dev.synchronize()?)
}

/// Launches the planted shared-memory race (a tile reversal without its
/// barrier, `kernels_gpu::demo::demo_race_missing_sync`) over `n` elements
/// in blocks of `block` threads; returns the result.
pub fn planted_race(dev: &Device, n: usize, block: u32) -> Result<Vec<f32>> {
    let hx: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let x = dev.upload(&hx)?;
    let mut out = dev.alloc_filled(n, f32::NAN)?;
    let cfg = LaunchConfig::for_threads(n, block)?
        .with_shared(kernels_gpu::demo::race_shared_bytes(block));
    launch!(dev, cfg, demo::demo_race_missing_sync(&x, &mut out))?;
    Ok(dev.download(&out)?)
}

/// Every demo kernel on the simulator.
pub fn sim_check() -> Result<()> {
    let dev = Device::sim();
    for capped in [false, true] {
        let e = regs(&dev, 45, capped, ModuleKey::default())?;
        if !(e < 1e-5) {
            return Err(Error::Verification {
                what: format!("demo_regs (capped: {capped})"),
                detail: format!("rel err {e:e} > 1e-5"),
            });
        }
    }
    match planted_oob_write(&dev, 100) {
        Err(Error::Runtime(ptxlab_common::runtime::Error::Sim(e)))
            if e.to_string().contains("index 100, length 100") => {}
        other => {
            return Err(Error::Verification {
                what: "demo_oob_write".into(),
                detail: format!(
                    "the simulator should report the planted write past the end, got {other:?}"
                ),
            });
        }
    }
    match planted_race(&dev, 100, 64) {
        Err(Error::Runtime(ptxlab_common::runtime::Error::Sim(e)))
            if matches!(e.fault, ptxlab_device::sim::Fault::Race(_)) => {}
        other => {
            return Err(Error::Verification {
                what: "demo_race_missing_sync".into(),
                detail: format!(
                    "the simulator should report the planted shared-memory race, got {other:?}"
                ),
            });
        }
    }
    let e = fast_sincos(&dev, 77, ModuleKey::default())?;
    if !(e < 1e-5) {
        return Err(Error::Verification {
            what: "demo_fast_sincos".into(),
            detail: format!("max abs err {e:e} > 1e-5"),
        });
    }
    Ok(())
}
