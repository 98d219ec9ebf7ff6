//! A figure: one list of drawing primitives ([`Shape`]) that the SVG writer
//! prints and the PNG writer rasterises with `tiny-skia` (anti-aliased
//! paths) and the embedded DejaVu Sans Condensed ([`super::font`]: glyph
//! outlines with kerning), encoded with `miniz_oxide`'s deflate. Text is
//! measured with the same font when a chart is laid out, so a label sized to
//! fit fits in the PNG, in the SVG and in `report.html` (which carries the
//! font).

use super::font::{FAMILY, font};
use tiny_skia::{FillRule, Paint, PathBuilder, Pixmap, Rect, Stroke, StrokeDash, Transform};

/// An RGB colour.
pub type Rgb = [u8; 3];

/// Where a text's `x` is: its start, middle or end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// `x` is the left edge.
    Start,
    /// `x` is the centre.
    Middle,
    /// `x` is the right edge.
    End,
}

/// A drawing primitive in pixel coordinates (origin top-left).
#[derive(Debug, Clone)]
pub enum Shape {
    /// Filled rectangle.
    Rect {
        x: f64,
        y: f64,
        w: f64,
        h: f64,
        fill: Rgb,
        /// 0 (invisible) to 1 (opaque).
        opacity: f64,
    },
    /// Line segment.
    Line {
        x1: f64,
        y1: f64,
        x2: f64,
        y2: f64,
        stroke: Rgb,
        width: f64,
        dash: bool,
    },
    /// Connected line segments.
    Polyline {
        pts: Vec<(f64, f64)>,
        stroke: Rgb,
        width: f64,
        dash: bool,
    },
    /// Filled circle.
    Dot {
        x: f64,
        y: f64,
        r: f64,
        fill: Rgb,
        opacity: f64,
    },
    /// One line of text; `y` is its baseline. `vertical` turns it a
    /// quarter counter-clockwise about (`x`, `y`) (a y-axis title).
    Text {
        x: f64,
        y: f64,
        text: String,
        size: f64,
        bold: bool,
        anchor: Anchor,
        rgb: Rgb,
        vertical: bool,
    },
}

/// A figure: size, title (the SVG's `<title>`) and shapes in drawing order.
#[derive(Debug, Clone)]
pub struct Figure {
    /// Width in pixels.
    pub w: u32,
    /// Height in pixels.
    pub h: u32,
    /// What the figure shows, in one line.
    pub title: String,
    /// Shapes in drawing order.
    pub shapes: Vec<Shape>,
}

/// A text's box in pixels: `[left, top, right, bottom]`.
pub type TextBox = [f64; 4];

