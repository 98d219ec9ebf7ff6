//! The report's charts, drawn as [`Figure`]s: a bar chart of time by variant
//! per workload, a roofline chart placing every GPU row by arithmetic
//! intensity against the ceilings of the run (the copy bandwidth measured,
//! the FP32 rate from spec), and a line chart
//! (the CPU thread sweep).

use super::figure::{BLACK, Figure, GREY, PALETTE, Shape};
use super::row::{Row, Status};

fn row_time(r: &Row) -> Option<f64> {
    r.timing
        .as_ref()
        .map(|t| t.median_ms)
        .filter(|t| t.is_finite() && *t > 0.0)
}

/// Horizontal bar chart of median time by variant (log scale when values span
/// more than two decades), one bar per timed row.
pub fn bar_chart(title: &str, rows: &[Row]) -> Option<Figure> {
    let bars: Vec<(String, f64)> = rows
        .iter()
        .filter(|r| matches!(r.status, Status::Ok))
        .filter_map(|r| {
            row_time(r).map(|t| {
                (
                    format!("{} {} {} {}", r.variant, r.backend, r.precision, r.size),
                    t,
                )
            })
        })
        .take(60)
        .collect();
    if bars.is_empty() {
        return None;
    }
    let (lw, bh, top) = (560.0, 16.0, 50.0);
    let w = 1100u32;
    let h = (top + bars.len() as f64 * (bh + 4.0) + 40.0) as u32;
    let mut f = Figure::new(w, h);
    f.text(
        10.0,
        10.0,
        &format!("{title}: median time per call (ms)"),
        2,
    );
    let max = bars.iter().map(|b| b.1).fold(f64::MIN, f64::max);
    let min = bars.iter().map(|b| b.1).fold(f64::MAX, f64::min);
    let log = max / min > 100.0;
    let span = w as f64 - lw - 120.0;
    let scale = |v: f64| {
        if log {
            let lo = (min / 2.0).log10();
            ((v.log10() - lo) / (max.log10() - lo)).max(0.02) * span
        } else {
            v / max * span
        }
    };
    for (i, (label, v)) in bars.iter().enumerate() {
        let y = top + i as f64 * (bh + 4.0);
        let short: String = label.chars().take(90).collect();
        f.text(10.0, y + 4.0, &short, 1);
        let bw = scale(*v);
        f.shapes.push(Shape::Rect {
            x: lw,
            y,
            w: bw,
            h: bh,
            rgb: PALETTE[i % PALETTE.len()],
        });
        f.text(lw + bw + 6.0, y + 4.0, &crate::report::fmt_ms(*v), 1);
    }
    f.text(
        lw,
        h as f64 - 24.0,
        if log { "log scale" } else { "linear scale" },
        1,
    );
    Some(f)
}

