//! Typed launchers for every kernel of `kernels_gpu::lomb` (the only place a
//! kernel is named): the element types and the device buffers of one
//! periodogram ([`Bufs`]), of the floating-mean model ([`GenBufs`]) and of a
//! batch ([`BatchBufs`]). Preparing them is `bufs.rs`, `general.rs` and
//! `batch.rs`; choosing a launch shape and running a rung is `run.rs`.

use super::phase::Phases;
use super::tables::{TAYLOR_2TAU_MAX_F32, TAYLOR_2TAU_MAX_F64, TaylorPlan};
use super::{TOL_F32, TOL_F64};
use kernels_gpu::lomb::{
    self as kl, PLAIN_PHASE_MAX_F32, PLAIN_PHASE_MAX_F64, SPLIT_PHASE_MAX_F32,
};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::{Buffer, Device, LaunchConfig};

/// Element types of the Lomb-Scargle kernels: `f32` and `f64`, the types
/// every kernel was built for (each `kl::<kernel>::Built` bound says that
/// one kernel has an instance for `Self`, so generic code launches
/// `kl::<kernel>::<T>` without naming a type; [`Even`] bundles the
/// even-grid kernels, which have a plain and a `LONG` instance per type).
/// The per-type run lengths and Taylor terms come from
/// [`kl::LombFloat`] (`T::ROT_RUN`, `T::TAYLOR_P`, ...).
pub trait Elem:
    kl::LombFloat
    + ptxlab_common::runtime::Element
    + Send
    + Sync
    + ndarray_npy::WritableElement
    + ndarray_npy::ReadableElement
    + kl::lomb_direct::Built
    + kl::lomb_bounds::Built
    + kl::lomb_shared::Built
    + kl::lomb_lean::Built
    + kl::lomb_direct_long::Built
    + kl::lomb_bounds_long::Built
    + kl::lomb_shared_long::Built
    + kl::lomb_lean_long::Built
    + Even<false>
    + Even<true>
    + kl::lomb_gen::Built
    + kl::lomb_gen_bounds::Built
    + kl::lomb_taylor_gen::Built
    + kl::lomb_batch_rotate::Built
    + kl::lomb_batch_direct::Built
    + kl::lomb_row_peaks::Built
{
    /// `f32` / `f64`.
    const NAME: &'static str;
    /// Largest `|2 tau|` the rung-12 kernel's series may see (see
    /// [`super::taylor_plan`]).
    const TAYLOR_2TAU_MAX: f64;
    /// Tolerance (max abs error over the peak).
    const TOL: f64;
    /// Largest `max |w| max |x - x0|` of the plain kernels (beyond: `_long`).
    const PLAIN_PHASE_MAX: f64;
    /// Largest `max |w| max |x - x0|` of the `_long` kernels.
    const SPLIT_PHASE_MAX: f64;
}

impl Elem for f32 {
    const NAME: &'static str = "f32";
    const TAYLOR_2TAU_MAX: f64 = TAYLOR_2TAU_MAX_F32;
    const TOL: f64 = TOL_F32;
    const PLAIN_PHASE_MAX: f64 = PLAIN_PHASE_MAX_F32;
    const SPLIT_PHASE_MAX: f64 = SPLIT_PHASE_MAX_F32;
}

impl Elem for f64 {
    const NAME: &'static str = "f64";
    const TAYLOR_2TAU_MAX: f64 = TAYLOR_2TAU_MAX_F64;
    const TOL: f64 = TOL_F64;
    const PLAIN_PHASE_MAX: f64 = PLAIN_PHASE_MAX_F64;
    const SPLIT_PHASE_MAX: f64 = f64::MAX;
}

/// The even-grid kernels (rotation, three-term recurrence, table anchors
/// with either step, plain and pipelined, Taylor) built for `Self` with
/// split phases (`LONG`) or without.
pub trait Even<const LONG: bool>:
    kl::lomb_rotate::Built<LONG>
    + kl::lomb_cheby::Built<LONG>
    + kl::lomb_tab::Built<true, false, LONG>
    + kl::lomb_tab::Built<false, false, LONG>
    + kl::lomb_tab::Built<true, true, LONG>
    + kl::lomb_tab::Built<false, true, LONG>
    + kl::lomb_taylor::Built<LONG>
{
}

impl<const LONG: bool, T> Even<LONG> for T where
    T: kl::lomb_rotate::Built<LONG>
        + kl::lomb_cheby::Built<LONG>
        + kl::lomb_tab::Built<true, false, LONG>
        + kl::lomb_tab::Built<false, false, LONG>
        + kl::lomb_tab::Built<true, true, LONG>
        + kl::lomb_tab::Built<false, true, LONG>
        + kl::lomb_taylor::Built<LONG>
{
}

