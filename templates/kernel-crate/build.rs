//! Builds the kernel crate (./kernels) to PTX for the GPU, plus sm_90 cubins
//! and the ptxas resource report when `ptxas` is found, and embeds the result
//! for `ptxlab_runtime::include_kernels!()` in src/main.rs: the portable
//! module (sm_80 and newer) and an sm_90 one built with the crate's `sm90`
//! feature, which adds the thread-block cluster kernels (`kernels::cluster`).
//!
//! `PTXLAB_ARCH` (default sm_80), `PTXLAB_CUBIN_ARCHS` and `PTXLAB_PTXAS`
//! override the defaults without editing this file.

fn main() {
    ptxlab_builder::Embed::new("kernels")
        .arch_specific("sm_90", "sm90")
        .run();
}
