//! The outer loop of a multigrid or PCG solve to a tolerance, shared by the
//! solver on one device ([`super::MgDevice::solve`]) and on a team of
//! devices ([`crate::multi::PlacedMg::solve`]): the
//! same stopping rule, the same history and the same overflow error.

use super::levels::MgOptions;
use super::report::MgReport;
use ptxlab_common::error::{Error, Result};
use std::time::Instant;

/// `||r|| / ||b||` from the squares (`||r||` when `b` is zero).
pub(crate) fn rel_of(sq: f64, b_sq: f64) -> f64 {
    if b_sq > 0.0 {
        (sq / b_sq).sqrt()
    } else {
        sq.sqrt()
    }
}

/// The error of a residual that is not finite after `cycles` cycles (a NaN
/// or an infinity in the data, or an overflow).
pub(crate) fn overflowed(res_sq: f64, cycles: usize) -> Error {
    Error::input(
        "poisson problem",
        format!(
            "the residual became {} after {cycles} cycles: b or p0 are too large for the \
             arithmetic (or not finite), or the grid's aspect ratio is beyond what the point \
             smoother handles; scale the problem or use --method pcg",
            res_sq.sqrt()
        ),
    )
}

/// Runs `start` (the residual `||r||^2` of the initial field), then
/// `step(state, k)` for `k = 0, 1, ...` (one cycle or PCG iteration, which
/// returns the new `||r||^2`) until `||r|| / ||b|| < opts.tol` or
/// `opts.max_cycles` steps. A residual that is not finite, the first one
/// included, ends the solve with [`overflowed`]. The times in the history
/// and the report are wall clock from before `start`.
pub(crate) fn cycles_to_tolerance<S>(
    state: &mut S,
    opts: &MgOptions,
    b_sq: f64,
    start: impl FnOnce(&mut S) -> Result<f64>,
    mut step: impl FnMut(&mut S, usize) -> Result<f64>,
) -> Result<MgReport> {
    let rel = |sq: f64| rel_of(sq, b_sq);
    let t0 = Instant::now();
    let ms = || t0.elapsed().as_secs_f64() * 1e3;
    let mut res = start(state)?;
    if !res.is_finite() {
        return Err(overflowed(res, 0));
    }
    let mut history = vec![(ms(), rel(res))];
    let mut k = 0;
    while rel(res) >= opts.tol && k < opts.max_cycles {
        res = step(state, k)?;
        k += 1;
        if !res.is_finite() {
            return Err(overflowed(res, k));
        }
        history.push((ms(), rel(res)));
    }
    Ok(MgReport::new(
        k,
        res,
        rel(res),
        rel(res) < opts.tol,
        ms(),
        history,
    ))
}
