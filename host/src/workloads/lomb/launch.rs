//! Typed launchers for every kernel of `kernels_gpu::lomb` (the only place a
//! kernel name appears): the element types, the device buffers and tables
//! of one periodogram, the launch configuration of each rung and one run.

use super::input::{check_range, even_grid, prepare, validate};
use super::ladder::{Rung, Shape};
use super::tables::{
    TAYLOR_2TAU_MAX_F32, TAYLOR_2TAU_MAX_F64, TaylorPlan, anchor_table, recurrence_tables,
    taylor_plan, taylor_table,
};
use super::{Options, TOL_F32, TOL_F64};
use crate::error::{Error, Result};
use crate::launch;
use crate::runtime::{Buffer, Device, DeviceKind, KernelArg, LaunchConfig, ModuleKey};
use cudarc::driver::DeviceRepr;
use kernels_gpu::lomb::{
    BLOCK, CHEBY_RUN_F32, CHEBY_RUN_F64, LEAN_FREQS, ROT_RUN_F32, ROT_RUN_F64, TAB_RUN_F32,
    TAB_RUN_F64, TAYLOR_BLOCK, TAYLOR_P_F32, TAYLOR_P_F64, lomb_shared_bytes,
    lomb_tab_shared_bytes, lomb_taylor_shared_bytes, taylor_shape,
};
use ptxlab_device::math::Real;
use ptxlab_device::precise::Trig;

/// Element types of the Lomb-Scargle kernels.
pub trait Elem:
    Real + Trig + DeviceRepr + Send + Sync + ndarray_npy::WritableElement + ndarray_npy::ReadableElement
{
    /// `f32` / `f64`.
    const NAME: &'static str;
    /// Frequencies per thread of the rotation kernel.
    const ROT_RUN: usize;
    /// Frequencies per thread of the three-term recurrence kernel.
    const CHEBY_RUN: usize;
    /// Frequencies per thread of the table-anchored kernels (rung 11).
    const TAB_RUN: usize;
    /// Taylor terms of the rung-12 kernel.
    const TAYLOR_P: usize;
    /// Largest `|2 tau|` the rung-12 kernel's series may see (see
    /// [`taylor_plan`]).
    const TAYLOR_2TAU_MAX: f64;
    /// Tolerance (max abs error over the peak).
    const TOL: f64;
    /// Kernel name of `kind`.
    fn kernel(kind: Kernel) -> &'static str;
    /// Launches the direct, bounds or shared kernel.
    fn launch_direct(
        dev: &Device,
        cfg: LaunchConfig,
        kind: Kernel,
        b: &mut Bufs<Self>,
    ) -> Result<()>;
    /// Launches a recurrence kernel (`Rotate` or `Cheby`; `Cheby` runs the
    /// rotation kernel where the grid does not suit it, see [`Bufs::cheby`]).
    fn launch_recurrence(
        dev: &Device,
        cfg: LaunchConfig,
        kind: Kernel,
        b: &mut Bufs<Self>,
    ) -> Result<()>;
}

/// The source-level kernels (the build-time rungs reuse `Direct`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// `lomb_direct_*`.
    Direct,
    /// `lomb_bounds_*` (`launch_bounds(128)`).
    Bounds,
    /// `lomb_shared_*`.
    Shared,
    /// `lomb_rotate_*`.
    Rotate,
    /// `lomb_cheby_*`.
    Cheby,
    /// `lomb_cheby_tab_*` (`lomb_rotate_tab_*` where the grid does not suit
    /// the three-term recurrence): anchors from tables.
    ChebyTab,
    /// `lomb_cheby_tabp_*` / `lomb_rotate_tabp_*`: `ChebyTab` with the sample
    /// loop software pipelined.
    ChebyTabPipe,
    /// `lomb_taylor_*`: Taylor moments per run of frequencies.
    Taylor,
    /// `lomb_lean_*`: `LEAN_FREQS` frequencies per thread, four sums, the
    /// least-squares finish.
    Lean,
}

