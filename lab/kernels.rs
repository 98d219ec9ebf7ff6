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

// Each kernel module lives in its workload's room (`lab/<room>/kernels`),
// beside that workload's host code (`lab/<room>/host`); the `#[path]`s below
// are the whole map. A module's name (not its file) names its kernels'
// group, hence its PTX module part.

/// Declares the portable modules: compiled everywhere except into the
/// `sm_90a` module (the `sm90a` feature on `nvptx64`).
macro_rules! portable {
    ($($(#[$a:meta])* $m:ident;)+) => {$(
        $(#[$a])*
        #[cfg(not(all(target_arch = "nvptx64", feature = "sm90a")))]
        pub mod $m;
    )+};
}

/// Declares the Hopper modules: compiled on the host and into the `sm_90a`
/// module only.
macro_rules! hopper_only {
    ($($(#[$a:meta])* $m:ident;)+) => {$(
        $(#[$a])*
        #[cfg(any(not(target_arch = "nvptx64"), feature = "sm90a"))]
        pub mod $m;
    )+};
}

portable! {
    #[path = "vector/kernels.rs"]
    vector;
    // Primitives: reduction, histogram, Monte Carlo pi.
    #[path = "primitives/kernels/reduce.rs"]
    reduce;
    #[path = "primitives/kernels/histogram.rs"]
    histogram;
    #[path = "primitives/kernels/montecarlo.rs"]
    montecarlo;
    #[path = "fusion/kernels.rs"]
    fusion;
    #[path = "diffusion/kernels.rs"]
    diffusion;
    // Poisson: the Jacobi ladder, multigrid, and the spectral solver's line
    // transforms.
    #[path = "poisson/kernels/poisson.rs"]
    poisson;
    #[path = "poisson/kernels/multigrid/mod.rs"]
    multigrid;
    #[path = "poisson/kernels/spectral/mod.rs"]
    spectral;
    #[path = "fft/kernels/mod.rs"]
    fft;
    #[path = "lomb/kernels/mod.rs"]
    lomb;
    // Matmul: the SGEMM ladder and the tensor-core ladder on `mma.sync`.
    #[path = "matmul/kernels/matmul/mod.rs"]
    matmul;
    #[path = "matmul/kernels/tensor/mod.rs"]
    tensor;
    #[path = "mathcheck/kernels.rs"]
    mathcheck;
    #[path = "demo/kernels.rs"]
    demo;
}

hopper_only! {
    // The tensor-core ladder's Hopper rungs (`wgmma`, TMA, `setmaxnreg`).
    #[path = "matmul/kernels/hopper.rs"]
    hopper;
    // The FP8 GEMM (E4M3 `wgmma`, TMA, warp specialisation).
    #[path = "matmul/kernels/hopper_fp8.rs"]
    hopper_fp8;
    // Thread-block clusters and distributed shared memory (sm_90).
    #[path = "hopper/kernels/cluster.rs"]
    cluster;
    // FP8 `cvt` (sm_89+): checks of the device layer's FP8 conversions.
    #[path = "hopper/kernels/fp8.rs"]
    fp8;
}

// Compiled into both the portable and the sm_90a modules: its portable
// kernels (`attention::split`, `attention::fa2`) and its Hopper ones
// (`attention::hopper`) choose their build themselves.
#[path = "attention/kernels/mod.rs"]
pub mod attention;

/// Planted bugs of asynchronous pipelines, for the simulator's checks and
/// the GPU comparison (the `cp.async` ones portable, the rest sm_90a).
#[path = "pipeline-bugs/kernels/mod.rs"]
pub mod pipeline_bugs;
