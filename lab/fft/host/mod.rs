//! FFT: complex and real transforms of any length, 1-D batched and 2-D, f32
//! and f64, on the FFT ladder's kernels (`kernels_gpu::fft`), checked
//! against rustfft in f64 and timed.
//!
//! | file | what it holds |
//! |---|---|
//! | `launch.rs` | [`Rung`], [`Plan`] (rows of one length: Stockham, shared memory, register passes of rungs 3 and 4, four-step, Bluestein), [`Columns`]: the launchers |
//! | `lines.rs` | [`Element`], the twiddle tables, and the line kernels of rungs 3 and 4: the lengths they take, lines per block, one pass over rows or columns |
//! | `problem.rs` | [`Spec`] and [`Fft`]: 1-D or 2-D, complex or real, forward or inverse |
//! | `cpu.rs` | the rustfft reference in f64 and the random inputs |
//! | `check.rs` | [`check`] against the reference and [`sim_check`] |
//! | `bench.rs` | the benchmark rows |
//! | `cli.rs` | `ptxlab fft` |

mod bench;
mod check;
mod cli;
mod cpu;
mod launch;
mod lines;
mod problem;

pub use bench::{bench, bench_spec, flops, size_label};
pub use check::{Check, check, compare, run_once, sim_check, sim_specs, tolerance};
pub use cli::{Args, SIM_MAX, cli, parse_shape};
pub use cpu::{random_input, reference, time_reference};
pub use launch::{Columns, MAX_LEN, Plan, Rung, bluestein_tables, radices, transpose};
pub use lines::{
    Element, coalesced_four_step_takes, coalesced_takes, line_radices, register_four_step_takes,
    register_takes, root, twiddle_table,
};
pub use problem::{Fft, Spec};
