//! # ptxlab-builder: Rust kernels to PTX, cubins and a resource report
//!
//! The project's own `cuda_builder`. It needs nothing but the pinned nightly
//! toolchain (with `rust-src` and `llvm-tools`) and, optionally, `ptxas`:
//!
//! 1. `cargo rustc -p kernels-gpu --target nvptx64-nvidia-cuda -Zbuild-std=core
//!    -- --emit=llvm-bc` compiles the kernel crate to LLVM bitcode; the rlibs of
//!    its dependencies (`core`, `ptxlab-device`, ...) hold bitcode too.
//! 2. `llvm-link --only-needed` joins them, `opt` internalises everything but
//!    the kernels and optimises (`default<O3>`), `llc -mcpu=sm_XX` emits PTX.
//! 3. The `__ptxlab_meta_<kernel>` statics that `#[kernel]` leaves in the PTX
//!    are read and removed, and `.maxntid`, `.minnctapersm` and `.maxnreg`
//!    are written between each `.entry`'s parameters and its body.
//! 4. With `ptxas` (from PyPI's `nvidia-cuda-nvcc`, found through
//!    `PTXLAB_PTXAS`, `CUDA_HOME`, `PATH` or `target/nvcc`), each arch gets a
//!    cubin and a parsed per-kernel [`ResourceUsage`] report.
//!
//! Fast math is a cargo feature of the kernel crate (`fast-math`): the same
//! source, built a second time, with `math::` functions on the SFU, plus
//! `llc` flags for approximate division and square root and flush-to-zero.
//!
//! Builds are incremental (cargo's own fingerprints, in the builder's own
//! target directory, one per arch) and the link steps rerun only when an
//! input changed.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Default PTX target: every GPU from sm_80 (A100) up can JIT it.
pub const DEFAULT_ARCH: &str = "sm_80";
/// PTX ISA version written by default (CUDA 11.8+ drivers; sm_90 needs 7.8).
pub const DEFAULT_PTX_ISA: u32 = 78;
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

fn err(step: impl Into<String>, detail: impl Into<String>, hint: impl Into<String>) -> BuildError {
    BuildError {
        step: step.into(),
        detail: detail.into(),
        hint: hint.into(),
    }
}

/// Launch bounds and register cap of one kernel, as written in its source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelMeta {
    /// Entry name.
    pub name: String,
    /// `.maxntid` (0: none).
    pub max_threads: u32,
    /// `.minnctapersm` (0: none).
    pub min_blocks: u32,
    /// `.maxnreg` (0: none).
    pub max_registers: u32,
}

/// What `ptxas -v` reports for one kernel.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ResourceUsage {
    /// Entry name.
    pub kernel: String,
    /// Target arch (`sm_90`).
    pub arch: String,
    /// Registers per thread.
    pub registers: u32,
    /// Bytes of spill stores.
    pub spill_stores: u32,
    /// Bytes of spill loads.
    pub spill_loads: u32,
    /// Bytes of stack frame (local memory) per thread.
    pub stack_frame: u32,
    /// Bytes of static shared memory.
    pub shared_bytes: u32,
    /// Named barriers used.
    pub barriers: u32,
}

/// Options of one build.
#[derive(Debug, Clone)]
pub struct Builder {
    /// Workspace root (holds `Cargo.toml` and the kernel crate).
    pub workspace: PathBuf,
    /// Kernel package name.
    pub package: String,
    /// PTX target arch (`sm_80`).
    pub arch: String,
    /// PTX ISA version (78 = PTX 7.8).
    pub ptx_isa: u32,
    /// Optimisation level for `opt`/`llc` (0..=3).
    pub opt_level: u8,
    /// Build the fast-math variant.
    pub fast_math: bool,
    /// Where the builder keeps its cargo target dir and outputs.
    pub target_dir: PathBuf,
    /// Output directory for PTX, cubins and reports.
    pub out_dir: PathBuf,
    /// Output file stem (`kernels` gives `kernels.ptx`).
    pub stem: String,
    /// Archs to assemble cubins for with `ptxas` (empty: none).
    pub cubin_archs: Vec<String>,
    /// Explicit `ptxas` (otherwise [`find_ptxas`]).
    pub ptxas: Option<PathBuf>,
}

