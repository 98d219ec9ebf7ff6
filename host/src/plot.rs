//! Plots for the reports, as SVG and PNG, with no plotting dependency: a bar
//! chart of time by variant per workload, a roofline chart placing every GPU
//! row by arithmetic intensity against the ceilings measured in the same run,
//! and a line chart (the CPU thread sweep).
//!
//! Both outputs come from one list of primitives ([`Shape`]): the SVG writer
//! prints them, the PNG writer rasterises them (with a built-in 5x7 font) and
//! encodes the image with `miniz_oxide`'s deflate.

use crate::report::{Row, Status};

/// A drawing primitive in pixel coordinates (origin top-left).
#[derive(Debug, Clone)]
pub enum Shape {
    /// Filled rectangle.
    Rect {
        x: f64,
        y: f64,
        w: f64,
        h: f64,
        rgb: [u8; 3],
    },
    /// Line segment.
    Line {
        x1: f64,
        y1: f64,
        x2: f64,
        y2: f64,
        rgb: [u8; 3],
    },
    /// Text, left-aligned at (x, y) = top-left, `scale` x 7 pixels high.
    Text {
        x: f64,
        y: f64,
        text: String,
        scale: u32,
        rgb: [u8; 3],
    },
    /// Filled circle.
    Dot {
        x: f64,
        y: f64,
        r: f64,
        rgb: [u8; 3],
    },
}

/// A figure: size and shapes.
#[derive(Debug, Clone)]
pub struct Figure {
    /// Width in pixels.
    pub w: u32,
    /// Height in pixels.
    pub h: u32,
    /// Shapes in drawing order.
    pub shapes: Vec<Shape>,
}

const PALETTE: [[u8; 3]; 8] = [
    [31, 119, 180],
    [255, 127, 14],
    [44, 160, 44],
    [214, 39, 40],
    [148, 103, 189],
    [140, 86, 75],
    [227, 119, 194],
    [127, 127, 127],
];
const BLACK: [u8; 3] = [0, 0, 0];
const GREY: [u8; 3] = [200, 200, 200];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

impl Figure {
    fn new(w: u32, h: u32) -> Self {
        Self {
            w,
            h,
            shapes: vec![Shape::Rect {
                x: 0.0,
                y: 0.0,
                w: w as f64,
                h: h as f64,
                rgb: [255, 255, 255],
            }],
        }
    }
    fn text(&mut self, x: f64, y: f64, t: &str, scale: u32) {
        self.shapes.push(Shape::Text {
            x,
            y,
            text: t.to_string(),
            scale,
            rgb: BLACK,
        });
    }

