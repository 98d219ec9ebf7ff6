//! # kernels-gpu: every GPU kernel of ptxlab
//!
//! One module per kernel family. A family's kernels are named after it
//! (`<family>_<variant>`; `mg_` for [`multigrid`]) and come in the order of
//! its optimisation ladder, each with a doc comment giving its thread
//! mapping and shared-memory layout, what changed from the previous rung
//! and why that makes it faster. Measured figures live in the workload's
//! page under `docs/book/src/workloads/`. Several families serve one workload:
//!
//! | module | kernels | workload (host `ptxlab::workloads`, docs page) |
//! |---|---|---|
//! | [`vector`] | vector add | `vector`, `vector-add.md` |
//! | [`reduce`], [`histogram`], [`montecarlo`] | sum reduction, histogram, Monte Carlo pi | `primitives`, `primitives.md` |
//! | [`fusion`] | an elementwise pipeline, fused and unfused; the launch-overhead kernel | `fusion`, `fusion.md` |
//! | [`matmul`] | the SGEMM ladder and the column sum of a product | `matmul`, `matmul.md` |
//! | [`tensor`], [`hopper`] | the tensor-core ladder on `mma.sync`, and its Hopper rungs (`wgmma`, TMA) | `matmul`, `matmul.md` |
//! | [`hopper_fp8`] | the FP8 GEMM: E4M3 `wgmma`, per-tensor scales, BF16 output (sm_90a module) | `matmul`, `matmul.md` |
//! | [`poisson`] | Jacobi sweeps of the 2-D Poisson ladder | `poisson`, `poisson.md` and `poisson-multi-gpu.md` |
//! | [`multigrid`] | multigrid smoothers, transfers and the PCG vector kernels | `poisson` (`poisson::mg`), `poisson.md` |
//! | [`spectral`] | the spectral Poisson solver: DST-I/DCT-II line transforms through a shared-memory FFT, the eigenvalue division | `poisson` (`poisson::spectral`), `poisson-spectral.md` |
//! | [`diffusion`] | explicit heat-equation steps | `diffusion`, `diffusion.md` |
//! | [`fft`] | the FFT ladder: Stockham passes in global memory, one block per transform in shared memory, Bluestein and real-transform kernels | `fft`, `fft.md` |
//! | [`lomb`] | the Lomb-Scargle periodogram ladder and its batch kernels | `lomb`, `lomb-scargle.md` |
//! | [`attention`] | the FlashAttention ladder: three kernels, `mma.sync` fused, and its Hopper rungs (`wgmma`, TMA, warp specialisation) | `attention`, `attention.md` |
//! | [`cluster`] | a cluster-wide sum: block 0 of each thread-block cluster gathers its peers' sums over distributed shared memory; a batched matrix-vector product whose blocks share each tile of the matrix through TMA multicast (sm_90a module) | `ptxlab::cluster`, the book's "Thread-block clusters" section (`docs/book/src/writing-kernels.md`) |
//! | [`fp8`] | FP8 (E4M3, E5M2) conversions through `cvt`, bit for bit against the device layer's software ones (sm_90a module) | `ptxlab::fp8`, `writing-kernels.md` (FP8) |
//! | [`mathcheck`] | `Real`'s math functions over arrays, to measure their error | `mathcheck` (`ptxlab math-accuracy`), `docs/book/src/math.md` |
//! | [`demo`] | toolchain demonstrations used by the tests (register caps, fast math, a planted out-of-bounds write and a planted race) | `demo` |
//!
//! The crate is `#![no_std]` and compiles twice:
//! * for `nvptx64-nvidia-cuda`, where `ptxlab-builder` turns it into PTX (and,
//!   with `ptxas`, cubins) that the host embeds;
//! * for the host, where the simulator runs the same functions on the CPU and
//!   the host shares the constants and shared-memory size functions below.
//!
//! Every kernel is listed at run time by `ptxlab_device::REGISTRY`.
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
// Inline PTX for the instructions the device layer does not wrap (the
// attention kernels' `wgmma` with `A` in registers, named barriers).
#![cfg_attr(target_arch = "nvptx64", feature(asm_experimental_arch))]

/// Declares the portable modules: compiled everywhere except into the
/// `sm_90a` module (the `sm90a` feature on `nvptx64`).
macro_rules! portable {
    ($($m:ident),+ $(,)?) => {$(
        #[cfg(not(all(target_arch = "nvptx64", feature = "sm90a")))]
        pub mod $m;
    )+};
}

portable!(
    demo, diffusion, fft, fusion, histogram, lomb, mathcheck, matmul, montecarlo, multigrid,
    poisson, reduce, tensor, vector,
);

// The spectral Poisson solver's line transforms (`poisson::spectral`).
portable!(spectral);

#[cfg(any(not(target_arch = "nvptx64"), feature = "sm90a"))]
pub mod hopper;

// The FP8 GEMM (E4M3 `wgmma`, TMA, warp specialisation; sm_90a).
#[cfg(any(not(target_arch = "nvptx64"), feature = "sm90a"))]
pub mod hopper_fp8;

// Thread-block clusters and distributed shared memory (sm_90).
#[cfg(any(not(target_arch = "nvptx64"), feature = "sm90a"))]
pub mod cluster;

// FP8 `cvt` (sm_89+): checks of the device layer's FP8 conversions.
#[cfg(any(not(target_arch = "nvptx64"), feature = "sm90a"))]
pub mod fp8;

// Compiled into both the portable and the sm_90a modules: its portable
// kernels (`attention::split`, `attention::fa2`) and its Hopper ones
// (`attention::hopper`) choose their build themselves.
pub mod attention;

/// Planted bugs of asynchronous pipelines, for the simulator's checks and
/// the GPU comparison (the `cp.async` ones portable, the rest sm_90a).
pub mod pipeline_bugs;
