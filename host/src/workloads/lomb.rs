//! Lomb-Scargle periodogram: the CPU reference (SciPy's definition, f64,
//! one thread and rayon), typed launchers for every kernel of
//! `kernels_gpu::lomb`, the ladder of the material rung by rung, checks
//! against the reference, the benchmark and the `ptxlab lomb-scargle` CLI.

use super::BenchCtx;
use crate::error::{Error, Result};
use crate::launch;
use crate::report::{Row, Status, fmt_ms};
use crate::rng::SplitMix64;
use crate::runtime::{
    Buffer, Device, DeviceKind, Form, KernelArg, LaunchConfig, ModuleKey, Timing, Variant,
};
use cudarc::driver::DeviceRepr;
use kernels_gpu::lomb::{
    BLOCK, BLOCKS_PER_SM, CHEBY_RUN_F32, CHEBY_RUN_F64, LEAN_BLOCK, LEAN_FREQS, ROT_RUN_F32,
    ROT_RUN_F64, TAB_LO, TAB_RUN_F32, TAB_RUN_F64, TAYLOR_BLOCK, TAYLOR_MAX_RUN, TAYLOR_P_F32,
    TAYLOR_P_F64, lomb_shared_bytes, lomb_tab_shared_bytes, lomb_taylor_shared_bytes, taylor_shape,
};
use ptxlab_device::math::Real;
use ptxlab_device::precise::Trig;
use rayon::prelude::*;

/// Workload name in reports.
pub const WORKLOAD: &str = "lomb-scargle";
/// Samples before the material's random selection.
pub const MATERIAL_SAMPLES_ALL: usize = 1 << 10;
/// Frequencies of the material: `linspace(0.01, 10, 2^20)`.
pub const MATERIAL_FREQS: usize = 1 << 20;
/// First and last angular frequency of the material's grid.
pub const MATERIAL_F_RANGE: (f64, f64) = (0.01, 10.0);
/// Samples of the larger benchmark size.
pub const LARGE_SAMPLES: usize = 10_000;
/// f32 tolerance: max |error| / max |reference| (the bound).
pub const TOL_F32: f64 = 1e-4;
/// f64 tolerance: max |error| / max |reference|.
pub const TOL_F64: f64 = 1e-9;

const MATERIAL_X_NPY: &[u8] = include_bytes!("../../../tests/fixtures/lomb/material_x.npy");
const MATERIAL_Y_NPY: &[u8] = include_bytes!("../../../tests/fixtures/lomb/material_y.npy");

/// SciPy's options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Subtract the mean of `y` first.
    pub precenter: bool,
    /// Divide by `sum y^2 / 2` (SciPy's `normalize=True`).
    pub normalize: bool,
}

// ---- inputs ---------------------------------------------------------------

/// Parses a little-endian float64 1-D `.npy` (version 1 or 2) from memory.
pub fn npy_f64(bytes: &[u8]) -> Result<Vec<f64>> {
    let bad = |d: &str| Error::input("embedded .npy", d.to_string());
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(bad("not an .npy file"));
    }
    let (hlen, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        _ if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        _ => return Err(bad("truncated header")),
    };
    let header = std::str::from_utf8(
        bytes
            .get(start..start + hlen)
            .ok_or_else(|| bad("truncated header"))?,
    )
    .map_err(|_| bad("header is not text"))?;
    if !header.contains("'<f8'") || header.contains("'fortran_order': True") {
        return Err(bad("expected a C-order <f8 array"));
    }
    let data = &bytes[start + hlen..];
    Ok(data
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect())
}

/// The material's samples (114 times and values, made by
/// `tests/fixtures/lomb/make_fixture.py` with NumPy's seed 1234).
pub fn material_samples() -> Result<(Vec<f64>, Vec<f64>)> {
    Ok((npy_f64(MATERIAL_X_NPY)?, npy_f64(MATERIAL_Y_NPY)?))
}

/// `linspace(a, b, n)` as NumPy computes it (`a + i * step`, last = b).
pub fn linspace(a: f64, b: f64, n: usize) -> Vec<f64> {
    if n == 0 {
        return Vec::new();
    }
    if n == 1 {
        return vec![a];
    }
    let step = (b - a) / (n - 1) as f64;
    (0..n)
        .map(|i| if i + 1 == n { b } else { a + i as f64 * step })
        .collect()
}

/// The material's frequency grid with `n` points.
pub fn material_freqs(n: usize) -> Vec<f64> {
    linspace(MATERIAL_F_RANGE.0, MATERIAL_F_RANGE.1, n)
}

/// Random samples like the material's: `n` sorted times in (0.01, 10 pi),
/// `y = 2 cos(x + pi/2)` plus uniform noise in [-0.5, 0.5).
pub fn random_samples(n: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut r = SplitMix64(seed);
    let mut x: Vec<f64> = (0..n)
        .map(|_| r.uniform(0.01, 10.0 * std::f64::consts::PI))
        .collect();
    x.sort_by(|a, b| a.total_cmp(b));
    let y = x
        .iter()
        .map(|&t| 2.0 * (t + 0.5 * std::f64::consts::PI).cos() + r.uniform(-0.5, 0.5))
        .collect();
    (x, y)
}

/// Checks the inputs: same non-zero lengths, finite values, non-zero frequencies.
pub fn validate(x: &[f64], y: &[f64], freqs: &[f64]) -> Result<()> {
    if x.len() != y.len() {
        return Err(Error::input(
            "lomb-scargle samples",
            format!(
                "x has {} values and y has {}; they must have the same length",
                x.len(),
                y.len()
            ),
        ));
    }
    if x.is_empty() {
        return Err(Error::input(
            "lomb-scargle samples",
            "x and y are empty; give at least one sample",
        ));
    }
    if freqs.is_empty() {
        return Err(Error::input(
            "lomb-scargle frequencies",
            "no frequencies; give at least one",
        ));
    }
    for (name, v) in [("x", x), ("y", y), ("freqs", freqs)] {
        if let Some(i) = v.iter().position(|a| !a.is_finite()) {
            return Err(Error::input(
                format!("lomb-scargle {name}"),
                format!(
                    "{name}[{i}] = {} is not finite; every value must be a finite number",
                    v[i]
                ),
            ));
        }
    }
    if let Some(i) = freqs.iter().position(|&f| f == 0.0) {
        return Err(Error::input(
            "lomb-scargle frequencies",
            format!(
                "freqs[{i}] = 0: a zero angular frequency has no periodogram value (tau = atan2(..)/(2w)); use non-zero frequencies"
            ),
        ));
    }
    Ok(())
}

