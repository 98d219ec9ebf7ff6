//! What makes two rows the same problem, and so comparable: a [`Problem`]
//! is the workload, the shape, the words of the size that change the
//! computation (`causal`, `ragged`), the precision of the answer, a solve's
//! tolerance, and what is measured where one size holds more than one
//! computation. Every ratio, best-rung-against-best-peer and chart group of
//! the report pairs only rows of equal problems.
//!
//! A row may carry its problem ([`Row::problem`]); a row without one (every
//! row of the runs recorded before the field existed, every peer script's
//! row) gets it from the fields every row has:
//!
//! * the **shape** from the size's numbers through [`size_key`], which
//!   makes `2^20 (1048576)` and `1048576`, `2000^2` and `2000x2000`, `1e8
//!   samples` and `1e+08 samples` one shape;
//! * the **qualifiers** from the size's words ([`size_words`]): `B=4 H=16
//!   S=8192 D=128 causal` and `B=4 H=16 S=8192 D=128` are one shape and two
//!   problems;
//! * the **precision** from the row's, its first word, except a mixed
//!   solve's, which is its field's (`f32 cycles, f64 field`: `f64`);
//! * the **tolerance** from a solve's variant (`... to 1e-8`), or
//!   [`DIRECT`] for a direct solve (a variant with the word `direct`, such
//!   as CuPy's spectral solve): a direct solve reaches every tolerance its
//!   residual is below, so it is compared with every solve to a tolerance
//!   of its equation (workload, shape, qualifiers, the answer's precision;
//!   [`Problem::reached_by`], applied where rows are grouped);
//! * the **measure** from the throughput unit's first word (`GFLOP/s` for
//!   the GEMM, `GB/s` for the GEMM and column sum of one shape), none for a
//!   solve to a tolerance. A row without a unit (a peer that reports only
//!   its time) takes the measure of the one other problem it matches in
//!   everything else ([`problems`]).

pub use super::row::Problem;
use super::row::Row;

/// The tolerance of a direct solve's problem: it has none of its own and
/// reaches every tolerance above its residual.
pub const DIRECT: &str = "direct";

/// A direct solve's row: the last item of a parenthesis of its variant is
/// the word `direct` (`CuPy spectral solve (DST-I via rfft of the odd
/// extension, direct)`, `spectral (DST-I, direct)`), and it names no
/// tolerance of its own. The word elsewhere (`colsum direct: ...`) is not.
pub fn is_direct(variant: &str) -> bool {
    tolerance(variant).is_none()
        && variant.match_indices(')').any(|(i, _)| {
            let before = variant[..i].trim_end();
            let n = before.len();
            n >= DIRECT.len()
                && before.is_char_boundary(n - DIRECT.len())
                && before[n - DIRECT.len()..].eq_ignore_ascii_case(DIRECT)
                && matches!(
                    before[..n - DIRECT.len()].trim_end().chars().last(),
                    Some(',' | '(')
                )
        })
}

impl Problem {
    /// The problem of a row from its size, variant, precision and unit
    /// (the row's own [`Row::problem`] aside).
    pub fn of(r: &Row) -> Problem {
        let tolerance =
            tolerance(&r.variant).or_else(|| is_direct(&r.variant).then(|| DIRECT.to_string()));
        let precision = if tolerance.is_some() {
            answer_precision(&r.precision)
        } else {
            precision_family(&r.precision)
        };
        let measure = if tolerance.is_some() {
            ""
        } else {
            unit_family(&r.unit)
        };
        Problem {
            workload: r.workload.clone(),
            shape: size_key(&r.size),
            qualifiers: size_words(&r.size),
            precision: precision.to_string(),
            tolerance,
            measure: measure.to_string(),
        }
    }

    /// The same problem at another shape: equal in everything but the shape
    /// (the lines of a scaling chart).
    pub fn same_but_shape(&self, o: &Problem) -> bool {
        Problem {
            shape: String::new(),
            ..self.clone()
        } == Problem {
            shape: String::new(),
            ..o.clone()
        }
    }

    /// The same equation: equal but for the tolerance and the measure (the
    /// solves of one convergence chart, each to its own tolerance).
    pub fn same_equation(&self, o: &Problem) -> bool {
        self.workload == o.workload
            && self.shape == o.shape
            && self.qualifiers == o.qualifiers
            && self.precision == o.precision
    }

