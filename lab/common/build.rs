//! Builds the lab's kernel crate (`kernels-gpu`, `lab/Cargo.toml`) to PTX with ptxlab-builder
//! (a precise and a fast-math module for sm_80 and newer, and an sm_90a
//! module with the Hopper kernels) and embeds it: `src/modules.rs` includes
//! the result. When `ptxas` is found every module also ships as cubins
//! (sm_80 and sm_90 for the portable modules, sm_90a for the Hopper one),
//! with the resource report, and the Lomb-Scargle group of the precise
//! module as cubins capped at each register cap of its ladder: no module
//! the lab launches by default waits for the driver's JIT on an A100, H100
//! or H200. `PTXLAB_ARCH`, `PTXLAB_CUBIN_ARCHS` and `PTXLAB_PTXAS` override
//! the defaults (see `ptxlab_builder::Embed`).
use std::path::PathBuf;

/// The register caps of the Lomb-Scargle ladder's `regcapN` rungs
/// (`Rung::LADDER` in `lab/lomb/host/ladder.rs`), each assembled ahead
/// of time; `tests/cubins.rs` fails when a cap of the ladder is missing
/// here. Other caps (`--variant regcap40`) load the PTX through the JIT.
const LOMB_REG_CAPS: &[u32] = &[32];

fn main() {
    let mut embed = ptxlab_builder::Embed::new("..")
        .fast_math()
        .arch_specific("sm_90a", "sm90a");
    for &cap in LOMB_REG_CAPS {
        embed = embed.reg_capped("lomb", cap);
    }
    let embedded = embed.run();
    // Provenance for reports: which ptxas made the cubins (two versions can
    // give the same PTX different speed), the compiler and the commit.
    let ptxas = embedded
        .modules
        .iter()
        .find_map(|(_, o)| o.ptxas_version.clone())
        .unwrap_or_else(|| "none (the driver compiles the PTX)".into());
    println!("cargo:rustc-env=PTXLAB_PTXAS_VERSION={ptxas}");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    // The workspace root: this crate is `lab/ptxlab`.
    let ws = manifest.ancestors().nth(2).unwrap().to_path_buf();
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
