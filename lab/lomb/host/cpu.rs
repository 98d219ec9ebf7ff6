//! The CPU reference: SciPy's classic `lombscargle` in f64, one thread and
//! rayon over frequencies.

use super::Options;
use super::input::{prepare, validate};
use ptxlab_common::error::Result;
use rayon::prelude::*;

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
