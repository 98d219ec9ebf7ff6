//! Checks of the generated PTX: every kernel is exported, its launch-bound and
//! register-cap directives are present, `ptxas` accepts the module for sm_80
//! and sm_90 and honours the caps, and fast-math kernels use the SFU.
//!
//! `ptxas` is optional for users; CI installs it and sets
//! `PTXLAB_REQUIRE_PTXAS=1` so the `ptxas` checks cannot silently skip there.

use ptxlab::modules::ptx;
use ptxlab_builder::{assemble, find_ptxas, kernels_in_ptx};

// One kernel's text in a PTX module, shared with tests/attention.rs and tests/cluster.rs.
mod common {
    pub mod ptx_entry;
}
use common::ptx_entry::entry;

fn project_kernels() -> Vec<&'static ptxlab_device::KernelInfo> {
    // Force-link the kernel crate's registrations.
    let _ = kernels_gpu::vector::BLOCK;
    ptxlab_device::REGISTRY
        .iter()
        .filter(|k| k.module.starts_with("kernels_gpu"))
        .collect()
}

#[test]
fn every_kernel_is_exported_with_its_directives() {
    let kernels = project_kernels();
    assert!(
        kernels.len() >= 7,
        "expected the project's kernels, found {}",
        kernels.len()
    );
    // The Hopper kernels (the modules `lab/kernels.rs` builds only
    // with the `sm90a` feature) live in the sm_90a module only; every other
    // kernel in the precise and fast-math modules.
    let hopper = |k: &&&ptxlab_device::KernelInfo| {
        matches!(
            k.module,
            "kernels_gpu::hopper"
                | "kernels_gpu::hopper_fp8"
                | "kernels_gpu::attention::hopper"
                | "kernels_gpu::attention::backward_hopper"
                | "kernels_gpu::attention::backward_wide"
                | "kernels_gpu::attention::wide"
                | "kernels_gpu::attention::fp8"
                | "kernels_gpu::pipeline_bugs::tma"
                | "kernels_gpu::fp8"
                | "kernels_gpu::cluster"
                | "kernels_gpu::pipeline_bugs::cluster"
                | "kernels_gpu::pipeline_bugs::multicast"
        )
    };
    for (label, ptx, want_hopper) in [
        ("precise", ptx(false), false),
        ("fast-math", ptx(true), false),
        ("sm_90a", ptxlab::modules::ptx_sm90a(), true),
    ] {
        let found = kernels_in_ptx(ptx);
        for k in kernels.iter().filter(|k| hopper(k) == want_hopper) {
            let m = found.iter().find(|m| m.name == k.name).unwrap_or_else(|| {
                panic!(
                    "{label} module: kernel `{}` is not an exported .entry",
                    k.name
                )
            });
            assert_eq!(
                m.max_threads, k.max_threads,
                "{label}: .maxntid of `{}`",
                k.name
            );
            assert_eq!(
                m.min_blocks, k.min_blocks,
                "{label}: .minnctapersm of `{}`",
                k.name
            );
            assert_eq!(
                m.max_registers, k.max_registers,
                "{label}: .maxnreg of `{}`",
                k.name
            );
            let e = entry(ptx, k.name);
            if k.max_threads > 0 {
                assert!(
                    e.contains(&format!(".maxntid {}, 1, 1", k.max_threads)),
                    "{label}: `{}` lacks .maxntid",
                    k.name
                );
            }
            if k.max_registers > 0 {
                assert!(
                    e.contains(&format!(".maxnreg {}", k.max_registers)),
                    "{label}: `{}` lacks .maxnreg",
                    k.name
                );
            }
        }
        for k in kernels.iter().filter(|k| hopper(k) != want_hopper) {
            assert!(
                !found.iter().any(|m| m.name == k.name),
                "{label} module: kernel `{}` belongs in another module",
                k.name
            );
        }
        assert!(
            !ptx.contains("__ptxlab_meta_"),
            "{label}: metadata statics must be stripped from the PTX"
        );
        assert!(ptx.contains(".target sm_"), "{label}: no .target directive");
    }
}

#[test]
fn launch_bounds_directive_present_for_demo_kernels() {
    let e = entry(ptx(false), "demo_regs_capped");
    assert!(e.contains(".maxntid 256, 1, 1"), "{e}");
    assert!(e.contains(".maxnreg 32"), "{e}");
    assert!(!entry(ptx(false), "demo_regs").contains(".maxnreg"));
}

