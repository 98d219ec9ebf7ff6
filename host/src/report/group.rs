//! Which rows the report may put side by side: those of one [`Problem`]
//! (workload, shape, the size's qualifiers such as `causal`, precision,
//! tolerance, measure; see `problem.rs`). A [`Group`] is the charted rows of
//! one problem, the unit of a ladder chart, of a block of the peers chart
//! and of a line of the summary. The **kind** of a row comes from its
//! backend: `gpu` (the Rust kernels), `sim`, `cpu` (baselines), anything
//! else a peer (`torch`, `cupy`, `pyamg`, ...).

use super::problem::{Problem, problems, size_magnitude};
use super::row::{Row, Status};

/// What produced a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A CPU baseline.
    Cpu,
    /// A kernel on the CPU simulator.
    Sim,
    /// A Rust kernel on the GPU.
    Gpu,
    /// A peer from the Python side (CuPy, PyTorch, Numba, pyamg, ...).
    Peer,
}

/// The kind of a row, from its backend.
pub fn kind(r: &Row) -> Kind {
    match r.backend.as_str() {
        "gpu" => Kind::Gpu,
        "sim" => Kind::Sim,
        "cpu" => Kind::Cpu,
        _ => Kind::Peer,
    }
}

/// A row that measures a ceiling (the device copy), not a rung.
pub(crate) fn is_ceiling(r: &Row) -> bool {
    r.variant.contains("(ceiling)")
}

/// The median time of a row that may be charted: checked (`ok`) or shown
/// as inaccurate, with a finite positive time.
pub(crate) fn time_ms(r: &Row) -> Option<f64> {
    if !matches!(r.status, Status::Ok | Status::Inaccurate(_)) {
        return None;
    }
    r.timing
        .as_ref()
        .map(|t| t.median_ms)
        .filter(|t| t.is_finite() && *t > 0.0)
}

/// The charted rows of one problem.
#[derive(Debug, Clone)]
pub struct Group {
    /// The problem of every row.
    pub problem: Problem,
    /// The size as the Rust rows print it (a peer's where no Rust row ran).
    pub size: String,
    /// Indices of the rows (into the slice grouped), in run order.
    pub rows: Vec<usize>,
    /// Another problem of this workload has the same label but for the
    /// unit: name it.
    pub name_unit: bool,
    /// Another problem of this workload has the same label but for the
    /// precision (two solves to one tolerance): name it.
    pub name_prec: bool,
    /// Another problem of this workload has the same shape but other
    /// qualifiers (`causal`): chart names carry them.
    pub name_qualifiers: bool,
}

impl Group {
    /// The workload of every row.
    pub fn workload(&self) -> &str {
        &self.problem.workload
    }

    /// `8192^3 · bf16`, `B=4 H=16 S=8192 D=128 causal · bf16`, `4096x4096 ·
    /// to 1e-8`, `(10000x5000)(5000x7000) · f32 · GB/s`.
    pub fn label(&self) -> String {
        let p = &self.problem;
        let mut s = self.size.clone();
        match &p.tolerance {
            Some(t) => {
                if self.name_prec && !p.precision.is_empty() {
                    s.push_str(&format!(" · {}", p.precision));
                }
                s.push_str(&format!(" · to {t}"));
            }
            None => {
                if !p.precision.is_empty() {
                    s.push_str(&format!(" · {}", p.precision));
                }
                if self.name_unit && !p.measure.is_empty() {
                    s.push_str(&format!(" · {}", p.measure));
                }
            }
        }
        s
    }

    /// The rows: baselines first, then the simulator, the Rust GPU rows and
    /// the peers, each in run order.
    pub fn members(&self, rows: &[Row]) -> Vec<usize> {
        let mut m = self.rows.clone();
        m.sort_by_key(|&i| (kind(&rows[i]), i));
        m
    }

    /// The size's magnitude, for ordering groups by size.
    pub fn magnitude(&self) -> f64 {
        size_magnitude(&self.size)
    }
}

/// Groups the charted rows of `rows` (checked or inaccurate, with a time):
/// one group per [`Problem`] ([`problems`]), in order of first appearance.
/// No group holds rows of two problems.
pub fn groups(rows: &[Row]) -> Vec<Group> {
    let ps = problems(rows);
    let mut gs: Vec<Group> = Vec::new();
    for (i, (r, p)) in rows.iter().zip(&ps).enumerate() {
        if time_ms(r).is_none() {
            continue;
        }
        match gs.iter_mut().find(|g| g.problem == *p) {
            Some(g) => g.rows.push(i),
            None => gs.push(Group {
                problem: p.clone(),
                size: r.size.clone(),
                rows: vec![i],
                name_unit: false,
                name_prec: false,
                name_qualifiers: false,
            }),
        }
    }
    // Display size: the Rust rows' spelling.
    for g in &mut gs {
        if let Some(&i) = g.rows.iter().find(|&&i| kind(&rows[i]) != Kind::Peer) {
            g.size = rows[i].size.clone();
        }
    }
    let snapshot: Vec<Problem> = gs.iter().map(|g| g.problem.clone()).collect();
    for g in &mut gs {
        let p = &g.problem;
        let twin = |o: &&Problem| {
            *o != p
                && o.workload == p.workload
                && o.shape == p.shape
                && o.qualifiers == p.qualifiers
                && o.tolerance == p.tolerance
        };
        g.name_unit = snapshot
            .iter()
            .filter(twin)
            .any(|o| o.precision == p.precision && o.measure != p.measure);
        g.name_qualifiers = snapshot.iter().any(|o| {
            o.workload == p.workload && o.shape == p.shape && o.qualifiers != p.qualifiers
        });
        g.name_prec = p.tolerance.is_some()
            && snapshot
                .iter()
                .filter(twin)
                .any(|o| o.precision != p.precision);
    }
    gs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Timing;

    fn timed(size: &str, backend: &str, variant: &str, ms: f64) -> Row {
        let mut r = Row::plain("attention", variant, backend, size, "bf16");
        r.timing = Some(Timing::from_samples(vec![ms]));
        r.unit = "GFLOP/s".into();
        r
    }

    #[test]
    fn causal_and_non_causal_rows_of_one_shape_are_never_grouped() {
        let rows = [
            timed("B=4 H=16 S=8192 D=128", "gpu", "4 warp-specialised", 3.50),
            timed(
                "B=4 H=16 S=8192 D=128 causal",
                "gpu",
                "4 warp-specialised",
                3.76,
            ),
            timed(
                "B=4 H=16 S=8192 D=128 causal",
                "gpu",
                "5 causal tile skipping",
                1.71,
            ),
            timed("B=4 H=16 S=8192 D=128", "torch", "torch sdpa cuDNN", 3.31),
            timed(
                "B=4 H=16 S=8192 D=128 causal",
                "torch",
                "torch sdpa cuDNN",
                1.74,
            ),
        ];
        let gs = groups(&rows);
        assert_eq!(gs.len(), 2);
        for g in &gs {
            let sizes: Vec<&str> = g.rows.iter().map(|&i| rows[i].size.as_str()).collect();
            assert!(
                sizes.iter().all(|s| *s == sizes[0]),
                "{sizes:?} in one group"
            );
        }
        assert_eq!(gs[0].rows, [0, 3]);
        assert_eq!(gs[1].rows, [1, 2, 4]);
        assert_eq!(gs[1].label(), "B=4 H=16 S=8192 D=128 causal · bf16");
    }
}