/// `y` after `precenter`, and the kernels' `scale` (0.5, or `1 / sum y^2` with
/// `normalize`, which is SciPy's `0.5 * 2 / sum y^2`).
pub fn prepare(y: &[f64], opts: Options) -> Result<(Vec<f64>, f64)> {
    let mean = y.iter().sum::<f64>() / y.len().max(1) as f64;
    let yy: Vec<f64> = if opts.precenter {
        y.iter().map(|v| v - mean).collect()
    } else {
        y.to_vec()
    };
    let scale = if opts.normalize {
        let s2: f64 = yy.iter().map(|v| v * v).sum();
        if s2 == 0.0 || !s2.is_finite() {
            return Err(Error::input(
                "lomb-scargle y",
                "normalize needs sum(y^2) > 0, but y is all zeros (after precenter); drop --normalize or give a non-constant y",
            ));
        }
        1.0 / s2
    } else {
        0.5
    };
    Ok((yy, scale))
}

// ---- CPU reference ----------------------------------------------------------

/// One periodogram value, exactly as SciPy's classic `lombscargle` computes it.
#[inline]
fn ref_one(x: &[f64], y: &[f64], w: f64, scale: f64) -> f64 {
    let (mut xc, mut xs, mut cc, mut ss, mut cs) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (&xj, &yj) in x.iter().zip(y) {
        let (s, c) = (w * xj).sin_cos();
        xc += yj * c;
        xs += yj * s;
        cc += c * c;
        ss += s * s;
        cs += c * s;
    }
    let tau = (2.0 * cs).atan2(cc - ss) / (2.0 * w);
    let (st, ct) = (w * tau).sin_cos();
    let (ct2, st2, cst) = (ct * ct, st * st, 2.0 * ct * st);
    scale
        * ((ct * xc + st * xs).powi(2) / (ct2 * cc + cst * cs + st2 * ss)
            + (ct * xs - st * xc).powi(2) / (ct2 * ss - cst * cs + st2 * cc))
}

/// The CPU reference, one thread, f64: SciPy's `lombscargle(x, y, freqs,
/// precenter, normalize)`. Validates the inputs.
pub fn reference(x: &[f64], y: &[f64], freqs: &[f64], opts: Options) -> Result<Vec<f64>> {
    validate(x, y, freqs)?;
    let (yy, scale) = prepare(y, opts)?;
    Ok(freqs.iter().map(|&w| ref_one(x, &yy, w, scale)).collect())
}

/// The CPU reference on every core (rayon over frequencies).
pub fn reference_rayon(x: &[f64], y: &[f64], freqs: &[f64], opts: Options) -> Result<Vec<f64>> {
    validate(x, y, freqs)?;
    let (yy, scale) = prepare(y, opts)?;
    Ok(freqs
        .par_iter()
        .map(|&w| ref_one(x, &yy, w, scale))
        .collect())
}

/// Accuracy of a periodogram against the reference.
#[derive(Debug, Clone, Copy)]
pub struct Accuracy {
    /// max |got - ref| / max |ref|.
    pub err_over_peak: f64,
    /// Largest relative error where the reference is above 1e-3 of its peak
    /// (the material's check passes when this is at most 1e-3).
    pub material_rel: f64,
}

/// Compares `got` with `want` (NaN anywhere gives an infinite error).
pub fn accuracy(got: &[f64], want: &[f64]) -> Accuracy {
    let peak = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let mut abs = 0.0f64;
    let mut rel = 0.0f64;
    for (g, w) in got.iter().zip(want) {
        let e = if g.is_finite() {
            (g - w).abs()
        } else {
            f64::INFINITY
        };
        abs = abs.max(e);
        if w.abs() > 1e-3 * peak {
            rel = rel.max(e / w.abs());
        }
    }
    if got.len() != want.len() {
        abs = f64::INFINITY;
    }
    Accuracy {
        err_over_peak: if peak > 0.0 { abs / peak } else { abs },
        material_rel: rel,
    }
}

/// `Some((start, step))` when `freqs` is evenly spaced (each point within
/// 1e-9 of a step, plus 4 ulp of the largest value, of `start + k step`),
/// `None` otherwise.
pub fn even_grid(freqs: &[f64]) -> Option<(f64, f64)> {
    let n = freqs.len();
    let start = *freqs.first()?;
    if n == 1 {
        return Some((start, 0.0));
    }
    let step = (freqs[n - 1] - start) / (n - 1) as f64;
    if step == 0.0 || !step.is_finite() {
        return None;
    }
    // 1e-9 of a step, plus the rounding of the values themselves.
    let tol = 1e-9 * step.abs() + 4.0 * f64::EPSILON * start.abs().max(freqs[n - 1].abs());
    freqs
        .iter()
        .enumerate()
        .all(|(k, &f)| (f - (start + k as f64 * step)).abs() <= tol)
        .then_some((start, step))
}

// ---- element types and launchers -----------------------------------------

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

fn not_even() -> Error {
    Error::input(
        "lomb-scargle frequencies",
        "the rotation variant needs an evenly spaced frequency grid (give --start/--step/--count, \
         or freqs with a constant step); this grid is not evenly spaced, use another variant",
    )
}

/// Largest span of the shifted angles `p_j` for which the three-term
/// recurrence is used: centred on pi/2, `sin p_j >= 1/2` for every sample.
pub const CHEBY_MAX_SPAN: f64 = 2.0 * std::f64::consts::FRAC_PI_3;

