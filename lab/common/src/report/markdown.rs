//! The Markdown pages of a run: `report.md`, the summary (one line per
//! workload, then the environment), `summary.md` (the summary table alone,
//! for the README), and one page per workload (`<workload>.md`: its
//! problems, every row, its peers' rows, its charts). Every link is a file
//! name in the run's folder.

use super::charts::Chart;
use super::compare::{Comparison, comparisons, failed_checks, headline};
use super::group::time_ms;
use super::row::Row;
use super::run::{Run, Section};
use super::table::{cell, table};
use super::units::{fmt_factor, fmt_throughput, fmt_time};

/// Names a page may not take: the run's own files.
const RESERVED: [&str; 5] = ["report", "summary", "results", "readme", "index"];

/// The file of a section's page: `attention.md`; a name that is one of the
/// run's own files gets a prefix (`workload-report.md`).
pub fn page_file(section: &str) -> String {
    let mut s = String::new();
    for c in section.chars() {
        if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
            s.push(c.to_ascii_lowercase());
        } else if !s.ends_with('-') {
            s.push('-');
        }
    }
    let s = s.trim_matches(['-', '.']).to_string();
    if s.is_empty() || RESERVED.contains(&s.as_str()) {
        format!("workload-{s}.md")
    } else {
        format!("{s}.md")
    }
}

/// The workloads of a section: its name and its rows'.
pub(crate) fn section_workloads(s: &Section) -> Vec<&str> {
    let mut w = vec![s.name.as_str()];
    for r in &s.rows {
        if !w.contains(&r.workload.as_str()) {
            w.push(&r.workload);
        }
    }
    w
}

/// A row's name with its framework where the name does not say it.
fn who(r: &Row) -> String {
    if r.backend == "gpu" || r.variant.to_lowercase().contains(&r.backend.to_lowercase()) {
        r.variant.clone()
    } else {
        format!("{} ({})", r.variant, r.backend)
    }
}

/// A row's time and throughput: `3.495 ms · 629.2 TFLOP/s`.
fn figure(r: &Row) -> String {
    let mut s = time_ms(r).map(fmt_time).unwrap_or_default();
    if let Some(t) = r.throughput.filter(|t| t.is_finite()) {
        s.push_str(&format!(" · {}", fmt_throughput(t, &r.unit)));
    }
    s
}

/// One line of a comparison, in cells: problem, best rung, its figure,
/// best peer, its figure, speed-up over the peer, chart file (if any).
pub(crate) struct Line {
    /// The problem's label.
    pub problem: String,
    /// Best Rust rung, or why there is none.
    pub rung: String,
    /// Its time and throughput.
    pub rung_figure: String,
    /// Best peer of the same problem, or "none".
    pub peer: String,
    /// Its time and throughput.
    pub peer_figure: String,
    /// `1.04× (Rust faster)`, or empty.
    pub ratio: String,
    /// The chart of the problem (`ladder-….png`), if one was drawn.
    pub chart: Option<String>,
}

pub(crate) fn line(rows: &[Row], c: &Comparison, charts: &[Chart]) -> Line {
    let ratio = c.ratio(rows).map(|x| {
        format!(
            "{} ({})",
            fmt_factor(x),
            if x >= 1.0 {
                "Rust faster"
            } else {
                "peer faster"
            }
        )
    });
    Line {
        problem: c.group.label(),
        rung: c
            .best
            .map_or("no checked Rust GPU rung".into(), |b| who(&rows[b])),
        rung_figure: c.best.map(|b| figure(&rows[b])).unwrap_or_default(),
        peer: c.peer.map_or("none".into(), |p| who(&rows[p])),
        peer_figure: c.peer.map(|p| figure(&rows[p])).unwrap_or_default(),
        ratio: ratio.unwrap_or_default(),
        chart: charts
            .iter()
            .find(|ch| ch.problem.as_ref() == Some(&c.group.problem))
            .map(|ch| format!("{}.png", ch.name)),
    }
}

/// What a section's rows' checks say: `ok`, or `1 FAILED, 2 INACCURATE`.
pub(crate) fn checks(rows: &[Row], workloads: &[&str]) -> String {
    let (failed, inaccurate) = failed_checks(rows, workloads);
    let mut parts = Vec::new();
    if failed > 0 {
        parts.push(format!("{failed} FAILED"));
    }
    if inaccurate > 0 {
        parts.push(format!("{inaccurate} INACCURATE"));
    }
    if parts.is_empty() {
        "all passed".into()
    } else {
        parts.join(", ")
    }
}

/// One summary line per section: (section, its headline line if any,
/// its checks).
pub(crate) fn summary_lines(
    run: &Run,
    rows: &[Row],
    cs: &[Comparison],
    charts: &[Chart],
) -> Vec<(String, Option<Line>, String)> {
    run.sections
        .iter()
        .map(|s| {
            let ws = section_workloads(s);
            let l = headline(rows, cs, &ws).map(|c| line(rows, c, charts));
            (s.name.clone(), l, checks(&s.rows, &ws))
        })
        .collect()
}

const SUMMARY_HEAD: &str = "| workload | problem | best Rust rung | its median | best peer on this problem | its median | speed-up over the peer | chart | checks |\n|---|---|---|---|---|---|---|---|---|\n";

