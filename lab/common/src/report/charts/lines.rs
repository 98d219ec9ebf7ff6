//! Line charts: throughput against size over the problems of one family
//! (equal but for the shape), residual against time of the solves of one
//! equation, and the CPU thread sweep.

use super::{Chart, MAX_SERIES, PALETTE, label, part_name, parts, peer_colour, slug};
use crate::report::group::{Group, Kind, kind, time_ms};
use crate::report::plot::{Lines, Series, XAxis, lines};
use crate::report::problem::{Problem, problems};
use crate::report::row::Row;
use crate::report::units::axis_unit;

/// One variant's points in a scaling chart: (size index, throughput).
struct Trace {
    /// Variant, backend, precision.
    key: (String, String, String),
    pts: Vec<(f64, f64)>,
    kind: Kind,
    /// Its first row (for the label).
    first: usize,
}

/// Throughput against size, for each family of problems of a workload
/// (equal but for the shape: one precision, one measure, one set of
/// qualifiers such as `causal`) measured at two sizes or more.
pub(super) fn scaling(rows: &[Row], workload: &str, gs: &[&Group]) -> Vec<Chart> {
    let mut families: Vec<Vec<&Group>> = Vec::new();
    for &g in gs {
        if g.problem.tolerance.is_some() || g.problem.measure.is_empty() {
            continue;
        }
        match families
            .iter_mut()
            .find(|f| f[0].problem.same_but_shape(&g.problem))
        {
            Some(f) => f.push(g),
            None => families.push(vec![g]),
        }
    }
    families.retain(|f| f.len() >= 2);
    let mut out = Vec::new();
    for (fi, mut fam) in families.iter().cloned().enumerate() {
        let p = fam[0].problem.clone();
        let (prec, unit) = (p.precision.clone(), p.measure.clone());
        // Qualifiers in the name where another chart has this precision
        // and unit (causal and non-causal attention).
        let named = families.iter().enumerate().any(|(k, f)| {
            k != fi
                && f[0].problem.precision == prec
                && f[0].problem.measure == unit
                && f[0].problem.qualifiers != p.qualifiers
        }) && !p.qualifiers.is_empty();
        let quals = if named {
            format!(" {}", p.qualifiers.join(" "))
        } else {
            String::new()
        };
        fam.sort_by(|a, b| a.magnitude().total_cmp(&b.magnitude()));
        let names: Vec<String> = fam.iter().map(|g| g.size.clone()).collect();
        // One series per variant, backend and precision, in run order; one
        // point per size (the first row).
        let mut series: Vec<Trace> = Vec::new();
        for (x, g) in fam.iter().enumerate() {
            for &i in &g.rows {
                let r = &rows[i];
                let Some(tp) = r.throughput.filter(|v| v.is_finite() && *v > 0.0) else {
                    continue;
                };
                let key = (r.variant.clone(), r.backend.clone(), r.precision.clone());
                match series.iter_mut().find(|s| s.key == key) {
                    Some(s) if s.pts.iter().any(|p| p.0 == x as f64) => {}
                    Some(s) => s.pts.push((x as f64, tp)),
                    None => series.push(Trace {
                        key,
                        pts: vec![(x as f64, tp)],
                        kind: kind(r),
                        first: i,
                    }),
                }
            }
        }
        // A baseline at one size is a point of another chart (the thread
        // sweep), not a line.
        series.retain(|s| s.pts.len() >= 2 || matches!(s.kind, Kind::Gpu | Kind::Peer));
        series.sort_by_key(|s| s.kind == Kind::Peer);
        if !series.iter().any(|s| s.pts.len() >= 2) {
            continue;
        }
        let to_series = |k: usize, t: &Trace| {
            let mut pts = t.pts.clone();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                label: label(&rows[t.first], Some(prec.as_str())),
                colour: PALETTE[k % PALETTE.len()],
                dash: t.kind != Kind::Gpu,
                pts,
            }
        };
        let all: Vec<Series> = series
            .iter()
            .enumerate()
            .map(|(k, s)| to_series(k, s))
            .collect();
        let stem = format!(
            "scaling-{}-{}",
            slug(workload),
            slug(&format!("{quals}-{prec}-{}", unit.replace('/', "-per-")))
        );
        // The axis in the unit of its largest value (TFLOP/s, not 684637 GFLOP/s).
        let max = series
            .iter()
            .flat_map(|t| t.pts.iter().map(|p| p.1))
            .fold(0.0, f64::max);
        let (div, unit) = axis_unit(max, &unit);
        let all: Vec<Series> = all
            .into_iter()
            .map(|mut s| {
                for p in &mut s.pts {
                    p.1 /= div;
                }
                s
            })
            .collect();
        let base = format!("{workload}{quals} · {prec} — throughput against size");
        let what_all = format!(
            "Throughput ({unit}) of each variant at each size it ran, sizes in increasing order; Rust GPU rows solid, CPU baselines and peers dashed."
        );
        // (name, title, subtitle, lines) of each chart.
        let mut charts: Vec<(String, String, String, Vec<Series>)> = Vec::new();
        if all.len() <= MAX_SERIES {
            charts.push((stem, base, what_all, all));
        } else {
            // Too many lines for one chart: the Rust rungs, then the best
            // Rust rung (at the largest size) with the baselines and peers.
            let last = names.len() as f64 - 1.0;
            let at_last = |s: &Series| {
                s.pts
                    .iter()
                    .filter(|p| p.0 == last)
                    .map(|p| p.1)
                    .fold(0.0, f64::max)
            };
            let (gpu, other): (Vec<_>, Vec<_>) = all
                .into_iter()
                .zip(&series)
                .partition(|(_, s)| s.kind == Kind::Gpu);
            let gpu: Vec<Series> = gpu.into_iter().map(|p| p.0).collect();
            let other: Vec<Series> = other.into_iter().map(|p| p.0).collect();
            let best = gpu
                .iter()
                .max_by(|a, b| at_last(a).total_cmp(&at_last(b)))
                .cloned();
            let rung_parts = parts(&gpu, MAX_SERIES);
            let n = rung_parts.len();
            for (k, p) in rung_parts.into_iter().enumerate() {
                let (name, part) = part_name(&format!("{stem}-rungs"), k, n);
                charts.push((
                    name,
                    format!("{base}: the Rust rungs{part}"),
                    format!("Throughput ({unit}) of each Rust GPU rung at each size it ran, sizes in increasing order."),
                    p,
                ));
            }
            if !other.is_empty() {
                let mut v: Vec<Series> = best.into_iter().collect();
                v.extend(other);
                let other_parts = parts(&v, MAX_SERIES);
                let n = other_parts.len();
                for (k, p) in other_parts.into_iter().enumerate() {
                    let (name, part) = part_name(&format!("{stem}-baselines-peers"), k, n);
                    charts.push((
                        name,
                        format!("{base}: baselines and peers{part}"),
                        format!("Throughput ({unit}) of the best Rust GPU rung at the largest size (solid), the CPU baselines and the peers (dashed), at each size they ran."),
                        p,
                    ));
                }
            }
        }
        for (name, title, what, s) in charts {
            let figure = lines(&Lines {
                title: title.clone(),
                subtitle: what.clone(),
                x: XAxis::Categories {
                    names: names.clone(),
                    title: "size".into(),
                },
                y_title: format!("{unit} (log)"),
                y_log_ratio: 1.0,
                series: s,
                point_labels: false,
                legend: true,
            });
            out.push(Chart {
                name,
                workload: workload.to_string(),
                problem: None,
                caption: format!("{title}. {what}"),
                figure,
            });
        }
    }
    out
}

