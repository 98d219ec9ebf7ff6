//! Kernel fusion and launch overhead: the three-step elementwise pipeline
//! unfused (3 kernels) and fused (1), and many tiny launches plain against a
//! CUDA graph captured once and replayed.
//!
//! | file | what it holds |
//! |---|---|
//! | `pipeline.rs` | [`unfused`], [`fused`]: the pipeline's launchers |
//! | `launch_overhead.rs` | the tiny kernel, [`TinyGraph`], [`launch_overhead`] |
//! | `cpu.rs` | CPU baselines, the f64 reference, the input |
//! | `check.rs` | [`check`] against the reference and [`sim_check`] |
//! | `bench.rs` | the benchmark rows |
//! | `cli.rs` | `ptxlab fusion`, `ptxlab launch-overhead` |
// Checks are written `!(err < tol)` on purpose: a NaN error must fail them.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod bench;
mod check;
mod cli;
mod cpu;
mod launch_overhead;
mod pipeline;

pub use bench::bench;
pub use check::{check, sim_check};
pub use cli::{Args, LaunchArgs, SIM_MAX_N, cli, cli_launch};
pub use cpu::{cpu_rayon, cpu_serial, input, reference};
pub use launch_overhead::{MAX_KERNELS, TinyGraph, check_counts, launch_overhead, plain, tiny};
pub use pipeline::{COEFFS, fused, unfused};
