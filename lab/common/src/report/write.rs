//! Writing a run's report into one folder: `report.md` (the summary),
//! `summary.md` (its table alone), `summary.json` (every problem's best
//! rung and best peer), a page per workload (`<workload>.md`),
//! `report.html`, `results.json` (every row with its problem),
//! `results.csv`, and every chart as SVG and PNG.

use super::charts::charts;
use super::html::html;
use super::markdown::{markdown, page_file, summary_table, workload_page};
use super::problem::{problems, with_problems};
use super::row::{Row, Status};
use super::run::Run;
use super::summary::summary_json;

/// The files of a written report.
#[derive(Debug, Clone)]
pub struct Written {
    /// File names inside the folder, in writing order.
    pub files: Vec<String>,
    /// The charts drawn (names and captions).
    pub charts: Vec<(String, String)>,
}

fn csv(rows: &[Row]) -> String {
    let mut csv = String::from(
        "workload,variant,backend,size,precision,registers,spills,first_ms,median_ms,min_ms,max_ms,reps,speedup,throughput,unit,pct_of_ceiling,rel_err,status,problem\n",
    );
    let q = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    let o = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for (r, p) in rows.iter().zip(problems(rows)) {
        let (md, mn, mx, reps) = r
            .timing
            .as_ref()
            .map(|t| {
                (
                    Some(t.median_ms),
                    Some(t.min_ms),
                    Some(t.max_ms),
                    t.reps.to_string(),
                )
            })
            .unwrap_or((None, None, None, String::new()));
        let status = match &r.status {
            Status::Ok => "ok".to_string(),
            Status::Failed(d) => format!("FAILED: {d}"),
            Status::Skipped(d) => format!("skipped: {d}"),
            Status::Inaccurate(d) => format!("INACCURATE: {d}"),
        };
        csv.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            q(&r.workload),
            q(&r.variant),
            q(&r.backend),
            q(&r.size),
            q(&r.precision),
            r.registers.map(|v| v.to_string()).unwrap_or_default(),
            r.spills.map(|v| v.to_string()).unwrap_or_default(),
            o(r.first_ms),
            o(md),
            o(mn),
            o(mx),
            reps,
            o(r.speedup),
            o(r.throughput),
            q(&r.unit),
            o(r.pct_of_ceiling),
            o(r.rel_err),
            q(&status),
            q(&p.key())
        ));
    }
    csv
}

/// Writes the report of `run` into `dir` (which must exist): the charts
/// (SVG and PNG), `report.md`, `summary.md`, `summary.json`, a page per workload,
/// `report.html`, `results.json`, `results.csv`. With `link_latest`, points `latest` (a sibling symlink)
/// at `dir`.
pub fn write_outputs(
    dir: &std::path::Path,
    run: &Run,
    link_latest: bool,
) -> crate::Result<Written> {
    let mut files = Vec::new();
    let mut put = |name: &str, bytes: &[u8]| -> crate::Result<()> {
        let p = dir.join(name);
        std::fs::write(&p, bytes).map_err(|e| crate::Error::File {
            path: p.display().to_string(),
            detail: e.to_string(),
        })?;
        files.push(name.to_string());
        Ok(())
    };
    let rows = run.rows();
    let charts = charts(&rows, &run.ceilings);
    for c in &charts {
        put(&format!("{}.svg", c.name), c.figure.svg().as_bytes())?;
        put(&format!("{}.png", c.name), &c.figure.png())?;
    }
    put("report.md", markdown(run, &charts).as_bytes())?;
    put("summary.md", summary_table(run, &charts).as_bytes())?;
    put(
        "summary.json",
        serde_json::to_string_pretty(&summary_json(run, &rows, &charts))
            .unwrap_or_default()
            .as_bytes(),
    )?;
    for s in &run.sections {
        put(
            &page_file(&s.name),
            workload_page(run, s, &charts).as_bytes(),
        )?;
    }
    put("report.html", html(run, &charts).as_bytes())?;
    let json = serde_json::json!({
        "schema": "ptxlab-results/1",
        "environment": run.env,
        "ceilings": run.ceilings,
        "rows": with_problems(&rows),
    });
    put(
        "results.json",
        serde_json::to_string_pretty(&json)
            .unwrap_or_default()
            .as_bytes(),
    )?;
    put("results.csv", csv(&rows).as_bytes())?;
    #[cfg(unix)]
    if link_latest && let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) {
        let link = parent.join("latest");
        let _ = std::fs::remove_file(&link);
        let _ = std::os::unix::fs::symlink(name, &link);
    }
    Ok(Written {
        files,
        charts: charts.into_iter().map(|c| (c.name, c.caption)).collect(),
    })
}
