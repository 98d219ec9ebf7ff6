//! The README's results table (`cargo xtask build-and-bench --update-docs
//! DIR`). Which rows of a run are one problem, which is the best Rust rung
//! and which the best peer: the report decides (`ptxlab report` writes
//! `summary.json`, one entry per problem), and this file only chooses the
//! problems the README shows and names them.

use super::pages::{CHAPTERS, write_generated_page};
use super::results_index::load_run;
use super::{cell, heading_id, ms, read_json, repo_relative, run_folder_of};
use crate::util::{cargo, root, run};
use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const README_START: &str = "<!-- results:start -->";
const README_END: &str = "<!-- results:end -->";

/// One line of the README's table: a problem of the report's summary,
/// named for people.
#[derive(Debug, Clone, Copy)]
pub(super) struct Line {
    /// The line's text.
    pub(super) label: &'static str,
    /// The problem: its workload, ...
    pub(super) workload: &'static str,
    /// ... the size as one of its rows prints it, ...
    pub(super) size: &'static str,
    /// ... the precision of its answer, ...
    pub(super) precision: &'static str,
    /// ... a solve's tolerance (`1e-8`), ...
    pub(super) tolerance: Option<&'static str>,
    /// ... and, where one shape holds two computations, what is measured
    /// (`GFLOP/s`).
    pub(super) measure: Option<&'static str>,
    /// Our side is the best checked Rust rung of the problem among those
    /// whose variant contains one of these (any when empty; an entry ending
    /// in a space, a rung number, must start it): one family of a ladder.
    pub(super) ours_any_of: &'static [&'static str],
    /// ... and none of these.
    pub(super) ours_none_of: &'static [&'static str],
    /// The largest relative error either side may have; a line whose side
    /// has more is left out.
    pub(super) tol: f64,
}

const fn line(
    label: &'static str,
    workload: &'static str,
    size: &'static str,
    precision: &'static str,
    tol: f64,
) -> Line {
    Line {
        label,
        workload,
        size,
        precision,
        tolerance: None,
        measure: None,
        ours_any_of: &[],
        ours_none_of: &[],
        tol,
    }
}

impl Line {
    const fn solve(self, tolerance: &'static str) -> Line {
        Line {
            tolerance: Some(tolerance),
            ..self
        }
    }
    const fn measure(self, measure: &'static str) -> Line {
        Line {
            measure: Some(measure),
            ..self
        }
    }
    const fn ours(self, any_of: &'static [&'static str], none_of: &'static [&'static str]) -> Line {
        Line {
            ours_any_of: any_of,
            ours_none_of: none_of,
            ..self
        }
    }
}

const LOMB: &str = "114 samples x 2^20 freqs";
const LOMB_RECURRENCE: &[&str] = &["9 ", "9b ", "10 ", "11 ", "11b ", "12 "];
const LOMB_BATCH: &str = "10000 curves (ragged) x 300 samples x 10^4 freqs";
const SGEMM_SIZE: &str = "(10000x5000)(5000x7000)";
const ATTENTION: &str = "B=4 H=16 S=8192 D=128";

