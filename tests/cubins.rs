//! No JIT on Ampere or Hopper: every embedded module ships as cubins for
//! sm_80 and sm_90 (the Hopper module for sm_90a), the Lomb-Scargle
//! ladder's register caps as capped cubins, and every module the bench
//! launches from resolves to a cubin there.
//!
//! The CPU tests read the embedded `KERNELS` and run in CI. Without
//! `ptxas` at build time the build has no cubins at all: they skip with one
//! line, unless `PTXLAB_REQUIRE_PTXAS` is set (CI sets it), which makes
//! that a failure. The GPU tests skip without a driver (a failure with
//! `PTXLAB_REQUIRE_GPU`); on an A100, H100 or H200 they fail when any
//! module the bench loads goes through the driver's JIT.

use ptxlab::runtime::module::{LoadPlan, ModuleImage};
use ptxlab::runtime::testing::gpu_or_skip;
use ptxlab::workloads::lomb::{self, Options, Rung, Shape};
use ptxlab::{MathMode, ModuleKey};

const KERNELS: &ptxlab::runtime::Kernels = &ptxlab::modules::KERNELS;

/// The Lomb-Scargle kernels' group.
const LOMB: &str = "lomb";

/// Compute capabilities the build ships cubins for: A100, A10/RTX 30 (an
/// sm_80 cubin loads there), Ada (likewise), H100/H200.
const SHIPPED: [(i32, i32); 4] = [(8, 0), (8, 6), (8, 9), (9, 0)];

/// `true` when the build had `ptxas` (the embedded modules have cubins);
/// otherwise prints why the test skips, or fails with `PTXLAB_REQUIRE_PTXAS`.
fn built_with_ptxas() -> bool {
    if KERNELS.modules.iter().any(|m| !m.cubins.is_empty()) {
        return true;
    }
    let why = "the build had no ptxas, so no module has a cubin (set PTXLAB_PTXAS and rebuild)";
    assert!(
        std::env::var_os("PTXLAB_REQUIRE_PTXAS").is_none(),
        "PTXLAB_REQUIRE_PTXAS is set but {why}"
    );
    println!("skipped: {why}");
    false
}

fn arch_specific(m: &ModuleImage) -> bool {
    m.arch.ends_with('a')
}

/// Every register cap of the ladder (`regcapN` rungs of `Rung::LADDER`).
fn ladder_caps() -> Vec<u32> {
    let mut caps: Vec<u32> = Rung::LADDER
        .iter()
        .filter_map(|r| r.module().reg_cap)
        .collect();
    caps.sort_unstable();
    caps.dedup();
    caps
}

fn name(m: &ModuleImage) -> String {
    format!("{}/{}", m.stem, m.group)
}

#[test]
fn every_module_ships_cubins_for_ampere_and_hopper() {
    if !built_with_ptxas() {
        return;
    }
    let mut missing = Vec::new();
    for m in KERNELS.modules {
        let want: &[&str] = if arch_specific(m) {
            &[m.arch]
        } else {
            &["sm_80", "sm_90"]
        };
        for arch in want {
            if !m.cubins.iter().any(|(a, _)| a == arch) {
                missing.push(format!("{} {arch}", name(m)));
            }
        }
        for (arch, bytes) in m.cubins {
            // An ELF image, not an empty or text file.
            assert!(
                bytes.starts_with(b"\x7fELF"),
                "{} {arch}: the cubin is not an ELF file",
                name(m)
            );
        }
    }
    assert!(missing.is_empty(), "modules without a cubin: {missing:?}");
    // Both math modes and the Hopper module are there.
    for (math, arch) in [(MathMode::Precise, "sm_80"), (MathMode::Fast, "sm_80")] {
        assert!(
            KERNELS
                .modules
                .iter()
                .any(|m| m.math == math && m.arch == arch && m.group == LOMB),
            "no {math:?} {arch} Lomb-Scargle module"
        );
    }
    assert!(KERNELS.modules.iter().any(|m| m.arch == "sm_90a"));
}

