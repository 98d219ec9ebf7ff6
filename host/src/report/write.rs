//! Writing a run's report into one folder: `report.md`, `report.html`,
//! `results.json`, `results.csv`, and every chart as SVG and PNG.

use super::charts::{Chart, charts};
use super::html::html;
use super::row::{Row, Status};
use super::run::Run;
use super::table::table;

/// The files of a written report.
#[derive(Debug, Clone)]
pub struct Written {
    /// File names inside the folder, in writing order.
    pub files: Vec<String>,
    /// The charts drawn (names and captions).
    pub charts: Vec<(String, String)>,
}

fn md_chart(c: &Chart) -> String {
    format!(
        "![{}]({n}.png)\n\n*{}* ([SVG]({n}.svg))\n\n",
        c.figure.title.replace(['[', ']'], ""),
        c.caption,
        n = c.name
    )
}

/// The Markdown report: the environment block, then per workload its
/// table, its peers' table and its charts; the whole run's charts last.
pub fn markdown(run: &Run, charts: &[Chart]) -> String {
    let mut md = format!("# ptxlab benchmark\n\n{}\n", run.env.markdown());
    let c = &run.ceilings;
    if let Some(copy) = c.copy_gbs {
        md.push_str(&format!(
            "Ceilings measured in this run: device-to-device copy {copy:.0} GB/s (read + write)"
        ));
        if let Some(s) = c.sfu_per_s {
            md.push_str(&format!(", SFU {s:.2e} op/s"));
        }
        if let Some(f) = c.fp32_flops {
            md.push_str(&format!(", FP32 {:.1} TFLOP/s (from clock)", f / 1e12));
        }
        md.push_str(".\n\n");
    }
    md.push_str(
        "The same run as one page, charts and sortable tables: [report.html](report.html); the data: [results.json](results.json), [results.csv](results.csv).\n\n",
    );
    for s in &run.sections {
        md.push_str(&format!("## {}", s.name));
        if !s.about.is_empty() {
            md.push_str(&format!(" — {}", s.about));
        }
        md.push_str(&format!("\n\n{}\n", table(&s.rows)));
        let peers: Vec<Row> = run.peers_of(s).into_iter().cloned().collect();
        if !peers.is_empty() {
            md.push_str(&format!("Peers (same run):\n\n{}\n", table(&peers)));
        }
        let workloads: Vec<&str> = s.rows.iter().map(|r| r.workload.as_str()).collect();
        for ch in charts
            .iter()
            .filter(|ch| ch.workload == s.name || workloads.contains(&ch.workload.as_str()))
        {
            md.push_str(&md_chart(ch));
        }
    }
    let stray: Vec<Row> = run.stray_peers().into_iter().cloned().collect();
    if !stray.is_empty() {
        md.push_str(&format!(
            "## Python peers (same run)\n\n{}\n",
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

fn csv(rows: &[Row]) -> String {
    let mut csv = String::from(
        "workload,variant,backend,size,precision,registers,spills,first_ms,median_ms,min_ms,max_ms,reps,speedup,throughput,unit,pct_of_ceiling,rel_err,status\n",
    );
    let q = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    let o = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for r in rows {
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
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
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
            q(&status)
        ));
    }
    csv
}

/// Writes the report of `run` into `dir` (which must exist): the charts
/// (SVG and PNG), `report.md`, `report.html`, `results.json`,
/// `results.csv`. With `link_latest`, points `latest` (a sibling symlink)
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
    put("report.html", html(run, &charts).as_bytes())?;
    let json = serde_json::json!({
        "schema": "ptxlab-results/1",
        "environment": run.env,
        "ceilings": run.ceilings,
        "rows": rows,
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
