//! The floating-mean model on the GPU: preparing [`GenBufs`], running the
//! rungs that have a floating-mean kernel (the direct rungs, launch bounds,
//! Taylor), and checking them against the f64 reference.

use super::input::{check_range, even_grid, validate};
use super::ladder::{Rung, Shape};
use super::launch::{Elem, GenBufs, Kernel, launch_gen, not_even, use_long};
use super::model::{General, prepare_general};
use super::phase::{Phases, centre, max_phase, split};
use super::run::{Layout, config_with};
use super::tables::{taylor_plan, taylor_table_long};
use kernels_gpu::lomb::GenScalars;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::runtime::{Device, device::DeviceKind};

/// The rungs the floating-mean model runs on, by CLI name.
pub const GENERAL_RUNGS: &str = "baseline, cached, fast-math, fast-math-fit, regcapN, cubin, \
                                 launch-bounds, launch-bounds-fast, taylor";

/// Whether `rung` has a floating-mean kernel.
pub fn general_supported(rung: Rung) -> bool {
    rung.kernel().has_general()
}

/// The error of a rung without a floating-mean kernel.
pub fn general_unsupported(rung: Rung) -> Error {
    Error::input(
        "--variant",
        format!(
            "`{}` computes SciPy's classic periodogram only; the floating-mean model \
             (--fit-mean, --center-data, --normalization, --dy) runs on {GENERAL_RUNGS}",
            rung.name()
        ),
    )
}

impl<T: Elem> GenBufs<T> {
    /// Validates, prepares the model ([`prepare_general`]), converts to `T`
    /// (times and frequencies split in two parts, `kernels_gpu::lomb::phase`)
    /// and uploads; the output is poisoned with NaN.
    pub fn new(
        dev: &Device,
        x: &[f64],
        y: &[f64],
        dy: Option<&[f64]>,
        freqs: &[f64],
        g: General,
    ) -> Result<Self> {
        validate(x, y, freqs)?;
        check_range::<T>(x, y, freqs)?;
        let p = prepare_general(y, dy, g)?;
        let (_, u) = centre(x);
        use_long::<T>(max_phase(&u, freqs), Phases::Long)?;
        let mut tab = Vec::with_capacity(4 * x.len());
        let mut w_sum = 0.0;
        for ((&uj, &wy), &w) in u.iter().zip(&p.wy).zip(&p.w) {
            let (uh, ul) = split::<T>(uj);
            let wt = T::from_f64(w);
            w_sum += wt.to_f64();
            tab.extend([uh, ul, T::from_f64(wy), wt]);
        }
        let grid = even_grid(freqs);
        let taylor = match grid {
            Some((start, step)) => {
                let plan = taylor_plan(x, step, T::TAYLOR_2TAU_MAX);
                let t = taylor_table_long::<T>(x, &p.wy, Some(&p.w), &plan, start, step);
                Some((dev.upload(&t)?, plan))
            }
            None => None,
        };
        let (fh, fl): (Vec<T>, Vec<T>) = freqs.iter().map(|&v| split::<T>(v)).unzip();
        Ok(GenBufs {
            tab: dev.upload(&tab)?,
            freqs: dev.upload(&fh)?,
            freqs_lo: dev.upload(&fl)?,
            taylor,
            grid,
            out: dev.alloc_filled(freqs.len(), T::from_f64(f64::NAN))?,
            scalars: GenScalars {
                w_sum: T::from_f64(w_sum),
                y_mean: T::from_f64(p.y_mean),
                yy: T::from_f64(p.yy),
                scale: T::from_f64(p.scale),
            },
            opts: p.opts,
            h: T::from_f64(u.iter().fold(0.0f64, |m, v| m.max(v.abs()))),
        })
    }
}

/// Runs `rung` of the floating-mean model once (asynchronous on a GPU,
/// except the baseline: module loaded, launch, wait, unload).
pub fn run_general<T: Elem>(
    dev: &Device,
    rung: Rung,
    b: &mut GenBufs<T>,
    shape: Shape,
) -> Result<()> {
    if !general_supported(rung) {
        return Err(general_unsupported(rung));
    }
    if rung.kernel() == Kernel::Taylor && b.taylor.is_none() {
        return Err(not_even());
    }
    let nf = b.out.len();
    let run = b.taylor.as_ref().map_or(1, |(_, p)| p.run);
    let layout = Layout {
        long: true,
        general: true,
    };
    let cfg = config_with::<T>(rung, nf, shape, run, layout)?;
    match (rung, dev.kind()) {
        (Rung::Baseline, DeviceKind::Gpu(g)) => {
            // The first-call rung: the module is loaded again before every
            // launch, then waited for.
            let entry = Kernel::Direct.general_entry::<T>();
            g.evict(&ptxlab_common::modules::KERNELS, cfg.module, entry)?;
            launch_gen(dev, cfg, Kernel::Direct, b)?;
            Ok(g.synchronize()?)
        }
        _ => launch_gen(dev, cfg, rung.kernel(), b),
    }
}

/// Runs `rung` of the floating-mean model on `(x, y, dy, freqs)` and
/// returns the periodogram in f64.
#[allow(clippy::too_many_arguments)]
pub fn periodogram_general<T: Elem>(
    dev: &Device,
    rung: Rung,
    x: &[f64],
    y: &[f64],
    dy: Option<&[f64]>,
    freqs: &[f64],
    g: General,
    shape: Shape,
) -> Result<Vec<f64>> {
    if !general_supported(rung) {
        return Err(general_unsupported(rung));
    }
    let mut b = GenBufs::<T>::new(dev, x, y, dy, freqs, g)?;
    run_general(dev, rung, &mut b, shape)?;
    Ok(dev.download(&b.out)?.iter().map(|v| v.to_f64()).collect())
}
