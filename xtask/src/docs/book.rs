//! `cargo xtask book`: the generated pages, every link of the book, the
//! README and the results index checked, then mdBook.

use super::pages::generate_pages;
use super::{BookOpts, MDBOOK_VERSION, REPO_URL, book_src, heading_id, normalize};
use crate::util::root;
use anyhow::{Context, Result, bail};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `text` with each `{{#include path}}` replaced by that file's text (paths
/// relative to `dir`), as mdBook does before rendering.
pub(super) fn expand_includes(text: &str, dir: &Path, depth: usize) -> Result<String> {
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
pub(super) fn prose_lines(text: &str) -> Vec<(usize, String)> {
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
pub(super) fn heading_ids(text: &str) -> HashSet<String> {
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
pub(super) fn link_texts(s: &str) -> String {
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
pub(super) fn links(text: &str) -> Vec<(usize, String)> {
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
pub(super) enum LinkScope {
    /// A page of the book: relative links must stay inside `docs/book/src`.
    Book,
    /// A page read on the forge (README, results): any repository file.
    Repo,
}

/// Checks every link of `file`; returns one message per broken link.
pub(super) fn check_file_links(
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

pub(super) fn md_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
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
pub(super) fn check_links() -> Result<usize> {
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