    /// A direct solve's problem ([`DIRECT`]).
    pub fn is_direct(&self) -> bool {
        self.tolerance.as_deref() == Some(DIRECT)
    }

    /// The tolerance as a number (`None` for a direct solve and for a row
    /// that is not a solve).
    pub fn tolerance_value(&self) -> Option<f64> {
        self.tolerance.as_deref()?.parse().ok()
    }

    /// `self` is a solve to a tolerance that the direct solve `direct`
    /// reaches: the same equation, and `direct`'s relative residual
    /// (`residual`, when it recorded one) at or below the tolerance. A
    /// direct solve of another grid, qualifier or precision never is.
    pub fn reached_by(&self, direct: &Problem, residual: Option<f64>) -> bool {
        let Some(tol) = self.tolerance_value() else {
            return false;
        };
        direct.is_direct()
            && !self.is_direct()
            && self.same_equation(direct)
            && residual.is_none_or(|r| r <= tol)
    }

    /// One line for people: `4x16x8192x128 causal · bf16 · GFLOP/s`.
    pub fn key(&self) -> String {
        let mut s = self.shape.clone();
        for q in &self.qualifiers {
            s.push(' ');
            s.push_str(q);
        }
        for part in [&self.precision, &self.measure] {
            if !part.is_empty() {
                s.push_str(" · ");
                s.push_str(part);
            }
        }
        match &self.tolerance {
            Some(_) if self.is_direct() => s.push_str(" · direct solve"),
            Some(t) => s.push_str(&format!(" · to {t}")),
            None => {}
        }
        s
    }
}

/// The problem of every row of `rows`, in order: its own where it has one,
/// else [`Problem::of`]; a row without a measure (no unit, no tolerance)
/// takes the measure of the problems that match it in everything else,
/// when they all have one and the same.
pub fn problems(rows: &[Row]) -> Vec<Problem> {
    let mut ps: Vec<Problem> = rows
        .iter()
        .map(|r| match &r.problem {
            // A direct solve recorded before the rule existed: a solve
            // still, of the answer's precision.
            Some(p) if p.tolerance.is_none() && is_direct(&r.variant) => Problem {
                tolerance: Some(DIRECT.to_string()),
                measure: String::new(),
                precision: answer_precision(&r.precision).to_string(),
                ..p.clone()
            },
            Some(p) => p.clone(),
            None => Problem::of(r),
        })
        .collect();
    let known: Vec<Problem> = ps
        .iter()
        .filter(|p| !p.measure.is_empty())
        .cloned()
        .collect();
    for (p, r) in ps.iter_mut().zip(rows) {
        if r.problem.is_some() || !p.measure.is_empty() || p.tolerance.is_some() {
            continue;
        }
        let mut measures: Vec<&str> = known
            .iter()
            .filter(|k| {
                Problem {
                    measure: String::new(),
                    ..(*k).clone()
                } == *p
            })
            .map(|k| k.measure.as_str())
            .collect();
        measures.sort_unstable();
        measures.dedup();
        if let [only] = measures[..] {
            p.measure = only.to_string();
        }
    }
    ps
}

/// The rows with their problems filled in ([`problems`]), as
/// `results.json` records them.
pub fn with_problems(rows: &[Row]) -> Vec<Row> {
    rows.iter()
        .zip(problems(rows))
        .map(|(r, p)| {
            let mut r = r.clone();
            r.problem = Some(p);
            r
        })
        .collect()
}

/// The words of a size text that say which problem it is, in order and in
/// lower case: every run of letters that does not touch a number (`1e8`,
/// `2000x2000`), is not the `x` of a product and is not a dimension's name
/// (`B=4`). `B=4 H=16 S=8192 D=128 causal`: `["causal"]`; `10000 curves
/// (ragged) x 300 samples x 10^4 freqs`: `["curves", "ragged", "samples",
/// "freqs"]`.
pub fn size_words(size: &str) -> Vec<String> {
    let b = size.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_alphabetic() {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_alphabetic() {
            i += 1;
        }
        let after_digit = start > 0 && b[start - 1].is_ascii_digit();
        let before_digit = i < b.len() && b[i].is_ascii_digit();
        let named = i < b.len() && b[i] == b'=';
        let word = size[start..i].to_ascii_lowercase();
        if after_digit || before_digit || named || word == "x" {
            continue;
        }
        out.push(word);
    }
    // A size without numbers is all shape.
    if size_numbers(size).is_empty() {
        out.clear();
    }
    out
}