impl Kernel {
    /// Whether it needs an evenly spaced frequency grid (the recurrences).
    pub fn needs_even_grid(&self) -> bool {
        matches!(
            self,
            Kernel::Rotate
                | Kernel::Cheby
                | Kernel::ChebyTab
                | Kernel::ChebyTabPipe
                | Kernel::Taylor
        )
    }
}

/// Device buffers and scalars of one periodogram.
pub struct Bufs<T> {
    /// Sample times.
    pub x: Buffer<T>,
    /// Values (precentered when asked).
    pub y: Buffer<T>,
    /// Frequencies.
    pub freqs: Buffer<T>,
    /// The rotation kernel's table, when the grid is even: `(x_j, y_j,
    /// 1 - cos(step x_j), sin(step x_j))` per sample.
    pub rot: Option<Buffer<T>>,
    /// The three-term recurrence kernel's table, when the grid is even and
    /// the shifted angles `p_j = step x_j + gamma` span at most 2 pi / 3:
    /// `(x_j, y_j, cos p_j, sin p_j)` per sample. `None` otherwise: the
    /// `Cheby` rung then runs the rotation kernel (same accuracy class).
    pub cheby: Option<Buffer<T>>,
    /// The low-part anchor factors of the table-anchored kernels, when the
    /// grid is even: per sample `cos(l R step x_j)` for `l < 16`, then the
    /// 16 `sin` ([`anchor_table`]).
    pub lo: Option<Buffer<T>>,
    /// The Taylor kernels' table and plan, when the grid is even.
    pub taylor: Option<(Buffer<T>, TaylorPlan)>,
    /// The periodogram.
    pub out: Buffer<T>,
    /// 0.5 or `1 / sum y^2`.
    pub scale: T,
    /// `(start, step)` of an even grid.
    pub grid: Option<(f64, f64)>,
}

