//! Plain result data: a [`Row`] per measured variant, its [`Status`], and
//! the [`Ceilings`] of a run. Workloads fill rows; the rest of the report
//! layer reads them and needs nothing else from the workloads.

use super::progress::progress_row;
use super::units::fmt_throughput;
use crate::runtime::Timing;
use serde::Serialize;

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
    /// What the columns do not hold (a solve's cycles and convergence
    /// factor, an extrapolation's basis); shown as a last column when any
    /// row of a table has one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// A solve to a tolerance: `(ms since its start, relative residual)`
    /// at the start and after each iteration (the convergence plot).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<(f64, f64)>,
    /// The problem it measured, which decides what it is compared with
    /// (`problem.rs`). `None`: derived from the size, variant, precision
    /// and unit ([`Problem::of`]); `results.json` records it for every row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<Problem>,
}

impl Row {
    /// A row with only the identifying fields set. It starts the row's
    /// progress line: the time until the next row starts (or the workload
    /// ends) is printed as this row's.
    pub fn new(workload: &str, variant: &str, backend: &str, size: &str, precision: &str) -> Self {
        progress_row(workload, variant, size, precision);
        Self::plain(workload, variant, backend, size, precision)
    }

    /// [`Row::new`] without the progress line (rows read back from a file).
    pub fn plain(
        workload: &str,
        variant: &str,
        backend: &str,
        size: &str,
        precision: &str,
    ) -> Self {
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
            note: String::new(),
            history: Vec::new(),
            problem: None,
        }
    }
    /// A skipped row with its one-line reason.
    pub fn skipped(workload: &str, variant: &str, backend: &str, reason: &str) -> Self {
        let mut r = Self::new(workload, variant, backend, "", "");
        r.status = Status::Skipped(reason.into());
        r
    }
}

impl Row {
    /// A row of a `results.json` (schema `ptxlab-results/1`), or of a peer
    /// script's JSON line (`skipped`: a reason; `median_ms`, `min_ms`, ...
    /// flat); `None` when `workload` or `variant` is missing. A `problem`
    /// that does not read as one is left out (and derived).
    pub fn from_json(v: &serde_json::Value) -> Option<Row> {
        let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
        let f = |x: &serde_json::Value| x.as_f64().filter(|x| x.is_finite());
        v["workload"].as_str()?;
        v["variant"].as_str()?;
        let mut r = Row::plain(
            &s("workload"),
            &s("variant"),
            &s("backend"),
            &s("size"),
            &s("precision"),
        );
        let t = if v["timing"].is_object() {
            &v["timing"]
        } else {
            v
        };
        if let Some(ms) = f(&t["median_ms"]) {
            r.timing = Some(Timing {
                median_ms: ms,
                min_ms: f(&t["min_ms"]).unwrap_or(ms),
                max_ms: f(&t["max_ms"]).unwrap_or(ms),
                reps: t["reps"].as_u64().unwrap_or(0) as usize,
            });
        }
        r.registers = v["registers"].as_u64().map(|x| x as u32);
        r.spills = v["spills"].as_u64().map(|x| x as u32);
        r.first_ms = f(&v["first_ms"]);
        r.speedup = f(&v["speedup"]);
        r.throughput = f(&v["throughput"]);
        r.unit = s("unit");
        r.pct_of_ceiling = f(&v["pct_of_ceiling"]);
        r.rel_err = f(&v["rel_err"]);
        r.note = s("note");
        let detail = v["status"]["detail"].as_str().unwrap_or("").to_string();
        r.status = match (v["status"]["kind"].as_str(), v["skipped"].as_str()) {
            (_, Some(why)) => Status::Skipped(why.to_string()),
            (Some("failed"), _) => Status::Failed(detail),
            (Some("skipped"), _) => Status::Skipped(detail),
            (Some("inaccurate"), _) => Status::Inaccurate(detail),
            _ => Status::Ok,
        };
        if v["problem"].is_object() {
            r.problem = serde_json::from_value(v["problem"].clone()).ok();
        }
        if let Some(h) = v["history"].as_array() {
            r.history = h
                .iter()
                .filter_map(|p| Some((p.get(0)?.as_f64()?, p.get(1)?.as_f64()?)))
                .collect();
        }
        Some(r)
    }
}