/// The shift `gamma` of the three-term recurrence for step angles `step x_j`:
/// it centres them on pi/2 (`None` when they span more than
/// [`CHEBY_MAX_SPAN`], where no single shift keeps every `sin p_j >= 1/2`).
pub fn cheby_shift(x: &[f64], step: f64) -> Option<f64> {
    let (lo, hi) = x
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(step * v), hi.max(step * v))
        });
    (hi - lo <= CHEBY_MAX_SPAN).then_some(std::f64::consts::FRAC_PI_2 - 0.5 * (lo + hi))
}

/// The per-sample tables of the recurrence kernels, computed in f64 and
/// rounded once: the rotation's `(x, y, 1 - cos a, sin a)` with `a = step x`
/// (`1 - cos a = 2 sin^2(a/2)` keeps the small angle's bits), and, when
/// [`cheby_shift`] finds a shift, the recurrence's `(x, y, cos p, sin p)`
/// with `p = a + gamma`.
pub fn recurrence_tables<T: Real>(x: &[f64], y: &[f64], step: f64) -> (Vec<T>, Option<Vec<T>>) {
    let mut rot = Vec::with_capacity(4 * x.len());
    for (&xj, &yj) in x.iter().zip(y) {
        let h = 0.5 * step * xj;
        rot.extend([xj, yj, 2.0 * h.sin() * h.sin(), (step * xj).sin()].map(T::from_f64));
    }
    let cheby = cheby_shift(x, step).map(|gamma| {
        let mut c = Vec::with_capacity(4 * x.len());
        for (&xj, &yj) in x.iter().zip(y) {
            let (s, co) = (step * xj + gamma).sin_cos();
            c.extend([xj, yj, co, s].map(T::from_f64));
        }
        c
    });
    (rot, cheby)
}

/// The low-part anchor factors of the table-anchored kernels for runs of
/// `run` frequencies: per sample `j`, `cos(l run step x_j)` for `l` in
/// `0..TAB_LO`, then the `TAB_LO` sines, computed in f64 and rounded once.
pub fn anchor_table<T: Real>(x: &[f64], run: usize, step: f64) -> Vec<T> {
    let mut lo = Vec::with_capacity(2 * TAB_LO * x.len());
    for &xj in x {
        let a = (0..TAB_LO).map(|l| (l * run) as f64 * step * xj);
        lo.extend(a.clone().map(|a| T::from_f64(a.cos())));
        lo.extend(a.map(|a| T::from_f64(a.sin())));
    }
    lo
}

/// Largest `|2 tau|` of the f32 Taylor kernel: with 5 terms the first term
/// left out, `|2 tau|^5 / 5!` (times `e^{|2 tau|}` for the rest), is below
/// 2e-9 of `sum |y|`.
pub const TAYLOR_2TAU_MAX_F32: f64 = 0.047;
/// Largest `|2 tau|` of the f64 Taylor kernel: with 8 terms the first term
/// left out is below 1e-15 of `sum |y|`.
pub const TAYLOR_2TAU_MAX_F64: f64 = 0.05;

/// How the Taylor kernels split the grid: runs of `run` frequencies (a
/// power of two up to 128), times centred on `x0` and scaled by `h` (the
/// half-span, so `|v_j| <= 1`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TaylorPlan {
    /// Frequencies per run.
    pub run: u32,
    /// Centre of the sample times.
    pub x0: f64,
    /// Half-span of the sample times (1 when they are all equal).
    pub h: f64,
}

/// The largest run whose series stays within `two_tau_max`: a run of `R`
/// frequencies reaches `|2 tau| = (R - 1) |step| h` at its ends. Runs of 1
/// (no expansion: the series is its first term, exact) when even 2 is too
/// many.
pub fn taylor_plan(x: &[f64], step: f64, two_tau_max: f64) -> TaylorPlan {
    let (lo, hi) = x
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    let h = if hi > lo { 0.5 * (hi - lo) } else { 1.0 };
    let mut run = TAYLOR_MAX_RUN;
    while run > 1 && (run - 1) as f64 * step.abs() * h > two_tau_max {
        run /= 2;
    }
    TaylorPlan {
        run,
        x0: 0.5 * (lo + hi),
        h,
    }
}

/// The Taylor kernels' per-sample table `(u_j, v_j, y_j, 0)`, `u = x - x0`,
/// `v = u / h`, computed in f64 and rounded once.
pub fn taylor_table<T: Real>(x: &[f64], y: &[f64], plan: &TaylorPlan) -> Vec<T> {
    let mut t = Vec::with_capacity(4 * x.len());
    for (&xj, &yj) in x.iter().zip(y) {
        let u = xj - plan.x0;
        t.extend([u, u / plan.h, yj, 0.0].map(T::from_f64));
    }
    t
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

// ---- the ladder -------------------------------------------------------------

/// One rung of the ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rung {
    /// 1: module loaded (PTX JIT) and function looked up on every call.
    Baseline,
    /// 2: cached module and function (normal `launch!`).
    Cached,
    /// 4: the fast-math module (SFU sin/cos, approximate division, FTZ).
    FastMath,
    /// 4b: fast math, one frequency per thread (`ceil(nf/128)` blocks).
    FastMathFit,
    /// 4c: fast math, lean kernel (`LEAN_FREQS` frequencies per thread,
    /// four sums, least-squares finish).
    FastLean,
    /// 5: `.maxnreg N` written into the PTX of the precise module.
    RegCap(u32),
    /// 6: the precompiled sm_90 cubin (no JIT).
    Cubin,
    /// 7: `launch_bounds(128)` kernel (precise module).
    Bounds,
    /// 7b: `launch_bounds(128)` kernel from the fast-math module.
    BoundsFast,
    /// x, y staged in shared memory (precise).
    Shared,
    /// Rotation recurrence on an even grid (precise anchors).
    Rotate,
    /// Rotation recurrence from the fast-math module (SFU anchors for f32).
    RotateFast,
    /// Three-term recurrence on shifted angles (even grid; precise anchors).
    Cheby,
    /// Three-term recurrence with anchors from tables (even grid).
    ChebyTab,
    /// `ChebyTab` with the sample loop software pipelined.
    ChebyTabPipe,
    /// Taylor moments per run of frequencies (even grid).
    Taylor,
}

