//! # ptxlab: run, check and time Rust GPU kernels
//!
//! The host side of the workspace:
//! * [`runtime`]: a [`Device`] that is either a GPU (through `cudarc`, driver
//!   loaded at run time, so nothing CUDA is needed to build) or the CPU
//!   simulator; typed [`Buffer`]s; launches checked against the device and the
//!   kernel's own launch bounds; the module cache (PTX JIT or cubin, timed);
//!   event timing.
//! * [`workloads`]: one module per workload, each with its typed launchers,
//!   CPU baselines, a correctness check against an f64 reference, and a
//!   benchmark that returns report rows.
//! * [`report`]: result rows, tables and the environment block.
//!
//! The kernels themselves are in the `kernels-gpu` crate; `build.rs` compiles
//! them to PTX with `ptxlab-builder` and [`modules`] embeds the result.
#![allow(clippy::too_many_arguments)]
// Checks are written `!(err < tol)` on purpose: a NaN error must fail them.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod cli;
pub mod error;
pub mod npy;
pub mod plot;
pub mod report;
pub mod rng;
pub mod runtime;
pub mod workloads;

pub use error::{Error, Result};
pub use runtime::{Buffer, Device, Form, LaunchConfig, ModuleKey, Timing, Variant};

/// The kernels built by `build.rs`: PTX (precise and fast-math), cubins and
/// the `ptxas` resource report.
pub mod modules {
    include!(concat!(env!("OUT_DIR"), "/modules.rs"));

    /// The `ptxas` resource report of a module (empty when ptxas was absent).
    pub fn resources(fast: bool) -> Vec<ptxlab_builder::ResourceUsage> {
        let json = if fast {
            KERNELS_FAST_RESOURCES_JSON
        } else {
            KERNELS_RESOURCES_JSON
        };
        serde_json::from_str(json).unwrap_or_default()
    }

    /// Registers and spill bytes of a kernel for an arch, from the report.
    pub fn resource(kernel: &str, arch: &str, fast: bool) -> Option<ptxlab_builder::ResourceUsage> {
        resources(fast)
            .into_iter()
            .find(|r| r.kernel == kernel && r.arch == arch)
    }
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