pub(crate) const TEXT: Rgb = [34, 34, 34];
pub(crate) const MUTED: Rgb = [96, 96, 96];
pub(crate) const GRID: Rgb = [225, 225, 225];
pub(crate) const AXIS: Rgb = [120, 120, 120];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl Figure {
    /// An empty (white) figure.
    pub fn new(w: u32, h: u32, title: &str) -> Self {
        Self {
            w,
            h,
            title: title.to_string(),
            shapes: Vec::new(),
        }
    }

    /// Adds a line of text.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn text_at(
        &mut self,
        x: f64,
        y: f64,
        text: &str,
        size: f64,
        bold: bool,
        anchor: Anchor,
        rgb: Rgb,
    ) {
        self.shapes.push(Shape::Text {
            x,
            y,
            text: text.to_string(),
            size,
            bold,
            anchor,
            rgb,
            vertical: false,
        });
    }

    /// Adds a line segment.
    pub(crate) fn line(
        &mut self,
        (x1, y1): (f64, f64),
        (x2, y2): (f64, f64),
        stroke: Rgb,
        width: f64,
        dash: bool,
    ) {
        self.shapes.push(Shape::Line {
            x1,
            y1,
            x2,
            y2,
            stroke,
            width,
            dash,
        });
    }

    /// Adds an opaque rectangle.
    pub(crate) fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: Rgb) {
        self.shapes.push(Shape::Rect {
            x,
            y,
            w,
            h,
            fill,
            opacity: 1.0,
        });
    }

    /// Every text of the figure with its box (from the font's metrics:
    /// ascent 0.76 em above the baseline, descent 0.24 em below).
    pub fn text_boxes(&self) -> Vec<(String, TextBox)> {
        self.shapes
            .iter()
            .filter_map(|s| match s {
                Shape::Text {
                    x,
                    y,
                    text,
                    size,
                    bold,
                    anchor,
                    vertical,
                    ..
                } => {
                    let w = font(*bold).width(text, *size);
                    let start = match anchor {
                        Anchor::Start => 0.0,
                        Anchor::Middle => -w / 2.0,
                        Anchor::End => -w,
                    };
                    let (up, down) = (0.76 * size, 0.24 * size);
                    let b = if *vertical {
                        [x - up, y - start - w, x + down, y - start]
                    } else {
                        [x + start, y - up, x + start + w, y + down]
                    };
                    Some((text.clone(), b))
                }
                _ => None,
            })
            .collect()
    }

    /// The figure as an SVG document (text in DejaVu Sans Condensed, or
    /// the viewer's closest font).
    pub fn svg(&self) -> String {
        let mut s = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"{}\" role=\"img\">\n<title>{}</title>\n<rect x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\" fill=\"#fff\"/>\n",
            FAMILY.replace('\'', "&apos;"),
            esc(&self.title),
            w = self.w,
            h = self.h
        );
        let c = |rgb: &Rgb| format!("#{:02x}{:02x}{:02x}", rgb[0], rgb[1], rgb[2]);
        let dash = |d: bool| if d { " stroke-dasharray=\"5 4\"" } else { "" };
        let op = |o: f64| {
            if o < 1.0 {
                format!(" fill-opacity=\"{o:.2}\"")
            } else {
                String::new()
            }
        };
        for sh in &self.shapes {
            match sh {
                Shape::Rect {
                    x,
                    y,
                    w,
                    h,
                    fill,
                    opacity,
                } => s.push_str(&format!(
                    "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" fill=\"{}\"{}/>\n",
                    c(fill),
                    op(*opacity)
                )),
                Shape::Line {
                    x1,
                    y1,
                    x2,
                    y2,
                    stroke,
                    width,
                    dash: d,
                } => s.push_str(&format!(
                    "<line x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\" stroke=\"{}\" stroke-width=\"{width}\"{}/>\n",
                    c(stroke),
                    dash(*d)
                )),
                Shape::Polyline {
                    pts,
                    stroke,
                    width,
                    dash: d,
                } => {
                    let p: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
                    s.push_str(&format!(
                        "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{width}\" stroke-linejoin=\"round\"{}/>\n",
                        p.join(" "),
                        c(stroke),
                        dash(*d)
                    ))
                }
                Shape::Dot {
                    x,
                    y,
                    r,
                    fill,
                    opacity,
                } => s.push_str(&format!(
                    "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r:.1}\" fill=\"{}\"{}/>\n",
                    c(fill),
                    op(*opacity)
                )),
                Shape::Text {
                    x,
                    y,
                    text,
                    size,
                    bold,
                    anchor,
                    rgb,
                    vertical,
                } => {
                    let a = match anchor {
                        Anchor::Start => "",
                        Anchor::Middle => " text-anchor=\"middle\"",
                        Anchor::End => " text-anchor=\"end\"",
                    };
                    let b = if *bold { " font-weight=\"bold\"" } else { "" };
                    let r = if *vertical {
                        format!(" transform=\"rotate(-90 {x:.1} {y:.1})\"")
                    } else {
                        String::new()
                    };
                    s.push_str(&format!(
                        "<text x=\"{x:.1}\" y=\"{y:.1}\" font-size=\"{size}\" fill=\"{}\"{a}{b}{r}>{}</text>\n",
                        c(rgb),
                        esc(text)
                    ))
                }
            }
        }
        s.push_str("</svg>\n");
        s
    }

    /// The figure as a PNG file (RGB, 8 bits), anti-aliased.
    pub fn png(&self) -> Vec<u8> {
        let (w, h) = (self.w.max(1), self.h.max(1));
        let Some(mut pm) = Pixmap::new(w, h) else {
            return encode_png(1, 1, &[255, 255, 255]);
        };
        pm.fill(tiny_skia::Color::WHITE);
        for sh in &self.shapes {
            draw(&mut pm, sh);
        }
        // Opaque background: premultiplied RGBA is plain RGBA.
        let rgb: Vec<u8> = pm
            .data()
            .chunks_exact(4)
            .flat_map(|p| [p[0], p[1], p[2]])
            .collect();
        encode_png(w, h, &rgb)
    }
}

fn paint(rgb: Rgb, opacity: f64) -> Paint<'static> {
    let mut p = Paint::default();
    p.set_color_rgba8(
        rgb[0],
        rgb[1],
        rgb[2],
        (opacity.clamp(0.0, 1.0) * 255.0).round() as u8,
    );
    p.anti_alias = true;
    p
}