#[test]
fn fast_math_kernels_use_the_sfu() {
    for ptx in [ptx(false), ptx(true)] {
        let e = entry(ptx, "demo_fast_sincos");
        assert!(
            e.contains("sin.approx"),
            "demo_fast_sincos lacks sin.approx"
        );
        assert!(
            e.contains("cos.approx"),
            "demo_fast_sincos lacks cos.approx"
        );
    }
    // The vector kernels use 16-byte accesses in the wide rung.
    let e = entry(ptx(false), "vector_add_wide_f32");
    assert!(
        e.contains("ld.global.v4") && e.contains("st.global.v4"),
        "vector_add_wide_f32 lacks 16-byte accesses:\n{e}"
    );
}

fn ptxas_or_skip() -> Option<std::path::PathBuf> {
    match find_ptxas() {
        Ok(p) => Some(p),
        Err(why) => {
            assert!(
                std::env::var("PTXLAB_REQUIRE_PTXAS").is_err(),
                "PTXLAB_REQUIRE_PTXAS is set but {why}"
            );
            println!("skipped: {why}");
            None
        }
    }
}

/// The `ptxas` report of every embedded module (one per group) of the
/// builds that `pick` selects, for `arch`, merged. A module whose build
/// embedded a cubin for `arch` gives the build's own report: the build ran
/// ptxas's report of kernel `name` in `report`, or a failure naming it.
fn report_of<'a>(
    report: &'a [ptxlab_builder::ResourceUsage],
    name: &str,
) -> &'a ptxlab_builder::ResourceUsage {
    report
        .iter()
        .find(|r| r.kernel == name)
        .unwrap_or_else(|| panic!("no ptxas report for {name}"))
}

/// Fails unless ptxas's report of `name` has no spill stores, no spill
/// loads and no stack frame; returns the report.
fn no_spills<'a>(
    report: &'a [ptxlab_builder::ResourceUsage],
    name: &str,
) -> &'a ptxlab_builder::ResourceUsage {
    let r = report_of(report, name);
    assert_eq!(
        (r.spill_stores, r.spill_loads, r.stack_frame),
        (0, 0, 0),
        "{name}: spills or local memory ({r:?})"
    );
    r
}

/// `ptxas -arch=<arch> -O3 -v` (`ptxlab_builder::assemble`, as below) on
/// these same PTX bytes, and a rejection fails the build. Any other module
/// (a build without cubins for `arch`, as with `PTXLAB_CUBIN_ARCHS=none`)
/// is assembled here into `dir`.
fn assemble_modules(
    ptxas: &std::path::Path,
    dir: &std::path::Path,
    label: &str,
    pick: impl Fn(&ptxlab::runtime::module::ModuleImage) -> bool,
    arch: &str,
) -> Vec<ptxlab_builder::ResourceUsage> {
    let mut out = Vec::new();
    for m in ptxlab::modules::KERNELS.modules.iter().filter(|m| pick(m)) {
        if m.cubins.iter().any(|(a, _)| *a == arch) {
            let built: Vec<_> = m
                .resources
                .iter()
                .filter(|r| r.arch == arch)
                .map(|r| ptxlab_builder::ResourceUsage {
                    kernel: r.kernel.to_string(),
                    arch: r.arch.to_string(),
                    registers: r.registers,
                    spill_stores: r.spill_stores,
                    spill_loads: r.spill_loads,
                    stack_frame: r.stack_frame,
                    shared_bytes: r.shared_bytes,
                    ..Default::default()
                })
                .collect();
            assert_eq!(
                built.len(),
                m.entries.len(),
                "the build's {arch} report of the {label} module `{}` has {} rows for {} entries",
                m.group,
                built.len(),
                m.entries.len()
            );
            out.extend(built);
            continue;
        }
        let src = dir.join(format!("{label}.{}.ptx", m.group));
        std::fs::write(&src, m.ptx).unwrap();
        let cubin = dir.join(format!("{label}.{}.{arch}.cubin", m.group));
        out.extend(assemble(ptxas, &src, arch, &cubin).unwrap_or_else(|e| {
            panic!(
                "ptxas rejected the {label} module `{}` for {arch}: {e}",
                m.group
            )
        }));
    }
    out
}

