//! `build-and-bench` (the main job) and `--update-docs`.

use crate::ptx::build_ptx;
use crate::{cargo, root, run};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) fn build_and_bench(args: &[String]) -> Result<()> {
    if let Some(i) = args.iter().position(|a| a == "--update-docs") {
        let dir = args
            .get(i + 1)
            .filter(|a| !a.starts_with("--"))
            .map(PathBuf::from)
            .unwrap_or_else(|| root().join("docs/results/latest"));
        return update_docs(&dir);
    }
    eprintln!("[1/3] building kernels (PTX, cubins, resource report) ...");
    build_ptx(&[])?;
    eprintln!("[2/3] building ptxlab (release) ...");
    run(cargo().args(["build", "--quiet", "--release", "-p", "ptxlab"]))?;
    eprintln!("[3/3] checking and timing every workload ...");
    run(Command::new(root().join("target/release/ptxlab"))
        .current_dir(root())
        .arg("bench")
        .args(args))
}

/// Regenerates the results tables of `docs/workloads/*.md` between
/// `<!-- results:start -->` and `<!-- results:end -->` from a recorded run.
fn update_docs(dir: &Path) -> Result<()> {
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("results.json"))
            .with_context(|| format!("reading {}/results.json", dir.display()))?,
    )?;
    let rows = json["rows"].as_array().cloned().unwrap_or_default();
    let env = &json["environment"];
    let docs = root().join("docs/workloads");
    let mut n = 0;
    for entry in std::fs::read_dir(&docs)? {
        let path = entry?.path();
        let text = std::fs::read_to_string(&path)?;
        let (Some(a), Some(b)) = (
            text.find("<!-- results:start -->"),
            text.find("<!-- results:end -->"),
        ) else {
            continue;
        };
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let mine: Vec<&serde_json::Value> = rows
            .iter()
            .filter(|r| {
                let w = r["workload"].as_str().unwrap_or("");
                w == stem
                    || (stem == "primitives"
                        && matches!(w, "reduce" | "histogram" | "monte-carlo-pi"))
                    || stem.starts_with(w)
                    || w.starts_with(stem)
            })
            .collect();
        // A partial run (`--only`) leaves the other workloads' tables alone.
        if mine.is_empty() {
            continue;
        }
        // A joined run (`ptxlab report --from A --from B`) lists every
        // part's command, `; `-separated: name the parts of these rows.
        let command = env["command"].as_str().unwrap_or("");
        let parts: Vec<&str> = command
            .split("; ")
            .filter(|c| {
                mine.iter().any(|r| {
                    let w = r["workload"].as_str().unwrap_or("");
                    c.contains(&format!("--only {w}"))
                        || (stem == "primitives" && c.contains("--only primitives"))
                })
            })
            .collect();
        let command = if parts.is_empty() {
            command.to_string()
        } else {
            parts.join("`; `")
        };
        let mut table = format!(
            "\n\nRecorded on {} (driver {}), {}, git {}; `{}`.\n\n| workload | variant | backend | size | prec | regs | median ms | throughput | % of ceiling | status |\n|---|---|---|---|---|---|---|---|---|---|\n",
            env["gpu"].as_str().unwrap_or("?"),
            env["driver_version"].as_str().unwrap_or("?"),
            env["date"].as_str().unwrap_or("?"),
            env["git_sha"].as_str().unwrap_or("?"),
            command
        );
        for r in mine {
            let s = |k: &str| r[k].as_str().unwrap_or("").to_string();
            let f = |v: &serde_json::Value, d: usize| {
                v.as_f64().map(|x| format!("{x:.d$}")).unwrap_or_default()
            };
            let status = r["status"]["kind"].as_str().unwrap_or("");
            table.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                s("workload"),
                s("variant"),
                s("backend"),
                s("size"),
                s("precision"),
                r["registers"]
                    .as_u64()
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
                f(&r["timing"]["median_ms"], 4),
                r["throughput"]
                    .as_f64()
                    .map(|t| format!("{t:.1} {}", s("unit")))
                    .unwrap_or_default(),
                f(&r["pct_of_ceiling"], 1),
                status
            ));
        }
        let new = format!(
            "{}<!-- results:start -->{table}\n{}",
            &text[..a],
            &text[b..]
        );
        std::fs::write(&path, new)?;
        n += 1;
    }
    println!("updated {n} workload README(s) from {}", dir.display());
    Ok(())
}