/// Relative residual against time of every row of a workload with a
/// history (solves, the extrapolated Jacobi line, the peers'), one chart
/// per equation (problems equal but for the tolerance and measure: each
/// curve runs to its own tolerance).
pub(super) fn convergence(rows: &[Row], workload: &str) -> Vec<Chart> {
    let ps = problems(rows);
    let with_history = |i: usize| rows[i].workload == workload && rows[i].history.len() >= 2;
    let mut equations: Vec<(Problem, String)> = Vec::new();
    for i in (0..rows.len()).filter(|&i| with_history(i)) {
        if !equations.iter().any(|e| e.0.same_equation(&ps[i])) {
            equations.push((ps[i].clone(), rows[i].size.clone()));
        }
    }
    let mut out = Vec::new();
    for (eq, size) in &equations {
        // The precision in the name where two equations share a shape.
        let twin = equations
            .iter()
            .any(|(o, _)| o.shape == eq.shape && !o.same_equation(eq));
        let mut series = Vec::new();
        let mut members: Vec<&Row> = (0..rows.len())
            .filter(|&i| with_history(i) && ps[i].same_equation(eq))
            .map(|i| &rows[i])
            .collect();
        members.sort_by_key(|r| kind(r));
        for (k, r) in members.iter().enumerate() {
            let pts: Vec<(f64, f64)> = r
                .history
                .iter()
                .copied()
                .filter(|(t, v)| *t > 0.0 && *v > 0.0 && t.is_finite() && v.is_finite())
                .collect();
            if pts.len() < 2 {
                continue;
            }
            let mut label = r.variant.clone();
            let mut tags = Vec::new();
            if kind(r) != Kind::Gpu {
                tags.push(r.backend.clone());
            }
            tags.push(r.precision.clone());
            label.push_str(&format!(" [{}]", tags.join(", ")));
            series.push(Series {
                label,
                colour: if kind(r) == Kind::Peer {
                    peer_colour(&r.backend)
                } else {
                    PALETTE[k % PALETTE.len()]
                },
                dash: kind(r) != Kind::Gpu,
                pts,
            });
        }
        if series.is_empty() {
            continue;
        }
        let mut title = format!("{workload} · {size}");
        let mut name = format!("convergence-{}-{}", slug(workload), slug(&eq.shape));
        if twin {
            title.push_str(&format!(" · {}", eq.precision));
            name.push_str(&format!("-{}", slug(&eq.precision)));
        }
        title.push_str(" — convergence");
        let what = "Relative residual against the time since the start of each solve (both logarithmic): the Rust GPU solvers solid, the CPU solver and the peers dashed.";
        let figure = lines(&Lines {
            title: title.clone(),
            subtitle: what.into(),
            x: XAxis::Numeric {
                log: true,
                title: "time since the start of the solve (ms, log)".into(),
            },
            y_title: "relative residual ‖b − Δₕp‖ / ‖b‖ (log)".into(),
            y_log_ratio: 1.0,
            series,
            point_labels: false,
            legend: true,
        });
        out.push(Chart {
            name,
            workload: workload.to_string(),
            problem: None,
            caption: format!("{title}. {what}"),
            figure,
        });
    }
    out
}

