//! Writing a run's report: `report.md`, `results.json`, `results.csv` and
//! every plot (SVG and PNG) into one folder.

use super::figure::Figure;
use super::plot::{bar_chart, convergence, line_chart, roofline};
use super::row::{Ceilings, Row, Status};
use super::table::Environment;

/// Writes every plot of a run into `dir` (`<name>.svg` and `<name>.png`);
/// returns the file names written.
fn write_plots(
    dir: &std::path::Path,
    rows: &[Row],
    copy_gbs: Option<f64>,
    fp32_flops: Option<f64>,
) -> crate::Result<Vec<String>> {
    let mut figs: Vec<(String, Figure)> = Vec::new();
    let mut workloads: Vec<&str> = rows.iter().map(|r| r.workload.as_str()).collect();
    workloads.dedup();
    let mut seen = std::collections::BTreeSet::new();
    for w in workloads {
        if !seen.insert(w) {
            continue;
        }
        let rs: Vec<Row> = rows.iter().filter(|r| r.workload == w).cloned().collect();
        if let Some(f) = bar_chart(w, &rs) {
            figs.push((format!("bars-{w}"), f));
        }
    }
    if let (Some(c), Some(p)) = (copy_gbs, fp32_flops)
        && let Some(f) = roofline(rows, c, p / 1e9)
    {
        figs.push(("roofline".into(), f));
    }
    let sweep: Vec<(f64, f64)> = rows
        .iter()
        .filter(|r| {
            r.workload == "poisson"
                && r.variant.starts_with("CPU rayon ")
                && r.variant.ends_with(" threads")
        })
        .filter_map(|r| {
            let n: f64 = r
                .variant
                .trim_start_matches("CPU rayon ")
                .trim_end_matches(" threads")
                .parse()
                .ok()?;
            Some((n, r.throughput?))
        })
        .collect();
    if let Some(f) = line_chart("Poisson CPU thread sweep", "threads", "GCells/s", &sweep) {
        figs.push(("poisson-cpu-sweep".into(), f));
    }
    // One convergence chart per workload and size, of every row with a history.
    let mut groups: Vec<(String, String)> = Vec::new();
    for r in rows.iter().filter(|r| !r.history.is_empty()) {
        let key = (r.workload.clone(), r.size.clone());
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    for (w, size) in groups {
        let series: Vec<(String, Vec<(f64, f64)>)> = rows
            .iter()
            .filter(|r| r.workload == w && r.size == size && !r.history.is_empty())
            .map(|r| {
                (
                    format!("{} ({}, {})", r.variant, r.backend, r.precision),
                    r.history.clone(),
                )
            })
            .collect();
        let title = format!("{w} {size}: relative residual against time");
        if let Some(f) = convergence(&title, &series) {
            figs.push((format!("convergence-{w}-{size}"), f));
        }
    }
    let mut names = Vec::new();
    for (name, f) in figs {
        for (ext, bytes) in [("svg", f.svg().into_bytes()), ("png", f.png())] {
            let p = dir.join(format!("{name}.{ext}"));
            std::fs::write(&p, bytes).map_err(|e| crate::Error::File {
                path: p.display().to_string(),
                detail: e.to_string(),
            })?;
            names.push(format!("{name}.{ext}"));
        }
    }
    Ok(names)
}

/// Writes `report.md`, `results.json` and `results.csv` into `dir`, and points
/// `latest` (a sibling symlink) at it.
pub fn write_outputs(
    dir: &std::path::Path,
    env: &Environment,
    ceilings: &Ceilings,
    rows: &[Row],
    markdown: &str,
) -> crate::Result<()> {
    let io = |p: &std::path::Path, e: std::io::Error| crate::Error::File {
        path: p.display().to_string(),
        detail: e.to_string(),
    };
    let plots = write_plots(dir, rows, ceilings.copy_gbs, ceilings.fp32_flops)?;
    let mut markdown = markdown.to_string();
    if !plots.is_empty() {
        markdown.push_str("## Plots\n\n");
        for p in plots.iter().filter(|p| p.ends_with(".svg")) {
            markdown.push_str(&format!("![{p}]({p})\n\n"));
        }
    }
    let md = dir.join("report.md");
    std::fs::write(&md, &markdown).map_err(|e| io(&md, e))?;
    let json = serde_json::json!({
        "schema": "ptxlab-results/1",
        "environment": env,
        "ceilings": ceilings,
        "rows": rows,
    });
    let jp = dir.join("results.json");
    std::fs::write(&jp, serde_json::to_string_pretty(&json).unwrap_or_default())
        .map_err(|e| io(&jp, e))?;
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
    let cp = dir.join("results.csv");
    std::fs::write(&cp, csv).map_err(|e| io(&cp, e))?;
    #[cfg(unix)]
    if let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) {
        let link = parent.join("latest");
        let _ = std::fs::remove_file(&link);
        let _ = std::os::unix::fs::symlink(name, &link);
    }
    Ok(())
}
