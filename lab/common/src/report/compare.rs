//! The comparisons of a run: for each problem its best Rust rung, its best
//! peer and their ratio, and for each workload the problem its summary line
//! shows. Rows are compared only inside one [`Group`] (one problem), and
//! only a checked row (`ok`) can be best: an INACCURATE row is charted, a
//! FAILED one is not, and neither is ever "best". A peer whose error is far
//! above its problem's Rust rows did not solve the same problem (a TF32
//! product in an f32 problem): [`judge_peers`] marks it INACCURATE.

use super::group::{Group, Kind, groups, is_ceiling, kind, time_ms};
use super::problem::precision_family;
use super::row::{Row, Status};

/// How far above the largest relative error of its problem's checked Rust
/// GPU rows a peer's may be and still count as a solution of the problem.
pub const PEER_ERROR_FACTOR: f64 = 100.0;

/// The relative error a peer of `precision` may always have, whatever
/// the Rust rows reach: above what a computation in the next lower
/// precision reaches (an f64 result computed in f32 has about 1e-7), so
/// an approximation such as a NUFFT to 1e-9 still counts as f64. `None`:
/// a precision without one (integers, counts), whose peers are not judged.
pub fn peer_error_floor(precision: &str) -> Option<f64> {
    match precision_family(precision) {
        "f64" => Some(1e-7),
        "f32" => Some(1e-4),
        "f16" | "bf16" => Some(5e-2),
        "fp8" => Some(0.1),
        _ => None,
    }
}

/// Marks INACCURATE every checked peer row whose relative error is above
/// its problem's bound: [`PEER_ERROR_FACTOR`] times the largest error of
/// the problem's checked Rust GPU rows, and at least
/// [`peer_error_floor`] of its precision (a peer in several problems, a
/// direct solve, takes the largest bound). A problem without a checked
/// Rust GPU row with an error judges none of its peers (there is nothing
/// to compare them with, and a residual of an f32 solve can be large).
/// Such a row is charted and listed with the reason, but never a
/// problem's best peer: the README's lines, the summary and every chart
/// then compare only solutions of the same problem.
pub fn judge_peers(rows: &mut [Row]) {
    let mut bound: Vec<Option<f64>> = vec![None; rows.len()];
    for g in groups(rows) {
        let worst = g
            .rows
            .iter()
            .map(|&i| &rows[i])
            .filter(|r| kind(r) == Kind::Gpu && matches!(r.status, Status::Ok))
            .filter_map(|r| r.rel_err)
            .filter(|e| e.is_finite())
            .reduce(f64::max);
        let Some(worst) = worst else {
            continue;
        };
        for &i in &g.rows {
            if kind(&rows[i]) != Kind::Peer {
                continue;
            }
            let Some(floor) = peer_error_floor(&rows[i].precision) else {
                continue;
            };
            let b = (PEER_ERROR_FACTOR * worst).max(floor);
            bound[i] = Some(bound[i].map_or(b, |x: f64| x.max(b)));
        }
    }
    for (r, b) in rows.iter_mut().zip(bound) {
        if let (Some(b), Some(e), Status::Ok) = (b, r.rel_err, &r.status)
            && e > b
        {
            r.status = Status::Inaccurate(format!(
                "relative error {e:.1e}, above this problem's bound {b:.1e} ({PEER_ERROR_FACTOR}x \
                 its Rust rows' largest, at least {:.0e} in {}): not compared",
                peer_error_floor(&r.precision).unwrap_or(0.0),
                precision_family(&r.precision)
            ));
        }
    }
}

/// The checked (`ok`) row of `idx` of kind `k` with the least median time,
/// ceilings aside.
fn best_of(rows: &[Row], idx: &[usize], k: Kind) -> Option<usize> {
    idx.iter()
        .copied()
        .filter(|&i| {
            let r = &rows[i];
            kind(r) == k && matches!(r.status, Status::Ok) && !is_ceiling(r)
        })
        .filter_map(|i| time_ms(&rows[i]).map(|t| (i, t)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i)
}

/// The best Rust GPU rung among `idx`: checked, least median time.
pub(crate) fn best_gpu(rows: &[Row], idx: &[usize]) -> Option<usize> {
    best_of(rows, idx, Kind::Gpu)
}

/// The best peer among `idx`: checked, least median time.
pub(crate) fn best_peer(rows: &[Row], idx: &[usize]) -> Option<usize> {
    best_of(rows, idx, Kind::Peer)
}

/// One problem's best Rust rung against its best peer.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The problem's charted rows.
    pub group: Group,
    /// Its best Rust GPU rung (index into the rows compared).
    pub best: Option<usize>,
    /// Its best peer.
    pub peer: Option<usize>,
}

