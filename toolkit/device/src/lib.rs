//! # ptxlab-device: the device layer of Rust GPU kernels
//!
//! Kernels in `kernels-gpu` are ordinary `#![no_std]` Rust. They reach the GPU's
//! hardware through this crate, which has two implementations of every function:
//!
//! * on `nvptx64-nvidia-cuda` each function is an NVVM intrinsic, a special
//!   register read or a line of inline PTX, so a kernel compiles to the PTX a
//!   CUDA C++ programmer would expect;
//! * on the host the same functions talk to the CPU simulator ([`sim`]), which
//!   runs the threads of a block as coroutines on one OS thread (blocks in
//!   parallel over the cores), with real barriers, warp exchanges, atomics,
//!   bounds-checked memory and a data-race detector. That is how CI, which
//!   has no GPU, tests every kernel from the same source.
//!
//! | module | what it holds | CUDA C++ equivalent |
//! |---|---|---|
//! | [`thread`] | indices, dimensions, `index_1d`/`index_2d`, grid-stride loops, `sync_threads` | `threadIdx`, `blockIdx`, `__syncthreads` |
//! | [`mem`] | [`DeviceSlice`]/[`DeviceSliceMut`]: kernel views of device buffers | `const float* __restrict__`, `float*` |
//! | [`shared`] | dynamic shared memory as typed views | `extern __shared__ float s[]` |
//! | [`warp`] | shuffles, votes, warp reductions | `__shfl_down_sync`, `__ballot_sync` |
//! | [`atomic`] | atomic add/CAS on global and shared memory | `atomicAdd`, `atomicCAS` |
//! | [`math`] | [`Real`](math::Real) for f32/f64 kernels; fast approximations | `__sinf`, `__expf`, `sqrtf` |
//! | [`cluster`] | sm_90: thread-block clusters, the cluster barrier, distributed shared memory (a peer block's [`SharedSlice`] with loads, stores, atomic adds) | `cooperative_groups::this_cluster()`, `cluster.map_shared_rank` |
//! | [`hopper`] | sm_90: mbarriers with transaction counts, TMA (`cp.async.bulk.tensor`), proxy fences, `setmaxnreg` | `cuda::barrier`, `cp.async.bulk.tensor` |
//! | [`wgmma`] | sm_90a: warpgroup tensor cores (`wgmma.mma_async`), shared-memory matrix descriptors | CUTLASS's `GMMA` atoms |
//! | [`fp8`] | sm_89+: the 8-bit floats [`E4m3`](fp8::E4m3) and [`E5m2`](fp8::E5m2), their pairs, `cvt` bit-exact on the host | `__nv_fp8_e4m3`, `__nv_fp8_e5m2` |
//! | [`mma`] | warp-level tensor cores: `mma.sync` (BF16, FP16, TF32), `ldmatrix`, fragments, conversions | `mma.h` / inline PTX, `__float2bfloat16_rn` |
//! | [`param`] | [`KernelParams`]: `#[repr(C)]` structs, `bool` and field-less enums as kernel parameters, layouts checked on host and device | a `struct` kernel argument |
//! | [`pipeline`] | [`CpAsyncPipeline`](pipeline::CpAsyncPipeline): the multi-stage `cp.async` ring of a tiled kernel (prologue, wait, barrier, refill) | CUTLASS's multistage mainloop, `cuda::pipeline` |
//! | [`print`] | [`println!`]: kernel debug lines, `vprintf` on the GPU, standard output in the simulator | `printf` |
//!
//! Kernels are declared with [`kernel`] (`#[kernel(launch_bounds(256, 2), max_registers = 32)]`).
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        stdarch_nvptx,
        asm_experimental_arch,
        link_llvm_intrinsics,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem
    )
)]
#![feature(core_intrinsics)]
#![cfg_attr(test, feature(f16))]
#![cfg_attr(not(target_arch = "nvptx64"), feature(float_erf))]
#![allow(internal_features)]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod atomic;
pub mod cluster;
mod dim3;
pub mod fp8;
pub mod hopper;
pub mod math;
pub mod mem;
pub mod mma;
pub mod param;
pub mod pipeline;
pub mod precise;
pub mod print;
pub mod real;
pub mod sfu;
pub mod shared;
#[cfg(not(target_arch = "nvptx64"))]
pub mod sim;
mod tensor_map;
pub mod thread;
pub mod warp;
pub mod wgmma;

