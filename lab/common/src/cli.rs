//! Checks shared by the `ptxlab` subcommands, so every one refuses the same
//! hostile options the same way: a message that names the option, the value,
//! the limit and what to do, before any large allocation or launch.

use crate::Backend;
use crate::error::{Error, Result};
use crate::runtime::{Device, host_mem::check_host_alloc};

/// Most timed repetitions a subcommand accepts.
pub const MAX_REPS: usize = 10_000;
/// Most iterations (sweeps, time steps) a subcommand accepts.
pub const MAX_ITERS: usize = 10_000_000;

/// The default of every `--reps` (timed repetitions).
pub const DEFAULT_REPS: usize = 10;
/// The default of every `--seed` (the seed of a command's random inputs).
pub const DEFAULT_SEED: u64 = 42;

/// A 2-D grid from the command line (`--size`): `N` (N x N) or `NXxNY`
/// (NX columns, the fastest-varying index, by NY rows). Every grid command
/// parses its `--size` with [`GridSize::parse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GridSize {
    /// Columns (x).
    pub nx: usize,
    /// Rows (y).
    pub ny: usize,
}

impl GridSize {
    /// `N` or `NXxNY` (each a whole number: `2000`, `1e3`, `1_000`); an
    /// error that repeats the text and gives examples otherwise.
    pub fn parse(s: &str) -> std::result::Result<GridSize, String> {
        let bad = |why: String| {
            format!("`{s}`: {why}; give N (an N x N grid) or NXxNY, e.g. 2000 or 1999x1237")
        };
        let t = s.trim();
        let (x, y) = match t.split_once(['x', 'X']) {
            Some((a, b)) => (
                parse_whole::<usize>(a).map_err(bad)?,
                parse_whole::<usize>(b).map_err(bad)?,
            ),
            None => {
                let n = parse_whole::<usize>(t).map_err(bad)?;
                (n, n)
            }
        };
        Ok(GridSize { nx: x, ny: y })
    }
    /// `true` for an N x N grid.
    pub fn is_square(&self) -> bool {
        self.nx == self.ny
    }
}

impl std::fmt::Display for GridSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.nx, self.ny)
    }
}

impl std::str::FromStr for GridSize {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        GridSize::parse(s)
    }
}

/// An on/off switch (the global `--race-check`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    /// On.
    On,
    /// Off.
    Off,
}

impl OnOff {
    /// `true` for [`OnOff::On`].
    pub fn is_on(self) -> bool {
        self == OnOff::On
    }
}

/// The backend's name as report rows spell it (`gpu`, `sim`, `cpu`).
pub fn backend_name(backend: crate::Backend) -> &'static str {
    match backend {
        crate::Backend::Gpu => "gpu",
        crate::Backend::Sim => "sim",
        crate::Backend::Cpu => "cpu",
    }
}

/// A measured row of a single command (`--json`): the identifying fields,
/// the timing and, when given, the throughput in `unit`. The same [`Row`]
/// type `ptxlab bench` writes to `results.json`, without the progress line.
///
/// [`Row`]: crate::report::Row
pub fn timed_row(
    workload: &str,
    variant: &str,
    backend: &str,
    size: &str,
    precision: &str,
    timing: &crate::runtime::Timing,
    throughput: Option<(f64, &str)>,
) -> crate::report::Row {
    let mut r = crate::report::Row::plain(workload, variant, backend, size, precision);
    r.timing = Some(timing.clone());
    if let Some((v, unit)) = throughput
        && v.is_finite()
    {
        r.throughput = Some(v);
        r.unit = unit.to_string();
    }
    r
}

/// The rows of a command as `--json` prints them: a JSON array of the row
/// objects of `results.json` (each with its `problem`).
pub fn rows_json(rows: &[crate::report::Row]) -> String {
    let rows = crate::report::problem::with_problems(rows);
    serde_json::to_string_pretty(&rows).unwrap_or_else(|_| "[]".into())
}