impl Comparison {
    /// The first Rust GPU row of the problem, in run order.
    fn first_gpu(&self, rows: &[Row]) -> usize {
        self.group
            .rows
            .iter()
            .copied()
            .find(|&i| kind(&rows[i]) == Kind::Gpu)
            .unwrap_or(usize::MAX)
    }

    /// The peer's median time over the best rung's: above 1 the Rust
    /// kernel is faster by that factor.
    pub fn ratio(&self, rows: &[Row]) -> Option<f64> {
        let b = time_ms(&rows[self.best?])?;
        let p = time_ms(&rows[self.peer?])?;
        Some(p / b)
    }
}

/// One [`Comparison`] per problem with a Rust GPU rung or a peer, in order
/// of first appearance.
pub fn comparisons(rows: &[Row]) -> Vec<Comparison> {
    groups(rows)
        .into_iter()
        .map(|g| Comparison {
            best: best_gpu(rows, &g.rows),
            peer: best_peer(rows, &g.rows),
            group: g,
        })
        .filter(|c| c.best.is_some() || c.peer.is_some())
        .collect()
}

/// The problem a workload's summary line shows: of the problems of
/// `workloads` with a best Rust rung, those with a peer first, then the
/// largest size, then the one whose Rust GPU rows ran first.
pub fn headline<'a>(
    rows: &[Row],
    cs: &'a [Comparison],
    workloads: &[&str],
) -> Option<&'a Comparison> {
    let mut best: Option<&Comparison> = None;
    for c in cs
        .iter()
        .filter(|c| workloads.contains(&c.group.workload()) && c.best.is_some())
    {
        let better = match best {
            None => true,
            Some(b) => {
                let key = |c: &Comparison| (c.peer.is_some(), c.group.magnitude());
                let (bp, bm) = key(b);
                let (cp, cm) = key(c);
                (cp && !bp)
                    || (cp == bp && cm > bm)
                    || (cp == bp && cm == bm && c.first_gpu(rows) < b.first_gpu(rows))
            }
        };
        if better {
            best = Some(c);
        }
    }
    best
}

/// The rows of `workloads` among `rows` whose check did not pass:
/// (failed, inaccurate).
pub fn failed_checks(rows: &[Row], workloads: &[&str]) -> (usize, usize) {
    let mine = rows
        .iter()
        .filter(|r| workloads.contains(&r.workload.as_str()));
    mine.fold((0, 0), |(f, i), r| match r.status {
        Status::Failed(_) => (f + 1, i),
        Status::Inaccurate(_) => (f, i + 1),
        _ => (f, i),
    })
}

#[cfg(test)]
mod tests {
    use super::super::group::tests::timed;
    use super::*;

