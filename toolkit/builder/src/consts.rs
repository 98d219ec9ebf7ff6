//! Targets, PTX ISA versions and the metadata magic word the builder writes
//! and reads.

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