#[test]
fn ptxas_accepts_the_modules_and_honours_register_caps() {
    let Some(ptxas) = ptxas_or_skip() else { return };
    let dir = std::env::temp_dir().join(format!("ptxlab-ptx-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (label, math) in [
        ("precise", ptxlab::MathMode::Precise),
        ("fast", ptxlab::MathMode::Fast),
    ] {
        for arch in ["sm_80", "sm_90"] {
            let report = assemble_modules(
                &ptxas,
                &dir,
                label,
                |m| m.math == math && !m.arch.ends_with('a'),
                arch,
            );
            let reg = |name: &str| report_of(&report, name).registers;
            assert!(
                reg("demo_regs_capped") <= 32,
                "{arch}: capped kernel uses {} registers",
                reg("demo_regs_capped")
            );
            assert!(
                reg("demo_regs") > 32,
                "{arch}: uncapped kernel uses only {} registers; the demo no longer shows the cap",
                reg("demo_regs")
            );
            for k in project_kernels() {
                if k.max_registers > 0 {
                    assert!(
                        reg(k.name) <= k.max_registers,
                        "{arch}: `{}` uses {} registers over its cap {}",
                        k.name,
                        reg(k.name),
                        k.max_registers
                    );
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn register_cap_rung_rewrites_every_entry() {
    let capped = ptxlab::runtime::module::with_register_cap(ptx(false), 24).unwrap();
    for k in kernels_in_ptx(&capped) {
        assert_eq!(k.max_registers, 24, "{}", k.name);
    }
    let e = ptxlab::runtime::module::with_register_cap(ptx(false), 7)
        .unwrap_err()
        .to_string();
    assert!(e.contains("7 registers") && e.contains("16..=255"), "{e}");
}

#[test]
fn tensor_core_kernels_use_the_tensor_cores() {
    // Warp level (sm_80 module): mma.sync, and ldmatrix from rung 2 on.
    for name in [
        "matmul_mma_bf16",
        "matmul_mma_f16",
        "matmul_ldsm_bf16",
        "matmul_pipe_f16",
        "matmul_pipes_bf16",
        "matmul_pipes_f16",
        "matmul_pipet_bf16",
        "matmul_pipet_f16",
    ] {
        let e = entry(ptx(false), name);
        assert!(
            e.contains("mma.sync.aligned.m16n8k16.row.col.f32"),
            "{name}: no mma.sync"
        );
    }
    assert!(entry(ptx(false), "matmul_mma_bf16").contains(".bf16.bf16"));
    assert!(entry(ptx(false), "matmul_mma_f16").contains(".f16.f16"));
    for name in ["matmul_ldsm_bf16", "matmul_pipe_bf16", "matmul_pipes_f16"] {
        let e = entry(ptx(false), name);
        assert!(
            e.contains("ldmatrix.sync.aligned.m8n8.x4.shared.b16"),
            "{name}"
        );
        assert!(
            e.contains("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"),
            "{name}"
        );
    }
    assert!(!entry(ptx(false), "matmul_mma_bf16").contains("ldmatrix"));
    assert!(entry(ptx(false), "matmul_pipe_bf16").contains("cp.async.cg.shared.global"));
    // Rung 3d: cp.async, and two blocks per SM asked of ptxas.
    let e = entry(ptx(false), "matmul_pipes_bf16");
    assert!(e.contains("cp.async.cg.shared.global") && e.contains(".minnctapersm 2"));
    assert!(e.contains(".bf16.bf16") && !e.contains(".f16.f16"));
    // Rung 3e: one block of eight warps per SM.
    for name in ["matmul_pipet_bf16", "matmul_pipet_f16"] {
        let e = entry(ptx(false), name);
        assert!(
            e.contains(".maxntid 256") && e.contains(".minnctapersm 1"),
            "{name}"
        );
    }
    // The TMA rungs' staging copy: one 16-byte store per chunk, 16-byte
    // loads when the source rows are aligned.
    let e = entry(ptx(false), "matmul_pitch16");
    assert!(
        e.contains("st.global.v4") && e.contains("ld.global.v4") && !e.contains(".local"),
        "matmul_pitch16"
    );
    let e = entry(ptx(false), "matmul_tf32x3_f32");
    assert!(e.contains("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"));
    assert!(e.contains("cvt.rna.tf32.f32"));
    // Warpgroup level (sm_90a module): wgmma, TMA, mbarriers, setmaxnreg.
    let h = ptxlab::modules::ptx_sm90a();
    assert!(
        h.contains(".target sm_90a"),
        "the Hopper module targets sm_90a"
    );
    for name in [
        "matmul_wgmma_bf16",
        "matmul_wgmma_f16",
        "matmul_ws_bf16",
        "matmul_ws_f16",
        "matmul_tf32x3w_f32",
        "matmul_fp8_ws",
        "matmul_fp8_ws_blockscaled",
    ] {
        let e = entry(h, name);
        for what in [
            "wgmma.mma_async.sync.aligned",
            "wgmma.fence.sync.aligned",
            "wgmma.commit_group.sync.aligned",
            "wgmma.wait_group.sync.aligned",
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
            "mbarrier.try_wait.parity.shared::cta.b64",
            "mbarrier.arrive.expect_tx.shared::cta.b64",
            "fence.proxy.tensormap::generic.acquire",
        ] {
            assert!(e.contains(what), "{name}: no `{what}`");
        }
    }
    assert!(entry(h, "matmul_wgmma_bf16").contains(".m64n128k16.f32.bf16.bf16"));
    assert!(entry(h, "matmul_ws_f16").contains(".m64n128k16.f32.f16.f16"));
    assert!(entry(h, "matmul_tf32x3w_f32").contains(".m64n128k8.f32.tf32.tf32"));
    assert!(entry(h, "matmul_fp8_ws").contains(".m64n128k32.f32.e4m3.e4m3"));
    assert!(entry(h, "matmul_fp8_ws_blockscaled").contains(".m64n128k32.f32.e4m3.e4m3"));
    for name in [
        "matmul_ws_bf16",
        "matmul_tf32x3w_f32",
        "matmul_fp8_ws",
        "matmul_fp8_ws_blockscaled",
    ] {
        let e = entry(h, name);
        assert!(e.contains("setmaxnreg.dec.sync.aligned.u32 40"), "{name}");
        assert!(e.contains("setmaxnreg.inc.sync.aligned.u32 232"), "{name}");
    }
}

#[test]
fn ptxas_accepts_the_sm90a_module_without_spills_in_the_wgmma_rungs() {
    let Some(ptxas) = ptxas_or_skip() else { return };
    let dir = std::env::temp_dir().join(format!("ptxlab-ptx90a-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report = assemble_modules(&ptxas, &dir, "sm90a", |m| m.arch == "sm_90a", "sm_90a");
    for name in [
        "matmul_wgmma_bf16",
        "matmul_wgmma_f16",
        "matmul_ws_bf16",
        "matmul_ws_f16",
        "matmul_fp8_ws",
    ] {
        no_spills(&report, name);
    }
    // The block-scaled FP8 kernel: ptxas honours its launch bound (384
    // threads, one block: at most 168 registers at launch; `setmaxnreg`
    // moves them between the warpgroups).
    let r = report_of(&report, "matmul_fp8_ws_blockscaled");
    assert!(r.registers <= 168, "matmul_fp8_ws_blockscaled: {r:?}");
    // The accumulators of the mma.sync rungs stay in registers too.
    let report = assemble_modules(
        &ptxas,
        &dir,
        "sm80",
        |m| m.math == ptxlab::MathMode::Precise && !m.arch.ends_with('a'),
        "sm_90",
    );
    for name in [
        "matmul_ldsm_bf16",
        "matmul_pipe_bf16",
        "matmul_pipe_f16",
        "matmul_pipes_bf16",
        "matmul_pipes_f16",
        "matmul_pipet_bf16",
        "matmul_pipet_f16",
        // The staging copy's 16-byte word is built in registers.
        "matmul_pitch16",
        // The FFT's coalesced rung: its points and butterflies fit the
        // 64 registers of its launch bound in both types.
        "fft_coalesced_f32",
        "fft_coalesced_f64",
    ] {
        let r = report_of(&report, name);
        assert_eq!((r.spill_stores, r.stack_frame), (0, 0), "{name}: {r:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn decode_kernels_use_the_tensor_cores_and_keep_their_registers() {
    // Attention decoding (kernels_gpu::attention::decode): `cp.async` copies
    // of the paged cache, `ldmatrix` (plain for K, transposed for V^T) and
    // `mma.sync` in BF16 in every split instance; two blocks per SM asked
    // of ptxas; the merge kernel one warp.
    let decode: Vec<_> = project_kernels()
        .into_iter()
        .filter(|k| k.module == "kernels_gpu::attention::decode")
        .collect();
    let names: Vec<&str> = decode.iter().map(|k| k.name).collect();
    assert_eq!(decode.len(), 5 + 3, "{names:?}");
    for k in &decode {
        let e = entry(ptx(false), k.name);
        if k.name.starts_with("attn_decode_combine") {
            assert!(e.contains(".maxntid 32, 1, 1"), "{}", k.name);
            continue;
        }
        for what in [
            ".maxntid 128, 1, 1",
            ".minnctapersm 2",
            "cp.async.cg.shared.global",
            "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
            "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
        ] {
            assert!(e.contains(what), "{}: no `{what}`", k.name);
        }
    }
    let Some(ptxas) = ptxas_or_skip() else { return };
    let dir = std::env::temp_dir().join(format!("ptxlab-decode-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report = assemble_modules(
        &ptxas,
        &dir,
        "decode",
        |m| m.group == "attention" && m.math == ptxlab::MathMode::Precise && !m.arch.ends_with('a'),
        "sm_90",
    );
    for name in names {
        let r = no_spills(&report, name);
        println!("sm_90 {name}: {} registers", r.registers);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
