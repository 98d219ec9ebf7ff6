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
                // A direct solve names its precision: its residual is that
                // precision's rounding.
                if (self.name_prec || p.is_direct()) && !p.precision.is_empty() {
                    s.push_str(&format!(" · {}", p.precision));
                }
                if p.is_direct() {
                    s.push_str(" · direct solve");
                } else {
                    s.push_str(&format!(" · to {t}"));
                }
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
/// No group holds rows of two problems, but for a direct solve, which is
/// in every group of a tolerance it reaches ([`Problem::reached_by`]).
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
    // A direct solve joins every solve to a tolerance that it reaches (same
    // equation, residual at or below the tolerance); its own group stays
    // only for the rows that joined none.
    let mut joined = vec![false; rows.len()];
    for (i, (r, p)) in rows.iter().zip(&ps).enumerate() {
        if !p.is_direct() || time_ms(r).is_none() {
            continue;
        }
        for g in gs.iter_mut().filter(|g| g.problem.reached_by(p, r.rel_err)) {
            let at = g.rows.partition_point(|&j| j < i);
            g.rows.insert(at, i);
            joined[i] = true;
        }
    }
    gs.retain(|g| !g.problem.is_direct() || g.rows.iter().any(|&i| !joined[i]));
    for g in gs.iter_mut().filter(|g| g.problem.is_direct()) {
        g.rows.retain(|&i| !joined[i]);
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
pub(crate) mod tests {
    use super::*;
    use crate::runtime::Timing;

    /// A checked attention row (bf16, GFLOP/s) of `size` timed at `ms`
    /// (the report's tests build their runs from it).
    pub(crate) fn timed(size: &str, backend: &str, variant: &str, ms: f64) -> Row {
        let mut r = Row::plain("attention", variant, backend, size, "bf16");
        r.timing = Some(Timing::from_samples(vec![ms]));
        r.unit = "GFLOP/s".into();
        r
    }

    /// A poisson-mg solve row: `grid`, `precision`, timed at `ms`, with its
    /// relative residual.
    fn solve(variant: &str, backend: &str, grid: &str, prec: &str, ms: f64, res: f64) -> Row {
        let mut r = Row::plain("poisson-mg", variant, backend, grid, prec);
        r.timing = Some(Timing::from_samples(vec![ms]));
        r.rel_err = Some(res);
        r
    }

    #[test]
    fn a_direct_solve_meets_every_tolerance_of_its_grid_and_precision() {
        let spectral = "CuPy spectral solve (DST-I via rfft of the odd extension, direct)";
        let mixed = "f32 cycles, f64 field";
        let rows = [
            solve(
                "multigrid V(2,2) to 1e-8",
                "gpu",
                "4096x4096",
                mixed,
                7.1,
                1e-9,
            ),
            solve(
                "multigrid V(2,2) to 1e-10",
                "gpu",
                "4096x4096",
                mixed,
                8.3,
                5e-11,
            ),
            solve(
                "multigrid V(2,2) to 1e-8",
                "gpu",
                "8192x8192",
                "f64",
                29.0,
                1e-9,
            ),
            solve("CuPy cg to 1e-08", "cupy", "4096x4096", "f64", 8455.0, 9e-9),
            // Same grid, f64 answer: reaches both tolerances.
            solve(spectral, "cupy", "4096x4096", "f64", 5.4, 1.5e-12),
            // Same grid, f32 answer: another precision.
            solve(spectral, "cupy", "4096x4096", "f32", 3.2, 6.8e-4),
            // Another grid.
            solve(spectral, "cupy", "1025x1025", "f64", 0.8, 7e-14),
        ];
        let gs = groups(&rows);
        let of = |tol: &str, shape: &str| {
            gs.iter()
                .find(|g| g.problem.tolerance.as_deref() == Some(tol) && g.problem.shape == shape)
                .unwrap_or_else(|| panic!("no group {shape} to {tol}: {gs:?}"))
        };
        assert_eq!(of("1e-8", "4096x4096").rows, [0, 3, 4]);
        assert_eq!(of("1e-10", "4096x4096").rows, [1, 4]);
        // Another grid: the 8192 solve meets no direct solve.
        assert_eq!(of("1e-8", "8192x8192").rows, [2]);
        // The f32 and 1025 direct solves reach no tolerance group: each
        // keeps its own.
        assert_eq!(of("direct", "4096x4096").rows, [5]);
        assert_eq!(of("direct", "1025x1025").rows, [6]);
        assert_eq!(
            of("direct", "1025x1025").label(),
            "1025x1025 · f64 · direct solve"
        );
        assert_eq!(gs.len(), 5);
        let cs = crate::report::compare::comparisons(&rows);
        let c = cs
            .iter()
            .find(|c| c.group.problem == of("1e-8", "4096x4096").problem)
            .unwrap();
        assert_eq!((c.best, c.peer), (Some(0), Some(4)));
        // A residual above the tolerance: it does not reach it.
        let mut loose = rows.clone();
        loose[4].rel_err = Some(1e-9);
        let gs = groups(&loose);
        let g = gs
            .iter()
            .find(|g| g.problem.tolerance.as_deref() == Some("1e-10"))
            .unwrap();
        assert_eq!(g.rows, [1]);
        // A problem recorded without the rule (results.json of an older run)
        // is read as a direct solve still.
        let mut recorded = rows.clone();
        recorded[4].problem = Some(Problem {
            tolerance: None,
            ..crate::report::problem::problems(&rows)[4].clone()
        });
        assert_eq!(groups(&recorded)[0].rows, [0, 3, 4]);
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
