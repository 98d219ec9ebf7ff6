//! [`Builder`]: one kernel crate to one PTX module (plus cubins and the
//! resource report), through rustc's NVPTX backend and the LLVM tools.

use crate::consts::{DEFAULT_ARCH, DEFAULT_PTX_ISA};
use crate::directives::{
    KernelMeta, apply_directives, kernel_names_in_ir, kernels_in_ptx, with_register_cap,
};
use crate::error::{BuildError, err};
use crate::ptxas::{ResourceUsage, assemble};
use crate::split::split;
use crate::tools::{LlvmTools, Toolchain, find_ptxas, run};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Options of one build: one kernel crate, one arch, one module.
#[derive(Debug, Clone)]
pub struct Builder {
    /// The kernel crate: the folder that holds its `Cargo.toml`.
    pub crate_dir: PathBuf,
    /// PTX target arch (`sm_80`; `sm_90a` for Hopper-only instructions).
    pub arch: String,
    /// PTX ISA version (78 = PTX 7.8).
    pub ptx_isa: u32,
    /// Optimisation level for `opt`/`llc` (0..=3).
    pub opt_level: u8,
    /// Build the fast-math variant (turns on the crate's `fast-math` feature
    /// and `llc`'s approximate division, square root and flush-to-zero).
    pub fast_math: bool,
    /// Other cargo features of the kernel crate to turn on.
    pub features: Vec<String>,
    /// Where the builder keeps its cargo target dir (one per arch inside).
    pub target_dir: PathBuf,
    /// Output directory for PTX, cubins and reports.
    pub out_dir: PathBuf,
    /// Output file stem (`kernels` gives `kernels.ptx`).
    pub stem: String,
    /// Archs to assemble cubins for with `ptxas` (empty: none).
    pub cubin_archs: Vec<String>,
    /// Register-capped cubins: for each `(group, cap)`, the group's PTX
    /// with `.maxnreg cap` written into every entry, assembled for each of
    /// [`Builder::cubin_archs`] (a capped kernel then loads without the
    /// driver's JIT). A group the build does not have is an error.
    pub reg_caps: Vec<(String, u32)>,
    /// Explicit `ptxas` (otherwise [`find_ptxas`]).
    pub ptxas: Option<PathBuf>,
}

/// One loadable part of a build: the entries of one group (top-level Rust
/// module of the kernel crate) and what they reach, as PTX and cubins.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Part {
    /// Group name (`poisson`).
    pub group: String,
    /// The part's PTX file (`kernels.poisson.ptx`).
    pub ptx_path: PathBuf,
    /// Its entries.
    pub kernels: Vec<KernelMeta>,
    /// Its cubins, by arch.
    pub cubins: Vec<(String, PathBuf)>,
    /// Its register-capped cubins (see [`Builder::reg_caps`]).
    #[serde(default)]
    pub capped: Vec<CappedCubin>,
}

/// One register-capped cubin of a part: the part's PTX with `.maxnreg cap`
/// in every entry, assembled for one arch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CappedCubin {
    /// Registers per thread (`.maxnreg`).
    pub cap: u32,
    /// Target arch (`sm_90`).
    pub arch: String,
    /// The cubin (`kernels.lomb.maxnreg32.sm_90.cubin`).
    pub path: PathBuf,
    /// `ptxas`'s report for the capped kernels.
    pub resources: Vec<ResourceUsage>,
}

/// Result of a build.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BuildOutput {
    /// The PTX file of the whole crate.
    pub ptx_path: PathBuf,
    /// Kernels found, with their directives, parameter types and group.
    pub kernels: Vec<KernelMeta>,
    /// The loadable parts, one per group.
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Every cubin written (of every part), by arch.
    pub cubins: Vec<(String, PathBuf)>,
    /// Resource report (empty without `ptxas`).
    pub resources: Vec<ResourceUsage>,
    /// Why there is no report or cubin, when there is none.
    pub ptxas_note: Option<String>,
    /// The `ptxas` build that made the cubins (the last line of its
    /// `--version`, `Build cuda_13.0.r13.0/...`), when one ran.
    #[serde(default)]
    pub ptxas_version: Option<String>,
    /// Source files the build read (from rustc's dep-info), for
    /// `cargo:rerun-if-changed`; the toolchain's own sources excluded.
    #[serde(default)]
    pub sources: Vec<PathBuf>,
    /// Wall time of each step, seconds: `cargo` (the kernel crate to
    /// bitcode), `link` (bitcode to PTX; near zero when up to date) and
    /// `ptxas` (every cubin; near zero when all were reused).
    #[serde(default)]
    pub timings: Vec<(String, f64)>,
}