impl Rung {
    /// The default ladder, in order.
    pub const LADDER: [Rung; 16] = [
        Rung::Baseline,
        Rung::Cached,
        Rung::FastMath,
        Rung::FastMathFit,
        Rung::FastLean,
        Rung::RegCap(32),
        Rung::Cubin,
        Rung::Bounds,
        Rung::BoundsFast,
        Rung::Shared,
        Rung::Rotate,
        Rung::RotateFast,
        Rung::Cheby,
        Rung::ChebyTab,
        Rung::ChebyTabPipe,
        Rung::Taylor,
    ];
    /// CLI name.
    pub fn name(&self) -> String {
        match self {
            Rung::Baseline => "baseline".into(),
            Rung::Cached => "cached".into(),
            Rung::FastMath => "fast-math".into(),
            Rung::FastMathFit => "fast-math-fit".into(),
            Rung::FastLean => "fast-lean".into(),
            Rung::RegCap(r) => format!("regcap{r}"),
            Rung::Cubin => "cubin".into(),
            Rung::Bounds => "launch-bounds".into(),
            Rung::BoundsFast => "launch-bounds-fast".into(),
            Rung::Shared => "shared".into(),
            Rung::Rotate => "rotate".into(),
            Rung::RotateFast => "rotate-fast".into(),
            Rung::Cheby => "cheby".into(),
            Rung::ChebyTab => "cheby-tab".into(),
            Rung::ChebyTabPipe => "cheby-tabp".into(),
            Rung::Taylor => "taylor".into(),
        }
    }
    /// Report label.
    pub fn label(&self) -> String {
        match self {
            Rung::Baseline => "1 baseline (JIT every call)".into(),
            Rung::Cached => "2 cached module (precise Rust sincos)".into(),
            Rung::FastMath => "4 fast math (SFU)".into(),
            Rung::FastMathFit => "4b fast math, 1 freq/thread grid".into(),
            Rung::FastLean => "4c fast math, lean (4 sums, least-squares finish)".into(),
            Rung::RegCap(r) => format!("5 register cap {r}"),
            Rung::Cubin => "6 precompiled cubin".into(),
            Rung::Bounds => "7 launch bounds 128".into(),
            Rung::BoundsFast => "7b launch bounds 128 + fast math".into(),
            Rung::Shared => "8 x,y in shared memory".into(),
            Rung::Rotate => "9 rotation recurrence (even grid)".into(),
            Rung::RotateFast => "9b rotation + fast-math anchors".into(),
            Rung::Cheby => "10 three-term recurrence, shifted angle (even grid)".into(),
            Rung::ChebyTab => "11 three-term recurrence, anchors from tables".into(),
            Rung::ChebyTabPipe => "11b as 11, sample loop pipelined".into(),
            Rung::Taylor => "12 Taylor moments per run of frequencies".into(),
        }
    }
    /// The kernel it launches.
    pub fn kernel(&self) -> Kernel {
        match self {
            Rung::Bounds | Rung::BoundsFast => Kernel::Bounds,
            Rung::Shared => Kernel::Shared,
            Rung::Rotate | Rung::RotateFast => Kernel::Rotate,
            Rung::Cheby => Kernel::Cheby,
            Rung::ChebyTab => Kernel::ChebyTab,
            Rung::ChebyTabPipe => Kernel::ChebyTabPipe,
            Rung::Taylor => Kernel::Taylor,
            Rung::FastLean => Kernel::Lean,
            _ => Kernel::Direct,
        }
    }
    /// The module it launches from.
    pub fn module(&self) -> ModuleKey {
        match self {
            Rung::FastMath
            | Rung::FastMathFit
            | Rung::FastLean
            | Rung::BoundsFast
            | Rung::RotateFast => ModuleKey::FAST,
            Rung::RegCap(r) => ModuleKey {
                reg_cap: Some(*r),
                ..ModuleKey::PRECISE
            },
            Rung::Cubin => ModuleKey {
                form: Form::Cubin,
                ..ModuleKey::PRECISE
            },
            _ => ModuleKey::PRECISE,
        }
    }
}

impl std::str::FromStr for Rung {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let allowed = "baseline, cached, fast-math, fast-math-fit, fast-lean, regcapN (16..=255), cubin, launch-bounds, \
                       launch-bounds-fast, shared, rotate, rotate-fast, cheby, cheby-tab, cheby-tabp, taylor, all";
        Ok(match s {
            "baseline" => Rung::Baseline,
            "cached" => Rung::Cached,
            "fast-math" => Rung::FastMath,
            "fast-math-fit" => Rung::FastMathFit,
            "fast-lean" => Rung::FastLean,
            "cubin" => Rung::Cubin,
            "launch-bounds" => Rung::Bounds,
            "launch-bounds-fast" => Rung::BoundsFast,
            "shared" => Rung::Shared,
            "rotate" => Rung::Rotate,
            "rotate-fast" => Rung::RotateFast,
            "cheby" => Rung::Cheby,
            "cheby-tab" => Rung::ChebyTab,
            "cheby-tabp" => Rung::ChebyTabPipe,
            "taylor" => Rung::Taylor,
            _ => match s.strip_prefix("regcap").and_then(|r| r.parse::<u32>().ok()) {
                Some(r) if (16..=255).contains(&r) => Rung::RegCap(r),
                _ => {
                    return Err(Error::input(
                        "--variant",
                        format!("`{s}`; allowed: {allowed}"),
                    ));
                }
            },
        })
    }
}

/// Grid shape: blocks of `block` threads.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Blocks in the grid.
    pub blocks: u32,
    /// Threads per block.
    pub block: u32,
}

