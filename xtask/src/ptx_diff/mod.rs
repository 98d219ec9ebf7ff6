//! `ptx-diff [--base REV]`: is the PTX of every kernel the same as at `REV`?
//!
//! Builds the lab's kernel crate to PTX twice, in the precise and the
//! fast-math module each: once from this working tree (uncommitted changes
//! included) with this tree's builder, once from `REV` with `REV`'s own
//! `cargo xtask build-ptx`, in a temporary `git worktree` of `REV` under
//! `target/ptx-diff/` (its cargo target directory, kept between runs so the
//! next comparison is incremental, is `target/ptx-diff/base-target`; the
//! worktree itself is removed afterwards). `REV` builds with its own
//! `rust-toolchain.toml`; both compilers are printed.
//!
//! The modules are then compared item by item after normalising what is not
//! code ([`normalize`]: comments, blank lines, layout, symbol hashes, label
//! indices; register and block numbers too with `--ignore-numbering`). Each kernel is printed
//! as identical, differs (with its first differing lines), added or removed;
//! functions and variables only when not identical. The exit code is 1 when
//! an item present on both sides differs, 0 otherwise (added and removed
//! kernels are listed, not failures), and 2 when something could not be
//! built or read.
//!
//! `--files OLD NEW` compares two PTX files (any project's) without building.
//!
//! `--rename OLD=NEW` (repeatable) compares the base's kernel `OLD` with this
//! tree's `NEW`, for a change that renames entries (a twin pair merged into
//! one generic kernel whose instances are named differently); the name is
//! replaced in the base kernel's text (its `.entry` line and parameter
//! names) before the comparison.

pub mod normalize;

use crate::{opt, root};
use anyhow::{Context, Result, bail};
use normalize::{Options, compare, parse, render};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The modules compared: (label, `build-ptx` flags).
const MODULES: &[(&str, &[&str])] = &[("precise", &[]), ("fast-math", &["--fast"])];

/// Runs the command; `Ok(true)` when nothing present on both sides differs.
pub(crate) fn ptx_diff(args: &[String]) -> Result<bool> {
    let mut opts = Options {
        numbering: args.iter().any(|a| a == "--ignore-numbering"),
        renames: Vec::new(),
    };
    for a in args {
        if a.starts_with("--")
            && ![
                "--base",
                "--arch",
                "--files",
                "--ignore-numbering",
                "--rename",
            ]
            .contains(&a.as_str())
        {
            bail!(
                "unknown option `{a}`; usage: cargo xtask ptx-diff [--base REV] [--arch sm_XX] \
                 [--ignore-numbering] [--rename OLD=NEW ...] | --files OLD.ptx NEW.ptx \
                 [--ignore-numbering] [--rename OLD=NEW ...]"
            );
        }
    }
    for (i, a) in args.iter().enumerate() {
        if a == "--rename" {
            let Some((old, new)) = args.get(i + 1).and_then(|v| v.split_once('=')) else {
                bail!("--rename takes OLD=NEW (a kernel name of the base, and of this tree)");
            };
            opts.renames.push((old.to_string(), new.to_string()));
        }
    }
    if let Some(i) = args.iter().position(|a| a == "--files") {
        let (Some(old), Some(new)) = (args.get(i + 1), args.get(i + 2)) else {
            bail!("--files needs two PTX files: --files OLD.ptx NEW.ptx");
        };
        return compare_files(
            &[(
                format!("{old} -> {new}"),
                PathBuf::from(old),
                PathBuf::from(new),
            )],
            opts,
        );
    }
    let rev = opt(args, "--base").unwrap_or_else(|| "HEAD".into());
    let arch = opt(args, "--arch");
    let base_dir = root().join("target/ptx-diff");
    let sha = git(
        &root(),
        &["rev-parse", "--verify", &format!("{rev}^{{commit}}")],
    )
    .with_context(|| format!("`{rev}` is not a commit of this repository"))?;
    let short = &sha[..sha.len().min(10)];

    // This tree, with this tree's builder.
    let mut pairs = Vec::new();
    let mut current = Vec::new();
    for (label, flags) in MODULES {
        let out = base_dir.join("current").join(label);
        let mut b = crate::ptx::builder(&flags_with_arch(flags, &arch, &out))?;
        b.cubin_archs.clear();
        eprintln!("ptx-diff: building this tree's {label} module ...");
        let built = b.build().map_err(|e| anyhow::anyhow!("{e}"))?;
        current.push(built.ptx_path);
    }

    // REV, with REV's own xtask, in a temporary worktree.
    let wt = Worktree::add(&base_dir, &sha)?;
    let mut base = Vec::new();
    for (label, flags) in MODULES {
        let out = base_dir.join("base-out").join(label);
        let _ = std::fs::remove_dir_all(&out);
        eprintln!(
            "ptx-diff: building the {label} module of {rev} ({short}) with its own xtask ..."
        );
        let mut cmd = Command::new("cargo");
        cmd.current_dir(&wt.dir)
            .args(["xtask", "build-ptx", "--cubin", "none"])
            .args(flags_with_arch(flags, &arch, &out))
            // REV's own toolchain file and target directory decide.
            .env_remove("RUSTUP_TOOLCHAIN")
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("CARGO")
            .env_remove("RUSTC")
            .stdout(Stdio::null());
        let st = cmd.status().with_context(|| format!("running {cmd:?}"))?;
        if !st.success() {
            bail!(
                "building the PTX of {rev} failed ({st}); its worktree was {}",
                wt.dir.display()
            );
        }
        base.push(single_ptx(&out)?);
    }
    let rustc_here = rustc_version(&root());
    let rustc_base = rustc_version(&wt.dir);
    drop(wt);
    println!("ptx-diff: base {rev} ({short}), {rustc_base}");
    println!("ptx-diff: current working tree, {rustc_here}");
    if opts.numbering {
        println!(
            "ptx-diff: registers and block labels renumbered by first use (--ignore-numbering)"
        );
    }
    for ((label, _), (b, c)) in MODULES.iter().zip(base.into_iter().zip(current)) {
        pairs.push((label.to_string(), b, c));
    }
    compare_files(&pairs, opts)
}

