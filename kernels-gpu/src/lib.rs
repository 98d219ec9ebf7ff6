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
#![no_std]
// Kernels index small register arrays with loop counters over constant
// ranges on purpose: the loops unroll and the arrays stay in registers.
#![allow(clippy::needless_range_loop)]
#![cfg_attr(target_arch = "nvptx64", feature(abi_gpu_kernel))]

pub mod demo;
pub mod diffusion;
pub mod fusion;
pub mod histogram;
pub mod lomb;
pub mod matmul;
pub mod montecarlo;
pub mod multigrid;
pub mod poisson;
pub mod reduce;
pub mod vector;