/// The README's lines. A line whose problem has no checked Rust rung or no
/// checked peer in a run is left out of that run's table.
pub(super) const LINES: &[Line] = &[
    line(
        "vector add, f32, 2^28",
        "vector-add",
        "2^28.0 (268435456)",
        "f32",
        1e-6,
    )
    .ours(&[], &["cudaMemcpy"]),
    line("sum, f32, 2^28", "reduce", "2^28 (268435456)", "f32", 1e-5),
    line(
        "histogram, u8, 2^24, 256 bins",
        "histogram",
        "2^24 (16777216)",
        "u8",
        0.0,
    ),
    line(
        "Monte-Carlo pi, 1e8 samples",
        "monte-carlo-pi",
        "1e8 samples",
        "u64",
        1e-3,
    ),
    line(
        "Poisson Jacobi sweep, f32, 4096^2",
        "poisson",
        "4096x4096",
        "f32",
        1e-6,
    )
    .measure("GCells/s")
    .ours(&[], &["residual"]),
    line(
        "Poisson to 1e-8, f64 field, 4096^2",
        "poisson-mg",
        "4096x4096",
        "f64",
        1e-8,
    )
    .solve("1e-8")
    .ours(&[], &["EXTRAPOLATED"]),
    line(
        "Poisson to 1e-8, f64 field, 8192^2",
        "poisson-mg",
        "8192x8192",
        "f64",
        1e-8,
    )
    .solve("1e-8")
    .ours(&[], &["EXTRAPOLATED"]),
    line(
        "diffusion step, f32, 2000^2",
        "diffusion",
        "2000^2",
        "f32",
        1e-5,
    )
    .ours(&[], &["racy"]),
    line(
        "Lomb-Scargle, f32, 114 x 2^20, recurrences (rungs 9-12)",
        "lomb-scargle",
        LOMB,
        "f32",
        1e-5,
    )
    .ours(LOMB_RECURRENCE, &["["]),
    line(
        "Lomb-Scargle, f64, 114 x 2^20",
        "lomb-scargle",
        LOMB,
        "f64",
        1e-12,
    )
    .ours(&[], &["["]),
    line(
        "Lomb-Scargle batch, f32, 10^4 ragged curves, SciPy's definition",
        "lomb-scargle",
        LOMB_BATCH,
        "f32",
        1e-4,
    )
    .ours(&["SciPy's definition"], &[]),
    line(
        "SGEMM, f32, 4096^3 (CUDA cores)",
        "matmul",
        "4096^3",
        "f32",
        1e-5,
    )
    .ours(&[], &["3xTF32"]),
    line(
        "SGEMM, f32, 10000x5000x7000 (CUDA cores)",
        "matmul",
        SGEMM_SIZE,
        "f32",
        1e-5,
    )
    .measure("GFLOP/s")
    .ours(&[], &["3xTF32", "colsum"]),
    line(
        "f32-accurate GEMM, 8192^3 (3xTF32 tensor cores)",
        "matmul",
        "8192^3",
        "f32",
        1e-5,
    )
    .ours(&["3xTF32"], &[]),
    line("BF16 GEMM, 8192^3", "matmul", "8192^3", "bf16", 1e-2),
    line(
        "BF16 GEMM, 10000x5000x7000",
        "matmul",
        SGEMM_SIZE,
        "bf16",
        1e-2,
    ),
    line(
        "column sum of A B, f32, 10000x5000x7000",
        "matmul",
        SGEMM_SIZE,
        "f32",
        1e-5,
    )
    .measure("GB/s")
    .ours(&["colsum"], &[]),
    line(
        "fused elementwise pipeline, f32, 2^26",
        "fusion",
        "2^26",
        "f32",
        1e-6,
    ),
    line(
        "launch overhead, per kernel of 1000",
        "fusion",
        "1000 kernels",
        "f32",
        0.0,
    ),
    line(
        "attention, BF16, B=4 H=16 S=8192 D=128",
        "attention",
        ATTENTION,
        "bf16",
        1e-2,
    ),
    line(
        "attention, BF16, causal, same shape",
        "attention",
        "B=4 H=16 S=8192 D=128 causal",
        "bf16",
        1e-2,
    ),
    line(
        "attention backward, BF16, same shape",
        "attention",
        "B=4 H=16 S=8192 D=128 backward",
        "bf16",
        1e-2,
    ),
    line(
        "attention, BF16, grouped K/V, B=1 H=32 Hkv=8 S=8192 causal",
        "attention",
        "B=1 H=32 Hkv=8 S=8192 D=128 causal",
        "bf16",
        1e-2,
    ),
    line(
        "attention, BF16, sliding window 1024, B=4 H=16 S=8192",
        "attention",
        "B=4 H=16 S=8192 D=128 window=1024",
        "bf16",
        1e-2,
    ),
    line(
        "decoding, paged KV cache, B=16, 8k-128k tokens",
        "attention-decode",
        "B=16 H=32 Hkv=8 q=1 kv=8192..131072 (mean 69632) D=128 P=16",
        "bf16",
        1e-2,
    ),
    line(
        "FFT, c2c f32, 4096^2 2-D",
        "fft",
        "4096x4096 2-D c2c",
        "f32",
        1e-5,
    ),
];

/// Whether a `summary.json` entry is the problem of `l`.
fn is_problem_of(e: &Value, l: &Line) -> bool {
    let p = &e["problem"];
    e["workload"] == l.workload
        && p["precision"] == l.precision
        && p["tolerance"].as_str() == l.tolerance
        && l.measure.is_none_or(|m| p["measure"] == m)
        && e["rows"]
            .as_array()
            .is_some_and(|rows| rows.iter().any(|r| r["size"] == l.size))
}

fn is_rust_gpu(r: &Value) -> bool {
    r["backend"] == "gpu"
}

/// A member row that counts: checked, timed, and within `tol` where it
/// records an error.
fn usable(r: &Value, tol: f64) -> Option<f64> {
    if r["status"] != "ok" || r["rel_err"].as_f64().is_some_and(|e| e > tol) {
        return None;
    }
    r["median_ms"].as_f64().filter(|m| *m > 0.0)
}