/// Result of a build.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BuildOutput {
    /// The PTX file.
    pub ptx_path: PathBuf,
    /// Kernels found, with their directives.
    pub kernels: Vec<KernelMeta>,
    /// Cubins written, by arch.
    pub cubins: Vec<(String, PathBuf)>,
    /// Resource report (empty without `ptxas`).
    pub resources: Vec<ResourceUsage>,
    /// Why there is no report or cubin, when there is none.
    pub ptxas_note: Option<String>,
}

impl Builder {
    /// A builder for `package` in `workspace`, writing into `out_dir`.
    pub fn new(workspace: impl Into<PathBuf>, out_dir: impl Into<PathBuf>) -> Self {
        let workspace = workspace.into();
        Self {
            target_dir: workspace.join("target").join("ptx"),
            workspace,
            package: "kernels-gpu".into(),
            arch: DEFAULT_ARCH.into(),
            ptx_isa: DEFAULT_PTX_ISA,
            opt_level: 3,
            fast_math: false,
            out_dir: out_dir.into(),
            stem: "kernels".into(),
            cubin_archs: Vec::new(),
            ptxas: None,
        }
    }

    /// Checks an arch name: `sm_NN` with NN >= 80 (`sm_90a` allowed). The
    /// floor is sm_80 because kernels use its instructions (`cp.async` in the
    /// SGEMM ladder's rung 5), so one module serves every supported GPU.
    pub fn validate_arch(arch: &str) -> Result<u32, BuildError> {
        let num = arch.strip_prefix("sm_").map(|s| s.trim_end_matches('a'));
        match num.and_then(|n| n.parse::<u32>().ok()) {
            Some(n) if n >= 80 => Ok(n),
            _ => Err(err(
                "arch check",
                format!("`{arch}` is not a supported target"),
                "use sm_80, sm_86, sm_89, sm_90 (or sm_90a) and up (Ampere or newer)",
            )),
        }
    }