impl Builder {
    /// A builder for the kernel crate in `crate_dir`, writing into `out_dir`.
    /// Its cargo target directory defaults to `target/ptx` beside the crate's
    /// workspace (see [`Builder::target_dir`]).
    pub fn new(crate_dir: impl Into<PathBuf>, out_dir: impl Into<PathBuf>) -> Self {
        let crate_dir = crate_dir.into();
        Self {
            target_dir: default_target_dir(&crate_dir),
            crate_dir,
            arch: DEFAULT_ARCH.into(),
            ptx_isa: DEFAULT_PTX_ISA,
            opt_level: 3,
            fast_math: false,
            features: Vec::new(),
            out_dir: out_dir.into(),
            stem: "kernels".into(),
            cubin_archs: Vec::new(),
            reg_caps: Vec::new(),
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

    /// The kernel crate's manifest.
    pub fn manifest(&self) -> PathBuf {
        self.crate_dir.join("Cargo.toml")
    }

    /// Runs the whole pipeline.
    pub fn build(&self) -> Result<BuildOutput, BuildError> {
        Self::validate_arch(&self.arch)?;
        for a in &self.cubin_archs {
            Self::validate_arch(a)?;
        }
        for (group, cap) in &self.reg_caps {
            // The cap's range is checked before minutes of building.
            with_register_cap("", *cap).map_err(|e| {
                err(
                    format!("register-capped cubins of group `{group}`"),
                    e.detail,
                    e.hint,
                )
            })?;
        }
        if !self.manifest().is_file() {
            return Err(err(
                "find the kernel crate",
                format!("{} does not exist", self.manifest().display()),
                "point the builder at the folder that holds the kernel crate's Cargo.toml",
            ));
        }
        std::fs::create_dir_all(&self.out_dir)
            .map_err(|e| err("create output dir", e.to_string(), ""))?;
        let toolchain = Toolchain::detect()?;
        let tools = LlvmTools::in_toolchain(&toolchain)?;
        let t = std::time::Instant::now();
        let built = self.cargo_build(&toolchain)?;
        let mut timings = vec![("cargo".to_string(), t.elapsed().as_secs_f64())];
        let t = std::time::Instant::now();
        let work = self
            .target_dir
            .join(format!("link-{}-{}", self.arch, self.stem));
        std::fs::create_dir_all(&work).map_err(|e| err("create work dir", e.to_string(), ""))?;

        let ptx_path = self.out_dir.join(format!("{}.ptx", self.stem));
        let mut inputs = vec![built.bitcode.clone()];
        inputs.extend(built.dep_rlibs.iter().cloned());
        let stamp = self.out_dir.join(format!("{}.stamp", self.stem));
        let stamp_text = self.stamp_text(&inputs);
        let up_to_date = ptx_path.exists()
            && std::fs::read_to_string(&stamp)
                .map(|s| s == stamp_text)
                .unwrap_or(false);
        if !up_to_date {
            self.link(&tools, &built, &work, &ptx_path)?;
            let _ = std::fs::write(&stamp, stamp_text);
        }
        timings.push(("link".to_string(), t.elapsed().as_secs_f64()));
        let ptx =
            std::fs::read_to_string(&ptx_path).map_err(|e| err("read PTX", e.to_string(), ""))?;
        let groups: Vec<(String, String)> = std::fs::read_to_string(groups_path(&ptx_path))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        let group_of = |entry: &str| {
            groups
                .iter()
                .find(|(e, _)| e == entry)
                .map(|(_, g)| g.clone())
                .unwrap_or_else(|| "lib".into())
        };
        let mut kernels = kernels_in_ptx(&ptx);
        for k in &mut kernels {
            k.group = group_of(&k.name);
        }

        let mut out = BuildOutput {
            ptx_path: ptx_path.clone(),
            kernels,
            parts: Vec::new(),
            cubins: Vec::new(),
            resources: Vec::new(),
            ptxas_note: None,
            ptxas_version: None,
            sources: built.sources,
            timings,
        };
        let ptxas = if self.cubin_archs.is_empty() {
            None
        } else {
            match self.ptxas.clone().map(Ok).unwrap_or_else(find_ptxas) {
                Ok(p) => Some(p),
                Err(note) => {
                    out.ptxas_note = Some(note);
                    None
                }
            }
        };
        let stamp = ptxas.as_deref().map(PtxasStamp::of);
        out.ptxas_version = stamp.as_ref().map(|s| s.build.clone());
        let t = std::time::Instant::now();
        let parts = split(&ptx, group_of);
        if let Some((group, _)) = self
            .reg_caps
            .iter()
            .find(|(g, _)| !parts.iter().any(|(p, _)| p == g))
        {
            let groups: Vec<&str> = parts.iter().map(|(g, _)| g.as_str()).collect();
            return Err(err(
                format!("register-capped cubins of group `{group}`"),
                format!("the build `{}` has no group `{group}`", self.stem),
                format!(
                    "name one of its groups (the kernel crate's top-level modules): {}",
                    groups.join(", ")
                ),
            ));
        }
        // Every cubin to assemble, in the order the parts list them.
        let mut jobs: Vec<CubinJob> = Vec::new();
        for (group, text) in parts {
            let part_ptx = self.out_dir.join(format!("{}.{group}.ptx", self.stem));
            // Rewrite only on change, so the cubins' inputs keep their times.
            write_if_changed(&part_ptx, &text)?;
            let mut kernels = kernels_in_ptx(&text);
            for k in &mut kernels {
                k.group = group.clone();
            }
            if ptxas.is_some() {
                let part = out.parts.len();
                for arch in &self.cubin_archs {
                    jobs.push(CubinJob {
                        part,
                        cap: None,
                        arch: arch.clone(),
                        ptx: part_ptx.clone(),
                        cubin: self
                            .out_dir
                            .join(format!("{}.{group}.{arch}.cubin", self.stem)),
                    });
                }
                for cap in self.caps_of(&group) {
                    let capped_ptx = self
                        .out_dir
                        .join(format!("{}.{group}.maxnreg{cap}.ptx", self.stem));
                    write_if_changed(&capped_ptx, &with_register_cap(&text, cap)?)?;
                    for arch in &self.cubin_archs {
                        jobs.push(CubinJob {
                            part,
                            cap: Some(cap),
                            arch: arch.clone(),
                            ptx: capped_ptx.clone(),
                            cubin: self
                                .out_dir
                                .join(format!("{}.{group}.maxnreg{cap}.{arch}.cubin", self.stem)),
                        });
                    }
                }
            }
            out.parts.push(Part {
                group,
                ptx_path: part_ptx,
                kernels,
                cubins: Vec::new(),
                capped: Vec::new(),
            });
        }
        if let (Some(ptxas), Some(stamp)) = (&ptxas, &stamp) {
            let reports = assemble_all(ptxas, &stamp.key, &jobs);
            for (job, report) in jobs.into_iter().zip(reports) {
                let resources = report?;
                let part = &mut out.parts[job.part];
                out.cubins.push((job.arch.clone(), job.cubin.clone()));
                match job.cap {
                    None => {
                        out.resources.extend(resources);
                        part.cubins.push((job.arch, job.cubin));
                    }
                    Some(cap) => part.capped.push(CappedCubin {
                        cap,
                        arch: job.arch,
                        path: job.cubin,
                        resources,
                    }),
                }
            }
        }
        out.timings
            .push(("ptxas".to_string(), t.elapsed().as_secs_f64()));
        let report = self.out_dir.join(format!("{}.report.json", self.stem));
        let _ = std::fs::write(
            &report,
            serde_json::to_string_pretty(&out).unwrap_or_default(),
        );
        Ok(out)
    }

    /// The register caps asked for `group`, each once, in the order given.
    fn caps_of(&self, group: &str) -> Vec<u32> {
        let mut caps = Vec::new();
        for (g, cap) in &self.reg_caps {
            if g == group && !caps.contains(cap) {
                caps.push(*cap);
            }
        }
        caps
    }

    /// Steps 2 and 3: link the bitcode, optimise, emit PTX, write directives.
    fn link(
        &self,
        tools: &LlvmTools,
        built: &Built,
        work: &Path,
        ptx_path: &Path,
    ) -> Result<(), BuildError> {
        let members = extract_bitcode(tools, &built.dep_rlibs, work)?;
        // `--only-needed` takes from each member, in order, what is needed
        // so far; a member can need something of one linked before it
        // (`core`'s panics need the panic handler of `ptxlab-device`), and
        // the members' order is that of their paths. So link again, the
        // result with the members, until no declaration is left that a
        // further pass resolves (one or two passes in practice).
        let linked = work.join("linked.bc");
        let ll = work.join("linked.ll");
        let mut input = built.bitcode.clone();
        let mut declared: Option<Vec<String>> = None;
        let ir = loop {
            let mut link = Command::new(&tools.llvm_link);
            link.arg(&input)
                .arg("--only-needed")
                .args(&members)
                .arg("-o")
                .arg(&linked);
            run(&mut link, "llvm-link")?;
            run(
                Command::new(&tools.llvm_dis)
                    .arg(&linked)
                    .arg("-o")
                    .arg(&ll),
                "llvm-dis",
            )?;
            let ir = std::fs::read_to_string(&ll)
                .map_err(|e| err("read linked IR", e.to_string(), ""))?;
            let now = declarations(&ir);
            if declared.as_ref() == Some(&now) || now.is_empty() {
                break ir;
            }
            declared = Some(now);
            let again = work.join("linked.prev.bc");
            std::fs::rename(&linked, &again).map_err(|e| err("link again", e.to_string(), ""))?;
            input = again;
        };
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
        let raw =
            std::fs::read_to_string(&raw_ptx).map_err(|e| err("read PTX", e.to_string(), ""))?;
        let (ptx, metas) = apply_directives(&raw)?;
        let groups: Vec<(String, String)> = metas.into_iter().map(|m| (m.name, m.group)).collect();
        std::fs::write(
            groups_path(ptx_path),
            serde_json::to_string(&groups).unwrap_or_default(),
        )
        .map_err(|e| err("write entry groups", e.to_string(), ""))?;
        std::fs::write(ptx_path, ptx).map_err(|e| err("write PTX", e.to_string(), ""))
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

    /// Step 1: the nested cargo build. Returns the kernel crate's bitcode,
    /// its dependencies' rlibs and the sources they were built from.
    fn cargo_build(&self, toolchain: &Toolchain) -> Result<Built, BuildError> {
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
        let manifest = self.manifest();
        cmd.current_dir(&self.crate_dir)
            .args([
                "rustc",
                "--release",
                "--target",
                "nvptx64-nvidia-cuda",
                "-Zbuild-std=core",
            ])
            .args(["--message-format=json-render-diagnostics", "--lib"])
            .arg("--manifest-path")
            .arg(&manifest)
            .arg("--target-dir")
            .arg(self.target_dir.join(&self.arch))
            .args(["--config", "profile.release.panic=\"abort\""])
            .args(["--config", "profile.release.codegen-units=1"])
            .args(["--config", "profile.release.lto=false"])
            .args(["--config", "profile.release.debug=false"])
            .args(["--config", "profile.release.overflow-checks=false"]);
        let mut features = self.features.clone();
        if self.fast_math {
            features.push("fast-math".into());
        }
        if !features.is_empty() {
            cmd.args(["--features", &features.join(",")]);
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
                "is cargo on PATH? run `rustup toolchain install` in the folder of your rust-toolchain.toml",
            )
        })?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let hint = if stderr.contains("rust-src") || stderr.contains("build-std") {
                "the toolchain needs the rust-src component: `rustup component add rust-src`".into()
            } else if stderr.contains("fast-math") && self.fast_math {
                "the kernel crate has no `fast-math` feature: add `[features] fast-math = \
                 [\"ptxlab-device/fast-math\"]` to its Cargo.toml, or build without fast math"
                    .into()
            } else {
                format!(
                    "fix the kernel crate's compile errors above (they are for the \
                     nvptx64-nvidia-cuda target; toolchain {})",
                    toolchain.version
                )
            };
            return Err(err(
                format!(
                    "kernel build of {} for nvptx64-nvidia-cuda",
                    manifest.display()
                ),
                stderr.to_string(),
                hint,
            ));
        }
        let wanted = std::fs::canonicalize(&manifest).unwrap_or(manifest.clone());
        let mut built = Built {
            bitcode: bc.clone(),
            dep_rlibs: Vec::new(),
            sources: Vec::new(),
        };
        let mut found_kernel = false;
        let mut dep_infos = Vec::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            if v["reason"] != "compiler-artifact" {
                continue;
            }
            let is_kernel = v["manifest_path"]
                .as_str()
                .map(|p| std::fs::canonicalize(p).unwrap_or(PathBuf::from(p)) == wanted)
                .unwrap_or(false)
                && v["target"]["kind"]
                    .as_array()
                    .is_some_and(|k| k.iter().any(|x| x == "lib" || x == "rlib"));
            for f in v["filenames"].as_array().into_iter().flatten() {
                let Some(f) = f.as_str() else { continue };
                let path = PathBuf::from(f);
                if let Some(d) = dep_info_of(&path) {
                    dep_infos.push(d);
                }
                // Host artifacts (proc-macros and their deps) live outside the
                // target triple's directory; only device rlibs hold NVPTX bitcode.
                if f.ends_with(".rlib") && f.contains("nvptx64-nvidia-cuda") {
                    if is_kernel {
                        found_kernel = true;
                    } else {
                        built.dep_rlibs.push(path);
                    }
                }
            }
        }
        if !found_kernel {
            return Err(err(
                "kernel build",
                format!("cargo reported no library for {}", manifest.display()),
                "the kernel crate must be a library (src/lib.rs)",
            ));
        }
        if !bc.exists() {
            return Err(err(
                "kernel build",
                format!("{} was not written", bc.display()),
                "",
            ));
        }
        built.sources = sources_from_dep_info(&dep_infos, &toolchain.sysroot, &self.crate_dir);
        Ok(built)
    }
}

