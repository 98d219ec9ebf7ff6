//! One module per workload. Each exposes the same four things, so the CLI,
//! the benchmark runner and the simulator coverage test treat them alike:
//!
//! * typed launchers for its kernels (the only place a kernel name appears),
//!   its CPU baselines and its checks against an f64 reference;
//! * `bench(&BenchCtx) -> Result<Vec<Row>>`: check every variant, then time it;
//! * `sim_check() -> Result<()>`: every kernel of the workload on the CPU
//!   simulator against the CPU reference, on odd sizes;
//! * `Args` and `cli(&Args)`: the `ptxlab <workload>` subcommand.

use crate::error::Result;
use crate::report::{Ceilings, Row};
use crate::runtime::Device;

pub mod demo;
pub mod diffusion;
pub mod fusion;
pub mod lomb;
pub mod mathcheck;
pub mod matmul;
pub mod poisson;
pub mod primitives;
pub mod vector;

/// What a workload's benchmark gets.
pub struct BenchCtx<'a> {
    /// The device (GPU or simulator); `None` for a CPU-only run.
    pub dev: Option<&'a Device>,
    /// Smaller sizes and fewer repetitions.
    pub quick: bool,
    /// Ceilings of this run.
    pub ceilings: Ceilings,
    /// Why GPU rows are skipped, when they are.
    pub gpu_skip: Option<String>,
}

impl BenchCtx<'_> {
    /// The GPU device, if this run has one (not the simulator).
    pub fn gpu(&self) -> Option<&Device> {
        self.dev.filter(|d| !d.is_sim())
    }
    /// Timed repetitions to use.
    pub fn reps(&self) -> usize {
        match (self.quick, self.dev.map(|d| d.is_sim())) {
            (_, Some(true)) => 2,
            (true, _) => 10,
            (false, _) => 50,
        }
    }
}

/// A workload of the benchmark.
pub struct Workload {
    /// Name used by `--only` and in reports.
    pub name: &'static str,
    /// One line on what it computes.
    pub about: &'static str,
    /// The benchmark.
    pub bench: fn(&BenchCtx) -> Result<Vec<Row>>,
    /// Every kernel of the workload on the simulator against the CPU reference.
    pub sim_check: fn() -> Result<()>,
}

/// Every workload, in the order of the material.
pub fn all() -> Vec<Workload> {
    vec![
        Workload {
            name: "poisson",
            about: "2D Poisson, 5-point Jacobi ladder",
            bench: poisson::bench,
            sim_check: poisson::sim_check,
        },
        Workload {
            name: "poisson-mg",
            about: "2D Poisson to a tolerance: geometric multigrid and PCG",
            bench: poisson::mg::bench::bench,
            sim_check: poisson::mg::check::sim_check,
        },
        Workload {
            name: "lomb-scargle",
            about: "Lomb-Scargle periodogram ladder",
            bench: lomb::bench,
            sim_check: lomb::sim_check,
        },
        Workload {
            name: "vector-add",
            about: "c = a + b against the copy bandwidth",
            bench: vector::bench_ctx,
            sim_check: vector::sim_check,
        },
        Workload {
            name: "primitives",
            about: "parallel primitives: reduction ladder (reduce), histogram, Monte-Carlo pi",
            bench: primitives::bench,
            sim_check: primitives::sim_check,
        },
        Workload {
            name: "diffusion",
            about: "2D diffusion, race-free",
            bench: diffusion::bench,
            sim_check: diffusion::sim_check,
        },
        Workload {
            name: "matmul",
            about: "SGEMM ladder and the fused column sum",
            bench: matmul::bench,
            sim_check: matmul::sim_check,
        },
        Workload {
            name: "fusion",
            about: "kernel fusion, launch overhead and CUDA graphs",
            bench: fusion::bench,
            sim_check: fusion::sim_check,
        },
    ]
}

/// A one-row "skipped" result for a workload that needs a GPU.
pub fn skipped_gpu(workload: &str, ctx: &BenchCtx) -> Row {
    Row::skipped(
        workload,
        "GPU variants",
        "gpu",
        ctx.gpu_skip.as_deref().unwrap_or("no GPU in this run"),
    )
}