#[test]
fn every_register_cap_of_the_ladder_ships_as_capped_cubins() {
    if !built_with_ptxas() {
        return;
    }
    let caps = ladder_caps();
    assert!(!caps.is_empty(), "the ladder has a register-cap rung");
    let lomb: Vec<&ModuleImage> = KERNELS
        .modules
        .iter()
        .filter(|m| m.group == LOMB && m.math == MathMode::Precise)
        .collect();
    assert!(!lomb.is_empty());
    for m in &lomb {
        for &cap in &caps {
            for arch in ["sm_80", "sm_90"] {
                let c = m
                    .capped
                    .iter()
                    .find(|c| c.cap == cap && c.arch == arch)
                    .unwrap_or_else(|| {
                        panic!(
                            "{}: no cubin capped at {cap} registers for {arch} (lab/common/build.rs \
                             LOMB_REG_CAPS must list every cap of the ladder)",
                            name(m)
                        )
                    });
                assert!(c.cubin.starts_with(b"\x7fELF"), "{} {arch} {cap}", name(m));
                // ptxas honoured the cap in every kernel of the module.
                for e in m.entries {
                    let r = c
                        .resources
                        .iter()
                        .find(|r| r.kernel == e.name)
                        .unwrap_or_else(|| panic!("{} {arch}: no report for {}", name(m), e.name));
                    assert!(
                        r.registers <= cap,
                        "{} {arch}: {} uses {} registers under a cap of {cap}",
                        name(m),
                        r.kernel,
                        r.registers
                    );
                }
            }
        }
    }
    // The capped cubins are for the group that uses them only.
    for m in KERNELS.modules {
        if !(m.group == LOMB && m.math == MathMode::Precise) {
            assert!(m.capped.is_empty(), "{} has capped cubins", name(m));
        }
    }
}

#[test]
fn on_ampere_and_hopper_nothing_of_the_bench_goes_through_the_jit() {
    if !built_with_ptxas() {
        return;
    }
    for cc in SHIPPED {
        // Every module, in its build's default form.
        for m in KERNELS.modules.iter().filter(|m| m.runs_on(cc)) {
            let key = ModuleKey {
                math: m.math,
                ..ModuleKey::default()
            };
            let plan = m.plan(cc, key);
            assert!(
                matches!(plan, LoadPlan::Cubin { .. }),
                "{} on {cc:?}: {plan}",
                name(m)
            );
        }
        // Every rung of the Lomb-Scargle ladder, with its own key.
        for rung in Rung::LADDER {
            let key = rung.module();
            for m in KERNELS
                .modules
                .iter()
                .filter(|m| m.group == LOMB && m.math == key.math && m.runs_on(cc))
            {
                let plan = m.plan(cc, key);
                assert!(
                    !plan.is_jit() && matches!(plan, LoadPlan::Cubin { .. }),
                    "{} ({}) on {cc:?}: {plan}",
                    rung.name(),
                    name(m)
                );
                assert!(!rung.needs_jit(), "{}", rung.name());
            }
        }
    }
    // The JIT lesson stays available, outside the ladder.
    assert!(!Rung::LADDER.contains(&Rung::Jit) && Rung::Jit.needs_jit());
    let m = KERNELS
        .modules
        .iter()
        .find(|m| m.group == LOMB && m.math == MathMode::Precise)
        .unwrap();
    assert!(m.plan((9, 0), Rung::Jit.module()).is_jit());
    // A cap off the ladder still runs, through the JIT.
    assert!(Rung::RegCap(40).needs_jit() && m.plan((9, 0), Rung::RegCap(40).module()).is_jit());
}

