//! Builds the kernel crate (./kernels) to PTX for the GPU, plus sm_90 cubins
//! and the ptxas resource report when `ptxas` is found, and embeds the result
//! for `ptxlab_runtime::include_kernels!()` in src/main.rs.
//!
//! `PTXLAB_ARCH` (default sm_80), `PTXLAB_CUBIN_ARCHS` and `PTXLAB_PTXAS`
//! override the defaults without editing this file.

fn main() {
    ptxlab_builder::Embed::new("kernels").run();
}