    /// Runs the whole pipeline.
    pub fn build(&self) -> Result<BuildOutput, BuildError> {
        Self::validate_arch(&self.arch)?;
        for a in &self.cubin_archs {
            Self::validate_arch(a)?;
        }
        std::fs::create_dir_all(&self.out_dir)
            .map_err(|e| err("create output dir", e.to_string(), ""))?;
        let tools = LlvmTools::find()?;
        let (kernel_bc, dep_rlibs) = self.cargo_build()?;
        let work = self
            .target_dir
            .join(format!("link-{}-{}", self.arch, self.stem));
        std::fs::create_dir_all(&work).map_err(|e| err("create work dir", e.to_string(), ""))?;

        let ptx_path = self.out_dir.join(format!("{}.ptx", self.stem));
        let mut inputs = vec![kernel_bc.clone()];
        inputs.extend(dep_rlibs.iter().cloned());
        let stamp = self.out_dir.join(format!("{}.stamp", self.stem));
        let stamp_text = self.stamp_text(&inputs);
        let up_to_date = ptx_path.exists()
            && std::fs::read_to_string(&stamp)
                .map(|s| s == stamp_text)
                .unwrap_or(false);
        if !up_to_date {
            let members = extract_bitcode(&tools, &dep_rlibs, &work)?;
            let linked = work.join("linked.bc");
            let mut link = Command::new(&tools.llvm_link);
            link.arg(&kernel_bc)
                .arg("--only-needed")
                .args(&members)
                .arg("-o")
                .arg(&linked);
            run(&mut link, "llvm-link")?;
            let ll = work.join("linked.ll");
            run(
                Command::new(&tools.llvm_dis)
                    .arg(&linked)
                    .arg("-o")
                    .arg(&ll),
                "llvm-dis",
            )?;
            let ir = std::fs::read_to_string(&ll)
                .map_err(|e| err("read linked IR", e.to_string(), ""))?;
            let mut public = kernel_names_in_ir(&ir);
            if public.is_empty() {
                return Err(err(
                    "kernel discovery",
                    "no `ptx_kernel` function in the linked module",
                    "mark kernels with #[kernel] and make their module public",
                ));
            }
            public.extend(ir.lines().filter_map(|l| {
                l.strip_prefix("@__ptxlab_meta_")
                    .map(|r| format!("__ptxlab_meta_{}", r.split([' ', '=']).next().unwrap_or("")))
            }));
            let opt_bc = work.join("opt.bc");
            let o = self.opt_level.min(3);
            run(
                Command::new(&tools.opt)
                    .arg(format!(
                        "--internalize-public-api-list={}",
                        public.join(",")
                    ))
                    .arg(format!("-passes=internalize,default<O{o}>,globaldce"))
                    .arg(&linked)
                    .arg("-o")
                    .arg(&opt_bc),
                "opt",
            )?;
            let raw_ptx = work.join("raw.ptx");
            let mut llc = Command::new(&tools.llc);
            llc.arg(format!("-O{o}"))
                .arg(format!("-mcpu={}", self.arch))
                .arg(format!("-mattr=+ptx{}", self.ptx_isa));
            if self.fast_math {
                llc.args([
                    "-nvptx-prec-divf32=0",
                    "-nvptx-prec-sqrtf32=0",
                    "--denormal-fp-math-f32=preserve-sign",
                ]);
            }
            llc.arg(&opt_bc).arg("-o").arg(&raw_ptx);
            run(&mut llc, "llc")?;
            let raw = std::fs::read_to_string(&raw_ptx)
                .map_err(|e| err("read PTX", e.to_string(), ""))?;
            let (ptx, _) = apply_directives(&raw)?;
            std::fs::write(&ptx_path, ptx).map_err(|e| err("write PTX", e.to_string(), ""))?;
            let _ = std::fs::write(&stamp, stamp_text);
        }
        let ptx =
            std::fs::read_to_string(&ptx_path).map_err(|e| err("read PTX", e.to_string(), ""))?;
        let kernels = kernels_in_ptx(&ptx);

        let mut out = BuildOutput {
            ptx_path: ptx_path.clone(),
            kernels,
            cubins: Vec::new(),
            resources: Vec::new(),
            ptxas_note: None,
        };
        if !self.cubin_archs.is_empty() {
            match self.ptxas.clone().map(Ok).unwrap_or_else(find_ptxas) {
                Ok(ptxas) => {
                    for arch in &self.cubin_archs {
                        let cubin = self.out_dir.join(format!("{}.{arch}.cubin", self.stem));
                        let res = assemble(&ptxas, &ptx_path, arch, &cubin)?;
                        out.resources.extend(res);
                        out.cubins.push((arch.clone(), cubin));
                    }
                }
                Err(note) => out.ptxas_note = Some(note),
            }
        }
        let report = self.out_dir.join(format!("{}.report.json", self.stem));
        let _ = std::fs::write(
            &report,
            serde_json::to_string_pretty(&out).unwrap_or_default(),
        );
        Ok(out)
    }

    fn stamp_text(&self, inputs: &[PathBuf]) -> String {
        let mut s = format!(
            "arch={} isa={} opt={} fast={}\n",
            self.arch, self.ptx_isa, self.opt_level, self.fast_math
        );
        for p in inputs {
            let m = std::fs::metadata(p).and_then(|m| m.modified()).ok();
            s.push_str(&format!("{} {:?}\n", p.display(), m));
        }
        s
    }

