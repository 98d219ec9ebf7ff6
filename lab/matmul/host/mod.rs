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
//! | `args.rs` | `ptxlab matmul`'s arguments and size limits |
//! | `cli.rs` | `ptxlab matmul` |
//! | `tensor.rs` | the tensor-core ladder: [`TcRung`], [`Tf32x3`], launchers [`gemm_half`], [`gemm_tf32x3`] |
//! | `tensor_bench.rs` | the tensor-core rows of the benchmark |
//! | `tensor_cli.rs` | `ptxlab matmul --precision bf16\|f16\|tf32x3` |
//! | `tensor_check.rs` | the tensor-core kernels against the f64 reference (3xTF32 element-wise: [`verify_tf32x3`]), [`sim_check_tensor`] |
//! | `fp8.rs` | the FP8 GEMM: [`Fp8Kernel`], [`Fp8Scales`], [`Fp8BlockScales`], [`Fp8Plan`], [`gemm_fp8`], [`gemm_fp8_blockscaled`] (`A` and `B^T` as E4M3, BF16 out) |
//! | `fp8_check.rs` | quantised inputs ([`fp8_inputs`], [`fp8_block_inputs`]), the f64 reference of the dequantised inputs, [`check_fp8`], [`check_fp8_block`], [`sim_check_fp8`], [`sim_check_fp8_block`] |
//! | `fp8_cli.rs` | `ptxlab matmul --precision fp8` |
//! | `fp8_bench.rs` | the FP8 rows of the benchmark |
// Checks are written `!(err < tol)` on purpose: a NaN error must fail them.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod args;
mod bench;
mod check;
mod cli;
mod colsum;
mod cpu;
mod fp8;
mod fp8_bench;
mod fp8_check;
mod fp8_cli;
mod launch;
mod rung;
mod tensor;
mod tensor_bench;
mod tensor_check;
mod tensor_cli;

pub use args::{Args, CPU_MAX_MNK, SIM_MAX_MNK, Variant};
pub use bench::bench;
pub use check::{TOL, check_colsum, check_fused, check_rung, sim_check_f32};
pub use cli::cli;
pub use colsum::{Colsum, ColsumBufs, FusedPlan, bench_plans, colsum_of_product, fused_colsum};
pub use cpu::{
    colsum_bytes, colsum_reference, cpu_ndarray, cpu_rayon, flops, inputs, reference_f64,
};
pub use fp8::{
    Fp8BlockScaleBufs, Fp8BlockScales, Fp8Kernel, Fp8Plan, Fp8Scales, Fp8Scaling, check_scale,
    fp8_shape_refusal, gemm_fp8, gemm_fp8_blockscaled, transpose_fp8,
};
pub use fp8_bench::{fp8_block_shapes, fp8_shapes};
pub use fp8_check::{
    FP8_BLOCK_SIM_SHAPES, FP8_SIM_SHAPES, Fp8BlockInputs, Fp8Inputs, check_fp8, check_fp8_block,
    e4m3_scale, fp8_block_error, fp8_block_inputs, fp8_error, fp8_inputs, fp8_tol, quantize_e4m3,
    reference_fp8, reference_fp8_block, sim_check_fp8, sim_check_fp8_block, widen_e4m3,
};
pub use launch::{
    Loads, check_shapes, colsum_add, colsum_add_with, gemm, vecmat_add, vecmat_add_with, zero2,
};
pub use rung::Rung;
pub use tensor::{
    Half, HalfPlan, HalfType, Precision, SIM_PERSISTENT_BLOCKS, Staging, TcRung, Tf32x3,
    Tf32x3Plan, gemm_half, gemm_tf32x3, tf32x3_scratch,
};
pub use tensor_bench::tensor_shapes;
pub use tensor_check::{
    POISON_16, U_F32, check_half, check_tf32x3, half_inputs, sim_check_tensor, sim_shapes,
    tf32x3_c, tf32x3_depth, verify_tf32x3, widen,
};

/// Every matmul kernel on the simulator at small odd sizes: the SGEMM
/// ladder and column sums ([`sim_check_f32`]), the tensor-core ladder
/// ([`sim_check_tensor`]), then the FP8 GEMM ([`sim_check_fp8`]).
pub fn sim_check() -> ptxlab_common::error::Result<()> {
    sim_check_f32()?;
    sim_check_tensor()?;
    sim_check_fp8()
}
