//! Typed launchers for every kernel of `kernels_gpu::lomb` (the only place a
//! kernel name appears): the element types and the device buffers of one
//! periodogram ([`Bufs`]), of the floating-mean model ([`GenBufs`]) and of a
//! batch ([`BatchBufs`]). Preparing them is `bufs.rs`, `general.rs` and
//! `batch.rs`; choosing a launch shape and running a rung is `run.rs`.

use super::phase::Phases;
use super::tables::{TAYLOR_2TAU_MAX_F32, TAYLOR_2TAU_MAX_F64, TaylorPlan};
use super::{TOL_F32, TOL_F64};
use crate::error::{Error, Result};
use crate::launch;
use crate::runtime::{Buffer, Device, LaunchConfig};
use cudarc::driver::DeviceRepr;
use kernels_gpu::lomb::{
    BATCH_RUN_F32, BATCH_RUN_F64, CHEBY_RUN_F32, CHEBY_RUN_F64, PLAIN_PHASE_MAX_F32,
    PLAIN_PHASE_MAX_F64, ROT_RUN_F32, ROT_RUN_F64, SPLIT_PHASE_MAX_F32, TAB_RUN_F32, TAB_RUN_F64,
    TAYLOR_P_F32, TAYLOR_P_F64,
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
    /// Frequencies per thread of the batch rotation kernel.
    const BATCH_RUN: usize;
    /// Taylor terms of the rung-12 kernel.
    const TAYLOR_P: usize;
    /// Largest `|2 tau|` the rung-12 kernel's series may see (see
    /// [`super::taylor_plan`]).
    const TAYLOR_2TAU_MAX: f64;
    /// Tolerance (max abs error over the peak).
    const TOL: f64;
    /// Largest `max |w| max |x - x0|` of the plain kernels (beyond: `_long`).
    const PLAIN_PHASE_MAX: f64;
    /// Largest `max |w| max |x - x0|` of the `_long` kernels.
    const SPLIT_PHASE_MAX: f64;
    /// Kernel name of `kind` (the `_long` one with `long`).
    fn kernel(kind: Kernel, long: bool) -> &'static str;
    /// Kernel name of the floating-mean model's `kind` (`Direct`, `Bounds`,
    /// `Taylor`).
    fn general_kernel(kind: Kernel) -> &'static str;
    /// Kernel name of the batch kernel (`even`: the rotation one).
    fn batch_kernel(even: bool) -> &'static str;
    /// Launches a direct-family kernel (direct, bounds, shared, lean),
    /// plain or `_long` as `b.long` says.
    fn launch_direct(
        dev: &Device,
        cfg: LaunchConfig,
        kind: Kernel,
        b: &mut Bufs<Self>,
    ) -> Result<()>;
    /// Launches an even-grid kernel (rotation, three-term recurrence, table
    /// anchors, Taylor; `Cheby` runs the rotation kernel where the grid does
    /// not suit it, see [`Bufs::cheby`]), plain or `_long`.
    fn launch_recurrence(
        dev: &Device,
        cfg: LaunchConfig,
        kind: Kernel,
        b: &mut Bufs<Self>,
    ) -> Result<()>;
    /// Launches a floating-mean kernel (`Direct`, `Bounds` or `Taylor`).
    fn launch_gen(
        dev: &Device,
        cfg: LaunchConfig,
        kind: Kernel,
        b: &mut GenBufs<Self>,
    ) -> Result<()>;
    /// Launches the batch kernel (rotation on an even grid, else direct).
    fn launch_batch(dev: &Device, cfg: LaunchConfig, b: &mut BatchBufs<Self>) -> Result<()>;
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
    /// Whether the floating-mean model has a kernel of this kind.
    pub fn has_general(&self) -> bool {
        matches!(self, Kernel::Direct | Kernel::Bounds | Kernel::Taylor)
    }
}

