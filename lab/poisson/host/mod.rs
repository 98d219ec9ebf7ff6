//! 2D Poisson by Jacobi iteration: typed launchers for the stencil ladder and
//! the residual reduction, CPU baselines (one thread, rayon, ndarray), checks
//! against a CPU f64 reference, the solver, the benchmark and the CLI; the
//! same sweep on several devices in [`multi`].
//!
//! Convention (the kernels' module docs have the details): `lap_h p = b` on
//! the interior, Dirichlet boundary; one sweep is
//! `p_new = 0.25 (pW + pE + pN + pS) - k b` with `k = h^2 / 4`; the residual
//! is `r = b - lap_h p` over interior cells; the solver stops when
//! `||r||_2 / ||b||_2` (interior cells; `||r||_2` alone when `b` is zero)
//! falls below the tolerance.
//!
//! # Files, from the bottom up
//! `types.rs` (rungs, the element trait, the grid, spacing checks),
//! `launch.rs` (typed launchers: the only place a kernel is named),
//! `cpu.rs` (CPU sweeps, the f64 reference, the residual), `problem.rs`
//! (a validated problem, the manufactured one, solve options and report),
//! `solve.rs` (the solver on a device and on the CPU), `check.rs` (inputs,
//! checks against the reference, the simulator check), `bench.rs` (rows),
//! `args.rs` and `input.rs` (CLI arguments and the problem they describe),
//! `multi/` (row slabs over devices), and `cli.rs` on top, which dispatches
//! to a single-device solve or to [`multi`].
#![allow(clippy::too_many_arguments)]

pub mod args;
pub mod bench;
pub mod check;
pub mod cli;
pub mod cpu;
pub mod input;
pub mod launch;
pub mod mg;
pub mod multi;
pub mod problem;
pub mod solve;
pub mod spectral;
pub mod types;

pub use args::{Args, MgArgs, SolveMethod};
pub use bench::{BENCH_DEPTHS, BENCH_SIZES, bench, cpu_rows};
pub use check::{
    CHECK_GRID_GPU, CHECK_H, CHECK_SWEEPS, CheckCase, bench_inputs, check_case, check_residual,
    random_inputs, sim_check, tolerance, verify,
};
pub use cli::{SIM_MAX_CELLS, SIM_MAX_WORK, cli};
pub use cpu::{
    cpu_residual_sq, cpu_sweep, cpu_sweep_nd, cpu_sweep_ndarray, cpu_sweep_rayon, interior_norm_sq,
    reference, with_threads,
};
pub use input::cli_problem;
pub use launch::{Field, residual_sq, sweep, sweep_config};
pub use problem::{Problem, SolveOptions, SolveReport, manufactured};
pub use solve::{solve_cpu, solve_device};
pub use types::{
    DEFAULT_DEPTH, Element, Grid, MAX_CELLS, NAME, Rung, check_h_for, default_h, h_range, k_of_h,
};
