//! [`Embed`]: the builder as a build dependency. From a host crate's
//! `build.rs` it builds a kernel crate to one or more PTX modules and writes
//! an `include!`-able Rust file that embeds them for `ptxlab-runtime`:
//!
//! ```text
//! // build.rs of a host crate whose kernels live in ./kernels
//! fn main() {
//!     ptxlab_builder::Embed::new("kernels").fast_math().run();
//! }
//! ```
//!
//! ```ignore
//! // src/main.rs
//! ptxlab_runtime::include_kernels!(); // pub static KERNELS: ptxlab_runtime::Kernels
//! ```
//!
//! The generated file defines one `static` of type `ptxlab_runtime::Kernels`:
//! each module's PTX (`include_str!`), its cubins (`include_bytes!`), its
//! register-capped cubins ([`Embed::reg_capped`]), every entry with its
//! parameter types and directives, and the `ptxas` resource report. The
//! environment can override the defaults without touching `build.rs`:
//! `PTXLAB_ARCH` (PTX target of the portable modules, default `sm_80`),
//! `PTXLAB_CUBIN_ARCHS` (cubin archs of the portable modules,
//! comma-separated, `none` for none; default [`DEFAULT_CUBIN_ARCHS`], those
//! at or above the PTX target, when `ptxas` is found; an arch-specific module
//! always gets its own arch's cubin), `PTXLAB_PTXAS` (which `ptxas`).
//!
//! Each module's build prints one line of timings (`ptxlab-builder: ...`),
//! which `cargo build -vv` shows.

use crate::build::{BuildOutput, Builder};
use crate::consts::{ARCH_SPECIFIC_PTX_ISA, DEFAULT_ARCH, DEFAULT_PTX_ISA};
use crate::error::{BuildError, err};
use crate::tools::find_ptxas;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Cubin archs of the portable modules when `ptxas` is found and
/// `PTXLAB_CUBIN_ARCHS` is unset: Ampere (`sm_80`, whose cubin also loads
/// on sm_86/sm_87/sm_89) and Hopper (`sm_90`), so a supported GPU of either
/// family loads every module without the driver's JIT.
pub const DEFAULT_CUBIN_ARCHS: &[&str] = &["sm_80", "sm_90"];

/// One module to build from the kernel crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleSpec {
    /// File stem (`kernels`, `kernels_fast`, `kernels_sm90a`).
    pub stem: String,
    /// PTX target (`sm_80`; an `a` target such as `sm_90a` runs on that arch only).
    pub arch: String,
    /// The fast-math build (the crate's `fast-math` feature and llc's fast flags).
    pub fast_math: bool,
    /// Other cargo features of the kernel crate for this module.
    pub features: Vec<String>,
    /// PTX ISA version (`78` = PTX 7.8).
    pub ptx_isa: u32,
    /// Register-capped cubins, as `(group, cap)` (see [`Embed::reg_capped`]).
    pub reg_caps: Vec<(String, u32)>,
}

/// Builds a kernel crate from `build.rs` and embeds the result (see the module docs).
#[derive(Debug, Clone)]
pub struct Embed {
    crate_dir: PathBuf,
    modules: Vec<ModuleSpec>,
    static_name: String,
    file: String,
    runtime: String,
}

/// What [`Embed::build`] wrote.
#[derive(Debug, Clone)]
pub struct Embedded {
    /// The generated Rust file (`$OUT_DIR/<file>`).
    pub file: PathBuf,
    /// Each module and its build.
    pub modules: Vec<(ModuleSpec, BuildOutput)>,
}

