//! The charts of a run, each answering one question about one workload:
//!
//! | chart | file | question |
//! |---|---|---|
//! | ladder | `ladder-<workload>-<size>-<what>` | how far each rung gets over the first GPU rung, in rung order, against the CPU baselines and every peer at the same size (best peer: a reference line); for solves, the time to the tolerance |
//! | peers | `peers-<workload>` | the best Rust rung against each peer, size by size, as a ratio |
//! | scaling | `scaling-<workload>-<prec>-<unit>` | throughput against size, one line per variant |
//! | convergence | `convergence-<workload>-<size>` | residual against time of every solve with a history, peers included |
//! | roofline | `roofline` | every GPU row by intensity against the measured roofs, one colour per workload, the best rung of each labelled |
//! | thread sweep | `poisson-cpu-sweep` | the CPU baseline's throughput against threads |
//!
//! A chart with more bars or lines than stay readable is split into parts
//! (`-1`, `-2`, ...), never cut.

use super::figure::{Figure, Rgb};
use super::group::{
    Class, Group, Kind, groups, is_ceiling, kind, precision_family, size_key, size_magnitude,
    time_ms, without_tolerance,
};
use super::plot::{
    Bar, HBars, Item, Legend, Lines, Mark, RefLine, RoofPoint, Series, XAxis, hbars, lines,
    roofline,
};
use super::row::{Ceilings, Row, Status};

/// One chart of a run.
#[derive(Debug, Clone)]
pub struct Chart {
    /// File stem (`ladder-matmul-8192x8192x8192-bf16`).
    pub name: String,
    /// The workload it belongs to (empty: the whole run).
    pub workload: String,
    /// What it shows, in a sentence or two (the caption).
    pub caption: String,
    /// The drawing.
    pub figure: Figure,
}

/// Bars in one ladder or ratio chart before it is split.
const MAX_BARS: usize = 30;
/// Lines in one scaling chart before it is split.
const MAX_SERIES: usize = 12;

const GPU: Rgb = [49, 130, 189];
const BEST: Rgb = [8, 48, 107];
const CPU: Rgb = [150, 150, 150];
const SIM: Rgb = [188, 170, 220];
const CEILING: Rgb = [170, 190, 210];
const REF: Rgb = [40, 40, 40];
const FASTER: Rgb = [44, 160, 44];
const SLOWER: Rgb = [214, 39, 40];

/// Series and workload colours (dark enough for text on white).
const PALETTE: [Rgb; 10] = [
    [31, 119, 180],
    [230, 110, 0],
    [44, 160, 44],
    [214, 39, 40],
    [148, 103, 189],
    [140, 86, 75],
    [214, 90, 180],
    [100, 100, 100],
    [150, 150, 20],
    [20, 150, 170],
];

/// A peer's colour, by its framework.
fn peer_colour(backend: &str) -> Rgb {
    match backend {
        "torch" => [240, 130, 20],
        "cupy" => [60, 170, 80],
        "numba" => [150, 100, 200],
        "pyamg" => [150, 90, 70],
        "scipy" => [200, 60, 60],
        "nifty-ls" => [220, 100, 180],
        "astropy" => [160, 160, 30],
        _ => [250, 170, 80],
    }
}

/// A file-name piece: lower case letters, digits and dots, `-` between.
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || c == '.' {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

/// A time with three significant digits in its natural unit.
pub fn fmt_time(ms: f64) -> String {
    let sig = |v: f64| {
        if v >= 100.0 {
            format!("{v:.0}")
        } else if v >= 10.0 {
            format!("{v:.1}")
        } else {
            format!("{v:.2}")
        }
    };
    if ms >= 1000.0 {
        format!("{} s", sig(ms / 1e3))
    } else if ms >= 1.0 {
        format!("{} ms", sig(ms))
    } else {
        format!("{} µs", sig(ms * 1e3))
    }
}

/// A factor with three significant digits (`33.9×`, `0.920×`).
fn fmt_factor(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}×")
    } else if v >= 10.0 {
        format!("{v:.1}×")
    } else if v >= 1.0 {
        format!("{v:.2}×")
    } else {
        let d = (2 - v.log10().floor() as i32).max(0) as usize;
        format!("{v:.d$}×")
    }
}

