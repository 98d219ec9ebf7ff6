//! The recorded runs and their index (`cargo xtask results-index`): each
//! folder of `docs/results/` with its `index.toml`, and
//! `docs/results/README.md`, one line per run.

use super::{cell, read_json};
use crate::util::root;
use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One folder of `docs/results/`, with the facts of its `index.toml` and,
/// where it names one, its `results.json`.
#[derive(Debug, Clone)]
pub(super) struct Run {
    /// The folder's name, e.g. `2026-11-28-h100-final-bench`.
    pub(super) name: String,
    /// `YYYY-MM-DD[ HH:MM[:SS]]`: sorts in time order as a string.
    pub(super) when: String,
    pub(super) gpu: String,
    pub(super) driver: String,
    pub(super) commit: String,
    pub(super) measured: String,
    pub(super) topics: Vec<String>,
    /// The run's `results.json`, if it has one.
    pub(super) results: Option<PathBuf>,
    /// Newer runs on the same device type that cover its topics; empty for
    /// a current run.
    pub(super) superseded_by: Vec<String>,
}

impl Run {
    pub(super) fn day(&self) -> &str {
        self.when.get(..10).unwrap_or(&self.when)
    }
}

/// A value of the `index.toml` subset: a string or an array of strings.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum TomlValue {
    Str(String),
    List(Vec<String>),
}

/// Parses the subset of TOML that `index.toml` files use: comments, blank
/// lines and `key = "string"` / `key = ["a", "b"]` pairs on one line each.
pub(super) fn parse_index_toml(text: &str, path: &Path) -> Result<BTreeMap<String, TomlValue>> {
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

pub(super) const INDEX_KEYS: &[&str] = &[
    "date", "gpu", "driver", "commit", "command", "measured", "topics", "results",
];

/// Reads one run folder.
pub(super) fn load_run(dir: &Path) -> Result<Run> {
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
pub(super) fn load_runs() -> Result<Vec<Run>> {
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

pub(super) fn render_index(runs: &[Run]) -> String {
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
pub(super) fn code_hashes(text: &str) -> String {
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
