//! `summary.json`: every comparison of a run, for tools that show a run's
//! figures elsewhere (`cargo xtask build-and-bench --update-docs` writes the
//! README's table from it). The pairing is the report's own
//! ([`comparisons`]): each entry is one problem, its rows (every charted row
//! of that problem, a direct solve in each tolerance it reaches), its best
//! checked Rust GPU rung and its best checked peer.

use super::charts::Chart;
use super::compare::comparisons;
use super::group::time_ms;
use super::markdown::{page_file, section_workloads};
use super::problem::Problem;
use super::row::{Row, Status};
use super::run::Run;
use serde::Serialize;

/// The schema name `summary.json` carries.
pub const SUMMARY_SCHEMA: &str = "ptxlab-summary/1";

/// One row of a problem, as a summary entry lists it.
#[derive(Debug, Clone, Serialize)]
struct Member<'a> {
    variant: &'a str,
    backend: &'a str,
    size: &'a str,
    precision: &'a str,
    /// Median time (ms).
    median_ms: Option<f64>,
    /// Relative error (a solve's relative residual) as the row records it.
    rel_err: Option<f64>,
    /// `ok`, `failed`, `skipped` or `inaccurate`.
    status: &'static str,
}

/// One problem of a run.
#[derive(Debug, Clone, Serialize)]
struct Entry<'a> {
    workload: &'a str,
    problem: &'a Problem,
    /// The problem's label, as the report's tables print it.
    label: String,
    /// The report's page of the workload (`poisson-mg.md`).
    page: String,
    /// The problem's ladder chart (`ladder-….png`), when one was drawn.
    chart: Option<String>,
    /// The problem's rows, in run order.
    rows: Vec<Member<'a>>,
    /// Index into `rows` of the best checked Rust GPU rung.
    best: Option<usize>,
    /// Index into `rows` of the best checked peer.
    peer: Option<usize>,
    /// The peer's median time over the best rung's (above 1: Rust faster).
    ratio: Option<f64>,
}

fn status(s: &Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Failed(_) => "failed",
        Status::Skipped(_) => "skipped",
        Status::Inaccurate(_) => "inaccurate",
    }
}

/// `summary.json` of `run`: `{"schema", "comparisons": [...]}`, one entry
/// per problem with a Rust GPU rung or a peer, in order of first appearance.
pub fn summary_json(run: &Run, rows: &[Row], charts: &[Chart]) -> serde_json::Value {
    let cs = comparisons(rows);
    let page_of = |w: &str| {
        run.sections
            .iter()
            .find(|s| section_workloads(s).contains(&w))
            .map_or_else(|| page_file(w), |s| page_file(&s.name))
    };
    let entries: Vec<Entry> = cs
        .iter()
        .map(|c| {
            let at = |i: Option<usize>| i.and_then(|i| c.group.rows.iter().position(|&j| j == i));
            Entry {
                workload: c.group.workload(),
                problem: &c.group.problem,
                label: c.group.label(),
                page: page_of(c.group.workload()),
                chart: charts
                    .iter()
                    .find(|ch| ch.problem.as_ref() == Some(&c.group.problem))
                    .map(|ch| format!("{}.png", ch.name)),
                rows: c
                    .group
                    .rows
                    .iter()
                    .map(|&i| {
                        let r = &rows[i];
                        Member {
                            variant: &r.variant,
                            backend: &r.backend,
                            size: &r.size,
                            precision: &r.precision,
                            median_ms: time_ms(r),
                            rel_err: r.rel_err.filter(|e| e.is_finite()),
                            status: status(&r.status),
                        }
                    })
                    .collect(),
                best: at(c.best),
                peer: at(c.peer),
                ratio: c.ratio(rows),
            }
        })
        .collect();
    serde_json::json!({
        "schema": SUMMARY_SCHEMA,
        "comparisons": entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::group::tests::timed;
    use crate::report::run::Section;

    #[test]
    fn each_entry_is_one_problem_with_its_best_rung_and_peer() {
        let (nc, c) = ("B=4 H=16 S=8192 D=128", "B=4 H=16 S=8192 D=128 causal");
        let rust = vec![
            timed(nc, "gpu", "4 warp-specialised", 3.5),
            timed(c, "gpu", "5 causal tile skipping", 1.8),
        ];
        let peers = vec![
            timed(nc, "torch", "torch sdpa cuDNN", 3.3),
            timed(c, "torch", "torch sdpa cuDNN", 1.75),
        ];
        let run = Run {
            sections: vec![Section {
                name: "attention".into(),
                about: String::new(),
                rows: rust,
            }],
            peers,
            ..Run::default()
        };
        let rows = run.rows();
        let v = summary_json(&run, &rows, &[]);
        assert_eq!(v["schema"], SUMMARY_SCHEMA);
        let cs = v["comparisons"].as_array().unwrap();
        assert_eq!(cs.len(), 2);
        for e in cs {
            assert_eq!(e["page"], "attention.md");
            let members = e["rows"].as_array().unwrap();
            let size = |k: &str| members[e[k].as_u64().unwrap() as usize]["size"].clone();
            assert_eq!(size("best"), size("peer"), "two problems paired: {e}");
        }
        assert_eq!(cs[1]["problem"]["qualifiers"][0], "causal");
        let r = cs[1]["ratio"].as_f64().unwrap();
        assert!((r - 1.75 / 1.8).abs() < 1e-12, "{r}");
    }
}
