//! `ptxlab info` and `ptxlab bench`: every workload, checked then timed.

use anyhow::{Context, Result};
use ptxlab::report::Ceilings;
use ptxlab::report::{self, Environment, Row, Status};
use ptxlab::runtime::Device;
use ptxlab::workloads::{self, BenchCtx};
use std::path::PathBuf;

/// The arguments (defined with the rest of the command line in the library).
pub use ptxlab::command_line::BenchArgs as Args;

pub fn info() -> Result<()> {
    match Device::gpu(0) {
        Ok(d) => {
            let g = d.as_gpu().context("gpu")?;
            let i = g.info();
            println!(
                "GPU 0: {} ({}), {} SMs, {:.1} GiB, L2 {} MiB, SM clock {} MHz, driver CUDA {}",
                i.name,
                i.arch(),
                i.sm_count,
                i.total_mem as f64 / (1u64 << 30) as f64,
                i.l2_bytes >> 20,
                i.clock_khz / 1000,
                i.driver_cuda
            );
        }
        Err(e) => println!("GPU: none ({})", e.to_string().lines().next().unwrap_or("")),
    }
    println!(
        "embedded PTX: {} ({} kernels)",
        ptxlab::modules::ptx_arch(),
        ptxlab_device::KERNELS.len()
    );
    let res = ptxlab::modules::resources(false);
    if res.is_empty() {
        println!("resource report: none (ptxas was not available at build time)");
    } else {
        print!("{}", ptxlab::report::resource_table(res));
    }
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
    // Refuse bad options before anything is created or measured.
    if !["gpu", "sim", "cpu"].contains(&args.backend.as_str()) {
        anyhow::bail!("--backend `{}`: allowed gpu, sim, cpu", args.backend);
    }
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
    let (dev, skip) = match args.backend.as_str() {
        "gpu" => match Device::gpu(0) {
            Ok(d) => (Some(d), None),
            Err(e) => {
                let why = e.to_string().lines().next().unwrap_or("").to_string();
                eprintln!("GPU rows skipped: {why}");
                (Some(Device::sim()), Some(why))
            }
        },
        "sim" => (Some(Device::sim()), Some("--backend sim".to_string())),
        "cpu" => (None, Some("--backend cpu".to_string())),
        b => anyhow::bail!("--backend `{b}`: allowed gpu, sim, cpu"),
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
    let mut md = format!("# ptxlab benchmark\n\n{}\n", env.markdown());
    if let Some(line) = ceil.markdown() {
        md.push_str(&line);
    }
    let mut rows_all: Vec<Row> = Vec::new();
    let total = chosen.len();
    for (i, w) in chosen.iter().enumerate() {
        report::progress_workload(i + 1, total, w.name);
        let on_gpu = dev.as_ref().is_some_and(|d| !d.is_sim());
        let mut rows = Vec::new();
        if !on_gpu {
            let t = std::time::Instant::now();
            let status = match (w.sim_check)() {
                Ok(()) => Status::Ok,
                Err(e) => Status::Failed(e.to_string()),
            };
            let mut r = Row::new(
                w.name,
                "simulator check (every kernel vs CPU reference)",
                "sim",
                "odd sizes",
                "f32/f64",
            );
            r.status = status;
            r.first_ms = Some(t.elapsed().as_secs_f64() * 1e3);
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
        md.push_str(&format!("## {} — {}\n\n{table}\n", w.name, w.about));
        rows_all.extend(rows);
    }
    if args.peers {
        let peer_rows = crate::bench::peers(
            &args.peers_dir,
            &chosen.iter().map(|w| w.name).collect::<Vec<_>>(),
            args.quick,
        );
        if !peer_rows.is_empty() {
            let table = report::table(&peer_rows);
            println!("\n## Python peers (same run)\n\n{table}");
            md.push_str(&format!("## Python peers (same run)\n\n{table}\n"));
            rows_all.extend(peer_rows);
        }
    }
    report::write_outputs(&out, &env, &ceil, &rows_all, &md)?;
    eprintln!("wrote {}", out.display());
    let failed = rows_all
        .iter()
        .filter(|r| matches!(r.status, Status::Failed(_)))
        .count();
    if failed > 0 {
        anyhow::bail!("{failed} row(s) FAILED their correctness check");
    }
    Ok(())
}

/// Runs `peers/run_peers.py` (if python3 is there) and turns its JSON lines into rows.
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
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => {
            return vec![Row::skipped(
                "peers",
                "python peers",
                "python",
                &format!("python3 not runnable: {e}"),
            )];
        }
    };
    let mut rows = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
        let mut r = Row::new(
            &s("workload"),
            &s("variant"),
            &s("backend"),
            &s("size"),
            &s("precision"),
        );
        if let Some(skip) = v["skipped"].as_str() {
            r.status = Status::Skipped(skip.to_string());
        }
        if let Some(ms) = v["median_ms"].as_f64() {
            r.timing = Some(ptxlab::runtime::Timing {
                median_ms: ms,
                min_ms: v["min_ms"].as_f64().unwrap_or(ms),
                max_ms: v["max_ms"].as_f64().unwrap_or(ms),
                reps: v["reps"].as_u64().unwrap_or(0) as usize,
            });
        }
        r.first_ms = v["first_ms"].as_f64();
        r.throughput = v["throughput"].as_f64();
        r.unit = s("unit");
        r.rel_err = v["rel_err"].as_f64();
        r.registers = v["registers"].as_u64().map(|x| x as u32);
        r.speedup = v["speedup"].as_f64();
        r.note = s("note");
        if let Some(h) = v["history"].as_array() {
            r.history = h
                .iter()
                .filter_map(|p| Some((p.get(0)?.as_f64()?, p.get(1)?.as_f64()?)))
                .collect();
        }
        rows.push(r);
    }
    if rows.is_empty() {
        let err = String::from_utf8_lossy(&out.stderr);
        rows.push(Row::skipped(
            "peers",
            "python peers",
            "python",
            err.lines().last().unwrap_or("no output"),
        ));
    }
    rows
}