pub(crate) fn opt(v: Option<f64>, digits: usize) -> String {
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

/// The ceilings of a run: the copy bandwidth is measured on the device in
/// the same run; the SFU and FP32 rates come from the spec sheet (per
/// clock and SM) times the SM count and the maximum SM clock the driver
/// reports, and are labelled "from spec" wherever they are printed.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Ceilings {
    /// Device-to-device copy, read + write bytes per second, GB/s
    /// (measured in this run).
    pub copy_gbs: Option<f64>,
    /// SFU transcendental rate (16 per clock per SM, from spec), operations
    /// per second.
    pub sfu_per_s: Option<f64>,
    /// FP32 FMA rate x 2 (128 FMA per clock per SM, from spec), FLOP/s.
    pub fp32_flops: Option<f64>,
    /// The SM clock the spec-derived rates use (the driver's maximum), MHz.
    pub clock_mhz: Option<f64>,
}

impl Ceilings {
    /// The report's line on the ceilings, each labelled with where it comes
    /// from; `None` when there is none (no GPU).
    pub fn markdown(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(c) = self.copy_gbs {
            parts.push(format!(
                "device-to-device copy {} (read + write), measured in this run",
                fmt_throughput(c, "GB/s")
            ));
        }
        let mut spec = Vec::new();
        if let Some(s) = self.sfu_per_s {
            spec.push(format!(
                "SFU {} (16 per clock per SM)",
                fmt_throughput(s / 1e9, "Gop/s")
            ));
        }
        if let Some(f) = self.fp32_flops {
            spec.push(format!(
                "FP32 {} (128 FMA per clock per SM)",
                fmt_throughput(f / 1e9, "GFLOP/s")
            ));
        }
        if !spec.is_empty() {
            let clock = self
                .clock_mhz
                .map(|m| format!(" at the maximum SM clock, {m:.0} MHz"))
                .unwrap_or_default();
            parts.push(format!("from spec{clock}: {}", spec.join(", ")));
        }
        (!parts.is_empty()).then(|| format!("Ceilings: {}.\n\n", parts.join("; ")))
    }
}

/// One JSON line of a peer script (`peers/run_peers.py`), as `ptxlab
/// bench --peers` reads them.
#[derive(Debug, Clone)]
pub enum PeerLine {
    /// A result row: every line with a `workload` (its `note`, when it has
    /// one, is the row's note, not a progress line).
    Row(Box<Row>),
    /// A module starting (`{"step": ...}`).
    Step(String),
    /// A long peer announcing itself (`common.announce`): what, and about
    /// how long from earlier measurements (seconds, and on what basis).
    Note {
        /// What it does.
        text: String,
        /// Expected duration in seconds, when known.
        expected_s: Option<f64>,
        /// Where the estimate comes from.
        basis: Option<String>,
    },
    /// A module finished (`{"done": ...}`).
    Done,
    /// Anything else (not JSON, or JSON of none of these shapes).
    Other,
}

impl PeerLine {
    /// Classifies one line of a peer script's output.
    pub fn parse(line: &str) -> PeerLine {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            return PeerLine::Other;
        };
        if v.get("workload").is_some() {
            return Row::from_json(&v).map_or(PeerLine::Other, |r| PeerLine::Row(Box::new(r)));
        }
        if let Some(step) = v["step"].as_str() {
            PeerLine::Step(step.to_string())
        } else if let Some(note) = v["note"].as_str() {
            PeerLine::Note {
                text: note.to_string(),
                expected_s: v["expected_s"]
                    .as_f64()
                    .filter(|s| s.is_finite() && *s >= 0.0),
                basis: v["basis"].as_str().map(str::to_string),
            }
        } else if v.get("done").is_some() {
            PeerLine::Done
        } else {
            PeerLine::Other
        }
    }
}

/// The identity of the computation a row measured: what decides which rows
/// are compared (derived in `problem.rs`, where its methods live).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
pub struct Problem {
    /// Workload (`attention`).
    pub workload: String,
    /// The size's numbers in one spelling (`problem::size_key`: `4x16x8192x128`);
    /// a size without numbers is its own text.
    pub shape: String,
    /// The size's words in order, lower case, without dimension names
    /// (`B=`) and `x` (`problem::size_words`: `["causal"]`).
    #[serde(default)]
    pub qualifiers: Vec<String>,
    /// Precision of the answer (`bf16`; a mixed solve's field: `f64`).
    pub precision: String,
    /// A solve's relative-residual tolerance (`1e-8`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<String>,
    /// What is measured, where a shape holds more than one computation: the
    /// throughput unit's first word (`GFLOP/s`); empty for a solve to a
    /// tolerance and for a row that names no unit and matches no other.
    #[serde(default)]
    pub measure: String,
}
