//! The chart types, as layouts of [`Figure`] shapes: horizontal bars
//! ([`hbars`]: ladders, ratios), lines ([`lines`]: scaling, convergence, the
//! CPU thread sweep) and the roofline ([`roofline`]). Each measures its
//! labels with the chart font and sizes itself to hold them: long labels
//! wrap onto more lines, a chart grows taller; nothing is cut.

use super::axis::{Scale, fmt_num};
use super::figure::{AXIS, Anchor, Figure, GRID, MUTED, Rgb, Shape, TEXT};
use super::font::{text_width, wrap};
use super::units::fmt_throughput;

/// Width of every chart, pixels.
pub(crate) const WIDTH: f64 = 1000.0;
const MARGIN: f64 = 18.0;
const TITLE: f64 = 17.0;
const SMALL: f64 = 12.0;
const LABEL: f64 = 12.5;
const LINE: f64 = 16.0;

/// How a legend entry is drawn.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mark {
    /// A filled square (bars).
    Swatch(Rgb),
    /// A short line, dashed or not, with a dot (series, reference lines).
    Line(Rgb, bool),
}

/// One legend entry.
#[derive(Debug, Clone)]
pub(crate) struct Legend {
    pub mark: Mark,
    pub text: String,
}

/// Title (bold), then the subtitle wrapped to the width; returns the y
/// below them.
fn header(f: &mut Figure, title: &str, subtitle: &str) -> f64 {
    let mut y = MARGIN + TITLE;
    for l in wrap(title, TITLE, true, WIDTH - 2.0 * MARGIN) {
        f.text_at(MARGIN, y, &l, TITLE, true, Anchor::Start, TEXT);
        y += TITLE + 5.0;
    }
    y += 1.0;
    for l in wrap(subtitle, SMALL, false, WIDTH - 2.0 * MARGIN) {
        f.text_at(MARGIN, y, &l, SMALL, false, Anchor::Start, MUTED);
        y += LINE;
    }
    y + 4.0
}

fn draw_mark(f: &mut Figure, x: f64, mid: f64, m: Mark) {
    match m {
        Mark::Swatch(c) => f.rect(x, mid - 5.0, 11.0, 11.0, c),
        Mark::Line(c, dash) => {
            f.line((x - 2.0, mid), (x + 18.0, mid), c, 2.0, dash);
            f.shapes.push(Shape::Dot {
                x: x + 8.0,
                y: mid,
                r: 3.0,
                fill: c,
                opacity: 1.0,
            });
        }
    }
}

/// Legend entries flowing left to right, wrapping; an entry too long for a
/// line wraps its own text. Returns the y below the legend.
fn legend(f: &mut Figure, entries: &[Legend], top: f64, left: f64, right: f64) -> f64 {
    if entries.is_empty() {
        return top;
    }
    let (mut x, mut y) = (left, top + SMALL);
    let mark_w = 24.0;
    for e in entries {
        let w = mark_w + text_width(&e.text, SMALL, false);
        if x > left && x + w > right {
            x = left;
            y += LINE;
        }
        let lines = if w > right - left {
            wrap(&e.text, SMALL, false, right - left - mark_w)
        } else {
            vec![e.text.clone()]
        };
        draw_mark(f, x, y - 4.0, e.mark);
        for (k, l) in lines.iter().enumerate() {
            f.text_at(
                x + mark_w,
                y + k as f64 * LINE,
                l,
                SMALL,
                false,
                Anchor::Start,
                TEXT,
            );
        }
        if lines.len() > 1 {
            y += (lines.len() - 1) as f64 * LINE;
            x = right;
        } else {
            x += w + 18.0;
        }
    }
    y + 8.0
}

/// One bar of [`hbars`].
#[derive(Debug, Clone)]
pub(crate) struct Bar {
    /// Label, left of the axis (wrapped when long).
    pub label: String,
    /// Value on the axis.
    pub value: f64,
    /// Fill.
    pub colour: Rgb,
    /// Text right of the bar's end (time, factor).
    pub note: String,
    /// Label in bold (the best rung).
    pub strong: bool,
    /// Left out of the axis range (a baseline far below the ladder): drawn
    /// as a broken stub when it falls below the axis, its value in its note.
    pub off_axis: bool,
}

