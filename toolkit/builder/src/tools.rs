//! The tools a build needs, found and checked up front so a missing one is
//! named with the command that installs it: a nightly `rustc` with the
//! `rust-src` and `llvm-tools` components, and (optionally) `ptxas`.

use crate::error::{BuildError, err};
use std::path::{Path, PathBuf};
use std::process::Command;

/// How to get the pinned toolchain, for hints.
const INSTALL_HINT: &str = "put a rust-toolchain.toml beside the kernel crate (ptxlab's own: \
     channel = \"nightly-2026-05-20\", components = [\"rust-src\", \"llvm-tools\"]) and run \
     `rustup toolchain install` in that folder";

/// The active Rust toolchain, checked for what a kernel build needs.
#[derive(Debug, Clone)]
pub struct Toolchain {
    /// `rustc -V`.
    pub version: String,
    /// `rustc --print sysroot`.
    pub sysroot: PathBuf,
    /// Host triple (`x86_64-unknown-linux-gnu`).
    pub host: String,
}

impl Toolchain {
    /// Finds `rustc` (`$RUSTC` or `rustc`) and checks that it is a nightly
    /// with the `rust-src` component: the kernel build uses unstable
    /// features (`abi_gpu_kernel`, `-Zbuild-std=core`) and builds `core`
    /// for `nvptx64-nvidia-cuda` from source.
    pub fn detect() -> Result<Self, BuildError> {
        let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
        let out = |args: &[&str]| -> Result<String, BuildError> {
            let o = Command::new(&rustc)
                .args(args)
                .output()
                .map_err(|e| err("run rustc", e.to_string(), INSTALL_HINT))?;
            if !o.status.success() {
                return Err(err(
                    format!("rustc {}", args.join(" ")),
                    String::from_utf8_lossy(&o.stderr).to_string(),
                    INSTALL_HINT,
                ));
            }
            Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        let version = out(&["-V"])?;
        let sysroot = PathBuf::from(out(&["--print", "sysroot"])?);
        let host = out(&["-vV"])?
            .lines()
            .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
            .unwrap_or_else(|| "x86_64-unknown-linux-gnu".into());
        if !version.contains("nightly") && !version.contains("-dev") {
            return Err(err(
                "toolchain check",
                format!("`{version}` is not a nightly toolchain"),
                format!(
                    "GPU kernels need nightly Rust (extern \"gpu-kernel\", -Zbuild-std=core): {INSTALL_HINT}"
                ),
            ));
        }
        let core_src = sysroot.join("lib/rustlib/src/rust/library/core/Cargo.toml");
        if !core_src.exists() {
            return Err(err(
                "toolchain check",
                format!(
                    "the rust-src component is missing ({} does not exist)",
                    core_src.display()
                ),
                "install it: `rustup component add rust-src` (or `rustup toolchain install` in a \
                 folder whose rust-toolchain.toml lists it); -Zbuild-std=core needs core's source",
            ));
        }
        Ok(Self {
            version,
            sysroot,
            host,
        })
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
        Self::in_toolchain(&Toolchain::detect()?)
    }

    /// Finds the tools in `tc`'s sysroot.
    pub fn in_toolchain(tc: &Toolchain) -> Result<Self, BuildError> {
        let bin = tc.sysroot.join("lib/rustlib").join(&tc.host).join("bin");
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
                    "install the llvm-tools component: `rustup component add llvm-tools` (or \
                     `rustup toolchain install` in a folder whose rust-toolchain.toml lists it)",
                ));
            }
        }
        Ok(tools)
    }
}

/// Runs a tool; its stderr on success, an error with it on failure.
pub(crate) fn run(cmd: &mut Command, step: &str) -> Result<String, BuildError> {
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

/// Finds `ptxas`: `PTXLAB_PTXAS`, `PTXAS`, `$CUDA_HOME/bin`, `PATH`, then the
/// unpacked PyPI wheel under `target/nvcc` of the ptxlab checkout this
/// builder comes from, then `/usr/local/cuda/bin`. The error says how to get one.
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
