//! `new-kernel-crate <path>`: a standalone project (outside this workspace)
//! with its own `#![no_std]` kernel crate, a `build.rs` that builds it with
//! ptxlab-builder, and a host binary that launches its kernels with
//! ptxlab-runtime on a GPU or the simulator. It depends on the ptxlab crates
//! by path (this checkout), by git or by version ([`Dep`]). The files come
//! from `templates/kernel-crate/`.

use crate::cli::{DepKind, NewKernelCrateArgs};
use crate::util::root;
use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use std::path::{Path, PathBuf};

/// The repository the ptxlab crates are published from.
pub(crate) const REPOSITORY: &str = "https://github.com/ptxlab/ptxlab";

/// Where a new project takes the ptxlab crates from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Dep {
    /// A checkout: `{ path = "<checkout>/runtime" }`.
    Path(PathBuf),
    /// A git repository: `{ git = "<url>", rev = "<rev>" }`.
    Git {
        /// The repository.
        url: String,
        /// A commit (none: the default branch).
        rev: Option<String>,
    },
    /// crates.io: `"<version>"`.
    Version(String),
}

impl Dep {
    /// The TOML value of the dependency on the toolkit crate in folder
    /// `toolkit/<dir>` of the repository (`runtime`, `builder`, `device`).
    fn value(&self, dir: &str) -> String {
        match self {
            Dep::Path(p) => format!(
                "{{ path = \"{}/toolkit/{dir}\" }}",
                toml_escape(&p.display().to_string())
            ),
            Dep::Git { url, rev } => {
                let rev = rev
                    .as_deref()
                    .map(|r| format!(", rev = \"{}\"", toml_escape(r)))
                    .unwrap_or_default();
                format!("{{ git = \"{}\"{rev} }}", toml_escape(url))
            }
            Dep::Version(v) => format!("\"{}\"", toml_escape(v)),
        }
    }

    /// Where the crates come from, in words (for the README and Cargo.toml).
    fn how(&self) -> String {
        match self {
            Dep::Path(p) => format!("by path, from the ptxlab checkout at `{}`", p.display()),
            Dep::Git { url, rev: Some(r) } => format!("by git, from `{url}` at `{r}`"),
            Dep::Git { url, rev: None } => {
                format!("by git, from the default branch of `{url}`")
            }
            Dep::Version(v) => format!("from crates.io, version `{v}`"),
        }
    }
}

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
        "kernels/src/cluster.rs",
        include_str!("../../templates/kernel-crate/kernels/src/cluster.rs"),
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

/// Names a new project cannot take: Rust keywords (as `cargo new` refuses
/// them), the built-in crates, and the crates the project itself uses (its
/// host calls the kernel crate `kernels`).
const RESERVED: &[&str] = &[
    "as",
    "async",
    "await",
    "break",
    "const",
    "continue",
    "crate",
    "dyn",
    "else",
    "enum",
    "extern",
    "false",
    "fn",
    "for",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "match",
    "mod",
    "move",
    "mut",
    "pub",
    "ref",
    "return",
    "self",
    "static",
    "struct",
    "super",
    "trait",
    "true",
    "type",
    "unsafe",
    "use",
    "where",
    "while",
    "abstract",
    "become",
    "box",
    "do",
    "final",
    "gen",
    "macro",
    "override",
    "priv",
    "try",
    "typeof",
    "unsized",
    "virtual",
    "yield",
    "core",
    "std",
    "alloc",
    "proc_macro",
    "proc-macro",
    "test",
    "kernels",
    "ptxlab-runtime",
    "ptxlab_runtime",
    "ptxlab-builder",
    "ptxlab_builder",
    "ptxlab-device",
    "ptxlab_device",
    "ptxlab-macros",
    "ptxlab_macros",
];

/// A package name from a folder name: lowercase ASCII letters, digits, `-`
/// and `_`, starting with a letter, and not one of [`RESERVED`].
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
    if RESERVED.contains(&name.as_str()) {
        bail!(
            "`{name}` cannot name the project: it is a Rust keyword, a built-in crate or a crate \
             the project depends on; pass --name NAME with another name"
        );
    }
    Ok(name)
}

/// `s` as the inside of a TOML basic string.
fn toml_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Writes the project into `dir` (which must not exist or be empty), its
/// ptxlab crates from `dep`.
pub(crate) fn scaffold(dir: &Path, name: &str, dep: &Dep) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        bail!(
            "{} exists and is not a folder; give a new folder",
            dir.display()
        );
    }
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
    for (rel, text) in FILES {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let text = text
            .replace("{{name}}", name)
            .replace("{{dep:runtime}}", &dep.value("runtime"))
            .replace("{{dep:builder}}", &dep.value("builder"))
            .replace("{{dep:device}}", &dep.value("device"))
            .replace("{{dep_how}}", &dep.how())
            .replace("{{version}}", env!("CARGO_PKG_VERSION"));
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    // The same pinned nightly as this checkout: the kernels need it.
    std::fs::copy(
        root().join("rust-toolchain.toml"),
        dir.join("rust-toolchain.toml"),
    )
    .context("copying rust-toolchain.toml")?;
    Ok(())
}

