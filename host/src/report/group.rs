//! Which rows a chart may put side by side. Rows carry no chart keys (the
//! recorded runs under `docs/results/` must re-render too), so this reads
//! them from the fields every row has:
//!
//! * the **kind** of a row from its backend: `gpu` (the Rust kernels), `sim`,
//!   `cpu` (baselines), anything else a peer (`torch`, `cupy`, `pyamg`, ...);
//! * the **size** through [`size_key`], which makes `2^20 (1048576)` and
//!   `1048576`, `2000^2` and `2000x2000`, `1e8 samples` and `1e+08 samples`
//!   the same key;
//! * what is **measured**: a time to a tolerance (`... to 1e-8`) for solves,
//!   else the precision and the throughput unit (`GFLOP/s` and `GB/s` rows of
//!   one size are different computations, the SGEMM and the column sum).
//!
//! A [`Group`] is the rows of one workload at one size that measure the same
//! thing: the unit of a ladder chart.

use super::row::{Row, Status};

/// What produced a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A CPU baseline.
    Cpu,
    /// A kernel on the CPU simulator.
    Sim,
    /// A Rust kernel on the GPU.
    Gpu,
    /// A peer from the Python side (CuPy, PyTorch, Numba, pyamg, ...).
    Peer,
}

/// The kind of a row, from its backend.
pub fn kind(r: &Row) -> Kind {
    match r.backend.as_str() {
        "gpu" => Kind::Gpu,
        "sim" => Kind::Sim,
        "cpu" => Kind::Cpu,
        _ => Kind::Peer,
    }
}

/// A row that measures a ceiling (the device copy), not a rung.
pub(crate) fn is_ceiling(r: &Row) -> bool {
    r.variant.contains("(ceiling)")
}

/// The median time of a row that may be charted: checked (`ok`) or shown
/// as inaccurate, with a finite positive time.
pub(crate) fn time_ms(r: &Row) -> Option<f64> {
    if !matches!(r.status, Status::Ok | Status::Inaccurate(_)) {
        return None;
    }
    r.timing
        .as_ref()
        .map(|t| t.median_ms)
        .filter(|t| t.is_finite() && *t > 0.0)
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
fn unit_family(unit: &str) -> &str {
    unit.split_whitespace().next().unwrap_or("")
}

/// First word of a precision (`f32 cycles, f64 field`: `f32`).
pub(crate) fn precision_family(p: &str) -> &str {
    p.split([' ', ',']).next().unwrap_or("")
}

/// What the rows of a group measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class {
    /// Time to a relative tolerance (precision varies inside the group).
    Tolerance(String),
    /// One precision and one throughput unit (empty: no throughput).
    Measure {
        /// Precision family (`f32`, `bf16`, `u8`).
        prec: String,
        /// Unit family (`GFLOP/s`).
        unit: String,
    },
}

/// The rows of one workload at one size that measure the same thing.
#[derive(Debug, Clone)]
pub struct Group {
    /// Workload of every row.
    pub workload: String,
    /// The size as the Rust rows print it.
    pub size: String,
    /// [`size_key`] of the size.
    pub key: String,
    /// What is measured.
    pub class: Class,
    /// Indices of the rows (into the slice grouped), in run order.
    pub rows: Vec<usize>,
    /// CPU baselines of another precision at the same size, shown with
    /// this group when it has none of its own (the f64 CPU reference of
    /// an f32 ladder).
    pub borrowed: Vec<usize>,
    /// More than one unit at this workload, size and precision: name it.
    pub name_unit: bool,
}

impl Group {
    /// `8192^3 · bf16`, `4096x4096 · to 1e-8`, `(10000x5000)(5000x7000) ·
    /// f32 · GB/s`.
    pub fn label(&self) -> String {
        match &self.class {
            Class::Tolerance(t) => format!("{} · to {t}", self.size),
            Class::Measure { prec, unit } => {
                let mut s = format!("{} · {prec}", self.size);
                if self.name_unit && !unit.is_empty() {
                    s.push_str(&format!(" · {unit}"));
                }
                s
            }
        }
    }

