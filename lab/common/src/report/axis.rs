//! Axes: a value-to-pixel [`Scale`] (linear or logarithmic) with readable
//! bounds and ticks, and the number format of tick labels.

/// A numeric axis from value to pixel.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scale {
    /// Lowest value shown.
    pub lo: f64,
    /// Highest value shown.
    pub hi: f64,
    /// Logarithmic.
    pub log: bool,
    /// Pixel of `lo`.
    pub p0: f64,
    /// Pixel of `hi`.
    pub p1: f64,
}

const STEPS: [f64; 3] = [1.0, 2.0, 5.0];

/// The largest 1, 2 or 5 times a power of ten at or below `v` (> 0).
fn nice_floor(v: f64) -> f64 {
    let e = v.log10().floor();
    let base = 10f64.powf(e);
    STEPS
        .iter()
        .rev()
        .map(|s| s * base)
        .find(|c| *c <= v * (1.0 + 1e-9))
        .unwrap_or(base)
}

/// The smallest 1, 2 or 5 times a power of ten at or above `v` (> 0).
fn nice_ceil(v: f64) -> f64 {
    let e = v.log10().floor();
    let base = 10f64.powf(e);
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|s| s * base)
        .find(|c| *c >= v * (1.0 - 1e-9))
        .unwrap_or(10.0 * base)
}

impl Scale {
    /// A scale over `values` (non-finite and, for a log scale, non-positive
    /// values ignored) and the values of `include` (reference lines),
    /// logarithmic when the largest is more than `log_ratio` times the
    /// smallest; `zero`: a linear scale starts at 0.
    pub(crate) fn fit(values: &[f64], log_ratio: f64, zero: bool, p0: f64, p1: f64) -> Self {
        let pos: Vec<f64> = values
            .iter()
            .copied()
            .filter(|v| v.is_finite() && *v > 0.0)
            .collect();
        let (min, max) = pos
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
        if pos.is_empty() {
            return Self {
                lo: 0.0,
                hi: 1.0,
                log: false,
                p0,
                p1,
            };
        }
        if max / min > log_ratio {
            let (lo, hi) = (nice_floor(min), nice_ceil(max));
            let hi = if hi <= lo { lo * 10.0 } else { hi };
            Self {
                lo,
                hi,
                log: true,
                p0,
                p1,
            }
        } else {
            let lo = if zero { 0.0 } else { nice_floor(min) };
            let step = linear_step(max - lo);
            let hi = ((max / step).ceil() * step).max(lo + step);
            Self {
                lo,
                hi,
                log: false,
                p0,
                p1,
            }
        }
    }

    /// A scale for bars that grow from the axis start: linear from 0, or
    /// logarithmic (over `log_ratio`) from below half the smallest value, so
    /// that the shortest bar still shows.
    pub(crate) fn fit_bars(values: &[f64], log_ratio: f64, p0: f64, p1: f64) -> Self {
        let mut s = Self::fit(values, log_ratio, true, p0, p1);
        if s.log {
            let min = values
                .iter()
                .copied()
                .filter(|v| v.is_finite() && *v > 0.0)
                .fold(f64::MAX, f64::min);
            s.lo = nice_floor(min * 0.5);
        }
        s
    }