/// `path`, `git` or `version`, as `--dep` spells it.
fn dep_name(kind: DepKind) -> String {
    kind.to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default()
}

/// The [`Dep`] that `--dep`, `--git-url` and `--rev` ask for.
fn dep_of(a: &NewKernelCrateArgs) -> Result<Dep> {
    if a.dep != DepKind::Git && (a.git_url.is_some() || a.rev.is_some()) {
        bail!(
            "--git-url and --rev go with --dep git, not --dep {}",
            dep_name(a.dep)
        );
    }
    Ok(match a.dep {
        DepKind::Path => {
            Dep::Path(std::fs::canonicalize(root()).context("locating this checkout")?)
        }
        DepKind::Git => Dep::Git {
            url: a.git_url.clone().unwrap_or_else(|| REPOSITORY.into()),
            rev: a.rev.clone(),
        },
        DepKind::Version => Dep::Version(env!("CARGO_PKG_VERSION").into()),
    })
}

/// `cargo xtask new-kernel-crate <path> [--name NAME] [--dep path|git|version]`.
pub(crate) fn new_kernel_crate(a: &NewKernelCrateArgs) -> Result<()> {
    let dir =
        std::path::absolute(&a.path).with_context(|| format!("resolving {}", a.path.display()))?;
    let raw = a.name.clone().unwrap_or_else(|| {
        dir.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    let name = package_name(&raw)?;
    let dep = dep_of(a)?;
    scaffold(&dir, &name, &dep)?;
    println!(
        "created {name} in {}, the ptxlab crates {}\n\n  cd {}\n  cargo run --release -- --backend sim   # the CPU simulator\n  cargo run --release -- --backend gpu   # an NVIDIA GPU\n\nIts README says how to add a kernel and how to take ptxlab from a checkout, git or crates.io.",
        dir.display(),
        dep.how(),
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
pub(crate) fn bundle_scaffold(out: &Path) -> Result<()> {
    let work = root().join("target/scaffold");
    let dir = work.join("own");
    let _ = std::fs::remove_dir_all(&dir);
    let ptxlab = std::fs::canonicalize(root()).context("locating this checkout")?;
    scaffold(&dir, "own", &Dep::Path(ptxlab))?;
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
    let _ = std::fs::remove_dir_all(out);
    std::fs::create_dir_all(out)?;
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
        for bad in [
            "fn",
            "Self",
            "test",
            "core",
            "kernels",
            "ptxlab-runtime",
            "ptxlab_device",
        ] {
            let e = package_name(bad).unwrap_err().to_string();
            assert!(e.contains("cannot name the project"), "{bad}: {e}");
        }
        assert_eq!(package_name("kernels2").unwrap(), "kernels2");
    }

    /// A fresh folder under the temporary directory.
    fn temp(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("ptxlab-scaffold-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    /// The project's two manifests and README, with no placeholder left.
    fn written(dir: &Path) -> (String, String, String) {
        let read = |p: &str| std::fs::read_to_string(dir.join(p)).unwrap();
        let files = (
            read("Cargo.toml"),
            read("kernels/Cargo.toml"),
            read("README.md"),
        );
        for text in [&files.0, &files.1, &files.2] {
            assert!(!text.contains("{{"), "a placeholder is left:\n{text}");
        }
        files
    }

    #[test]
    fn the_template_is_complete_and_refuses_a_full_folder() {
        let dir = temp("path");
        scaffold(&dir, "demo", &Dep::Path(root())).unwrap();
        let (cargo, kernels, readme) = written(&dir);
        assert!(cargo.contains("name = \"demo\""));
        let r = root().display().to_string();
        assert!(
            cargo.contains(&format!(
                "\nptxlab-runtime = {{ path = \"{r}/toolkit/runtime\" }}\n"
            )),
            "{cargo}"
        );
        assert!(
            cargo.contains(&format!(
                "\nptxlab-builder = {{ path = \"{r}/toolkit/builder\" }}\n"
            )),
            "{cargo}"
        );
        assert!(
            kernels.contains(&format!(
                "\nptxlab-device = {{ path = \"{r}/toolkit/device\" }}\n"
            )),
            "{kernels}"
        );
        assert!(readme.contains(&format!("by path, from the ptxlab checkout at `{r}`")));
        let main = std::fs::read_to_string(dir.join("src/main.rs")).unwrap();
        assert!(main.contains("kernels::saxpy") && !main.contains("{{"));
        // The cluster example: its kernel in the sm_90 module (the `sm90`
        // feature that build.rs builds), its test in src/main.rs.
        let lib = std::fs::read_to_string(dir.join("kernels/src/lib.rs")).unwrap();
        let cluster = std::fs::read_to_string(dir.join("kernels/src/cluster.rs")).unwrap();
        let build = std::fs::read_to_string(dir.join("build.rs")).unwrap();
        assert!(
            lib.contains("feature = \"sm90\"))]\npub mod cluster;"),
            "{lib}"
        );
        assert!(kernels.contains("\nsm90 = []\n"), "{kernels}");
        assert!(
            build.contains(".arch_specific(\"sm_90\", \"sm90\")"),
            "{build}"
        );
        assert!(cluster.contains("pub fn neighbour_sum(") && cluster.contains("in_block("));
        assert!(main.contains("kernels::cluster::neighbour_sum(") && main.contains("#[test]"));
        assert!(dir.join("rust-toolchain.toml").exists());
        let e = scaffold(&dir, "demo", &Dep::Path(root()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not empty"), "{e}");
        let file = dir.join("Cargo.toml");
        let e = scaffold(&file, "demo", &Dep::Path(root()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a folder"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn git_mode_writes_git_dependencies() {
        let dir = temp("git");
        let dep = Dep::Git {
            url: REPOSITORY.into(),
            rev: Some("0123abc".into()),
        };
        scaffold(&dir, "demo", &dep).unwrap();
        let (cargo, kernels, readme) = written(&dir);
        let line = |krate: &str| {
            format!(
                "\nptxlab-{krate} = {{ git = \"https://github.com/ptxlab/ptxlab\", rev = \"0123abc\" }}\n"
            )
        };
        assert!(cargo.contains(&line("runtime")), "{cargo}");
        assert!(cargo.contains(&line("builder")), "{cargo}");
        assert!(kernels.contains(&line("device")), "{kernels}");
        assert!(!cargo.contains("path = \"/") && !kernels.contains("path = \"/"));
        assert!(readme.contains("by git, from `https://github.com/ptxlab/ptxlab` at `0123abc`"));
        let _ = std::fs::remove_dir_all(&dir);

        let dir = temp("git-branch");
        let dep = Dep::Git {
            url: "https://example.org/fork.git".into(),
            rev: None,
        };
        scaffold(&dir, "demo", &dep).unwrap();
        let (cargo, _, _) = written(&dir);
        assert!(
            cargo.contains("\nptxlab-runtime = { git = \"https://example.org/fork.git\" }\n"),
            "{cargo}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn version_mode_writes_version_dependencies() {
        let dir = temp("version");
        scaffold(&dir, "demo", &Dep::Version("0.1.0".into())).unwrap();
        let (cargo, kernels, readme) = written(&dir);
        assert!(cargo.contains("\nptxlab-runtime = \"0.1.0\"\n"), "{cargo}");
        assert!(cargo.contains("\nptxlab-builder = \"0.1.0\"\n"), "{cargo}");
        assert!(
            kernels.contains("\nptxlab-device = \"0.1.0\"\n"),
            "{kernels}"
        );
        assert!(readme.contains("from crates.io, version `0.1.0`"));
        assert!(!cargo.contains("path = \"/") && !kernels.contains("path = \"/"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn git_options_need_git_mode() {
        use clap::Parser;
        let parse = |args: &[&str]| {
            let cli = crate::cli::Cli::try_parse_from(args).unwrap();
            match cli.cmd {
                crate::cli::Cmd::NewKernelCrate(a) => dep_of(&a),
                other => panic!("parsed as {other:?}"),
            }
        };
        let e = parse(&["xtask", "new-kernel-crate", "/tmp/x", "--rev", "abc"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--dep git"), "{e}");
        assert_eq!(
            parse(&[
                "xtask",
                "new-kernel-crate",
                "/tmp/x",
                "--dep",
                "git",
                "--rev",
                "abc"
            ])
            .unwrap(),
            Dep::Git {
                url: REPOSITORY.into(),
                rev: Some("abc".into())
            }
        );
        assert_eq!(
            parse(&["xtask", "new-kernel-crate", "/tmp/x", "--dep", "version"]).unwrap(),
            Dep::Version(env!("CARGO_PKG_VERSION").into())
        );
        assert!(matches!(
            parse(&["xtask", "new-kernel-crate", "/tmp/x"]).unwrap(),
            Dep::Path(_)
        ));
    }
}