/// Device buffers and scalars of one periodogram (SciPy's definition).
pub struct Bufs<T> {
    /// Sample times, centred (`x - x0`); the high parts with `long`.
    pub x: Buffer<T>,
    /// The low parts of the centred times (`long` only).
    pub x_lo: Option<Buffer<T>>,
    /// Values (precentered when asked).
    pub y: Buffer<T>,
    /// Frequencies; the high parts with `long`.
    pub freqs: Buffer<T>,
    /// The low parts of the frequencies (`long` only).
    pub freqs_lo: Option<Buffer<T>>,
    /// The rotation kernel's table, when the grid is even: `(u_j, y_j,
    /// 1 - cos(step u_j), sin(step u_j))` per sample, or with `long` the 8
    /// values of [`super::recurrence_tables_long`].
    pub rot: Option<Buffer<T>>,
    /// The three-term recurrence kernel's table, when the grid is even and
    /// the shifted angles `p_j = step u_j + gamma` span at most 2 pi / 3:
    /// `(u_j, y_j, cos p_j, sin p_j)` per sample (8 values with `long`).
    /// `None` otherwise: the `Cheby` rung then runs the rotation kernel
    /// (same accuracy class).
    pub cheby: Option<Buffer<T>>,
    /// The low-part anchor factors of the table-anchored kernels, when the
    /// grid is even: per sample `cos(l R step u_j)` for `l < 16`, then the
    /// 16 `sin` ([`super::anchor_table`]).
    pub lo: Option<Buffer<T>>,
    /// The Taylor kernels' table and plan, when the grid is even.
    pub taylor: Option<(Buffer<T>, TaylorPlan)>,
    /// The periodogram.
    pub out: Buffer<T>,
    /// 0.5 or `1 / sum y^2`.
    pub scale: T,
    /// `(start, step)` of an even grid.
    pub grid: Option<(f64, f64)>,
    /// The `_long` kernels (split phases) instead of the plain ones.
    pub long: bool,
}

/// Device buffers and scalars of one floating-mean periodogram.
pub struct GenBufs<T> {
    /// Per sample `(u_hi, u_lo, w y, w)`, `u = x - x0`
    /// (`kernels_gpu::lomb::GEN_STRIDE`).
    pub tab: Buffer<T>,
    /// Frequencies, high parts.
    pub freqs: Buffer<T>,
    /// Frequencies, low parts.
    pub freqs_lo: Buffer<T>,
    /// The Taylor kernel's table and plan, when the grid is even.
    pub taylor: Option<(Buffer<T>, TaylorPlan)>,
    /// `(start, step)` of an even grid.
    pub grid: Option<(f64, f64)>,
    /// The periodogram.
    pub out: Buffer<T>,
    /// `sum w` of the weights as rounded to `T`.
    pub w_sum: T,
    /// `sum w y`.
    pub y_mean: T,
    /// `sum w y^2`.
    pub yy: T,
    /// The scale of `NORM_SCALE`.
    pub scale: T,
    /// The largest `|x - x0|` (`kernels_gpu::lomb::GEN_LOW_PHASE`).
    pub h: T,
    /// 1 to fit the mean.
    pub fit_mean: u32,
    /// `NORM_SCALE`, `NORM_MODEL` or `NORM_LOG`.
    pub mode: u32,
}

/// Device buffers of a batch of curves on one frequency grid.
pub struct BatchBufs<T> {
    /// The rotation table (even grid,
    /// `kernels_gpu::lomb::BATCH_ROT_STRIDE` values per sample) or the
    /// direct one (`GEN_STRIDE`).
    pub tab: Buffer<T>,
    /// Sample offsets of the curves (`curves + 1` values).
    pub offsets: Buffer<u32>,
    /// Per curve `(sum w, sum w y, sum w y^2, scale, h)`.
    pub curves: Buffer<T>,
    /// Frequencies, high and low parts (uneven grids only).
    pub freqs: Option<(Buffer<T>, Buffer<T>)>,
    /// `(start, step)` of an even grid.
    pub grid: Option<(f64, f64)>,
    /// Frequencies of the grid.
    pub nf: usize,
    /// The periodograms, `curves x nf`, curves by rows.
    pub out: Buffer<T>,
    /// 1 to fit the mean.
    pub fit_mean: u32,
    /// `NORM_SCALE`, `NORM_MODEL` or `NORM_LOG`.
    pub mode: u32,
}

impl<T> BatchBufs<T> {
    /// Curves in the batch.
    pub fn curves(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }
}

/// The error of an even-grid rung asked for on another grid.
pub(super) fn not_even() -> Error {
    Error::input(
        "lomb-scargle frequencies",
        "the rotation variant needs an evenly spaced frequency grid (give --start/--step/--count, \
         or freqs with a constant step); this grid is not evenly spaced, use another variant",
    )
}