    /// The figure as an SVG document.
    pub fn svg(&self) -> String {
        let mut s = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">\n",
            self.w, self.h, self.w, self.h
        );
        let c = |rgb: &[u8; 3]| format!("rgb({},{},{})", rgb[0], rgb[1], rgb[2]);
        for sh in &self.shapes {
            match sh {
                Shape::Rect { x, y, w, h, rgb } => {
                    s.push_str(&format!("<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" fill=\"{}\"/>\n", c(rgb)))
                }
                Shape::Line { x1, y1, x2, y2, rgb } => s.push_str(&format!(
                    "<line x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\" stroke=\"{}\" stroke-width=\"1.5\"/>\n",
                    c(rgb)
                )),
                Shape::Text { x, y, text, scale, rgb } => s.push_str(&format!(
                    "<text x=\"{x:.1}\" y=\"{:.1}\" font-family=\"monospace\" font-size=\"{}\" fill=\"{}\">{}</text>\n",
                    y + 7.0 * *scale as f64,
                    9 * scale,
                    c(rgb),
                    esc(text)
                )),
                Shape::Dot { x, y, r, rgb } => {
                    s.push_str(&format!("<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r:.1}\" fill=\"{}\"/>\n", c(rgb)))
                }
            }
        }
        s.push_str("</svg>\n");
        s
    }

    /// The figure as a PNG file (RGB, 8 bits).
    pub fn png(&self) -> Vec<u8> {
        let (w, h) = (self.w as usize, self.h as usize);
        let mut px = vec![255u8; w * h * 3];
        let mut put = |x: i64, y: i64, rgb: [u8; 3]| {
            if x >= 0 && y >= 0 && (x as usize) < w && (y as usize) < h {
                let i = (y as usize * w + x as usize) * 3;
                px[i..i + 3].copy_from_slice(&rgb);
            }
        };
        for sh in &self.shapes {
            match sh {
                Shape::Rect {
                    x,
                    y,
                    w: rw,
                    h: rh,
                    rgb,
                } => {
                    for yy in (*y as i64)..((y + rh).ceil() as i64) {
                        for xx in (*x as i64)..((x + rw).ceil() as i64) {
                            put(xx, yy, *rgb);
                        }
                    }
                }
                Shape::Line {
                    x1,
                    y1,
                    x2,
                    y2,
                    rgb,
                } => {
                    let steps = ((x2 - x1).abs().max((y2 - y1).abs()).ceil() as i64).max(1);
                    for s in 0..=steps {
                        let t = s as f64 / steps as f64;
                        put(
                            (x1 + t * (x2 - x1)).round() as i64,
                            (y1 + t * (y2 - y1)).round() as i64,
                            *rgb,
                        );
                    }
                }
                Shape::Dot { x, y, r, rgb } => {
                    let ri = r.ceil() as i64;
                    for dy in -ri..=ri {
                        for dx in -ri..=ri {
                            if ((dx * dx + dy * dy) as f64) <= r * r {
                                put(*x as i64 + dx, *y as i64 + dy, *rgb);
                            }
                        }
                    }
                }
                Shape::Text {
                    x,
                    y,
                    text,
                    scale,
                    rgb,
                } => {
                    let sc = *scale as i64;
                    for (k, ch) in text.chars().enumerate() {
                        let g = glyph(ch);
                        for (row, bits) in g.iter().enumerate() {
                            for col in 0..5 {
                                if bits & (1 << (4 - col)) != 0 {
                                    for sy in 0..sc {
                                        for sx in 0..sc {
                                            put(
                                                *x as i64 + (k as i64 * 6 + col) * sc + sx,
                                                *y as i64 + row as i64 * sc + sy,
                                                *rgb,
                                            );
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        encode_png(self.w, self.h, &px)
    }
}

fn crc32(data: &[u8]) -> u32 {
    let mut c = 0xFFFF_FFFFu32;
    for &b in data {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// Encodes 8-bit RGB pixels as a PNG.
pub fn encode_png(w: u32, h: u32, rgb: &[u8]) -> Vec<u8> {
    let mut raw = Vec::with_capacity(rgb.len() + h as usize);
    for row in rgb.chunks(w as usize * 3) {
        raw.push(0);
        raw.extend_from_slice(row);
    }
    let z = miniz_oxide::deflate::compress_to_vec_zlib(&raw, 6);
    let mut out = vec![0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];
    let mut chunk = |kind: &[u8; 4], data: &[u8]| {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut c = kind.to_vec();
        c.extend_from_slice(data);
        out.extend_from_slice(&c);
        out.extend_from_slice(&crc32(&c).to_be_bytes());
    };
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(b"IHDR", &ihdr);
    chunk(b"IDAT", &z);
    chunk(b"IEND", &[]);
    out
}

/// A 5x7 bitmap font: digits, letters (lower case drawn as upper case) and
/// the punctuation reports use.
fn glyph(c: char) -> [u8; 7] {
    match c.to_ascii_uppercase() {
        '0' => [14, 17, 19, 21, 25, 17, 14],
        '1' => [4, 12, 4, 4, 4, 4, 14],
        '2' => [14, 17, 1, 2, 4, 8, 31],
        '3' => [31, 2, 4, 2, 1, 17, 14],
        '4' => [2, 6, 10, 18, 31, 2, 2],
        '5' => [31, 16, 30, 1, 1, 17, 14],
        '6' => [6, 8, 16, 30, 17, 17, 14],
        '7' => [31, 1, 2, 4, 8, 8, 8],
        '8' => [14, 17, 17, 14, 17, 17, 14],
        '9' => [14, 17, 17, 15, 1, 2, 12],
        'A' => [14, 17, 17, 31, 17, 17, 17],
        'B' => [30, 17, 17, 30, 17, 17, 30],
        'C' => [14, 17, 16, 16, 16, 17, 14],
        'D' => [28, 18, 17, 17, 17, 18, 28],
        'E' => [31, 16, 16, 30, 16, 16, 31],
        'F' => [31, 16, 16, 30, 16, 16, 16],
        'G' => [14, 17, 16, 23, 17, 17, 15],
        'H' => [17, 17, 17, 31, 17, 17, 17],
        'I' => [14, 4, 4, 4, 4, 4, 14],
        'J' => [7, 2, 2, 2, 2, 18, 12],
        'K' => [17, 18, 20, 24, 20, 18, 17],
        'L' => [16, 16, 16, 16, 16, 16, 31],
        'M' => [17, 27, 21, 21, 17, 17, 17],
        'N' => [17, 17, 25, 21, 19, 17, 17],
        'O' => [14, 17, 17, 17, 17, 17, 14],
        'P' => [30, 17, 17, 30, 16, 16, 16],
        'Q' => [14, 17, 17, 17, 21, 18, 13],
        'R' => [30, 17, 17, 30, 20, 18, 17],
        'S' => [15, 16, 16, 14, 1, 1, 30],
        'T' => [31, 4, 4, 4, 4, 4, 4],
        'U' => [17, 17, 17, 17, 17, 17, 14],
        'V' => [17, 17, 17, 17, 17, 10, 4],
        'W' => [17, 17, 17, 21, 21, 21, 10],
        'X' => [17, 17, 10, 4, 10, 17, 17],
        'Y' => [17, 17, 17, 10, 4, 4, 4],
        'Z' => [31, 1, 2, 4, 8, 16, 31],
        '.' => [0, 0, 0, 0, 0, 12, 12],
        ',' => [0, 0, 0, 0, 12, 4, 8],
        ':' => [0, 12, 12, 0, 12, 12, 0],
        '-' => [0, 0, 0, 31, 0, 0, 0],
        '+' => [0, 4, 4, 31, 4, 4, 0],
        '/' => [1, 1, 2, 4, 8, 16, 16],
        '(' => [2, 4, 8, 8, 8, 4, 2],
        ')' => [8, 4, 2, 2, 2, 4, 8],
        '%' => [24, 25, 2, 4, 8, 19, 3],
        '=' => [0, 0, 31, 0, 31, 0, 0],
        '^' => [4, 10, 17, 0, 0, 0, 0],
        '_' => [0, 0, 0, 0, 0, 0, 31],
        'x' | '*' => [0, 17, 10, 4, 10, 17, 0],
        _ => [0; 7],
    }
}

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
        "Roofline: GFLOP/s against FLOP/byte (measured ceilings)",
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
        &format!("copy {copy_gbs:.0} GB/s, FP32 {:.0} GFLOP/s", peak_gflops),
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

/// Writes every plot of a run into `dir` (`<name>.svg` and `<name>.png`);
/// returns the file names written.
pub fn write_all(
    dir: &std::path::Path,
    rows: &[Row],
    copy_gbs: Option<f64>,
    fp32_flops: Option<f64>,
) -> crate::Result<Vec<String>> {
    let mut figs: Vec<(String, Figure)> = Vec::new();
    let mut workloads: Vec<&str> = rows.iter().map(|r| r.workload.as_str()).collect();
    workloads.dedup();
    let mut seen = std::collections::BTreeSet::new();
    for w in workloads {
        if !seen.insert(w) {
            continue;
        }
        let rs: Vec<Row> = rows.iter().filter(|r| r.workload == w).cloned().collect();
        if let Some(f) = bar_chart(w, &rs) {
            figs.push((format!("bars-{w}"), f));
        }
    }
    if let (Some(c), Some(p)) = (copy_gbs, fp32_flops)
        && let Some(f) = roofline(rows, c, p / 1e9)
    {
        figs.push(("roofline".into(), f));
    }
    let sweep: Vec<(f64, f64)> = rows
        .iter()
        .filter(|r| {
            r.workload == "poisson"
                && r.variant.starts_with("CPU rayon ")
                && r.variant.ends_with(" threads")
        })
        .filter_map(|r| {
            let n: f64 = r
                .variant
                .trim_start_matches("CPU rayon ")
                .trim_end_matches(" threads")
                .parse()
                .ok()?;
            Some((n, r.throughput?))
        })
        .collect();
    if let Some(f) = line_chart("Poisson CPU thread sweep", "threads", "GCells/s", &sweep) {
        figs.push(("poisson-cpu-sweep".into(), f));
    }
    let mut names = Vec::new();
    for (name, f) in figs {
        for (ext, bytes) in [("svg", f.svg().into_bytes()), ("png", f.png())] {
            let p = dir.join(format!("{name}.{ext}"));
            std::fs::write(&p, bytes).map_err(|e| crate::Error::File {
                path: p.display().to_string(),
                detail: e.to_string(),
            })?;
            names.push(format!("{name}.{ext}"));
        }
    }
    Ok(names)
}