/// A row's label in a chart: its variant (without the tolerance, which a
/// solve's chart names in its title), its framework where the name does
/// not say it, its precision where it differs from the chart's, and its
/// status when it is not `ok`.
fn label(r: &Row, chart_prec: Option<&str>) -> String {
    let mut s = without_tolerance(&r.variant);
    let mut tags = Vec::new();
    match kind(r) {
        Kind::Peer if !r.variant.to_lowercase().contains(&r.backend.to_lowercase()) => {
            tags.push(r.backend.clone())
        }
        Kind::Cpu if !r.variant.to_lowercase().contains("cpu") => tags.push("CPU".into()),
        Kind::Sim => tags.push("simulator".into()),
        _ => {}
    }
    if chart_prec.is_some_and(|p| precision_family(&r.precision) != p) && !r.precision.is_empty() {
        tags.push(r.precision.clone());
    }
    if !tags.is_empty() {
        s.push_str(&format!(" [{}]", tags.join(", ")));
    }
    if let Status::Inaccurate(_) = r.status {
        s.push_str(" — INACCURATE (see the table)");
    }
    s
}

fn kind_colour(r: &Row) -> Rgb {
    if is_ceiling(r) {
        return CEILING;
    }
    match kind(r) {
        Kind::Gpu => GPU,
        Kind::Cpu => CPU,
        Kind::Sim => SIM,
        Kind::Peer => peer_colour(&r.backend),
    }
}

/// The legend swatches of the kinds among `members`.
fn kind_legend(rows: &[Row], members: &[usize], best: Option<usize>) -> Vec<Legend> {
    let mut out = Vec::new();
    let mut push = |mark, text: String| {
        if !out.iter().any(|l: &Legend| l.text == text) {
            out.push(Legend { mark, text });
        }
    };
    for &i in members {
        let r = &rows[i];
        match kind(r) {
            _ if is_ceiling(r) => push(Mark::Swatch(CEILING), "ceiling (device copy)".into()),
            Kind::Gpu if Some(i) == best => push(Mark::Swatch(BEST), "best Rust rung".into()),
            Kind::Gpu => push(Mark::Swatch(GPU), "Rust GPU rung".into()),
            Kind::Cpu => push(Mark::Swatch(CPU), "CPU baseline".into()),
            Kind::Sim => push(Mark::Swatch(SIM), "simulator".into()),
            Kind::Peer => push(
                Mark::Swatch(peer_colour(&r.backend)),
                format!("peer: {}", r.backend),
            ),
        }
    }
    out
}