/// A one-pixel-wide horizontal or vertical line falls on pixel centres.
fn crisp(v: f64, width: f64) -> f64 {
    if (width.round() as i64) % 2 == 1 {
        v.floor() + 0.5
    } else {
        v.round()
    }
}

fn stroke_path(pm: &mut Pixmap, pts: &[(f64, f64)], stroke: Rgb, width: f64, dash: bool) {
    let mut pb = PathBuilder::new();
    let axis_aligned = pts.len() == 2 && (pts[0].0 == pts[1].0 || pts[0].1 == pts[1].1);
    for (i, &(x, y)) in pts.iter().enumerate() {
        let (x, y) = if axis_aligned {
            if pts[0].0 == pts[1].0 {
                (crisp(x, width), y)
            } else {
                (x, crisp(y, width))
            }
        } else {
            (x, y)
        };
        if i == 0 {
            pb.move_to(x as f32, y as f32);
        } else {
            pb.line_to(x as f32, y as f32);
        }
    }
    let Some(path) = pb.finish() else { return };
    let mut st = Stroke {
        width: width as f32,
        line_join: tiny_skia::LineJoin::Round,
        ..Stroke::default()
    };
    if dash {
        st.dash = StrokeDash::new(vec![5.0, 4.0], 0.0);
    }
    pm.stroke_path(&path, &paint(stroke, 1.0), &st, Transform::identity(), None);
}

/// Collects a glyph outline into a `tiny-skia` path (font units).
struct GlyphPath(PathBuilder);

impl ttf_parser::OutlineBuilder for GlyphPath {
    fn move_to(&mut self, x: f32, y: f32) {
        self.0.move_to(x, y)
    }
    fn line_to(&mut self, x: f32, y: f32) {
        self.0.line_to(x, y)
    }
    fn quad_to(&mut self, x1: f32, y1: f32, x: f32, y: f32) {
        self.0.quad_to(x1, y1, x, y)
    }
    fn curve_to(&mut self, x1: f32, y1: f32, x2: f32, y2: f32, x: f32, y: f32) {
        self.0.cubic_to(x1, y1, x2, y2, x, y)
    }
    fn close(&mut self) {
        self.0.close()
    }
}

#[allow(clippy::too_many_arguments)]
fn draw_text(
    pm: &mut Pixmap,
    x: f64,
    y: f64,
    text: &str,
    size: f64,
    bold: bool,
    anchor: Anchor,
    rgb: Rgb,
    vertical: bool,
) {
    let f = font(bold);
    let (glyphs, adv) = f.layout(text);
    let s = size / f.upem();
    let start = match anchor {
        Anchor::Start => 0.0,
        Anchor::Middle => -adv * s / 2.0,
        Anchor::End => -adv * s,
    };
    let p = paint(rgb, 1.0);
    for g in glyphs {
        let mut gp = GlyphPath(PathBuilder::new());
        f.outline(g.id, &mut gp);
        let Some(path) = gp.0.finish() else { continue };
        let dx = start + g.x * s;
        // Font units (y up) to pixels. Turned a quarter counter-clockwise
        // about (x, y) on screen (y down), the glyph point (gx, gy) lands at
        // (x - gy s, y - dx - gx s): the text reads upwards.
        let t = if vertical {
            Transform::from_row(0.0, -s as f32, -s as f32, 0.0, x as f32, (y - dx) as f32)
        } else {
            Transform::from_row(s as f32, 0.0, 0.0, -s as f32, (x + dx) as f32, y as f32)
        };
        pm.fill_path(&path, &p, FillRule::Winding, t, None);
    }
}

