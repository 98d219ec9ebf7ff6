//! Host-side plans and per-sample tables of the even-grid kernels (rungs
//! 9-12), computed in f64 and rounded once to the kernel's type.

use super::phase::{anchor_parts, anchor_split, mod_2pi};
use kernels_gpu::lomb::{TAB_LO, TAYLOR_MAX_RUN};
use ptxlab_device::math::Real;

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

// ---- long spans: anchors from split phases -----------------------------------------

/// The recurrence tables of the `_long` kernels (8 values per sample,
/// `kernels_gpu::lomb::rec_stride(true)`): `(alpha_hi, alpha_lo, beta_hi,
/// beta_lo, y, 1 - cos a, sin a, 0)` for the rotation and, when
/// [`cheby_shift`] finds a shift, `(alpha_hi, alpha_lo, beta_hi, beta_lo, y,
/// cos p, sin p, 0)` for the three-term recurrence; `alpha = start u`,
/// `beta = a = step u` modulo 2 pi (`super::phase::anchor_parts`), `u` the
/// centred times.
pub fn recurrence_tables_long<T: Real>(
    u: &[f64],
    y: &[f64],
    start: f64,
    step: f64,
) -> (Vec<T>, Option<Vec<T>>) {
    let head = |uj: f64| {
        let (a, b) = anchor_parts(uj, start, step);
        anchor_split::<T>(a, b)
    };
    let mut rot = Vec::with_capacity(8 * u.len());
    for (&uj, &yj) in u.iter().zip(y) {
        let h = 0.5 * step * uj;
        rot.extend(head(uj));
        rot.extend([yj, 2.0 * h.sin() * h.sin(), (step * uj).sin(), 0.0].map(T::from_f64));
    }
    let cheby = cheby_shift(u, step).map(|gamma| {
        let mut c = Vec::with_capacity(8 * u.len());
        for (&uj, &yj) in u.iter().zip(y) {
            let (s, co) = (step * uj + gamma).sin_cos();
            c.extend(head(uj));
            c.extend([yj, co, s, 0.0].map(T::from_f64));
        }
        c
    });
    (rot, cheby)
}

/// The Taylor table of the `_long` and floating-mean kernels (8 values per
/// sample, `kernels_gpu::lomb::taylor_stride(true)`): `(alpha_hi, alpha_lo,
/// beta_hi, beta_lo, v, a, b, 0)` with `alpha = W0 u`, `W0 = start + (R - 1)
/// step / 2` the first run's centre, `beta = R step u` (both modulo 2 pi),
/// `u = x - x0`, `v = u / h`, and `(a, b)` = `(y, 0)` or, for the
/// floating-mean kernels, `(w y, w)`.
pub fn taylor_table_long<T: Real>(
    x: &[f64],
    a: &[f64],
    b: Option<&[f64]>,
    plan: &TaylorPlan,
    start: f64,
    step: f64,
) -> Vec<T> {
    let r = plan.run as f64;
    let w0 = start + 0.5 * (r - 1.0) * step;
    let mut t = Vec::with_capacity(8 * x.len());
    for (j, (&xj, &aj)) in x.iter().zip(a).enumerate() {
        let u = xj - plan.x0;
        let (al, be) = (mod_2pi(w0 * u), mod_2pi(r * step * u));
        t.extend(anchor_split::<T>(al, be));
        let bj = b.map_or(0.0, |b| b[j]);
        t.extend([u / plan.h, aj, bj, 0.0].map(T::from_f64));
    }
    t
}
