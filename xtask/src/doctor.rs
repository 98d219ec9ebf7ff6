//! `doctor`: each thing the project needs, OK or what to do.

use crate::util::{cargo, root};
use anyhow::Result;
use ptxlab_builder::find_ptxas;
use std::path::PathBuf;
use std::process::Command;

pub(crate) fn doctor() -> Result<()> {
    let mut problems = 0;
    let mut line = |ok: bool, what: &str, detail: String| {
        println!("{} {what}: {detail}", if ok { "OK  " } else { "FIX " });
        if !ok {
            problems += 1;
        }
    };
    let rustc = Command::new("rustc").arg("-V").current_dir(root()).output();
    match rustc {
        Ok(o) if o.status.success() => line(
            true,
            "toolchain",
            String::from_utf8_lossy(&o.stdout).trim().to_string(),
        ),
        _ => line(
            false,
            "toolchain",
            "rustc not runnable: run `rustup toolchain install` in the repo root".into(),
        ),
    }
    let sysroot = Command::new("rustc")
        .args(["--print", "sysroot"])
        .current_dir(root())
        .output()
        .ok()
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let src_ok = sysroot.as_ref().is_some_and(|s| {
        s.join("lib/rustlib/src/rust/library/core/Cargo.toml")
            .exists()
    });
    line(
        src_ok,
        "rust-src component",
        if src_ok {
            "present (needed by -Zbuild-std=core)".into()
        } else {
            "missing: `rustup toolchain install` (rust-toolchain.toml lists it)".into()
        },
    );
    match ptxlab_builder::LlvmTools::find() {
        Ok(t) => line(
            true,
            "llvm-tools component",
            format!(
                "llvm-link, opt, llc in {}",
                t.llc
                    .parent()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            ),
        ),
        Err(e) => line(false, "llvm-tools component", e.hint),
    }
    match find_ptxas() {
        Ok(p) => {
            let v = Command::new(&p)
                .arg("--version")
                .output()
                .ok()
                .map(|o| {
                    String::from_utf8_lossy(&o.stdout)
                        .lines()
                        .last()
                        .unwrap_or("")
                        .to_string()
                })
                .unwrap_or_default();
            line(true, "ptxas", format!("{} ({v})", p.display()))
        }
        Err(e) => line(false, "ptxas (optional: cubins and resource report)", e),
    }
    let st = cargo()
        .args(["build", "--quiet", "--release", "-p", "ptxlab"])
        .status();
    if !st.map(|s| s.success()).unwrap_or(false) {
        line(
            false,
            "kernel build",
            "`cargo build --release -p ptxlab` failed: see the messages above".into(),
        );
    } else {
        line(
            true,
            "kernel build",
            "PTX built and embedded in ptxlab".into(),
        );
        let o = Command::new(root().join("target/release/ptxlab"))
            .arg("info")
            .output()?;
        let text = String::from_utf8_lossy(&o.stdout);
        let gpu = text.lines().next().unwrap_or("").to_string();
        if gpu.starts_with("GPU: none") {
            line(
                false,
                "driver / GPU (optional: only the GPU rows need it)",
                format!(
                    "{gpu}; without a driver, build-and-bench runs the CPU baselines and the simulator and marks GPU rows skipped"
                ),
            );
        } else {
            line(true, "driver / GPU", gpu);
        }
    }
    for pkg in ["cupy", "torch", "numba"] {
        let ok = Command::new("python3")
            .args(["-c", &format!("import {pkg}")])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        line(
            ok,
            &format!("python peer {pkg} (optional)"),
            if ok {
                "importable".into()
            } else {
                format!("not importable: `--peers` will mark {pkg} rows skipped")
            },
        );
    }
    println!("\n{problems} item(s) to look at");
    Ok(())
}
