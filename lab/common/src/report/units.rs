//! Numbers for people: times in s, ms, µs or ns and throughputs with a
//! decimal prefix (TFLOP/s, GB/s, Mpairs/s), each chosen by magnitude and
//! printed with three or four significant digits. `results.json` and
//! `results.csv` keep the raw numbers and units; only what people read goes
//! through here.

/// `v` (at least 1, below 1000 after scaling; any finite value works) with
/// `sig` significant digits, 3 or 4.
fn sig(v: f64, sig: usize) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let a = v.abs();
    if a == 0.0 {
        return "0".into();
    }
    let int_digits = (a.log10().floor() as i64 + 1).max(1) as usize;
    let d = sig.saturating_sub(int_digits);
    if a < 1.0 {
        // Leading zeros do not count: 0.0123 with 3 digits.
        let lead = (-a.log10().floor()) as usize;
        return format!("{v:.*}", sig + lead - 1);
    }
    format!("{v:.d$}")
}

/// A time given in ms, with four significant digits in its natural unit
/// (`3.495 ms`, `88.13 µs`, `1.726 s`, `950.0 ns`).
pub fn fmt_time(ms: f64) -> String {
    fmt_time_sig(ms, 4)
}

/// [`fmt_time`] with three significant digits (chart notes: `3.50 ms`).
pub fn fmt_time3(ms: f64) -> String {
    fmt_time_sig(ms, 3)
}

fn fmt_time_sig(ms: f64, digits: usize) -> String {
    let (v, unit) = time_unit(ms);
    format!("{} {unit}", sig(ms / v, digits))
}

/// The unit a time in ms reads best in: (ms per unit, unit).
fn time_unit(ms: f64) -> (f64, &'static str) {
    let a = ms.abs();
    if a >= 1000.0 {
        (1e3, "s")
    } else if a >= 1.0 || a == 0.0 || !a.is_finite() {
        (1.0, "ms")
    } else if a >= 1e-3 {
        (1e-3, "µs")
    } else {
        (1e-6, "ns")
    }
}

/// A median with its spread, all in the median's unit:
/// `3.495 ms (3.412–3.601)`.
pub fn fmt_time_range(median: f64, min: f64, max: f64) -> String {
    let (v, unit) = time_unit(median);
    let m = sig(median / v, 4);
    let decimals = m.split('.').nth(1).map_or(0, str::len);
    format!("{m} {unit} ({:.decimals$}–{:.decimals$})", min / v, max / v)
}

/// A factor with three significant digits (`33.9×`, `1.04×`, `0.946×`).
pub fn fmt_factor(v: f64) -> String {
    format!("{}×", sig(v, 3))
}

const PREFIXES: [(char, f64); 6] = [
    ('k', 1e3),
    ('M', 1e6),
    ('G', 1e9),
    ('T', 1e12),
    ('P', 1e15),
    ('E', 1e18),
];

/// A throughput unit split into its decimal prefix's factor and the rest:
/// `GFLOP/s` is `(1e9, "FLOP/s", "")`, `GB/s (incl. zero + read-back)` is
/// `(1e9, "B/s", " (incl. zero + read-back)")`. `None` for a unit without
/// a decimal prefix before a rate (`us/kernel`, `op/s`).
fn split_unit(unit: &str) -> Option<(f64, &str, &str)> {
    let first_len = unit.find(char::is_whitespace).unwrap_or(unit.len());
    let (first, rest) = unit.split_at(first_len);
    let mut chars = first.chars();
    let p = chars.next()?;
    let base = chars.as_str();
    let factor = PREFIXES.iter().find(|(c, _)| *c == p)?.1;
    // A prefix stands before a word of the base unit (`B/s`, `FLOP/s`,
    // `pairs/s`), never before a slash or a digit.
    let next = base.chars().next()?;
    (next.is_ascii_alphabetic() && base.contains('/')).then_some((factor, base, rest))
}

/// The prefix that puts `base_value` (in base units) between 1 and 1000.
fn prefix_for(base_value: f64) -> (char, f64) {
    let a = base_value.abs();
    let mut best = ('\0', 1.0);
    for &(c, f) in &PREFIXES {
        if a >= f {
            best = (c, f);
        }
    }
    best
}

