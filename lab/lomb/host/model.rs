//! The floating-mean (generalized) periodogram as astropy defines it:
//! `LombScargle(t, y, dy, fit_mean, center_data, normalization)`, with
//! angular frequencies (`power(frequency = w / 2 pi)`). The options, the
//! host-side preparation every kernel shares (weights, centring, the
//! normalization's scalars), and the CPU reference in f64.

use super::phase::centre;
use kernels_gpu::lomb::{GenOptions, Norm};
use ptxlab_common::error::{Error, Result};
use rayon::prelude::*;

/// Astropy's normalizations (`--normalization`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Normalization {
    /// `p / YY`: the fraction of the weighted variance the sinusoid explains.
    #[default]
    Standard,
    /// `p / (YY - p)`.
    Model,
    /// `-ln(1 - p / YY)`.
    Log,
    /// `p * 0.5 * sum dy^-2` (`0.5 N p` without `dy`: SciPy's unnormalized
    /// periodogram when the mean is not fitted).
    Psd,
}

impl Normalization {
    /// What the kernels compute for it (`psd` and `standard` differ in
    /// the scale only).
    pub fn norm(&self) -> Norm {
        match self {
            Normalization::Standard | Normalization::Psd => Norm::Scale,
            Normalization::Model => Norm::Model,
            Normalization::Log => Norm::Log,
        }
    }
    /// Astropy's name (the CLI's).
    pub fn name(&self) -> String {
        ptxlab_common::cli::value_name(self)
    }
}

/// Astropy's options (its defaults: `fit_mean`, `center_data`, `standard`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct General {
    /// Fit a constant offset at every frequency (the floating mean).
    pub fit_mean: bool,
    /// Subtract the weighted mean of `y` first.
    pub center_data: bool,
    /// The normalization.
    pub normalization: Normalization,
}

impl Default for General {
    fn default() -> Self {
        General {
            fit_mean: true,
            center_data: true,
            normalization: Normalization::Standard,
        }
    }
}

impl General {
    /// The options as the floating-mean kernels take them.
    pub fn kernel_options(&self) -> GenOptions {
        GenOptions::new(self.fit_mean, self.normalization.norm())
    }
}

/// What every floating-mean kernel gets from the host, in f64: the
/// normalised weights `w` (`sum w = 1`), `w y` of the (centred) values, and
/// the scalars of [`kernels_gpu::lomb::GenScalars`] and the options.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// `w_j = dy_j^-2 / sum dy^-2` (`1 / N` without `dy`).
    pub w: Vec<f64>,
    /// `w_j y_j`, `y` centred on its weighted mean when `fit_mean` or
    /// `center_data`.
    pub wy: Vec<f64>,
    /// `sum w y` (0 up to rounding when centred).
    pub y_mean: f64,
    /// `sum w y^2`.
    pub yy: f64,
    /// The scale of [`Norm::Scale`] (`1 / yy`, or `0.5 sum dy^-2` for
    /// `psd`).
    pub scale: f64,
    /// Fit the mean, and the normalization the kernels compute.
    pub opts: GenOptions,
}