/// The precision of a solve's answer: its field's where the text names one
/// (`f32 cycles, f64 field`: `f64`), else the first word.
fn answer_precision(p: &str) -> &str {
    let words: Vec<&str> = p.split([' ', ',']).filter(|w| !w.is_empty()).collect();
    words
        .windows(2)
        .find(|w| w[1] == "field")
        .map(|w| w[0])
        .unwrap_or_else(|| precision_family(p))
}

/// The numbers of a size text: `a^b` is one number for a base up to 10
/// (`2^20`) and `b` dimensions of `a` otherwise (`4096^3`); a number alone
/// in parentheses after such a power is its exact value and replaces it
/// (`2^20.0 (1048579)`); words are ignored.
fn size_numbers(s: &str) -> Vec<f64> {
    let b = s.as_bytes();
    let mut out: Vec<f64> = Vec::new();
    let mut i = 0;
    let mut after_power = false;
    while i < b.len() {
        let c = b[i];
        let starts_number =
            c.is_ascii_digit() && (i == 0 || !(b[i - 1].is_ascii_alphabetic() && b[i - 1] != b'x'));
        if !starts_number {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
            i += 1;
        }
        // Scientific notation: 1e8, 1e+08.
        if i + 1 < b.len() && b[i] == b'e' {
            let mut j = i + 1;
            if b[j] == b'+' || b[j] == b'-' {
                j += 1;
            }
            if j < b.len() && b[j].is_ascii_digit() {
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
                i = j;
            }
        }
        let Ok(v) = s[start..i].trim_end_matches('.').parse::<f64>() else {
            continue;
        };
        let mut vals = vec![v];
        let mut power = false;
        if i < b.len() && b[i] == b'^' {
            let e0 = i + 1;
            let mut j = e0;
            while j < b.len() && (b[j].is_ascii_digit() || b[j] == b'.') {
                j += 1;
            }
            if let Ok(e) = s[e0..j].trim_end_matches('.').parse::<f64>() {
                power = v <= 10.0;
                vals = if power {
                    vec![v.powf(e)]
                } else {
                    vec![v; e.round().max(1.0) as usize]
                };
            }
            i = j;
        }
        // A number alone in parentheses after a power is its exact value:
        // `2^20 (1048576)` is 1048576, `2^20.0 (1048579)` 1048579.
        let alone = s[..start].trim_end().ends_with('(') && s[i..].trim_start().starts_with(')');
        if alone && vals.len() == 1 && after_power {
            if let Some(l) = out.last_mut() {
                *l = vals[0];
            }
        } else {
            out.extend(vals);
        }
        after_power = power;
    }
    out
}

/// A size text as a key that two spellings of one size share
/// (`2^20.0 (1048576)` and `1048576`: `1048576`; `2000^2` and `2000x2000`:
/// `2000x2000`); a text with no number is its own key.
pub fn size_key(size: &str) -> String {
    let n = size_numbers(size);
    if n.is_empty() {
        return size.trim().to_string();
    }
    n.iter()
        .map(|v| {
            if v.fract() == 0.0 && v.abs() < 1e18 {
                format!("{}", *v as i64)
            } else {
                format!("{v}")
            }
        })
        .collect::<Vec<_>>()
        .join("x")
}

/// A size's magnitude, for ordering sizes: the product of its numbers, and
/// for a product of matrices `(m x k)(k x n)`, `m k n`.
pub(crate) fn size_magnitude(size: &str) -> f64 {
    let n = size_numbers(size);
    if n.len() == 4 && n[1] == n[2] && size.contains(")(") {
        return n[0] * n[1] * n[3];
    }
    n.iter().product::<f64>()
}

/// The tolerance of a solve's row (`... to 1e-8`, optionally followed by
/// a comma and more words).
pub(crate) fn tolerance(variant: &str) -> Option<String> {
    let at = variant.rfind(" to ")?;
    let rest = &variant[at + 4..];
    let tol: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '.'))
        .collect();
    // One spelling per value: `1e-08` (Python) and `1e-8` (Rust) are `1e-8`.
    let v: f64 = tol.parse().ok().filter(|_| tol.contains('e'))?;
    Some(format!("{v:e}"))
}