/// A row of [`hbars`]: a bar or a heading over the bars below it.
#[derive(Debug, Clone)]
pub(crate) enum Item {
    /// Bold heading across the label column.
    Header(String),
    /// A bar.
    Bar(Bar),
}

/// A vertical reference line across the bars (named in the legend).
#[derive(Debug, Clone)]
pub(crate) struct RefLine {
    pub value: f64,
    pub colour: Rgb,
    pub dash: bool,
}

/// A horizontal bar chart.
#[derive(Debug, Clone)]
pub(crate) struct HBars {
    pub title: String,
    pub subtitle: String,
    /// Axis title, under the axis.
    pub axis: String,
    pub items: Vec<Item>,
    pub refs: Vec<RefLine>,
    pub legend: Vec<Legend>,
    /// Bars grow from this value (1 for ratios); `None`: from the axis start.
    pub origin: Option<f64>,
    /// The axis is logarithmic when the values span more than this factor.
    pub log_ratio: f64,
}

/// Draws an [`HBars`].
pub(crate) fn hbars(spec: &HBars) -> Figure {
    let mut f = Figure::new(WIDTH as u32, 0, &spec.title);
    let mut y = header(&mut f, &spec.title, &spec.subtitle);
    y = legend(&mut f, &spec.legend, y, MARGIN, WIDTH - MARGIN);
    let bars: Vec<&Bar> = spec
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Bar(b) => Some(b),
            Item::Header(_) => None,
        })
        .collect();
    let note_w = bars
        .iter()
        .map(|b| text_width(&b.note, SMALL, false))
        .fold(0.0, f64::max)
        + 8.0;
    let widest = bars
        .iter()
        .map(|b| text_width(&b.label, LABEL, b.strong))
        .fold(0.0, f64::max);
    // The label column: the widest label, up to 40% of the width (longer
    // labels wrap), never narrower than its widest word.
    let widest_word = bars
        .iter()
        .flat_map(|b| b.label.split(' ').map(|w| text_width(w, LABEL, b.strong)))
        .fold(0.0, f64::max);
    let label_w = widest
        .min(0.40 * WIDTH)
        .max(widest_word)
        .min(WIDTH - 2.0 * MARGIN - 24.0 - note_w - 260.0)
        .max(120.0);
    let p0 = MARGIN + label_w + 14.0;
    let p1 = WIDTH - MARGIN - note_w;
    let mut values: Vec<f64> = bars
        .iter()
        .filter(|b| !b.off_axis)
        .map(|b| b.value)
        .collect();
    values.extend(spec.refs.iter().map(|r| r.value));
    values.extend(spec.origin);
    let scale = match spec.origin {
        Some(_) => Scale::fit(&values, spec.log_ratio, false, p0, p1),
        None => Scale::fit_bars(&values, spec.log_ratio, p0, p1),
    };
    let top = y + 22.0;
    // Rows: heights from their wrapped labels.
    let mut rows = Vec::new();
    let mut yy = top + 4.0;
    for it in &spec.items {
        match it {
            Item::Header(h) => {
                let lines = wrap(h, LABEL, true, WIDTH - 2.0 * MARGIN);
                let hgt = 10.0 + lines.len() as f64 * LINE;
                rows.push((yy, hgt, lines, None));
                yy += hgt;
            }
            Item::Bar(b) => {
                let lines = wrap(&b.label, LABEL, b.strong, label_w);
                let hgt = (lines.len() as f64 * LINE + 6.0).max(22.0);
                rows.push((yy, hgt, lines, Some(b)));
                yy += hgt;
            }
        }
    }
    let bottom = yy + 4.0;
    // Bands behind every other bar, the grid, the reference lines; then
    // the headings on white across them, the bars, and the notes on white
    // so that no line runs through a number.
    let mut band = false;
    for (ry, rh, _, b) in &rows {
        if b.is_some() {
            if band {
                f.shapes.push(Shape::Rect {
                    x: MARGIN - 4.0,
                    y: *ry,
                    w: WIDTH - 2.0 * MARGIN + 8.0,
                    h: *rh,
                    fill: [246, 247, 249],
                    opacity: 1.0,
                });
            }
            band = !band;
        } else {
            band = false;
        }
    }
    let ticks = scale.ticks();
    for (v, label) in &ticks {
        let x = scale.px(*v);
        f.line((x, top), (x, bottom), GRID, 1.0, false);
        f.text_at(x, top - 6.0, label, SMALL, false, Anchor::Middle, MUTED);
        f.text_at(x, bottom + 15.0, label, SMALL, false, Anchor::Middle, MUTED);
    }
    f.line((p0, top), (p0, bottom), AXIS, 1.0, false);
    for r in &spec.refs {
        let x = scale.px(r.value);
        f.line((x, top - 2.0), (x, bottom), r.colour, 1.6, r.dash);
    }
    let origin_x = spec.origin.map_or(p0, |o| scale.px(o));
    for (ry, rh, lines, b) in &rows {
        match b {
            None => {
                f.rect(
                    MARGIN - 4.0,
                    *ry + 1.0,
                    WIDTH - 2.0 * MARGIN + 8.0,
                    rh - 2.0,
                    [255, 255, 255],
                );
                for (k, l) in lines.iter().enumerate() {
                    f.text_at(
                        MARGIN,
                        ry + 6.0 + SMALL + k as f64 * LINE,
                        l,
                        LABEL,
                        true,
                        Anchor::Start,
                        TEXT,
                    );
                }
            }
            Some(b) => {
                let mid = ry + rh / 2.0;
                let first = mid - (lines.len() as f64 - 1.0) * LINE / 2.0 + 4.5;
                for (k, l) in lines.iter().enumerate() {
                    f.text_at(
                        p0 - 10.0,
                        first + k as f64 * LINE,
                        l,
                        LABEL,
                        b.strong,
                        Anchor::End,
                        TEXT,
                    );
                }
                let below = b.value < scale.lo;
                let x = if below { p0 + 10.0 } else { scale.px(b.value) };
                let (a, z) = (origin_x.min(x), origin_x.max(x));
                f.rect(a, mid - 7.0, (z - a).max(1.5), 14.0, b.colour);
                if below {
                    // A break in the stub: the value lies left of the axis.
                    f.line(
                        (x - 6.0, mid + 8.0),
                        (x - 2.0, mid - 8.0),
                        [255, 255, 255],
                        2.5,
                        false,
                    );
                }
                let w = text_width(&b.note, SMALL, false);
                f.shapes.push(Shape::Rect {
                    x: z + 3.0,
                    y: mid - 7.5,
                    w: w + 4.0,
                    h: 15.0,
                    fill: [255, 255, 255],
                    opacity: 0.85,
                });
                f.text_at(
                    z + 5.0,
                    mid + 4.5,
                    &b.note,
                    SMALL,
                    false,
                    Anchor::Start,
                    TEXT,
                );
            }
        }
    }
    f.text_at(
        (p0 + p1) / 2.0,
        bottom + 34.0,
        &spec.axis,
        SMALL,
        false,
        Anchor::Middle,
        TEXT,
    );
    f.h = (bottom + 46.0).ceil() as u32;
    f
}