    /// Step 1: the nested cargo build. Returns the kernel crate's bitcode and
    /// its dependencies' rlibs.
    fn cargo_build(&self) -> Result<(PathBuf, Vec<PathBuf>), BuildError> {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(cargo);
        // A clean environment: the outer cargo's (or clippy's) variables must
        // not leak into a build for another target.
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy().to_string();
            let keep = k == "CARGO_HOME" || k == "CARGO_NET_OFFLINE" || k == "CARGO_TERM_COLOR";
            if (k.starts_with("CARGO_") && !keep)
                || k.starts_with("RUSTC")
                || k.starts_with("RUSTFLAGS")
                || k.starts_with("RUSTDOC")
                || matches!(
                    k.as_str(),
                    "TARGET"
                        | "HOST"
                        | "OUT_DIR"
                        | "OPT_LEVEL"
                        | "PROFILE"
                        | "DEBUG"
                        | "NUM_JOBS"
                        | "MAKEFLAGS"
                        | "MFLAGS"
                )
            {
                cmd.env_remove(&k);
            }
        }
        // The PTX ISA version is an llc attribute (-mattr=+ptxNN below); as a
        // rustc target feature it is unstable and only produces a warning.
        let flags = [format!("-Ctarget-cpu={}", self.arch.trim_end_matches('a'))];
        cmd.env("CARGO_ENCODED_RUSTFLAGS", flags.join("\x1f"));
        cmd.current_dir(&self.workspace)
            .args([
                "rustc",
                "--release",
                "--target",
                "nvptx64-nvidia-cuda",
                "-Zbuild-std=core",
            ])
            .args([
                "--message-format=json-render-diagnostics",
                "-p",
                &self.package,
            ])
            .arg("--target-dir")
            .arg(self.target_dir.join(&self.arch))
            .args(["--config", "profile.release.panic=\"abort\""])
            .args(["--config", "profile.release.codegen-units=1"])
            .args(["--config", "profile.release.lto=false"])
            .args(["--config", "profile.release.debug=false"])
            .args(["--config", "profile.release.overflow-checks=false"]);
        if self.fast_math {
            cmd.args(["--features", "fast-math"]);
        }
        let bc_dir = self.target_dir.join(&self.arch).join("bc");
        std::fs::create_dir_all(&bc_dir)
            .map_err(|e| err("create bitcode dir", e.to_string(), ""))?;
        let bc = bc_dir.join(format!("{}.bc", self.stem));
        cmd.arg("--")
            .arg(format!("--emit=llvm-bc={}", bc.display()));
        let out = cmd.output().map_err(|e| {
            err(
                "cargo (kernel build)",
                e.to_string(),
                "is cargo on PATH? run `rustup toolchain install` in the repo root",
            )
        })?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let hint = if stderr.contains("rust-src") || stderr.contains("build-std") {
                "the pinned toolchain needs the rust-src component: `rustup toolchain install` in the repo root"
            } else {
                "fix the kernel crate's compile errors above (they are for the nvptx64 target)"
            };
            return Err(err(
                "kernel build for nvptx64-nvidia-cuda",
                stderr.to_string(),
                hint,
            ));
        }
        let mut rlibs = Vec::new();
        let mut kernel_rlib = None;
        let wanted = self.package.replace('-', "_");
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            if v["reason"] != "compiler-artifact" {
                continue;
            }
            let name = v["target"]["name"].as_str().unwrap_or("").replace('-', "_");
            for f in v["filenames"].as_array().into_iter().flatten() {
                let Some(f) = f.as_str() else { continue };
                // Host artifacts (proc-macros and their deps) live outside the
                // target triple's directory; only device rlibs hold NVPTX bitcode.
                if f.ends_with(".rlib") && f.contains("nvptx64-nvidia-cuda") {
                    if name == wanted {
                        kernel_rlib = Some(PathBuf::from(f));
                    } else {
                        rlibs.push(PathBuf::from(f));
                    }
                }
            }
        }
        if kernel_rlib.is_none() {
            return Err(err(
                "kernel build",
                format!("cargo reported no rlib for `{}`", self.package),
                "",
            ));
        }
        if !bc.exists() {
            return Err(err(
                "kernel build",
                format!("{} was not written", bc.display()),
                "",
            ));
        }
        Ok((bc, rlibs))
    }
}

/// Paths of the LLVM tools shipped by the `llvm-tools` component.
#[derive(Debug, Clone)]
pub struct LlvmTools {
    /// `llvm-link`.
    pub llvm_link: PathBuf,
    /// `llvm-ar`.
    pub llvm_ar: PathBuf,
    /// `llvm-dis`.
    pub llvm_dis: PathBuf,
    /// `opt`.
    pub opt: PathBuf,
    /// `llc`.
    pub llc: PathBuf,
}