/// `flags` plus `--arch` and `--out`.
fn flags_with_arch(flags: &[&str], arch: &Option<String>, out: &Path) -> Vec<String> {
    let mut v: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
    if let Some(a) = arch {
        v.extend(["--arch".into(), a.clone()]);
    }
    v.extend(["--out".into(), out.display().to_string()]);
    v
}

/// Compares each (label, base, current) pair and prints the report.
fn compare_files(pairs: &[(String, PathBuf, PathBuf)], mut opts: Options) -> Result<bool> {
    let mut same = true;
    for (label, b, c) in pairs {
        let read = |p: &Path| {
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))
        };
        let renames = std::mem::take(&mut opts.renames);
        let mut base = parse(&read(b)?, &opts);
        normalize::rename(&mut base, &renames);
        opts.renames = renames;
        let outcomes = compare(&base, &parse(&read(c)?, &opts));
        let (text, differs) = render(label, &outcomes);
        print!("{text}");
        same &= !differs;
    }
    println!(
        "ptx-diff: {}",
        if same {
            "every item present on both sides is identical"
        } else {
            "some items present on both sides differ"
        }
    );
    Ok(same)
}

/// The one whole-module `.ptx` file in `dir` (`kernels.ptx`; not the
/// per-group parts `kernels.<group>.ptx` a newer builder writes beside it).
fn single_ptx(dir: &Path) -> Result<PathBuf> {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
        .filter(|p| {
            p.file_stem()
                .is_some_and(|s| !s.to_string_lossy().contains('.'))
        })
        .collect();
    match files.as_slice() {
        [one] => Ok(one.clone()),
        _ => bail!(
            "expected one .ptx file in {}, found {}",
            dir.display(),
            files.len()
        ),
    }
}

fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let o = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .context("running git")?;
    if !o.status.success() {
        bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

fn rustc_version(dir: &Path) -> String {
    Command::new("rustc")
        .current_dir(dir)
        .arg("-V")
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTC")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "rustc: unknown".into())
}

/// A detached worktree of a commit at `target/ptx-diff/base-src`, whose
/// `target` is a link to `target/ptx-diff/base-target`; removed on drop.
struct Worktree {
    dir: PathBuf,
}

impl Worktree {
    fn add(base_dir: &Path, sha: &str) -> Result<Self> {
        let dir = base_dir.join("base-src");
        Self::remove(&dir);
        std::fs::create_dir_all(base_dir)?;
        git(
            &root(),
            &[
                "worktree",
                "add",
                "--detach",
                &dir.display().to_string(),
                sha,
            ],
        )?;
        let wt = Self { dir };
        let target = base_dir.join("base-target");
        std::fs::create_dir_all(&target)?;
        #[cfg(unix)]
        std::os::unix::fs::symlink(&target, wt.dir.join("target"))
            .context("linking the worktree's target directory")?;
        Ok(wt)
    }

    fn remove(dir: &Path) {
        // The link first, so nothing follows it into the kept target dir.
        let _ = std::fs::remove_file(dir.join("target"));
        if dir.exists() {
            let _ = git(
                &root(),
                &["worktree", "remove", "--force", &dir.display().to_string()],
            );
            let _ = std::fs::remove_dir_all(dir);
        }
        let _ = git(&root(), &["worktree", "prune"]);
    }
}

impl Drop for Worktree {
    fn drop(&mut self) {
        Self::remove(&self.dir);
    }
}
