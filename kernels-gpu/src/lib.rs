//! # kernels-gpu: every GPU kernel of ptxlab
//!
//! One module per workload; the rungs of an optimisation ladder are kernels
//! named `<workload>_<variant>` in the order of the ladder, each with a doc
//! comment saying what changed from the previous rung and what it should buy.
//!
//! The crate is `#![no_std]` and compiles twice:
//! * for `nvptx64-nvidia-cuda`, where `ptxlab-builder` turns it into PTX (and,
//!   with `ptxas`, cubins) that the host embeds;
//! * for the host, where the simulator runs the same functions on the CPU and
//!   the host shares the constants and shared-memory size functions below.
//!
//! Every kernel is listed at run time by `ptxlab_device::KERNELS`.
//!
//! The Hopper kernels ([`hopper`]: `wgmma`, TMA, `setmaxnreg`) need the
//! `sm_90a` target, which no other GPU can load: they build into a module
//! of their own (the `sm90a` feature, which on `nvptx64` compiles only
//! them), so the portable `sm_80` modules stay as they are.
#![no_std]
// Kernels index small register arrays with loop counters over constant
// ranges on purpose: the loops unroll and the arrays stay in registers.
#![allow(clippy::needless_range_loop)]
#![cfg_attr(target_arch = "nvptx64", feature(abi_gpu_kernel))]

/// Declares the portable modules: compiled everywhere except into the
/// `sm_90a` module (the `sm90a` feature on `nvptx64`).
macro_rules! portable {
    ($($m:ident),+ $(,)?) => {$(
        #[cfg(not(all(target_arch = "nvptx64", feature = "sm90a")))]
        pub mod $m;
    )+};
}

portable!(
    demo, diffusion, fusion, histogram, lomb, matmul, montecarlo, multigrid, poisson, reduce,
    tensor, vector,
);

#[cfg(any(not(target_arch = "nvptx64"), feature = "sm90a"))]
pub mod hopper;

/// Planted bugs of asynchronous pipelines, for the simulator's checks and
/// the GPU comparison (the `cp.async` ones portable, the rest sm_90a).
pub mod pipeline_bugs;
