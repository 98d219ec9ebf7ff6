//! Documentation jobs: the book (`cargo xtask book`), the results index
//! (`cargo xtask results-index`) and the README's results table
//! (`cargo xtask build-and-bench --update-docs DIR`).
//!
//! Every figure in the documentation comes from a recorded run under
//! `docs/results/<run>/`: each run folder has an `index.toml` (what was
//! measured, on which device, and the topics it covers) and, for a bench
//! run, a `results.json`. The index (`docs/results/README.md`), the book's
//! generated pages (`docs/book/src/generated/<chapter>.md`) and the README's
//! table are written from those files and never by hand.

use crate::util::root;
use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

/// The repository's public address: links from the book to files outside it.
pub(crate) const REPO_URL: &str = "https://github.com/ptxlab/ptxlab";
/// The mdBook release the book is built and checked with.
pub(crate) const MDBOOK_VERSION: &str = "0.5.4";

const README_START: &str = "<!-- results:start -->";
const README_END: &str = "<!-- results:end -->";

/// Options of `cargo xtask book`.
#[derive(Debug, Clone, Default)]
pub(crate) struct BookOpts {
    /// Only regenerate the generated pages and check the book's links (no
    /// mdBook run).
    pub check_only: bool,
    /// Where to write the rendered book (default `target/book`).
    pub out: Option<PathBuf>,
}

// ---------------------------------------------------------------------------
// The recorded runs and their index
// ---------------------------------------------------------------------------

/// One folder of `docs/results/`, with the facts of its `index.toml` and,
/// where it names one, its `results.json`.
#[derive(Debug, Clone)]
struct Run {
    /// The folder's name, e.g. `2026-11-28-h100-final-bench`.
    name: String,
    /// `YYYY-MM-DD[ HH:MM[:SS]]`: sorts in time order as a string.
    when: String,
    gpu: String,
    driver: String,
    commit: String,
    measured: String,
    topics: Vec<String>,
    /// The run's `results.json`, if it has one.
    results: Option<PathBuf>,
    /// Newer runs on the same device type that cover its topics; empty for
    /// a current run.
    superseded_by: Vec<String>,
}

impl Run {
    fn day(&self) -> &str {
        self.when.get(..10).unwrap_or(&self.when)
    }
}

/// A value of the `index.toml` subset: a string or an array of strings.
#[derive(Debug, Clone, PartialEq)]
enum TomlValue {
    Str(String),
    List(Vec<String>),
}

/// Parses the subset of TOML that `index.toml` files use: comments, blank
/// lines and `key = "string"` / `key = ["a", "b"]` pairs on one line each.
fn parse_index_toml(text: &str, path: &Path) -> Result<BTreeMap<String, TomlValue>> {
    fn string(s: &str, path: &Path, line: usize) -> Result<(String, usize)> {
        let mut out = String::new();
        let mut chars = s.char_indices();
        match chars.next() {
            Some((_, '"')) => {}
            _ => bail!(
                "{}:{line}: expected a string in double quotes, found `{s}`",
                path.display()
            ),
        }
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => return Ok((out, i + 1)),
                '\\' => match chars.next() {
                    Some((_, '"')) => out.push('"'),
                    Some((_, '\\')) => out.push('\\'),
                    Some((_, 'n')) => out.push('\n'),
                    other => bail!(
                        "{}:{line}: unsupported escape `\\{}` (allowed: \\\" \\\\ \\n)",
                        path.display(),
                        other.map(|(_, c)| c).unwrap_or(' ')
                    ),
                },
                c => out.push(c),
            }
        }
        bail!("{}:{line}: unterminated string", path.display())
    }
    let mut map = BTreeMap::new();
    for (n, raw) in text.lines().enumerate() {
        let line = n + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let Some((key, value)) = l.split_once('=') else {
            bail!(
                "{}:{line}: expected `key = \"value\"` or `key = [\"a\", \"b\"]`, found `{l}`",
                path.display()
            );
        };
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            bail!("{}:{line}: bad key `{key}`", path.display());
        }
        let value = value.trim();
        let parsed = if let Some(inner) = value.strip_prefix('[') {
            let mut rest = inner.trim_start();
            let mut items = Vec::new();
            loop {
                if let Some(r) = rest.strip_prefix(']') {
                    rest = r;
                    break;
                }
                let (s, used) = string(rest, path, line)?;
                items.push(s);
                rest = rest[used..].trim_start();
                if let Some(r) = rest.strip_prefix(',') {
                    rest = r.trim_start();
                } else if !rest.starts_with(']') {
                    bail!(
                        "{}:{line}: expected `,` or `]` in the list of `{key}`",
                        path.display()
                    );
                }
            }
            if !rest.trim().is_empty() && !rest.trim().starts_with('#') {
                bail!("{}:{line}: text after the list: `{rest}`", path.display());
            }
            TomlValue::List(items)
        } else {
            let (s, used) = string(value, path, line)?;
            let rest = value[used..].trim();
            if !rest.is_empty() && !rest.starts_with('#') {
                bail!("{}:{line}: text after the string: `{rest}`", path.display());
            }
            TomlValue::Str(s)
        };
        if map.insert(key.to_string(), parsed).is_some() {
            bail!("{}:{line}: `{key}` is given twice", path.display());
        }
    }
    Ok(map)
}

const INDEX_KEYS: &[&str] = &[
    "date", "gpu", "driver", "commit", "command", "measured", "topics", "results",
];

