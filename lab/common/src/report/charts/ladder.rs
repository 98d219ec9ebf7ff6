//! Ladder charts (one problem: every rung, baseline and peer) and the
//! peers chart (each problem's best Rust rung against each of its peers).

use super::{
    BEST, Chart, FASTER, MAX_BARS, REF, SLOWER, kind_colour, kind_legend, label, part_name, parts,
    peer_colour, slug,
};
use crate::report::compare::{best_gpu, best_peer};
use crate::report::group::{Group, Kind, is_ceiling, kind, time_ms};
use crate::report::plot::{Bar, HBars, Item, Legend, Mark, RefLine, hbars};
use crate::report::row::Row;
use crate::report::units::{fmt_factor, fmt_time3 as fmt_time};

/// What a ladder's name says after its size: `to-1e-8`, `bf16`,
/// `f32-gb-per-s`.
fn class_slug(g: &Group) -> String {
    let p = &g.problem;
    match &p.tolerance {
        Some(t) if g.name_prec => slug(&format!("{}-to-{t}", p.precision)),
        Some(t) => format!("to-{t}"),
        None if g.name_unit && !p.measure.is_empty() => slug(&format!(
            "{}-{}",
            p.precision,
            p.measure.replace('/', "-per-")
        )),
        None => slug(&p.precision),
    }
}

/// `ladder-<workload>-<shape>[-<qualifiers>][-<what>]`.
pub(super) fn ladder_name(g: &Group) -> String {
    let p = &g.problem;
    let mut n = format!("ladder-{}-{}", slug(&p.workload), slug(&p.shape));
    if g.name_qualifiers && !p.qualifiers.is_empty() {
        n.push('-');
        n.push_str(&slug(&p.qualifiers.join("-")));
    }
    let c = class_slug(g);
    if !c.is_empty() {
        n.push('-');
        n.push_str(&c);
    }
    n
}

/// The ladder charts of one group (one, or its parts).
pub(super) fn ladder(rows: &[Row], g: &Group) -> Vec<Chart> {
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
    let tol = g.problem.tolerance.clone();
    let prec = Some(g.problem.precision.as_str());
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
        format!(", with {} of the same problem", others.join(" and "))
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
            let title = format!("{} · {} — ladder{part}", g.workload(), g.label());
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
                workload: g.workload().to_string(),
                problem: Some(g.problem.clone()),
                caption: format!("{title}. {what}"),
                figure,
            }
        })
        .collect()
}

/// The ratio charts of one workload: the best Rust rung of each group
/// against each of its peers.
pub(super) fn peers_chart(rows: &[Row], workload: &str, gs: &[&Group]) -> Vec<Chart> {
    // Sizes in increasing order; a solve's tolerances from loose to tight.
    let mut gs: Vec<&Group> = gs.to_vec();
    let tol = |g: &Group| {
        g.problem
            .tolerance
            .as_ref()
            .map_or(0.0, |t| -t.parse::<f64>().unwrap_or(0.0))
    };
    gs.sort_by(|a, b| {
        a.magnitude()
            .total_cmp(&b.magnitude())
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
        let prec = Some(g.problem.precision.as_str());
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
    let what = "For each problem (size, mask, precision, tolerance): the peer's median time divided by the best checked Rust GPU row's of the same problem. Right of 1 the Rust kernel is faster by that factor (green), left of it the peer is (red).";
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
                problem: None,
                caption: format!("{title}. {what}"),
                figure,
            }
        })
        .collect()
}
