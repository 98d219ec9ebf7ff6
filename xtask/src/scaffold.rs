//! `new-kernel-crate <path>`: a standalone project (outside this workspace)
//! with its own `#![no_std]` kernel crate, a `build.rs` that builds it with
//! ptxlab-builder, and a host binary that launches its kernels with
//! ptxlab-runtime on a GPU or the simulator. It depends on this checkout by
//! path. The files come from `templates/kernel-crate/`.

use crate::{opt, root};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

/// The template: (path in the new project, contents).
const FILES: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        include_str!("../../templates/kernel-crate/Cargo.toml.tmpl"),
    ),
    (
        "build.rs",
        include_str!("../../templates/kernel-crate/build.rs"),
    ),
    (
        "src/main.rs",
        include_str!("../../templates/kernel-crate/src/main.rs"),
    ),
    (
        "kernels/Cargo.toml",
        include_str!("../../templates/kernel-crate/kernels/Cargo.toml.tmpl"),
    ),
    (
        "kernels/src/lib.rs",
        include_str!("../../templates/kernel-crate/kernels/src/lib.rs"),
    ),
    (
        "README.md",
        include_str!("../../templates/kernel-crate/README.md.tmpl"),
    ),
    (
        ".gitignore",
        include_str!("../../templates/kernel-crate/.gitignore"),
    ),
];

/// A package name from a folder name: lowercase ASCII letters, digits, `-`
/// and `_`, starting with a letter.
fn package_name(raw: &str) -> Result<String> {
    let name: String = raw
        .chars()
        .map(|c| match c {
            'A'..='Z' => c.to_ascii_lowercase(),
            'a'..='z' | '0'..='9' | '-' | '_' => c,
            _ => '-',
        })
        .collect();
    let name = name.trim_matches('-').to_string();
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        bail!(
            "`{raw}` does not make a package name (it must start with a letter); pass --name NAME"
        );
    }
    Ok(name)
}

/// `s` as the inside of a TOML basic string.
fn toml_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Writes the project into `dir` (which must not exist or be empty).
pub(crate) fn scaffold(dir: &Path, name: &str, ptxlab: &Path) -> Result<()> {
    if dir.exists()
        && std::fs::read_dir(dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .next()
            .is_some()
    {
        bail!(
            "{} exists and is not empty; give a new folder",
            dir.display()
        );
    }
    let ptxlab_path = toml_escape(&ptxlab.display().to_string());
    for (rel, text) in FILES {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let text = text
            .replace("{{name}}", name)
            .replace("{{ptxlab}}", &ptxlab_path);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    // The same pinned nightly as this checkout: the kernels need it.
    std::fs::copy(
        ptxlab.join("rust-toolchain.toml"),
        dir.join("rust-toolchain.toml"),
    )
    .context("copying rust-toolchain.toml")?;
    Ok(())
}

/// `cargo xtask new-kernel-crate <path> [--name NAME]`.
pub(crate) fn new_kernel_crate(args: &[String]) -> Result<()> {
    let Some(path) = args.first().filter(|a| !a.starts_with("--")) else {
        bail!("usage: cargo xtask new-kernel-crate <path> [--name NAME]");
    };
    let dir =
        std::path::absolute(PathBuf::from(path)).with_context(|| format!("resolving {path}"))?;
    let raw = opt(args, "--name").unwrap_or_else(|| {
        dir.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    let name = package_name(&raw)?;
    let ptxlab = std::fs::canonicalize(root()).context("locating this checkout")?;
    scaffold(&dir, &name, &ptxlab)?;
    println!(
        "created {name} in {}\n\n  cd {}\n  cargo run --release -- --backend sim   # the CPU simulator\n  cargo run --release -- --backend gpu   # an NVIDIA GPU\n\nIts README says how to add a kernel and how to depend on ptxlab by git instead of by path.",
        dir.display(),
        dir.display()
    );
    Ok(())
}

/// `bundle --scaffold [--out DIR]`: a project made by `new-kernel-crate`
/// (in `target/scaffold/own`, rewritten each time; built in release with its
/// own target directory `target/scaffold/target`, kept between runs), packed
/// for a GPU machine without Rust: its binary, the PTX and cubins its
/// `build.rs` embedded, the resource report, and `run.sh`, which runs it on
/// the GPU and shows each entry's directives and, with the CUDA tools there,
/// the registers `ptxas` gave each kernel.
pub(crate) fn bundle_scaffold(args: &[String]) -> Result<()> {
    let out = opt(args, "--out")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("bundle"));
    let work = root().join("target/scaffold");
    let dir = work.join("own");
    let _ = std::fs::remove_dir_all(&dir);
    let ptxlab = std::fs::canonicalize(root()).context("locating this checkout")?;
    scaffold(&dir, "own", &ptxlab)?;
    eprintln!(
        "bundle --scaffold: building {} (release) ...",
        dir.display()
    );
    let o = std::process::Command::new("cargo")
        .current_dir(&dir)
        .args(["build", "--release", "--message-format=json"])
        // The project's own rust-toolchain.toml decides, as for a user.
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO")
        .env_remove("RUSTC")
        .env("CARGO_TARGET_DIR", work.join("target"))
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("running cargo build in the scaffolded project")?;
    if !o.status.success() {
        bail!(
            "building the scaffolded project in {} failed",
            dir.display()
        );
    }
    let (mut exe, mut out_dir) = (None, None);
    for l in String::from_utf8_lossy(&o.stdout).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(l) else {
            continue;
        };
        // `path+file:///.../own#0.1.0`, or `...#own@0.1.0` where the folder
        // is named otherwise.
        let own = v["package_id"].as_str().is_some_and(|p| {
            p.contains("#own@")
                || (p.split('#').next().is_some_and(|u| u.ends_with("/own")) && !p.contains('@'))
        });
        if !own {
            continue;
        }
        if v["reason"] == "build-script-executed" {
            out_dir = v["out_dir"].as_str().map(PathBuf::from);
        }
        if v["reason"] == "compiler-artifact"
            && let Some(e) = v["executable"].as_str()
        {
            exe = Some(PathBuf::from(e));
        }
    }
    let (Some(exe), Some(out_dir)) = (exe, out_dir) else {
        bail!("cargo did not report the binary and the build script's output of `own`");
    };
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out)?;
    std::fs::copy(&exe, out.join("own"))?;
    let mut kept = vec!["own".to_string()];
    for e in std::fs::read_dir(&out_dir)? {
        let p = e?.path();
        let name = p
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if name.ends_with(".ptx") || name.ends_with(".cubin") || name.ends_with(".report.json") {
            std::fs::copy(&p, out.join(&name))?;
            kept.push(name);
        }
    }
    let _ = std::process::Command::new("strip")
        .arg(out.join("own"))
        .status();
    std::fs::write(out.join("run.sh"), SCAFFOLD_RUN_SH)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(out.join("run.sh"), std::fs::Permissions::from_mode(0o755))?;
    }
    kept.sort();
    println!(
        "bundle in {}: {}, run.sh; on the GPU machine: ./run.sh",
        out.display(),
        kept.join(", ")
    );
    Ok(())
}