    /// The pixel of `v` (clamped to the axis).
    pub(crate) fn px(&self, v: f64) -> f64 {
        let t = if self.log {
            if v <= 0.0 || !v.is_finite() {
                0.0
            } else {
                (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
            }
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        self.p0 + t.clamp(0.0, 1.0) * (self.p1 - self.p0)
    }

    /// Tick values and their labels.
    pub(crate) fn ticks(&self) -> Vec<(f64, String)> {
        let mut t = Vec::new();
        if self.log {
            let (e0, e1) = (
                self.lo.log10().floor() as i32,
                self.hi.log10().ceil() as i32,
            );
            let decades = (self.hi / self.lo).log10();
            let mults: &[f64] = if decades <= 1.3 {
                &[1.0, 2.0, 3.0, 5.0]
            } else if decades <= 2.6 {
                &[1.0, 2.0, 5.0]
            } else {
                &[1.0]
            };
            let every = if decades > 9.0 { 2 } else { 1 };
            for e in e0..=e1 {
                if e.rem_euclid(every) != 0 {
                    continue;
                }
                for m in mults {
                    let v = m * 10f64.powi(e);
                    if v >= self.lo * (1.0 - 1e-9) && v <= self.hi * (1.0 + 1e-9) {
                        t.push((v, fmt_num(v)));
                    }
                }
            }
        } else {
            let step = linear_step(self.hi - self.lo);
            let mut v = (self.lo / step).ceil() * step;
            while v <= self.hi + step * 1e-9 {
                t.push((v, fmt_num(if v.abs() < step * 1e-9 { 0.0 } else { v })));
                v += step;
            }
        }
        t
    }
}

/// A step of 1, 2, 2.5 or 5 times a power of ten giving 4 to 8 ticks over `span`.
fn linear_step(span: f64) -> f64 {
    if span <= 0.0 || !span.is_finite() {
        return 1.0;
    }
    let raw = span / 5.0;
    let base = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * base)
        .find(|s| span / s <= 8.0)
        .unwrap_or(10.0 * base)
}

fn superscript(n: i32) -> String {
    n.to_string()
        .chars()
        .map(|c| match c {
            '-' => '⁻',
            '0' => '⁰',
            '1' => '¹',
            '2' => '²',
            '3' => '³',
            '4' => '⁴',
            '5' => '⁵',
            '6' => '⁶',
            '7' => '⁷',
            '8' => '⁸',
            _ => '⁹',
        })
        .collect()
}

/// A number for a tick or an annotation: plain from 0.001 to below 10000
/// (at most three significant digits), else `10ⁿ` or `m×10ⁿ`.
pub fn fmt_num(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v == 0.0 { "0".into() } else { v.to_string() };
    }
    let a = v.abs();
    if !(1e-3..1e4).contains(&a) {
        let e = a.log10().floor() as i32;
        let m = v / 10f64.powi(e);
        return if (m.abs() - 1.0).abs() < 1e-9 {
            format!("{}10{}", if v < 0.0 { "−" } else { "" }, superscript(e))
        } else {
            format!("{}×10{}", trim(&format!("{m:.2}")), superscript(e))
        };
    }
    let digits = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        // Three significant digits.
        (2 - a.log10().floor() as i32).max(0) as usize
    };
    trim(&format!("{v:.digits$}"))
}

fn trim(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_naturally() {
        assert_eq!(fmt_num(1.0), "1");
        assert_eq!(fmt_num(2.5), "2.5");
        assert_eq!(fmt_num(34.12), "34.1");
        assert_eq!(fmt_num(0.0123), "0.0123");
        assert_eq!(fmt_num(1570.0), "1570");
        assert_eq!(fmt_num(1e4), "10⁴");
        assert_eq!(fmt_num(1e6), "10⁶");
        assert_eq!(fmt_num(1e-4), "10⁻⁴");
        assert_eq!(fmt_num(2e5), "2×10⁵");
    }

    #[test]
    fn scales_cover_their_values_with_ticks_inside() {
        let s = Scale::fit(&[0.001, 40.0], 20.0, true, 0.0, 100.0);
        assert!(s.log && s.lo <= 0.001 && s.hi >= 40.0);
        assert_eq!(s.px(s.lo), 0.0);
        assert_eq!(s.px(s.hi), 100.0);
        let t = s.ticks();
        assert!(t.len() >= 4 && t.iter().all(|(v, _)| *v >= s.lo && *v <= s.hi));
        let l = Scale::fit(&[3.0, 17.0], 20.0, true, 0.0, 100.0);
        assert!(!l.log && l.lo == 0.0 && l.hi >= 17.0);
        assert!((4..=9).contains(&l.ticks().len()), "{:?}", l.ticks());
        let narrow = Scale::fit(&[1.2, 9.0], 5.0, false, 0.0, 100.0);
        assert!(
            narrow.log && narrow.ticks().len() >= 3,
            "{:?}",
            narrow.ticks()
        );
    }
}