impl Shape {
    /// `self` with the block size `rung` was tuned for, where it has its own
    /// (rung 4c: [`LEAN_BLOCK`]); the other rungs keep `self`.
    pub fn for_rung(self, rung: Rung) -> Shape {
        match rung {
            Rung::FastLean => Shape {
                block: LEAN_BLOCK,
                ..self
            },
            _ => self,
        }
    }

    /// The material's shape on `dev`: SM count x 20 blocks of 128 (on the
    /// simulator: 3 blocks, so a launch stays small).
    pub fn material(dev: &Device) -> Self {
        match dev.as_gpu() {
            Some(g) => Shape {
                blocks: g.info().sm_count * BLOCKS_PER_SM,
                block: BLOCK,
            },
            None => Shape {
                blocks: 3,
                block: BLOCK,
            },
        }
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

/// Runs `rung` and checks it against `want` (the f64 reference) within `T::TOL`
/// of the peak and the material's 1e-3 relative check.
pub fn check<T: Elem>(
    dev: &Device,
    rung: Rung,
    x: &[f64],
    y: &[f64],
    freqs: &[f64],
    opts: Options,
    want: &[f64],
    shape: Shape,
) -> Result<Accuracy> {
    let got = periodogram::<T>(dev, rung, x, y, freqs, opts, shape)?;
    let acc = accuracy(&got, want);
    if acc.err_over_peak.is_nan() || acc.err_over_peak > T::TOL || acc.material_rel > 1e-3 {
        return Err(Error::Verification {
            what: format!(
                "lomb-scargle {} {} ({} samples x {} freqs) on {}",
                T::NAME,
                rung.name(),
                x.len(),
                freqs.len(),
                dev.name()
            ),
            detail: format!(
                "max |error| / peak = {:.3e} (tolerance {:.0e}); material check max rel error {:.3e} (tolerance 1e-3)",
                acc.err_over_peak,
                T::TOL,
                acc.material_rel
            ),
        });
    }
    Ok(acc)
}

/// A coarse even grid over long times, `(x, y, freqs)`: 61 samples spread
/// over about 190 time units, 203 frequencies 0.05 apart. The step angles
/// `0.05 x_j` span many turns, so no single shift suits the three-term
/// recurrence ([`cheby_shift`] is `None`) and the Taylor plan takes short
/// runs.
pub fn coarse_case() -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let x: Vec<f64> = (0..61)
        .map(|j| 0.37 + 3.1 * j as f64 + (j % 7) as f64 * 0.21)
        .collect();
    let y = x
        .iter()
        .map(|&t| (0.9 * t).sin() + 0.3 * (2.3 * t).cos())
        .collect();
    let f = (0..203).map(|k| 0.1 + k as f64 * 0.05).collect();
    (x, y, f)
}

/// Every kernel of the workload on the simulator, f32 and f64, on random and
/// on the material's samples (57 and 114 samples, about 1000 frequencies,
/// even, uneven and coarse grids, every option), against the CPU reference.
pub fn sim_check() -> Result<()> {
    let dev = Device::sim();
    let shape = Shape::material(&dev);
    let (mx, my) = material_samples()?;
    let (rx, ry) = random_samples(57, 5);
    let even = material_freqs(1001);
    let mut uneven = even.clone();
    for (i, f) in uneven.iter_mut().enumerate() {
        *f += 1e-3 * ((i * 7919) % 13) as f64;
    }
    // A coarse grid over long times: no shift suits the three-term
    // recurrence, so its rungs run the rotation kernels (`lomb_rotate_tab*`
    // included).
    let (cx, cy, coarse) = coarse_case();
    let rungs = [
        Rung::Cached,
        Rung::FastLean,
        Rung::Bounds,
        Rung::Shared,
        Rung::Rotate,
        Rung::Cheby,
        Rung::ChebyTab,
        Rung::ChebyTabPipe,
        Rung::Taylor,
    ];
    type Case<'a> = (&'a [f64], &'a [f64], &'a [f64], Options);
    let cases: [Case; 5] = [
        (&rx, &ry, &even, Options::default()),
        (&cx, &cy, &coarse, Options::default()),
        (
            &mx,
            &my,
            &even,
            Options {
                precenter: true,
                normalize: false,
            },
        ),
        (
            &rx,
            &ry,
            &uneven,
            Options {
                precenter: true,
                normalize: true,
            },
        ),
        (
            &mx,
            &my,
            &even[..997],
            Options {
                precenter: false,
                normalize: true,
            },
        ),
    ];
    for (x, y, f, opts) in cases {
        let want = reference_rayon(x, y, f, opts)?;
        for rung in rungs {
            if rung.kernel().needs_even_grid() && even_grid(f).is_none() {
                continue;
            }
            check::<f32>(&dev, rung, x, y, f, opts, &want, shape)?;
            check::<f64>(&dev, rung, x, y, f, opts, &want, shape)?;
        }
    }
    Ok(())
}

// ---- benchmark ----------------------------------------------------------------

fn size_label(n: usize, nf: usize) -> String {
    format!("{n} samples x 2^{:.0} freqs", (nf as f64).log2())
}

