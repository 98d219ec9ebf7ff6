//! Result rows, Markdown tables and the environment block of a report.

use crate::runtime::Timing;
use serde::Serialize;
use std::io::{IsTerminal, Write};
use std::sync::Mutex;

/// The benchmark's progress line: `[workload i/n] bar workload: variant`.
struct Progress {
    index: usize,
    total: usize,
    tty: bool,
}

static PROGRESS: Mutex<Option<Progress>> = Mutex::new(None);

/// Starts workload `index` (1-based) of `total` on stderr. On a terminal the
/// line is then redrawn in place for every variant (each [`Row::new`] names
/// the variant about to run); elsewhere (CI logs) one line per workload.
pub fn progress_workload(index: usize, total: usize, name: &str) {
    let tty = std::io::stderr().is_terminal();
    if let Ok(mut p) = PROGRESS.lock() {
        *p = Some(Progress { index, total, tty });
    }
    if tty {
        eprint!("\r\x1b[K{} {name} ...", bar(index - 1, total));
    } else {
        eprintln!("[{index}/{total}] {name} ...");
    }
    let _ = std::io::stderr().flush();
}

/// Ends the progress line (before results are printed).
pub fn progress_clear() {
    if let Ok(mut p) = PROGRESS.lock()
        && let Some(pr) = p.take()
        && pr.tty
    {
        eprint!("\r\x1b[K");
        let _ = std::io::stderr().flush();
    }
}

fn bar(done: usize, total: usize) -> String {
    const W: usize = 20;
    let filled = (done * W).checked_div(total).unwrap_or(0);
    format!(
        "[{}{}] {done}/{total}",
        "#".repeat(filled),
        "-".repeat(W - filled)
    )
}

fn progress_variant(workload: &str, variant: &str, size: &str, precision: &str) {
    if let Ok(p) = PROGRESS.lock()
        && let Some(pr) = p.as_ref()
        && pr.tty
    {
        let mut line = format!(
            "{} {workload}: {variant} {size} {precision}",
            bar(pr.index - 1, pr.total)
        );
        line.truncate(line.floor_char_boundary(110));
        eprint!("\r\x1b[K{line}");
        let _ = std::io::stderr().flush();
    }
}

/// Outcome of one row.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "kind", content = "detail", rename_all = "lowercase")]
pub enum Status {
    /// Checked and timed.
    Ok,
    /// The correctness check failed (the row's time is not trustworthy).
    Failed(String),
    /// Not run, and why.
    Skipped(String),
    /// Within its stated bound, but the bound says nothing at this size, and
    /// the answer is far from the reference: shown, never hidden as `ok`,
    /// and not a failure of the kernel (the anti-pattern rungs show it).
    Inaccurate(String),
}

/// One measured variant of one workload.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Workload (`vector-add`).
    pub workload: String,
    /// Variant or rung (`x4 (16-byte loads)`).
    pub variant: String,
    /// `gpu`, `sim`, `cpu`, or a peer (`torch`).
    pub backend: String,
    /// Problem size, human-readable.
    pub size: String,
    /// `f32` / `f64`.
    pub precision: String,
    /// Registers per thread (ptxas report or driver).
    pub registers: Option<u32>,
    /// Spill bytes (stores + loads).
    pub spills: Option<u32>,
    /// First call, ms (module load and JIT included where that applies).
    pub first_ms: Option<f64>,
    /// Timed calls.
    pub timing: Option<Timing>,
    /// Speed-up over the CPU one-thread baseline.
    pub speedup: Option<f64>,
    /// Throughput value.
    pub throughput: Option<f64>,
    /// Unit of `throughput` (`GB/s`, `GFLOP/s`, `GCells/s`).
    pub unit: String,
    /// Percent of the ceiling measured in the same run.
    pub pct_of_ceiling: Option<f64>,
    /// Relative error against the f64 reference.
    pub rel_err: Option<f64>,
    /// Outcome.
    pub status: Status,
}

impl Row {
    /// A row with only the identifying fields set.
    pub fn new(workload: &str, variant: &str, backend: &str, size: &str, precision: &str) -> Self {
        progress_variant(workload, variant, size, precision);
        Self {
            workload: workload.into(),
            variant: variant.into(),
            backend: backend.into(),
            size: size.into(),
            precision: precision.into(),
            registers: None,
            spills: None,
            first_ms: None,
            timing: None,
            speedup: None,
            throughput: None,
            unit: String::new(),
            pct_of_ceiling: None,
            rel_err: None,
            status: Status::Ok,
        }
    }
    /// A skipped row with its one-line reason.
    pub fn skipped(workload: &str, variant: &str, backend: &str, reason: &str) -> Self {
        let mut r = Self::new(workload, variant, backend, "", "");
        r.status = Status::Skipped(reason.into());
        r
    }
}

fn opt(v: Option<f64>, digits: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.digits$}"),
        _ => "".into(),
    }
}

