//! One run of a rung: its launch configuration, the launch (the baseline's
//! by hand, with a module loaded for the call), and the periodogram.

use super::Options;
use super::ladder::{Rung, Shape};
use super::launch::{Bufs, Elem, Kernel, launch_direct, not_even};
use super::phase::Phases;
use kernels_gpu::lomb::{
    BLOCK, LEAN_FREQS, TAYLOR_BLOCK, lomb_shared_bytes, lomb_shared_long_bytes,
    lomb_tab_shared_bytes, lomb_taylor_gen_shared_bytes, lomb_taylor_shared_bytes, taylor_shape,
};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::runtime::{Device, LaunchConfig, device::DeviceKind};

/// What a launch's shared memory depends on besides the rung.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Layout {
    /// The `_long` kernels (the shared rung stages a third chunk).
    pub long: bool,
    /// The floating-mean kernels (the Taylor rung keeps `6 P` moments).
    pub general: bool,
}

/// The launch configuration of `rung` for `nf` frequencies (`taylor_run`:
/// the run of the Taylor plan, used by that rung only), plain kernels of
/// SciPy's definition.
pub fn config<T: Elem>(
    rung: Rung,
    nf: usize,
    shape: Shape,
    taylor_run: u32,
) -> Result<LaunchConfig> {
    config_with::<T>(rung, nf, shape, taylor_run, Layout::default())
}

/// As [`config`], for the kernels `layout` names.
pub fn config_with<T: Elem>(
    rung: Rung,
    nf: usize,
    shape: Shape,
    taylor_run: u32,
    layout: Layout,
) -> Result<LaunchConfig> {
    let block = shape.block;
    let mut cfg = match rung {
        Rung::FastMathFit => LaunchConfig::for_threads(nf, block)?,
        Rung::FastLean => LaunchConfig::for_threads(nf.div_ceil(LEAN_FREQS), block)?,
        Rung::Taylor => {
            if block != TAYLOR_BLOCK {
                return Err(Error::input(
                    "lomb-scargle launch shape",
                    format!(
                        "the taylor variant needs blocks of {TAYLOR_BLOCK} threads, got {block}"
                    ),
                ));
            }
            // One block per `128 run / lanes` frequencies (1024 for runs of
            // 8 or more).
            let (_, groups) = taylor_shape(taylor_run);
            let blocks = nf.div_ceil((groups * taylor_run) as usize).max(1);
            let shared = if layout.general {
                lomb_taylor_gen_shared_bytes::<T>(T::TAYLOR_P)
            } else {
                lomb_taylor_shared_bytes::<T>(T::TAYLOR_P)
            };
            LaunchConfig::for_threads(blocks * block as usize, block)?.with_shared(shared)
        }
        Rung::Rotate | Rung::RotateFast | Rung::Cheby | Rung::ChebyTab | Rung::ChebyTabPipe => {
            let tabled = matches!(rung, Rung::ChebyTab | Rung::ChebyTabPipe);
            if tabled && block != BLOCK {
                return Err(Error::input(
                    "lomb-scargle launch shape",
                    format!(
                        "the cheby-tab variants need blocks of {BLOCK} threads (its anchor \
                         tables are laid out for them), got {block}"
                    ),
                ));
            }
            let run = match rung {
                Rung::Cheby => T::CHEBY_RUN,
                Rung::ChebyTab | Rung::ChebyTabPipe => T::TAB_RUN,
                _ => T::ROT_RUN,
            };
            let runs = nf.div_ceil(run);
            let blocks = runs
                .div_ceil(block as usize)
                .min(shape.blocks.max(1) as usize * 4)
                .max(1);
            LaunchConfig::for_threads(blocks * block as usize, block)?
        }
        _ => LaunchConfig::for_threads(shape.blocks.max(1) as usize * block as usize, block)?,
    };
    if rung == Rung::Shared {
        cfg = cfg.with_shared(if layout.long {
            lomb_shared_long_bytes::<T>(block as usize)
        } else {
            lomb_shared_bytes::<T>(block as usize)
        });
    }
    if matches!(rung, Rung::ChebyTab | Rung::ChebyTabPipe) {
        cfg = cfg.with_shared(lomb_tab_shared_bytes::<T>());
    }
    Ok(cfg.with_module(rung.module()))
}

/// Runs `rung` once on `dev` (asynchronous on a GPU, except the baseline,
/// which loads the module, launches and waits before unloading it).
pub fn run_rung<T: Elem>(dev: &Device, rung: Rung, b: &mut Bufs<T>, shape: Shape) -> Result<()> {
    let nf = b.out.len();
    let run = b.taylor.as_ref().map_or(1, |(_, p)| p.run);
    let layout = Layout {
        long: b.long,
        general: false,
    };
    let cfg = config_with::<T>(rung, nf, shape, run, layout)?;
    match (rung, dev.kind()) {
        (Rung::Baseline, DeviceKind::Gpu(g)) => {
            // The first-call rung: the module is loaded again before every
            // launch, then waited for.
            let entry = Kernel::Direct.entry::<T>(b.long);
            g.evict(&ptxlab_common::modules::KERNELS, cfg.module, entry)?;
            launch_direct(dev, cfg, Kernel::Direct, b)?;
            Ok(g.synchronize()?)
        }
        (r, _) => launch_direct(dev, cfg, r.kernel(), b),
    }
}

/// Runs `rung` on `(x, y, freqs)` (output poisoned first) and returns the
/// periodogram in f64.
pub fn periodogram<T: Elem>(
    dev: &Device,
    rung: Rung,
    x: &[f64],
    y: &[f64],
    freqs: &[f64],
    opts: Options,
    shape: Shape,
) -> Result<Vec<f64>> {
    periodogram_with::<T>(dev, rung, x, y, freqs, opts, shape, Phases::Auto)
}

/// As [`periodogram`], with the plain or `_long` kernels as `phases` says.
#[allow(clippy::too_many_arguments)]
pub fn periodogram_with<T: Elem>(
    dev: &Device,
    rung: Rung,
    x: &[f64],
    y: &[f64],
    freqs: &[f64],
    opts: Options,
    shape: Shape,
    phases: Phases,
) -> Result<Vec<f64>> {
    let mut b = Bufs::<T>::with_phases(dev, x, y, freqs, opts, phases)?;
    if rung.kernel().needs_even_grid() && b.grid.is_none() {
        return Err(not_even());
    }
    run_rung(dev, rung, &mut b, shape)?;
    Ok(dev.download(&b.out)?.iter().map(|v| v.to_f64()).collect())
}