/// The Rust GPU row with the least time (ceilings aside).
fn best_gpu(rows: &[Row], idx: &[usize]) -> Option<usize> {
    idx.iter()
        .copied()
        .filter(|&i| kind(&rows[i]) == Kind::Gpu && !is_ceiling(&rows[i]))
        .filter_map(|i| time_ms(&rows[i]).map(|t| (i, t)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i)
}

fn best_peer(rows: &[Row], idx: &[usize]) -> Option<usize> {
    idx.iter()
        .copied()
        .filter(|&i| kind(&rows[i]) == Kind::Peer)
        .filter_map(|i| time_ms(&rows[i]).map(|t| (i, t)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i)
}

fn parts<T: Clone>(items: &[T], max: usize) -> Vec<Vec<T>> {
    if items.len() <= max {
        return vec![items.to_vec()];
    }
    let n = items.len().div_ceil(max);
    let per = items.len().div_ceil(n);
    items.chunks(per).map(|c| c.to_vec()).collect()
}

/// Names a chart's parts: `name` alone, or `name-1`, `name-2`, ...
fn part_name(name: &str, k: usize, n: usize) -> (String, String) {
    if n == 1 {
        (name.to_string(), String::new())
    } else {
        (
            format!("{name}-{}", k + 1),
            format!(" (part {} of {n})", k + 1),
        )
    }
}

fn class_slug(g: &Group) -> String {
    match &g.class {
        Class::Tolerance(t) => format!("to-{t}"),
        Class::Measure { prec, unit } if g.name_unit && !unit.is_empty() => {
            slug(&format!("{prec}-{}", unit.replace('/', "-per-")))
        }
        Class::Measure { prec, .. } => slug(prec),
    }
}

/// `ladder-<workload>-<size>[-<what>]`.
fn ladder_name(g: &Group) -> String {
    let mut n = format!("ladder-{}-{}", slug(&g.workload), slug(&g.key));
    let c = class_slug(g);
    if !c.is_empty() {
        n.push('-');
        n.push_str(&c);
    }
    n
}

/// The ladder charts of one group (one, or its parts).
fn ladder(rows: &[Row], g: &Group) -> Vec<Chart> {
    let mut members = g.members(rows);
    // One bar per label: a baseline measured twice at one size shows once.
    let mut seen = Vec::new();
    members.retain(|&i| {
        let k = (&rows[i].variant, &rows[i].backend, &rows[i].precision);
        let fresh = !seen.contains(&k);
        seen.push(k);
        fresh
    });
    // A comparison: two rows at least, one of them a Rust kernel (GPU or
    // simulator) or both the group's own (two peers of a size we lack).
    let ours = members
        .iter()
        .any(|&i| matches!(kind(&rows[i]), Kind::Gpu | Kind::Sim));
    if members.len() < 2 || (!ours && g.rows.len() < 2) {
        return Vec::new();
    }
    let tol = match &g.class {
        Class::Tolerance(t) => Some(t.clone()),
        Class::Measure { .. } => None,
    };
    let prec = match &g.class {
        Class::Measure { prec, .. } => Some(prec.as_str()),
        Class::Tolerance(_) => Some("f64"),
    };
    let t = |i: usize| time_ms(&rows[i]).unwrap_or(f64::NAN);
    let reference = members
        .iter()
        .copied()
        .find(|&i| kind(&rows[i]) == Kind::Gpu && !is_ceiling(&rows[i]))
        .or_else(|| members.iter().copied().find(|&i| !is_ceiling(&rows[i])))
        .unwrap_or(members[0]);
    let ref_t = t(reference);
    let best = best_gpu(rows, &members);
    let peer = best_peer(rows, &members);
    let value = |i: usize| if tol.is_some() { t(i) } else { ref_t / t(i) };
    // CPU baselines more than ten times below the rest of the ladder would
    // squeeze it into a corner of the axis: the axis leaves them out and
    // they show as broken stubs with their values.
    let rest: Vec<f64> = members
        .iter()
        .filter(|&&i| kind(&rows[i]) != Kind::Cpu)
        .map(|&i| value(i))
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let rest_min = rest.iter().copied().fold(f64::MAX, f64::min);
    let off_axis = |i: usize| {
        tol.is_none()
            && !rest.is_empty()
            && kind(&rows[i]) == Kind::Cpu
            && value(i) < rest_min / 10.0
    };
    let bars: Vec<Item> = members
        .iter()
        .map(|&i| {
            let r = &rows[i];
            let mut note = fmt_time(t(i));
            if tol.is_none() {
                note.push_str(&format!(" · {}", fmt_factor(value(i))));
                if let Some(p) = r.pct_of_ceiling.filter(|p| p.is_finite()) {
                    note.push_str(&format!(" · {p:.1}% of ceiling"));
                }
            }
            if let (true, Some(p)) = (Some(i) == best, peer) {
                note.push_str(&format!(" · {} vs the best peer", fmt_factor(t(p) / t(i))));
            }
            if off_axis(i) {
                note = format!("off the axis: {note}");
            }
            Item::Bar(Bar {
                label: label(r, prec),
                value: value(i),
                colour: if Some(i) == best {
                    BEST
                } else {
                    kind_colour(r)
                },
                note,
                strong: Some(i) == best,
                off_axis: off_axis(i),
            })
        })
        .collect();
    let mut refs = Vec::new();
    let mut legend = kind_legend(rows, &members, best);
    if tol.is_none() {
        refs.push(RefLine {
            value: 1.0,
            colour: REF,
            dash: false,
        });
        legend.push(Legend {
            mark: Mark::Line(REF, false),
            text: format!("1× = {} ({})", rows[reference].variant, fmt_time(ref_t)),
        });
    }
    if let Some(p) = peer {
        let c = peer_colour(&rows[p].backend);
        refs.push(RefLine {
            value: value(p),
            colour: c,
            dash: true,
        });
        let v = if tol.is_some() {
            fmt_time(t(p))
        } else {
            fmt_factor(value(p))
        };
        legend.push(Legend {
            mark: Mark::Line(c, true),
            text: format!("best peer: {} ({v})", label(&rows[p], prec)),
        });
    }
    for &c in members.iter().filter(|&&i| is_ceiling(&rows[i])) {
        refs.push(RefLine {
            value: value(c),
            colour: [120, 140, 170],
            dash: true,
        });
    }
    let has = |k: Kind| members.iter().any(|&i| kind(&rows[i]) == k);
    let mut others = Vec::new();
    if has(Kind::Cpu) {
        others.push("the CPU baselines");
    }
    if has(Kind::Peer) {
        others.push("every peer");
    }
    let with = if others.is_empty() {
        String::new()
    } else {
        format!(", with {} measured at the same size", others.join(" and "))
    };
    let dashed = if peer.is_some() {
        "; the dashed line is the fastest peer"
    } else {
        ""
    };
    let (axis, what) = match &tol {
        Some(t) => (
            format!("time to a relative residual of {t} (ms, log; shorter is faster)"),
            format!("Time of each solve to a relative residual of {t} (median){with}{dashed}."),
        ),
        None => {
            let first = if kind(&rows[reference]) == Kind::Gpu {
                "the first GPU rung"
            } else {
                "the first row"
            };
            (
                format!("speed-up over {first} (its median time ÷ the row's; longer is faster)"),
                format!(
                    "Each row's speed-up over {first} ({}), in rung order{with}{dashed}.",
                    rows[reference].variant
                ),
            )
        }
    };
    let name = ladder_name(g);
    let chunks = parts(&bars, MAX_BARS);
    let n = chunks.len();
    chunks
        .into_iter()
        .enumerate()
        .map(|(k, items)| {
            let (name, part) = part_name(&name, k, n);
            let title = format!("{} · {} — ladder{part}", g.workload, g.label());
            let figure = hbars(&HBars {
                title: title.clone(),
                subtitle: what.clone(),
                axis: axis.clone(),
                items,
                refs: refs.clone(),
                legend: legend.clone(),
                origin: None,
                log_ratio: 20.0,
            });
            Chart {
                name,
                workload: g.workload.clone(),
                caption: format!("{title}. {what}"),
                figure,
            }
        })
        .collect()
}

/// The ratio charts of one workload: the best Rust rung of each group
/// against each of its peers.
fn peers_chart(rows: &[Row], workload: &str, gs: &[&Group]) -> Vec<Chart> {
    // Sizes in increasing order; a solve's tolerances from loose to tight.
    let mut gs: Vec<&Group> = gs.to_vec();
    let tol = |g: &Group| match &g.class {
        Class::Tolerance(t) => -t.parse::<f64>().unwrap_or(0.0),
        Class::Measure { .. } => 0.0,
    };
    gs.sort_by(|a, b| {
        size_magnitude(&a.size)
            .total_cmp(&size_magnitude(&b.size))
            .then(tol(a).total_cmp(&tol(b)))
    });
    let mut blocks: Vec<Vec<Item>> = Vec::new();
    for g in gs {
        let Some(best) = best_gpu(rows, &g.rows) else {
            continue;
        };
        let peers: Vec<usize> = g
            .rows
            .iter()
            .copied()
            .filter(|&i| kind(&rows[i]) == Kind::Peer)
            .collect();
        if peers.is_empty() {
            continue;
        }
        let bt = time_ms(&rows[best]).unwrap_or(f64::NAN);
        let prec = match &g.class {
            Class::Measure { prec, .. } => Some(prec.as_str()),
            Class::Tolerance(_) => Some("f64"),
        };
        let mut items = vec![Item::Header(format!(
            "{} — best Rust rung: {} ({})",
            g.label(),
            label(&rows[best], prec),
            fmt_time(bt)
        ))];
        for p in peers {
            let pt = time_ms(&rows[p]).unwrap_or(f64::NAN);
            let ratio = pt / bt;
            items.push(Item::Bar(Bar {
                label: label(&rows[p], prec),
                value: ratio,
                colour: if ratio >= 1.0 { FASTER } else { SLOWER },
                note: format!("{} · peer {}", fmt_factor(ratio), fmt_time(pt)),
                strong: false,
                off_axis: false,
            }));
        }
        blocks.push(items);
    }
    if blocks.is_empty() {
        return Vec::new();
    }
    // Split between sizes, never inside one.
    let mut charts: Vec<Vec<Item>> = vec![Vec::new()];
    for b in blocks {
        let count = |v: &Vec<Item>| v.iter().filter(|i| matches!(i, Item::Bar(_))).count();
        let last = charts.last_mut().expect("one chart at least");
        if !last.is_empty() && count(last) + count(&b) > MAX_BARS {
            charts.push(b);
        } else {
            last.extend(b);
        }
    }
    let what = "For each size: the peer's median time divided by the best Rust GPU row's at the same size and precision. Right of 1 the Rust kernel is faster by that factor (green), left of it the peer is (red).";
    let n = charts.len();
    charts
        .into_iter()
        .enumerate()
        .map(|(k, items)| {
            let (name, part) = part_name(&format!("peers-{}", slug(workload)), k, n);
            let title = format!("{workload} — the best Rust rung against each peer{part}");
            let legend = [(FASTER, "Rust faster"), (SLOWER, "peer faster")]
                .into_iter()
                .filter(|(c, _)| {
                    items
                        .iter()
                        .any(|i| matches!(i, Item::Bar(b) if b.colour == *c))
                })
                .map(|(c, t)| Legend {
                    mark: Mark::Swatch(c),
                    text: t.into(),
                })
                .collect();
            let figure = hbars(&HBars {
                title: title.clone(),
                subtitle: what.to_string(),
                axis: "peer time ÷ best Rust time (log; > 1: Rust is faster)".into(),
                items,
                refs: vec![RefLine {
                    value: 1.0,
                    colour: REF,
                    dash: false,
                }],
                legend,
                origin: Some(1.0),
                log_ratio: 1.0,
            });
            Chart {
                name,
                workload: workload.to_string(),
                caption: format!("{title}. {what}"),
                figure,
            }
        })
        .collect()
}

/// One variant's points in a scaling chart: (size index, throughput).
struct Trace {
    /// Variant, backend, precision.
    key: (String, String, String),
    pts: Vec<(f64, f64)>,
    kind: Kind,
    /// Its first row (for the label).
    first: usize,
}

/// Throughput against size, for each precision and unit of a workload
/// measured at two sizes or more.
fn scaling(rows: &[Row], workload: &str, gs: &[&Group]) -> Vec<Chart> {
    let mut families: Vec<(String, String)> = Vec::new();
    for g in gs {
        if let Class::Measure { prec, unit } = &g.class
            && !unit.is_empty()
            && !families.contains(&(prec.clone(), unit.clone()))
        {
            families.push((prec.clone(), unit.clone()));
        }
    }
    let mut out = Vec::new();
    for (prec, unit) in families {
        let mut fam: Vec<&Group> = gs
            .iter()
            .copied()
            .filter(|g| matches!(&g.class, Class::Measure { prec: p, unit: u } if *p == prec && *u == unit))
            .collect();
        if fam.len() < 2 {
            continue;
        }
        fam.sort_by(|a, b| size_magnitude(&a.size).total_cmp(&size_magnitude(&b.size)));
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
            slug(&format!("{prec}-{}", unit.replace('/', "-per-")))
        );
        let base = format!("{workload} · {prec} — throughput against size");
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
                caption: format!("{title}. {what}"),
                figure,
            });
        }
    }
    out
}