impl LlvmTools {
    /// Finds the tools in the active toolchain's sysroot.
    pub fn find() -> Result<Self, BuildError> {
        let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
        let sysroot = Command::new(&rustc)
            .args(["--print", "sysroot"])
            .output()
            .map_err(|e| {
                err(
                    "rustc --print sysroot",
                    e.to_string(),
                    "run `rustup toolchain install`",
                )
            })?;
        let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
        let host = Command::new(&rustc).arg("-vV").output().ok().and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        });
        let bin = sysroot
            .join("lib/rustlib")
            .join(host.unwrap_or_else(|| "x86_64-unknown-linux-gnu".into()))
            .join("bin");
        let t = |n: &str| bin.join(n);
        let tools = Self {
            llvm_link: t("llvm-link"),
            llvm_ar: t("llvm-ar"),
            llvm_dis: t("llvm-dis"),
            opt: t("opt"),
            llc: t("llc"),
        };
        for p in [
            &tools.llvm_link,
            &tools.llvm_ar,
            &tools.llvm_dis,
            &tools.opt,
            &tools.llc,
        ] {
            if !p.exists() {
                return Err(err(
                    "find LLVM tools",
                    format!("{} is missing", p.display()),
                    "install the llvm-tools component: `rustup toolchain install` in the repo root \
                     (rust-toolchain.toml lists it)",
                ));
            }
        }
        Ok(tools)
    }
}

fn run(cmd: &mut Command, step: &str) -> Result<String, BuildError> {
    let out = cmd.output().map_err(|e| err(step, e.to_string(), ""))?;
    if !out.status.success() {
        return Err(err(
            step,
            String::from_utf8_lossy(&out.stderr).to_string(),
            "",
        ));
    }
    Ok(String::from_utf8_lossy(&out.stderr).to_string())
}

fn extract_bitcode(
    tools: &LlvmTools,
    rlibs: &[PathBuf],
    work: &Path,
) -> Result<Vec<PathBuf>, BuildError> {
    let mut members = Vec::new();
    for (i, rlib) in rlibs.iter().enumerate() {
        let dir = work.join(format!("dep{i}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| err("extract bitcode", e.to_string(), ""))?;
        run(
            Command::new(&tools.llvm_ar)
                .current_dir(&dir)
                .arg("x")
                .arg(rlib),
            "llvm-ar x",
        )?;
        let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(|e| err("extract bitcode", e.to_string(), ""))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "o"))
            .collect();
        found.sort();
        members.extend(found);
    }
    Ok(members)
}

/// Names of the `ptx_kernel` functions defined in textual LLVM IR.
pub fn kernel_names_in_ir(ir: &str) -> Vec<String> {
    ir.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("define ")?;
            if !rest.contains("ptx_kernel ") {
                return None;
            }
            let at = rest.find('@')?;
            let name: String = rest[at + 1..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.' || *c == '$')
                .collect();
            Some(name)
        })
        .collect()
}