fn env(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

impl Embed {
    /// The kernel crate in `crate_dir` (relative paths are taken from the
    /// host crate's `CARGO_MANIFEST_DIR`), with one precise module, `kernels`,
    /// for `PTXLAB_ARCH` or `sm_80`.
    pub fn new(crate_dir: impl AsRef<Path>) -> Self {
        let dir = crate_dir.as_ref();
        let crate_dir = match env("CARGO_MANIFEST_DIR") {
            Some(m) if dir.is_relative() => Path::new(&m).join(dir),
            _ => dir.to_path_buf(),
        };
        Self {
            crate_dir,
            modules: vec![ModuleSpec {
                stem: "kernels".into(),
                arch: env("PTXLAB_ARCH").unwrap_or_else(|| DEFAULT_ARCH.into()),
                fast_math: false,
                features: Vec::new(),
                ptx_isa: DEFAULT_PTX_ISA,
                reg_caps: Vec::new(),
            }],
            static_name: "KERNELS".into(),
            file: "ptxlab_kernels.rs".into(),
            runtime: "::ptxlab_runtime".into(),
        }
    }

    /// Also builds a fast-math module (`kernels_fast`): the crate needs a
    /// `fast-math = ["ptxlab-device/fast-math"]` feature.
    pub fn fast_math(mut self) -> Self {
        let base = self.modules[0].clone();
        self.modules.push(ModuleSpec {
            stem: format!("{}_fast", base.stem),
            fast_math: true,
            reg_caps: Vec::new(),
            ..base
        });
        self
    }

    /// Adds a module (for example an `sm_90a` one with the crate's Hopper
    /// kernels behind a feature).
    pub fn module(mut self, spec: ModuleSpec) -> Self {
        self.modules.push(spec);
        self
    }

    /// Adds an arch-specific module (`sm_90a`: `wgmma`, `setmaxnreg`) built
    /// with the kernel crate's cargo `feature` turned on, as stem
    /// `kernels_sm90a`, PTX ISA [`ARCH_SPECIFIC_PTX_ISA`]. The runtime
    /// loads it on that arch only; the kernel crate decides with the
    /// feature which kernels it holds (typically only those that need the
    /// arch, so the portable modules stay as they were).
    pub fn arch_specific(mut self, arch: &str, feature: &str) -> Self {
        let base = self.modules[0].stem.clone();
        self.modules.push(ModuleSpec {
            stem: format!("{base}_{}", arch.replace('_', "")),
            arch: arch.to_string(),
            fast_math: false,
            features: vec![feature.to_string()],
            ptx_isa: ARCH_SPECIFIC_PTX_ISA,
            reg_caps: Vec::new(),
        });
        self
    }

    /// Also assembles the precise module's `group` (the kernels of one
    /// top-level Rust module of the kernel crate) with a register cap: its
    /// PTX with `.maxnreg cap` written into every entry, one cubin per cubin
    /// arch. The runtime loads that cubin for a launch with this cap
    /// (`ModuleKey::reg_cap`), where it would otherwise write the cap into the
    /// PTX and wait for the driver's JIT. Call it once per cap; only the named
    /// group pays the extra cubins (binary size and build time). Without
    /// `ptxas` it adds nothing. A cap outside 16..=255, or a group the crate
    /// does not have, fails the build, naming the allowed ones.
    pub fn reg_capped(mut self, group: &str, cap: u32) -> Self {
        let caps = &mut self.modules[0].reg_caps;
        let cap = (group.to_string(), cap);
        if !caps.contains(&cap) {
            caps.push(cap);
        }
        self
    }

    /// Names the generated static (default `KERNELS`) and file (default
    /// `ptxlab_kernels.rs`), for a host crate that embeds several kernel crates.
    pub fn named(mut self, static_name: &str, file: &str) -> Self {
        self.static_name = static_name.into();
        self.file = file.into();
        self
    }

    /// The path by which the generated code names the runtime crate (default
    /// `::ptxlab_runtime`; a crate that re-exports it can pass its own path).
    pub fn runtime_path(mut self, path: &str) -> Self {
        self.runtime = path.into();
        self
    }

    /// Cubin archs for a module: the module's own arch for an arch-specific
    /// (`a`) module; else `PTXLAB_CUBIN_ARCHS`; else those of
    /// [`DEFAULT_CUBIN_ARCHS`] at or above the module's PTX target (ptxas
    /// cannot assemble PTX for an older arch); none without `ptxas`.
    fn cubin_archs(spec: &ModuleSpec) -> Vec<String> {
        let ptxas = find_ptxas().is_ok();
        if spec.arch.ends_with('a') {
            return if ptxas {
                vec![spec.arch.clone()]
            } else {
                vec![]
            };
        }
        match env("PTXLAB_CUBIN_ARCHS") {
            Some(v) if v == "none" => vec![],
            Some(v) => v
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            None if ptxas => default_cubin_archs(&spec.arch),
            None => vec![],
        }
    }

    /// Builds every module into `$OUT_DIR`, writes the Rust file, and tells
    /// cargo when to run the build script again (the kernel crate's sources
    /// and its path dependencies', from rustc's dep-info; the variables above).
    pub fn build(self) -> Result<Embedded, BuildError> {
        let out_dir = env("OUT_DIR").map(PathBuf::from).ok_or_else(|| {
            err(
                "embed kernels",
                "OUT_DIR is not set",
                "Embed runs inside a build script (build.rs); use Builder elsewhere",
            )
        })?;
        for var in [
            "PTXLAB_ARCH",
            "PTXLAB_CUBIN_ARCHS",
            "PTXLAB_PTXAS",
            "PTXAS",
            "CUDA_HOME",
        ] {
            println!("cargo:rerun-if-env-changed={var}");
        }
        println!(
            "cargo:rerun-if-changed={}",
            self.crate_dir.join("Cargo.toml").display()
        );
        println!(
            "cargo:rerun-if-changed={}",
            self.crate_dir.join("src").display()
        );
        let mut built = Vec::new();
        for spec in &self.modules {
            let mut b = Builder::new(&self.crate_dir, &out_dir);
            b.arch = spec.arch.clone();
            b.stem = spec.stem.clone();
            b.fast_math = spec.fast_math;
            b.features = spec.features.clone();
            b.ptx_isa = spec.ptx_isa;
            b.cubin_archs = Self::cubin_archs(spec);
            b.reg_caps = spec.reg_caps.clone();
            let o = b.build()?;
            if let Some(note) = &o.ptxas_note {
                println!("cargo:warning={note}");
            }
            // Not a `cargo:` line: `cargo build -vv` shows it.
            println!("{}", timing_line(spec, &o));
            for s in &o.sources {
                println!("cargo:rerun-if-changed={}", s.display());
            }
            built.push((spec.clone(), o));
        }
        let file = out_dir.join(&self.file);
        std::fs::write(&file, self.render(&built))
            .map_err(|e| err("write the embedded kernels", e.to_string(), ""))?;
        Ok(Embedded {
            file,
            modules: built,
        })
    }

    /// [`Embed::build`] for `fn main` of a build script: on failure, prints the
    /// error with its hint and exits, so cargo shows it as the build's error.
    pub fn run(self) -> Embedded {
        match self.build() {
            Ok(e) => e,
            Err(e) => {
                eprintln!("\n\nptxlab: building the GPU kernels failed\n{e}\n");
                std::process::exit(1);
            }
        }
    }

    /// The generated Rust source.
    fn render(&self, built: &[(ModuleSpec, BuildOutput)]) -> String {
        let rt = &self.runtime;
        let name = crate_name(&self.crate_dir);
        let mut s = String::new();
        let _ = writeln!(
            s,
            "// Generated by ptxlab-builder from {}; do not edit.\n\
             /// The GPU kernels of crate `{name}`, built by ptxlab-builder: each module's PTX and\n\
             /// cubins, every entry with its parameter types and launch directives, and the\n\
             /// `ptxas` resource report. Launch them with `ptxlab_runtime::launch!`.\n\
             pub static {}: {rt}::Kernels = {{\n    \
             #[allow(unused_imports)] // `R` and `C` are unused when no ptxas ran\n    \
             use {rt}::module::{{CappedCubin as C, Entry as E, ModuleImage, ParamKind as P, Resources as R, MathMode}};\n    \
             {rt}::Kernels {{\n        crate_name: {name:?},\n        modules: &[",
            self.crate_dir.display(),
            self.static_name
        );
        for (spec, o) in built {
            let math = if spec.fast_math { "Fast" } else { "Precise" };
            for part in &o.parts {
                let _ = writeln!(
                    s,
                    "            ModuleImage {{\n                stem: {:?},\n                group: {:?},\n                math: MathMode::{math},\n                arch: {:?},\n                ptx: include_str!({:?}),",
                    spec.stem,
                    part.group,
                    spec.arch,
                    part.ptx_path.display().to_string()
                );
                s.push_str("                cubins: &[");
                for (arch, path) in &part.cubins {
                    let _ = write!(
                        s,
                        "({arch:?}, include_bytes!({:?})), ",
                        path.display().to_string()
                    );
                }
                s.push_str("],\n                capped: &[");
                for c in &part.capped {
                    let _ = write!(
                        s,
                        "\n                    C {{ cap: {}, arch: {:?}, cubin: include_bytes!({:?}), resources: &[",
                        c.cap,
                        c.arch,
                        c.path.display().to_string()
                    );
                    for r in &c.resources {
                        s.push_str(&resources_literal(r));
                        s.push_str(", ");
                    }
                    s.push_str("] },");
                }
                s.push_str("],\n                entries: &[\n");
                for k in &part.kernels {
                    let params: Vec<String> = k.params.iter().map(|p| param_kind(p)).collect();
                    let _ = writeln!(
                        s,
                        "                    E {{ name: {:?}, params: &[{}], max_threads: {}, min_blocks: {}, max_registers: {} }},",
                        k.name,
                        params.join(", "),
                        k.max_threads,
                        k.min_blocks,
                        k.max_registers
                    );
                }
                s.push_str("                ],\n                resources: &[\n");
                for r in o
                    .resources
                    .iter()
                    .filter(|r| part.kernels.iter().any(|k| k.name == r.kernel))
                {
                    let _ = writeln!(s, "                    {},", resources_literal(r));
                }
                s.push_str("                ],\n            },\n");
            }
        }
        s.push_str("        ],\n    }\n};\n");
        s
    }
}

/// A resource report row as a `Resources` expression (`R` in the generated file).
fn resources_literal(r: &crate::ptxas::ResourceUsage) -> String {
    format!(
        "R {{ kernel: {:?}, arch: {:?}, registers: {}, spill_stores: {}, spill_loads: {}, stack_frame: {}, shared_bytes: {} }}",
        r.kernel, r.arch, r.registers, r.spill_stores, r.spill_loads, r.stack_frame, r.shared_bytes
    )
}

/// [`DEFAULT_CUBIN_ARCHS`] at or above `ptx_arch` (`sm_80` keeps both;
/// `sm_90` keeps `sm_90`).
fn default_cubin_archs(ptx_arch: &str) -> Vec<String> {
    let num = |a: &str| {
        a.strip_prefix("sm_")
            .and_then(|n| n.trim_end_matches('a').parse::<u32>().ok())
    };
    let floor = num(ptx_arch).unwrap_or(0);
    DEFAULT_CUBIN_ARCHS
        .iter()
        .filter(|a| num(a).is_some_and(|n| n >= floor))
        .map(|a| a.to_string())
        .collect()
}

/// One line of a module's build timings: `ptxlab-builder: kernels (sm_80):
/// cargo 1.2 s, link 0.0 s, ptxas 31 cubins (sm_80, sm_90; 2 capped) 12.4 s`.
fn timing_line(spec: &ModuleSpec, o: &BuildOutput) -> String {
    let secs = |step: &str| {
        o.timings
            .iter()
            .find(|(s, _)| s == step)
            .map_or(0.0, |(_, t)| *t)
    };
    let mut archs: Vec<&str> = Vec::new();
    for (a, _) in &o.cubins {
        if !archs.contains(&a.as_str()) {
            archs.push(a);
        }
    }
    let capped: usize = o.parts.iter().map(|p| p.capped.len()).sum();
    format!(
        "ptxlab-builder: {} ({}): cargo {:.1} s, link {:.1} s, ptxas {} cubins ({}{}) {:.1} s",
        spec.stem,
        spec.arch,
        secs("cargo"),
        secs("link"),
        o.cubins.len(),
        if archs.is_empty() {
            "none".to_string()
        } else {
            archs.join(", ")
        },
        if capped > 0 {
            format!("; {capped} capped")
        } else {
            String::new()
        },
        secs("ptxas")
    )
}

/// A PTX parameter type as a `ParamKind` expression.
fn param_kind(p: &str) -> String {
    if let Some(rest) = p.strip_prefix("bytes:") {
        let (size, align) = rest.split_once(':').unwrap_or((rest, "1"));
        return format!("P::Bytes {{ size: {size}, align: {align} }}");
    }
    match p {
        "u8" | "s8" | "b8" => "P::U8",
        "u16" | "s16" | "b16" | "f16" => "P::U16",
        "u32" | "s32" | "b32" => "P::U32",
        "f32" => "P::F32",
        "f64" => "P::F64",
        _ => "P::U64",
    }
    .to_string()
}

/// The `name` of `[package]` in the crate's manifest (the folder name if unreadable).
fn crate_name(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
    let mut in_package = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            in_package = t == "[package]";
        } else if in_package
            && let Some(v) = t.strip_prefix("name")
            && let Some(v) = v.trim_start().strip_prefix('=')
        {
            return v.trim().trim_matches('"').to_string();
        }
    }
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn param_kinds_cover_the_ptx_types() {
        assert_eq!(param_kind("u64"), "P::U64");
        assert_eq!(param_kind("s32"), "P::U32");
        assert_eq!(param_kind("f32"), "P::F32");
        assert_eq!(param_kind("f64"), "P::F64");
        assert_eq!(
            param_kind("bytes:128:64"),
            "P::Bytes { size: 128, align: 64 }"
        );
    }

    #[test]
    fn the_crate_name_comes_from_the_manifest() {
        let ws = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        assert_eq!(crate_name(&ws.join("kernels-gpu")), "kernels-gpu");
    }

    #[test]
    fn default_cubin_archs_are_at_or_above_the_ptx_target() {
        assert_eq!(default_cubin_archs("sm_80"), ["sm_80", "sm_90"]);
        assert_eq!(default_cubin_archs("sm_86"), ["sm_90"]);
        assert_eq!(default_cubin_archs("sm_90"), ["sm_90"]);
    }

    #[test]
    fn reg_caps_go_to_the_precise_module_once() {
        let e = Embed::new("kernels")
            .fast_math()
            .reg_capped("lomb", 32)
            .reg_capped("lomb", 32)
            .reg_capped("lomb", 40);
        assert_eq!(
            e.modules[0].reg_caps,
            [("lomb".to_string(), 32), ("lomb".to_string(), 40)]
        );
        assert!(e.modules[1].reg_caps.is_empty() && e.modules[1].fast_math);
    }

    #[test]
    fn embed_outside_a_build_script_says_so() {
        if std::env::var_os("OUT_DIR").is_some() {
            return;
        }
        let e = Embed::new("kernels").build().unwrap_err().to_string();
        assert!(e.contains("OUT_DIR") && e.contains("build script"), "{e}");
    }
}