/// CPU rows (one thread timed on a subset of the frequencies and scaled;
/// rayon likewise); returns the one-thread estimate for the full size, ms.
fn cpu_rows(x: &[f64], y: &[f64], nf: usize, quick: bool, rows: &mut Vec<Row>) -> Result<f64> {
    let pairs = x.len() as f64 * nf as f64;
    let sub1 = ((if quick { 2e6 } else { 2e7 } / x.len() as f64) as usize).clamp(64, nf);
    let f1 = material_freqs(sub1);
    let t1 = Timing::host(0, if quick { 1 } else { 3 }, || {
        std::hint::black_box(reference(x, y, &f1, Options::default()).ok());
    });
    let scale1 = nf as f64 / sub1 as f64;
    let subr = (sub1 * 8).min(nf);
    let fr = material_freqs(subr);
    let tr = Timing::host(1, 3, || {
        std::hint::black_box(reference_rayon(x, y, &fr, Options::default()).ok());
    });
    let scaler = nf as f64 / subr as f64;
    let one = t1.median_ms * scale1;
    let size = size_label(x.len(), nf);
    for (name, t, s) in [
        ("CPU reference, 1 thread (f64, scaled)", &t1, scale1),
        ("CPU reference, rayon (f64, scaled)", &tr, scaler),
    ] {
        let mut r = Row::new(WORKLOAD, name, "cpu", &size, "f64");
        let ms = t.median_ms * s;
        r.timing = Some(Timing {
            median_ms: ms,
            min_ms: t.min_ms * s,
            max_ms: t.max_ms * s,
            reps: t.reps,
        });
        r.throughput = Some(pairs / (ms * 1e-3) / 1e9);
        r.unit = "Gpairs/s".into();
        r.speedup = Some(one / ms);
        rows.push(r);
    }
    Ok(one)
}

/// The ladder for `T` at one size on a GPU.
fn bench_ladder<T: Elem>(
    dev: &Device,
    ctx: &BenchCtx,
    x: &[f64],
    y: &[f64],
    nf: usize,
    cpu1_ms: f64,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let g = dev
        .as_gpu()
        .ok_or_else(|| Error::input("lomb bench", "needs a GPU"))?;
    let arch = g.info().arch();
    let shape = Shape::material(dev);
    let freqs = material_freqs(nf);
    let pairs = x.len() as f64 * nf as f64;
    let size = size_label(x.len(), nf);
    // The check runs on every 16th frequency at the large size (an even grid too).
    let stride = if x.len() * nf > 200_000_000 { 16 } else { 1 };
    let check_freqs: Vec<f64> = freqs.iter().step_by(stride).copied().collect();
    let want = reference_rayon(x, y, &check_freqs, Options::default())?;
    let reps = if x.len() * nf > 200_000_000 {
        ctx.reps().min(10)
    } else {
        ctx.reps()
    };
    let mut bufs = Bufs::<T>::new(dev, x, y, &freqs, Options::default())?;
    for rung in Rung::LADDER {
        let shape = shape.for_rung(rung);
        let mut row = Row::new(WORKLOAD, &rung.label(), "gpu", &size, T::NAME);
        let name = T::kernel(rung.kernel());
        let fast = rung.module().variant == Variant::FastMath;
        row.registers = g
            .num_regs(&crate::modules::KERNELS, rung.module(), name)
            .ok()
            .map(|r| r as u32);
        if let Some(res) = crate::modules::resource(name, &arch, fast) {
            row.registers = row.registers.or(Some(res.registers));
            if rung.module().reg_cap.is_none() {
                row.spills = Some(res.spill_stores + res.spill_loads);
            }
        }
        // The baseline launches the same kernel of the same module as the
        // cached rung, which is checked next; checking it here would only add
        // module loads (each one JITs the whole module).
        let check_rung = if rung == Rung::Baseline {
            Rung::Cached
        } else {
            rung
        };
        match check::<T>(
            dev,
            check_rung,
            x,
            y,
            &check_freqs,
            Options::default(),
            &want,
            shape,
        ) {
            Ok(a) => row.rel_err = Some(a.err_over_peak),
            Err(e) => {
                row.status = Status::Failed(e.to_string());
                rows.push(row);
                continue;
            }
        }
        // First pass from an empty module cache (JIT or cubin load included),
        // at the material's size only (the JIT does not depend on the size).
        if stride == 1 {
            g.clear_cache();
        }
        bufs.poison(dev)?;
        let t0 = std::time::Instant::now();
        run_rung(dev, rung, &mut bufs, shape)?;
        dev.synchronize()?;
        // (At the large size the module is already loaded: no first-pass figure.)
        row.first_ms = (stride == 1).then(|| t0.elapsed().as_secs_f64() * 1e3);
        let (warm, n) = if rung == Rung::Baseline {
            (0, 2)
        } else {
            (2, reps)
        };
        let t = dev.time(warm, n, |_| run_rung(dev, rung, &mut bufs, shape))?;
        row.throughput = Some(pairs / (t.median_ms * 1e-3) / 1e9);
        row.unit = "Gpairs/s".into();
        row.speedup = Some(cpu1_ms / t.median_ms);
        if T::NAME == "f32"
            && matches!(
                rung,
                Rung::FastMath
                    | Rung::FastMathFit
                    | Rung::FastLean
                    | Rung::BoundsFast
                    | Rung::Rotate
                    | Rung::RotateFast
                    | Rung::Cheby
                    | Rung::ChebyTab
                    | Rung::ChebyTabPipe
                    | Rung::Taylor
            )
            && let Some(sfu) = ctx.ceilings.sfu_per_s
        {
            // SFU floor: 2 transcendental operations per (sample, frequency).
            let floor_ms = pairs * 2.0 / sfu * 1e3;
            row.pct_of_ceiling = Some(100.0 * floor_ms / t.median_ms);
        }
        row.timing = Some(t);
        rows.push(row);
    }
    Ok(())
}

/// Benchmark rows: CPU reference rows; with a GPU the ladder (f32 and f64) at
/// the material's size and at 10^4 samples x 2^20 frequencies (quick: the
/// material's size, f32 only).
pub fn bench(ctx: &BenchCtx) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let (mx, my) = material_samples()?;
    let (lx, ly) = random_samples(LARGE_SAMPLES, 77);
    let cpu_material = cpu_rows(&mx, &my, MATERIAL_FREQS, ctx.quick, &mut rows)?;
    let Some(dev) = ctx.gpu() else {
        rows.push(super::skipped_gpu(WORKLOAD, ctx));
        return Ok(rows);
    };
    bench_ladder::<f32>(dev, ctx, &mx, &my, MATERIAL_FREQS, cpu_material, &mut rows)?;
    if ctx.quick {
        return Ok(rows);
    }
    bench_ladder::<f64>(dev, ctx, &mx, &my, MATERIAL_FREQS, cpu_material, &mut rows)?;
    let cpu_large = cpu_rows(&lx, &ly, MATERIAL_FREQS, true, &mut rows)?;
    bench_ladder::<f32>(dev, ctx, &lx, &ly, MATERIAL_FREQS, cpu_large, &mut rows)?;
    bench_ladder::<f64>(dev, ctx, &lx, &ly, MATERIAL_FREQS, cpu_large, &mut rows)?;
    Ok(rows)
}

