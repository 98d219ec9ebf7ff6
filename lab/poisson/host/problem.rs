//! A validated problem (grid, spacing, right-hand side, initial field with
//! its Dirichlet boundary), the manufactured test problem, and what a solve
//! is asked for and reports.

use super::cpu::interior_norm_sq;
use super::types::{Element, Grid, Rung, check_depth, check_h_for, default_h};
use ptxlab_common::error::{Error, Result};
use ptxlab_device::math::Real;

/// A validated problem: grid, spacing, right-hand side and initial field
/// (whose boundary cells are the Dirichlet values).
#[derive(Debug, Clone)]
pub struct Problem<T> {
    /// The grid.
    pub grid: Grid,
    /// Grid spacing.
    pub h: f64,
    /// Right-hand side (row-major, `ny x nx`).
    pub b: Vec<T>,
    /// Initial field.
    pub p0: Vec<T>,
}

fn first_non_finite<T: Real>(v: &[T]) -> Option<(usize, T)> {
    v.iter().position(|x| !x.is_finite()).map(|i| (i, v[i]))
}

impl<T: Element> Problem<T> {
    /// Checks lengths, the spacing and that `b` and `p0` are finite.
    pub fn new(grid: Grid, h: f64, b: Vec<T>, p0: Vec<T>) -> Result<Self> {
        let p = Self { grid, h, b, p0 };
        p.validate()?;
        Ok(p)
    }

    /// The checks of [`Problem::new`], for a problem built from its public
    /// fields: the grid, `h` (see [`super::types::h_range`]), the lengths, finite values,
    /// and a sum of `b^2` that f64 can hold.
    pub fn validate(&self) -> Result<()> {
        let (grid, h, b, p0) = (self.grid, self.h, &self.b, &self.p0);
        grid.validate()?;
        check_h_for::<T>(h)?;
        for (name, v) in [("b", b), ("p0", p0)] {
            if v.len() != grid.cells() {
                return Err(Error::input(
                    name,
                    format!(
                        "{} values, but the grid {} needs {}",
                        v.len(),
                        grid.label(),
                        grid.cells()
                    ),
                ));
            }
            if let Some((i, x)) = first_non_finite(v) {
                return Err(Error::input(
                    name,
                    format!(
                        "the value at row {}, column {} is {x:?}; every value must be finite",
                        i / grid.nx,
                        i % grid.nx
                    ),
                ));
            }
        }
        let b_sq = interior_norm_sq(b, grid);
        if !b_sq.is_finite() {
            let big = b.iter().fold(0.0f64, |m, v| m.max(v.to_f64().abs()));
            return Err(Error::input(
                "b",
                format!(
                    "the sum of b^2 over the interior overflows f64 (|b| up to {big:e}); the \
                     relative residual cannot be measured: scale b (and p0) down"
                ),
            ));
        }
        Ok(())
    }
}

/// The error of a solve whose residual became inf or NaN: the iteration
/// overflowed (or the inputs were too large for `T`).
pub(crate) fn overflowed<T: Element>(prob: &Problem<T>, res_sq: f64, sweeps: usize) -> Error {
    overflowed_at::<T>(prob.h, res_sq, sweeps)
}

/// [`overflowed`] for a problem of spacing `h` in `T` arithmetic.
pub(crate) fn overflowed_at<T: Element>(h: f64, res_sq: f64, sweeps: usize) -> Error {
    Error::input(
        "poisson problem",
        format!(
            "the residual became {} after {sweeps} sweeps: b, p0 and 1/h^2 = {:e} are too large \
             for {} arithmetic; scale b and p0 down, choose h nearer 1{}",
            res_sq.sqrt(),
            1.0 / (h * h),
            T::NAME,
            if std::mem::size_of::<T>() == 4 {
                ", or use --precision f64"
            } else {
                ""
            }
        ),
    )
}

/// Manufactured problem on a square-celled grid over `[0, (nx-1) h] x [0, (ny-1) h]`,
/// `h = 1 / (max(nx, ny) - 1)`: `p* = sin(pi x) sin(pi y)`, `b = lap p* =
/// -2 pi^2 p*` (the continuous Laplacian), `p0` = `p*` on the boundary and 0
/// inside. Returns the problem (in f64) and `p*`. On a square grid the
/// discrete solution is `p* 2 pi^2 / lambda_h` with `lambda_h = 8 sin^2(pi h / 2) / h^2`,
/// so the discretisation error is about `pi^2 h^2 / 12 max|p*|` (0.82 h^2).
pub fn manufactured(grid: Grid) -> (Problem<f64>, Vec<f64>) {
    let h = default_h(grid);
    let pi = std::f64::consts::PI;
    let mut exact = vec![0.0; grid.cells()];
    let mut b = vec![0.0; grid.cells()];
    let mut p0 = vec![0.0; grid.cells()];
    for y in 0..grid.ny {
        for x in 0..grid.nx {
            let i = y * grid.nx + x;
            let v = (pi * x as f64 * h).sin() * (pi * y as f64 * h).sin();
            exact[i] = v;
            b[i] = -2.0 * pi * pi * v;
            if x == 0 || y == 0 || x == grid.nx - 1 || y == grid.ny - 1 {
                p0[i] = v;
            }
        }
    }
    (Problem { grid, h, b, p0 }, exact)
}

/// Solver settings.
#[derive(Debug, Clone, Copy)]
pub struct SolveOptions {
    /// Kernel of the sweeps (ignored by the CPU solver).
    pub rung: Rung,
    /// Temporal depth (rung 4).
    pub depth: u32,
    /// Stop when the relative residual is below this; `None`: run `max_iters`.
    pub tol: Option<f64>,
    /// Most sweeps.
    pub max_iters: usize,
    /// Sweeps between residual checks.
    pub check_every: usize,
}

impl SolveOptions {
    /// Rejects a tolerance that is not a positive finite number, a zero check
    /// interval and a depth out of range.
    pub fn validate(&self) -> Result<()> {
        if let Some(t) = self.tol
            && !(t.is_finite() && t > 0.0)
        {
            return Err(Error::input(
                "--tol",
                format!("{t}; the tolerance must be a positive finite number"),
            ));
        }
        if self.check_every == 0 {
            return Err(Error::input(
                "--check-every",
                "0; the residual check interval must be at least 1 sweep",
            ));
        }
        check_depth(self.depth)
    }

    /// When the solve stops, for the line printed before it.
    pub fn stop_label(&self) -> String {
        match self.tol {
            Some(t) => format!(
                "until ||r||/||b|| < {t:e} (at most {} sweeps, checked every {})",
                self.max_iters, self.check_every
            ),
            None => format!("{} sweeps", self.max_iters),
        }
    }
}

/// What a solve did.
#[derive(Debug, Clone)]
pub struct SolveReport {
    /// Sweeps done.
    pub iterations: usize,
    /// Final `||r||_2 / ||b||_2` (or `||r||_2` when `b` is zero).
    pub rel_residual: f64,
    /// Final `||r||_2`.
    pub residual_norm: f64,
    /// The tolerance was reached.
    pub converged: bool,
    /// Wall time of the whole solve (sweeps and residual checks), ms.
    pub ms: f64,
    /// Residual evaluations.
    pub residual_checks: usize,
}

pub(crate) fn rel(res_sq: f64, b_sq: f64) -> f64 {
    if b_sq > 0.0 {
        (res_sq / b_sq).sqrt()
    } else {
        res_sq.sqrt()
    }
}