/// Checks `dy` (same length as `y`, finite, positive) and prepares the
/// weights, the centred values and the normalization.
pub fn prepare_general(y: &[f64], dy: Option<&[f64]>, g: General) -> Result<Prepared> {
    if let Some(dy) = dy {
        if dy.len() != y.len() {
            return Err(Error::input(
                "lomb-scargle dy",
                format!(
                    "dy has {} values and y has {}; they must have the same length",
                    dy.len(),
                    y.len()
                ),
            ));
        }
        if let Some(i) = dy.iter().position(|d| !(d.is_finite() && *d > 0.0)) {
            return Err(Error::input(
                "lomb-scargle dy",
                format!(
                    "dy[{i}] = {}; every uncertainty must be a finite number above 0",
                    dy[i]
                ),
            ));
        }
    }
    let raw: Vec<f64> = match dy {
        Some(dy) => dy.iter().map(|d| d.powi(-2)).collect(),
        None => vec![1.0; y.len()],
    };
    let w_raw: f64 = raw.iter().sum();
    if !(w_raw.is_finite() && w_raw > 0.0) {
        return Err(Error::input(
            "lomb-scargle dy",
            format!("sum dy^-2 = {w_raw:e}; the uncertainties are too small or too large for f64"),
        ));
    }
    let w: Vec<f64> = raw.iter().map(|r| r / w_raw).collect();
    let mean: f64 = w.iter().zip(y).map(|(a, b)| a * b).sum();
    let yc: Vec<f64> = if g.fit_mean || g.center_data {
        y.iter().map(|v| v - mean).collect()
    } else {
        y.to_vec()
    };
    let wy: Vec<f64> = w.iter().zip(&yc).map(|(a, b)| a * b).collect();
    let y_mean: f64 = wy.iter().sum();
    let yy: f64 = wy.iter().zip(&yc).map(|(a, b)| a * b).sum();
    // Constant `y`: after centring only rounding is left (1e-32 of the
    // squares for a constant), which is no variance to normalize by.
    let yy_raw: f64 = w.iter().zip(y).map(|(a, b)| a * b * b).sum();
    if g.normalization != Normalization::Psd && !(yy > 1e-24 * yy_raw && yy.is_finite()) {
        return Err(Error::input(
            "lomb-scargle y",
            format!(
                "the {} normalization divides by sum w y^2, which is {yy:e} here (y is constant{}); \
                 use --normalization psd or a y that varies",
                g.normalization.name(),
                if g.fit_mean || g.center_data {
                    " after centring"
                } else {
                    " zero"
                }
            ),
        ));
    }
    let scale = match g.normalization {
        Normalization::Standard => 1.0 / yy,
        Normalization::Psd => 0.5 * w_raw,
        Normalization::Model | Normalization::Log => 1.0,
    };
    Ok(Prepared {
        w,
        wy,
        y_mean,
        yy,
        scale,
        opts: g.kernel_options(),
    })
}

/// One value of the reference, exactly as astropy's `lombscargle_slow`
/// computes it (tau from the double-angle sums, then the sums in the
/// rotated basis, `p = YCtau^2 / CCtau + YStau^2 / SStau`), with the
/// rotated sums formed from the plain ones (`cos(wt - th) = c cos th + s
/// sin th`) so one pass suffices.
fn ref_one_general(u: &[f64], p: &Prepared, w: f64) -> f64 {
    let (mut yc, mut ys, mut cc, mut cs, mut ss, mut c1, mut s1) =
        (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for ((&t, &wt), &wy) in u.iter().zip(&p.w).zip(&p.wy) {
        let (s, c) = (w * t).sin_cos();
        yc += wy * c;
        ys += wy * s;
        cc += wt * c * c;
        cs += wt * c * s;
        ss += wt * s * s;
        c1 += wt * c;
        s1 += wt * s;
    }
    let (mut s2, mut c2) = (2.0 * cs, cc - ss);
    if p.opts.fit_mean() {
        s2 -= 2.0 * s1 * c1;
        c2 -= c1 * c1 - s1 * s1;
    }
    let (st, ct) = (0.5 * s2.atan2(c2)).sin_cos();
    let mut yct = ct * yc + st * ys;
    let mut yst = ct * ys - st * yc;
    let mut cct = ct * ct * cc + 2.0 * ct * st * cs + st * st * ss;
    let mut sst = ct * ct * ss - 2.0 * ct * st * cs + st * st * cc;
    if p.opts.fit_mean() {
        let (ctau, stau) = (ct * c1 + st * s1, ct * s1 - st * c1);
        yct -= p.y_mean * ctau;
        yst -= p.y_mean * stau;
        cct -= ctau * ctau;
        sst -= stau * stau;
    }
    let pw = yct * yct / cct + yst * yst / sst;
    match p.opts.norm() {
        Norm::Model => pw / (p.yy - pw),
        Norm::Log => -(1.0 - pw / p.yy).ln(),
        Norm::Scale => p.scale * pw,
    }
}

/// The CPU reference of the floating-mean periodogram (f64, rayon over
/// frequencies): astropy's `LombScargle(x, y, dy, fit_mean, center_data,
/// normalization).power(freqs / (2 pi))`. Validates the inputs.
pub fn reference_general(
    x: &[f64],
    y: &[f64],
    dy: Option<&[f64]>,
    freqs: &[f64],
    g: General,
) -> Result<Vec<f64>> {
    super::input::validate(x, y, freqs)?;
    let p = prepare_general(y, dy, g)?;
    let (_, u) = centre(x);
    Ok(freqs
        .par_iter()
        .map(|&w| ref_one_general(&u, &p, w))
        .collect())
}