// ---- CLI ------------------------------------------------------------------------

/// `ptxlab lomb-scargle` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Sample times (.npy, 1-D float64 or float32). Without --x/--y: the material's 114 samples.
    #[arg(long)]
    pub x: Option<std::path::PathBuf>,
    /// Sample values (.npy, same length as --x).
    #[arg(long)]
    pub y: Option<std::path::PathBuf>,
    /// Angular frequencies (.npy). Or --start/--step/--count; default: linspace(0.01, 10, 2^20).
    #[arg(long)]
    pub freqs: Option<std::path::PathBuf>,
    /// First frequency of an even grid.
    #[arg(long, allow_negative_numbers = true)]
    pub start: Option<f64>,
    /// Step of an even grid (may be negative).
    #[arg(long, allow_negative_numbers = true)]
    pub step: Option<f64>,
    /// Number of frequencies of an even grid.
    #[arg(long, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub count: Option<usize>,
    /// f32 or f64.
    #[arg(long, default_value = "f32")]
    pub precision: String,
    /// Rung: baseline, cached, fast-math, fast-math-fit, fast-lean, regcapN, cubin,
    /// launch-bounds, launch-bounds-fast, shared, rotate, rotate-fast, cheby,
    /// cheby-tab, cheby-tabp, taylor, or all.
    #[arg(long, default_value = "cached")]
    pub variant: String,
    /// gpu, sim or cpu.
    #[arg(long, default_value = "gpu")]
    pub backend: String,
    /// Subtract the mean of y first (SciPy's precenter).
    #[arg(long)]
    pub precenter: bool,
    /// Normalized periodogram (SciPy's normalize).
    #[arg(long)]
    pub normalize: bool,
    /// Blocks per SM of the launch shape (the material: 20; 1..=1024).
    #[arg(long, default_value_t = BLOCKS_PER_SM, value_parser = crate::cli::parse_whole::<u32>, allow_negative_numbers = true)]
    pub blocks_per_sm: u32,
    /// Threads per block (1..=1024, at most 128 for launch-bounds). Default:
    /// the material's 128; fast-lean 512, the shape it was tuned for.
    #[arg(long, value_parser = crate::cli::parse_whole::<u32>, allow_negative_numbers = true)]
    pub block: Option<u32>,
    /// Timed repetitions (1..=10000).
    #[arg(long, default_value_t = 20, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
    /// Write the periodogram here (.npy, float64 for f64, float32 for f32).
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
}

/// Reads a 1-D float64 or float32 `.npy` (either byte order), choosing by
/// the header's dtype, so an error is about this file's real problem.
fn read_any(path: &std::path::Path) -> Result<Vec<f64>> {
    let h = crate::npy::inspect(path)?;
    let d = h.descr.trim_start_matches(['<', '>', '=', '|']);
    if d == "f4" {
        Ok(crate::npy::read_1d::<f32>(path, "float64 or float32")?
            .into_iter()
            .map(f64::from)
            .collect())
    } else {
        crate::npy::read_1d::<f64>(path, "float64 or float32")
    }
}

/// The CLI's inputs: samples and frequency grid.
pub fn cli_inputs(args: &Args) -> Result<(Vec<f64>, Vec<f64>, Vec<f64>)> {
    let (x, y) = match (&args.x, &args.y) {
        (Some(x), Some(y)) => (read_any(x)?, read_any(y)?),
        (None, None) => material_samples()?,
        _ => {
            return Err(Error::input(
                "--x/--y",
                "give both --x and --y, or neither (the material's 114 samples)",
            ));
        }
    };
    let freqs = match (&args.freqs, args.start, args.step, args.count) {
        (Some(_), Some(_), _, _) | (Some(_), _, Some(_), _) | (Some(_), _, _, Some(_)) => {
            return Err(Error::input(
                "--freqs",
                "give either --freqs or --start/--step/--count, not both",
            ));
        }
        (Some(f), None, None, None) => read_any(f)?,
        (None, Some(a), Some(s), Some(n)) => {
            if n == 0 {
                return Err(Error::input("--count", "0 frequencies; give at least one"));
            }
            // The grid, the reference and the device's periodogram (f64).
            crate::cli::check_host_arrays("--count", n, 8, 4)?;
            if !(s.is_finite() && s != 0.0) {
                return Err(Error::input(
                    "--step",
                    format!("{s}; the step must be finite and non-zero"),
                ));
            }
            (0..n).map(|k| a + k as f64 * s).collect()
        }
        (None, None, None, None) => material_freqs(MATERIAL_FREQS),
        _ => {
            return Err(Error::input(
                "--start/--step/--count",
                "give all three (an even grid), or --freqs",
            ));
        }
    };
    validate(&x, &y, &freqs)?;
    Ok((x, y, freqs))
}

/// Most sample x frequency pairs of one simulated launch (about 10 s).
pub const SIM_MAX_PAIRS: usize = 1 << 28;
/// Most blocks per SM of `--blocks-per-sm`.
pub const MAX_BLOCKS_PER_SM: u32 = 1024;

