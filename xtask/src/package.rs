//! `package-check`: the publishable crates as `cargo package` makes them.
//!
//! The four crates depend on each other and none is on crates.io yet, so
//! they are packaged in one `cargo package` call: cargo resolves each one's
//! dependencies on the others through a local registry of the `.crate` files
//! it has just made, then builds every package from its `.crate` alone (what
//! crates.io would serve), so a file missing from `include` fails here.

use crate::cli::PackageCheckArgs;
use crate::util::{cargo, root, run};
use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use std::time::Instant;

/// The published crates, each after those it depends on.
pub(crate) const CRATES: &[&str] = &[
    "ptxlab-macros",
    "ptxlab-device",
    "ptxlab-builder",
    "ptxlab-runtime",
];

/// A `.crate` above this size holds something it should not (test data,
/// tools, generated files): the sources of the largest are a few hundred KiB.
const MAX_CRATE_BYTES: u64 = 1 << 20;

/// The cargo target directory (`CARGO_TARGET_DIR`, else `target`).
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

/// Runs `cargo package` on [`CRATES`] and lists each `.crate` and its size.
pub(crate) fn package_check(a: &PackageCheckArgs) -> Result<()> {
    let start = Instant::now();
    let mut cmd = cargo();
    cmd.arg("package");
    for c in CRATES {
        cmd.args(["-p", c]);
    }
    if a.allow_dirty {
        cmd.arg("--allow-dirty");
    }
    if a.no_verify {
        cmd.arg("--no-verify");
    }
    run(&mut cmd)?;
    let version = env!("CARGO_PKG_VERSION");
    let dir = target_dir().join("package");
    let mut too_big = Vec::new();
    for c in CRATES {
        let path = dir.join(format!("{c}-{version}.crate"));
        let bytes = std::fs::metadata(&path)
            .with_context(|| format!("cargo package wrote no {}", path.display()))?
            .len();
        println!(
            "{c:<16} {:>8.1} KiB  {}",
            bytes as f64 / 1024.0,
            path.display()
        );
        if bytes > MAX_CRATE_BYTES {
            too_big.push(format!("{c} ({bytes} bytes)"));
        }
    }
    if !too_big.is_empty() {
        bail!(
            "{} exceed {} KiB: check the crate's `include` in its Cargo.toml \
             (`cargo package --list -p <crate>` lists what goes in)",
            too_big.join(", "),
            MAX_CRATE_BYTES / 1024
        );
    }
    println!(
        "package-check: {} crates packaged{} in {:.0} s",
        CRATES.len(),
        if a.no_verify {
            ""
        } else {
            " and built from their .crate files"
        },
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