/// A solve's variant without its ` to <tolerance>` (the chart names the
/// tolerance once, in its title).
pub fn without_tolerance(variant: &str) -> String {
    let Some(at) = variant.rfind(" to ") else {
        return variant.to_string();
    };
    if tolerance(variant).is_none() {
        return variant.to_string();
    }
    let rest = &variant[at + 4..];
    let len = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '.'))
        .count();
    format!("{}{}", &variant[..at], &rest[len..])
        .replace(", )", ")")
        .replace(",)", ")")
}

/// First word of a unit (`GB/s (incl. zero + read-back)`: `GB/s`).
pub(crate) fn unit_family(unit: &str) -> &str {
    unit.split_whitespace().next().unwrap_or("")
}

/// First word of a precision (`f32 cycles, f64 field`: `f32`).
pub(crate) fn precision_family(p: &str) -> &str {
    p.split([' ', ',']).next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(w: &str, v: &str, backend: &str, size: &str, prec: &str, unit: &str) -> Row {
        let mut r = Row::plain(w, v, backend, size, prec);
        r.unit = unit.into();
        r
    }

    #[test]
    fn two_spellings_of_a_size_share_a_key() {
        let same = [
            ("2^20.0 (1048576)", "1048576"),
            ("2^20 (1048576)", "1048576"),
            ("2000^2", "2000x2000"),
            ("1e8 samples", "1e+08 samples"),
            ("4096^3", "4096x4096x4096"),
            ("2^26", "67108864"),
            ("114 samples x 2^20 freqs", "114 samples x 2^20 freqs"),
        ];
        for (a, b) in same {
            assert_eq!(size_key(a), size_key(b), "{a} / {b}");
            assert_eq!(size_words(a), size_words(b), "{a} / {b}");
        }
        assert_ne!(size_key("2^20.0 (1048579)"), size_key("1048576"));
        assert_eq!(size_key("2^20.0 (1048579)"), "1048579");
        assert_ne!(size_key("1999x1237"), size_key("2000x2000"));
        assert_eq!(size_key("(10000x5000)(5000x7000)"), "10000x5000x5000x7000");
        assert_eq!(size_key("whole module"), "whole module");
        assert_eq!(size_magnitude("(10000x5000)(5000x7000)"), 3.5e11);
        assert!(size_magnitude("4096^3") < size_magnitude("8192^3"));
    }

    #[test]
    fn the_words_of_a_size_tell_problems_of_one_shape_apart() {
        assert_eq!(size_words("B=4 H=16 S=8192 D=128"), Vec::<String>::new());
        assert_eq!(size_words("B=4 H=16 S=8192 D=128 causal"), ["causal"]);
        assert_eq!(
            size_words("10000 curves (ragged) x 300 samples x 10^4 freqs"),
            ["curves", "ragged", "samples", "freqs"]
        );
        assert_eq!(
            size_words("10000 curves (shared times) x 300 samples x 10^4 freqs"),
            ["curves", "shared", "times", "samples", "freqs"]
        );
        assert_eq!(size_words("2000x2000"), Vec::<String>::new());
        assert_eq!(size_words("module `vector`"), Vec::<String>::new());
        let a = Problem::of(&row(
            "attention",
            "4",
            "gpu",
            "B=4 H=16 S=8192 D=128",
            "bf16",
            "GFLOP/s",
        ));
        let c = Problem::of(&row(
            "attention",
            "4",
            "gpu",
            "B=4 H=16 S=8192 D=128 causal",
            "bf16",
            "GFLOP/s",
        ));
        assert_eq!(a.shape, c.shape);
        assert_ne!(a, c);
        assert!(!a.same_but_shape(&c));
    }

    #[test]
    fn a_solve_is_its_field_precision_and_tolerance() {
        let mixed = Problem::of(&row(
            "poisson-mg",
            "multigrid V(2,2), rung 4, f32 cycles to 1e-8",
            "gpu",
            "4096x4096",
            "f32 cycles, f64 field",
            "GB/s (cycle bytes floor / ms per cycle)",
        ));
        let peer = Problem::of(&row(
            "poisson-mg",
            "CuPy cupyx.scipy.sparse.linalg.cg to 1e-08",
            "cupy",
            "4096x4096",
            "f64",
            "",
        ));
        assert_eq!(mixed, peer);
        assert_eq!(mixed.tolerance.as_deref(), Some("1e-8"));
        assert_eq!(mixed.precision, "f64");
        let looser = Problem::of(&row(
            "poisson-mg",
            "CG to 1e-6",
            "cupy",
            "4096x4096",
            "f64",
            "",
        ));
        assert_ne!(mixed, looser);
        assert!(mixed.same_equation(&looser));
    }

    #[test]
    fn a_row_without_a_unit_takes_the_one_measure_of_its_problem() {
        let rows = [
            row(
                "lomb",
                "1",
                "gpu",
                "114 samples x 2^20 freqs",
                "f32",
                "Gpairs/s",
            ),
            row(
                "lomb",
                "CuPy",
                "cupy",
                "114 samples x 2^20 freqs",
                "f32",
                "",
            ),
            row(
                "matmul",
                "sgemm",
                "gpu",
                "(10000x5000)(5000x7000)",
                "f32",
                "GFLOP/s",
            ),
            row(
                "matmul",
                "colsum",
                "gpu",
                "(10000x5000)(5000x7000)",
                "f32",
                "GB/s",
            ),
            row(
                "matmul",
                "timed only",
                "torch",
                "(10000x5000)(5000x7000)",
                "f32",
                "",
            ),
        ];
        let ps = problems(&rows);
        assert_eq!(ps[1], ps[0]);
        assert_ne!(ps[2], ps[3]);
        // Two measures at its shape: it matches neither.
        assert_eq!(ps[4].measure, "");
        assert_ne!(ps[4], ps[2]);
        assert_ne!(ps[4], ps[3]);
        // A problem a row states is kept, and goes through results.json.
        let mut own = rows[1].clone();
        own.problem = Some(Problem {
            qualifiers: vec!["stated".into()],
            ..ps[0].clone()
        });
        assert_eq!(
            problems(std::slice::from_ref(&own))[0].qualifiers,
            ["stated"]
        );
        let json = serde_json::to_value(&with_problems(&rows)[1]).unwrap();
        let back = Row::from_json(&json).unwrap();
        assert_eq!(back.problem.as_ref(), Some(&ps[0]));
    }

    #[test]
    fn tolerances_are_read_from_solve_rows_only() {
        assert_eq!(
            tolerance("multigrid V(2,2), rung 3, f32 cycles to 1e-10").as_deref(),
            Some("1e-10")
        );
        assert_eq!(
            tolerance("CuPy cupyx.scipy.sparse.linalg.cg to 1e-08").as_deref(),
            Some("1e-8")
        );
        assert_eq!(
            tolerance("Jacobi rung 4 (temporal, depth 8) to 1e-6, EXTRAPOLATED").as_deref(),
            Some("1e-6")
        );
        assert_eq!(tolerance("ping-pong, 1 step/launch"), None);
        assert_eq!(
            without_tolerance("pyamg smoothed aggregation + CG to 1e-08 (solve)"),
            "pyamg smoothed aggregation + CG (solve)"
        );
        assert_eq!(
            without_tolerance("Jacobi rung 4 (temporal, depth 8) to 1e-6, EXTRAPOLATED"),
            "Jacobi rung 4 (temporal, depth 8), EXTRAPOLATED"
        );
        assert_eq!(
            without_tolerance("map to shared memory"),
            "map to shared memory"
        );
        assert_eq!(tolerance("map to shared memory"), None);
    }

    #[test]
    fn a_direct_solve_ends_a_parenthesis_with_direct() {
        for d in [
            "CuPy spectral solve (DST-I via rfft of the odd extension, direct)",
            "spectral (DST-I, direct)",
            "spectral (direct)",
        ] {
            assert!(is_direct(d), "{d}");
            let p = Problem::of(&row("poisson-mg", d, "cupy", "4096x4096", "f64", ""));
            assert!(p.is_direct() && p.tolerance_value().is_none(), "{p:?}");
            assert_eq!(p.key(), "4096x4096 · f64 · direct solve");
        }
        for not in [
            "colsum direct: SGEMM (rung 4g) + column sum",
            "direct sums",
            "spectral (indirect)",
            "multigrid (direct) to 1e-8",
        ] {
            assert!(!is_direct(not), "{not}");
        }
    }
}