/// Our side of `l` in entry `e`: the report's best rung, or, for a line
/// that names one family of the ladder, the fastest checked rung of that
/// family among the problem's rows.
fn ours<'a>(e: &'a Value, l: &Line) -> Option<Side<'a>> {
    let rows = e["rows"].as_array()?;
    if l.ours_any_of.is_empty() && l.ours_none_of.is_empty() {
        let r = rows.get(e["best"].as_u64()? as usize)?;
        return usable(r, l.tol).map(|m| (r, m));
    }
    rows.iter()
        .filter(|r| is_rust_gpu(r) && in_family(r["variant"].as_str().unwrap_or(""), l))
        .filter_map(|r| usable(r, l.tol).map(|m| (r, m)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

fn in_family(v: &str, l: &Line) -> bool {
    (l.ours_any_of.is_empty()
        || l.ours_any_of.iter().any(|a| {
            // `"4b "`: a rung number, at the start; anything else anywhere.
            if a.ends_with(' ') {
                v.starts_with(a)
            } else {
                v.contains(a)
            }
        }))
        && !l.ours_none_of.iter().any(|n| v.contains(n))
}

/// The peer side of `l` in entry `e`: the report's best peer of the
/// problem when its error is within the line's tolerance, else the
/// fastest peer row that is (a TF32 peer is the fastest of an f32 GEMM,
/// but not within an f32 line's tolerance: the line names the f32 one).
fn peer<'a>(e: &'a Value, l: &Line) -> Option<Side<'a>> {
    let rows = e["rows"].as_array()?;
    let best = rows.get(e["peer"].as_u64()? as usize)?;
    if let Some(m) = usable(best, l.tol) {
        return Some((best, m));
    }
    rows.iter()
        .filter(|r| !matches!(r["backend"].as_str(), Some("gpu" | "cpu" | "sim")))
        .filter_map(|r| usable(r, l.tol).map(|m| (r, m)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// A member row of a summary entry and its median time (ms).
pub(super) type Side<'a> = (&'a Value, f64);

/// The two sides of `l` in a run's `summary.json` entries: the entry (the
/// problem), our side, the peer.
pub(super) fn sides<'a>(entries: &'a [Value], l: &Line) -> Option<(&'a Value, Side<'a>, Side<'a>)> {
    entries
        .iter()
        .filter(|e| is_problem_of(e, l))
        .find_map(|e| Some((e, ours(e, l)?, peer(e, l)?)))
}

/// The `results.json` of `dir`: the file itself, `dir/results.json`, or the
/// one a run folder's `index.toml` names.
fn results_json_of(dir: &Path) -> Result<PathBuf> {
    if dir.is_file() {
        return Ok(dir.to_path_buf());
    }
    if dir.join("results.json").is_file() {
        return Ok(dir.join("results.json"));
    }
    if dir.join("index.toml").is_file() {
        let run = load_run(dir)?;
        if let Some(r) = run.results {
            return Ok(r);
        }
    }
    bail!(
        "{} has no results.json (give the folder `ptxlab bench --out` wrote, or a run folder whose index.toml names its results)",
        dir.display()
    )
}

/// The report's `summary.json` of the run `json_path`, made now by `ptxlab
/// report` from its `results.json` (so an older run is paired by today's
/// rules): its comparisons.
fn summary_of(json_path: &Path) -> Result<Vec<Value>> {
    eprintln!("building ptxlab (release) to pair the run's rows ...");
    run(cargo().args(["build", "--quiet", "--release", "-p", "ptxlab"]))?;
    let out = root().join("target/update-docs");
    if out.is_dir() {
        std::fs::remove_dir_all(&out).with_context(|| format!("clearing {}", out.display()))?;
    }
    std::fs::create_dir_all(&out)?;
    let st = Command::new(root().join("target/release/ptxlab"))
        .current_dir(root())
        .arg("report")
        .arg("--from")
        .arg(json_path)
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .status()
        .context("running ptxlab report")?;
    if !st.success() {
        bail!(
            "ptxlab report --from {} failed with {st}",
            json_path.display()
        );
    }
    let summary = read_json(&out.join("summary.json"))?;
    let Some(cs) = summary["comparisons"].as_array() else {
        bail!(
            "{}: no `comparisons` (schema {})",
            out.join("summary.json").display(),
            summary["schema"]
        );
    };
    Ok(cs.clone())
}

/// The heading ids of `report.md`'s workload sections, by workload.
fn report_anchors(report: &Path) -> HashMap<String, String> {
    let mut out = HashMap::new();
    if let Ok(text) = std::fs::read_to_string(report) {
        for l in text.lines() {
            if let Some(h) = l.strip_prefix("## ")
                && let Some((w, _)) = h.split_once(" — ")
            {
                out.insert(w.trim().to_string(), heading_id(h));
            }
        }
    }
    out
}

/// The README's table for the run whose results are `json_path` and whose
/// comparisons are `entries`, with links relative to the repository root.
pub(super) fn readme_table(json_path: &Path, json: &Value, entries: &[Value]) -> Result<String> {
    let rows = json["rows"].as_array().cloned().unwrap_or_default();
    let env = &json["environment"];
    let json_rel = repo_relative(json_path)?;
    let dir_rel = json_rel.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
    let report = json_path.with_file_name("report.md");
    let anchors = report_anchors(&report);
    let report_rel = format!("{dir_rel}/report.md");
    let mut s = String::new();
    // A multi-GPU host records one line per device: the first names the run's.
    let s_env = |k: &str| {
        let v = env[k].as_str().unwrap_or("?");
        v.lines().next().unwrap_or(v).trim().to_string()
    };
    let day = s_env("date");
    let day = day.get(..10).unwrap_or(&day);
    let run_folder = run_folder_of(&json_rel);
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for r in &rows {
        *kinds
            .entry(r["status"]["kind"].as_str().unwrap_or("?").to_string())
            .or_default() += 1;
    }
    let not_ok: Vec<String> = kinds
        .iter()
        .filter(|(k, _)| k.as_str() != "ok")
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    let _ = writeln!(
        s,
        "Measured on {} (driver {}), {day}, commit `{}` ([run]({run_folder}/README.md), \
         [report]({report_rel})): medians of device-event timings after warm-up; the peer is the \
         report's fastest checked peer of the same problem in the same run (a direct solve counts \
         for every tolerance it reaches), within the row's tolerance; ratio = peer time / our time. \
         Of the run's {} rows, {} passed their check{}.\n",
        s_env("gpu"),
        s_env("driver_version"),
        s_env("git_sha"),
        rows.len(),
        kinds.get("ok").copied().unwrap_or(0),
        if not_ok.is_empty() {
            String::new()
        } else {
            format!(" ({}; see the report)", not_ok.join(", "))
        },
    );
    s.push_str("| problem | our fastest kernel | time | fastest peer | time | ratio |\n");
    s.push_str("|---|---|---|---|---|---|\n");
    let mut n = 0;
    for l in LINES {
        let Some((e, (o, om), (q, qm))) = sides(entries, l) else {
            continue;
        };
        // The report's page of the workload where the run has one (a
        // summary report), else the anchor of its section in report.md.
        let page = e["page"].as_str().unwrap_or("");
        let link = if !page.is_empty() && json_path.with_file_name(page).is_file() {
            format!("{dir_rel}/{page}")
        } else {
            match anchors.get(l.workload) {
                Some(a) => format!("{report_rel}#{a}"),
                None => report_rel.clone(),
            }
        };
        let _ = writeln!(
            s,
            "| [{}]({link}) | {} | {} | {} ({}) | {} | {:.2}x |",
            l.label,
            cell(o["variant"].as_str().unwrap_or("")),
            ms(om),
            cell(q["variant"].as_str().unwrap_or("")),
            q["backend"].as_str().unwrap_or(""),
            ms(qm),
            qm / om
        );
        n += 1;
    }
    if n == 0 {
        bail!(
            "{}: no line of the README's table has both sides in this run (a GPU run with --peers is needed)",
            json_path.display()
        );
    }
    Ok(s)
}

/// Replaces the text between the results markers of `text`.
fn replace_between(text: &str, body: &str, what: &Path) -> Result<String> {
    let (Some(a), Some(b)) = (text.find(README_START), text.find(README_END)) else {
        bail!(
            "{} has no `{README_START}` ... `{README_END}` markers",
            what.display()
        );
    };
    if b < a {
        bail!(
            "{}: `{README_END}` comes before `{README_START}`",
            what.display()
        );
    }
    Ok(format!(
        "{}{README_START}\n{body}{}",
        &text[..a],
        &text[b..]
    ))
}

/// `cargo xtask build-and-bench --update-docs DIR`: writes the README's
/// results table (between `<!-- results:start -->` and
/// `<!-- results:end -->`) and the book's generated pages of the workloads in
/// the run from the recorded run in `DIR` (a folder with `results.json`, or a
/// run folder of `docs/results` whose `index.toml` names one).
pub(crate) fn update_docs(dir: &Path) -> Result<()> {
    let json_path = results_json_of(dir)?;
    let json = read_json(&json_path)?;
    let entries = summary_of(&json_path)?;
    let table = readme_table(&json_path, &json, &entries)?;
    let readme = root().join("README.md");
    let text = std::fs::read_to_string(&readme)?;
    std::fs::write(&readme, replace_between(&text, &table, &readme)?)?;
    let present: HashSet<&str> = json["rows"]
        .as_array()
        .map(|rows| rows.iter().filter_map(|r| r["workload"].as_str()).collect())
        .unwrap_or_default();
    let mut pages = 0;
    for (chapter, workloads) in CHAPTERS {
        if workloads.iter().any(|w| present.contains(w)) {
            write_generated_page(chapter, workloads, &json_path, &json)?;
            pages += 1;
        }
    }
    println!(
        "updated README.md's results table and {pages} generated page(s) of the book from {}",
        json_path.display()
    );
    Ok(())
}