/// Relative residual against time of every row of a workload and size
/// with a history (solves, the extrapolated Jacobi line, the peers').
fn convergence(rows: &[Row], workload: &str) -> Vec<Chart> {
    let mut sizes: Vec<(String, String)> = Vec::new();
    for r in rows
        .iter()
        .filter(|r| r.workload == workload && r.history.len() >= 2)
    {
        let k = size_key(&r.size);
        if !sizes.iter().any(|s| s.0 == k) {
            sizes.push((k, r.size.clone()));
        }
    }
    let mut out = Vec::new();
    for (key, size) in sizes {
        let mut series = Vec::new();
        let mut members: Vec<&Row> = rows
            .iter()
            .filter(|r| r.workload == workload && size_key(&r.size) == key && r.history.len() >= 2)
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
        let title = format!("{workload} · {size} — convergence");
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
            name: format!("convergence-{}-{}", slug(workload), slug(&key)),
            workload: workload.to_string(),
            caption: format!("{title}. {what}"),
            figure,
        });
    }
    out
}

/// Bytes per element of a precision.
fn elem_bytes(prec: &str) -> f64 {
    match precision_family(prec) {
        "f64" | "u64" | "i64" => 8.0,
        "bf16" | "f16" => 2.0,
        "u8" | "i8" => 1.0,
        _ => 4.0,
    }
}