/// Checks that the inputs fit the element type of the device run: every
/// value, the largest phase `w x` and `sum y^2` must be finite in `T` (f32
/// overflows at 3.4e38), or the kernel's result is inf/NaN.
pub fn check_range<T: Elem>(x: &[f64], y: &[f64], freqs: &[f64]) -> Result<()> {
    let max = if std::mem::size_of::<T>() == 4 {
        f32::MAX as f64
    } else {
        f64::MAX
    };
    let amax = |v: &[f64]| v.iter().fold(0.0f64, |m, a| m.max(a.abs()));
    let (mx, my, mf) = (amax(x), amax(y), amax(freqs));
    let yy: f64 = y.iter().map(|v| v * v).sum();
    let bad = |what: &str, value: f64| {
        Error::input(
            format!("lomb-scargle {what}"),
            format!(
                "{value:.3e} is beyond the largest {} ({max:.3e}): too large for {} arithmetic, so \
                 the periodogram would be inf/NaN; rescale x, y or the frequencies{}",
                T::NAME,
                T::NAME,
                if std::mem::size_of::<T>() == 4 {
                    ", or use --precision f64"
                } else {
                    ""
                }
            ),
        )
    };
    if mx > max {
        return Err(bad("x", mx));
    }
    if my > max {
        return Err(bad("y", my));
    }
    if mf > max {
        return Err(bad("freqs", mf));
    }
    if !(mf * mx <= max) {
        return Err(bad("phase max|w| * max|x|", mf * mx));
    }
    if !(yy <= max) {
        return Err(bad("sum of y^2", yy));
    }
    Ok(())
}

/// `ptxlab lomb-scargle`.
pub fn cli(args: &Args) -> Result<()> {
    let backend: crate::Backend = args.backend.parse()?;
    crate::cli::check_reps(args.reps)?;
    if let Some(b) = args.block
        && (b == 0 || b > 1024)
    {
        return Err(Error::input(
            "--block",
            format!("{b} threads per block; allowed 1..=1024"),
        ));
    }
    if args.blocks_per_sm == 0 || args.blocks_per_sm > MAX_BLOCKS_PER_SM {
        return Err(Error::input(
            "--blocks-per-sm",
            format!("{}; allowed 1..={MAX_BLOCKS_PER_SM}", args.blocks_per_sm),
        ));
    }
    let rungs: Vec<Rung> = if args.variant == "all" {
        Rung::LADDER.to_vec()
    } else {
        vec![args.variant.parse()?]
    };
    match args.precision.as_str() {
        "f32" => cli_typed::<f32>(args, backend, &rungs),
        "f64" => cli_typed::<f64>(args, backend, &rungs),
        p => Err(Error::input(
            "--precision",
            format!("`{p}`; allowed: f32, f64"),
        )),
    }
}

fn cli_typed<T: Elem>(args: &Args, backend: crate::Backend, rungs: &[Rung]) -> Result<()> {
    let dev = crate::cli::open_device(backend)?;
    let (x, y, freqs) = cli_inputs(args)?;
    let opts = Options {
        precenter: args.precenter,
        normalize: args.normalize,
    };
    if rungs.iter().any(|r| r.kernel().needs_even_grid()) && even_grid(&freqs).is_none() {
        return Err(not_even());
    }
    if let Some(d) = &dev {
        check_range::<T>(&x, &y, &freqs)?;
        if d.is_sim() {
            crate::cli::check_sim_limit(
                "--count/--freqs",
                x.len().saturating_mul(freqs.len()),
                SIM_MAX_PAIRS,
                "sample x frequency pairs",
            )?;
        }
    }
    let t0 = std::time::Instant::now();
    let want = reference_rayon(&x, &y, &freqs, opts)?;
    if let Some(i) = want.iter().position(|v| !v.is_finite()) {
        return Err(Error::input(
            "lomb-scargle inputs",
            format!(
                "the f64 periodogram at freqs[{i}] = {} is {}: the samples are degenerate there \
                 (fewer than 2 distinct sample phases give 0/0) or too large for f64 arithmetic (a \
                 phase w x or sum y^2 overflows); give at least 2 samples at distinct times, or \
                 rescale x, y or the frequencies",
                freqs[i], want[i]
            ),
        ));
    }
    println!(
        "CPU reference (rayon, f64): {} ms for {} samples x {} frequencies",
        fmt_ms(t0.elapsed().as_secs_f64() * 1e3),
        x.len(),
        freqs.len()
    );
    let Some(dev) = dev else {
        if let Some(out) = &args.out {
            crate::npy::write_1d(out, &want)?;
            println!("wrote {}", out.display());
        }
        return Ok(());
    };
    let mut base = Shape::material(&dev);
    if let Some(g) = dev.as_gpu() {
        base.blocks = g.info().sm_count.saturating_mul(args.blocks_per_sm);
    }
    let mut last = Vec::new();
    for &rung in rungs {
        // `--block` where given, else the rung's own default.
        let shape = match args.block {
            Some(block) => Shape { block, ..base },
            None => base.for_rung(rung),
        };
        let acc = check::<T>(&dev, rung, &x, &y, &freqs, opts, &want, shape)?;
        println!(
            "PASS lomb-scargle {} {} on {}: max |err|/peak {:.2e}, material check max rel {:.2e}",
            T::NAME,
            rung.name(),
            dev.name(),
            acc.err_over_peak,
            acc.material_rel
        );
        let mut b = Bufs::<T>::new(&dev, &x, &y, &freqs, opts)?;
        let reps = if dev.is_sim() || rung == Rung::Baseline {
            args.reps.min(3)
        } else {
            args.reps
        };
        let t = dev.time(if rung == Rung::Baseline { 0 } else { 2 }, reps, |_| {
            run_rung(&dev, rung, &mut b, shape)
        })?;
        println!(
            "  {}: median {} ms (min {}, max {}, {} reps), {:.1} Gpairs/s",
            rung.label(),
            fmt_ms(t.median_ms),
            fmt_ms(t.min_ms),
            fmt_ms(t.max_ms),
            t.reps,
            x.len() as f64 * freqs.len() as f64 / (t.median_ms * 1e-3) / 1e9
        );
        last = dev.download(&b.out)?;
    }
    if let Some(out) = &args.out {
        crate::npy::write_1d(out, &last)?;
        println!("wrote {}", out.display());
    }
    Ok(())
}