/// What the nested cargo build produced.
struct Built {
    bitcode: PathBuf,
    dep_rlibs: Vec<PathBuf>,
    sources: Vec<PathBuf>,
}

/// `target/ptx` of the kernel crate's workspace: the nearest ancestor of
/// `crate_dir` (itself included) whose `Cargo.toml` declares `[workspace]`,
/// else the crate's own folder.
fn default_target_dir(crate_dir: &Path) -> PathBuf {
    let mut dir = Some(crate_dir);
    while let Some(d) = dir {
        if std::fs::read_to_string(d.join("Cargo.toml"))
            .map(|t| t.lines().any(|l| l.trim() == "[workspace]"))
            .unwrap_or(false)
        {
            return d.join("target").join("ptx");
        }
        dir = d.parent();
    }
    crate_dir.join("target").join("ptx")
}

/// `deps/libfoo-HASH.rlib` (or `.so`, `.rmeta`) -> `deps/foo-HASH.d`.
fn dep_info_of(artifact: &Path) -> Option<PathBuf> {
    let name = artifact.file_stem()?.to_str()?;
    let stem = name.strip_prefix("lib").unwrap_or(name);
    let d = artifact.with_file_name(format!("{stem}.d"));
    d.exists().then_some(d)
}

/// Every source file named by the dep-info files, minus the toolchain's own
/// (`core`'s sources) and registry crates (which do not change). rustc
/// writes the paths of a workspace's crates relative to the workspace root
/// (`toolkit/device/src/lib.rs`): a relative path is taken from the first of
/// `crate_dir` and its ancestors under which the file exists, so the kernel
/// crate's path dependencies (the device crate, the macros) are listed too,
/// and a change to them rebuilds the kernels.
fn sources_from_dep_info(dep_infos: &[PathBuf], sysroot: &Path, crate_dir: &Path) -> Vec<PathBuf> {
    let cargo_home = std::env::var_os("CARGO_HOME").map(PathBuf::from);
    let crate_dir = std::fs::canonicalize(crate_dir).unwrap_or_else(|_| crate_dir.to_path_buf());
    let mut out: Vec<PathBuf> = Vec::new();
    for d in dep_infos {
        let Ok(text) = std::fs::read_to_string(d) else {
            continue;
        };
        for line in text.lines() {
            let Some((target, deps)) = line.split_once(": ") else {
                continue;
            };
            if !target.ends_with(".d") && !target.ends_with(".rlib") && !target.ends_with(".rmeta")
            {
                continue;
            }
            for p in deps.split_whitespace().map(PathBuf::from) {
                let p = if p.is_absolute() {
                    p
                } else {
                    match crate_dir
                        .ancestors()
                        .map(|a| a.join(&p))
                        .find(|c| c.is_file())
                    {
                        Some(found) => found,
                        None => continue,
                    }
                };
                let foreign = p.starts_with(sysroot)
                    || cargo_home.as_ref().is_some_and(|h| p.starts_with(h))
                    || p.components().any(|c| c.as_os_str() == ".cargo");
                if !foreign && !out.contains(&p) {
                    out.push(p);
                }
            }
        }
    }
    out.sort();
    out
}

