//! The rows of `poisson-scaling`'s tables, Jacobi's (ms per sweep) and the
//! multigrid's and PCG's (ms per solve), and their `results.json` form.

use super::super::types::Grid;
use ptxlab_common::Backend;
use ptxlab_common::cli::{backend_name, timed_row};
use ptxlab_common::report::Row;
use ptxlab_common::runtime::Timing;

/// One row of a `poisson-scaling` table.
#[derive(Debug, Clone)]
pub struct ScalingRow {
    /// `"strong"`, `"weak"` or `"reference"` (a single-device solver).
    pub kind: &'static str,
    /// Global grid.
    pub grid: Grid,
    /// Devices.
    pub gpus: usize,
    /// What ran: whole grid, slab code, overlapped, not overlapped.
    pub mode: String,
    /// Cycles to the tolerance of a solve; `None` for Jacobi sweeps.
    pub cycles: Option<usize>,
    /// ms per sweep (Jacobi) or per solve: the median of the timed
    /// repetitions, and their spread.
    pub timing: Timing,
    /// Speedup over one device (strong), or `None`.
    pub speedup: Option<f64>,
    /// Efficiency: speedup / devices (strong); weak: time on one device of
    /// S x S over time on N of S x N S (per cycle for a solve).
    pub efficiency: Option<f64>,
}

impl ScalingRow {
    /// Median ms per sweep or per solve.
    pub fn ms(&self) -> f64 {
        self.timing.median_ms
    }

    /// Median ms per cycle of a solve (per sweep for Jacobi).
    pub fn ms_per_cycle(&self) -> f64 {
        self.ms() / self.cycles.unwrap_or(1).max(1) as f64
    }

    /// Grid cells updated per second, in billions, at the median time (a
    /// Jacobi sweep's throughput).
    pub fn gcells_per_s(&self) -> f64 {
        self.grid.cells() as f64 / (self.ms() * 1e-3) / 1e9
    }

    /// The speed-up as a table cell (`1.81x`), empty when there is none.
    pub fn speedup_cell(&self) -> String {
        self.speedup.map_or(String::new(), |v| format!("{v:.2}x"))
    }

    /// The efficiency as a table cell (`90.3%`), empty when there is none.
    pub fn efficiency_cell(&self) -> String {
        self.efficiency
            .map_or(String::new(), |v| format!("{:.1}%", 100.0 * v))
    }

    /// The note of its `results.json` row: `strong scaling, 1.91x,
    /// efficiency 95.5%` (kind `strong` or `weak`), `single-device
    /// reference` (kind `reference`).
    fn scaling_note(&self) -> String {
        let mut s = match self.kind {
            "reference" => "single-device reference".to_string(),
            k => format!("{k} scaling"),
        };
        if self.speedup.is_some() {
            s.push_str(&format!(", {}", self.speedup_cell()));
        }
        if self.efficiency.is_some() {
            s.push_str(&format!(", efficiency {}", self.efficiency_cell()));
        }
        s
    }

    /// The row of `results.json` (`--json`): `what` (the rung, or the
    /// method) on `gpus` devices; Jacobi's throughput in GCells/s, a
    /// solve's cycles to `tol` and ms per cycle, and the scaling, in the
    /// note (the row's `speedup` column is over the CPU baseline).
    pub fn to_row(&self, what: &str, backend: Backend, precision: &str, tol: Option<f64>) -> Row {
        let mut r = timed_row(
            "poisson-scaling",
            &format!("{what} on {}, {}", gpus_label(self.gpus), self.mode),
            backend_name(backend),
            &self.grid.label(),
            precision,
            &self.timing,
            self.cycles
                .is_none()
                .then_some((self.gcells_per_s(), "GCells/s")),
        );
        let scaling = self.scaling_note();
        r.note = match (self.cycles, tol) {
            (Some(c), Some(tol)) => format!(
                "to {tol:e}: {c} cycles, {:.3} ms/cycle; {scaling}",
                self.ms_per_cycle()
            ),
            _ => scaling,
        };
        r
    }
}

/// `1 GPU`, `4 GPUs`.
fn gpus_label(n: usize) -> String {
    if n == 1 {
        "1 GPU".into()
    } else {
        format!("{n} GPUs")
    }
}
