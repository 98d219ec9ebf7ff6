//! # ptxlab-runtime: load and launch Rust GPU kernels
//!
//! The runtime layer of ptxlab, what `cust` is to Rust-CUDA users: it knows
//! nothing about any workload. A [`Device`] is either an NVIDIA GPU (through
//! `cudarc`, with the driver loaded at run time, so nothing CUDA is needed to
//! build) or the CPU simulator of `ptxlab-device`, behind one API:
//!
//! | module | what it holds |
//! |---|---|
//! | [`module`] | [`Kernels`]: the PTX modules, cubins, entries and resource report of a kernel crate, as `ptxlab-builder` embeds them; module selection by math mode, group and GPU arch; cubin or PTX |
//! | [`device`] | [`Device`]: GPU or simulator; uploads, downloads, synchronisation, timing |
//! | [`buffer`] | [`Buffer`]: typed device memory |
//! | [`element`] | [`Element`]: the types a buffer holds and the runtime copies as bytes |
//! | [`stream`] | [`Stream`], [`Event`]: a GPU's queues of work and the marks that order them |
//! | [`nccl`] | NCCL loaded at run time: communicators of several GPUs, transfers of buffer runs |
//! | [`config`] | [`LaunchConfig`] and the launch checks shared by both backends |
//! | [`param`] | [`Param`](param::Param): a kernel parameter as the driver receives it |
//! | [`mod@launch`] | [`launch!`]: one call of a `#[kernel]` fn (an instance of a generic one) on a device, a stream or a graph capture, arguments checked |
//! | [`gpu`] | [`gpu::Gpu`]: context, stream, module cache (JIT or cubin, timed), events |
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
//! launch!(&dev, &KERNELS, cfg, my_kernels::scale::<f32>(2.0, &x, &mut y))?;
//! let y = dev.download(&y)?;
//! ```

pub mod buffer;
pub mod config;
pub mod device;
pub mod driver;
pub mod element;
pub mod error;
pub mod gpu;
pub mod graph;
pub mod host_mem;
pub mod launch;
pub mod module;
pub mod nccl;
pub mod param;
pub mod probe;
pub mod stream;
pub mod testing;
pub mod timing;
pub mod tma;

// What a kernel-crate author needs, at the root; the rest stays in its
// module (`ptxlab_runtime::gpu::Gpu`, `device::DeviceKind`, `probe::*`, ...).
pub use buffer::{Buffer, View, ViewMut};
pub use config::LaunchConfig;
pub use device::Device;
pub use element::Element;
pub use error::{Error, Result};
pub use graph::{Capture, Graph};
pub use launch::{KernelArg, Launch};
pub use module::{Form, Kernels, MathMode, ModuleKey};
pub use ptxlab_device::Dim3;
pub use ptxlab_device::sim::SimOptions;
pub use stream::{Event, Stream};
pub use timing::Timing;
pub use tma::TensorMap;

#[doc(hidden)]
pub use ptxlab_device::{__entry, __launch};

/// The PTX entry name of a kernel instance, checked at compile time:
/// `entry!(my_kernels::axpy::<f64>)` is `"axpy_f64"` (for resource
/// reports and messages; launches name the kernel in [`launch!`] itself).
#[macro_export]
macro_rules! entry {
    ($($path:tt)+) => {
        $crate::__entry!($($path)+)
    };
}

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