/// The summary table: one line per workload at its headline problem (a
/// problem with a peer first, then the largest, then the one whose Rust
/// rows ran first), linking its page and the problem's ladder chart. The
/// links are file names in the run's folder.
pub fn summary_table(run: &Run, charts: &[Chart]) -> String {
    let rows = run.rows();
    let cs = comparisons(&rows);
    let mut s = String::from(SUMMARY_HEAD);
    for (name, l, checks) in summary_lines(run, &rows, &cs, charts) {
        let page = format!("[{}]({})", cell(&name), page_file(&name));
        match l {
            Some(l) => s.push_str(&format!(
                "| {page} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                cell(&l.problem),
                cell(&l.rung),
                l.rung_figure,
                cell(&l.peer),
                l.peer_figure,
                l.ratio,
                l.chart
                    .map(|c| format!("[ladder]({c})"))
                    .unwrap_or_default(),
                checks
            )),
            None => s.push_str(&format!(
                "| {page} | | no checked Rust GPU rung | | | | | | {checks} |\n"
            )),
        }
    }
    s
}

/// What the summary's columns mean (under the table in `report.md`).
pub(crate) const SUMMARY_NOTE: &str = "One line per workload, at one problem: of its problems with a checked Rust GPU rung, one with a peer, the largest (on a tie, the one whose Rust rows ran first). A problem is a shape, its mask or other qualifiers (`causal`), a precision, and a solve's tolerance; rows are compared only with rows of the same problem. The best rung and the best peer have the least median time among the rows that passed their check (an INACCURATE or FAILED row is never best). Speed-up over the peer: the peer's median time divided by the best rung's. Every problem of a workload is on its page.";

fn md_chart(c: &Chart) -> String {
    format!(
        "![{}]({n}.png)\n\n*{}* ([SVG]({n}.svg))\n\n",
        c.figure.title.replace(['[', ']'], ""),
        c.caption,
        n = c.name
    )
}

/// `report.md`: the summary table and what it means, the environment and
/// ceilings, the peers of no workload, and the whole run's charts.
pub fn markdown(run: &Run, charts: &[Chart]) -> String {
    let mut md = String::from("# ptxlab benchmark\n\n");
    md.push_str(&summary_table(run, charts));
    md.push_str(&format!("\n{SUMMARY_NOTE}\n\n"));
    md.push_str(
        "The same run as one page, charts and sortable tables: [report.html](report.html); the data: [results.json](results.json), [results.csv](results.csv).\n\n",
    );
    md.push_str(&format!("## Environment\n\n{}\n", run.env.markdown()));
    if let Some(line) = run.ceilings.markdown() {
        md.push_str(&line);
    }
    let stray: Vec<Row> = run.stray_peers().into_iter().cloned().collect();
    if !stray.is_empty() {
        md.push_str(&format!(
            "## Peers of no workload of this run\n\n{}\n",
            table(&stray)
        ));
    }
    let whole: Vec<&Chart> = charts.iter().filter(|c| c.workload.is_empty()).collect();
    if !whole.is_empty() {
        md.push_str("## The whole run\n\n");
        for ch in whole {
            md.push_str(&md_chart(ch));
        }
    }
    md
}

/// A workload's page: its problems (best rung, best peer and ratio each),
/// its rows, its peers' rows, and its charts.
pub fn workload_page(run: &Run, section: &Section, charts: &[Chart]) -> String {
    let rows = run.rows();
    let cs = comparisons(&rows);
    let ws = section_workloads(section);
    let mut md = format!("# {}", section.name);
    if !section.about.is_empty() {
        md.push_str(&format!(" — {}", section.about));
    }
    md.push_str(&format!(
        "\n\n[The summary](report.md) · this workload in [report.html](report.html#{}) · checks: {}\n\n",
        html_anchor(&section.name),
        checks(&section.rows, &ws)
    ));
    let mine: Vec<&Comparison> = cs
        .iter()
        .filter(|c| ws.contains(&c.group.workload()))
        .collect();
    if !mine.is_empty() {
        md.push_str("## Problems\n\nEach problem's best checked Rust GPU rung against its best checked peer of the same problem; speed-up over the peer: the peer's median time divided by the rung's.\n\n| problem | best Rust rung | its median | best peer on this problem | its median | speed-up over the peer | chart |\n|---|---|---|---|---|---|---|\n");
        for c in mine {
            let l = line(&rows, c, charts);
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                cell(&l.problem),
                cell(&l.rung),
                l.rung_figure,
                cell(&l.peer),
                l.peer_figure,
                l.ratio,
                l.chart
                    .map(|c| format!("[ladder]({c})"))
                    .unwrap_or_default()
            ));
        }
        md.push('\n');
    }
    md.push_str(&format!("## Rows\n\n{}\n", table(&section.rows)));
    let peers: Vec<Row> = run.peers_of(section).into_iter().cloned().collect();
    if !peers.is_empty() {
        md.push_str(&format!("## Peers (same run)\n\n{}\n", table(&peers)));
    }
    let shown: Vec<&Chart> = charts
        .iter()
        .filter(|ch| ws.contains(&ch.workload.as_str()))
        .collect();
    if !shown.is_empty() {
        md.push_str("## Charts\n\n");
        for ch in shown {
            md.push_str(&md_chart(ch));
        }
    }
    md
}

/// The anchor of a section in `report.html`.
pub(crate) fn html_anchor(name: &str) -> String {
    format!(
        "w-{}",
        name.replace(|c: char| !c.is_ascii_alphanumeric(), "-")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_never_take_the_name_of_a_file_of_the_run() {
        assert_eq!(page_file("attention"), "attention.md");
        assert_eq!(page_file("poisson-mg"), "poisson-mg.md");
        assert_eq!(page_file("report"), "workload-report.md");
        assert_eq!(page_file("Summary"), "workload-summary.md");
        assert_eq!(page_file("a/b c"), "a-b-c.md");
    }
}
