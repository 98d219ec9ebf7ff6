//! The lab's kernels: `kernels-gpu`, built by `build.rs` with
//! `ptxlab_builder::Embed` (a precise and a fast-math module, plus cubins and
//! the `ptxas` resource report when `ptxas` is present) and embedded here as
//! [`KERNELS`], the way any host crate embeds its own kernel crate.

use ptxlab_runtime::{Resources, Variant};

ptxlab_runtime::include_kernels!();

fn variant(fast: bool) -> Variant {
    if fast {
        Variant::FastMath
    } else {
        Variant::Precise
    }
}

/// The PTX of the precise (`fast == false`) or fast-math module.
pub fn ptx(fast: bool) -> &'static str {
    KERNELS.module(variant(fast)).map(|m| m.ptx).unwrap_or("")
}

/// The PTX of the arch-specific `sm_90a` module (the Hopper kernels:
/// `kernels_gpu::hopper`), empty if the build has none.
pub fn ptx_sm90a() -> &'static str {
    sm90a().map(|m| m.ptx).unwrap_or("")
}

/// The arch-specific `sm_90a` module, if the build has one.
pub fn sm90a() -> Option<&'static ptxlab_runtime::ModuleImage> {
    KERNELS.modules.iter().find(|m| m.arch == "sm_90a")
}

/// The PTX targets of the embedded modules, each once, in build order:
/// `sm_80` (the portable modules) and, when built, `sm_90a` (the Hopper
/// kernels), as `"sm_80, sm_90a"`.
pub fn ptx_arch() -> String {
    let mut archs: Vec<&str> = Vec::new();
    for m in KERNELS.modules {
        if !archs.contains(&m.arch) {
            archs.push(m.arch);
        }
    }
    archs.join(", ")
}

/// The `ptxas` resource report of a module (empty when ptxas was absent).
pub fn resources(fast: bool) -> &'static [Resources] {
    KERNELS
        .module(variant(fast))
        .map(|m| m.resources)
        .unwrap_or(&[])
}

/// Registers and spill bytes of a kernel for an arch, from the report.
pub fn resource(kernel: &str, arch: &str, fast: bool) -> Option<&'static Resources> {
    KERNELS.resources(kernel, arch, variant(fast))
}
