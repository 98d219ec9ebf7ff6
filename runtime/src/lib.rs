//! # ptxlab-runtime: load and launch Rust GPU kernels
//!
//! The runtime layer of ptxlab, what `cust` is to Rust-CUDA users: it knows
//! nothing about any workload. A [`Device`] is either an NVIDIA GPU (through
//! `cudarc`, with the driver loaded at run time, so nothing CUDA is needed to
//! build) or the CPU simulator of `ptxlab-device`, behind one API:
//!
//! | module | what it holds |
//! |---|---|
//! | [`module`] | [`Kernels`]: the PTX modules, cubins, entries and resource report of a kernel crate, as `ptxlab-builder` embeds them; module selection by variant and GPU arch |
//! | [`device`] | [`Device`]: GPU or simulator; uploads, downloads, synchronisation, timing |
//! | [`buffer`] | [`Buffer`]: typed device memory |
//! | [`config`] | [`LaunchConfig`] and the launch checks shared by both backends |
//! | [`mod@launch`] | [`launch!`]: one call of a `#[kernel]` fn on either backend, arguments checked |
//! | [`gpu`] | [`Gpu`]: context, stream, module cache (JIT or cubin, timed), events |
//! | [`graph`] | [`Graph`]: CUDA graph capture and replay |
//! | [`timing`] | [`Timing`]: median, min, max of samples |
//! | [`tma`] | [`TensorMap`]: TMA tensor maps of 2D matrices (driver-encoded on a GPU, readable by the simulator) |
//! | [`error`] | [`Error`]: one enum, each variant with the value, the limit and a hint |
//! | [`driver`], [`probe`] | is there a driver, and is it new enough |
//! | [`host_mem`] | host memory checks before large allocations |
//! | [`testing`] | GPU tests: skip without a driver, fail instead with `PTXLAB_REQUIRE_GPU` set |
//!
//! A kernel crate of your own plugs in here exactly as the workspace's
//! `kernels-gpu` does:
//!
//! ```ignore
//! // build.rs:  ptxlab_builder::Embed::new("kernels").run();
//! ptxlab_runtime::include_kernels!(); // pub static KERNELS: Kernels
//!
//! let dev = Device::sim(); // or Device::gpu(0)?
//! let x = dev.upload(&[1.0f32; 1000])?;
//! let mut y = dev.alloc_filled(1000, f32::NAN)?;
//! let cfg = LaunchConfig::for_threads(1000, 256)?;
//! launch!(&dev, &KERNELS, cfg, my_kernels::scale(2.0f32, &x, &mut y))?;
//! let y = dev.download(&y)?;
//! ```

pub mod buffer;
pub mod config;
pub mod device;
pub mod driver;
pub mod error;
pub mod gpu;
pub mod graph;
pub mod host_mem;
pub mod launch;
pub mod module;
pub mod probe;
pub mod testing;
pub mod timing;
pub mod tma;

pub use buffer::Buffer;
pub use config::{LaunchConfig, Limits, check_launch};
pub use device::{Device, DeviceKind};
pub use driver::{
    MIN_PTX_ISA, check_driver, check_ptx_isa, cuda_for_ptx_isa, driver_cuda_version,
    ptx_isa_version,
};
pub use error::{Error, Result};
pub use gpu::{Gpu, GpuInfo, LoadRecord};
pub use graph::{Capture, Graph};
pub use host_mem::{HostMemory, check_host_alloc, fmt_bytes, host_memory};
pub use launch::{CallWith, KernelArg, Param, sim_launch, sim_launch_with};
pub use module::{
    Entry, Form, Kernels, ModuleImage, ModuleKey, ParamKind, Resources, Variant, with_register_cap,
};
pub use probe::{REQUIRED_DRIVER_SYMBOLS, driver_present, driver_symbol_present};
pub use ptxlab_device::Dim3;
pub use ptxlab_device::sim::SimOptions;
pub use timing::Timing;
pub use tma::TensorMap;

/// Includes the Rust file that `ptxlab_builder::Embed` wrote into `OUT_DIR`
/// (default `ptxlab_kernels.rs`), which defines `pub static KERNELS: Kernels`.
#[macro_export]
macro_rules! include_kernels {
    () => {
        include!(concat!(env!("OUT_DIR"), "/ptxlab_kernels.rs"));
    };
    ($file:literal) => {
        include!(concat!(env!("OUT_DIR"), "/", $file));
    };
}
