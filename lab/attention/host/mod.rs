//! Attention, `softmax(Q K^T scale) V`: the FlashAttention ladder of
//! [`kernels_gpu::attention`], from three kernels through memory to
//! warp-specialised `wgmma` on Hopper, with the f64 reference (and the
//! log-sum-exp), the checks, the benchmark rows and `ptxlab attention`.
//!
//! Tensors are `(B, H, S, D)` row-major: `B H` heads, each `S` rows of `D`
//! 16-bit values (BF16 or FP16 bits in `u16`); `Q` has `Sq` rows, `K` and
//! `V` `Skv`. With grouped-query attention (`--kv-heads`) `K` and `V` are
//! `(B, H_kv, Skv, D)` with `H_kv` dividing `H`, and query head `h` reads
//! `K`/`V` head `h / (H / H_kv)` ([`Shape::group`]).
//!
//! | file | holds |
//! |---|---|
//! | `types.rs` | [`Precision`], [`Rung`] (names, labels, which shapes each takes), [`Shape`] |
//! | `cpu.rs` | the inputs (a hash the torch peer repeats), the output poison, rounding, the f64 [`reference()`] |
//! | `launch.rs` | [`Plan`]: one forward pass of a rung, its tensor maps and scratch |
//! | `packed.rs` | [`Packed`]: variable-length batches (`cu_seqlens`), their layout and f64 references |
//! | `packed_cli.rs` | `ptxlab attention --cu-seqlens` |
//! | `check.rs` | error measures and bounds, [`check_rung`], [`sim_check_16bit`] |
//! | `backward.rs` | [`Backward`]: the backward pass's launches, its bounds and [`check_backward`] |
//! | `bench.rs` | the benchmark rows |
//! | `cli.rs` | `ptxlab attention` |
//! | `decode/` | [`decode`]: decoding over a paged KV cache, `ptxlab attention-decode` |
// Checks are written `!(err < tol)` on purpose: a NaN error must fail them.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod backward;
mod bench;
mod check;
mod cli;
mod cpu;
mod fp8;
mod launch;
mod packed;
mod packed_cli;
mod types;

pub mod decode;

pub use backward::{
    Backward, BwdRung, GradErrors, Grads, backward_entry, backward_flops, backward_refuses,
    check_backward, check_backward_on, check_backward_rungs, grad_bounds, grad_errors, grad_inputs,
    lse_forward, verify_grads,
};
pub use bench::{
    bench, bench_backward_shapes, bench_gqa_shapes, bench_packed_lengths, bench_shapes,
    bench_window_shapes,
};
pub use check::{
    Errors, SIM_GQA_SHAPES, SIM_PACKED, SIM_SHAPES, bound, check_packed, check_rung, errors,
    packed_errors, packed_grad_errors, sim_check_16bit, verify,
};
pub use cli::{Args, CPU_MAX_WORK, SIM_MAX_WORK};
pub use cpu::{
    GradReference, POISON_16, Reference, all_rows, check_inputs, generated, grad_reference,
    hash_value, reference, round_checked, sample_rows, widen,
};
pub use fp8::{
    FP8_LABEL, Fp8Inputs, Fp8Plan, Fp8Scales, check_fp8, fp8_bound, fp8_entry, fp8_refuses,
    sim_check_fp8,
};
pub use launch::{Inputs, Plan, Prepared, entry, packed_entry};
pub use packed::{
    MAX_SEQS, Offsets, Packed, PackedReference, packed_grad_reference, packed_inputs,
    packed_reference,
};
pub use types::{MAX_DIM, MAX_HEADS, NAME, Precision, Rung, Shape};

/// Every kernel of the workload on the simulator against the f64
/// reference: the 16-bit rungs and the backward pass
/// ([`sim_check_16bit`]), then the FP8 forward ([`sim_check_fp8`]).
pub fn sim_check() -> ptxlab_common::error::Result<()> {
    sim_check_16bit()?;
    sim_check_fp8()
}

/// `ptxlab attention`: a packed variable-length batch (`--cu-seqlens`,
/// `packed_cli.rs`) or a dense problem (`cli.rs`); the rows it measured.
pub fn cli(args: &Args) -> ptxlab_common::error::Result<Vec<ptxlab_common::report::Row>> {
    cli::check_fp8_flags(args)?;
    if args.cu_seqlens.is_some() || args.cu_seqlens_kv.is_some() {
        ptxlab_common::cli::check_reps(args.reps)?;
        return packed_cli::cli_packed(args);
    }
    cli::cli_dense(args)
}
