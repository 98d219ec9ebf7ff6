//! SGEMM ladder and the column sum of a product: typed launchers, CPU
//! baselines (ndarray `dot` on one thread, a rayon blocked kernel), checks
//! against an f64 reference, the benchmark and the `ptxlab matmul` CLI.
//!
//! Shapes everywhere: `A` is `m x k`, `B` is `k x n`, `C = A B` is `m x n`,
//! row-major f32.
//!
//! | file | holds |
//! |---|---|
//! | `rung.rs` | [`Rung`]: the SGEMM ladder's names, labels, kernels and launch shapes |
//! | `launch.rs` | typed launchers ([`gemm`], the column-sum kernels), shape and length checks |
//! | `colsum.rs` | `colsum(A B)`: the direct way and the fused plans |
//! | `cpu.rs` | inputs, f64 references, CPU baselines, operation counts |
//! | `check.rs` | checks against the f64 reference, [`sim_check`] |
//! | `bench.rs` | the benchmark rows |
//! | `cli.rs` | `ptxlab matmul` |

mod bench;
mod check;
mod cli;
mod colsum;
mod cpu;
mod launch;
mod rung;

pub use bench::bench;
pub use check::{TOL, check_colsum, check_fused, check_rung, sim_check};
pub use cli::{Args, CPU_MAX_MNK, SIM_MAX_MNK, cli};
pub use colsum::{Colsum, ColsumBufs, FusedPlan, bench_plans, colsum_of_product, fused_colsum};
pub use cpu::{
    colsum_bytes, colsum_reference, cpu_ndarray, cpu_rayon, flops, inputs, reference_f64,
};
pub use launch::{
    Loads, check_shapes, colsum_add, colsum_add_with, gemm, vecmat_add, vecmat_add_with, zero2,
};
pub use rung::Rung;
