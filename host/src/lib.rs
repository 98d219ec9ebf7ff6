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
//! * [`report`]: plain result rows, tables, the environment block and plots
//!   (it needs nothing from the workloads);
//! * [`cli`]: the option checks every `ptxlab` subcommand shares;
//! * [`command_line`]: the `ptxlab` command line itself (subcommands and
//!   arguments, the one parse entry point);
//! * [`npy`], [`npz`], [`rng`]: `.npy` and `.npz` files and reproducible
//!   inputs.
#![allow(clippy::too_many_arguments)]
// Checks are written `!(err < tol)` on purpose: a NaN error must fail them.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod cli;
pub mod command_line;
pub mod modules;
pub mod npy;
pub mod npz;
pub mod report;
pub mod rng;
pub mod workloads;

pub use ptxlab_runtime as runtime;
pub use ptxlab_runtime::error;
pub use ptxlab_runtime::{
    Buffer, Device, Error, Form, LaunchConfig, ModuleKey, Result, Timing, Variant,
};

/// Launches a kernel of the lab's kernel crate (`kernels-gpu`):
/// `launch!(dev, cfg, vector::vector_add_f32(&a, &b, &mut c))` is
/// `ptxlab_runtime::launch!` with [`modules::KERNELS`] and the path
/// `kernels_gpu::vector::vector_add_f32`.
#[macro_export]
macro_rules! launch {
    ($dev:expr, $cfg:expr, $module:ident :: $kernel:ident ( $($arg:expr),* $(,)? )) => {
        $crate::runtime::launch!(
            $dev,
            &$crate::modules::KERNELS,
            $cfg,
            ::kernels_gpu::$module::$kernel($($arg),*)
        )
    };
}

/// Which backend a workload runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A real GPU.
    Gpu,
    /// The CPU simulator (same kernels, on the host).
    Sim,
    /// CPU baselines only.
    Cpu,
}

impl std::str::FromStr for Backend {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "gpu" => Ok(Backend::Gpu),
            "sim" => Ok(Backend::Sim),
            "cpu" => Ok(Backend::Cpu),
            _ => Err(Error::input(
                "backend",
                format!("`{s}`; allowed: gpu, sim, cpu"),
            )),
        }
    }
}