/// The source-level kernels (the build-time rungs reuse `Direct`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// `lomb_direct`.
    Direct,
    /// `lomb_bounds` (`launch_bounds(128)`).
    Bounds,
    /// `lomb_shared`.
    Shared,
    /// `lomb_rotate`.
    Rotate,
    /// `lomb_cheby`.
    Cheby,
    /// `lomb_tab` with the three-term step (`lomb_cheby_tab_*`; the
    /// rotation, `lomb_rotate_tab_*`, where the grid does not suit the
    /// three-term recurrence): anchors from tables.
    ChebyTab,
    /// `lomb_tab` pipelined (`lomb_cheby_tabp_*` / `lomb_rotate_tabp_*`):
    /// `ChebyTab` with the sample loop software pipelined.
    ChebyTabPipe,
    /// `lomb_taylor`: Taylor moments per run of frequencies.
    Taylor,
    /// `lomb_lean`: `LEAN_FREQS` frequencies per thread, four sums, the
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
    /// The PTX entry of this kind for `T`, the `_long` one with `long`
    /// (the resource report, the baseline's module); `ChebyTab` and
    /// `ChebyTabPipe` name the three-term kernels.
    pub fn entry<T: Elem>(&self, long: bool) -> &'static str {
        if long {
            self.entry_of::<true, T>()
        } else {
            self.entry_of::<false, T>()
        }
    }
    fn entry_of<const LONG: bool, T: Elem + Even<LONG>>(&self) -> &'static str {
        match (self, LONG) {
            (Kernel::Direct, false) => <T as kl::lomb_direct::Built>::ENTRY,
            (Kernel::Direct, true) => <T as kl::lomb_direct_long::Built>::ENTRY,
            (Kernel::Bounds, false) => <T as kl::lomb_bounds::Built>::ENTRY,
            (Kernel::Bounds, true) => <T as kl::lomb_bounds_long::Built>::ENTRY,
            (Kernel::Shared, false) => <T as kl::lomb_shared::Built>::ENTRY,
            (Kernel::Shared, true) => <T as kl::lomb_shared_long::Built>::ENTRY,
            (Kernel::Lean, false) => <T as kl::lomb_lean::Built>::ENTRY,
            (Kernel::Lean, true) => <T as kl::lomb_lean_long::Built>::ENTRY,
            (Kernel::Rotate, _) => <T as kl::lomb_rotate::Built<LONG>>::ENTRY,
            (Kernel::Cheby, _) => <T as kl::lomb_cheby::Built<LONG>>::ENTRY,
            (Kernel::ChebyTab, _) => <T as kl::lomb_tab::Built<true, false, LONG>>::ENTRY,
            (Kernel::ChebyTabPipe, _) => <T as kl::lomb_tab::Built<true, true, LONG>>::ENTRY,
            (Kernel::Taylor, _) => <T as kl::lomb_taylor::Built<LONG>>::ENTRY,
        }
    }
    /// The PTX entry of the floating-mean model's kernel of this kind for
    /// `T` (`Bounds`, `Taylor`; the direct one otherwise).
    pub fn general_entry<T: Elem>(&self) -> &'static str {
        match self {
            Kernel::Taylor => <T as kl::lomb_taylor_gen::Built>::ENTRY,
            Kernel::Bounds => <T as kl::lomb_gen_bounds::Built>::ENTRY,
            _ => <T as kl::lomb_gen::Built>::ENTRY,
        }
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
    /// The curve's scalars, as the kernels take them.
    pub scalars: kl::GenScalars<T>,
    /// Fit the mean, and the normalization.
    pub opts: kl::GenOptions,
    /// The largest `|x - x0|` (`kernels_gpu::lomb::GEN_LOW_PHASE`).
    pub h: T,
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
    /// Fit the mean, and the normalization (every curve's).
    pub opts: kl::GenOptions,
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
        "the rotation variant needs an evenly spaced frequency grid (give --start/--step/--n, \
         or freqs with a constant step); this grid is not evenly spaced, use another variant",
    )
}