/// The plain or `_long` kernel of a direct-family launch: the same
/// arguments, plus the low parts for `_long`.
macro_rules! direct_pair {
    ($dev:expr, $cfg:expr, $b:expr, $plain:ident, $long:ident) => {{
        let b = $b;
        let (x, y, f, out, s) = (&b.x, &b.y, &b.freqs, &mut b.out, b.scale);
        match (&b.x_lo, &b.freqs_lo) {
            (Some(xl), Some(fl)) if b.long => {
                launch!($dev, $cfg, lomb::$long(x, xl, y, f, fl, out, s))
            }
            _ => launch!($dev, $cfg, lomb::$plain(x, y, f, out, s)),
        }
    }};
}

/// The plain or `_long` kernel of an even-grid launch with the same
/// arguments (the table's layout says which).
macro_rules! grid_pair {
    ($dev:expr, $cfg:expr, $long:expr, $plain_k:ident, $long_k:ident, ($($arg:expr),*)) => {
        if $long {
            launch!($dev, $cfg, lomb::$long_k($($arg),*))
        } else {
            launch!($dev, $cfg, lomb::$plain_k($($arg),*))
        }
    };
}

macro_rules! elem_impl {
    (
        $t:ty, $name:literal, runs($run:expr, $crun:expr, $trun:expr, $brun:expr),
        tol($tol:expr), taylor($tp:expr, $ttau:expr), phase($pmax:expr, $smax:expr),
        direct($direct:ident, $directl:ident), bounds($bounds:ident, $boundsl:ident),
        shared($shared:ident, $sharedl:ident), lean($lean:ident, $leanl:ident),
        rotate($rotate:ident, $rotatel:ident), cheby($cheby:ident, $chebyl:ident),
        rtab($rtab:ident, $rtabl:ident), ctab($ctab:ident, $ctabl:ident),
        rtabp($rtabp:ident, $rtabpl:ident), ctabp($ctabp:ident, $ctabpl:ident),
        taylor($taylor:ident, $taylorl:ident),
        general($gen:ident, $genb:ident, $tgen:ident), batch($brot:ident, $bdir:ident)
    ) => {
        impl Elem for $t {
            const NAME: &'static str = $name;
            const ROT_RUN: usize = $run;
            const CHEBY_RUN: usize = $crun;
            const TAB_RUN: usize = $trun;
            const BATCH_RUN: usize = $brun;
            const TAYLOR_P: usize = $tp;
            const TAYLOR_2TAU_MAX: f64 = $ttau;
            const TOL: f64 = $tol;
            const PLAIN_PHASE_MAX: f64 = $pmax;
            const SPLIT_PHASE_MAX: f64 = $smax;
            fn kernel(kind: Kernel, long: bool) -> &'static str {
                let (plain, long_name) = match kind {
                    Kernel::Direct => (stringify!($direct), stringify!($directl)),
                    Kernel::Bounds => (stringify!($bounds), stringify!($boundsl)),
                    Kernel::Shared => (stringify!($shared), stringify!($sharedl)),
                    Kernel::Rotate => (stringify!($rotate), stringify!($rotatel)),
                    Kernel::Cheby => (stringify!($cheby), stringify!($chebyl)),
                    Kernel::ChebyTab => (stringify!($ctab), stringify!($ctabl)),
                    Kernel::ChebyTabPipe => (stringify!($ctabp), stringify!($ctabpl)),
                    Kernel::Taylor => (stringify!($taylor), stringify!($taylorl)),
                    Kernel::Lean => (stringify!($lean), stringify!($leanl)),
                };
                if long { long_name } else { plain }
            }
            fn general_kernel(kind: Kernel) -> &'static str {
                match kind {
                    Kernel::Taylor => stringify!($tgen),
                    Kernel::Bounds => stringify!($genb),
                    _ => stringify!($gen),
                }
            }
            fn batch_kernel(even: bool) -> &'static str {
                if even {
                    stringify!($brot)
                } else {
                    stringify!($bdir)
                }
            }
            fn launch_direct(
                dev: &Device,
                cfg: LaunchConfig,
                kind: Kernel,
                b: &mut Bufs<$t>,
            ) -> Result<()> {
                match kind {
                    Kernel::Direct => direct_pair!(dev, cfg, b, $direct, $directl),
                    Kernel::Bounds => direct_pair!(dev, cfg, b, $bounds, $boundsl),
                    Kernel::Shared => direct_pair!(dev, cfg, b, $shared, $sharedl),
                    Kernel::Lean => direct_pair!(dev, cfg, b, $lean, $leanl),
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
                let (out, s, long) = (&mut b.out, b.scale, b.long);
                let (start, step) = (start as $t, step as $t);
                if kind == Kernel::Taylor {
                    let (tab, plan) = b.taylor.as_ref().ok_or_else(not_even)?;
                    let (h, run) = (plan.h as $t, plan.run);
                    return grid_pair!(
                        dev,
                        cfg,
                        long,
                        $taylor,
                        $taylorl,
                        (tab, out, start, step, h, run, s)
                    );
                }
                match (kind, b.cheby.as_ref()) {
                    (Kernel::Cheby, Some(tab)) => {
                        grid_pair!(dev, cfg, long, $cheby, $chebyl, (tab, out, start, step, s))
                    }
                    (Kernel::ChebyTab | Kernel::ChebyTabPipe, cheby) => {
                        let lo = b.lo.as_ref().ok_or_else(not_even)?;
                        let pipe = kind == Kernel::ChebyTabPipe;
                        let args_rot = b.rot.as_ref().ok_or_else(not_even)?;
                        match (cheby, pipe) {
                            (Some(tab), false) => grid_pair!(
                                dev,
                                cfg,
                                long,
                                $ctab,
                                $ctabl,
                                (tab, lo, out, start, step, s)
                            ),
                            (Some(tab), true) => grid_pair!(
                                dev,
                                cfg,
                                long,
                                $ctabp,
                                $ctabpl,
                                (tab, lo, out, start, step, s)
                            ),
                            (None, false) => grid_pair!(
                                dev,
                                cfg,
                                long,
                                $rtab,
                                $rtabl,
                                (args_rot, lo, out, start, step, s)
                            ),
                            (None, true) => grid_pair!(
                                dev,
                                cfg,
                                long,
                                $rtabp,
                                $rtabpl,
                                (args_rot, lo, out, start, step, s)
                            ),
                        }
                    }
                    _ => {
                        let tab = b.rot.as_ref().ok_or_else(not_even)?;
                        grid_pair!(
                            dev,
                            cfg,
                            long,
                            $rotate,
                            $rotatel,
                            (tab, out, start, step, s)
                        )
                    }
                }
            }
            fn launch_gen(
                dev: &Device,
                cfg: LaunchConfig,
                kind: Kernel,
                b: &mut GenBufs<$t>,
            ) -> Result<()> {
                let (ws, ym, yy, sc, hh, fm, md) =
                    (b.w_sum, b.y_mean, b.yy, b.scale, b.h, b.fit_mean, b.mode);
                let out = &mut b.out;
                match kind {
                    Kernel::Taylor => {
                        let Some((start, step)) = b.grid else {
                            return Err(not_even());
                        };
                        let (tab, plan) = b.taylor.as_ref().ok_or_else(not_even)?;
                        let (start, step, h, run) =
                            (start as $t, step as $t, plan.h as $t, plan.run);
                        launch!(
                            dev,
                            cfg,
                            lomb::$tgen(tab, out, start, step, h, run, ws, ym, yy, sc, fm, md)
                        )
                    }
                    Kernel::Bounds => {
                        let (t, f, fl) = (&b.tab, &b.freqs, &b.freqs_lo);
                        launch!(
                            dev,
                            cfg,
                            lomb::$genb(t, f, fl, out, ws, ym, yy, sc, hh, fm, md)
                        )
                    }
                    Kernel::Direct => {
                        let (t, f, fl) = (&b.tab, &b.freqs, &b.freqs_lo);
                        launch!(
                            dev,
                            cfg,
                            lomb::$gen(t, f, fl, out, ws, ym, yy, sc, hh, fm, md)
                        )
                    }
                    other => Err(Error::input(
                        "lomb-scargle variant",
                        format!("the floating-mean model has no {other:?} kernel"),
                    )),
                }
            }
            fn launch_batch(dev: &Device, cfg: LaunchConfig, b: &mut BatchBufs<$t>) -> Result<()> {
                let (tab, off, cur, out) = (&b.tab, &b.offsets, &b.curves, &mut b.out);
                let (fm, md) = (b.fit_mean, b.mode);
                match (&b.freqs, b.grid) {
                    (Some((f, fl)), _) => {
                        launch!(dev, cfg, lomb::$bdir(tab, off, cur, f, fl, out, fm, md))
                    }
                    (None, Some((start, step))) => {
                        let (start, step) = (start as $t, step as $t);
                        launch!(
                            dev,
                            cfg,
                            lomb::$brot(tab, off, cur, out, start, step, fm, md)
                        )
                    }
                    (None, None) => Err(not_even()),
                }
            }
        }
    };
}