macro_rules! elem_impl {
    ($t:ty, $name:literal, $run:expr, $crun:expr, $trun:expr, $tol:expr, $direct:ident, $bounds:ident, $shared:ident, $rotate:ident, $cheby:ident, $rtab:ident, $ctab:ident, $rtabp:ident, $ctabp:ident, $taylor:ident, $lean:ident, $tp:expr, $ttau:expr) => {
        impl Elem for $t {
            const NAME: &'static str = $name;
            const ROT_RUN: usize = $run;
            const CHEBY_RUN: usize = $crun;
            const TAB_RUN: usize = $trun;
            const TAYLOR_P: usize = $tp;
            const TAYLOR_2TAU_MAX: f64 = $ttau;
            const TOL: f64 = $tol;
            fn kernel(kind: Kernel) -> &'static str {
                match kind {
                    Kernel::Direct => stringify!($direct),
                    Kernel::Bounds => stringify!($bounds),
                    Kernel::Shared => stringify!($shared),
                    Kernel::Rotate => stringify!($rotate),
                    Kernel::Cheby => stringify!($cheby),
                    Kernel::ChebyTab => stringify!($ctab),
                    Kernel::ChebyTabPipe => stringify!($ctabp),
                    Kernel::Taylor => stringify!($taylor),
                    Kernel::Lean => stringify!($lean),
                }
            }
            fn launch_direct(
                dev: &Device,
                cfg: LaunchConfig,
                kind: Kernel,
                b: &mut Bufs<$t>,
            ) -> Result<()> {
                let (x, y, f, out, s) = (&b.x, &b.y, &b.freqs, &mut b.out, b.scale);
                match kind {
                    Kernel::Direct => launch!(dev, cfg, lomb::$direct(x, y, f, out, s)),
                    Kernel::Bounds => launch!(dev, cfg, lomb::$bounds(x, y, f, out, s)),
                    Kernel::Shared => launch!(dev, cfg, lomb::$shared(x, y, f, out, s)),
                    Kernel::Lean => launch!(dev, cfg, lomb::$lean(x, y, f, out, s)),
                    Kernel::Rotate
                    | Kernel::Cheby
                    | Kernel::ChebyTab
                    | Kernel::ChebyTabPipe
                    | Kernel::Taylor => Self::launch_recurrence(dev, cfg, kind, b),
                }
            }
            fn launch_recurrence(
                dev: &Device,
                cfg: LaunchConfig,
                kind: Kernel,
                b: &mut Bufs<$t>,
            ) -> Result<()> {
                let Some((start, step)) = b.grid else {
                    return Err(not_even());
                };
                let (out, s) = (&mut b.out, b.scale);
                let (start, step) = (start as $t, step as $t);
                if kind == Kernel::Taylor {
                    let (tab, plan) = b.taylor.as_ref().ok_or_else(not_even)?;
                    let h = plan.h as $t;
                    let run = plan.run;
                    return launch!(dev, cfg, lomb::$taylor(tab, out, start, step, h, run, s));
                }
                match (kind, b.cheby.as_ref()) {
                    (Kernel::Cheby, Some(tab)) => {
                        launch!(dev, cfg, lomb::$cheby(tab, out, start, step, s))
                    }
                    (Kernel::ChebyTab | Kernel::ChebyTabPipe, cheby) => {
                        let lo = b.lo.as_ref().ok_or_else(not_even)?;
                        let pipe = kind == Kernel::ChebyTabPipe;
                        match (cheby, pipe) {
                            (Some(tab), false) => {
                                launch!(dev, cfg, lomb::$ctab(tab, lo, out, start, step, s))
                            }
                            (Some(tab), true) => {
                                launch!(dev, cfg, lomb::$ctabp(tab, lo, out, start, step, s))
                            }
                            (None, pipe) => {
                                let tab = b.rot.as_ref().ok_or_else(not_even)?;
                                if pipe {
                                    launch!(dev, cfg, lomb::$rtabp(tab, lo, out, start, step, s))
                                } else {
                                    launch!(dev, cfg, lomb::$rtab(tab, lo, out, start, step, s))
                                }
                            }
                        }
                    }
                    _ => {
                        let tab = b.rot.as_ref().ok_or_else(not_even)?;
                        launch!(dev, cfg, lomb::$rotate(tab, out, start, step, s))
                    }
                }
            }
        }
    };
}
elem_impl!(
    f32,
    "f32",
    ROT_RUN_F32,
    CHEBY_RUN_F32,
    TAB_RUN_F32,
    TOL_F32,
    lomb_direct_f32,
    lomb_bounds_f32,
    lomb_shared_f32,
    lomb_rotate_f32,
    lomb_cheby_f32,
    lomb_rotate_tab_f32,
    lomb_cheby_tab_f32,
    lomb_rotate_tabp_f32,
    lomb_cheby_tabp_f32,
    lomb_taylor_f32,
    lomb_lean_f32,
    TAYLOR_P_F32,
    TAYLOR_2TAU_MAX_F32
);
elem_impl!(
    f64,
    "f64",
    ROT_RUN_F64,
    CHEBY_RUN_F64,
    TAB_RUN_F64,
    TOL_F64,
    lomb_direct_f64,
    lomb_bounds_f64,
    lomb_shared_f64,
    lomb_rotate_f64,
    lomb_cheby_f64,
    lomb_rotate_tab_f64,
    lomb_cheby_tab_f64,
    lomb_rotate_tabp_f64,
    lomb_cheby_tabp_f64,
    lomb_taylor_f64,
    lomb_lean_f64,
    TAYLOR_P_F64,
    TAYLOR_2TAU_MAX_F64
);

pub(super) fn not_even() -> Error {
    Error::input(
        "lomb-scargle frequencies",
        "the rotation variant needs an evenly spaced frequency grid (give --start/--step/--count, \
         or freqs with a constant step); this grid is not evenly spaced, use another variant",
    )
}

