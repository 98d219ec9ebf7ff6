//! # ptxlab: the lab
//!
//! The workloads of the GPU material, written as Rust kernels and run, checked
//! and timed on top of [`ptxlab_runtime`] (re-exported as [`runtime`]), which
//! knows nothing about them:
//! * [`modules`]: the lab's kernel crate (`kernels-gpu`) as `build.rs`
//!   embedded it, exactly as any host crate embeds its own;
//! * [`workloads`]: one folder per workload: its kernels' launchers (the
//!   library API), CPU references, checks against an f64 reference, bench
//!   rows and CLI arguments;
//! * [`bench_ctx`]: what a workload's benchmark gets (below the workloads
//!   and the registry that hands it to them);
//! * [`report`]: plain result rows, tables, the environment block and plots
//!   (it needs nothing from the workloads);
//! * [`cli`]: the option checks every `ptxlab` subcommand shares;
//! * [`command_line`]: the `ptxlab` command line itself (subcommands and
//!   arguments, the one parse entry point);
//! * [`npy`], [`npz`], [`rng`]: `.npy` and `.npz` files and reproducible
//!   inputs;
//! * [`pipeline_bugs`]: the planted bugs of asynchronous pipelines and
//!   what catches them; [`sim_fuzz`]: a command under many simulator
//!   schedules.
//! * [`fp8`]: the FP8 conversions on a device, checked bit for bit
//!   against the device layer's software ones.
#![feature(f128)]
#![allow(clippy::too_many_arguments)]
// Checks are written `!(err < tol)` on purpose: a NaN error must fail them.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod bench_ctx;
pub mod cli;
pub mod cluster;
pub mod command_line;
pub mod distributed;
pub mod error;
pub mod fp8;
pub mod modules;
pub mod npy;
pub mod npz;
pub mod pipeline_bugs;
pub mod report;
pub mod rng;
pub mod sim_fuzz;
pub mod workloads;

pub use error::{Error, Result};
pub use ptxlab_runtime as runtime;
pub use ptxlab_runtime::{Buffer, Device, Form, LaunchConfig, MathMode, ModuleKey, Timing};

/// Launches a kernel of the lab's kernel crate (`kernels-gpu`):
/// `launch!(dev, cfg, vector::vector_add::<f32>(&a, &b, &mut c))` is
/// `ptxlab_runtime::launch!` with [`modules::KERNELS`] and the path
/// `kernels_gpu::vector::vector_add::<f32>`.
#[macro_export]
macro_rules! launch {
    ($target:expr, $cfg:expr, $($call:tt)+) => {
        $crate::runtime::launch!(
            $target,
            &$crate::modules::KERNELS,
            $cfg,
            ::kernels_gpu::$($call)+
        )
        .map_err($crate::Error::from)
    };
}

/// Which backend a workload runs on (`--backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// A real GPU.
    Gpu,
    /// The CPU simulator (same kernels, on the host).
    Sim,
    /// CPU baselines only.
    Cpu,
}
