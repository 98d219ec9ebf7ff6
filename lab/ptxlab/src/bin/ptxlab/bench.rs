//! `ptxlab bench` (every workload, checked then timed) and `ptxlab report`
//! (a recorded run's report drawn again).

use anyhow::{Context, Result};
use ptxlab::Backend;
use ptxlab::report::{self, Ceilings, Environment, Row, Run, Section, Status};
use ptxlab::runtime::Device;
use ptxlab::workloads::{self, BenchCtx};
use std::io::{BufRead, Read};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

/// The arguments (defined with the rest of the command line in the library).
pub use ptxlab::command_line::{BenchArgs as Args, ReportArgs};

/// The one-line description of a workload (or of a part of one, such as
/// `reduce` of `primitives`), for section headings.
fn about(name: &str) -> Option<String> {
    let part = match name {
        "reduce" => Some("sum reduction ladder"),
        "histogram" => {
            Some("256-bin histogram: global atomics against privatised shared-memory bins")
        }
        "monte-carlo-pi" => Some("Monte-Carlo estimate of pi"),
        _ => None,
    };
    part.map(str::to_string).or_else(|| {
        workloads::all()
            .into_iter()
            .find(|w| w.name == name)
            .map(|w| w.about.to_string())
    })
}

/// `ptxlab report --from results.json [--from results.json ...] [--out DIR]`.
pub fn report_from(args: &ReportArgs) -> Result<()> {
    let mut parts = Vec::new();
    for from in &args.from {
        let text =
            std::fs::read_to_string(from).with_context(|| format!("reading {}", from.display()))?;
        let doc: serde_json::Value =
            serde_json::from_str(&text).with_context(|| format!("{}: not JSON", from.display()))?;
        let run = Run::from_results(&doc, &about)
            .map_err(|e| anyhow::anyhow!("{}: {e}", from.display()))?;
        parts.push((from.display().to_string(), run));
    }
    let mut run = Run::join(parts).map_err(|e| anyhow::anyhow!(e))?;
    run.judge_peers();
    let out = match &args.out {
        Some(o) => o.clone(),
        None => args.from[0]
            .parent()
            .map(|p| p.to_path_buf())
            .unwrap_or_else(|| PathBuf::from(".")),
    };
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let w = report::write_outputs(&out, &run, false)?;
    println!(
        "wrote {} charts, report.md (the summary), summary.md, summary.json, a page per workload, report.html, results.json and results.csv to {}",
        w.charts.len(),
        out.display()
    );
    Ok(())
}

fn ceilings(dev: &Device) -> Ceilings {
    let Some(g) = dev.as_gpu() else {
        return Ceilings::default();
    };
    let i = g.info();
    let clock = i.clock_khz as f64 * 1e3;
    let copy = ptxlab::workloads::vector::copy_bandwidth(dev, 1 << 30, 20)
        .ok()
        .map(|(_, gbs)| gbs);
    Ceilings {
        copy_gbs: copy,
        sfu_per_s: Some(16.0 * i.sm_count as f64 * clock),
        fp32_flops: Some(256.0 * i.sm_count as f64 * clock),
        clock_mhz: Some(clock / 1e6),
    }
}

