//! # ptxlab: the lab
//!
//! The workloads of the GPU material, written as Rust kernels and run, checked
//! and timed on top of [`ptxlab_runtime`] (re-exported as [`runtime`]), which
//! knows nothing about them. Each workload is a room, `lab/<room>`: its
//! kernels (modules of `kernels-gpu`) and its host code (a crate of its own,
//! `ptxlab-<room>`) side by side. This crate is the top floor:
//! * [`workloads`]: the registry of the rooms' benchmarks and simulator
//!   checks, and each room's crate under its workload name
//!   (`ptxlab::workloads::poisson` is `ptxlab_poisson`);
//! * [`command_line`]: the `ptxlab` command line itself (subcommands and
//!   arguments, the one parse entry point), and the `ptxlab` binary;
//! * [`sim_fuzz`]: a command under many simulator schedules;
//! * [`cluster`], [`fp8`] (`lab/hopper`) and [`pipeline_bugs`]
//!   (`lab/pipeline-bugs`): rooms without a benchmark.
//!
//! What the rooms share ([`report`], [`cli`], [`npy`], [`npz`], [`rng`],
//! [`modules`], [`bench_ctx`], [`distributed`], [`error`] and [`launch!`])
//! lives in `ptxlab-common` (`lab/common`), below every room, and is
//! re-exported here under the same names.

pub mod command_line;
pub mod sim_fuzz;
pub mod workloads;

pub use ptxlab_common::{
    Backend, Buffer, Device, Error, Form, LaunchConfig, MathMode, ModuleKey, Result, Timing,
    bench_ctx, cli, distributed, error, launch, modules, npy, npz, report, rng, runtime,
};
pub use ptxlab_hopper::{cluster, fp8};
pub use ptxlab_pipeline_bugs as pipeline_bugs;