/// One line of [`lines`]: points `(x, y)` (for categories, `x` is the
/// category's index).
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub label: String,
    pub colour: Rgb,
    pub dash: bool,
    pub pts: Vec<(f64, f64)>,
}

/// The x axis of [`lines`].
#[derive(Debug, Clone)]
pub(crate) enum XAxis {
    /// Numeric, logarithmic or not, with its title.
    Numeric { log: bool, title: String },
    /// Named positions, evenly spaced (sizes), with the axis title.
    Categories { names: Vec<String>, title: String },
}

/// A line chart.
#[derive(Debug, Clone)]
pub(crate) struct Lines {
    pub title: String,
    pub subtitle: String,
    pub x: XAxis,
    pub y_title: String,
    /// The y axis is logarithmic when values span more than this factor.
    pub y_log_ratio: f64,
    pub series: Vec<Series>,
    /// Label each point with its y value.
    pub point_labels: bool,
    /// Name the series under the plot.
    pub legend: bool,
}

/// Draws a [`Lines`] chart, its legend under the plot.
pub(crate) fn lines(spec: &Lines) -> Figure {
    let mut f = Figure::new(WIDTH as u32, 0, &spec.title);
    let top = header(&mut f, &spec.title, &spec.subtitle) + 8.0;
    let ys: Vec<f64> = spec
        .series
        .iter()
        .flat_map(|s| s.pts.iter().map(|p| p.1))
        .collect();
    let plot_h = 360.0;
    let (y0, y1) = (top + plot_h, top);
    let ysc = Scale::fit(&ys, spec.y_log_ratio, true, y0, y1);
    let yt = ysc.ticks();
    let ytw = yt
        .iter()
        .map(|(_, l)| text_width(l, SMALL, false))
        .fold(0.0, f64::max);
    let x0 = MARGIN + 22.0 + ytw + 8.0;
    let x1 = WIDTH - MARGIN - 10.0;
    // x scale: numeric, or categories at the middles of equal steps.
    let (xsc, xticks, step) = match &spec.x {
        XAxis::Numeric { log, .. } => {
            let xs: Vec<f64> = spec
                .series
                .iter()
                .flat_map(|s| s.pts.iter().map(|p| p.0))
                .collect();
            let sc = Scale::fit(&xs, if *log { 1.0 } else { f64::INFINITY }, !log, x0, x1);
            let t = sc.ticks();
            (Some(sc), t, 0.0)
        }
        XAxis::Categories { names, .. } => {
            let t = names
                .iter()
                .enumerate()
                .map(|(i, s)| (i as f64, s.clone()))
                .collect();
            (None, t, (x1 - x0) / names.len().max(1) as f64)
        }
    };
    let xpx = |v: f64| match &xsc {
        Some(sc) => sc.px(v),
        None => x0 + step * (v + 0.5),
    };
    for (v, l) in &yt {
        let y = ysc.px(*v);
        f.line((x0, y), (x1, y), GRID, 1.0, false);
        f.text_at(x0 - 6.0, y + 4.0, l, SMALL, false, Anchor::End, MUTED);
    }
    // x ticks, staggered onto a second line where neighbours would touch.
    let mut last_end = f64::MIN;
    let mut stagger = false;
    for (v, l) in &xticks {
        let x = xpx(*v);
        f.line((x, y1), (x, y0), GRID, 1.0, false);
        let w = text_width(l, SMALL, false);
        let second = !stagger && x - w / 2.0 < last_end + 6.0;
        let ty = y0 + 16.0 + if second { LINE } else { 0.0 };
        f.text_at(x, ty, l, SMALL, false, Anchor::Middle, MUTED);
        if second {
            stagger = true;
        } else {
            last_end = x + w / 2.0;
            stagger = false;
        }
    }
    f.line((x0, y0), (x1, y0), AXIS, 1.0, false);
    f.line((x0, y1), (x0, y0), AXIS, 1.0, false);
    let xtitle = match &spec.x {
        XAxis::Numeric { title, .. } | XAxis::Categories { title, .. } => title,
    };
    f.text_at(
        (x0 + x1) / 2.0,
        y0 + 52.0,
        xtitle,
        SMALL,
        false,
        Anchor::Middle,
        TEXT,
    );
    f.shapes.push(Shape::Text {
        x: MARGIN + 10.0,
        y: (y0 + y1) / 2.0,
        text: spec.y_title.clone(),
        size: SMALL,
        bold: false,
        anchor: Anchor::Middle,
        rgb: TEXT,
        vertical: true,
    });
    for s in &spec.series {
        let pts: Vec<(f64, f64)> = s.pts.iter().map(|&(x, y)| (xpx(x), ysc.px(y))).collect();
        if pts.len() >= 2 {
            f.shapes.push(Shape::Polyline {
                pts: pts.clone(),
                stroke: s.colour,
                width: 2.0,
                dash: s.dash,
            });
        }
        let r = if s.pts.len() > 60 { 1.8 } else { 3.5 };
        for (k, &(x, y)) in pts.iter().enumerate() {
            f.shapes.push(Shape::Dot {
                x,
                y,
                r,
                fill: s.colour,
                opacity: 1.0,
            });
            if spec.point_labels {
                f.text_at(
                    x + 6.0,
                    y - 6.0,
                    &fmt_num(s.pts[k].1),
                    SMALL,
                    false,
                    Anchor::Start,
                    TEXT,
                );
            }
        }
    }
    let entries: Vec<Legend> = spec
        .series
        .iter()
        .map(|s| Legend {
            mark: Mark::Line(s.colour, s.dash),
            text: s.label.clone(),
        })
        .collect();
    let end = if spec.legend {
        one_per_line(&mut f, &entries, y0 + 70.0)
    } else {
        y0 + 62.0
    };
    f.h = (end + MARGIN).ceil() as u32;
    f
}

