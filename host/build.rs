//! Builds the lab's kernel crate (`kernels-gpu`) to PTX with ptxlab-builder
//! (a precise and a fast-math module for sm_80 and newer, and an sm_90a
//! module with the Hopper kernels; cubins and the resource report when
//! `ptxas` is found) and embeds it: `src/modules.rs` includes the result.
//! `PTXLAB_ARCH`, `PTXLAB_CUBIN_ARCHS` and `PTXLAB_PTXAS` override the
//! defaults (see `ptxlab_builder::Embed`).
use std::path::PathBuf;

fn main() {
    let embedded = ptxlab_builder::Embed::new("../kernels-gpu")
        .fast_math()
        .arch_specific("sm_90a", "sm90a")
        .run();
    // Provenance for reports: which ptxas made the cubins (two versions can
    // give the same PTX different speed), the compiler and the commit.
    let ptxas = embedded
        .modules
        .iter()
        .find_map(|(_, o)| o.ptxas_version.clone())
        .unwrap_or_else(|| "none (the driver compiles the PTX)".into());
    println!("cargo:rustc-env=PTXLAB_PTXAS_VERSION={ptxas}");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let ws = manifest.parent().unwrap().to_path_buf();
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
    // HEAD names the branch; a commit moves the branch's ref, not HEAD, so
    // both are watched (and packed-refs, where a ref may live instead).
    let git = ws.join(".git");
    println!("cargo:rerun-if-changed={}", git.join("HEAD").display());
    if let Ok(head) = std::fs::read_to_string(git.join("HEAD"))
        && let Some(r) = head.trim().strip_prefix("ref: ")
    {
        println!("cargo:rerun-if-changed={}", git.join(r).display());
        println!(
            "cargo:rerun-if-changed={}",
            git.join("packed-refs").display()
        );
    }
}