/// Formats a time in ms with enough digits for microsecond kernels.
pub fn fmt_ms(ms: f64) -> String {
    if ms < 0.1 {
        format!("{ms:.4}")
    } else if ms < 10.0 {
        format!("{ms:.3}")
    } else {
        format!("{ms:.1}")
    }
}

/// A Markdown table of rows, in the material's style.
pub fn table(rows: &[Row]) -> String {
    let mut s = String::from(
        "| variant | backend | size | prec | regs | spills | first ms | median ms (min-max) | speed-up vs CPU 1T | throughput | % of ceiling | rel err | status |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let timing = r
            .timing
            .as_ref()
            .map(|t| {
                format!(
                    "{} ({}-{})",
                    fmt_ms(t.median_ms),
                    fmt_ms(t.min_ms),
                    fmt_ms(t.max_ms)
                )
            })
            .unwrap_or_default();
        let status = match &r.status {
            Status::Ok => "ok".to_string(),
            Status::Failed(d) => format!("FAILED: {d}"),
            Status::Skipped(d) => format!("skipped: {d}"),
            Status::Inaccurate(d) => format!("INACCURATE: {d}"),
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.variant,
            r.backend,
            r.size,
            r.precision,
            r.registers.map(|v| v.to_string()).unwrap_or_default(),
            r.spills.map(|v| v.to_string()).unwrap_or_default(),
            r.first_ms.map(fmt_ms).unwrap_or_default(),
            timing,
            opt(r.speedup, 1),
            r.throughput
                .map(|t| format!("{t:.1} {}", r.unit))
                .unwrap_or_default(),
            opt(r.pct_of_ceiling, 1),
            r.rel_err.map(|e| format!("{e:.1e}")).unwrap_or_default(),
            status
        ));
    }
    s
}

/// Where and with what a run happened.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Environment {
    /// GPU name, or why there is none.
    pub gpu: String,
    /// Compute capability.
    pub compute_capability: String,
    /// SMs.
    pub sm_count: u32,
    /// SM clock, MHz.
    pub clock_mhz: u32,
    /// Driver CUDA version.
    pub driver_cuda: String,
    /// `nvidia-smi` driver version, when available.
    pub driver_version: String,
    /// rustc version of the kernels.
    pub rustc: String,
    /// Git commit.
    pub git_sha: String,
    /// UTC date and time.
    pub date: String,
    /// PTX arch of the embedded module.
    pub ptx_arch: String,
    /// Command line.
    pub command: String,
}

impl Environment {
    /// Collects what can be known here; `dev` adds the GPU's facts.
    pub fn collect(dev: Option<&crate::runtime::Gpu>) -> Self {
        let sh = |cmd: &str, args: &[&str]| {
            std::process::Command::new(cmd)
                .args(args)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_default()
        };
        let mut e = Self {
            rustc: option_env!("PTXLAB_RUSTC_VERSION")
                .unwrap_or("")
                .to_string(),
            git_sha: option_env!("PTXLAB_GIT_SHA").unwrap_or("").to_string(),
            date: sh("date", &["-u", "+%Y-%m-%d %H:%M:%S UTC"]),
            ptx_arch: crate::modules::PTX_ARCH.to_string(),
            command: std::env::args().collect::<Vec<_>>().join(" "),
            driver_version: sh(
                "nvidia-smi",
                &["--query-gpu=driver_version", "--format=csv,noheader"],
            ),
            ..Default::default()
        };
        match dev {
            Some(g) => {
                let i = g.info();
                e.gpu = i.name.clone();
                e.compute_capability =
                    format!("{}.{}", i.compute_capability.0, i.compute_capability.1);
                e.sm_count = i.sm_count;
                e.clock_mhz = i.clock_khz / 1000;
                e.driver_cuda = i.driver_cuda.clone();
            }
            None => e.gpu = "none".into(),
        }
        e
    }
    /// Markdown block.
    pub fn markdown(&self) -> String {
        format!(
            "| | |\n|---|---|\n| GPU | {} |\n| compute capability | {} |\n| SMs | {} |\n| SM clock (max) | {} MHz |\n| driver | {} (CUDA {}) |\n| PTX arch | {} |\n| rustc | {} |\n| git | {} |\n| date | {} |\n| command | `{}` |\n",
            self.gpu,
            self.compute_capability,
            self.sm_count,
            self.clock_mhz,
            self.driver_version,
            self.driver_cuda,
            self.ptx_arch,
            self.rustc,
            self.git_sha,
            self.date,
            self.command
        )
    }
}

/// Writes `report.md`, `results.json` and `results.csv` into `dir`, and points
/// `latest` (a sibling symlink) at it.
pub fn write_outputs(
    dir: &std::path::Path,
    env: &Environment,
    ceilings: &crate::workloads::Ceilings,
    rows: &[Row],
    markdown: &str,
) -> crate::Result<()> {
    let io = |p: &std::path::Path, e: std::io::Error| crate::Error::File {
        path: p.display().to_string(),
        detail: e.to_string(),
    };
    let plots = crate::plot::write_all(dir, rows, ceilings.copy_gbs, ceilings.fp32_flops)?;
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