    /// The rows and the borrowed baselines, baselines first, then the
    /// simulator, the Rust GPU rows and the peers, each in run order.
    pub fn members(&self, rows: &[Row]) -> Vec<usize> {
        let mut m: Vec<usize> = self.borrowed.iter().chain(&self.rows).copied().collect();
        m.sort_by_key(|&i| (kind(&rows[i]), i));
        m
    }
}

/// Groups the charted rows of `rows` (checked or inaccurate, with a time):
/// one group per workload, size key and [`Class`], in order of first
/// appearance. A row without a unit joins the group of its workload, size
/// and precision when there is exactly one.
pub fn groups(rows: &[Row]) -> Vec<Group> {
    let mut gs: Vec<Group> = Vec::new();
    let mut pending = Vec::new();
    let find = |gs: &[Group], w: &str, key: &str, class: &Class| {
        gs.iter()
            .position(|g| g.workload == w && g.key == key && g.class == *class)
    };
    for (i, r) in rows.iter().enumerate() {
        if time_ms(r).is_none() {
            continue;
        }
        let class = match tolerance(&r.variant) {
            Some(t) => Class::Tolerance(t),
            None if r.unit.trim().is_empty() => {
                pending.push(i);
                continue;
            }
            None => Class::Measure {
                prec: precision_family(&r.precision).to_string(),
                unit: unit_family(&r.unit).to_string(),
            },
        };
        let key = size_key(&r.size);
        match find(&gs, &r.workload, &key, &class) {
            Some(g) => gs[g].rows.push(i),
            None => gs.push(Group {
                workload: r.workload.clone(),
                size: r.size.clone(),
                key,
                class,
                rows: vec![i],
                borrowed: Vec::new(),
                name_unit: false,
            }),
        }
    }
    for i in pending {
        let r = &rows[i];
        let key = size_key(&r.size);
        let prec = precision_family(&r.precision);
        let same: Vec<usize> = gs
            .iter()
            .enumerate()
            .filter(|(_, g)| {
                g.workload == r.workload
                    && g.key == key
                    && matches!(&g.class, Class::Measure { prec: p, .. } if p == prec)
            })
            .map(|(k, _)| k)
            .collect();
        if let [only] = same[..] {
            gs[only].rows.push(i);
            gs[only].rows.sort_unstable();
        } else {
            let class = Class::Measure {
                prec: prec.to_string(),
                unit: String::new(),
            };
            match find(&gs, &r.workload, &key, &class) {
                Some(g) => gs[g].rows.push(i),
                None => gs.push(Group {
                    workload: r.workload.clone(),
                    size: r.size.clone(),
                    key,
                    class,
                    rows: vec![i],
                    borrowed: Vec::new(),
                    name_unit: false,
                }),
            }
        }
    }
    // Display size: the Rust rows' spelling.
    for g in &mut gs {
        if let Some(&i) = g.rows.iter().find(|&&i| kind(&rows[i]) != Kind::Peer) {
            g.size = rows[i].size.clone();
        }
    }
    // Baselines of another precision for groups without their own.
    let snapshot = gs.clone();
    for g in &mut gs {
        let has = |k: Kind| g.rows.iter().any(|&i| kind(&rows[i]) == k);
        if has(Kind::Cpu) || !(has(Kind::Gpu) || has(Kind::Sim)) {
            continue;
        }
        let Class::Measure { unit, .. } = &g.class else {
            continue;
        };
        for o in &snapshot {
            if o.workload == g.workload
                && o.key == g.key
                && matches!(&o.class, Class::Measure { unit: u, .. } if u == unit)
            {
                g.borrowed
                    .extend(o.rows.iter().filter(|&&i| kind(&rows[i]) == Kind::Cpu));
            }
        }
    }
    for g in &mut gs {
        let Class::Measure { prec, unit } = &g.class else {
            continue;
        };
        g.name_unit = snapshot.iter().any(|o| {
            o.workload == g.workload
                && o.key == g.key
                && matches!(&o.class, Class::Measure { prec: p, unit: u } if p == prec && u != unit)
        });
    }
    gs
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