/// Launches one kernel of every Lomb-Scargle rung (f32 and f64: precise,
/// fast math, the register cap) and loads every other embedded module that
/// runs on this GPU in its build's default form and each cap it ships
/// (through the module cache launches use); returns the GPU's load records.
fn load_what_the_bench_loads(dev: &ptxlab::Device) -> Vec<ptxlab::runtime::gpu::LoadRecord> {
    let g = dev.as_gpu().expect("a GPU device");
    let (x, y) = lomb::material_samples().unwrap();
    let f = lomb::material_freqs(1 << 12);
    let shape = Shape::material(dev);
    for rung in Rung::LADDER {
        lomb::periodogram::<f32>(dev, rung, &x, &y, &f, Options::default(), shape)
            .unwrap_or_else(|e| panic!("{} f32: {e}", rung.name()));
        lomb::periodogram::<f64>(dev, rung, &x, &y, &f, Options::default(), shape)
            .unwrap_or_else(|e| panic!("{} f64: {e}", rung.name()));
    }
    let cc = g.info().compute_capability;
    for m in KERNELS.modules.iter().filter(|m| m.runs_on(cc)) {
        let base = ModuleKey {
            math: m.math,
            ..ModuleKey::default()
        };
        for key in std::iter::once(base).chain(m.caps().into_iter().map(|c| base.capped(c))) {
            g.module(m, key)
                .unwrap_or_else(|e| panic!("{} ({}): {e}", name(m), key.label()));
        }
    }
    g.load_records()
}

/// The GPU check of the issue: on an H100/H200 (and an A100) a run of what
/// the bench launches loads no module from PTX.
#[test]
fn gpu_bench_modules_load_without_the_jit() {
    let Some(dev) = gpu_or_skip() else {
        return;
    };
    let cc = dev.as_gpu().unwrap().info().compute_capability;
    let records = load_what_the_bench_loads(&dev);
    let jit: Vec<String> = records
        .iter()
        .filter(|r| r.jit)
        .map(|r| format!("{}: {} ({:.0} ms)", r.module, r.how, r.ms))
        .collect();
    println!(
        "{} module loads, {} through the JIT, {:.0} ms in all",
        records.len(),
        jit.len(),
        records.iter().map(|r| r.ms).sum::<f64>()
    );
    if !SHIPPED.contains(&cc) {
        println!(
            "skipped the no-JIT check: the build ships no cubins for compute capability {}.{}",
            cc.0, cc.1
        );
        return;
    }
    assert!(
        jit.is_empty(),
        "modules loaded from PTX through the driver's JIT on compute capability {}.{}: {jit:?}",
        cc.0,
        cc.1
    );
    if cc == (9, 0) {
        assert!(
            records.iter().any(|r| r.how == "cubin sm_90a"),
            "the sm_90a module was not loaded as its cubin: {records:?}"
        );
        assert!(
            records
                .iter()
                .any(|r| r.how.starts_with("cubin sm_90, maxnreg")),
            "no capped cubin was loaded: {records:?}"
        );
    }
}

/// The JIT lesson is still there when asked for: `--variant jit` loads the
/// PTX through the driver's JIT, and gives the cached rung's result.
#[test]
fn gpu_the_jit_rung_still_loads_the_ptx() {
    let Some(dev) = gpu_or_skip() else {
        return;
    };
    let (x, y) = lomb::material_samples().unwrap();
    let f = lomb::material_freqs(1 << 10);
    let shape = Shape::material(&dev);
    let o = Options::default();
    let jit = lomb::periodogram::<f32>(&dev, Rung::Jit, &x, &y, &f, o, shape).unwrap();
    let cached = lomb::periodogram::<f32>(&dev, Rung::Cached, &x, &y, &f, o, shape).unwrap();
    let peak = cached.iter().fold(0f64, |a, v| a.max(v.abs()));
    let worst = jit
        .iter()
        .zip(&cached)
        .fold(0f64, |a, (p, q)| a.max((p - q).abs()));
    assert!(
        worst <= 1e-5 * peak,
        "JIT and cubin differ by {worst} (peak {peak})"
    );
    let records = dev.as_gpu().unwrap().load_records();
    assert!(
        records.iter().any(|r| r.jit && r.module.ends_with("/lomb")),
        "the jit rung did not load the Lomb-Scargle PTX: {records:?}"
    );
}
