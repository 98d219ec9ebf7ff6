//! # ptxlab-builder: Rust kernels to PTX, cubins and a resource report
//!
//! The project's own `cuda_builder`, usable from any crate's `build.rs`. It
//! needs nothing but a nightly toolchain with `rust-src` and `llvm-tools`
//! (the workspace pins one in `rust-toolchain.toml`) and, optionally, `ptxas`:
//!
//! 1. `cargo rustc --manifest-path <kernel crate> --target nvptx64-nvidia-cuda
//!    -Zbuild-std=core -- --emit=llvm-bc` compiles the kernel crate to LLVM
//!    bitcode; the rlibs of its dependencies (`core`, `ptxlab-device`, ...)
//!    hold bitcode too.
//! 2. `llvm-link --only-needed` joins them (again, until a pass resolves
//!    no more declarations: members may need each other), `opt`
//!    internalises everything but the kernels and optimises
//!    (`default<O3>`), `llc -mcpu=sm_XX` emits PTX.
//! 3. The `__ptxlab_meta_<kernel>` statics that `#[kernel]` leaves in the PTX
//!    are read and removed, and `.maxntid`, `.minnctapersm` and `.maxnreg`
//!    are written between each `.entry`'s parameters and its body.
//! 4. The module is split into parts, one per group of entries (the kernels
//!    of one top-level Rust module, from the `__ptxlab_path_<kernel>`
//!    statics), each with exactly the functions and variables its entries
//!    reach ([`split`]): a program loads only the parts it launches from.
//! 5. With `ptxas` (from PyPI's `nvidia-cuda-nvcc`, found through
//!    `PTXLAB_PTXAS`, `CUDA_HOME`, `PATH` or `target/nvcc`), each part gets
//!    a cubin per arch and a parsed per-kernel [`ResourceUsage`] report; a
//!    runtime on a GPU of that arch loads the cubin (no JIT).
//!
//! Two ways to use it:
//! * [`Embed`], from a host crate's `build.rs`: builds a kernel crate (one
//!   module per [`ModuleSpec`]: precise, fast math, an arch-specific one) and
//!   writes an `include!`-able Rust file with a `static KERNELS:
//!   ptxlab_runtime::Kernels` that embeds the PTX, the cubins, every entry
//!   with its parameter types and directives, and the resource report. The
//!   runtime loads and launches from it; `ptxlab_runtime::include_kernels!()`
//!   includes it.
//! * [`Builder`], one module at a time (what `cargo xtask build-ptx` and
//!   `inspect` use).
//!
//! Fast math is a cargo feature of the kernel crate (`fast-math`): the same
//! source, built a second time, with `math::` functions on the SFU, plus
//! `llc` flags for approximate division and square root and flush-to-zero.
//!
//! Builds are incremental (cargo's own fingerprints, in the builder's own
//! target directory, one per arch) and the link steps rerun only when an
//! input changed.

mod build;
mod directives;
mod embed;
mod ptxas;
pub mod split;
mod tools;

pub use build::{BuildOutput, Builder, Part};
pub use directives::{
    KernelMeta, apply_directives, entry_params, group_of_path, kernel_names_in_ir, kernels_in_ptx,
};
pub use embed::{Embed, Embedded, ModuleSpec};
pub use ptxas::{ResourceUsage, assemble, parse_ptxas_report, report_table};
pub use tools::{LlvmTools, Toolchain, find_ptxas};

use std::fmt;

/// Default PTX target: every GPU from sm_80 (A100) up can JIT it.
pub const DEFAULT_ARCH: &str = "sm_80";
/// PTX ISA version written by default (CUDA 11.8+ drivers; sm_90 needs 7.8).
pub const DEFAULT_PTX_ISA: u32 = 78;
/// PTX ISA version of arch-specific (`sm_90a`) modules: `wgmma` and
/// `mbarrier.expect_tx` need 8.0, `fence.proxy.tensormap` 8.3; 8.5 is CUDA
/// 12.5, which every driver with those instructions' ptxas accepts.
pub const ARCH_SPECIFIC_PTX_ISA: u32 = 85;
/// Magic word in the last slot of a `__ptxlab_meta_*` static ("PTXL").
pub const META_MAGIC: u32 = 0x5054_584c;

/// A builder failure, with what to do about it.
#[derive(Debug)]
pub struct BuildError {
    /// What failed.
    pub step: String,
    /// Output of the failing tool or the reason.
    pub detail: String,
    /// What to do.
    pub hint: String,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.step, self.detail.trim())?;
        if !self.hint.is_empty() {
            write!(f, "\nhint: {}", self.hint)?;
        }
        Ok(())
    }
}
impl std::error::Error for BuildError {}

pub(crate) fn err(
    step: impl Into<String>,
    detail: impl Into<String>,
    hint: impl Into<String>,
) -> BuildError {
    BuildError {
        step: step.into(),
        detail: detail.into(),
        hint: hint.into(),
    }
}