/// FLOP per byte and GFLOP/s of a row, where the workload's arithmetic is known.
pub fn roofline_point(r: &Row) -> Option<(f64, f64)> {
    let t = r.throughput?;
    let elem = elem_bytes(&r.precision);
    match (
        r.workload.as_str(),
        r.unit.split_whitespace().next().unwrap_or(""),
    ) {
        ("vector-add", "GB/s") => Some((1.0 / (3.0 * elem), t / (3.0 * elem))),
        ("poisson", "GCells/s") => Some((6.0 / (3.0 * elem), t * 6.0)),
        ("diffusion", "GCells/s") => Some((7.0 / (3.0 * elem), t * 7.0)),
        ("reduce", "GB/s") => Some((1.0 / elem, t / elem)),
        (_, "GFLOP/s") => {
            let d: Vec<f64> = r
                .size
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|s| s.parse().ok())
                .collect();
            let (m, k, n) = match (d.len(), r.size.contains('^')) {
                (2, true) if d[1] == 3.0 => (d[0], d[0], d[0]),
                (4, false) if d[1] == d[2] => (d[0], d[1], d[3]),
                (3, false) => (d[0], d[1], d[2]),
                _ => return None,
            };
            Some((2.0 * m * n * k / (elem * (m * k + k * n + m * n)), t))
        }
        _ => None,
    }
}

