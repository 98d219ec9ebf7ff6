//! The comparisons of a run: for each problem its best Rust rung, its best
//! peer and their ratio, and for each workload the problem its summary line
//! shows. Rows are compared only inside one [`Group`] (one problem), and
//! only a checked row (`ok`) can be best: an INACCURATE row is charted, a
//! FAILED one is not, and neither is ever "best".

use super::group::{Group, Kind, groups, is_ceiling, kind, time_ms};
use super::row::{Row, Status};

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
}
