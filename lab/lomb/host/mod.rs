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
//! | `phase.rs` | long spans: centred times, split operands, phases modulo 2 pi, plain or `_long` kernels |
//! | `model.rs` | the floating-mean model (astropy's options and normalizations), its preparation and CPU reference |
//! | `launch.rs` | element types, device buffers, typed launchers (the only place a kernel is named) |
//! | `bufs.rs` | preparing one periodogram's buffers |
//! | `general.rs` | the floating-mean model on the GPU: buffers, runs, checks |
//! | `run.rs` | launch configurations, one run of a rung |
//! | `ladder.rs` | the rungs (and `--variant`'s parser) and the launch shape |
//! | `check.rs` | accuracy against the reference, one rung's check, `sim_check` |
//! | `batch.rs` | batches of curves: the batch, its buffers, the run, best periods |
//! | `batch_io.rs` | reading a batch (`.npz` with offsets, or a folder of `.npy`) |
//! | `bench.rs` | benchmark rows: the ladder |
//! | `bench_models.rs` | benchmark rows: split phases, long spans, the floating-mean model, batches |
//! | `cli.rs` | `ptxlab lomb-scargle`: arguments, one curve's run |
//! | `cli_batch.rs` | `ptxlab lomb-scargle --curves` |
// Checks are written `!(err < tol)` on purpose: a NaN error must fail them.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod batch;
mod batch_io;
mod bench;
mod bench_models;
mod bufs;
mod check;
mod cli;
mod cli_batch;
mod cpu;
mod general;
mod input;
mod ladder;
mod launch;
mod model;
mod phase;
mod run;
mod tables;

pub use batch::{
    Batch, batch_config, batch_peaks, batch_periodogram, batch_reference, device_row_peaks,
    host_row_peaks, run_batch, survey_batch, top_peaks,
};
pub use batch_io::{BATCH_FORMATS, parse_npz, read_batch, read_dir, read_npz};
pub use bench_models::{BATCH_CURVES, BATCH_FREQS, BATCH_SAMPLES, BATCH_SPAN, long_case};
pub use check::{
    Accuracy, accuracy, check, check_general, check_with, coarse_case, sim_check, verify,
};
pub use cli::{
    Args, BatchJob, CheckMode, MAX_BLOCKS_PER_SM, MAX_TOP, Model, SAMPLE_FREQS, SIM_MAX_PAIRS,
    cli_inputs, model_of, sample_indices,
};
pub use cli_batch::{SAMPLE_CURVES, best_periods, sample_curves};
pub use cpu::{reference, reference_rayon};
pub use general::{GENERAL_RUNGS, general_supported, periodogram_general, run_general};
pub use input::{
    check_range, even_grid, linspace, material_freqs, material_samples, npy_f64, prepare,
    random_samples, validate,
};
pub use ladder::{REG_CAPS, Rung, Shape, VariantParser, variant_parser};
pub use launch::{
    BatchBufs, Bufs, Elem, Even, GenBufs, Kernel, launch_batch, launch_direct, launch_gen,
    launch_recurrence,
};
pub use model::{General, Normalization, Prepared, prepare_general, reference_general};
pub use phase::{Phases, centre, max_phase, mod_2pi, split};
pub use run::{Layout, config, config_with, periodogram, periodogram_with, run_rung};
pub use tables::{
    CHEBY_MAX_SPAN, TAYLOR_2TAU_MAX_F32, TAYLOR_2TAU_MAX_F64, TaylorPlan, anchor_table,
    cheby_shift, recurrence_tables, recurrence_tables_long, taylor_plan, taylor_table,
    taylor_table_long,
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

/// Benchmark rows: the ladder (`bench.rs`), then, with a GPU and not
/// `--quick`, the split phases, long spans, the floating-mean model and the
/// batches (`bench_models.rs`).
pub fn bench(
    ctx: &ptxlab_common::bench_ctx::BenchCtx,
) -> ptxlab_common::error::Result<Vec<ptxlab_common::report::Row>> {
    let (mut rows, cpu_material) = bench::bench_ladder_rows(ctx)?;
    if let (Some(cpu_material), Some(dev)) = (cpu_material, ctx.gpu()) {
        bench_models::bench_models(dev, ctx, cpu_material, &mut rows)?;
    }
    Ok(rows)
}

/// `ptxlab lomb-scargle`: one curve (`cli.rs`) or a batch (`cli_batch.rs`);
/// the rows it measured.
pub fn cli(args: &Args) -> ptxlab_common::error::Result<Vec<ptxlab_common::report::Row>> {
    match cli::curve_or_batch(args)? {
        cli::Curve::Batch(job) => cli_batch::run_batch_job(args, job),
        cli::Curve::Done(rows) => Ok(rows),
    }
}
