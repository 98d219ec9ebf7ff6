//! `cargo xtask <command>`: the project's build, inspection and benchmark jobs.
//!
//! | command | what it does |
//! |---|---|
//! | `build-and-bench` | build the kernels and `ptxlab`, check every workload, time every variant, write the report |
//! | `build-ptx` | build the kernels to PTX (and cubins + resource report with `ptxas`) |
//! | `inspect <kernel>` | a kernel's PTX, its resource report and, where `cuobjdump`/`nvdisasm` exist, its SASS |
//! | `doctor` | toolchain, components, `ptxas`, driver, GPU, Python peers: each OK or what to do |
//! | `test` | the test suite (`cargo test --workspace`) |
//! | `bundle` | test and bench binaries, PTX, cubins, peers and a run script in one folder, for a GPU machine without Rust |

use anyhow::{Context, Result, bail};
use ptxlab_builder::{Builder, find_ptxas, report_table};
use std::path::{Path, PathBuf};
use std::process::Command;

const COMMANDS: &[(&str, &str)] = &[
    (
        "build-and-bench",
        "[--quick] [--only <workload>]... [--backend gpu|sim|cpu] [--peers] [--out DIR] [--update-docs [RESULTS_DIR]]",
    ),
    (
        "build-ptx",
        "[--arch sm_XX] [--opt-level 0-3] [--fast] [--cubin sm_XX[,sm_YY]|none] [--out DIR]",
    ),
    ("inspect", "<kernel> [--arch sm_XX] [--fast]"),
    ("doctor", ""),
    ("test", "[extra cargo test args]"),
    ("bundle", "[--out DIR] [--tests name,name] [--no-benches]"),
    (
        "sanitize",
        "[--tool memcheck|racecheck|synccheck|initcheck] [<test-name-filter>]",
    ),
];

fn usage() -> String {
    let mut s = String::from("usage: cargo xtask <command> [options]\n\ncommands:\n");
    for (c, a) in COMMANDS {
        s.push_str(&format!("  {c} {a}\n"));
    }
    s
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    c.current_dir(root());
    c
}

fn run(cmd: &mut Command) -> Result<()> {
    let st = cmd.status().with_context(|| format!("running {cmd:?}"))?;
    if !st.success() {
        bail!("{cmd:?} failed with {st}");
    }
    Ok(())
}

/// `--flag value` from an argument list.
fn opt(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1).cloned())
}