/// The CPU Jacobi sweep's throughput against threads, at the problem of
/// the first such row.
pub(super) fn thread_sweep(rows: &[Row]) -> Option<Chart> {
    let ps = problems(rows);
    let sweep = |r: &Row| {
        r.workload == "poisson"
            && r.variant.starts_with("CPU rayon ")
            && r.variant.ends_with(" threads")
            && time_ms(r).is_some()
    };
    let first = rows.iter().position(sweep)?;
    let unit = rows[first].unit.clone();
    let mut pts: Vec<(u32, f64)> = rows
        .iter()
        .zip(&ps)
        .filter(|(r, p)| sweep(r) && **p == ps[first])
        .map(|(r, _)| r)
        .filter_map(|r| {
            let n: u32 = r
                .variant
                .trim_start_matches("CPU rayon ")
                .trim_end_matches(" threads")
                .parse()
                .ok()?;
            Some((n, r.throughput?))
        })
        .collect();
    pts.sort_by_key(|p| p.0);
    pts.dedup_by_key(|p| p.0);
    if pts.len() < 2 {
        return None;
    }
    let size = rows[first].size.clone();
    let (div, unit) = axis_unit(pts.iter().map(|p| p.1).fold(0.0, f64::max), &unit);
    let title = format!("poisson · {size} — CPU thread sweep");
    let what = "Throughput of the CPU Jacobi sweep (rayon, one pool per thread count) against the number of threads: where memory bandwidth saturates.";
    let figure = lines(&Lines {
        title: title.clone(),
        subtitle: what.into(),
        x: XAxis::Categories {
            names: pts.iter().map(|p| p.0.to_string()).collect(),
            title: "threads".into(),
        },
        y_title: unit,
        y_log_ratio: f64::INFINITY,
        series: vec![Series {
            label: "CPU rayon".into(),
            colour: PALETTE[0],
            dash: false,
            pts: pts
                .iter()
                .enumerate()
                .map(|(k, p)| (k as f64, p.1 / div))
                .collect(),
        }],
        point_labels: true,
        legend: false,
    });
    Some(Chart {
        name: "poisson-cpu-sweep".into(),
        workload: "poisson".into(),
        problem: None,
        caption: format!("{title}. {what}"),
        figure,
    })
}