/// Reads one run folder.
fn load_run(dir: &Path) -> Result<Run> {
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .context("a results folder name that is not UTF-8")?
        .to_string();
    let toml_path = dir.join("index.toml");
    let text = std::fs::read_to_string(&toml_path).with_context(|| {
        format!(
            "reading {}: every results folder needs one (keys: {})",
            toml_path.display(),
            INDEX_KEYS.join(", ")
        )
    })?;
    let map = parse_index_toml(&text, &toml_path)?;
    for k in map.keys() {
        if !INDEX_KEYS.contains(&k.as_str()) {
            bail!(
                "{}: unknown key `{k}` (allowed: {})",
                toml_path.display(),
                INDEX_KEYS.join(", ")
            );
        }
    }
    let get = |k: &str| -> Result<Option<String>> {
        match map.get(k) {
            None => Ok(None),
            Some(TomlValue::Str(s)) => Ok(Some(s.clone())),
            Some(TomlValue::List(_)) => {
                bail!("{}: `{k}` must be a string", toml_path.display())
            }
        }
    };
    let results = match get("results")? {
        Some(r) => {
            let p = dir.join(&r);
            if !p.is_file() {
                bail!(
                    "{}: results = \"{r}\" does not exist in the folder",
                    toml_path.display()
                );
            }
            Some(p)
        }
        None => None,
    };
    let env = match &results {
        Some(p) => read_json(p)?["environment"].clone(),
        None => Value::Null,
    };
    let from_env = |k: &str| {
        env[k]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let need = |k: &str, fallback: Option<String>| -> Result<String> {
        match get(k)?.or(fallback) {
            Some(v) => Ok(v),
            None => bail!(
                "{}: `{k}` is missing (give it here{})",
                toml_path.display(),
                if results.is_some() {
                    ", or record it in the run's results.json"
                } else {
                    ""
                }
            ),
        }
    };
    let when = need(
        "date",
        from_env("date").map(|d| d.trim_end_matches(" UTC").to_string()),
    )?;
    if when.len() < 10
        || !when[..10].chars().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                c == '-'
            } else {
                c.is_ascii_digit()
            }
        })
    {
        bail!(
            "{}: date `{when}` is not YYYY-MM-DD[ HH:MM[:SS]]",
            toml_path.display()
        );
    }
    if !name.starts_with(&when[..10]) {
        bail!(
            "{}: the folder's name does not start with its date {}",
            toml_path.display(),
            &when[..10]
        );
    }
    let topics = match map.get("topics") {
        Some(TomlValue::List(t)) if !t.is_empty() => t.clone(),
        _ => bail!(
            "{}: `topics` must be a non-empty list, e.g. topics = [\"matmul\"]",
            toml_path.display()
        ),
    };
    if !dir.join("README.md").is_file() {
        bail!("{}: the folder has no README.md", dir.display());
    }
    // The command stays in index.toml (or results.json) for the reader of
    // the folder; the index line does not repeat it.
    need("command", from_env("command"))?;
    Ok(Run {
        gpu: need("gpu", from_env("gpu"))?,
        driver: need("driver", from_env("driver_version"))?,
        commit: need("commit", from_env("git_sha"))?,
        measured: need("measured", None)?,
        name,
        when,
        topics,
        results,
        superseded_by: Vec::new(),
    })
}

/// Every run folder of `docs/results`, oldest first, with supersession
/// worked out: a run is superseded when every one of its topics has a newer
/// run on the same device type.
fn load_runs() -> Result<Vec<Run>> {
    let base = root().join("docs/results");
    let mut runs = Vec::new();
    for entry in std::fs::read_dir(&base).with_context(|| format!("reading {}", base.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            runs.push(load_run(&path)?);
        }
    }
    runs.sort_by(|a, b| (&a.when, &a.name).cmp(&(&b.when, &b.name)));
    let snapshot = runs.clone();
    for run in &mut runs {
        let mut by = BTreeSet::new();
        let mut all = true;
        for t in &run.topics {
            let newest = snapshot
                .iter()
                .filter(|o| {
                    o.name != run.name
                        && o.gpu == run.gpu
                        && o.when > run.when
                        && o.topics.contains(t)
                })
                .max_by(|a, b| a.when.cmp(&b.when));
            match newest {
                Some(o) => {
                    by.insert(o.name.clone());
                }
                None => all = false,
            }
        }
        if all {
            run.superseded_by = by.into_iter().collect();
        }
    }
    Ok(runs)
}