/// Legend entries one per line (each wrapped to the width); returns the y below.
fn one_per_line(f: &mut Figure, entries: &[Legend], top: f64) -> f64 {
    let mut y = top + SMALL;
    for e in entries {
        draw_mark(f, MARGIN + 2.0, y - 4.0, e.mark);
        for l in wrap(&e.text, SMALL, false, WIDTH - 2.0 * MARGIN - 30.0) {
            f.text_at(MARGIN + 30.0, y, &l, SMALL, false, Anchor::Start, TEXT);
            y += LINE;
        }
    }
    y
}

/// A point of the roofline.
#[derive(Debug, Clone)]
pub(crate) struct RoofPoint {
    /// FLOP per byte.
    pub ai: f64,
    /// TFLOP/s.
    pub tflops: f64,
    pub colour: Rgb,
    /// Drawn large and labelled with this text (the best rung of a workload).
    pub label: Option<String>,
}

/// The roofline: memory roof (copy bandwidth) and compute roof, then the points.
pub(crate) fn roofline(
    title: &str,
    subtitle: &str,
    copy_tbs: f64,
    peak_tflops: f64,
    pts: &[RoofPoint],
    legend_entries: &[Legend],
) -> Figure {
    let mut f = Figure::new(WIDTH as u32, 0, title);
    let top = header(&mut f, title, subtitle) + 8.0;
    let (y0, y1) = (top + 460.0, top);
    let ais: Vec<f64> = pts
        .iter()
        .map(|p| p.ai)
        .chain([peak_tflops / copy_tbs])
        .collect();
    let gfs: Vec<f64> = pts
        .iter()
        .map(|p| p.tflops)
        .chain([peak_tflops * 3.0])
        .collect();
    let ys = Scale::fit(&gfs, 1.0, false, y0, y1);
    let ytw = ys
        .ticks()
        .iter()
        .map(|(_, l)| text_width(l, SMALL, false))
        .fold(0.0, f64::max);
    let (x0, x1) = (MARGIN + 22.0 + ytw + 8.0, WIDTH - MARGIN - 10.0);
    let xs = Scale::fit(&ais, 1.0, false, x0, x1);
    for (v, l) in ys.ticks() {
        let y = ys.px(v);
        f.line((x0, y), (x1, y), GRID, 1.0, false);
        f.text_at(x0 - 6.0, y + 4.0, &l, SMALL, false, Anchor::End, MUTED);
    }
    for (v, l) in xs.ticks() {
        let x = xs.px(v);
        f.line((x, y1), (x, y0), GRID, 1.0, false);
        f.text_at(x, y0 + 16.0, &l, SMALL, false, Anchor::Middle, MUTED);
    }
    f.line((x0, y0), (x1, y0), AXIS, 1.0, false);
    f.line((x0, y1), (x0, y0), AXIS, 1.0, false);
    f.text_at(
        (x0 + x1) / 2.0,
        y0 + 36.0,
        "arithmetic intensity (FLOP per byte of DRAM traffic, log)",
        SMALL,
        false,
        Anchor::Middle,
        TEXT,
    );
    f.shapes.push(Shape::Text {
        x: MARGIN + 10.0,
        y: (y0 + y1) / 2.0,
        text: "TFLOP/s (log)".into(),
        size: SMALL,
        bold: false,
        anchor: Anchor::Middle,
        rgb: TEXT,
        vertical: true,
    });
    // Roofs: bandwidth x intensity up to the knee, then the compute peak.
    let roof = [120, 120, 120];
    let knee = peak_tflops / copy_tbs;
    let a0 = xs.lo.max(ys.lo / copy_tbs);
    f.shapes.push(Shape::Polyline {
        pts: vec![
            (xs.px(a0), ys.px(a0 * copy_tbs)),
            (xs.px(knee), ys.px(peak_tflops)),
            (xs.px(xs.hi), ys.px(peak_tflops)),
        ],
        stroke: roof,
        width: 2.0,
        dash: false,
    });
    // The roofs' names, where no point is: along the memory roof (just
    // above it) and under the compute roof's right end.
    let mut taken: Vec<[f64; 4]> = pts
        .iter()
        .map(|p| {
            let (x, y) = (xs.px(p.ai), ys.px(p.tflops));
            let r = if p.label.is_some() { 7.0 } else { 3.0 };
            [x - r, y - r, x + r, y + r]
        })
        .collect();
    let free = |b: [f64; 4], taken: &[[f64; 4]]| {
        b[0] >= x0
            && b[2] <= x1
            && b[1] >= y1
            && b[3] <= y0
            && !taken
                .iter()
                .any(|t| b[0] < t[2] && t[0] < b[2] && b[1] < t[3] && t[1] < b[3])
    };
    let mem = format!("device copy {}", fmt_throughput(copy_tbs, "TB/s"));
    let mw = text_width(&mem, SMALL, false);
    for k in 1..40 {
        let ai = knee / 1.25f64.powi(k);
        if ai < a0 {
            break;
        }
        let (x, y) = (xs.px(ai), ys.px(ai * copy_tbs));
        let b = [x - mw - 6.0, y - 18.0, x - 6.0, y - 6.0];
        if free(b, &taken) {
            f.text_at(b[0], y - 8.0, &mem, SMALL, false, Anchor::Start, MUTED);
            taken.push(b);
            break;
        }
    }
    let fp = format!("FP32 {peak_tflops:.1} TFLOP/s (from the clock)");
    let fw = text_width(&fp, SMALL, false);
    let yb = ys.px(peak_tflops);
    for b in [
        [x1 - 4.0 - fw, yb + 4.0, x1 - 4.0, yb + 17.0],
        [x1 - 4.0 - fw, yb - 17.0, x1 - 4.0, yb - 4.0],
    ] {
        if free(b, &taken) {
            f.text_at(b[0], b[3] - 3.0, &fp, SMALL, false, Anchor::Start, MUTED);
            taken.push(b);
            break;
        }
    }
    // Small marks first, the labelled points on top.
    for p in pts.iter().filter(|p| p.label.is_none()) {
        f.shapes.push(Shape::Dot {
            x: xs.px(p.ai),
            y: ys.px(p.tflops),
            r: 2.6,
            fill: p.colour,
            opacity: 0.55,
        });
    }
    for p in pts.iter().filter(|p| p.label.is_some()) {
        let (x, y) = (xs.px(p.ai), ys.px(p.tflops));
        f.shapes.push(Shape::Dot {
            x,
            y,
            r: 6.0,
            fill: p.colour,
            opacity: 1.0,
        });
    }
    for p in pts.iter() {
        let Some(label) = &p.label else { continue };
        let (x, y) = (xs.px(p.ai), ys.px(p.tflops));
        let w = text_width(label, SMALL, true);
        // Right, left, above, below, then further out: the first free place.
        let mut spots = vec![
            (x + 10.0, y + 4.0),
            (x - 10.0 - w, y + 4.0),
            (x - w / 2.0, y - 12.0),
            (x - w / 2.0, y + 20.0),
        ];
        for k in 1..6 {
            let d = 16.0 * k as f64;
            spots.extend([
                (x + 10.0, y + 4.0 - d),
                (x + 10.0, y + 4.0 + d),
                (x - 10.0 - w, y + 4.0 - d),
                (x - 10.0 - w, y + 4.0 + d),
            ]);
        }
        let fits = |sx: f64, sy: f64, taken: &[[f64; 4]]| {
            let b = [sx, sy - 10.0, sx + w, sy + 3.0];
            b[0] >= x0
                && b[2] <= x1
                && b[1] >= y1
                && b[3] <= y0
                && !taken
                    .iter()
                    .any(|t| b[0] < t[2] && t[0] < b[2] && b[1] < t[3] && t[1] < b[3])
        };
        let (sx, sy) = spots
            .iter()
            .copied()
            .find(|&(sx, sy)| fits(sx, sy, &taken))
            .unwrap_or(spots[0]);
        if (sy - (y + 4.0)).abs() > 1.0 {
            let ax = if sx > x { sx - 2.0 } else { sx + w + 2.0 };
            f.line((x, y), (ax, sy - 4.0), p.colour, 1.0, false);
        }
        f.text_at(sx, sy, label, SMALL, true, Anchor::Start, p.colour);
        taken.push([sx, sy - 10.0, sx + w, sy + 3.0]);
    }
    let end = one_per_line(&mut f, legend_entries, y0 + 52.0);
    f.h = (end + MARGIN).ceil() as u32;
    f
}
