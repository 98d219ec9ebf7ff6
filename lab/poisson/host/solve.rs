//! The Jacobi solver to a tolerance, on a device (GPU or simulator, GPU
//! residual reduction) and on the CPU (rayon), and the one loop behind both
//! and behind the multi-GPU solve ([`super::multi::Placed::solve`]).

use super::cpu::{cpu_residual_sq, cpu_sweep_rayon, interior_norm_sq};
use super::launch::{Field, residual_sq};
use super::problem::{Problem, SolveOptions, SolveReport, overflowed, rel};
use super::types::{Element, k_of_h};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::runtime::Device;
use std::time::Instant;

/// How [`to_tolerance`] ended: sweeps done, the last squared residual norm,
/// whether the tolerance was reached, and how many residuals were taken.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Iterated {
    pub iterations: usize,
    pub res_sq: f64,
    pub converged: bool,
    pub checks: usize,
}

impl Iterated {
    /// The report of a solve that ended here and took `ms`, for a
    /// right-hand side of squared interior norm `b_sq`.
    pub(crate) fn report(self, b_sq: f64, ms: f64) -> SolveReport {
        SolveReport {
            iterations: self.iterations,
            rel_residual: rel(self.res_sq, b_sq),
            residual_norm: self.res_sq.sqrt(),
            converged: self.converged,
            ms,
            residual_checks: self.checks,
        }
    }
}

/// The solve-to-tolerance loop of every Jacobi solve (one device, the CPU,
/// several devices). With `opts.tol`: a residual before the first sweep and
/// after every `check_every` sweeps, stopping once `||r|| / ||b|| < tol` or
/// after `max_iters` sweeps. Without: `max_iters` sweeps, then one residual.
/// A residual that is not finite (an overflow, or a NaN in the data) ends
/// the solve with `overflow(res_sq, sweeps_done)`.
///
/// `state` is what the two steps share: `sweep(state, n)` runs `n` sweeps,
/// `residual_sq(state)` returns the squared 2-norm of the interior residual.
pub(crate) fn to_tolerance<S>(
    state: &mut S,
    opts: &SolveOptions,
    b_sq: f64,
    mut sweep: impl FnMut(&mut S, usize) -> Result<()>,
    mut residual_sq: impl FnMut(&mut S) -> Result<f64>,
    overflow: impl Fn(f64, usize) -> Error,
) -> Result<Iterated> {
    let (mut done, mut checks, mut res, mut converged) = (0, 0, f64::NAN, false);
    let mut measure = |state: &mut S, done: usize, checks: &mut usize| -> Result<f64> {
        let res = residual_sq(state)?;
        *checks += 1;
        if res.is_finite() {
            Ok(res)
        } else {
            Err(overflow(res, done))
        }
    };
    loop {
        if let Some(tol) = opts.tol {
            res = measure(state, done, &mut checks)?;
            if rel(res, b_sq) < tol {
                converged = true;
                break;
            }
        }
        if done >= opts.max_iters {
            break;
        }
        let n = if opts.tol.is_some() {
            opts.check_every.min(opts.max_iters - done)
        } else {
            opts.max_iters
        };
        sweep(state, n)?;
        done += n;
    }
    if opts.tol.is_none() {
        res = measure(state, done, &mut checks)?;
    }
    Ok(Iterated {
        iterations: done,
        res_sq: res,
        converged,
        checks,
    })
}

/// Solves on a device (GPU or simulator) with the GPU residual reduction
/// every `check_every` sweeps.
pub fn solve_device<T: Element>(
    dev: &Device,
    prob: &Problem<T>,
    opts: &SolveOptions,
) -> Result<(Vec<T>, SolveReport)> {
    opts.validate()?;
    prob.validate()?;
    let grid = prob.grid;
    let b_sq = interior_norm_sq(&prob.b, grid);
    let b = dev.upload(&prob.b)?;
    let mut state = (Field::new(dev, &prob.p0)?, dev.alloc_filled(1, 0.0f64)?);
    let k = T::from_f64(k_of_h(prob.h));
    let t0 = Instant::now();
    let it = to_tolerance(
        &mut state,
        opts,
        b_sq,
        |(f, _), n| f.run(dev, opts.rung, grid, &b, k, n, opts.depth),
        |(f, acc)| residual_sq(dev, grid, &f.cur, &b, prob.h, acc),
        |res, done| overflowed(prob, res, done),
    )?;
    dev.synchronize()?;
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    let p = dev.download(&state.0.cur)?;
    Ok((p, it.report(b_sq, ms)))
}

/// The same solver on the CPU (rayon on the current pool).
pub fn solve_cpu<T: Element>(
    prob: &Problem<T>,
    opts: &SolveOptions,
) -> Result<(Vec<T>, SolveReport)> {
    opts.validate()?;
    prob.validate()?;
    let grid = prob.grid;
    let b_sq = interior_norm_sq(&prob.b, grid);
    let k = T::from_f64(k_of_h(prob.h));
    let mut state = (prob.p0.clone(), vec![T::ZERO; prob.p0.len()]);
    let t0 = Instant::now();
    let it = to_tolerance(
        &mut state,
        opts,
        b_sq,
        |(cur, next), n| {
            for _ in 0..n {
                cpu_sweep_rayon(cur, &prob.b, next, grid, k);
                std::mem::swap(cur, next);
            }
            Ok(())
        },
        |(cur, _)| Ok(cpu_residual_sq(cur, &prob.b, grid, prob.h)),
        |res, done| overflowed(prob, res, done),
    )?;
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    Ok((state.0, it.report(b_sq, ms)))
}