fn roofline_chart(rows: &[Row], ceilings: &Ceilings) -> Option<Chart> {
    let (copy, peak) = (ceilings.copy_gbs?, ceilings.fp32_flops? / 1e9);
    let mut workloads: Vec<&str> = Vec::new();
    let mut pts = Vec::new();
    let mut best: Vec<(usize, f64, &Row)> = Vec::new();
    for r in rows
        .iter()
        .filter(|r| kind(r) == Kind::Gpu && matches!(r.status, Status::Ok) && !is_ceiling(r))
    {
        let Some((ai, gf)) = roofline_point(r).filter(|p| p.0 > 0.0 && p.1 > 0.0) else {
            continue;
        };
        let w = match workloads.iter().position(|w| *w == r.workload) {
            Some(w) => w,
            None => {
                workloads.push(&r.workload);
                workloads.len() - 1
            }
        };
        pts.push((w, ai, gf));
        match best.iter_mut().find(|b| b.0 == w) {
            Some(b) if b.1 >= gf => {}
            Some(b) => *b = (w, gf, r),
            None => best.push((w, gf, r)),
        }
    }
    if pts.is_empty() || copy <= 0.0 || peak <= 0.0 {
        return None;
    }
    let colour = |w: usize| PALETTE[w % PALETTE.len()];
    let mut points: Vec<RoofPoint> = pts
        .iter()
        .map(|&(w, ai, gflops)| RoofPoint {
            ai,
            gflops,
            colour: colour(w),
            label: None,
        })
        .collect();
    let mut legend = Vec::new();
    for &(w, gf, r) in &best {
        if let Some((ai, _)) = roofline_point(r) {
            points.push(RoofPoint {
                ai,
                gflops: gf,
                colour: colour(w),
                label: Some(workloads[w].to_string()),
            });
        }
        legend.push(Legend {
            mark: Mark::Line(colour(w), false),
            text: format!(
                "{}: best rung {} ({}, {}), {:.0} GFLOP/s",
                workloads[w], r.variant, r.precision, r.size, gf
            ),
        });
    }
    let title = "Roofline — every Rust GPU row against the measured roofs";
    let what = format!(
        "GFLOP/s against FLOP per byte of DRAM traffic for one pass; roofs from this run: device copy {copy:.0} GB/s and the FP32 rate from the clock, {:.1} TFLOP/s. One colour per workload: its best rung large and named, the other rows small. Rows above the memory roof reuse data on chip across passes (temporal blocking); tensor-core rows can pass the FP32 roof.",
        peak / 1e3
    );
    let figure = roofline(title, &what, copy, peak, &points, &legend);
    Some(Chart {
        name: "roofline".into(),
        workload: String::new(),
        caption: format!("{title}. {what}"),
        figure,
    })
}