/// Parses a whole, non-negative count for clap: `1000`, `1e6` or `1_000_000`.
/// A negative, fractional or non-numeric value is refused with an example.
/// (Use it with `allow_negative_numbers = true`, so `-5` reaches it instead
/// of being taken for a flag.)
pub fn parse_whole<T: TryFrom<u64>>(s: &str) -> std::result::Result<T, String> {
    let t = s.trim().replace('_', "");
    let v: u64 = if let Ok(v) = t.parse::<u64>() {
        v
    } else {
        match t.parse::<f64>() {
            Ok(f) if f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f < 1.8e19 => f as u64,
            Ok(f) if f < 0.0 => {
                return Err(format!(
                    "`{s}` is negative; give a whole number >= 0 (examples: 1000, 1e6)"
                ));
            }
            _ => {
                return Err(format!(
                    "`{s}` is not a whole non-negative number (examples: 1000, 1e6)"
                ));
            }
        }
    };
    T::try_from(v).map_err(|_| {
        format!(
            "`{s}` is larger than the largest value this option takes ({})",
            max_of::<T>()
        )
    })
}

fn max_of<T: TryFrom<u64>>() -> u64 {
    // The largest u64 that converts: binary search over the bit width.
    let mut lo = 0u64;
    let mut hi = u64::MAX;
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if T::try_from(mid).is_ok() {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// The item of `all` whose `name` is `s` (a `--variant` and the like);
/// otherwise an error for `flag` that repeats `s` (with `context`, e.g.
/// " for --precision tf32x3") and lists every name, then `also` (e.g.
/// `all`) when it is not empty.
pub fn choose<T: Copy>(
    flag: &str,
    s: &str,
    all: &[T],
    name: impl Fn(&T) -> &'static str,
    context: &str,
    also: &str,
) -> Result<T> {
    all.iter().copied().find(|v| name(v) == s).ok_or_else(|| {
        let mut allowed: Vec<&str> = all.iter().map(&name).collect();
        if !also.is_empty() {
            allowed.push(also);
        }
        Error::input(
            flag,
            format!("`{s}`{context}; allowed: {}", allowed.join(", ")),
        )
    })
}

/// `--reps`: 1 to [`MAX_REPS`].
pub fn check_reps(reps: usize) -> Result<()> {
    if reps == 0 || reps > MAX_REPS {
        return Err(Error::input(
            "--reps",
            format!("{reps} timed repetitions; allowed 1..={MAX_REPS}"),
        ));
    }
    Ok(())
}

/// An iteration count (`--iters`): `min` to [`MAX_ITERS`].
pub fn check_iters(flag: &str, iters: usize, min: usize) -> Result<()> {
    if iters < min || iters > MAX_ITERS {
        return Err(Error::input(
            flag,
            format!("{iters}; allowed {min}..={MAX_ITERS}"),
        ));
    }
    Ok(())
}

/// Checks that `arrays` arrays of `elements` values of `elem_bytes` bytes
/// each fit in host memory at once; `flag` names the option that set the
/// size. Refuses, for example, `--n 1e12` before anything is allocated.
pub fn check_host_arrays(
    flag: &str,
    elements: usize,
    elem_bytes: usize,
    arrays: usize,
) -> Result<()> {
    let bytes = elements as u128 * elem_bytes as u128 * arrays as u128;
    Ok(check_host_alloc(
        flag,
        bytes,
        &format!(
            "{elements} elements x {elem_bytes} bytes x {arrays} arrays held at once; use a smaller {flag}"
        ),
    )?)
}

/// A simulator limit: `value` of `flag` above `max` is refused. The
/// simulator runs a few million GPU threads per second on two cores, and its
/// race detector keeps 32 bytes of shadow per 4-byte word a launch touches,
/// so its limits keep a run to about a minute and its memory reasonable.
pub fn check_sim_limit(flag: &str, value: usize, max: usize, unit: &str) -> Result<()> {
    if value > max {
        return Err(Error::input(
            flag,
            format!(
                "{value} {unit} on the simulator; at most {max} (it runs on the CPU, with a \
                 race detector): use a smaller {flag}, or --backend cpu"
            ),
        ));
    }
    Ok(())
}

/// A floating-point element type for the f32/f64 workloads (`--precision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Precision {
    /// 32-bit.
    F32,
    /// 64-bit.
    F64,
}

impl Precision {
    /// `f32` / `f64`.
    pub fn name(&self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::F64 => "f64",
        }
    }
}

/// `--variant`: one rung of a ladder, or `all` of them (in ladder order).
///
/// `R` is the ladder's rung enum (a clap `ValueEnum`); [`OneOrAll::parser`]
/// lists `all` and every rung in `--help`, and a typo gets clap's
/// suggestion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OneOrAll<R> {
    /// Every rung that applies.
    All,
    /// This rung.
    One(R),
}

