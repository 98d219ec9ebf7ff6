//! Builds the kernel crate to PTX (precise and fast-math modules) with
//! `ptxlab-builder`, plus sm_90 cubins and a resource report when `ptxas` is
//! available, and writes `modules.rs` that embeds them in the host.
//!
//! Environment: `PTXLAB_ARCH` (PTX target, default sm_80), `PTXLAB_CUBIN_ARCHS`
//! (comma-separated, default sm_90 when ptxas exists; `none` to skip),
//! `PTXLAB_PTXAS` (path to ptxas).
use ptxlab_builder::{Builder, find_ptxas};
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let ws = manifest.parent().unwrap().to_path_buf();
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    for dir in [
        "kernels-gpu/src",
        "device/src",
        "macros/src",
        "kernels-gpu/Cargo.toml",
        "device/Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", ws.join(dir).display());
    }
    for var in ["PTXLAB_ARCH", "PTXLAB_CUBIN_ARCHS", "PTXLAB_PTXAS"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let arch = std::env::var("PTXLAB_ARCH").unwrap_or_else(|_| ptxlab_builder::DEFAULT_ARCH.into());
    let cubin_archs: Vec<String> = match std::env::var("PTXLAB_CUBIN_ARCHS") {
        Ok(v) if v == "none" => vec![],
        Ok(v) => v
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
        Err(_) if find_ptxas().is_ok() => vec!["sm_90".into()],
        Err(_) => vec![],
    };
    let mut consts = String::new();
    for (stem, fast) in [("kernels", false), ("kernels_fast", true)] {
        let mut b = Builder::new(&ws, &out);
        b.arch = arch.clone();
        b.fast_math = fast;
        b.stem = stem.into();
        b.cubin_archs = cubin_archs.clone();
        let built = match b.build() {
            Ok(o) => o,
            Err(e) => panic!("\n\nptxlab: building the GPU kernels failed\n{e}\n"),
        };
        if let Some(note) = &built.ptxas_note {
            println!("cargo:warning={note}");
        }
        let upper = stem.to_uppercase();
        consts.push_str(&format!(
            "/// PTX of the `{stem}` module (arch {arch}).\npub const {upper}_PTX: &str = include_str!({:?});\n",
            built.ptx_path.display().to_string()
        ));
        consts.push_str(&format!("/// Cubins of the `{stem}` module, by arch.\npub const {upper}_CUBINS: &[(&str, &[u8])] = &["));
        for (a, p) in &built.cubins {
            consts.push_str(&format!(
                "({a:?}, include_bytes!({:?})),",
                p.display().to_string()
            ));
        }
        consts.push_str("];\n");
        let report = serde_json::to_string(&built.resources).unwrap();
        consts.push_str(&format!(
            "/// ptxas resource report of the `{stem}` module (JSON; empty without ptxas).\npub const {upper}_RESOURCES_JSON: &str = {report:?};\n"
        ));
    }
    consts.push_str(&format!(
        "/// Arch the embedded PTX targets.\npub const PTX_ARCH: &str = {arch:?};\n"
    ));
    std::fs::write(out.join("modules.rs"), consts).unwrap();
    // Provenance for reports.
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    if let Ok(o) = std::process::Command::new(rustc).arg("-V").output() {
        println!(
            "cargo:rustc-env=PTXLAB_RUSTC_VERSION={}",
            String::from_utf8_lossy(&o.stdout).trim()
        );
    }
    if let Ok(o) = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(&ws)
        .output()
        && o.status.success()
    {
        println!(
            "cargo:rustc-env=PTXLAB_GIT_SHA={}",
            String::from_utf8_lossy(&o.stdout).trim()
        );
    }
    println!("cargo:rerun-if-changed={}", ws.join(".git/HEAD").display());
}