/// Launches a kernel of `kind` on `b`: a direct-family kernel (direct,
/// bounds, shared, lean) or an even-grid one ([`launch_recurrence`]), plain
/// or `_long` as `b.long` says.
pub fn launch_direct<T: Elem>(
    dev: &Device,
    cfg: LaunchConfig,
    kind: Kernel,
    b: &mut Bufs<T>,
) -> Result<()> {
    if kind.needs_even_grid() {
        return launch_recurrence(dev, cfg, kind, b);
    }
    let (x, y, f, out, s) = (&b.x, &b.y, &b.freqs, &mut b.out, b.scale);
    if let (Some(xl), Some(fl), true) = (&b.x_lo, &b.freqs_lo, b.long) {
        // The `_long` kernels take the low halves of the times and the
        // frequencies too.
        macro_rules! long {
            ($kernel:ident) => {
                launch!(dev, cfg, lomb::$kernel::<T>(x, xl, y, f, fl, out, s))
            };
        }
        match kind {
            Kernel::Bounds => long!(lomb_bounds_long),
            Kernel::Shared => long!(lomb_shared_long),
            Kernel::Lean => long!(lomb_lean_long),
            _ => long!(lomb_direct_long),
        }
    } else {
        match kind {
            Kernel::Bounds => launch!(dev, cfg, lomb::lomb_bounds::<T>(x, y, f, out, s)),
            Kernel::Shared => launch!(dev, cfg, lomb::lomb_shared::<T>(x, y, f, out, s)),
            Kernel::Lean => launch!(dev, cfg, lomb::lomb_lean::<T>(x, y, f, out, s)),
            _ => launch!(dev, cfg, lomb::lomb_direct::<T>(x, y, f, out, s)),
        }
    }
}

/// Launches an even-grid kernel (rotation, three-term recurrence, table
/// anchors, Taylor; `Cheby` runs the rotation kernel where the grid does not
/// suit it, see [`Bufs::cheby`]), plain or `_long` as `b.long` says.
pub fn launch_recurrence<T: Elem>(
    dev: &Device,
    cfg: LaunchConfig,
    kind: Kernel,
    b: &mut Bufs<T>,
) -> Result<()> {
    if b.long {
        launch_even::<true, T>(dev, cfg, kind, b)
    } else {
        launch_even::<false, T>(dev, cfg, kind, b)
    }
}

/// [`launch_recurrence`] with the `LONG` instances or the plain ones (the
/// tables of `b` are laid out for them).
fn launch_even<const LONG: bool, T: Elem + Even<LONG>>(
    dev: &Device,
    cfg: LaunchConfig,
    kind: Kernel,
    b: &mut Bufs<T>,
) -> Result<()> {
    let grid = grid_of::<T>(b.grid)?;
    let (out, s) = (&mut b.out, b.scale);
    let rot = || b.rot.as_ref().ok_or_else(not_even);
    match (kind, &b.cheby) {
        (Kernel::Taylor, _) => {
            let (tab, plan) = b.taylor.as_ref().ok_or_else(not_even)?;
            let (h, run) = taylor_runs::<T>(plan);
            launch!(
                dev,
                cfg,
                lomb::lomb_taylor::<LONG, T>(tab, out, grid, h, run, s)
            )
        }
        (Kernel::Cheby, Some(tab)) => {
            launch!(dev, cfg, lomb::lomb_cheby::<LONG, T>(tab, out, grid, s))
        }
        (Kernel::ChebyTab | Kernel::ChebyTabPipe, cheby) => {
            let lo = b.lo.as_ref().ok_or_else(not_even)?;
            let rot = rot()?;
            match (cheby, kind == Kernel::ChebyTabPipe) {
                (Some(tab), false) => {
                    launch_tab::<true, false, LONG, T>(dev, cfg, tab, lo, out, grid, s)
                }
                (Some(tab), true) => {
                    launch_tab::<true, true, LONG, T>(dev, cfg, tab, lo, out, grid, s)
                }
                (None, false) => {
                    launch_tab::<false, false, LONG, T>(dev, cfg, rot, lo, out, grid, s)
                }
                (None, true) => launch_tab::<false, true, LONG, T>(dev, cfg, rot, lo, out, grid, s),
            }
        }
        _ => launch!(dev, cfg, lomb::lomb_rotate::<LONG, T>(rot()?, out, grid, s)),
    }
}

/// The even grid `(start, step)` in `T`, as the kernels take it; the
/// error of an even-grid kernel on another grid.
fn grid_of<T: Elem>(grid: Option<(f64, f64)>) -> Result<kl::Grid<T>> {
    let (start, step) = grid.ok_or_else(not_even)?;
    Ok(kl::Grid {
        start: T::from_f64(start),
        step: T::from_f64(step),
    })
}

