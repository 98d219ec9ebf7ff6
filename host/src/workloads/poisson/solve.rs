//! The Jacobi solver to a tolerance, on a device (GPU or simulator, GPU
//! residual reduction) and on the CPU (rayon).

use super::cpu::{cpu_residual_sq, cpu_sweep_rayon, interior_norm_sq};
use super::launch::{Field, residual_sq};
use super::problem::{Problem, SolveOptions, SolveReport, overflowed, rel};
use super::types::{Element, k_of_h};
use crate::error::Result;
use crate::runtime::Device;
use std::time::Instant;

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
    let mut f = Field::new(dev, &prob.p0)?;
    let mut acc = dev.alloc_filled(1, 0.0f64)?;
    let k = T::from_f64(k_of_h(prob.h));
    let t0 = Instant::now();
    let mut done = 0;
    let mut checks = 0;
    let mut res = f64::NAN;
    let mut converged = false;
    loop {
        if let Some(tol) = opts.tol {
            res = residual_sq(dev, grid, &f.cur, &b, prob.h, &mut acc)?;
            checks += 1;
            if !res.is_finite() {
                return Err(overflowed(prob, res, done));
            }
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
        f.run(dev, opts.rung, grid, &b, k, n, opts.depth)?;
        done += n;
    }
    if opts.tol.is_none() {
        res = residual_sq(dev, grid, &f.cur, &b, prob.h, &mut acc)?;
        checks += 1;
        if !res.is_finite() {
            return Err(overflowed(prob, res, done));
        }
    }
    dev.synchronize()?;
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    let p = dev.download(&f.cur)?;
    Ok((
        p,
        SolveReport {
            iterations: done,
            rel_residual: rel(res, b_sq),
            residual_norm: res.sqrt(),
            converged,
            ms,
            residual_checks: checks,
        },
    ))
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
    let mut cur = prob.p0.clone();
    let mut next = vec![T::ZERO; cur.len()];
    let t0 = Instant::now();
    let (mut done, mut checks, mut res, mut converged) = (0, 0, f64::NAN, false);
    loop {
        if let Some(tol) = opts.tol {
            res = cpu_residual_sq(&cur, &prob.b, grid, prob.h);
            checks += 1;
            if !res.is_finite() {
                return Err(overflowed(prob, res, done));
            }
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
        for _ in 0..n {
            cpu_sweep_rayon(&cur, &prob.b, &mut next, grid, k);
            std::mem::swap(&mut cur, &mut next);
        }
        done += n;
    }
    if opts.tol.is_none() {
        res = cpu_residual_sq(&cur, &prob.b, grid, prob.h);
        checks += 1;
        if !res.is_finite() {
            return Err(overflowed(prob, res, done));
        }
    }
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    Ok((
        cur,
        SolveReport {
            iterations: done,
            rel_residual: rel(res, b_sq),
            residual_norm: res.sqrt(),
            converged,
            ms,
            residual_checks: checks,
        },
    ))
}
