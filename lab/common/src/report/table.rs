//! Markdown: the results table in the material's style, and the
//! environment block (where and with what a run happened).

use super::row::{Row, Status, opt};
use super::units::{fmt_throughput, fmt_time, fmt_time_range};
use serde::Serialize;

/// A Markdown table cell: `|` escaped and line breaks flattened, so a note
/// such as `max |p - p*|` keeps the row's columns.
pub(crate) fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// A Markdown table of rows, in the material's style: times in the unit of
/// their magnitude (`3.495 ms (3.412–3.601)`), throughputs with the prefix of
/// theirs (`684.6 TFLOP/s`).
pub fn table(rows: &[Row]) -> String {
    let notes = rows.iter().any(|r| !r.note.is_empty());
    let mut s = String::from(
        "| variant | backend | size | prec | regs | spills | first call | median (min–max) | speed-up vs CPU 1T | throughput | % of ceiling | rel err | status |",
    );
    s.push_str(if notes { " notes |\n" } else { "\n" });
    s.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    s.push_str(if notes { "---|\n" } else { "\n" });
    for r in rows {
        let timing = r
            .timing
            .as_ref()
            .map(|t| fmt_time_range(t.median_ms, t.min_ms, t.max_ms))
            .unwrap_or_default();
        let status = match &r.status {
            Status::Ok => "ok".to_string(),
            Status::Failed(d) => format!("FAILED: {d}"),
            Status::Skipped(d) => format!("skipped: {d}"),
            Status::Inaccurate(d) => format!("INACCURATE: {d}"),
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&r.variant),
            cell(&r.backend),
            cell(&r.size),
            cell(&r.precision),
            r.registers.map(|v| v.to_string()).unwrap_or_default(),
            r.spills.map(|v| v.to_string()).unwrap_or_default(),
            r.first_ms.map(fmt_time).unwrap_or_default(),
            timing,
            opt(r.speedup, 1),
            r.throughput
                .map(|t| fmt_throughput(t, &r.unit))
                .unwrap_or_default(),
            opt(r.pct_of_ceiling, 1),
            r.rel_err.map(|e| format!("{e:.1e}")).unwrap_or_default(),
            cell(&status)
        ));
        if notes {
            s.push_str(&format!(" {} |", cell(&r.note)));
        }
        s.push('\n');
    }
    s
}

/// Where and with what a run happened.
#[derive(Debug, Clone, Serialize, serde::Deserialize, Default)]
#[serde(default)]
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
    /// PTX archs of the embedded modules (`sm_80, sm_90a`).
    pub ptx_arch: String,
    /// The `ptxas` build that made the embedded cubins, or why there are
    /// none.
    pub ptxas: String,
    /// Command line.
    pub command: String,
    /// The kernel modules this run loaded and how (`kernels/vector: cubin
    /// sm_90, 0.4 ms`), from the runtime's load records; filled at the end
    /// of a run.
    pub modules_loaded: String,
}

impl Environment {
    /// Collects what can be known here; `dev` adds the GPU's facts.
    pub fn collect(dev: Option<&crate::runtime::gpu::Gpu>) -> Self {
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
            ptx_arch: crate::modules::ptx_arch(),
            ptxas: option_env!("PTXLAB_PTXAS_VERSION")
                .unwrap_or("")
                .to_string(),
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
    /// Records the modules `gpu` has loaded so far (and how) in
    /// [`Environment::modules_loaded`].
    pub fn note_loads(&mut self, gpu: &crate::runtime::gpu::Gpu) {
        let recs = gpu.load_records();
        // One entry per module and way, in first-load order: a module the
        // ladder reloads on purpose (the JIT rungs, register caps) counts
        // its loads.
        let mut seen: Vec<(String, String, usize, f64)> = Vec::new();
        for r in &recs {
            match seen.iter_mut().find(|e| e.0 == r.module && e.1 == r.how) {
                Some(e) => {
                    e.2 += 1;
                    e.3 += r.ms;
                }
                None => seen.push((r.module.clone(), r.how.clone(), 1, r.ms)),
            }
        }
        let total: f64 = recs.iter().map(|r| r.ms).sum();
        let list: Vec<String> = seen
            .iter()
            .map(|(m, how, n, ms)| match n {
                1 => format!("{m}: {how}, {ms:.1} ms"),
                _ => format!("{m}: {how}, {n} loads, {ms:.1} ms"),
            })
            .collect();
        self.modules_loaded = if recs.is_empty() {
            "none".into()
        } else {
            format!(
                "{} loads, {total:.0} ms in all: {}",
                recs.len(),
                list.join("; ")
            )
        };
    }
    /// Markdown block.
    pub fn markdown(&self) -> String {
        format!(
            "| | |\n|---|---|\n| GPU | {} |\n| compute capability | {} |\n| SMs | {} |\n| SM clock (max) | {} MHz |\n| driver | {} (CUDA {}) |\n| PTX arch | {} |\n| ptxas | {} |\n| rustc | {} |\n| git | {} |\n| date | {} |\n| command | `{}` |\n| modules loaded | {} |\n",
            self.gpu,
            self.compute_capability,
            self.sm_count,
            self.clock_mhz,
            self.driver_version,
            self.driver_cuda,
            self.ptx_arch,
            self.ptxas,
            self.rustc,
            self.git_sha,
            self.date,
            self.command,
            self.modules_loaded
        )
    }
}

/// The `ptxas` resource report as a Markdown table.
pub fn resource_table(rows: &[crate::runtime::module::Resources]) -> String {
    crate::runtime::module::Resources::table(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The columns of a Markdown row: its unescaped `|` separators.
    fn columns(line: &str) -> usize {
        let b = line.as_bytes();
        (0..b.len())
            .filter(|&i| b[i] == b'|' && (i == 0 || b[i - 1] != b'\\'))
            .count()
    }

    #[test]
    fn pipes_in_a_note_or_a_name_keep_the_columns() {
        let mut plain = Row::new("t", "a", "gpu", "8", "f32");
        plain.note = "plain".into();
        let mut piped = Row::new("t", "b | c", "gpu", "8", "f32");
        piped.note = "max |p - p*| = 4.9e-8\nsecond line".into();
        let t = table(&[plain, piped]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4, "{t}");
        let header = columns(lines[0]);
        for l in &lines[1..] {
            assert_eq!(columns(l), header, "{l}");
        }
        assert!(
            lines[3].contains("max \\|p - p*\\| = 4.9e-8 second line"),
            "{t}"
        );
    }
}