/// Reads every `__ptxlab_meta_<kernel>` global from the PTX, removes it, and
/// writes the directives it encodes before the kernel's body. Returns the new
/// PTX and the metadata.
pub fn apply_directives(ptx: &str) -> Result<(String, Vec<KernelMeta>), BuildError> {
    let mut metas = Vec::new();
    let mut kept = Vec::new();
    for line in ptx.lines() {
        if let Some(pos) = line.find("__ptxlab_meta_") {
            let rest = &line[pos + "__ptxlab_meta_".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let bytes: Vec<u8> = line
                .split_once('{')
                .map(|(_, b)| {
                    b.trim_end_matches(['}', ';', ' '])
                        .split(',')
                        .filter_map(|x| x.trim().parse::<u8>().ok())
                        .collect()
                })
                .unwrap_or_default();
            if line.contains(".global") {
                let mut words = [0u32; 4];
                for (i, b) in bytes.iter().enumerate().take(16) {
                    words[i / 4] |= (*b as u32) << (8 * (i % 4));
                }
                if words[3] != META_MAGIC {
                    return Err(err(
                        "read kernel metadata",
                        format!("bad metadata for `{name}`: {line}"),
                        "",
                    ));
                }
                metas.push(KernelMeta {
                    name,
                    max_threads: words[0],
                    min_blocks: words[1],
                    max_registers: words[2],
                });
                continue;
            }
        }
        kept.push(line);
    }
    let mut out = String::with_capacity(ptx.len() + 256);
    let mut pending: Option<&KernelMeta> = None;
    for line in kept {
        if let Some(rest) = line
            .trim_start()
            .strip_prefix(".visible .entry ")
            .or_else(|| line.trim_start().strip_prefix(".entry "))
        {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
                .collect();
            pending = metas.iter().find(|m| m.name == name);
        }
        if line.trim() == "{"
            && let Some(m) = pending.take()
        {
            if m.max_threads > 0 {
                out.push_str(&format!(".maxntid {}, 1, 1\n", m.max_threads));
            }
            if m.min_blocks > 0 {
                out.push_str(&format!(".minnctapersm {}\n", m.min_blocks));
            }
            if m.max_registers > 0 {
                out.push_str(&format!(".maxnreg {}\n", m.max_registers));
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok((out, metas))
}

/// Kernels (`.entry`) in a PTX file and the directives attached to each.
pub fn kernels_in_ptx(ptx: &str) -> Vec<KernelMeta> {
    let mut out: Vec<KernelMeta> = Vec::new();
    let mut current: Option<KernelMeta> = None;
    for line in ptx.lines() {
        let t = line.trim();
        if let Some(rest) = t
            .strip_prefix(".visible .entry ")
            .or_else(|| t.strip_prefix(".entry "))
        {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
                .collect();
            current = Some(KernelMeta {
                name,
                max_threads: 0,
                min_blocks: 0,
                max_registers: 0,
            });
            continue;
        }
        if let Some(k) = current.as_mut() {
            let num = |s: &str| {
                s.split([',', ' '])
                    .find_map(|x| x.trim().parse::<u32>().ok())
                    .unwrap_or(0)
            };
            if let Some(v) = t.strip_prefix(".maxntid") {
                k.max_threads = num(v);
            } else if let Some(v) = t.strip_prefix(".minnctapersm") {
                k.min_blocks = num(v);
            } else if let Some(v) = t.strip_prefix(".maxnreg") {
                k.max_registers = num(v);
            } else if t == "{" {
                out.extend(current.take());
            }
        }
    }
    out
}

/// Finds `ptxas`: `PTXLAB_PTXAS`, `PTXAS`, `$CUDA_HOME/bin`, `PATH`, then the
/// unpacked PyPI wheel under `target/nvcc` of this workspace, then
/// `/usr/local/cuda/bin`. The error says how to get one.
pub fn find_ptxas() -> Result<PathBuf, String> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    for var in ["PTXLAB_PTXAS", "PTXAS"] {
        if let Some(p) = std::env::var_os(var) {
            candidates.push(PathBuf::from(p));
        }
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(p) = std::env::var_os(var) {
            candidates.push(PathBuf::from(p).join("bin/ptxas"));
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join("ptxas")));
    }
    let ws = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf);
    if let Some(ws) = ws {
        for sub in [
            "target/nvcc/nvidia/cu13/bin/ptxas",
            "target/nvcc/nvidia/cuda_nvcc/bin/ptxas",
        ] {
            candidates.push(ws.join(sub));
        }
    }
    candidates.push(PathBuf::from("/usr/local/cuda/bin/ptxas"));
    candidates.into_iter().find(|p| p.is_file()).ok_or_else(|| {
        "ptxas not found (no cubins, no resource report); get it with \
         `pip download --no-deps 'nvidia-cuda-nvcc==13.0.*' -d target/nvcc && cd target/nvcc && unzip -o *.whl`, \
         or set PTXLAB_PTXAS"
            .to_string()
    })
}

/// `ptxas -v` of a PTX file for `arch`: writes the cubin, returns the report.
pub fn assemble(
    ptxas: &Path,
    ptx: &Path,
    arch: &str,
    cubin: &Path,
) -> Result<Vec<ResourceUsage>, BuildError> {
    let out = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .args(["-O3", "-v"])
        .arg(ptx)
        .arg("-o")
        .arg(cubin)
        .output()
        .map_err(|e| err("ptxas", e.to_string(), "check PTXLAB_PTXAS"))?;
    let text = String::from_utf8_lossy(&out.stderr).to_string();
    if !out.status.success() {
        return Err(err(
            format!("ptxas -arch={arch}"),
            text,
            "the PTX was rejected: if it names the PTX version, use a newer ptxas or a lower --ptx-isa",
        ));
    }
    Ok(parse_ptxas_report(&text, arch))
}

/// Parses `ptxas -v` output into one [`ResourceUsage`] per kernel.
pub fn parse_ptxas_report(text: &str, arch: &str) -> Vec<ResourceUsage> {
    let mut out: Vec<ResourceUsage> = Vec::new();
    let num_before = |s: &str, unit: &str| -> u32 {
        s.split(',')
            .find(|p| p.contains(unit))
            .and_then(|p| p.split_whitespace().find_map(|w| w.parse::<u32>().ok()))
            .unwrap_or(0)
    };
    for line in text.lines() {
        if let Some(rest) = line.split("Function properties for ").nth(1) {
            out.push(ResourceUsage {
                kernel: rest.trim().to_string(),
                arch: arch.to_string(),
                ..Default::default()
            });
        } else if line.contains("bytes stack frame") {
            if let Some(k) = out.last_mut() {
                k.stack_frame = num_before(line, "stack frame");
                k.spill_stores = num_before(line, "spill stores");
                k.spill_loads = num_before(line, "spill loads");
            }
        } else if let Some(rest) = line.split("Used ").nth(1)
            && let Some(k) = out.last_mut()
        {
            k.registers = num_before(rest, "registers");
            k.barriers = num_before(rest, "barriers");
            k.shared_bytes = num_before(rest, "smem");
        }
    }
    out
}

/// Renders a resource report as a Markdown table.
pub fn report_table(rows: &[ResourceUsage]) -> String {
    let mut s = String::from(
        "| kernel | arch | registers | spill stores (B) | spill loads (B) | stack (B) | static smem (B) |\n|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            r.kernel,
            r.arch,
            r.registers,
            r.spill_stores,
            r.spill_loads,
            r.stack_frame,
            r.shared_bytes
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_are_inserted_and_meta_removed() {
        let ptx = ".visible .global .align 4 .b8 __ptxlab_meta_k[16] = {0, 1, 0, 0, 2, 0, 0, 0, 32, 0, 0, 0, 76, 88, 84, 80};\n\
                   .visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n\tret;\n}\n";
        let (out, metas) = apply_directives(ptx).unwrap();
        assert_eq!(
            metas,
            vec![KernelMeta {
                name: "k".into(),
                max_threads: 256,
                min_blocks: 2,
                max_registers: 32
            }]
        );
        assert!(!out.contains("__ptxlab_meta_"));
        assert!(out.contains(".maxntid 256, 1, 1\n.minnctapersm 2\n.maxnreg 32\n{"));
        assert_eq!(kernels_in_ptx(&out), metas);
    }

    #[test]
    fn ptxas_report_is_parsed() {
        let text = "ptxas info    : Compiling entry function 'k' for 'sm_90'\n\
                    ptxas info    : Function properties for k\n    \
                    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
                    ptxas info    : Used 32 registers, used 1 barriers, 1024 bytes smem, 380 bytes cmem[0]\n";
        let r = parse_ptxas_report(text, "sm_90");
        assert_eq!(
            r,
            vec![ResourceUsage {
                kernel: "k".into(),
                arch: "sm_90".into(),
                registers: 32,
                spill_stores: 4,
                spill_loads: 12,
                stack_frame: 8,
                shared_bytes: 1024,
                barriers: 1
            }]
        );
    }

    #[test]
    fn bad_arch_is_rejected_with_the_allowed_ones() {
        let e = Builder::validate_arch("sm_35").unwrap_err().to_string();
        assert!(e.contains("sm_35") && e.contains("sm_80"), "{e}");
        assert!(Builder::validate_arch("sm_90a").is_ok());
        // Below Ampere: the kernels use sm_80 instructions (`cp.async`).
        let e = Builder::validate_arch("sm_75").unwrap_err().to_string();
        assert!(e.contains("sm_75") && e.contains("Ampere"), "{e}");
    }
}
