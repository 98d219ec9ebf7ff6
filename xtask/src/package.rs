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

/// The target directory of the packaging run: `package-check` under the
/// cargo target directory (`CARGO_TARGET_DIR`, else `target`).
///
/// Its own directory, because cargo builds the verified crates as registry
/// crates, and registry sources are never checked for changes: a build of the
/// same version from an earlier run would be taken as up to date. Keeping them
/// apart lets [`forget_stale_overlays`] drop those builds without touching the
/// workspace's.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
        .join("package-check")
}

/// Removes the sources cargo unpacked from earlier runs' local registries,
/// and what it built from them.
///
/// To verify crates that depend on each other, `cargo package` serves the new
/// `.crate` files from a local registry in the target directory and unpacks
/// them under `$CARGO_HOME/registry/src/<hash of that path>/`. It never
/// unpacks a version again once its folder exists, so after a source change
/// under an unchanged version number, a later run with the same target
/// directory would build the old sources. These crates are on no public
/// registry, so every unpacked `ptxlab-*` folder outside crates.io's is one of
/// those copies and is safe to delete.
fn forget_stale_overlays() -> Result<()> {
    for profile in ["debug", "release"] {
        let fingerprints = target_dir().join(profile).join(".fingerprint");
        let Ok(entries) = std::fs::read_dir(&fingerprints) else {
            continue;
        };
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with("ptxlab-") {
                std::fs::remove_dir_all(e.path())
                    .with_context(|| format!("removing {}", e.path().display()))?;
            }
        }
    }
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    let Some(src) = home.map(|h| h.join("registry").join("src")) else {
        return Ok(());
    };
    let Ok(registries) = std::fs::read_dir(&src) else {
        return Ok(());
    };
    for reg in registries.flatten() {
        if reg
            .file_name()
            .to_string_lossy()
            .starts_with("index.crates.io")
        {
            continue;
        }
        let Ok(unpacked) = std::fs::read_dir(reg.path()) else {
            continue;
        };
        for dir in unpacked.flatten() {
            let name = dir.file_name().to_string_lossy().into_owned();
            if CRATES.iter().any(|c| name.starts_with(&format!("{c}-"))) {
                std::fs::remove_dir_all(dir.path())
                    .with_context(|| format!("removing {}", dir.path().display()))?;
            }
        }
    }
    Ok(())
}

/// Runs `cargo package` on [`CRATES`] and lists each `.crate` and its size.
pub(crate) fn package_check(a: &PackageCheckArgs) -> Result<()> {
    let start = Instant::now();
    if !a.no_verify {
        forget_stale_overlays()?;
    }
    let mut cmd = cargo();
    cmd.env("CARGO_TARGET_DIR", target_dir());
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
