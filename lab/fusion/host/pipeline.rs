//! The three-step elementwise pipeline as three kernels ([`unfused`]) and as
//! one ([`fused`]).

use kernels_gpu::fusion as k;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::{Buffer, Device, LaunchConfig};

/// Pipeline coefficients `(a, b, c)` used by the checks and the benchmark.
pub const COEFFS: (f32, f32, f32) = (1.5, -0.25, 0.5);

fn check_lens(what: &str, lens: &[usize]) -> Result<usize> {
    let n = lens[0];
    if lens.iter().any(|&l| l != n) {
        return Err(Error::input(
            what,
            format!("buffer lengths differ: {lens:?}; all must be equal"),
        ));
    }
    if n == 0 {
        return Err(Error::input(what, "length 0; give at least one element"));
    }
    Ok(n)
}

fn config(n: usize) -> Result<LaunchConfig> {
    Ok(LaunchConfig::for_threads(
        n.div_ceil(k::PER_THREAD),
        k::BLOCK,
    )?)
}

/// The pipeline as three kernels: `y = a x + b`, `z = y y`, `w = sqrt(z) + c`.
#[allow(clippy::too_many_arguments)]
pub fn unfused(
    dev: &Device,
    x: &Buffer<f32>,
    y: &mut Buffer<f32>,
    z: &mut Buffer<f32>,
    w: &mut Buffer<f32>,
    a: f32,
    b: f32,
    c: f32,
) -> Result<()> {
    let n = check_lens("fusion pipeline", &[x.len(), y.len(), z.len(), w.len()])?;
    let cfg = config(n)?;
    launch!(dev, cfg, fusion::fusion_axpb_f32(x, &mut *y, a, b))?;
    launch!(dev, cfg, fusion::fusion_square_f32(&*y, &mut *z))?;
    launch!(dev, cfg, fusion::fusion_sqrt_add_f32(&*z, w, c))
}

/// The pipeline as one kernel.
pub fn fused(
    dev: &Device,
    x: &Buffer<f32>,
    w: &mut Buffer<f32>,
    a: f32,
    b: f32,
    c: f32,
) -> Result<()> {
    let n = check_lens("fusion pipeline", &[x.len(), w.len()])?;
    launch!(dev, config(n)?, fusion::fusion_fused_f32(x, w, a, b, c))
}