/// The functions a module declares but does not define (`declare ... @f(`),
/// sorted: what a further `llvm-link --only-needed` pass could resolve.
fn declarations(ir: &str) -> Vec<String> {
    let mut v: Vec<String> = ir
        .lines()
        .filter(|l| l.starts_with("declare "))
        .filter_map(|l| {
            let at = l.find('@')?;
            let name = &l[at + 1..];
            Some(name[..name.find('(').unwrap_or(name.len())].to_string())
        })
        .collect();
    v.sort();
    v
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

/// The entry-to-group map written beside a build's PTX (`kernels.groups.json`).
fn groups_path(ptx_path: &Path) -> PathBuf {
    ptx_path.with_extension("groups.json")
}

/// Which `ptxas` assembles, asked once per build. A cubin is reused only if
/// the same `ptxas` made it: two versions can give the same PTX different
/// machine code (and different speed).
struct PtxasStamp {
    /// Its path and whole `--version` output, kept beside each cubin.
    key: String,
    /// The last line of `--version`, the one that names the build.
    build: String,
}

impl PtxasStamp {
    fn of(ptxas: &Path) -> Self {
        let version = std::process::Command::new(ptxas)
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        let build = version.lines().last().unwrap_or("").trim().to_string();
        Self {
            key: format!("{}\n{version}\n", ptxas.display()),
            build,
        }
    }
}

/// What [`assemble_cached`] gives for one cubin.
type Report = Result<Vec<ResourceUsage>, BuildError>;

/// One cubin to assemble: a part's PTX (capped or not) for one arch.
struct CubinJob {
    /// Index of the part in [`BuildOutput::parts`].
    part: usize,
    /// The register cap written into `ptx`, if any.
    cap: Option<u32>,
    arch: String,
    ptx: PathBuf,
    cubin: PathBuf,
}

/// Writes `text` to `path` unless it already holds it (a cubin is reused
/// only while it is newer than its PTX).
fn write_if_changed(path: &Path, text: &str) -> Result<(), BuildError> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(());
    }
    std::fs::write(path, text)
        .map_err(|e| err(format!("write {}", path.display()), e.to_string(), ""))
}

