//! # ptxlab-common: what the lab's rooms share
//!
//! The code every workload of the lab (`lab/<room>/host`) stands on, and
//! nothing about any one workload:
//! * [`modules`]: the lab's kernel crate (`kernels-gpu`) as `build.rs`
//!   embedded it, exactly as any host crate embeds its own, and [`launch!`]
//!   over it;
//! * [`bench_ctx`]: what a workload's benchmark gets;
//! * [`report`]: plain result rows, tables, the environment block and plots;
//! * [`cli`]: the option checks every `ptxlab` subcommand shares, and
//!   [`Backend`];
//! * [`npy`], [`npz`], [`rng`]: `.npy` and `.npz` files and reproducible
//!   inputs;
//! * [`distributed`]: one process per GPU (rendezvous, bootstrap);
//! * [`error`]: the lab's [`Error`].
//!
//! A room's files name these by this crate (`ptxlab_common::cli`,
//! `use ptxlab_common::launch;`), so `crate::` in a room always means the
//! room itself (its own `cli.rs`, `launch.rs`).

pub mod bench_ctx;
pub mod cli;
pub mod distributed;
pub mod error;
pub mod modules;
pub mod npy;
pub mod npz;
pub mod report;
pub mod rng;

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
