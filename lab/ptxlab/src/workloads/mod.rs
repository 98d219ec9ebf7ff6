//! One module per workload. Each exposes the same four things, so the CLI,
//! the benchmark runner and the simulator coverage test treat them alike:
//!
//! * typed launchers for its kernels (the only place a kernel name appears),
//!   its CPU baselines and its checks against an f64 reference;
//! * `bench(&BenchCtx) -> Result<Vec<Row>>`: check every variant, then time it
//!   (the context, [`BenchCtx`], comes from [`crate::bench_ctx`], below them);
//! * `sim_check() -> Result<()>`: every kernel of the workload on the CPU
//!   simulator against the CPU reference, on odd sizes;
//! * `Args` and `cli(&Args)`: the `ptxlab <workload>` subcommand.

use crate::error::Result;
use crate::report::Row;

// The context the registry hands each benchmark lives below the workloads
// (`crate::bench_ctx`); named here too, as the registry's own signature.
pub use crate::bench_ctx::BenchCtx;

// Each workload's host code is the crate of its room, `lab/<room>` (`ptxlab-<room>`), beside its
// kernels (`lab/<room>/kernels`, modules of the kernel crate `lab/kernels.rs`).
pub use ptxlab_attention as attention;
pub use ptxlab_demo as demo;
pub use ptxlab_diffusion as diffusion;
pub use ptxlab_fft as fft;
pub use ptxlab_fusion as fusion;
pub use ptxlab_lomb as lomb;
pub use ptxlab_mathcheck as mathcheck;
pub use ptxlab_matmul as matmul;
pub use ptxlab_poisson as poisson;
pub use ptxlab_primitives as primitives;
pub use ptxlab_vector as vector;

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
            about: "2D diffusion: race-free ping-pong and temporal blocking, and the material's racy in-place kernel",
            bench: diffusion::bench,
            sim_check: diffusion::sim_check,
        },
        Workload {
            name: "matmul",
            about: "SGEMM ladder, tensor-core GEMMs (BF16, FP16, 3xTF32) and the fused column sum",
            bench: matmul::bench,
            sim_check: matmul::sim_check,
        },
        Workload {
            name: "attention",
            about: "attention, the FlashAttention ladder (three kernels to warp-specialised wgmma)",
            bench: attention::bench,
            sim_check: attention::sim_check,
        },
        Workload {
            name: "attention-decode",
            about: "attention decoding over a paged KV cache (split-KV, grouped heads), in GB/s",
            bench: attention::decode::bench,
            sim_check: attention::decode::sim_check,
        },
        Workload {
            name: "fft",
            about: "FFT ladder: complex and real, 1-D and 2-D, any length (Stockham, shared memory, Bluestein)",
            bench: fft::bench,
            sim_check: fft::sim_check,
        },
        Workload {
            name: "fusion",
            about: "kernel fusion, launch overhead and CUDA graphs",
            bench: fusion::bench,
            sim_check: fusion::sim_check,
        },
    ]
}