/// `run.sh` of a scaffold bundle.
const SCAFFOLD_RUN_SH: &str = r#"#!/usr/bin/env bash
# The scaffolded project on a GPU: its PASS lines and timings, each entry's
# directives in the embedded PTX, and the registers of each kernel (ptxas of
# the PTX, and cuobjdump of the embedded cubin, where the CUDA tools exist).
set -u
cd "$(dirname "$0")"
fail=0
./own --backend gpu || fail=1
for k in saxpy stencil; do
  echo "=== PTX entry $k, parameters and directives"
  sed -n "/\.entry $k(/,/^{/p" kernels.ptx
done
if command -v ptxas > /dev/null; then
  echo "=== ptxas -arch=sm_90 -v kernels.ptx (this machine's ptxas: $(ptxas --version | tail -1))"
  ptxas -arch=sm_90 -v kernels.ptx -o /dev/null 2>&1 | grep -E "Compiling entry|registers"
fi
for c in *.cubin; do
  [ -e "$c" ] || continue
  if command -v cuobjdump > /dev/null; then
    echo "=== cuobjdump -res-usage $c (the cubin the binary embeds)"
    cuobjdump -res-usage "$c" 2>&1 | grep -E "Function|REG"
  fi
done
exit $fail
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitised_or_refused() {
        assert_eq!(package_name("My Kernels").unwrap(), "my-kernels");
        assert_eq!(package_name("saxpy_lab").unwrap(), "saxpy_lab");
        assert!(package_name("1abc").is_err());
        assert!(package_name("").is_err());
    }

    #[test]
    fn the_template_is_complete_and_refuses_a_full_folder() {
        let dir = std::env::temp_dir().join(format!("ptxlab-scaffold-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        scaffold(&dir, "demo", &root()).unwrap();
        let cargo = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        assert!(cargo.contains("name = \"demo\"") && !cargo.contains("{{"));
        assert!(cargo.contains(&format!("path = \"{}/runtime\"", root().display())));
        let main = std::fs::read_to_string(dir.join("src/main.rs")).unwrap();
        assert!(main.contains("kernels::saxpy") && !main.contains("{{"));
        assert!(dir.join("rust-toolchain.toml").exists());
        let e = scaffold(&dir, "demo", &root()).unwrap_err().to_string();
        assert!(e.contains("not empty"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
