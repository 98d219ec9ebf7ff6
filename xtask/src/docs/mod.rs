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
//!
//! | file | what it holds |
//! |---|---|
//! | `results_index.rs` | the run folders (`index.toml`) and `docs/results/README.md` |
//! | `readme.rs` | the README's results table, from the report's `summary.json` |
//! | `pages.rs` | the book's generated pages |
//! | `book.rs` | `cargo xtask book`: link checks and mdBook |

mod book;
mod pages;
mod readme;
mod results_index;
#[cfg(test)]
mod tests;

pub(crate) use book::book;
pub(crate) use readme::update_docs;
pub(crate) use results_index::results_index;

use crate::util::root;
use anyhow::{Context, Result};
use serde_json::Value;
use std::path::{Component, Path, PathBuf};

/// The repository's public address: links from the book to files outside it.
pub(crate) const REPO_URL: &str = "https://github.com/ptxlab/ptxlab";
/// The mdBook release the book is built and checked with.
pub(crate) const MDBOOK_VERSION: &str = "0.5.4";

/// Options of `cargo xtask book`.
#[derive(Debug, Clone, Default)]
pub(crate) struct BookOpts {
    /// Only regenerate the generated pages and check the book's links (no
    /// mdBook run).
    pub check_only: bool,
    /// Where to write the rendered book (default `target/book`).
    pub out: Option<PathBuf>,
}

/// A table cell: no line breaks, no unescaped pipes.
pub(super) fn cell(s: &str) -> String {
    s.replace('\n', " ").replace('|', "\\|")
}

/// The book's sources.
pub(super) fn book_src() -> PathBuf {
    root().join("docs/book/src")
}

/// A duration in the unit that reads best.
pub(super) fn ms(m: f64) -> String {
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
pub(super) fn heading_id(text: &str) -> String {
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
pub(super) fn repo_relative(path: &Path) -> Result<String> {
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
pub(super) fn normalize(p: &Path) -> PathBuf {
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

pub(super) fn read_json(path: &Path) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// `docs/results/<run>` for a path inside a run folder.
pub(super) fn run_folder_of(rel: &str) -> String {
    let parts: Vec<&str> = rel.split('/').collect();
    if parts.len() >= 3 && parts[0] == "docs" && parts[1] == "results" {
        format!("docs/results/{}", parts[2])
    } else {
        rel.rsplit_once('/')
            .map(|(d, _)| d.to_string())
            .unwrap_or_default()
    }
}
