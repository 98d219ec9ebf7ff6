//! A figure with no plotting dependency: one list of primitives
//! ([`Shape`]) that the SVG writer prints and the PNG writer rasterises (with
//! a built-in 5x7 font), encoding the image with `miniz_oxide`'s deflate.

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

pub(crate) const PALETTE: [[u8; 3]; 8] = [
    [31, 119, 180],
    [255, 127, 14],
    [44, 160, 44],
    [214, 39, 40],
    [148, 103, 189],
    [140, 86, 75],
    [227, 119, 194],
    [127, 127, 127],
];
pub(crate) const BLACK: [u8; 3] = [0, 0, 0];
pub(crate) const GREY: [u8; 3] = [200, 200, 200];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

impl Figure {
    pub(crate) fn new(w: u32, h: u32) -> Self {
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
    pub(crate) fn text(&mut self, x: f64, y: f64, t: &str, scale: u32) {
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