pub fn run(args: &Args) -> Result<()> {
    report::set_quiet(args.quiet);
    // Refuse bad options before anything is created or measured.
    let names: Vec<&str> = workloads::all().iter().map(|w| w.name).collect();
    if let Some(o) = args.only.iter().find(|o| !names.contains(&o.as_str())) {
        anyhow::bail!("--only `{o}`: allowed {}", names.join(", "));
    }
    let stamp = std::process::Command::new("date")
        .arg("-u")
        .arg("+%Y%m%d-%H%M%S")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|_| "run".into());
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("target/bench-results").join(&stamp));
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let (dev, skip) = match args.backend {
        Backend::Gpu => match Device::gpu(0) {
            Ok(d) => (Some(d), None),
            Err(e) => {
                let why = e.to_string().lines().next().unwrap_or("").to_string();
                eprintln!("GPU rows skipped: {why}");
                (Some(Device::sim()), Some(why))
            }
        },
        Backend::Sim => (Some(Device::sim()), Some("--backend sim".to_string())),
        Backend::Cpu => (None, Some("--backend cpu".to_string())),
    };
    let env = Environment::collect(dev.as_ref().and_then(|d| d.as_gpu()));
    let ceil = dev.as_ref().map(ceilings).unwrap_or_default();
    let all = workloads::all();
    for o in &args.only {
        if !all.iter().any(|w| w.name == o) {
            let names: Vec<_> = all.iter().map(|w| w.name).collect();
            anyhow::bail!("--only `{o}`: allowed {}", names.join(", "));
        }
    }
    let chosen: Vec<_> = all
        .into_iter()
        .filter(|w| args.only.is_empty() || args.only.iter().any(|o| o == w.name))
        .collect();
    let mut run = Run {
        env,
        ceilings: ceil.clone(),
        ..Run::default()
    };
    let total = chosen.len();
    let started = std::time::Instant::now();
    for (i, w) in chosen.iter().enumerate() {
        report::progress_workload(i + 1, total, w.name);
        let on_gpu = dev.as_ref().is_some_and(|d| !d.is_sim());
        let mut rows = Vec::new();
        if !on_gpu {
            let t = std::time::Instant::now();
            let mut r = Row::new(
                w.name,
                "simulator check (every kernel vs CPU reference)",
                "sim",
                "odd sizes",
                "f32/f64",
            );
            r.status = match (w.sim_check)() {
                Ok(()) => Status::Ok,
                Err(e) => Status::Failed(e.to_string()),
            };
            r.first_ms = Some(t.elapsed().as_secs_f64() * 1e3);
            report::progress_row_done();
            rows.push(r);
        }
        let ctx = BenchCtx {
            dev: if on_gpu { dev.as_ref() } else { None },
            quick: args.quick,
            ceilings: ceil.clone(),
            gpu_skip: skip.clone(),
        };
        match (w.bench)(&ctx) {
            Ok(r) => rows.extend(r),
            Err(e) => {
                let mut r = Row::new(w.name, "benchmark", "gpu", "", "");
                r.status = Status::Failed(e.to_string());
                rows.push(r);
            }
        }
        report::progress_clear();
        let table = report::table(&rows);
        println!("\n## {} — {}\n\n{table}", w.name, w.about);
        // One section per workload of the rows (`primitives` measures
        // `reduce`, `histogram`, ...): the pages of the report, and what a
        // recorded run reads back as.
        let mut parts: Vec<Section> = Vec::new();
        for r in rows {
            match parts.iter_mut().find(|s| s.name == r.workload) {
                Some(s) => s.rows.push(r),
                None => parts.push(Section {
                    name: r.workload.clone(),
                    about: about(&r.workload).unwrap_or_else(|| w.about.to_string()),
                    rows: vec![r],
                }),
            }
        }
        if parts.is_empty() {
            parts.push(Section {
                name: w.name.to_string(),
                about: w.about.to_string(),
                rows: Vec::new(),
            });
        }
        run.sections.extend(parts);
    }
    if args.peers {
        let peer_rows = crate::bench::peers(
            &args.peers_dir,
            &chosen.iter().map(|w| w.name).collect::<Vec<_>>(),
            args.quick,
        );
        if !peer_rows.is_empty() {
            run.peers = peer_rows;
            run.judge_peers();
            let table = report::table(&run.peers);
            println!("\n## Python peers (same run)\n\n{table}");
        }
    }
    if !args.quiet {
        eprintln!(
            "measured in {}; drawing the charts ...",
            report::fmt_elapsed(started.elapsed())
        );
    }
    if let Some(g) = dev.as_ref().and_then(|d| d.as_gpu()) {
        run.env.note_loads(g);
    }
    let rows_all = run.rows();
    let w = report::write_outputs(&out, &run, true)?;
    eprintln!(
        "wrote {}: report.md (the summary), summary.md, summary.json, a page per workload, report.html ({} charts), results.json, results.csv",
        out.display(),
        w.charts.len()
    );
    let failed = rows_all
        .iter()
        .filter(|r| matches!(r.status, Status::Failed(_)))
        .count();
    if failed > 0 {
        anyhow::bail!("{failed} row(s) FAILED their correctness check");
    }
    Ok(())
}

/// Runs `peers/run_peers.py` (if python3 is there) and turns its JSON lines
/// into rows as they come; its progress lines (a module starting, a long
/// peer announcing itself and its expected duration) become progress lines.
pub fn peers(dir: &std::path::Path, workloads: &[&str], quick: bool) -> Vec<Row> {
    let script = dir.join("run_peers.py");
    if !script.exists() {
        return vec![Row::skipped(
            "peers",
            "python peers",
            "python",
            &format!("{} not found", script.display()),
        )];
    }
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(&script).arg("--workloads").arg(workloads.join(","));
    if quick {
        cmd.arg("--quick");
    }
    let skipped = |why: String| vec![Row::skipped("peers", "python peers", "python", &why)];
    let mut child = match cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn() {
        Ok(c) => c,
        Err(e) => return skipped(format!("python3 not runnable: {e}")),
    };
    // Tracebacks of failing peers: kept, and the last line reported when
    // no row came at all.
    let stderr = child.stderr.take().map(|mut e| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = e.read_to_string(&mut s);
            s
        })
    });
    report::progress_step(&format!("peers: starting {}", script.display()));
    let mut rows = Vec::new();
    if let Some(out) = child.stdout.take() {
        for line in std::io::BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            match report::PeerLine::parse(&line) {
                report::PeerLine::Row(r) => rows.push(*r),
                report::PeerLine::Step(step) => report::progress_step(&step),
                report::PeerLine::Note {
                    text,
                    expected_s,
                    basis,
                } => {
                    let expected = expected_s
                        .map(|s| {
                            format!(
                                ", expected about {}",
                                report::fmt_elapsed(Duration::from_secs_f64(s))
                            )
                        })
                        .unwrap_or_default();
                    let basis = basis.map(|b| format!(" ({b})")).unwrap_or_default();
                    report::progress_note(&format!("    {text}{expected}{basis}"));
                }
                // The module's time is its step's line.
                report::PeerLine::Done | report::PeerLine::Other => {}
            }
        }
    }
    let _ = child.wait();
    report::progress_clear();
    let err = stderr.and_then(|h| h.join().ok()).unwrap_or_default();
    if rows.is_empty() {
        return skipped(err.lines().last().unwrap_or("no output").to_string());
    }
    rows
}