/// A throughput in its unit, rescaled to the prefix that reads best and
/// printed with four significant digits: `684637.6 GFLOP/s` is
/// `684.6 TFLOP/s`, `0.25 GB/s` is `250.0 MB/s`. A time per item (`us/kernel`)
/// prints as a time (`6.798 µs/kernel`); a unit without a decimal prefix
/// keeps its value and unit.
pub fn fmt_throughput(v: f64, unit: &str) -> String {
    if !v.is_finite() {
        return format!("{v} {unit}");
    }
    if let Some((per_ms, rest)) = time_per_item(unit) {
        return format!("{}{rest}", fmt_time(v * per_ms));
    }
    let Some((factor, base, rest)) = split_unit(unit) else {
        return format!("{} {unit}", sig(v, 4)).trim_end().to_string();
    };
    let (p, f) = prefix_for(v * factor);
    let prefix = if p == '\0' {
        String::new()
    } else {
        p.to_string()
    };
    format!("{} {prefix}{base}{rest}", sig(v * factor / f, 4))
}

/// A unit that is a time per item (`us/kernel`): ms per unit and the rest
/// (`/kernel`).
fn time_per_item(unit: &str) -> Option<(f64, &str)> {
    let slash = unit.find('/')?;
    let per_ms = match &unit[..slash] {
        "ns" => 1e-6,
        "us" | "µs" => 1e-3,
        "ms" => 1.0,
        "s" => 1e3,
        _ => return None,
    };
    Some((per_ms, &unit[slash..]))
}

/// For an axis of values up to `max` in `unit`: the divisor that rescales
/// them and the unit they are then in (`(1e3, "TFLOP/s")` for GFLOP/s up to
/// 684637). A unit without a decimal prefix keeps its values.
pub fn axis_unit(max: f64, unit: &str) -> (f64, String) {
    let Some((factor, base, rest)) = split_unit(unit) else {
        return (1.0, unit.to_string());
    };
    if !max.is_finite() || max <= 0.0 {
        return (1.0, unit.to_string());
    }
    let (p, f) = prefix_for(max * factor);
    let prefix = if p == '\0' {
        String::new()
    } else {
        p.to_string()
    };
    (f / factor, format!("{prefix}{base}{rest}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throughputs_take_the_prefix_of_their_magnitude() {
        assert_eq!(fmt_throughput(684637.6, "GFLOP/s"), "684.6 TFLOP/s");
        assert_eq!(fmt_throughput(45.234, "GFLOP/s"), "45.23 GFLOP/s");
        assert_eq!(fmt_throughput(3010.0, "GB/s"), "3.010 TB/s");
        assert_eq!(fmt_throughput(0.25, "GB/s"), "250.0 MB/s");
        assert_eq!(
            fmt_throughput(2412.0, "GB/s (incl. zero + read-back)"),
            "2.412 TB/s (incl. zero + read-back)"
        );
        assert_eq!(fmt_throughput(0.4, "GCells/s"), "400.0 MCells/s");
        assert_eq!(fmt_throughput(1234.5, "Gpairs/s"), "1.234 Tpairs/s");
        assert_eq!(fmt_throughput(6.798, "us/kernel"), "6.798 µs/kernel");
        assert_eq!(fmt_throughput(0.118, "us/kernel"), "118.0 ns/kernel");
        assert_eq!(fmt_throughput(12.0, "op/s"), "12.00 op/s");
        assert_eq!(axis_unit(684637.0, "GFLOP/s"), (1e3, "TFLOP/s".into()));
        assert_eq!(axis_unit(0.3, "GB/s"), (1e-3, "MB/s".into()));
        assert_eq!(axis_unit(5.0, "us/kernel"), (1.0, "us/kernel".into()));
    }

    #[test]
    fn times_take_the_unit_of_their_magnitude() {
        assert_eq!(fmt_time(3.4952), "3.495 ms");
        assert_eq!(fmt_time(0.08813), "88.13 µs");
        assert_eq!(fmt_time(1726.1), "1.726 s");
        assert_eq!(fmt_time(846.6), "846.6 ms");
        assert_eq!(fmt_time(0.00095), "950.0 ns");
        assert_eq!(fmt_time3(3.4952), "3.50 ms");
        assert_eq!(fmt_time3(0.0881), "88.1 µs");
        assert_eq!(fmt_time_range(3.4952, 3.41, 3.6), "3.495 ms (3.410–3.600)");
        assert_eq!(fmt_factor(1.0398), "1.04×");
        assert_eq!(fmt_factor(0.9461), "0.946×");
        assert_eq!(fmt_factor(33.91), "33.9×");
        assert_eq!(fmt_factor(133.9), "134×");
    }
}