fn render_index(runs: &[Run]) -> String {
    let mut s = String::from(
        "# Recorded runs\n\n\
         <!-- Generated by `cargo xtask results-index` from each folder's index.toml and results.json; do not edit. -->\n\n\
         One line per run folder, newest first. Each folder's README names the device, the driver, \
         the commit and the command, and says what was measured. A run is *superseded* when a newer \
         run on the same device type covers each of its topics; the README's table and the book's \
         results pages read the current runs.\n\n\
         | run | date | device | driver | commit | what it measured | topics | status |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for r in runs.iter().rev() {
        let status = if r.superseded_by.is_empty() {
            "current".to_string()
        } else {
            format!(
                "superseded by {}",
                r.superseded_by
                    .iter()
                    .map(|n| format!("[{n}]({n}/README.md)"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let _ = writeln!(
            s,
            "| [{n}]({n}/README.md) | {} | {} | {} | {} | {} | {} | {} |",
            r.day(),
            cell(&r.gpu),
            cell(&r.driver),
            code_hashes(&cell(&r.commit)),
            cell(&r.measured),
            r.topics.join(", "),
            status,
            n = r.name,
        );
    }
    s
}

/// `text` with every commit hash (7 to 40 hex digits) in backticks.
fn code_hashes(text: &str) -> String {
    text.split(' ')
        .map(|w| {
            let core = w.trim_end_matches([',', ')', ';']);
            let tail = &w[core.len()..];
            if (7..=40).contains(&core.len()) && core.chars().all(|c| c.is_ascii_hexdigit()) {
                format!("`{core}`{tail}")
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A table cell: no line breaks, no unescaped pipes.
fn cell(s: &str) -> String {
    s.replace('\n', " ").replace('|', "\\|")
}

/// `cargo xtask results-index [--check]`: writes (or, with `check`, verifies)
/// `docs/results/README.md`, one line per recorded run.
pub(crate) fn results_index(check: bool) -> Result<()> {
    let runs = load_runs()?;
    let text = render_index(&runs);
    let path = root().join("docs/results/README.md");
    if check {
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        if old != text {
            bail!(
                "{} is not what `cargo xtask results-index` writes from the run folders: run it and commit the result",
                path.display()
            );
        }
        println!("{}: up to date ({} runs)", path.display(), runs.len());
    } else {
        std::fs::write(&path, &text).with_context(|| format!("writing {}", path.display()))?;
        let current = runs.iter().filter(|r| r.superseded_by.is_empty()).count();
        println!(
            "wrote {} ({} runs, {current} current)",
            path.display(),
            runs.len()
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The README's results table
// ---------------------------------------------------------------------------

/// Which rows of a run one side of a comparison may take.
#[derive(Debug, Clone, Copy)]
struct Pick {
    workload: &'static str,
    size: &'static str,
    precisions: &'static [&'static str],
    /// The variant must contain one of these (any variant when empty); an
    /// entry ending in a space (`"4b "`, a rung number) must start it.
    any_of: &'static [&'static str],
    /// The variant must contain none of these.
    none_of: &'static [&'static str],
}

/// One line of the README's table: the same problem, solved by our fastest
/// kernel and by the fastest peer, each within `tol` of the reference.
#[derive(Debug, Clone, Copy)]
struct Pair {
    problem: &'static str,
    ours: Pick,
    peer: Pick,
    /// The largest relative error a row may have and still count.
    tol: f64,
}

const fn pick(
    workload: &'static str,
    size: &'static str,
    precisions: &'static [&'static str],
    any_of: &'static [&'static str],
    none_of: &'static [&'static str],
) -> Pick {
    Pick {
        workload,
        size,
        precisions,
        any_of,
        none_of,
    }
}

const F32: &[&str] = &["f32"];
const F64: &[&str] = &["f64"];
const BF16: &[&str] = &["bf16"];
const F16: &[&str] = &["f16"];
const F64_FIELD: &[&str] = &["f64", "f32 cycles, f64 field"];
const LOMB: &str = "114 samples x 2^20 freqs";
const LOMB_DIRECT: &[&str] = &[
    "1 ", "2 ", "4 ", "4b ", "4c ", "5 ", "6 ", "7 ", "7b ", "8 ",
];
const LOMB_RECURRENCE: &[&str] = &["9 ", "9b ", "10 ", "11 ", "11b ", "12 "];
const MG_OURS_NOT: &[&str] = &["EXTRAPOLATED", "check"];
const SGEMM_SIZE: &str = "(10000x5000)(5000x7000)";

/// The README's rows. A row whose two sides are not both in a run is left
/// out of that run's table.
const PAIRS: &[Pair] = &[
    Pair {
        problem: "vector add, f32, 2^28",
        ours: pick(
            "vector-add",
            "2^28.0 (268435456)",
            F32,
            &[],
            &["cudaMemcpy"],
        ),
        peer: pick("vector-add", "268435456", F32, &[], &[]),
        tol: 1e-6,
    },
    Pair {
        problem: "sum, f32, 2^28",
        ours: pick("reduce", "2^28 (268435456)", F32, &[], &[]),
        peer: pick("reduce", "268435456", F32, &[], &[]),
        tol: 1e-5,
    },
    Pair {
        problem: "histogram, u8, 2^24, 256 bins",
        ours: pick("histogram", "2^24 (16777216)", &["u8"], &[], &[]),
        peer: pick("histogram", "16777216", &["u8"], &[], &[]),
        tol: 0.0,
    },
    Pair {
        problem: "Monte-Carlo pi, 1e8 samples",
        ours: pick("monte-carlo-pi", "1e8 samples", &["u64 hits"], &[], &[]),
        peer: pick("monte-carlo-pi", "1e+08 samples", &["u64 hits"], &[], &[]),
        tol: 1e-3,
    },
    Pair {
        problem: "Poisson Jacobi sweep, f32, 2000^2",
        ours: pick("poisson", "2000x2000", F32, &[], &["residual"]),
        peer: pick("poisson", "2000x2000", F32, &[], &[]),
        tol: 1e-6,
    },
    Pair {
        problem: "Poisson Jacobi sweep, f32, 4096^2",
        ours: pick("poisson", "4096x4096", F32, &[], &["residual"]),
        peer: pick("poisson", "4096x4096", F32, &[], &[]),
        tol: 1e-6,
    },
    Pair {
        problem: "Poisson to 1e-8, f64 field, 4096^2",
        ours: pick(
            "poisson-mg",
            "4096x4096",
            F64_FIELD,
            &["to 1e-8"],
            MG_OURS_NOT,
        ),
        peer: pick(
            "poisson-mg",
            "4096x4096",
            F64,
            &[],
            &["to 1e-06", "history"],
        ),
        tol: 1e-8,
    },
    Pair {
        problem: "Poisson to 1e-8, f64 field, 8192^2",
        ours: pick(
            "poisson-mg",
            "8192x8192",
            F64_FIELD,
            &["to 1e-8"],
            MG_OURS_NOT,
        ),
        peer: pick(
            "poisson-mg",
            "8192x8192",
            F64,
            &[],
            &["to 1e-06", "history"],
        ),
        tol: 1e-8,
    },
    Pair {
        problem: "diffusion step, f32, 2000^2",
        ours: pick("diffusion", "2000^2", F32, &[], &["racy"]),
        peer: pick("diffusion", "2000^2", F32, &[], &["racy"]),
        tol: 1e-5,
    },
    Pair {
        problem: "Lomb-Scargle, f32, 114 x 2^20, direct sums (rungs 1-8)",
        ours: pick("lomb-scargle", LOMB, F32, LOMB_DIRECT, &["["]),
        peer: pick("lomb-scargle", LOMB, F32, &[], &["scaled"]),
        tol: 1e-5,
    },
    Pair {
        problem: "Lomb-Scargle, f32, 114 x 2^20, recurrences (rungs 9-12)",
        ours: pick("lomb-scargle", LOMB, F32, LOMB_RECURRENCE, &["["]),
        peer: pick("lomb-scargle", LOMB, F32, &[], &["scaled"]),
        tol: 1e-5,
    },
    Pair {
        problem: "Lomb-Scargle, f64, 114 x 2^20",
        ours: pick("lomb-scargle", LOMB, F64, &[], &["["]),
        peer: pick("lomb-scargle", LOMB, F64, &[], &["scaled", "approximate"]),
        tol: 1e-12,
    },
    Pair {
        problem: "Lomb-Scargle batch, f32, 10^4 ragged curves, SciPy's definition",
        ours: pick(
            "lomb-scargle",
            "10000 curves (ragged) x 300 samples x 10^4 freqs",
            F32,
            &["SciPy's definition"],
            &[],
        ),
        peer: pick(
            "lomb-scargle",
            "10000 curves (ragged) x 300 samples x 10^4 freqs",
            F32,
            &["SciPy's definition"],
            &["scaled"],
        ),
        tol: 1e-4,
    },
    Pair {
        problem: "SGEMM, f32, 4096^3 (CUDA cores)",
        ours: pick("matmul", "4096^3", F32, &[], &["3xTF32"]),
        peer: pick("matmul", "4096^3", F32, &[], &[]),
        tol: 1e-5,
    },
    Pair {
        problem: "SGEMM, f32, 10000x5000x7000 (CUDA cores)",
        ours: pick("matmul", SGEMM_SIZE, F32, &[], &["3xTF32", "colsum"]),
        peer: pick("matmul", SGEMM_SIZE, F32, &["torch.matmul"], &[]),
        tol: 1e-5,
    },
    Pair {
        problem: "f32-accurate GEMM, 8192^3 (3xTF32 tensor cores)",
        ours: pick("matmul", "8192^3", F32, &["3xTF32"], &[]),
        peer: pick("matmul", "8192^3", F32, &[], &[]),
        tol: 1e-5,
    },
    Pair {
        problem: "BF16 GEMM, 8192^3",
        ours: pick("matmul", "8192^3", BF16, &[], &[]),
        peer: pick("matmul", "8192^3", BF16, &[], &[]),
        tol: 1e-2,
    },
    Pair {
        problem: "BF16 GEMM, 10000x5000x7000",
        ours: pick("matmul", SGEMM_SIZE, BF16, &[], &[]),
        peer: pick("matmul", SGEMM_SIZE, BF16, &[], &[]),
        tol: 1e-2,
    },
    Pair {
        problem: "FP16 GEMM, 10000x5000x7000",
        ours: pick("matmul", SGEMM_SIZE, F16, &[], &[]),
        peer: pick("matmul", SGEMM_SIZE, F16, &[], &[]),
        tol: 1e-2,
    },
    Pair {
        problem: "column sum of A B, f32, 10000x5000x7000",
        ours: pick("matmul", SGEMM_SIZE, F32, &["colsum"], &[]),
        peer: pick("matmul", SGEMM_SIZE, F32, &["sum"], &[]),
        tol: 1e-5,
    },
    Pair {
        problem: "fused elementwise pipeline, f32, 2^26",
        ours: pick("fusion", "2^26", F32, &[], &[]),
        peer: pick("fusion", "2^26", F32, &[], &[]),
        tol: 1e-6,
    },
    Pair {
        problem: "launch overhead, per kernel of 1000",
        ours: pick("fusion", "1000 kernels", F32, &[], &[]),
        peer: pick("fusion", "1000 kernels", F32, &[], &[]),
        tol: 0.0,
    },
    Pair {
        problem: "attention, BF16, B=4 H=16 S=8192 D=128",
        ours: pick("attention", "B=4 H=16 S=8192 D=128", BF16, &[], &[]),
        peer: pick("attention", "B=4 H=16 S=8192 D=128", BF16, &[], &[]),
        tol: 1e-2,
    },
    Pair {
        problem: "attention, BF16, causal, same shape",
        ours: pick("attention", "B=4 H=16 S=8192 D=128 causal", BF16, &[], &[]),
        peer: pick("attention", "B=4 H=16 S=8192 D=128 causal", BF16, &[], &[]),
        tol: 1e-2,
    },
];

fn is_peer(backend: &str) -> bool {
    !matches!(backend, "gpu" | "cpu" | "sim")
}

/// The median of a timed row whose check passed and whose error is within
/// `tol` (rows without a recorded error count when `tol` is 0 or their
/// status is ok).
fn usable(row: &Value, tol: f64) -> Option<f64> {
    if row["status"]["kind"].as_str() != Some("ok") {
        return None;
    }
    if let Some(e) = row["rel_err"].as_f64()
        && e > tol
    {
        return None;
    }
    row["timing"]["median_ms"].as_f64().filter(|m| *m > 0.0)
}

fn matches(row: &Value, p: &Pick, peer: bool) -> bool {
    let s = |k: &str| row[k].as_str().unwrap_or("");
    let v = s("variant");
    s("workload") == p.workload
        && s("size") == p.size
        && p.precisions.contains(&s("precision"))
        && (if peer {
            is_peer(s("backend"))
        } else {
            s("backend") == "gpu"
        })
        && (p.any_of.is_empty()
            || p.any_of.iter().any(|a| {
                // `"4b "`: a rung number, at the start; anything else anywhere.
                if a.ends_with(' ') {
                    v.starts_with(a)
                } else {
                    v.contains(a)
                }
            }))
        && !p.none_of.iter().any(|n| v.contains(n))
}

fn fastest<'a>(rows: &'a [Value], p: &Pick, peer: bool, tol: f64) -> Option<(&'a Value, f64)> {
    rows.iter()
        .filter(|r| matches(r, p, peer))
        .filter_map(|r| usable(r, tol).map(|m| (r, m)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// A duration in the unit that reads best.
fn ms(m: f64) -> String {
    if m < 1.0 {
        format!("{:.1} us", m * 1000.0)
    } else if m < 1000.0 {
        format!("{m:.3} ms")
    } else {
        format!("{:.2} s", m / 1000.0)
    }
}

/// The id mdBook (and, for these headings, GitHub) gives a heading: its
/// text, trimmed and lowercased, letters, digits, `_` and `-` kept,
/// whitespace made `-`, everything else dropped.
fn heading_id(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c)
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// `path` relative to the repository root, with `/` separators.
fn repo_relative(path: &Path) -> Result<String> {
    let root = root();
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()?.join(path)
    };
    let abs = normalize(&abs);
    let rel = abs.strip_prefix(&root).map_err(|_| {
        anyhow::anyhow!(
            "{} is outside the repository: the documentation links to its report, so record the run under docs/results/<date>-<device>-<what>/ first",
            path.display()
        )
    })?;
    Ok(rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/"))
}

/// Removes `.` and `..` components without touching the file system.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

fn read_json(path: &Path) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
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

/// The README's table for the run whose results are `json_path`, with links
/// relative to the repository root.
fn readme_table(json_path: &Path) -> Result<String> {
    let json = read_json(json_path)?;
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
         fastest peer row of the same problem in the same run whose result is within the row's \
         tolerance; ratio = peer time / our time. Of the run's {} rows, {} passed their check{}.\n",
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
    for p in PAIRS {
        let (Some((o, om)), Some((q, qm))) = (
            fastest(&rows, &p.ours, false, p.tol),
            fastest(&rows, &p.peer, true, p.tol),
        ) else {
            continue;
        };
        // The report's page of the workload where the run has one (a
        // summary report), else the anchor of its section in report.md.
        let page = json_path.with_file_name(format!("{}.md", p.ours.workload));
        let link = if page.is_file() {
            format!("{dir_rel}/{}.md", p.ours.workload)
        } else {
            match anchors.get(p.ours.workload) {
                Some(a) => format!("{report_rel}#{a}"),
                None => report_rel.clone(),
            }
        };
        let _ = writeln!(
            s,
            "| [{}]({link}) | {} | {} | {} ({}) | {} | {:.2}x |",
            p.problem,
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
            "{}: no row of the README's table has both sides in this run (a GPU run with --peers is needed)",
            json_path.display()
        );
    }
    Ok(s)
}

/// `docs/results/<run>` for a path inside a run folder.
fn run_folder_of(rel: &str) -> String {
    let parts: Vec<&str> = rel.split('/').collect();
    if parts.len() >= 3 && parts[0] == "docs" && parts[1] == "results" {
        format!("docs/results/{}", parts[2])
    } else {
        rel.rsplit_once('/')
            .map(|(d, _)| d.to_string())
            .unwrap_or_default()
    }
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
    let table = readme_table(&json_path)?;
    let readme = root().join("README.md");
    let text = std::fs::read_to_string(&readme)?;
    std::fs::write(&readme, replace_between(&text, &table, &readme)?)?;
    let json = read_json(&json_path)?;
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

// ---------------------------------------------------------------------------
// The book's generated pages
// ---------------------------------------------------------------------------

/// The book's workload chapters and the bench workloads each one reports.
const CHAPTERS: &[(&str, &[&str])] = &[
    ("vector-add", &["vector-add"]),
    ("primitives", &["reduce", "histogram", "monte-carlo-pi"]),
    ("poisson", &["poisson", "poisson-mg"]),
    ("diffusion", &["diffusion"]),
    ("lomb-scargle", &["lomb-scargle"]),
    ("matmul", &["matmul"]),
    ("fusion", &["fusion"]),
    ("attention", &["attention"]),
];

/// Topics of runs without a `results.json` that a chapter lists.
const CHAPTER_TOPICS: &[(&str, &[&str])] = &[
    (
        "poisson-multi-gpu",
        &["poisson-multi-gpu", "multigrid-multi-gpu", "pcg-multi-gpu"],
    ),
    (
        "simulator",
        &["simulator-speed", "sim-fuzz", "pipeline-bugs"],
    ),
    ("measuring", &["cold-start", "ptx-diff", "sanitize"]),
];

fn book_src() -> PathBuf {
    root().join("docs/book/src")
}

/// Writes `generated/<chapter>.md` (and copies its charts) from one run.
/// Its links are relative to `docs/book/src/workloads/`, where the chapter
/// includes it; `../generated/...` resolves from both folders.
fn write_generated_page(
    chapter: &str,
    workloads: &[&str],
    json_path: &Path,
    json: &Value,
) -> Result<()> {
    let gen_dir = book_src().join("generated");
    let charts_dir = gen_dir.join("charts").join(chapter);
    std::fs::create_dir_all(&charts_dir)?;
    let env = &json["environment"];
    // A multi-GPU host records one line per device: the first names the run's.
    let s_env = |k: &str| {
        let v = env[k].as_str().unwrap_or("?");
        v.lines().next().unwrap_or(v).trim().to_string()
    };
    let json_rel = repo_relative(json_path)?;
    let run_dir = json_path.parent().context("results.json has no folder")?;
    let run_folder = run_folder_of(&json_rel);
    let dir_rel = json_rel.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
    let day = s_env("date");
    let mut s = format!(
        "<!-- Generated by `cargo xtask book` from {json_rel}; do not edit. -->\n\n\
         Recorded on {} (driver {}), {}, commit `{}`: [the run]({REPO_URL}/blob/main/{run_folder}/README.md), \
         [its full report]({REPO_URL}/blob/main/{dir_rel}/report.md). Medians of device-event \
         timings after warm-up; peers ran in the same process tree on the same GPU.\n",
        s_env("gpu"),
        s_env("driver_version"),
        day.get(..10).unwrap_or(&day),
        s_env("git_sha"),
    );
    let rows = json["rows"].as_array().cloned().unwrap_or_default();
    // Charts: the run's SVGs whose names carry one of the workloads.
    let mut charts: Vec<String> = Vec::new();
    if let Ok(rd) = std::fs::read_dir(run_dir) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if let Some(stem) = name.strip_suffix(".svg")
                && workloads.iter().any(|w| chart_of(stem, w))
            {
                charts.push(name);
            }
        }
    }
    charts.sort();
    for w in workloads {
        let mine: Vec<&Value> = rows.iter().filter(|r| r["workload"] == **w).collect();
        if mine.is_empty() {
            continue;
        }
        let _ = write!(
            s,
            "\n#### Recorded results: {w}\n\n\
             | variant | backend | size | precision | regs | median | throughput | % of ceiling | rel. error | status |\n\
             |---|---|---|---|---|---|---|---|---|---|\n"
        );
        for r in mine {
            let st = |k: &str| r[k].as_str().unwrap_or("").to_string();
            let status = match r["status"]["kind"].as_str().unwrap_or("") {
                "ok" => "ok".to_string(),
                k => format!("{k}: {}", r["status"]["detail"].as_str().unwrap_or("")),
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                cell(&st("variant")),
                st("backend"),
                cell(&st("size")),
                cell(&st("precision")),
                r["registers"]
                    .as_u64()
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
                r["timing"]["median_ms"]
                    .as_f64()
                    .map(ms)
                    .unwrap_or_default(),
                r["throughput"]
                    .as_f64()
                    .map(|t| format!("{t:.1} {}", st("unit")))
                    .unwrap_or_default(),
                r["pct_of_ceiling"]
                    .as_f64()
                    .map(|p| format!("{p:.1}"))
                    .unwrap_or_default(),
                r["rel_err"]
                    .as_f64()
                    .map(|e| format!("{e:.1e}"))
                    .unwrap_or_default(),
                cell(&status),
            );
        }
        let mine_charts: Vec<&String> = charts
            .iter()
            .filter(|c| chart_of(c.trim_end_matches(".svg"), w))
            .collect();
        if !mine_charts.is_empty() {
            s.push('\n');
            for c in mine_charts {
                std::fs::copy(run_dir.join(c), charts_dir.join(c))
                    .with_context(|| format!("copying chart {c}"))?;
                let _ = writeln!(
                    s,
                    "![{}](../generated/charts/{chapter}/{c})\n",
                    c.trim_end_matches(".svg")
                );
            }
        }
    }
    let path = gen_dir.join(format!("{chapter}.md"));
    std::fs::write(&path, s).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Whether a chart's file stem (`ladder-poisson-2000x2000-f32`) belongs to
/// workload `w`: `poisson-mg-...` is not a `poisson` chart.
fn chart_of(stem: &str, w: &str) -> bool {
    ["ladder-", "peers-", "scaling-", "convergence-"]
        .iter()
        .filter_map(|p| stem.strip_prefix(p))
        .any(|rest| {
            (rest == w || rest.starts_with(&format!("{w}-")))
                && !CHAPTERS.iter().flat_map(|(_, ws)| ws.iter()).any(|o| {
                    o.len() > w.len()
                        && o.starts_with(w)
                        && (rest == *o || rest.starts_with(&format!("{o}-")))
                })
        })
}

/// Writes a page that lists the current runs of topics without bench rows.
fn write_topic_page(chapter: &str, topics: &[&str], runs: &[Run]) -> Result<()> {
    let mut s = String::from(
        "<!-- Generated by `cargo xtask book` from docs/results/*/index.toml; do not edit. -->\n\n\
         | run | date | device | what it measured |\n|---|---|---|---|\n",
    );
    let mut n = 0;
    for r in runs.iter().rev() {
        if r.superseded_by.is_empty() && r.topics.iter().any(|t| topics.contains(&t.as_str())) {
            let _ = writeln!(
                s,
                "| [{n}]({REPO_URL}/blob/main/docs/results/{n}/README.md) | {} | {} | {} |",
                r.day(),
                cell(&r.gpu),
                cell(&r.measured),
                n = r.name
            );
            n += 1;
        }
    }
    if n == 0 {
        bail!(
            "no current run covers the topics {topics:?} of the book's `{chapter}` page: a results folder's index.toml must list one"
        );
    }
    let dir = book_src().join("generated");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(format!("{chapter}.md")), s)?;
    Ok(())
}

/// Regenerates every generated page from the current runs of the index.
fn generate_pages() -> Result<usize> {
    let runs = load_runs()?;
    let charts = book_src().join("generated/charts");
    if charts.is_dir() {
        std::fs::remove_dir_all(&charts)
            .with_context(|| format!("clearing {}", charts.display()))?;
    }
    let mut n = 0;
    for (chapter, workloads) in CHAPTERS {
        // The newest current run with rows of these workloads.
        let mut found = None;
        for r in runs.iter().rev() {
            if !r.superseded_by.is_empty()
                || !workloads.iter().any(|w| r.topics.iter().any(|t| t == w))
            {
                continue;
            }
            let Some(p) = &r.results else { continue };
            let json = read_json(p)?;
            let has = json["rows"].as_array().is_some_and(|rows| {
                rows.iter()
                    .any(|x| workloads.iter().any(|w| x["workload"] == **w))
            });
            if has {
                found = Some((p.clone(), json));
                break;
            }
        }
        let Some((p, json)) = found else {
            bail!(
                "no current run in docs/results has results.json rows of {workloads:?} for the book's `{chapter}` chapter"
            );
        };
        write_generated_page(chapter, workloads, &p, &json)?;
        n += 1;
    }
    for (chapter, topics) in CHAPTER_TOPICS {
        write_topic_page(chapter, topics, &runs)?;
        n += 1;
    }
    Ok(n)
}

// ---------------------------------------------------------------------------
// Link checking
// ---------------------------------------------------------------------------

/// `text` with each `{{#include path}}` replaced by that file's text (paths
/// relative to `dir`), as mdBook does before rendering.
fn expand_includes(text: &str, dir: &Path, depth: usize) -> Result<String> {
    if depth > 8 {
        bail!(
            "{{{{#include}}}} nested more than 8 deep under {}",
            dir.display()
        );
    }
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("{{#include ") {
        out.push_str(&rest[..i]);
        let after = &rest[i + "{{#include ".len()..];
        let Some(end) = after.find("}}") else {
            bail!("an unterminated {{{{#include under {}", dir.display());
        };
        let target = after[..end].trim();
        // `file.md:anchor` or `file.md:1:20` select parts; the whole file
        // is enough for links and headings.
        let file = target.split(':').next().unwrap_or(target);
        let path = dir.join(file);
        let inner = std::fs::read_to_string(&path)
            .with_context(|| format!("{{{{#include {target}}}}}: reading {}", path.display()))?;
        let inner_dir = path.parent().unwrap_or(dir).to_path_buf();
        out.push_str(&expand_includes(&inner, &inner_dir, depth + 1)?);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The lines of `text` outside fenced code blocks, with their numbers.
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fence: Option<String> = None;
    for (n, l) in text.lines().enumerate() {
        let t = l.trim_start();
        if let Some(f) = &fence {
            if t.starts_with(f.as_str())
                && t.trim_end().chars().all(|c| c == f.as_bytes()[0] as char)
            {
                fence = None;
            }
            continue;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            let ch = t.as_bytes()[0] as char;
            let len = t.chars().take_while(|c| *c == ch).count();
            fence = Some(std::iter::repeat_n(ch, len).collect());
            continue;
        }
        // Inline code spans hold no links.
        let mut line = String::new();
        let mut in_code = false;
        for c in l.chars() {
            if c == '`' {
                in_code = !in_code;
                line.push(' ');
            } else if !in_code {
                line.push(c);
            } else {
                line.push(' ');
            }
        }
        out.push((n + 1, line));
    }
    out
}

/// The heading ids of a Markdown text, as mdBook numbers duplicates.
fn heading_ids(text: &str) -> HashSet<String> {
    let mut used = HashSet::new();
    let mut fence = false;
    for l in text.lines() {
        let t = l.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        let hashes = t.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !t[hashes..].starts_with(' ') {
            continue;
        }
        let mut h = t[hashes..].trim().trim_end_matches('#').trim().to_string();
        if let Some(i) = h.find("{#")
            && h.ends_with('}')
        {
            used.insert(h[i + 2..h.len() - 1].to_string());
            continue;
        }
        h = link_texts(&h).replace(['`', '*'], "");
        let id = heading_id(&h);
        let mut unique = id.clone();
        let mut k = 1;
        while !used.insert(unique.clone()) {
            unique = format!("{id}-{k}");
            k += 1;
        }
    }
    used
}

/// `[text](url)` made `text`.
fn link_texts(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('[') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(j) = after.find("](")
            && let Some(k) = after[j + 2..].find(')')
        {
            out.push_str(&after[..j]);
            rest = &after[j + 2 + k + 1..];
        } else {
            out.push('[');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The link targets of a Markdown text (inline links, images, reference
/// definitions and HTML `href`/`src`), with line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, l) in prose_lines(text) {
        let mut rest = l.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let mut depth = 0;
            let mut end = None;
            for (j, c) in after.char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' if depth == 0 => {
                        end = Some(j);
                        break;
                    }
                    ')' => depth -= 1,
                    _ => {}
                }
            }
            let Some(end) = end else { break };
            let target = after[..end].split_whitespace().next().unwrap_or("");
            let target = target.trim_start_matches('<').trim_end_matches('>');
            out.push((n, target.to_string()));
            rest = &after[end..];
        }
        let t = l.trim_start();
        if t.starts_with('[')
            && let Some(i) = t.find("]: ")
            && !t[1..i].contains(']')
        {
            out.push((
                n,
                t[i + 3..]
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .to_string(),
            ));
        }
        for attr in ["href=\"", "src=\""] {
            let mut r = l.as_str();
            while let Some(i) = r.find(attr) {
                let after = &r[i + attr.len()..];
                let Some(e) = after.find('"') else { break };
                out.push((n, after[..e].to_string()));
                r = &after[e..];
            }
        }
    }
    out
}

/// How a Markdown file's links are judged.
#[derive(Debug, Clone, Copy, PartialEq)]
enum LinkScope {
    /// A page of the book: relative links must stay inside `docs/book/src`.
    Book,
    /// A page read on the forge (README, results): any repository file.
    Repo,
}

/// Checks every link of `file`; returns one message per broken link.
fn check_file_links(
    file: &Path,
    scope: LinkScope,
    headings: &mut HashMap<PathBuf, HashSet<String>>,
) -> Result<Vec<String>> {
    let root = root();
    let src = book_src();
    let dir = file.parent().unwrap_or(&root).to_path_buf();
    let raw =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let text = expand_includes(&raw, &dir, 0)?;
    let mut errors = Vec::new();
    let shown = file
        .strip_prefix(&root)
        .unwrap_or(file)
        .display()
        .to_string();
    let mut ids_of = |path: &Path| -> Result<HashSet<String>> {
        if let Some(h) = headings.get(path) {
            return Ok(h.clone());
        }
        let t = std::fs::read_to_string(path)?;
        let t = expand_includes(&t, path.parent().unwrap_or(&root), 0)?;
        let ids = heading_ids(&t);
        headings.insert(path.to_path_buf(), ids.clone());
        Ok(ids)
    };
    for (line, target) in links(&text) {
        let here = format!("{shown}:{line}: `{target}`");
        if target.is_empty() {
            errors.push(format!("{here}: empty link"));
            continue;
        }
        let (path_part, anchor) = match target.split_once('#') {
            Some((p, a)) => (p.to_string(), Some(a.to_string())),
            None => (target.clone(), None),
        };
        let repo_prefix_blob = format!("{REPO_URL}/blob/main/");
        let repo_prefix_tree = format!("{REPO_URL}/tree/main/");
        let resolved: PathBuf = if let Some(p) = path_part
            .strip_prefix(&repo_prefix_blob)
            .or_else(|| path_part.strip_prefix(&repo_prefix_tree))
        {
            let p = root.join(p.trim_end_matches('/'));
            if !p.exists() {
                errors.push(format!(
                    "{here}: {} does not exist in the repository",
                    p.strip_prefix(&root).unwrap_or(&p).display()
                ));
                continue;
            }
            p
        } else if path_part.contains("://") || path_part.starts_with("mailto:") {
            continue;
        } else if path_part.is_empty() {
            file.to_path_buf()
        } else {
            if path_part.starts_with('/') {
                errors.push(format!("{here}: absolute paths do not resolve on the forge or in the book; use a relative link"));
                continue;
            }
            let p = normalize(&dir.join(&path_part));
            if !p.exists() {
                errors.push(format!(
                    "{here}: {} does not exist",
                    p.strip_prefix(&root).unwrap_or(&p).display()
                ));
                continue;
            }
            if scope == LinkScope::Book && !p.starts_with(&src) {
                let rel = p.strip_prefix(&root).unwrap_or(&p).display().to_string();
                errors.push(format!(
                    "{here}: leaves the book, so the rendered book cannot follow it; link {REPO_URL}/blob/main/{rel} instead"
                ));
                continue;
            }
            p
        };
        if let Some(a) = anchor
            && resolved.extension().is_some_and(|e| e == "md")
            && resolved.is_file()
            && !ids_of(&resolved)?.contains(&a)
        {
            errors.push(format!(
                "{here}: no heading of {} has the id `{a}`",
                resolved.strip_prefix(&root).unwrap_or(&resolved).display()
            ));
        }
    }
    Ok(errors)
}

fn md_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let p = e?.path();
        if p.is_dir() {
            md_files(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p);
        }
    }
    Ok(())
}

/// Checks the links of the book, the README and the results index.
fn check_links() -> Result<usize> {
    let root = root();
    let mut files = Vec::new();
    md_files(&book_src(), &mut files)?;
    files.sort();
    let mut headings = HashMap::new();
    let mut errors = Vec::new();
    let mut n = 0;
    // Every chapter of SUMMARY.md must exist; every page must be reachable.
    let summary = book_src().join("SUMMARY.md");
    let summary_text = std::fs::read_to_string(&summary)
        .with_context(|| format!("reading {}", summary.display()))?;
    let listed: HashSet<PathBuf> = links(&summary_text)
        .into_iter()
        .map(|(_, t)| normalize(&book_src().join(t)))
        .collect();
    for f in &files {
        let rel = f.strip_prefix(book_src()).unwrap_or(f);
        let generated = rel.starts_with("generated");
        if !generated && f != &summary && !listed.contains(f) {
            errors.push(format!(
                "{}: not listed in docs/book/src/SUMMARY.md",
                f.strip_prefix(&root).unwrap_or(f).display()
            ));
        }
        errors.extend(check_file_links(f, LinkScope::Book, &mut headings)?);
        n += 1;
    }
    for f in [root.join("README.md"), root.join("docs/results/README.md")] {
        if f.is_file() {
            errors.extend(check_file_links(&f, LinkScope::Repo, &mut headings)?);
            n += 1;
        }
    }
    if !errors.is_empty() {
        bail!(
            "{} broken link(s):\n  {}",
            errors.len(),
            errors.join("\n  ")
        );
    }
    Ok(n)
}

/// `cargo xtask book`: regenerates the book's generated pages from the
/// current runs of `docs/results`, checks every link of the book, the README
/// and the results index, and (unless `check_only`) builds the book under
/// `docs/book` with mdBook into `out` (default `target/book`).
pub(crate) fn book(opts: &BookOpts) -> Result<()> {
    let pages = generate_pages()?;
    let files = check_links()?;
    println!("book: {pages} generated page(s) written; links of {files} Markdown file(s) resolve");
    if opts.check_only {
        return Ok(());
    }
    let out = opts
        .out
        .clone()
        .unwrap_or_else(|| root().join("target/book"));
    let version = Command::new("mdbook").arg("--version").output();
    let Ok(version) = version else {
        bail!(
            "mdbook is not on PATH: install it with `cargo install mdbook --locked --version {MDBOOK_VERSION}` (or check the links alone with `cargo xtask book --check-links`)"
        );
    };
    let v = String::from_utf8_lossy(&version.stdout).trim().to_string();
    if !v.contains(MDBOOK_VERSION) {
        eprintln!("note: the book is written for mdbook {MDBOOK_VERSION}; found `{v}`");
    }
    let st = Command::new("mdbook")
        .arg("build")
        .arg(root().join("docs/book"))
        .arg("-d")
        .arg(&out)
        .status()
        .context("running mdbook build")?;
    if !st.success() {
        bail!("mdbook build docs/book failed with {st}");
    }
    println!("book: {}", out.join("index.html").display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_subset_parses_and_rejects() {
        let p = Path::new("index.toml");
        let m = parse_index_toml(
            "# c\nmeasured = \"a \\\"b\\\"\"\ntopics = [\"x\", \"y\"] # t\n",
            p,
        )
        .unwrap();
        assert_eq!(m["measured"], TomlValue::Str("a \"b\"".into()));
        assert_eq!(m["topics"], TomlValue::List(vec!["x".into(), "y".into()]));
        assert!(parse_index_toml("a = b", p).is_err());
        assert!(parse_index_toml("a = \"b", p).is_err());
        assert!(parse_index_toml("a = [\"b\" \"c\"]", p).is_err());
        assert!(parse_index_toml("a = \"b\"\na = \"c\"", p).is_err());
    }

    #[test]
    fn heading_ids_follow_mdbook() {
        let ids = heading_ids(
            "# The `launch!` macro\n## matmul — SGEMM ladder\n## A\n## A\n```\n# not\n```\n## [Link](x.md) text\n",
        );
        for id in [
            "the-launch-macro",
            "matmul--sgemm-ladder",
            "a",
            "a-1",
            "link-text",
        ] {
            assert!(ids.contains(id), "{id} missing from {ids:?}");
        }
        assert!(!ids.contains("not"));
    }

    #[test]
    fn links_skip_code() {
        let l = links(
            "a [x](y.md#z) `[no](no.md)`\n```\n[no](no.md)\n```\n![i](c.svg) <img src=\"d.png\">\n[r]: e.md\n",
        );
        let t: Vec<&str> = l.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(t, ["y.md#z", "c.svg", "d.png", "e.md"]);
    }

    #[test]
    fn readme_pairs_keep_only_checked_peers() {
        let row = |backend: &str, variant: &str, ms: f64, err: Option<f64>, kind: &str| {
            serde_json::json!({
                "workload": "lomb-scargle", "size": "S", "precision": "f32",
                "backend": backend, "variant": variant,
                "timing": {"median_ms": ms}, "rel_err": err, "status": {"kind": kind}
            })
        };
        let rows = vec![
            row("gpu", "1 a", 2.0, Some(1e-6), "ok"),
            row("gpu", "2 b", 1.0, Some(1e-6), "inaccurate"),
            row("nifty-ls", "fast but wrong", 0.5, Some(0.36), "ok"),
            row("cupy", "right", 3.0, Some(1e-6), "ok"),
        ];
        let p = pick("lomb-scargle", "S", F32, &[], &[]);
        let (o, om) = fastest(&rows, &p, false, 1e-5).unwrap();
        assert_eq!((o["variant"].as_str().unwrap(), om), ("1 a", 2.0));
        let (q, _) = fastest(&rows, &p, true, 1e-5).unwrap();
        assert_eq!(q["backend"], "cupy");
    }

    /// The committed index is what the run folders give (and every folder
    /// has its index.toml and README).
    #[test]
    fn results_index_is_current() {
        results_index(true).unwrap();
    }

    /// Every link of the book, the README and the index resolves.
    #[test]
    fn book_links_resolve() {
        book(&BookOpts {
            check_only: true,
            out: None,
        })
        .unwrap();
    }
}