/// FLOP per byte and GFLOP/s of a row, where the workload's arithmetic is known.
pub fn roofline_point(r: &Row) -> Option<(f64, f64)> {
    let t = r.throughput?;
    let f64p = r.precision == "f64";
    let elem = if f64p { 8.0 } else { 4.0 };
    match (r.workload.as_str(), r.unit.as_str()) {
        ("vector-add", "GB/s") => Some((1.0 / (3.0 * elem), t / (3.0 * elem))),
        ("poisson", "GCells/s") => Some((6.0 / (3.0 * elem), t * 6.0)),
        ("diffusion", "GCells/s") => Some((7.0 / (3.0 * elem), t * 7.0)),
        (w, "GB/s") if w.contains("reduce") || w == "monte-carlo-pi" || w == "primitives" => {
            Some((1.0 / elem, t / elem))
        }
        (_, "GFLOP/s") => {
            let dims: Vec<f64> = r
                .size
                .split(['x', ' '])
                .filter_map(|s| s.trim().parse().ok())
                .collect();
            if let [m, n, k] = dims[..] {
                Some((2.0 * m * n * k / (elem * (m * k + k * n + m * n)), t))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Roofline chart: the memory roof (copy bandwidth) and the compute roof
/// (FP32 rate), with every GPU row placed by intensity and achieved GFLOP/s.
pub fn roofline(rows: &[Row], copy_gbs: f64, peak_gflops: f64) -> Option<Figure> {
    let pts: Vec<(String, f64, f64)> = rows
        .iter()
        .filter(|r| r.backend == "gpu" && matches!(r.status, Status::Ok))
        .filter_map(|r| {
            roofline_point(r).map(|(ai, p)| (format!("{} {}", r.workload, r.variant), ai, p))
        })
        .filter(|(_, ai, p)| *ai > 0.0 && *p > 0.0)
        .collect();
    if pts.is_empty() || copy_gbs <= 0.0 || peak_gflops <= 0.0 {
        return None;
    }
    let (w, h) = (1000u32, 640u32);
    let (x0, y0, x1, y1) = (80.0, 40.0, 760.0, 580.0);
    let (ai_lo, ai_hi) = (1e-2f64, 1e3f64);
    let p_hi = peak_gflops * 2.0;
    let p_lo = p_hi / 1e5;
    let sx =
        |ai: f64| x0 + (ai.log10() - ai_lo.log10()) / (ai_hi.log10() - ai_lo.log10()) * (x1 - x0);
    let sy = |p: f64| {
        y1 - (p.max(p_lo).log10() - p_lo.log10()) / (p_hi.log10() - p_lo.log10()) * (y1 - y0)
    };
    let mut f = Figure::new(w, h);
    f.text(
        10.0,
        8.0,
        "Roofline: GFLOP/s against FLOP/byte (copy measured, FP32 from spec)",
        2,
    );
    f.shapes.push(Shape::Line {
        x1: x0,
        y1,
        x2: x1,
        y2: y1,
        rgb: BLACK,
    });
    f.shapes.push(Shape::Line {
        x1: x0,
        y1: y0,
        x2: x0,
        y2: y1,
        rgb: BLACK,
    });
    for e in -2..=3 {
        let x = sx(10f64.powi(e));
        f.shapes.push(Shape::Line {
            x1: x,
            y1: y0,
            x2: x,
            y2: y1,
            rgb: GREY,
        });
        f.text(x - 10.0, y1 + 6.0, &format!("1e{e}"), 1);
    }
    let mut p = 10f64.powf(p_lo.log10().ceil());
    while p <= p_hi {
        let y = sy(p);
        f.shapes.push(Shape::Line {
            x1: x0,
            y1: y,
            x2: x1,
            y2: y,
            rgb: GREY,
        });
        f.text(10.0, y - 4.0, &format!("{p:.0e}"), 1);
        p *= 10.0;
    }
    let knee = peak_gflops / copy_gbs;
    let ai_start = (p_lo / copy_gbs).max(ai_lo);
    f.shapes.push(Shape::Line {
        x1: sx(ai_start),
        y1: sy(ai_start * copy_gbs),
        x2: sx(knee),
        y2: sy(peak_gflops),
        rgb: PALETTE[3],
    });
    f.shapes.push(Shape::Line {
        x1: sx(knee),
        y1: sy(peak_gflops),
        x2: x1,
        y2: sy(peak_gflops),
        rgb: PALETTE[3],
    });
    f.text(
        x0 + 10.0,
        y0 + 4.0,
        &format!(
            "copy {copy_gbs:.0} GB/s (measured), FP32 {:.0} GFLOP/s (from spec)",
            peak_gflops
        ),
        1,
    );
    f.text(x1 - 140.0, y1 + 22.0, "FLOP per byte", 1);
    for (i, (label, ai, perf)) in pts.iter().enumerate() {
        let c = PALETTE[i % PALETTE.len()];
        f.shapes.push(Shape::Dot {
            x: sx(*ai),
            y: sy(*perf),
            r: 4.0,
            rgb: c,
        });
        if i < 40 {
            let ly = y0 + 30.0 + i as f64 * 13.0;
            f.shapes.push(Shape::Dot {
                x: x1 + 20.0,
                y: ly + 3.0,
                r: 4.0,
                rgb: c,
            });
            f.text(
                x1 + 30.0,
                ly,
                &label.chars().take(34).collect::<String>(),
                1,
            );
        }
    }
    Some(f)
}

/// Line chart of y against x (for the CPU thread sweep): one series.
pub fn line_chart(title: &str, xlabel: &str, ylabel: &str, pts: &[(f64, f64)]) -> Option<Figure> {
    if pts.len() < 2 {
        return None;
    }
    let (w, h) = (800u32, 500u32);
    let (x0, y0, x1, y1) = (80.0, 50.0, 760.0, 440.0);
    let xmax = pts.iter().map(|p| p.0).fold(f64::MIN, f64::max);
    let ymax = pts.iter().map(|p| p.1).fold(f64::MIN, f64::max) * 1.1;
    let sx = |x: f64| x0 + x / xmax * (x1 - x0);
    let sy = |y: f64| y1 - y / ymax * (y1 - y0);
    let mut f = Figure::new(w, h);
    f.text(10.0, 10.0, title, 2);
    f.shapes.push(Shape::Line {
        x1: x0,
        y1,
        x2: x1,
        y2: y1,
        rgb: BLACK,
    });
    f.shapes.push(Shape::Line {
        x1: x0,
        y1: y0,
        x2: x0,
        y2: y1,
        rgb: BLACK,
    });
    f.text(x1 - 100.0, y1 + 20.0, xlabel, 1);
    f.text(10.0, y0 - 14.0, ylabel, 1);
    for win in pts.windows(2) {
        f.shapes.push(Shape::Line {
            x1: sx(win[0].0),
            y1: sy(win[0].1),
            x2: sx(win[1].0),
            y2: sy(win[1].1),
            rgb: PALETTE[0],
        });
    }
    for (x, y) in pts {
        f.shapes.push(Shape::Dot {
            x: sx(*x),
            y: sy(*y),
            r: 4.0,
            rgb: PALETTE[1],
        });
        f.text(sx(*x) - 8.0, y1 + 6.0, &format!("{x:.0}"), 1);
        f.text(sx(*x) + 6.0, sy(*y) - 12.0, &format!("{y:.2}"), 1);
    }
    Some(f)
}

/// Convergence chart: relative residual against time, both on log scales,
/// one line per series (`label`, `(ms, relative residual)` points; points
/// with a non-positive coordinate are left out). `None` with no series of
/// two or more points.
pub fn convergence(title: &str, series: &[(String, Vec<(f64, f64)>)]) -> Option<Figure> {
    let series: Vec<(&str, Vec<(f64, f64)>)> = series
        .iter()
        .map(|(l, pts)| {
            let p = pts
                .iter()
                .copied()
                .filter(|(t, r)| *t > 0.0 && *r > 0.0 && t.is_finite() && r.is_finite())
                .collect::<Vec<_>>();
            (l.as_str(), p)
        })
        .filter(|(_, p)| p.len() >= 2)
        .collect();
    if series.is_empty() {
        return None;
    }
    let all = series.iter().flat_map(|(_, p)| p.iter());
    let (mut tmin, mut tmax, mut rmin, mut rmax) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(t, r) in all {
        tmin = tmin.min(t);
        tmax = tmax.max(t);
        rmin = rmin.min(r);
        rmax = rmax.max(r);
    }
    let (t0, t1) = (
        tmin.log10().floor(),
        tmax.log10().ceil().max(tmin.log10().floor() + 1.0),
    );
    let (r0, r1) = (
        rmin.log10().floor(),
        rmax.log10().ceil().max(rmin.log10().floor() + 1.0),
    );
    let legend_h = 16.0 * series.len() as f64;
    let (w, h) = (900u32, (560.0 + legend_h) as u32);
    let (x0, y0, x1, y1) = (90.0, 50.0, 860.0, 480.0);
    let sx = |t: f64| x0 + (t.log10() - t0) / (t1 - t0) * (x1 - x0);
    let sy = |r: f64| y1 - (r.log10() - r0) / (r1 - r0) * (y1 - y0);
    let mut f = Figure::new(w, h);
    f.text(10.0, 10.0, title, 2);
    for d in (t0 as i32)..=(t1 as i32) {
        let x = sx(10f64.powi(d));
        f.shapes.push(Shape::Line {
            x1: x,
            y1: y0,
            x2: x,
            y2: y1,
            rgb: GREY,
        });
        f.text(x - 14.0, y1 + 8.0, &format!("1e{d}"), 1);
    }
    for d in (r0 as i32)..=(r1 as i32) {
        let y = sy(10f64.powi(d));
        f.shapes.push(Shape::Line {
            x1: x0,
            y1: y,
            x2: x1,
            y2: y,
            rgb: GREY,
        });
        f.text(x0 - 40.0, y - 3.0, &format!("1e{d}"), 1);
    }
    f.shapes.push(Shape::Line {
        x1: x0,
        y1,
        x2: x1,
        y2: y1,
        rgb: BLACK,
    });
    f.shapes.push(Shape::Line {
        x1: x0,
        y1: y0,
        x2: x0,
        y2: y1,
        rgb: BLACK,
    });
    f.text(
        x1 - 220.0,
        y1 + 24.0,
        "time since the start of the solve (ms, log)",
        1,
    );
    f.text(10.0, y0 - 16.0, "||b - lap p|| / ||b|| (log)", 1);
    // More series than the report's palette: its eight, then eight darker.
    let colour = |i: usize| {
        let c = PALETTE[i % PALETTE.len()];
        if (i / PALETTE.len()) % 2 == 1 {
            [c[0] / 2, c[1] / 2, c[2] / 2]
        } else {
            c
        }
    };
    for (i, (label, pts)) in series.iter().enumerate() {
        let rgb = colour(i);
        for win in pts.windows(2) {
            f.shapes.push(Shape::Line {
                x1: sx(win[0].0),
                y1: sy(win[0].1),
                x2: sx(win[1].0),
                y2: sy(win[1].1),
                rgb,
            });
        }
        for &(t, r) in pts {
            f.shapes.push(Shape::Dot {
                x: sx(t),
                y: sy(r),
                r: 2.5,
                rgb,
            });
        }
        let ly = y1 + 44.0 + 16.0 * i as f64;
        f.shapes.push(Shape::Rect {
            x: x0,
            y: ly,
            w: 18.0,
            h: 8.0,
            rgb,
        });
        f.text(x0 + 26.0, ly, label, 1);
    }
    Some(f)
}