/// Let a closed stdout (`cargo xtask inspect k | head`) end the process
/// quietly, as it does for C tools, instead of `println!` panicking with
/// "failed printing to stdout: Broken pipe". Rust's runtime ignores SIGPIPE;
/// this puts the default action back.
fn default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in `main`, before any other thread exists;
    // setting SIGPIPE's disposition to SIG_DFL installs no Rust handler, so
    // there is no handler code whose async-signal safety matters.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() {
    default_sigpipe();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else {
        eprint!("{}", usage());
        std::process::exit(2);
    };
    let rest = &args[1..];
    let r = match cmd.as_str() {
        "build-and-bench" => build_and_bench(rest),
        "build-ptx" => build_ptx(rest).map(|_| ()),
        "inspect" => inspect(rest),
        "doctor" => doctor(),
        "test" => run(cargo().args(["test", "--workspace"]).args(rest)),
        "bundle" => bundle(rest),
        "sanitize" => sanitize(rest),
        "-h" | "--help" | "help" => {
            print!("{}", usage());
            Ok(())
        }
        other => {
            eprintln!("unknown command `{other}`\n\n{}", usage());
            std::process::exit(2);
        }
    };
    if let Err(e) = r {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn builder(args: &[String]) -> Result<Builder> {
    let out = opt(args, "--out")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/ptx-out"));
    let mut b = Builder::new(root(), out);
    if let Some(a) = opt(args, "--arch") {
        Builder::validate_arch(&a).map_err(|e| anyhow::anyhow!("{e}"))?;
        b.arch = a;
    }
    if let Some(o) = opt(args, "--opt-level") {
        b.opt_level = match o.parse::<u8>() {
            Ok(v) if v <= 3 => v,
            _ => bail!("--opt-level `{o}`: allowed 0, 1, 2, 3"),
        };
    }
    b.fast_math = args.iter().any(|a| a == "--fast");
    if b.fast_math {
        b.stem = "kernels_fast".into();
    }
    let cubins = opt(args, "--cubin").unwrap_or_else(|| {
        if b.arch.starts_with("sm_9") {
            b.arch.clone()
        } else {
            format!("{},sm_90", b.arch)
        }
    });
    b.cubin_archs = cubins
        .split(',')
        .filter(|s| !s.is_empty() && *s != "none")
        .map(str::to_string)
        .collect();
    Ok(b)
}

fn build_ptx(args: &[String]) -> Result<ptxlab_builder::BuildOutput> {
    let b = builder(args)?;
    eprintln!(
        "building kernels for {} (fast math: {}) ...",
        b.arch, b.fast_math
    );
    let out = b.build().map_err(|e| anyhow::anyhow!("{e}"))?;
    println!(
        "PTX: {} ({} kernels)",
        out.ptx_path.display(),
        out.kernels.len()
    );
    for k in &out.kernels {
        let mut d = Vec::new();
        if k.max_threads > 0 {
            d.push(format!(".maxntid {}", k.max_threads));
        }
        if k.min_blocks > 0 {
            d.push(format!(".minnctapersm {}", k.min_blocks));
        }
        if k.max_registers > 0 {
            d.push(format!(".maxnreg {}", k.max_registers));
        }
        println!("  {:<32} {}", k.name, d.join(" "));
    }
    for (a, p) in &out.cubins {
        println!("cubin {a}: {}", p.display());
    }
    match &out.ptxas_note {
        Some(n) => println!("resource report: {n}"),
        None if !out.resources.is_empty() => print!("{}", report_table(&out.resources)),
        None => {}
    }
    Ok(out)
}

fn inspect(args: &[String]) -> Result<()> {
    let Some(kernel) = args.first().filter(|a| !a.starts_with("--")) else {
        bail!("usage: cargo xtask inspect <kernel> [--arch sm_XX] [--fast]");
    };
    let mut b = builder(&args[1..])?;
    if b.cubin_archs.is_empty() {
        b.cubin_archs = vec!["sm_90".into()];
    }
    let out = b.build().map_err(|e| anyhow::anyhow!("{e}"))?;
    let ptx = std::fs::read_to_string(&out.ptx_path)?;
    let Some(start) = ptx.find(&format!(".entry {kernel}(")) else {
        let names: Vec<_> = out.kernels.iter().map(|k| k.name.as_str()).collect();
        bail!(
            "no kernel `{kernel}`; the kernels are: {}",
            names.join(", ")
        );
    };
    let body = &ptx[start..];
    let end = body.find("\n}\n").map(|e| e + 2).unwrap_or(body.len());
    println!("// ===== PTX ({}) =====\n.visible {}", b.arch, &body[..end]);
    let rows: Vec<_> = out
        .resources
        .iter()
        .filter(|r| r.kernel == *kernel)
        .cloned()
        .collect();
    if rows.is_empty() {
        println!(
            "\n// resource report: {}",
            out.ptxas_note.as_deref().unwrap_or("none")
        );
    } else {
        println!(
            "\n// ===== resource report (ptxas) =====\n{}",
            report_table(&rows)
        );
    }
    for (arch, cubin) in &out.cubins {
        let tools = [
            (
                "cuobjdump",
                vec![
                    "-sass".to_string(),
                    "-fun".into(),
                    kernel.clone(),
                    cubin.display().to_string(),
                ],
            ),
            (
                "nvdisasm",
                vec![
                    "-fun".to_string(),
                    kernel.clone(),
                    cubin.display().to_string(),
                ],
            ),
        ];
        let mut shown = false;
        for (tool, targs) in tools {
            if let Ok(o) = Command::new(tool).args(&targs).output()
                && o.status.success()
            {
                println!(
                    "// ===== SASS ({arch}, {tool}) =====\n{}",
                    String::from_utf8_lossy(&o.stdout)
                );
                shown = true;
                break;
            }
        }
        if !shown {
            println!(
                "// SASS: neither cuobjdump nor nvdisasm is on PATH (they come with the CUDA toolkit); cubin at {}",
                cubin.display()
            );
        }
    }
    Ok(())
}

fn doctor() -> Result<()> {
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

fn build_and_bench(args: &[String]) -> Result<()> {
    if let Some(i) = args.iter().position(|a| a == "--update-docs") {
        let dir = args
            .get(i + 1)
            .filter(|a| !a.starts_with("--"))
            .map(PathBuf::from)
            .unwrap_or_else(|| root().join("docs/results/latest"));
        return update_docs(&dir);
    }
    eprintln!("[1/3] building kernels (PTX, cubins, resource report) ...");
    build_ptx(&[])?;
    eprintln!("[2/3] building ptxlab (release) ...");
    run(cargo().args(["build", "--quiet", "--release", "-p", "ptxlab"]))?;
    eprintln!("[3/3] checking and timing every workload ...");
    run(Command::new(root().join("target/release/ptxlab"))
        .current_dir(root())
        .arg("bench")
        .args(args))
}

/// Regenerates the results tables of `docs/workloads/*.md` between
/// `<!-- results:start -->` and `<!-- results:end -->` from a recorded run.
fn update_docs(dir: &Path) -> Result<()> {
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("results.json"))
            .with_context(|| format!("reading {}/results.json", dir.display()))?,
    )?;
    let rows = json["rows"].as_array().cloned().unwrap_or_default();
    let env = &json["environment"];
    let docs = root().join("docs/workloads");
    let mut n = 0;
    for entry in std::fs::read_dir(&docs)? {
        let path = entry?.path();
        let text = std::fs::read_to_string(&path)?;
        let (Some(a), Some(b)) = (
            text.find("<!-- results:start -->"),
            text.find("<!-- results:end -->"),
        ) else {
            continue;
        };
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let mine: Vec<&serde_json::Value> = rows
            .iter()
            .filter(|r| {
                let w = r["workload"].as_str().unwrap_or("");
                w == stem
                    || (stem == "primitives"
                        && matches!(w, "reduce" | "histogram" | "monte-carlo-pi"))
                    || stem.starts_with(w)
                    || w.starts_with(stem)
            })
            .collect();
        // A partial run (`--only`) leaves the other workloads' tables alone.
        if mine.is_empty() {
            continue;
        }
        let mut table = format!(
            "\n\nRecorded on {} (driver {}), {}; `{}`.\n\n| workload | variant | backend | size | prec | regs | median ms | throughput | % of ceiling | status |\n|---|---|---|---|---|---|---|---|---|---|\n",
            env["gpu"].as_str().unwrap_or("?"),
            env["driver_version"].as_str().unwrap_or("?"),
            env["date"].as_str().unwrap_or("?"),
            env["command"].as_str().unwrap_or("")
        );
        for r in mine {
            let s = |k: &str| r[k].as_str().unwrap_or("").to_string();
            let f = |v: &serde_json::Value, d: usize| {
                v.as_f64().map(|x| format!("{x:.d$}")).unwrap_or_default()
            };
            let status = r["status"]["kind"].as_str().unwrap_or("");
            table.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                s("workload"),
                s("variant"),
                s("backend"),
                s("size"),
                s("precision"),
                r["registers"]
                    .as_u64()
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
                f(&r["timing"]["median_ms"], 4),
                r["throughput"]
                    .as_f64()
                    .map(|t| format!("{t:.1} {}", s("unit")))
                    .unwrap_or_default(),
                f(&r["pct_of_ceiling"], 1),
                status
            ));
        }
        let new = format!(
            "{}<!-- results:start -->{table}\n{}",
            &text[..a],
            &text[b..]
        );
        std::fs::write(&path, new)?;
        n += 1;
    }
    println!("updated {n} workload README(s) from {}", dir.display());
    Ok(())
}