pub use mem::{DeviceSlice, DeviceSliceMut};
/// `#[derive(KernelParams)]`: a `#[repr(C)]` struct or a field-less
/// `#[repr(u32)]` enum as a kernel parameter (see [`param`]).
pub use ptxlab_macros::KernelParams;
pub use ptxlab_macros::kernel;
/// Kernel debug output, the same on the GPU (`vprintf`) and in the
/// simulator: `ptxlab_device::println!("x = {:.3}", x)` (see [`print`]).
pub use ptxlab_macros::println;
#[doc(hidden)]
pub use ptxlab_macros::{__entry, __launch};
pub use shared::SharedSlice;
pub use thread::Dim3;

/// Everything a kernel file usually needs.
pub mod prelude {
    pub use crate::KernelParams;
    pub use crate::atomic;
    pub use crate::kernel;
    pub use crate::math::{self, Real};
    pub use crate::mem::{DeviceSlice, DeviceSliceMut};
    pub use crate::shared::{self, SharedSlice};
    pub use crate::thread::{self, Dim3, sync_threads};
    pub use crate::warp::{self, FULL_MASK, WARP_SIZE};
}

/// Repeats a block once per listed index, with the index bound to a
/// `usize` constant: a loop that is unrolled in the source, so register
/// arrays indexed by it (tensor-core accumulators, fragments) stay in
/// registers whatever LLVM's unrolling heuristics decide. A run-time index
/// into such an array moves it to local memory (a stack frame in the
/// `ptxas` report).
///
/// ```
/// # use ptxlab_device::unroll;
/// let mut acc = [0u32; 4];
/// unroll!(i in [0, 1, 2, 3] {
///     acc[i] += i as u32;
/// });
/// assert_eq!(acc, [0, 1, 2, 3]);
/// ```
#[macro_export]
macro_rules! unroll {
    ($i:ident in [$($n:literal),+ $(,)?] $body:block) => {
        $({
            #[allow(non_upper_case_globals)]
            const $i: usize = $n;
            $body
        })+
    };
}

/// Compile-time facts about one `#[kernel]`, collected from the kernel crate
/// itself (not from a hand-kept list) so the host can check launches against
/// the kernel's own launch bounds and tests can enumerate every kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelInfo {
    /// Exported symbol name, also the `.entry` name in the PTX.
    pub name: &'static str,
    /// Rust module path of the kernel (for example `kernels_gpu::vector`).
    pub module: &'static str,
    /// `launch_bounds(max_threads, ...)`: the `.maxntid` directive, 0 when absent.
    pub max_threads: u32,
    /// `launch_bounds(_, min_blocks)`: the `.minnctapersm` directive, 0 when absent.
    pub min_blocks: u32,
    /// `max_registers = N`: the `.maxnreg` directive, 0 when absent.
    pub max_registers: u32,
}

/// Every kernel entry linked into the program (one per instance of a
/// generic kernel), registered by `#[kernel]` itself: the host and the tests
/// list kernels from here, never from a hand-kept list. (Not to be confused
/// with a host crate's embedded `KERNELS`, the PTX and cubins it launches.)
#[cfg(not(target_arch = "nvptx64"))]
#[linkme::distributed_slice]
pub static REGISTRY: [KernelInfo];

#[doc(hidden)]
#[cfg(not(target_arch = "nvptx64"))]
pub use linkme as __linkme;

/// Finds a kernel's compile-time facts by its exported name.
#[cfg(not(target_arch = "nvptx64"))]
pub fn kernel_info(name: &str) -> Option<&'static KernelInfo> {
    REGISTRY.iter().find(|k| k.name == name)
}

/// On the GPU a panic (an explicit `panic!`, or a checked access out of bounds)
/// stops the kernel with `trap`; the host then sees `CUDA_ERROR_LAUNCH_FAILED`
/// (or `ILLEGAL_INSTRUCTION`) from the next synchronising call.
#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::intrinsics::abort()
}

/// Stops the kernel: `trap` on the GPU, an error naming the kernel, block and
/// thread in the simulator.
#[inline(always)]
#[track_caller]
pub fn trap(reason: &'static str) -> ! {
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = reason;
        core::intrinsics::abort()
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        sim::fail(sim::Fault::Trap {
            reason: reason.into(),
        })
    }
}