    /// The case: causal rung 5 (1.82 ms) must never meet the
    /// non-causal cuDNN time (3.35 ms).
    #[test]
    fn the_best_rung_meets_only_the_peers_of_its_problem() {
        let (nc, c) = ("B=4 H=16 S=8192 D=128", "B=4 H=16 S=8192 D=128 causal");
        let mut wrong = timed(c, "gpu", "6 faster but wrong", 0.5);
        wrong.status = Status::Inaccurate("far from the reference".into());
        let rows = [
            timed(nc, "gpu", "4 warp-specialised", 3.49),
            timed(c, "gpu", "4 warp-specialised", 3.76),
            timed(c, "gpu", "5 causal tile skipping", 1.82),
            wrong,
            timed(nc, "torch", "torch sdpa cuDNN", 3.35),
            timed(c, "torch", "torch sdpa cuDNN", 1.75),
        ];
        let cs = comparisons(&rows);
        assert_eq!(cs.len(), 2);
        for cmp in &cs {
            let (b, p) = (cmp.best.unwrap(), cmp.peer.unwrap());
            assert_eq!(rows[b].size, rows[p].size, "two problems paired");
        }
        assert_eq!(cs[0].best, Some(0));
        assert_eq!(cs[1].best, Some(2), "an INACCURATE row was best");
        let r0 = cs[0].ratio(&rows).unwrap();
        let r1 = cs[1].ratio(&rows).unwrap();
        assert!((r0 - 3.35 / 3.49).abs() < 1e-12, "{r0}");
        assert!((r1 - 1.75 / 1.82).abs() < 1e-12, "{r1}");
        // Tie on size: the first problem with a peer.
        let h = headline(&rows, &cs, &["attention"]).unwrap();
        assert_eq!(h.best, Some(0));
        assert_eq!(failed_checks(&rows, &["attention"]), (0, 1));
    }

    fn with_err(mut r: Row, prec: &str, err: f64) -> Row {
        r.precision = prec.into();
        r.rel_err = Some(err);
        r
    }

    /// A TF32 product is not a solution of an f32 problem: the f32 GEMM's
    /// best peer is the FP32 one, the TF32 row is INACCURATE with its
    /// reason; peers as accurate as the Rust rows, and integer problems,
    /// are left alone.
    #[test]
    fn a_peer_far_less_accurate_than_the_problem_is_never_best() {
        let (g, b, u) = ("8192^3", "4096^3", "2^24");
        let mut rows = vec![
            with_err(timed(g, "gpu", "3xTF32", 9.5), "f32", 3e-7),
            with_err(timed(g, "torch", "torch TF32 on", 2.7), "f32", 2.6e-4),
            with_err(timed(g, "torch", "torch TF32 off", 20.0), "f32", 1e-6),
            with_err(timed(b, "gpu", "bf16 wgmma", 1.0), "bf16", 4e-3),
            with_err(timed(b, "torch", "torch bf16", 1.1), "bf16", 5e-3),
            // The floor of f32 above 100x the Rust error.
            with_err(timed("300 curves", "gpu", "batch", 1.0), "f32", 1e-7),
            with_err(
                timed("300 curves", "nifty-ls", "nifty-ls f32", 1.0),
                "f32",
                0.36,
            ),
            with_err(timed("300 curves", "cupy", "cupy f32", 1.0), "f32", 5e-5),
            // An f64 approximation to 1e-9 is an f64 solution.
            with_err(timed("2^20 freqs", "gpu", "direct", 1.0), "f64", 1e-14),
            with_err(
                timed("2^20 freqs", "nifty-ls", "nifty-ls f64", 1.0),
                "f64",
                8.5e-9,
            ),
            // No Rust row to compare with: not judged.
            with_err(timed("8192^2", "cupy", "cupy f32 solve", 1.0), "f32", 4e-3),
            with_err(timed(u, "cupy", "cupy histogram", 1.0), "u8", 0.5),
        ];
        judge_peers(&mut rows);
        let inaccurate: Vec<&str> = rows
            .iter()
            .filter(|r| matches!(r.status, Status::Inaccurate(_)))
            .map(|r| r.variant.as_str())
            .collect();
        assert_eq!(inaccurate, ["torch TF32 on", "nifty-ls f32"]);
        let Status::Inaccurate(why) = &rows[1].status else {
            unreachable!()
        };
        assert!(
            why.contains("2.6e-4") && why.contains("bound 1.0e-4"),
            "{why}"
        );
        let cs = comparisons(&rows);
        let gemm = cs
            .iter()
            .find(|c| rows[c.best.unwrap_or(0)].size == g)
            .unwrap();
        assert_eq!(rows[gemm.peer.unwrap()].variant, "torch TF32 off");
        // Judging twice changes nothing more.
        let before: Vec<String> = rows.iter().map(|r| format!("{:?}", r.status)).collect();
        judge_peers(&mut rows);
        let after: Vec<String> = rows.iter().map(|r| format!("{:?}", r.status)).collect();
        assert_eq!(before, after);
    }
}