/// [`assemble_cached`] for every job, on as many threads as the machine has
/// cores (ptxas runs single-threaded); the reports come back in job order.
fn assemble_all(ptxas: &Path, stamp: &str, jobs: &[CubinJob]) -> Vec<Report> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(jobs.len().max(1));
    let next = AtomicUsize::new(0);
    let reports: Mutex<Vec<Option<Report>>> = Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(j) = jobs.get(i) else { break };
                    let r = assemble_cached(ptxas, stamp, &j.ptx, &j.arch, &j.cubin);
                    if let Ok(mut v) = reports.lock() {
                        v[i] = Some(r);
                    }
                }
            });
        }
    });
    reports
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|| {
                Err(err(
                    "ptxas",
                    "an assembling thread stopped before its cubin",
                    "",
                ))
            })
        })
        .collect()
}

/// [`assemble`], skipped when the cubin is newer than its PTX, was made by
/// the same `ptxas` (`stamp`, kept next to it as `.cubin.ptxas`) and has
/// its resource report.
fn assemble_cached(
    ptxas: &Path,
    stamp: &str,
    ptx: &Path,
    arch: &str,
    cubin: &Path,
) -> Result<Vec<ResourceUsage>, BuildError> {
    let report = cubin.with_extension("cubin.json");
    let made_by = cubin.with_extension("cubin.ptxas");
    let fresh = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if let (Some(c), Some(p)) = (fresh(cubin), fresh(ptx))
        && c >= p
        && std::fs::read_to_string(&made_by).ok().as_deref() == Some(stamp)
        && let Some(r) = std::fs::read_to_string(&report)
            .ok()
            .and_then(|t| serde_json::from_str::<Vec<ResourceUsage>>(&t).ok())
    {
        return Ok(r);
    }
    let r = assemble(ptxas, ptx, arch, cubin)?;
    let _ = std::fs::write(&report, serde_json::to_string(&r).unwrap_or_default());
    let _ = std::fs::write(&made_by, stamp);
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cubin made by another `ptxas` (another path or version) is made
    /// again; with the same one it is reused.
    #[cfg(unix)]
    #[test]
    fn cubin_cache_is_keyed_on_the_ptxas_that_made_it() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("ptxlab-ptxas-cache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A stand-in ptxas: counts its runs and writes the -o file.
        let fake = dir.join("ptxas");
        let count = dir.join("runs");
        std::fs::write(
            &fake,
            format!(
                "#!/bin/sh\nfor a; do o=$a; done\necho x >> {}\necho cubin > \"$o\"\n",
                count.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let ptx = dir.join("k.ptx");
        std::fs::write(&ptx, ".version 8.0\n").unwrap();
        let cubin = dir.join("k.sm_90.cubin");
        let runs = || std::fs::read_to_string(&count).map_or(0, |t| t.lines().count());
        assemble_cached(&fake, "ptxas A\n", &ptx, "sm_90", &cubin).unwrap();
        assert_eq!(runs(), 1);
        assemble_cached(&fake, "ptxas A\n", &ptx, "sm_90", &cubin).unwrap();
        assert_eq!(runs(), 1, "same ptxas: the cubin is reused");
        assemble_cached(&fake, "ptxas B\n", &ptx, "sm_90", &cubin).unwrap();
        assert_eq!(runs(), 2, "another ptxas: the cubin is made again");
        assemble_cached(&fake, "ptxas B\n", &ptx, "sm_90", &cubin).unwrap();
        assert_eq!(runs(), 2);
        let _ = std::fs::remove_dir_all(&dir);
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

    /// rustc names a workspace's own sources relative to the workspace root
    /// (`toolkit/device/src/lib.rs`); they must come back absolute, or cargo would
    /// not rebuild the kernels when the device crate changes.
    #[test]
    fn relative_dep_info_paths_resolve_against_the_workspace() {
        let ws = std::env::temp_dir().join(format!("ptxlab-depinfo-{}", std::process::id()));
        let krate = ws.join("kernels");
        std::fs::create_dir_all(krate.join("src")).unwrap();
        std::fs::create_dir_all(ws.join("device/src")).unwrap();
        std::fs::write(krate.join("src/lib.rs"), "").unwrap();
        std::fs::write(ws.join("device/src/lib.rs"), "").unwrap();
        let d = ws.join("dev.d");
        std::fs::write(
            &d,
            format!(
                "{}: device/src/lib.rs kernels/src/lib.rs /sysroot/core/src/lib.rs gone/x.rs\n",
                d.display()
            ),
        )
        .unwrap();
        let got = sources_from_dep_info(&[d], Path::new("/sysroot"), &krate);
        let ws = std::fs::canonicalize(&ws).unwrap();
        assert_eq!(
            got,
            vec![ws.join("device/src/lib.rs"), ws.join("kernels/src/lib.rs")]
        );
        let _ = std::fs::remove_dir_all(&ws);
    }

    #[test]
    fn a_missing_kernel_crate_is_named() {
        let b = Builder::new("/nonexistent/kernels", std::env::temp_dir());
        let e = b.build().unwrap_err().to_string();
        assert!(
            e.contains("/nonexistent/kernels/Cargo.toml") && e.contains("does not exist"),
            "{e}"
        );
    }

    #[test]
    fn the_target_dir_is_beside_the_workspace() {
        // This crate is `toolkit/builder`; the lab's kernel crate is `lab`.
        let ws = Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .nth(2)
            .unwrap();
        assert_eq!(default_target_dir(&ws.join("lab")), ws.join("target/ptx"));
    }
}
