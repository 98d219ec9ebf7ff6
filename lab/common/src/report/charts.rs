//! The charts of a run, each answering one question about one workload:
//!
//! | chart | file | in | question |
//! |---|---|---|---|
//! | ladder | `ladder-<workload>-<size>-<what>` | `ladder.rs` | how far each rung gets over the first GPU rung, in rung order, against the CPU baselines and every peer of the same problem (best peer: a reference line); for solves, the time to the tolerance |
//! | peers | `peers-<workload>` | `ladder.rs` | the best Rust rung of each problem against each peer of that problem, as a ratio |
//! | scaling | `scaling-<workload>-<prec>-<unit>` | `lines.rs` | throughput against size, one line per variant, over problems that differ only in shape |
//! | convergence | `convergence-<workload>-<size>` | `lines.rs` | residual against time of every solve of one equation with a history, peers included |
//! | roofline | `roofline` | `roofline.rs` | every GPU row by intensity against the measured roofs, one colour per workload, the best rung of each labelled |
//! | thread sweep | `poisson-cpu-sweep` | `lines.rs` | the CPU baseline's throughput against threads |
//!
//! Every chart that puts rows side by side takes them from one [`Group`]
//! (one problem): two problems are never in one bar group or ratio.
//!
//! A chart with more bars or lines than stay readable is split into parts
//! (`-1`, `-2`, ...), never cut.

mod ladder;
mod lines;
mod roofline;

pub use roofline::roofline_point;

use super::figure::{Figure, Rgb};
use super::group::{Group, Kind, groups, is_ceiling, kind};
use super::plot::{Legend, Mark};
use super::problem::{Problem, precision_family, without_tolerance};
use super::row::{Ceilings, Row, Status};

/// One chart of a run.
#[derive(Debug, Clone)]
pub struct Chart {
    /// File stem (`ladder-matmul-8192x8192x8192-bf16`).
    pub name: String,
    /// The workload it belongs to (empty: the whole run).
    pub workload: String,
    /// The one problem it shows, for a ladder (the summary links it).
    pub problem: Option<Problem>,
    /// What it shows, in a sentence or two (the caption).
    pub caption: String,
    /// The drawing.
    pub figure: Figure,
}

/// Bars in one ladder or ratio chart before it is split.
pub(super) const MAX_BARS: usize = 30;
/// Lines in one scaling chart before it is split.
pub(super) const MAX_SERIES: usize = 12;

pub(super) const GPU: Rgb = [49, 130, 189];
pub(super) const BEST: Rgb = [8, 48, 107];
pub(super) const CPU: Rgb = [150, 150, 150];
pub(super) const SIM: Rgb = [188, 170, 220];
pub(super) const CEILING: Rgb = [170, 190, 210];
pub(super) const REF: Rgb = [40, 40, 40];
pub(super) const FASTER: Rgb = [44, 160, 44];
pub(super) const SLOWER: Rgb = [214, 39, 40];

/// Series and workload colours (dark enough for text on white).
pub(super) const PALETTE: [Rgb; 10] = [
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
pub(super) fn peer_colour(backend: &str) -> Rgb {
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
pub(super) fn slug(s: &str) -> String {
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

/// A row's label in a chart: its variant (without the tolerance, which a
/// solve's chart names in its title), its framework where the name does
/// not say it, its precision where it differs from the chart's, and its
/// status when it is not `ok`.
pub(super) fn label(r: &Row, chart_prec: Option<&str>) -> String {
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

pub(super) fn kind_colour(r: &Row) -> Rgb {
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
pub(super) fn kind_legend(rows: &[Row], members: &[usize], best: Option<usize>) -> Vec<Legend> {
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

pub(super) fn parts<T: Clone>(items: &[T], max: usize) -> Vec<Vec<T>> {
    if items.len() <= max {
        return vec![items.to_vec()];
    }
    let n = items.len().div_ceil(max);
    let per = items.len().div_ceil(n);
    items.chunks(per).map(|c| c.to_vec()).collect()
}

/// Names a chart's parts: `name` alone, or `name-1`, `name-2`, ...
pub(super) fn part_name(name: &str, k: usize, n: usize) -> (String, String) {
    if n == 1 {
        (name.to_string(), String::new())
    } else {
        (
            format!("{name}-{}", k + 1),
            format!(" (part {} of {n})", k + 1),
        )
    }
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
        let mine: Vec<&Group> = gs.iter().filter(|g| g.workload() == w).collect();
        for g in &mine {
            out.extend(ladder::ladder(rows, g));
        }
        out.extend(ladder::peers_chart(rows, w, &mine));
        out.extend(lines::scaling(rows, w, &mine));
        out.extend(lines::convergence(rows, w));
        if w == "poisson" {
            out.extend(lines::thread_sweep(rows));
        }
    }
    out.extend(roofline::roofline_chart(rows, ceilings));
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