fn draw(pm: &mut Pixmap, sh: &Shape) {
    match sh {
        Shape::Rect {
            x,
            y,
            w,
            h,
            fill,
            opacity,
        } => {
            if let Some(r) = Rect::from_xywh(*x as f32, *y as f32, *w as f32, *h as f32) {
                pm.fill_rect(r, &paint(*fill, *opacity), Transform::identity(), None);
            }
        }
        Shape::Line {
            x1,
            y1,
            x2,
            y2,
            stroke,
            width,
            dash,
        } => stroke_path(pm, &[(*x1, *y1), (*x2, *y2)], *stroke, *width, *dash),
        Shape::Polyline {
            pts,
            stroke,
            width,
            dash,
        } => stroke_path(pm, pts, *stroke, *width, *dash),
        Shape::Dot {
            x,
            y,
            r,
            fill,
            opacity,
        } => {
            if let Some(path) = PathBuilder::from_circle(*x as f32, *y as f32, *r as f32) {
                pm.fill_path(
                    &path,
                    &paint(*fill, *opacity),
                    FillRule::Winding,
                    Transform::identity(),
                    None,
                );
            }
        }
        Shape::Text {
            x,
            y,
            text,
            size,
            bold,
            anchor,
            rgb,
            vertical,
        } => draw_text(pm, *x, *y, text, *size, *bold, *anchor, *rgb, *vertical),
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

fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let p = a as i16 + b as i16 - c as i16;
    let (pa, pb, pc) = (
        (p - a as i16).abs(),
        (p - b as i16).abs(),
        (p - c as i16).abs(),
    );
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}

/// Filters the rows of an image of `stride` bytes per row and `bpp` bytes
/// per pixel, each with the PNG filter (none, sub, up or Paeth) whose output
/// has the smallest sum of magnitudes; returns the bytes to deflate.
fn filter_rows(data: &[u8], stride: usize, bpp: usize) -> Vec<u8> {
    let mut raw = Vec::with_capacity(data.len() + data.len() / stride.max(1) + 1);
    let zero = vec![0u8; stride];
    let mut cand = vec![vec![0u8; stride]; 4];
    for (r, row) in data.chunks(stride).enumerate() {
        let up = if r == 0 {
            &zero[..]
        } else {
            &data[(r - 1) * stride..r * stride]
        };
        for i in 0..row.len() {
            let a = if i >= bpp { row[i - bpp] } else { 0 };
            let c = if i >= bpp { up[i - bpp] } else { 0 };
            cand[0][i] = row[i];
            cand[1][i] = row[i].wrapping_sub(a);
            cand[2][i] = row[i].wrapping_sub(up[i]);
            cand[3][i] = row[i].wrapping_sub(paeth(a, up[i], c));
        }
        let cost = |v: &[u8]| {
            v.iter()
                .map(|&b| (b as i8).unsigned_abs() as u64)
                .sum::<u64>()
        };
        // PNG filter types 0 (none), 1 (sub), 2 (up), 4 (Paeth).
        let (kind, best) = [0u8, 1, 2, 4]
            .into_iter()
            .zip(&cand)
            .min_by_key(|(_, v)| cost(&v[..row.len()]))
            .unwrap_or((0, &cand[0]));
        raw.push(kind);
        raw.extend_from_slice(&best[..row.len()]);
    }
    raw
}

/// Encodes 8-bit RGB pixels as a PNG: indexed (a palette of the exact
/// colours) when the image has at most 256 colours, as charts mostly do,
/// else RGB; rows filtered, then deflated. Lossless either way.
pub fn encode_png(w: u32, h: u32, rgb: &[u8]) -> Vec<u8> {
    let mut palette: Vec<[u8; 3]> = Vec::new();
    let mut index = std::collections::HashMap::new();
    let mut indexed = Vec::with_capacity(rgb.len() / 3);
    for p in rgb.chunks_exact(3) {
        let c = [p[0], p[1], p[2]];
        let i = *index.entry(c).or_insert_with(|| {
            palette.push(c);
            palette.len() - 1
        });
        if palette.len() > 256 {
            break;
        }
        indexed.push(i as u8);
    }
    let paletted = palette.len() <= 256;
    let raw = if paletted {
        // Indices are not magnitudes: rows go unfiltered.
        let mut raw = Vec::with_capacity(indexed.len() + h as usize);
        for row in indexed.chunks(w.max(1) as usize) {
            raw.push(0);
            raw.extend_from_slice(row);
        }
        raw
    } else {
        filter_rows(rgb, w as usize * 3, 3)
    };
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
    ihdr.extend_from_slice(&[8, if paletted { 3 } else { 2 }, 0, 0, 0]);
    chunk(b"IHDR", &ihdr);
    if paletted {
        chunk(b"PLTE", &palette.concat());
    }
    chunk(b"IDAT", &z);
    chunk(b"IEND", &[]);
    out
}

/// Decodes an 8-bit PNG (RGB, RGBA or indexed, not interlaced, any filter)
/// into `(width, height, rgb)`; `None` for anything else. The
/// report's tests read the charts and the browser's screenshots with it.
pub fn decode_png(png: &[u8]) -> Option<(usize, usize, Vec<u8>)> {
    if png.get(..8)? != b"\x89PNG\r\n\x1a\n" {
        return None;
    }
    let (mut pos, mut w, mut h, mut bpp) = (8usize, 0usize, 0usize, 0usize);
    let mut z = Vec::new();
    let mut plte: Vec<u8> = Vec::new();
    while pos + 8 <= png.len() {
        let len = u32::from_be_bytes(png[pos..pos + 4].try_into().ok()?) as usize;
        let kind = &png[pos + 4..pos + 8];
        let data = png.get(pos + 8..pos + 8 + len)?;
        match kind {
            b"IHDR" => {
                w = u32::from_be_bytes(data[0..4].try_into().ok()?) as usize;
                h = u32::from_be_bytes(data[4..8].try_into().ok()?) as usize;
                // 8-bit RGB or RGBA, not interlaced.
                bpp = match (data[8], data[9], data[12]) {
                    (8, 2, 0) => 3,
                    (8, 6, 0) => 4,
                    (8, 3, 0) => 1,
                    _ => return None,
                };
            }
            b"IDAT" => z.extend_from_slice(data),
            b"PLTE" => plte = data.to_vec(),
            b"IEND" => break,
            _ => {}
        }
        pos += 12 + len;
    }
    let raw = miniz_oxide::inflate::decompress_to_vec_zlib(&z).ok()?;
    let stride = w * bpp;
    if raw.len() != h * (stride + 1) {
        return None;
    }
    let mut px = vec![0u8; h * stride];
    for r in 0..h {
        let f = raw[r * (stride + 1)];
        let src = &raw[r * (stride + 1) + 1..(r + 1) * (stride + 1)];
        for i in 0..stride {
            let a = if i >= bpp {
                px[r * stride + i - bpp]
            } else {
                0
            };
            let b = if r > 0 { px[(r - 1) * stride + i] } else { 0 };
            let c = if r > 0 && i >= bpp {
                px[(r - 1) * stride + i - bpp]
            } else {
                0
            };
            px[r * stride + i] = match f {
                0 => src[i],
                1 => src[i].wrapping_add(a),
                2 => src[i].wrapping_add(b),
                3 => src[i].wrapping_add(((a as u16 + b as u16) / 2) as u8),
                4 => src[i].wrapping_add(paeth(a, b, c)),
                _ => return None,
            };
        }
    }
    let rgb = match bpp {
        3 => px,
        4 => px
            .chunks_exact(4)
            .flat_map(|p| [p[0], p[1], p[2]])
            .collect(),
        _ => {
            let mut v = Vec::with_capacity(px.len() * 3);
            for &i in &px {
                v.extend_from_slice(plte.get(3 * i as usize..3 * i as usize + 3)?);
            }
            v
        }
    };
    Some((w, h, rgb))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_round_trips_through_the_decoder_rgb_and_indexed() {
        let (w, h) = (37u32, 11u32);
        // Many colours (every pixel its own, 407 > 256): RGB with filtered
        // rows.
        let rgb: Vec<u8> = (0..w * h)
            .flat_map(|i| [(i % 256) as u8, (i / 256) as u8, ((i * 7919) % 251) as u8])
            .collect();
        let png = encode_png(w, h, &rgb);
        assert_eq!(png[25], 2, "colour type RGB");
        let (dw, dh, back) = decode_png(&png).unwrap();
        assert_eq!((dw, dh), (w as usize, h as usize));
        assert_eq!(back, rgb);
        // Few colours: a palette.
        let few: Vec<u8> = (0..w * h)
            .flat_map(|i| [(i % 7) as u8 * 30, 200, (i % 3) as u8])
            .collect();
        let png = encode_png(w, h, &few);
        assert_eq!(png[25], 3, "colour type indexed");
        assert_eq!(decode_png(&png).unwrap().2, few);
    }

    #[test]
    fn text_is_drawn_with_glyph_outlines() {
        let mut f = Figure::new(120, 40, "t");
        f.text_at(10.0, 25.0, "||b|| ± ²", 16.0, false, Anchor::Start, TEXT);
        let (_, _, px) = decode_png(&f.png()).unwrap();
        let dark = px.chunks(3).filter(|p| p[0] < 128).count();
        // Anti-aliased: partly covered pixels exist, and a fair amount of ink.
        let grey = px.chunks(3).filter(|p| p[0] > 40 && p[0] < 215).count();
        assert!(dark > 30 && grey > 20, "dark {dark}, grey {grey}");
        let b = &f.text_boxes()[0].1;
        assert!(b[0] == 10.0 && b[2] > 40.0 && b[2] < 110.0, "{b:?}");
    }
}
