//! Lomb-Scargle periodogram: the CPU reference (SciPy's definition, f64,
//! one thread and rayon), typed launchers for every kernel of
//! `kernels_gpu::lomb`, the ladder of the material rung by rung, checks
//! against the reference, the benchmark and the `ptxlab lomb-scargle` CLI.
//!
//! | file | holds |
//! |---|---|
//! | `input.rs` | the material's samples and grid, random samples, validation, options, even-grid detection, range checks |
//! | `cpu.rs` | the CPU reference (f64, one thread and rayon) |
//! | `tables.rs` | the host-side plans and per-sample tables of the even-grid rungs |
//! | `launch.rs` | element types, device buffers, typed launchers, one run of a rung |
//! | `ladder.rs` | the rungs and the launch shape |
//! | `check.rs` | accuracy against the reference, one rung's check, `sim_check` |
//! | `bench.rs` | benchmark rows |
//! | `cli.rs` | `ptxlab lomb-scargle` |

mod bench;
mod check;
mod cli;
mod cpu;
mod input;
mod ladder;
mod launch;
mod tables;

pub use bench::bench;
pub use check::{Accuracy, accuracy, check, coarse_case, sim_check};
pub use cli::{Args, MAX_BLOCKS_PER_SM, SIM_MAX_PAIRS, cli, cli_inputs};
pub use cpu::{reference, reference_rayon};
pub use input::{
    check_range, even_grid, linspace, material_freqs, material_samples, npy_f64, prepare,
    random_samples, validate,
};
pub use ladder::{Rung, Shape};
pub use launch::{Bufs, Elem, Kernel, config, periodogram, run_rung};
pub use tables::{
    CHEBY_MAX_SPAN, TAYLOR_2TAU_MAX_F32, TAYLOR_2TAU_MAX_F64, TaylorPlan, anchor_table,
    cheby_shift, recurrence_tables, taylor_plan, taylor_table,
};

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

/// SciPy's options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Subtract the mean of `y` first.
    pub precenter: bool,
    /// Divide by `sum y^2 / 2` (SciPy's `normalize=True`).
    pub normalize: bool,
}
