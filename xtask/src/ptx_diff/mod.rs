//! `ptx-diff [--base REV]`: is the PTX of every kernel the same as at `REV`?
//!
//! Builds the modules of the lab's kernel crate to PTX twice (by default
//! every module the lab embeds: sm_80 precise and fast-math, and the sm_90a
//! module of Hopper kernels; `--arch` picks targets, a portable one giving
//! its precise and fast-math modules): once from this working tree
//! (uncommitted changes included) with this tree's builder, once from `REV`
//! with `REV`'s own
//! `cargo xtask build-ptx`, in a temporary `git worktree` of `REV` under
//! `target/ptx-diff/` (its cargo target directory, kept between runs so the
//! next comparison is incremental, is `target/ptx-diff/base-target`; the
//! worktree itself is removed afterwards). `REV` builds with its own
//! `rust-toolchain.toml`; both compilers are printed. A `REV` whose xtask
//! cannot build an arch-specific module (its `build-ptx --help` offers no
//! `sm_90a`) has that module left out of the comparison, with a note.
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

use crate::cli::PtxDiffArgs;
use crate::ptx::kernel_crate;
use crate::target::{Arch, Cubins, Module};
use crate::util::root;
use anyhow::{Context, Result, bail};
use normalize::{Options, compare, parse, render};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Runs the command; `Ok(true)` when nothing present on both sides differs.
pub(crate) fn ptx_diff(a: &PtxDiffArgs) -> Result<bool> {
    let opts = Options {
        numbering: a.ignore_numbering,
        renames: a.rename.clone(),
    };
    if let Some([old, new]) = a.files.as_deref() {
        return compare_files(
            &[(
                format!("{} -> {}", old.display(), new.display()),
                old.clone(),
                new.clone(),
            )],
            opts,
        );
    }
    let rev = &a.base;
    let archs = if a.arch.is_empty() {
        Arch::LAB
    } else {
        &a.arch[..]
    };
    let modules = Module::for_archs(archs, true);
    let base_dir = root().join("target/ptx-diff");
    let sha = git(
        &root(),
        &["rev-parse", "--verify", &format!("{rev}^{{commit}}")],
    )
    .with_context(|| format!("`{rev}` is not a commit of this repository"))?;
    let short = &sha[..sha.len().min(10)];

    // This tree, with this tree's builder.
    let mut current = Vec::new();
    for m in &modules {
        let out = base_dir.join("current").join(m.dir_name());
        let b = m.builder(&kernel_crate(), &out, 3, Some(&Cubins(Vec::new())))?;
        eprintln!("ptx-diff: building this tree's {} module ...", m.label());
        let built = b.build().map_err(|e| anyhow::anyhow!("{e}"))?;
        current.push(built.ptx_path);
    }

    // REV, with REV's own xtask, in a temporary worktree.
    let wt = Worktree::add(&base_dir, &sha)?;
    let mut base = Vec::new();
    for m in &modules {
        if m.arch.is_arch_specific() && !wt.builds_arch(m.arch)? {
            eprintln!(
                "ptx-diff: {rev}'s xtask cannot build {} modules (its build-ptx does not offer \
                 --arch {}); the {} module is not compared",
                m.arch,
                m.arch,
                m.label()
            );
            base.push(None);
            continue;
        }
        let out = base_dir.join("base-out").join(m.dir_name());
        let _ = std::fs::remove_dir_all(&out);
        eprintln!(
            "ptx-diff: building the {} module of {rev} ({short}) with its own xtask ...",
            m.label()
        );
        let mut cmd = wt.xtask();
        cmd.args(["build-ptx", "--cubin", "none", "--arch", m.arch.name()])
            .args(m.fast.then_some("--fast"))
            .arg("--out")
            .arg(&out)
            .stdout(Stdio::null());
        let st = cmd.status().with_context(|| format!("running {cmd:?}"))?;
        if !st.success() {
            bail!(
                "building the {} PTX of {rev} failed ({st}); its worktree was {}",
                m.label(),
                wt.dir.display()
            );
        }
        base.push(Some(single_ptx(&out)?));
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
    let mut pairs = Vec::new();
    for ((m, b), c) in modules.iter().zip(base).zip(current) {
        if let Some(b) = b {
            pairs.push((m.label(), b, c));
        }
    }
    compare_files(&pairs, opts)
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

    /// `cargo xtask` of the worktree: its own toolchain file and target
    /// directory decide.
    fn xtask(&self) -> Command {
        let mut cmd = Command::new("cargo");
        cmd.current_dir(&self.dir)
            .arg("xtask")
            .env_remove("RUSTUP_TOOLCHAIN")
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("CARGO")
            .env_remove("RUSTC");
        cmd
    }

    /// Does the worktree's `build-ptx` offer `--arch <arch>`? (An xtask
    /// older than arch-specific builds lists no `sm_90a` in its help.)
    fn builds_arch(&self, arch: Arch) -> Result<bool> {
        let o = self
            .xtask()
            .args(["build-ptx", "--help"])
            .stderr(Stdio::inherit())
            .output()
            .context("running the base's `cargo xtask build-ptx --help`")?;
        Ok(String::from_utf8_lossy(&o.stdout).contains(arch.name()))
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
