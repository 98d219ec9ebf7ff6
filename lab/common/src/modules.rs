//! The lab's kernels: `kernels-gpu`, built by `build.rs` with
//! `ptxlab_builder::Embed` (a precise and a fast-math module and the sm_90a
//! one, plus, when `ptxas` is present, their cubins, the Lomb-Scargle
//! group's register-capped cubins and the `ptxas` resource report) and
//! embedded here as [`KERNELS`], the way any host crate embeds its own
//! kernel crate.

use ptxlab_runtime::{MathMode, module::Resources};
use std::sync::OnceLock;

ptxlab_runtime::include_kernels!();

fn math(fast: bool) -> MathMode {
    if fast {
        MathMode::Fast
    } else {
        MathMode::Precise
    }
}

/// The PTX of the precise (`fast == false`) or fast-math build: every
/// portable module (group) of it, one after the other.
pub fn ptx(fast: bool) -> &'static str {
    static PRECISE: OnceLock<String> = OnceLock::new();
    static FAST: OnceLock<String> = OnceLock::new();
    if fast { &FAST } else { &PRECISE }.get_or_init(|| KERNELS.ptx(math(fast)))
}

/// The PTX of the arch-specific `sm_90a` modules (the Hopper kernels:
/// `kernels_gpu::hopper`), empty if the build has none.
pub fn ptx_sm90a() -> &'static str {
    static PTX: OnceLock<String> = OnceLock::new();
    PTX.get_or_init(|| KERNELS.ptx_for_arch("sm_90a"))
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

/// The `ptxas` resource report of the precise or fast-math build (empty
/// when ptxas was absent).
pub fn resources(fast: bool) -> Vec<&'static Resources> {
    KERNELS
        .modules
        .iter()
        .filter(|m| m.math == math(fast))
        .flat_map(|m| m.resources.iter())
        .collect()
}

/// Registers and spill bytes of a kernel for an arch, from the report.
pub fn resource(kernel: &str, arch: &str, fast: bool) -> Option<&'static Resources> {
    KERNELS.resources(kernel, arch, math(fast))
}

/// The register caps `group` of the `math` build ships capped cubins for
/// (empty without `ptxas`): a launch with one of these caps loads a cubin,
/// with another the PTX through the driver's JIT.
pub fn reg_caps(group: &str, math: MathMode) -> Vec<u32> {
    let mut caps: Vec<u32> = Vec::new();
    for m in KERNELS
        .modules
        .iter()
        .filter(|m| m.group == group && m.math == math)
    {
        for c in m.caps() {
            if !caps.contains(&c) {
                caps.push(c);
            }
        }
    }
    caps
}

/// Registers and spill bytes of a kernel of the precise build for an arch,
/// assembled with register cap `cap` (from the capped cubins' report).
pub fn capped_resource(kernel: &str, arch: &str, cap: u32) -> Option<&'static Resources> {
    KERNELS.capped_resources(kernel, arch, MathMode::Precise, cap)
}