impl<T: Elem> Bufs<T> {
    /// Validates, applies the options, converts to `T` and uploads; the output
    /// is poisoned with NaN.
    pub fn new(dev: &Device, x: &[f64], y: &[f64], freqs: &[f64], opts: Options) -> Result<Self> {
        validate(x, y, freqs)?;
        check_range::<T>(x, y, freqs)?;
        let (yy, scale) = prepare(y, opts)?;
        let cv = |v: &[f64]| v.iter().map(|&a| T::from_f64(a)).collect::<Vec<T>>();
        let grid = even_grid(freqs);
        let (rot, cheby, lo, taylor) = match grid {
            Some((_, step)) => {
                let (r, c) = recurrence_tables::<T>(x, &yy, step);
                let plan = taylor_plan(x, step, T::TAYLOR_2TAU_MAX);
                (
                    Some(dev.upload(&r)?),
                    c.map(|c| dev.upload(&c)).transpose()?,
                    Some(dev.upload(&anchor_table::<T>(x, T::TAB_RUN, step))?),
                    Some((dev.upload(&taylor_table::<T>(x, &yy, &plan))?, plan)),
                )
            }
            None => (None, None, None, None),
        };
        Ok(Self {
            x: dev.upload(&cv(x))?,
            y: dev.upload(&cv(&yy))?,
            freqs: dev.upload(&cv(freqs))?,
            rot,
            cheby,
            lo,
            taylor,
            out: dev.alloc_filled(freqs.len(), T::from_f64(f64::NAN))?,
            scale: T::from_f64(scale),
            grid,
        })
    }
    /// Poisons the output again.
    pub fn poison(&mut self, dev: &Device) -> Result<()> {
        let n = self.out.len();
        dev.write(&mut self.out, &vec![T::from_f64(f64::NAN); n])
    }
}

/// The launch configuration of `rung` for `nf` frequencies (`taylor_run`:
/// the run of the Taylor plan, used by that rung only).
pub fn config<T: Elem>(
    rung: Rung,
    nf: usize,
    shape: Shape,
    taylor_run: u32,
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
            LaunchConfig::for_threads(blocks * block as usize, block)?
                .with_shared(lomb_taylor_shared_bytes::<T>(T::TAYLOR_P))
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
        cfg = cfg.with_shared(lomb_shared_bytes::<T>(block as usize));
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
    let cfg = config::<T>(rung, nf, shape, run)?;
    match (rung, dev.kind()) {
        (Rung::Baseline, DeviceKind::Gpu(g)) => {
            let name = T::kernel(Kernel::Direct);
            let (module, _ms) = g.load_uncached(&crate::modules::KERNELS, ModuleKey::PRECISE)?;
            let f = module
                .load_function(name)
                .map_err(|e| Error::driver(format!("cuModuleGetFunction({name})"), e))?;
            let mut p = Vec::new();
            (&b.x).push_params(&mut p);
            (&b.y).push_params(&mut p);
            (&b.freqs).push_params(&mut p);
            (&b.out).push_params(&mut p); // same parameters (pointer, length) as `&mut`
            b.scale.push_params_scalar(&mut p);
            g.launch_function(&f, name, &cfg, &p)?;
            g.synchronize()
        }
        (
            Rung::Rotate
            | Rung::RotateFast
            | Rung::Cheby
            | Rung::ChebyTab
            | Rung::ChebyTabPipe
            | Rung::Taylor,
            _,
        ) => T::launch_recurrence(dev, cfg, rung.kernel(), b),
        (r, _) => T::launch_direct(dev, cfg, r.kernel(), b),
    }
}

/// Scalar parameters of `T` (f32 or f64) for a raw launch.
trait ScalarParam {
    fn push_params_scalar(&self, out: &mut Vec<crate::runtime::Param>);
}
impl<T: Elem> ScalarParam for T {
    fn push_params_scalar(&self, out: &mut Vec<crate::runtime::Param>) {
        if std::mem::size_of::<T>() == 4 {
            out.push(crate::runtime::Param::F32(self.to_f64() as f32));
        } else {
            out.push(crate::runtime::Param::F64(self.to_f64()));
        }
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
    let mut b = Bufs::<T>::new(dev, x, y, freqs, opts)?;
    if rung.kernel().needs_even_grid() && b.grid.is_none() {
        return Err(not_even());
    }
    run_rung(dev, rung, &mut b, shape)?;
    Ok(dev.download(&b.out)?.iter().map(|v| v.to_f64()).collect())
}