fn thread_sweep(rows: &[Row]) -> Option<Chart> {
    let mut pts: Vec<(u32, f64)> = rows
        .iter()
        .filter(|r| {
            r.workload == "poisson"
                && r.variant.starts_with("CPU rayon ")
                && r.variant.ends_with(" threads")
                && time_ms(r).is_some()
        })
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
    let size = rows
        .iter()
        .find(|r| r.workload == "poisson" && r.variant.starts_with("CPU rayon "))
        .map(|r| r.size.clone())
        .unwrap_or_default();
    let title = format!("poisson · {size} — CPU thread sweep");
    let what = "Throughput of the CPU Jacobi sweep (rayon, one pool per thread count) against the number of threads: where memory bandwidth saturates.";
    let figure = lines(&Lines {
        title: title.clone(),
        subtitle: what.into(),
        x: XAxis::Categories {
            names: pts.iter().map(|p| p.0.to_string()).collect(),
            title: "threads".into(),
        },
        y_title: "GCells/s".into(),
        y_log_ratio: f64::INFINITY,
        series: vec![Series {
            label: "CPU rayon".into(),
            colour: PALETTE[0],
            dash: false,
            pts: pts
                .iter()
                .enumerate()
                .map(|(k, p)| (k as f64, p.1))
                .collect(),
        }],
        point_labels: true,
        legend: false,
    });
    Some(Chart {
        name: "poisson-cpu-sweep".into(),
        workload: "poisson".into(),
        caption: format!("{title}. {what}"),
        figure,
    })
}

/// Every chart of a run, workload by workload in order of first appearance
/// (ladders, peers, scaling, convergence), then the roofline.
pub fn charts(rows: &[Row], ceilings: &Ceilings) -> Vec<Chart> {
    let gs = groups(rows);
    let mut workloads: Vec<&str> = Vec::new();
    for r in rows {
        if !workloads.contains(&r.workload.as_str()) {
            workloads.push(&r.workload);
        }
    }
    let mut out = Vec::new();
    for w in workloads {
        let mine: Vec<&Group> = gs.iter().filter(|g| g.workload == w).collect();
        for g in &mine {
            out.extend(ladder(rows, g));
        }
        out.extend(peers_chart(rows, w, &mine));
        out.extend(scaling(rows, w, &mine));
        out.extend(convergence(rows, w));
        if w == "poisson" {
            out.extend(thread_sweep(rows));
        }
    }
    out.extend(roofline_chart(rows, ceilings));
    // Unique names (two groups whose keys slug alike).
    let mut names: Vec<String> = Vec::new();
    for c in &mut out {
        let base = c.name.clone();
        let mut k = 2;
        while names.contains(&c.name) {
            c.name = format!("{base}-{k}");
            k += 1;
        }
        names.push(c.name.clone());
    }
    out
}