/// The half-span of the times and the run of a Taylor kernel, `(h, run)`,
/// as `plan` cut the grid.
fn taylor_runs<T: Elem>(plan: &TaylorPlan) -> (T, u32) {
    (T::from_f64(plan.h), plan.run)
}

/// Launches the table-anchored kernel with the three-term step (`CHEBY`)
/// or the rotation, pipelined (`PIPE`) or not; `tab` is that step's table.
fn launch_tab<
    const CHEBY: bool,
    const PIPE: bool,
    const LONG: bool,
    T: Elem + kl::lomb_tab::Built<CHEBY, PIPE, LONG>,
>(
    dev: &Device,
    cfg: LaunchConfig,
    tab: &Buffer<T>,
    lo: &Buffer<T>,
    out: &mut Buffer<T>,
    grid: kl::Grid<T>,
    scale: T,
) -> Result<()> {
    launch!(
        dev,
        cfg,
        lomb::lomb_tab::<CHEBY, PIPE, LONG, T>(tab, lo, out, grid, scale)
    )
}

/// Launches a floating-mean kernel (`Direct`, `Bounds` or `Taylor`).
pub fn launch_gen<T: Elem>(
    dev: &Device,
    cfg: LaunchConfig,
    kind: Kernel,
    b: &mut GenBufs<T>,
) -> Result<()> {
    let (scalars, opts, h) = (b.scalars, b.opts, b.h);
    let (t, f, fl, out) = (&b.tab, &b.freqs, &b.freqs_lo, &mut b.out);
    match kind {
        Kernel::Taylor => {
            let grid = grid_of::<T>(b.grid)?;
            let (tab, plan) = b.taylor.as_ref().ok_or_else(not_even)?;
            let (hs, run) = taylor_runs::<T>(plan);
            launch!(
                dev,
                cfg,
                lomb::lomb_taylor_gen::<T>(tab, out, grid, hs, run, scalars, opts)
            )
        }
        Kernel::Bounds => launch!(
            dev,
            cfg,
            lomb::lomb_gen_bounds::<T>(t, f, fl, out, scalars, opts, h)
        ),
        Kernel::Direct => launch!(
            dev,
            cfg,
            lomb::lomb_gen::<T>(t, f, fl, out, scalars, opts, h)
        ),
        other => Err(Error::input(
            "lomb-scargle variant",
            format!("the floating-mean model has no {other:?} kernel"),
        )),
    }
}

/// Launches the batch kernel (rotation on an even grid, else direct).
pub fn launch_batch<T: Elem>(dev: &Device, cfg: LaunchConfig, b: &mut BatchBufs<T>) -> Result<()> {
    let (tab, off, cur, out) = (&b.tab, &b.offsets, &b.curves, &mut b.out);
    let opts = b.opts;
    match &b.freqs {
        Some((f, fl)) => launch!(
            dev,
            cfg,
            lomb::lomb_batch_direct::<T>(tab, off, cur, f, fl, out, opts)
        ),
        None => {
            let grid = grid_of::<T>(b.grid)?;
            launch!(
                dev,
                cfg,
                lomb::lomb_batch_rotate::<T>(tab, off, cur, out, grid, opts)
            )
        }
    }
}

/// Launches [`kl::lomb_row_peaks`] over `rows` rows of `width` values of
/// `power`: `peaks` (`2 rows` values) gets each row's index of its first
/// highest finite value and that value.
pub fn launch_row_peaks<T: Elem>(
    dev: &Device,
    power: &Buffer<T>,
    peaks: &mut Buffer<f64>,
    rows: usize,
    width: usize,
) -> Result<()> {
    let as_u32 = |what: &str, v: usize| {
        u32::try_from(v).map_err(|_| {
            Error::input(
                what,
                format!("{v}; the peak kernel takes at most {}", u32::MAX),
            )
        })
    };
    let (r, w) = (as_u32("periodograms", rows)?, as_u32("frequencies", width)?);
    if power.len() != rows * width || peaks.len() != 2 * rows {
        return Err(Error::input(
            "row peaks",
            format!(
                "{} values for {rows} rows of {width} and {} peak slots; they need {} and {}",
                power.len(),
                peaks.len(),
                rows * width,
                2 * rows
            ),
        ));
    }
    let rows_per_block = (kl::PEAKS_BLOCK / 32) as usize;
    let cfg = LaunchConfig::for_threads(
        rows.div_ceil(rows_per_block).max(1) * kl::PEAKS_BLOCK as usize,
        kl::PEAKS_BLOCK,
    )?;
    launch!(dev, cfg, lomb::lomb_row_peaks::<T>(power, peaks, r, w))
}

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
