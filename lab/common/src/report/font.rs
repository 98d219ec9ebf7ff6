//! The charts' typeface: DejaVu Sans Condensed, regular and bold, embedded
//! (subsets, see `fonts/README.md`). The layout measures every label with
//! it, the PNG writer draws its glyph outlines, and `report.html` carries
//! the same files, so a label measured here fits wherever it is shown.

use std::sync::OnceLock;
use ttf_parser::{Face, GlyphId, OutlineBuilder};

/// The regular face's file (TrueType).
pub(crate) const REGULAR_TTF: &[u8] = include_bytes!("fonts/DejaVuSansCondensed.ttf");
/// The bold face's file (TrueType).
pub(crate) const BOLD_TTF: &[u8] = include_bytes!("fonts/DejaVuSansCondensed-Bold.ttf");
/// The family name the SVG asks for (the HTML report's `@font-face` name),
/// then what a viewer of a lone SVG file most likely has.
pub(crate) const FAMILY: &str =
    "'DejaVu Sans Condensed', 'DejaVu Sans', 'Arial Narrow', sans-serif";

/// One face: its parsed tables and the kerning pairs of its `kern` table.
pub(crate) struct Font {
    face: Face<'static>,
    upem: f64,
}

fn parse(data: &'static [u8]) -> Font {
    // The files are part of this crate; a failure here is a build defect
    // that every report test catches at once.
    let face = Face::parse(data, 0).expect("embedded chart font parses");
    let upem = face.units_per_em() as f64;
    Font { face, upem }
}

/// The regular or the bold face.
pub(crate) fn font(bold: bool) -> &'static Font {
    static REGULAR: OnceLock<Font> = OnceLock::new();
    static BOLD: OnceLock<Font> = OnceLock::new();
    if bold {
        BOLD.get_or_init(|| parse(BOLD_TTF))
    } else {
        REGULAR.get_or_init(|| parse(REGULAR_TTF))
    }
}

/// A glyph placed on a line: its id and its pen position in font units.
pub(crate) struct Placed {
    pub id: GlyphId,
    pub x: f64,
}

impl Font {
    /// Font units per em.
    pub(crate) fn upem(&self) -> f64 {
        self.upem
    }

    fn kerning(&self, left: GlyphId, right: GlyphId) -> f64 {
        let Some(kern) = self.face.tables().kern else {
            return 0.0;
        };
        kern.subtables
            .into_iter()
            .filter(|s| s.horizontal && !s.variable && !s.has_cross_stream)
            .find_map(|s| s.glyphs_kerning(left, right))
            .map_or(0.0, f64::from)
    }

    /// The glyphs of `text` with their pen positions (advance widths and
    /// kerning, in font units), and the line's total advance.
    pub(crate) fn layout(&self, text: &str) -> (Vec<Placed>, f64) {
        let mut out = Vec::with_capacity(text.len());
        let mut pen = 0.0;
        let mut prev: Option<GlyphId> = None;
        for c in text.chars() {
            let id = self.face.glyph_index(c).unwrap_or(GlyphId(0));
            if let Some(p) = prev {
                pen += self.kerning(p, id);
            }
            out.push(Placed { id, x: pen });
            pen += self.face.glyph_hor_advance(id).map_or(0.0, f64::from);
            prev = Some(id);
        }
        (out, pen)
    }

    /// Width of `text` at `size` pixels per em.
    pub(crate) fn width(&self, text: &str, size: f64) -> f64 {
        self.layout(text).1 * size / self.upem
    }

    /// The characters of `text` this face has no glyph for (drawn as its
    /// `.notdef` box).
    pub(crate) fn missing(&self, text: &str) -> Vec<char> {
        text.chars()
            .filter(|c| !c.is_control() && self.face.glyph_index(*c).is_none())
            .collect()
    }

    /// Feeds the outline of glyph `id` (font units, y up) to `b`.
    pub(crate) fn outline(&self, id: GlyphId, b: &mut dyn OutlineBuilder) {
        struct Fwd<'a>(&'a mut dyn OutlineBuilder);
        impl OutlineBuilder for Fwd<'_> {
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
                self.0.curve_to(x1, y1, x2, y2, x, y)
            }
            fn close(&mut self) {
                self.0.close()
            }
        }
        let _ = self.face.outline_glyph(id, &mut Fwd(b));
    }
}

/// Width of `text` at `size` px in the regular (`bold = false`) or bold face.
pub fn text_width(text: &str, size: f64, bold: bool) -> f64 {
    font(bold).width(text, size)
}

/// The characters of `text` the chart font has no glyph for (in the
/// regular or the bold face); a chart label with one shows a `.notdef` box.
pub fn missing_glyphs(text: &str, bold: bool) -> Vec<char> {
    font(bold).missing(text)
}

/// Splits `text` into lines no wider than `max` pixels at `size`, breaking
/// at spaces; a single word wider than `max` stays whole on its own line
/// (callers size their columns for the widest word, so nothing is cut).
pub fn wrap(text: &str, size: f64, bold: bool, max: f64) -> Vec<String> {
    let f = font(bold);
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ') {
        let trial = if cur.is_empty() {
            word.to_string()
        } else {
            format!("{cur} {word}")
        };
        if f.width(&trial, size) <= max || cur.is_empty() {
            cur = trial;
        } else {
            lines.push(std::mem::take(&mut cur));
            cur = word.to_string();
        }
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_glyphs_labels_use_exist_and_have_width() {
        for bold in [false, true] {
            let f = font(bold);
            let probe = "||b − ∇²p|| / ||b||  ^ ± ² µ × ≤ ≥ → ‖ abcXYZ 0.123 (x)[y]{z} _ % # @ ~";
            assert!(f.missing(probe).is_empty(), "{:?}", f.missing(probe));
            assert!(f.width("|", 12.0) > 1.0);
            assert!(f.width("mmmm", 12.0) > f.width("iiii", 12.0));
        }
        // Kerning: "AV" is narrower than "A" and "V" apart.
        let f = font(false);
        assert!(f.width("AV", 100.0) < f.width("A", 100.0) + f.width("V", 100.0));
        assert_eq!(f.missing("漢"), vec!['漢']);
    }

    #[test]
    fn wrap_breaks_at_spaces_and_keeps_every_word() {
        let t = "multigrid V(2,2), rung 3 (tile smoother, coarse levels in one block) to 1e-8";
        let lines = wrap(t, 12.0, false, 150.0);
        assert!(lines.len() > 1);
        assert_eq!(lines.join(" "), t);
        for l in &lines {
            assert!(
                text_width(l, 12.0, false) <= 150.0 || !l.contains(' '),
                "{l}"
            );
        }
        assert_eq!(wrap("", 12.0, false, 10.0), vec![String::new()]);
    }
}
