//! `bundle` and `sanitize`: what a GPU machine without Rust needs (binaries,
//! PTX, peers, run scripts), and the compute-sanitizer run over it.

use crate::cli::{BundleArgs, SanitizerTool};
use crate::ptx::build_module;
use crate::target::Module;
use crate::util::{cargo, root, run};
use anyhow::{Result, bail};
use clap::ValueEnum;
use std::path::Path;
use std::process::Command;

/// Packs what a GPU machine without Rust needs: `ptxlab`, the test binaries,
/// the PTX and cubins of every module the lab embeds, the peers and
/// `run.sh`. With `--scaffold`: a project made by `new-kernel-crate` instead
/// (see [`crate::scaffold::bundle_scaffold`]).
pub(crate) fn bundle(args: &BundleArgs) -> Result<()> {
    let out = args.out.clone().unwrap_or_else(|| root().join("bundle"));
    if args.scaffold {
        return crate::scaffold::bundle_scaffold(&out);
    }
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(out.join("tests"))?;
    for m in Module::LAB {
        build_module(*m, &out.join("ptx"), 3, None)?;
    }
    run(cargo().args(["build", "--quiet", "--release", "-p", "ptxlab"]))?;
    std::fs::copy(root().join("target/release/ptxlab"), out.join("ptxlab"))?;
    let mut test_cmd = cargo();
    test_cmd.args(["test", "--release", "--no-run", "--message-format=json"]);
    if args.tests.is_empty() {
        test_cmd.args(["--workspace", "--tests"]);
    } else {
        for t in &args.tests {
            test_cmd.args(["--test", t]);
        }
    }
    let o = test_cmd.output()?;
    if !o.status.success() {
        bail!(
            "building the test binaries failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let mut names = Vec::new();
    for l in String::from_utf8_lossy(&o.stdout).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(l) else {
            continue;
        };
        if v["reason"] != "compiler-artifact" || !v["profile"]["test"].as_bool().unwrap_or(false) {
            continue;
        }
        if let Some(exe) = v["executable"].as_str() {
            let name = v["target"]["name"].as_str().unwrap_or("t").to_string();
            let pkg = v["package_id"]
                .as_str()
                .unwrap_or("")
                .rsplit('#')
                .next()
                .unwrap_or("")
                .split('@')
                .next()
                .unwrap_or("")
                .to_string();
            let file = format!("{}-{}", pkg.rsplit('/').next().unwrap_or(&pkg), name);
            std::fs::copy(exe, out.join("tests").join(&file))?;
            names.push(file);
        }
    }
    // The Criterion benches (`bench_main`): run `benches/bench_main --bench` there.
    let mut benches = 0;
    if !args.no_benches {
        let o = cargo()
            .args([
                "bench",
                "--no-run",
                "--message-format=json",
                "--bench",
                "bench_main",
            ])
            .output()?;
        if !o.status.success() {
            bail!(
                "building the bench binary failed:\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::fs::create_dir_all(out.join("benches"))?;
        for l in String::from_utf8_lossy(&o.stdout).lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(l) else {
                continue;
            };
            if v["reason"] != "compiler-artifact" || v["target"]["name"] != "bench_main" {
                continue;
            }
            if let Some(exe) = v["executable"].as_str() {
                std::fs::copy(exe, out.join("benches/bench_main"))?;
                benches += 1;
            }
        }
    }
    // Debug info is most of a test binary's size; the device tool carries at
    // most 64 MiB, so strip what `strip` (binutils) can, when it is there.
    let mut bins = vec![out.join("ptxlab")];
    bins.extend(names.iter().map(|f| out.join("tests").join(f)));
    if benches > 0 {
        bins.push(out.join("benches/bench_main"));
    }
    match Command::new("strip").args(&bins).status() {
        Ok(s) if s.success() => {}
        _ => eprintln!("note: `strip` unavailable or failed; the bundle keeps debug info"),
    }
    copy_dir(&root().join("peers"), &out.join("peers"))?;
    copy_dir(
        &root().join("tests/fixtures/lomb"),
        &out.join("peers/fixtures/lomb"),
    )?;
    let script = r#"#!/usr/bin/env bash
# Runs the bundled GPU suite: every test binary (unless SKIP_TESTS=1), then
# `ptxlab bench` with the arguments given (e.g. --peers, --only poisson),
# stopped after BENCH_TIMEOUT seconds when set (the logs still come back).
# Results go to ${OUT:-./out}/results.tgz (logs, report.md, JSON, CSV, plots).
# PTXLAB_REQUIRE_GPU=1: on the GPU machine a GPU test that finds no driver or
# no device fails instead of printing "skipped" and passing.
set -u
cd "$(dirname "$0")"
export PTXLAB_REQUIRE_GPU=1
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
FINAL=$OUT
OUT=$(mktemp -d)
fail=0
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  for t in tests/*; do
    echo "=== $t"
    "$t" --test-threads=1 > "$OUT/test-$(basename "$t").log" 2>&1
    rc=$?
    grep -E "test result|FAILED|panicked" "$OUT/test-$(basename "$t").log" | tail -n 8
    [ $rc -eq 0 ] || fail=1
  done
fi
timeout "${BENCH_TIMEOUT:-0}" ./ptxlab bench --peers-dir peers --out "$OUT/bench" "$@" > "$OUT/bench.log"
rc=$?
cat "$OUT/bench.log"
[ $rc -eq 0 ] || fail=1
tar czf "$FINAL/results.tgz" -C "$OUT" .
exit $fail
"#;
    std::fs::write(out.join("run.sh"), script)?;
    std::fs::write(out.join("sanitize.sh"), SANITIZE_SH)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(out.join("run.sh"), std::fs::Permissions::from_mode(0o755))?;
        std::fs::set_permissions(
            out.join("sanitize.sh"),
            std::fs::Permissions::from_mode(0o755),
        )?;
    }
    println!(
        "bundle in {} ({} test binaries{}); run it with ./run.sh",
        out.display(),
        names.len(),
        if benches > 0 {
            ", benches/bench_main: the Criterion benches, run with --bench"
        } else {
            ""
        }
    );
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n == "__pycache__") {
                continue;
            }
            copy_dir(&p, &to.join(e.file_name()))?;
        } else {
            std::fs::copy(&p, to.join(e.file_name()))?;
        }
    }
    Ok(())
}

/// Runs every bundled test binary under `compute-sanitizer` with
/// `--error-exitcode`, small problem sizes (`PTXLAB_TEST_SCALE=small`), and
/// fails on any finding.
const SANITIZE_SH: &str = r#"#!/usr/bin/env bash
# usage: sanitize.sh [memcheck|racecheck|synccheck|initcheck ...] [-- test-name-filter]
set -u
cd "$(dirname "$0")"
FINAL=${OUT:-$PWD/out}
mkdir -p "$FINAL"
OUT=$(mktemp -d)
trap 'tar czf "$FINAL/sanitize.tgz" -C "$OUT" .' EXIT
tools=(); filter=""
while [ $# -gt 0 ]; do
  case "$1" in --) shift; filter="${1:-}"; break;; *) tools+=("$1");; esac; shift
done
[ ${#tools[@]} -eq 0 ] && tools=(memcheck racecheck synccheck)
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
if [ -z "$CS" ]; then echo "compute-sanitizer not found (it ships with the CUDA toolkit)"; exit 2; fi
export PTXLAB_TEST_SCALE=small
# A GPU test that finds no GPU fails instead of skipping (nothing to sanitize).
export PTXLAB_REQUIRE_GPU=1
fail=0
for tool in "${tools[@]}"; do
  for t in tests/*; do
    case "$t" in *"$filter"*) ;; *) continue;; esac
    # A binary without GPU tests launches no kernel: nothing to check.
    if ! "$t" --list gpu 2>/dev/null | grep -q ': test'; then
      echo "$tool $(basename "$t"): no gpu tests, skipped"; continue
    fi
    log="$OUT/sanitize-$tool-$(basename "$t").log"
    timeout 240 "$CS" --tool "$tool" --error-exitcode 99 --target-processes all "$t" --test-threads=1 gpu > "$log" 2>&1
    rc=$?
    summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result" "$log" | tr '\n' ' ')
    echo "$tool $(basename "$t"): rc=$rc $summary"
    [ $rc -eq 0 ] || fail=1
  done
done
# The check must be able to fail: a planted out-of-bounds write must be caught.
t=$(ls tests/*vector_add* | head -1)
PTXLAB_PLANTED=1 timeout 120 "$CS" --tool memcheck --error-exitcode 99 "$t" --test-threads=1 gpu_planted > "$OUT/sanitize-planted.log" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q "Invalid __global__ write" "$OUT/sanitize-planted.log"; then
  echo "planted out-of-bounds write: caught by memcheck (rc=$rc)"
else
  echo "planted out-of-bounds write: NOT caught (rc=$rc)"; fail=1
fi
exit $fail
"#;

/// `cargo xtask sanitize`: bundles the tests and runs `sanitize.sh` here.
pub(crate) fn sanitize(args: &crate::cli::SanitizeArgs) -> Result<()> {
    let have = Command::new("compute-sanitizer")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !have {
        bail!(
            "compute-sanitizer not found: it ships with the CUDA toolkit and needs a GPU; \
             run `cargo xtask bundle`, copy bundle/ to the GPU machine and run `./sanitize.sh memcheck racecheck synccheck` there"
        );
    }
    bundle(&BundleArgs {
        out: None,
        tests: Vec::new(),
        no_benches: true,
        scaffold: false,
    })?;
    let mut cmd = Command::new(root().join("bundle/sanitize.sh"));
    if let Some(t) = args.tool.and_then(|t: SanitizerTool| t.to_possible_value()) {
        cmd.arg(t.get_name());
    }
    if let Some(f) = &args.filter {
        cmd.arg("--").arg(f);
    }
    run(&mut cmd)
}