impl<R: clap::ValueEnum + Clone + Send + Sync + 'static> OneOrAll<R> {
    /// The clap value parser: `all` or a rung name.
    pub fn parser() -> impl clap::builder::TypedValueParser<Value = Self> {
        use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
        let mut values =
            vec![PossibleValue::new("all").help("every rung that applies, in ladder order")];
        values.extend(
            R::value_variants()
                .iter()
                .filter_map(clap::ValueEnum::to_possible_value),
        );
        PossibleValuesParser::new(values).try_map(|s: String| {
            if s == "all" {
                return Ok(OneOrAll::All);
            }
            R::from_str(&s, false).map(OneOrAll::One)
        })
    }
    /// The rungs chosen: all of them (`R`'s order), or the one.
    pub fn rungs(&self) -> Vec<R> {
        match self {
            OneOrAll::All => R::value_variants().to_vec(),
            OneOrAll::One(r) => vec![r.clone()],
        }
    }
    /// The rung's name (or `all`), as the command line spells it.
    pub fn name(&self) -> String {
        match self {
            OneOrAll::All => "all".into(),
            OneOrAll::One(r) => r
                .to_possible_value()
                .map(|v| v.get_name().to_string())
                .unwrap_or_default(),
        }
    }
}

/// The command-line name of a `ValueEnum` value (`Rung::Naive` -> `naive`).
pub fn value_name<V: clap::ValueEnum>(v: &V) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}

/// Opens the device of `backend` (none for `cpu`). Subcommands call it
/// before generating inputs, so a missing driver is reported at once.
pub fn open_device(backend: Backend) -> Result<Option<Device>> {
    Ok(match backend {
        Backend::Gpu => Some(crate::Error::open_gpu(0)?),
        Backend::Sim => Some(Device::sim()),
        Backend::Cpu => None,
    })
}

/// A subcommand's arguments parsed from one line of whitespace-separated
/// words, as the command `name` would parse them (for the workloads' unit
/// tests of their options).
pub fn parse_line<A: clap::Args + clap::FromArgMatches>(
    name: &'static str,
    line: &str,
) -> std::result::Result<A, clap::Error> {
    let cmd = A::augment_args(clap::Command::new(name));
    let m = cmd.try_get_matches_from(std::iter::once(name).chain(line.split_whitespace()))?;
    A::from_arg_matches(&m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_parse_and_the_rest_is_refused_clearly() {
        assert_eq!(parse_whole::<usize>("1000"), Ok(1000));
        assert_eq!(parse_whole::<usize>("1e6"), Ok(1_000_000));
        assert_eq!(parse_whole::<usize>("1_000"), Ok(1000));
        assert_eq!(parse_whole::<u32>("4294967295"), Ok(u32::MAX));
        let e = parse_whole::<u32>("4294967296").unwrap_err();
        assert!(e.contains("largest") && e.contains("4294967295"), "{e}");
        let e = parse_whole::<usize>("-5").unwrap_err();
        assert!(e.contains("`-5` is negative"), "{e}");
        for bad in ["abc", "1.5", "nan", "inf", "1e30", ""] {
            let e = parse_whole::<usize>(bad).unwrap_err();
            assert!(e.contains("not a whole non-negative number"), "{bad}: {e}");
        }
    }

    #[test]
    fn reps_and_iters_have_limits() {
        assert!(check_reps(1).is_ok() && check_reps(MAX_REPS).is_ok());
        let e = check_reps(0).unwrap_err().to_string();
        assert!(e.contains("--reps") && e.contains("1..=10000"), "{e}");
        let e = check_iters("--iters", MAX_ITERS + 1, 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--iters") && e.contains("1..=10000000"), "{e}");
    }

    #[test]
    fn absurd_host_arrays_are_refused_before_allocation() {
        let e = check_host_arrays("--n", 1_000_000_000_000, 4, 3)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--n") && e.contains("of host memory") && e.contains("use a smaller --n"),
            "{e}"
        );
        assert!(check_host_arrays("--n", 1000, 4, 3).is_ok());
        let e = check_host_arrays("--n", usize::MAX, 8, 3)
            .unwrap_err()
            .to_string();
        assert!(e.contains("host memory"), "{e}");
    }
}