elem_impl!(
    f32,
    "f32",
    runs(ROT_RUN_F32, CHEBY_RUN_F32, TAB_RUN_F32, BATCH_RUN_F32),
    tol(TOL_F32),
    taylor(TAYLOR_P_F32, TAYLOR_2TAU_MAX_F32),
    phase(PLAIN_PHASE_MAX_F32, SPLIT_PHASE_MAX_F32),
    direct(lomb_direct_f32, lomb_direct_long_f32),
    bounds(lomb_bounds_f32, lomb_bounds_long_f32),
    shared(lomb_shared_f32, lomb_shared_long_f32),
    lean(lomb_lean_f32, lomb_lean_long_f32),
    rotate(lomb_rotate_f32, lomb_rotate_long_f32),
    cheby(lomb_cheby_f32, lomb_cheby_long_f32),
    rtab(lomb_rotate_tab_f32, lomb_rotate_tab_long_f32),
    ctab(lomb_cheby_tab_f32, lomb_cheby_tab_long_f32),
    rtabp(lomb_rotate_tabp_f32, lomb_rotate_tabp_long_f32),
    ctabp(lomb_cheby_tabp_f32, lomb_cheby_tabp_long_f32),
    taylor(lomb_taylor_f32, lomb_taylor_long_f32),
    general(lomb_gen_f32, lomb_gen_bounds_f32, lomb_taylor_gen_f32),
    batch(lomb_batch_rotate_f32, lomb_batch_direct_f32)
);
elem_impl!(
    f64,
    "f64",
    runs(ROT_RUN_F64, CHEBY_RUN_F64, TAB_RUN_F64, BATCH_RUN_F64),
    tol(TOL_F64),
    taylor(TAYLOR_P_F64, TAYLOR_2TAU_MAX_F64),
    phase(PLAIN_PHASE_MAX_F64, f64::MAX),
    direct(lomb_direct_f64, lomb_direct_long_f64),
    bounds(lomb_bounds_f64, lomb_bounds_long_f64),
    shared(lomb_shared_f64, lomb_shared_long_f64),
    lean(lomb_lean_f64, lomb_lean_long_f64),
    rotate(lomb_rotate_f64, lomb_rotate_long_f64),
    cheby(lomb_cheby_f64, lomb_cheby_long_f64),
    rtab(lomb_rotate_tab_f64, lomb_rotate_tab_long_f64),
    ctab(lomb_cheby_tab_f64, lomb_cheby_tab_long_f64),
    rtabp(lomb_rotate_tabp_f64, lomb_rotate_tabp_long_f64),
    ctabp(lomb_cheby_tabp_f64, lomb_cheby_tabp_long_f64),
    taylor(lomb_taylor_f64, lomb_taylor_long_f64),
    general(lomb_gen_f64, lomb_gen_bounds_f64, lomb_taylor_gen_f64),
    batch(lomb_batch_rotate_f64, lomb_batch_direct_f64)
);

/// Whether a run of `T` on phases up to `phase` uses the `_long` kernels;
/// an error where even those cannot hold the phase (f32 beyond
/// [`Elem::SPLIT_PHASE_MAX`]).
pub fn use_long<T: Elem>(phase: f64, phases: Phases) -> Result<bool> {
    if phase > T::SPLIT_PHASE_MAX {
        return Err(Error::input(
            "lomb-scargle phases",
            format!(
                "max |w| * max |x - x0| = {phase:.3e} rad is beyond what {} kernels can reduce \
                 exactly ({:.1e} rad); use --precision f64, or fewer time units (rescale x and the \
                 frequencies)",
                T::NAME,
                T::SPLIT_PHASE_MAX
            ),
        ));
    }
    Ok(match phases {
        Phases::Auto => phase > T::PLAIN_PHASE_MAX,
        Phases::Plain => false,
        Phases::Long => true,
    })
}