/// Packs what a GPU machine without Rust needs: `ptxlab`, the test binaries,
/// PTX/cubins, the peers and `run.sh`.
fn bundle(args: &[String]) -> Result<()> {
    let out = opt(args, "--out")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("bundle"));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(out.join("tests"))?;
    build_ptx(&["--out".into(), out.join("ptx").display().to_string()])?;
    run(cargo().args(["build", "--quiet", "--release", "-p", "ptxlab"]))?;
    std::fs::copy(root().join("target/release/ptxlab"), out.join("ptxlab"))?;
    let mut test_cmd = cargo();
    test_cmd.args(["test", "--release", "--no-run", "--message-format=json"]);
    match opt(args, "--tests") {
        Some(list) => {
            for t in list.split(',') {
                test_cmd.args(["--test", t]);
            }
        }
        None => {
            test_cmd.args(["--workspace", "--tests"]);
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
    if !args.iter().any(|a| a == "--no-benches") {
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
set -u
cd "$(dirname "$0")"
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

fn sanitize(args: &[String]) -> Result<()> {
    let tool = opt(args, "--tool");
    let filter = args
        .iter()
        .rfind(|a| !a.starts_with("--") && Some(*a) != tool.as_ref())
        .cloned();
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
    bundle(&["--no-benches".into()])?;
    let mut cmd = Command::new(root().join("bundle/sanitize.sh"));
    if let Some(t) = tool {
        cmd.arg(t);
    }
    if let Some(f) = filter {
        cmd.args(["--", &f]);
    }
    run(&mut cmd)
}
