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
mod consts;
mod directives;
mod embed;
mod error;
mod ptxas;
pub mod split;
mod tools;

pub use build::{BuildOutput, Builder, CappedCubin, Part};
pub use consts::{ARCH_SPECIFIC_PTX_ISA, DEFAULT_ARCH, DEFAULT_PTX_ISA, META_MAGIC};
pub use directives::{
    KernelMeta, REG_CAP_RANGE, apply_directives, entry_params, group_of_path, kernel_names_in_ir,
    kernels_in_ptx, with_register_cap,
};
pub use embed::{DEFAULT_CUBIN_ARCHS, Embed, Embedded, ModuleSpec};
pub use error::BuildError;
pub use ptxas::{ResourceUsage, assemble, parse_ptxas_report, report_table};
pub use tools::{LlvmTools, Toolchain, find_ptxas};
