//! The roofline: every checked Rust GPU row by arithmetic intensity against
//! the run's measured memory roof and the FP32 roof from the clock.

use super::{Chart, PALETTE};
use crate::report::group::{Kind, is_ceiling, kind};
use crate::report::plot::{Legend, Mark, RoofPoint, roofline};
use crate::report::problem::precision_family;
use crate::report::row::{Ceilings, Row, Status};
use crate::report::units::fmt_throughput;

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

pub(super) fn roofline_chart(rows: &[Row], ceilings: &Ceilings) -> Option<Chart> {
    let (copy, peak) = (ceilings.copy_gbs?, ceilings.fp32_flops? / 1e9);
    // Drawn in TB/s and TFLOP/s.
    let (copy_t, peak_t) = (copy / 1e3, peak / 1e3);
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
            tflops: gflops / 1e3,
            colour: colour(w),
            label: None,
        })
        .collect();
    let mut legend = Vec::new();
    for &(w, gf, r) in &best {
        if let Some((ai, _)) = roofline_point(r) {
            points.push(RoofPoint {
                ai,
                tflops: gf / 1e3,
                colour: colour(w),
                label: Some(workloads[w].to_string()),
            });
        }
        legend.push(Legend {
            mark: Mark::Line(colour(w), false),
            text: format!(
                "{}: best rung {} ({}, {}), {}",
                workloads[w],
                r.variant,
                r.precision,
                r.size,
                fmt_throughput(gf, "GFLOP/s")
            ),
        });
    }
    let title = "Roofline — every Rust GPU row against the measured roofs";
    let what = format!(
        "TFLOP/s against FLOP per byte of DRAM traffic for one pass; roofs from this run: device copy {} and the FP32 rate from the clock, {peak_t:.1} TFLOP/s. One colour per workload: its best rung large and named, the other rows small. Rows above the memory roof reuse data on chip across passes (temporal blocking); tensor-core rows can pass the FP32 roof.",
        fmt_throughput(copy, "GB/s")
    );
    let figure = roofline(title, &what, copy_t, peak_t, &points, &legend);
    Some(Chart {
        name: "roofline".into(),
        workload: String::new(),
        problem: None,
        caption: format!("{title}. {what}"),
        figure,
    })
}
