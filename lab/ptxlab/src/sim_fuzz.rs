//! Runs a program on the simulator under many schedules and reports the
//! first error or divergence, with the seed that reproduces it (`ptxlab
//! sim-fuzz`).
//!
//! The first run is in order ([`Schedule::InOrder`]); each later one uses
//! a random schedule from one seed ([`Schedule::Random`]: another warp
//! order, other interruption points, other landing times of the
//! asynchronous copies). A run is its outcome (an error, or none) and what
//! it read back from the device ([`Download`]s, in order). A later run
//! that fails, or whose downloads differ from the in-order run's, is a
//! finding: the program's result depends on an order the hardware does
//! not guarantee, or a check caught a hazard that the in-order schedule
//! hid. A program that fails in order and under every random schedule
//! tried is no such finding: it is a failing program ([`Finding::Fails`]).

use ptxlab_device::sim::{Download, Schedule};
use std::fmt;

/// One run of the program.
#[derive(Debug, Clone, Default)]
pub struct Run {
    /// The error it ended with, if any.
    pub error: Option<String>,
    /// What it downloaded, in order.
    pub downloads: Vec<Download>,
}

/// What the fuzzing found.
#[derive(Debug, Clone, PartialEq)]
pub enum Finding {
    /// The program fails in order and under every random schedule tried
    /// (`random` of them, 0 with `--seeds 0`): a failing program, not a
    /// schedule-dependent one.
    Fails {
        /// The in-order run's error.
        error: String,
        /// Random schedules tried (each failed too).
        random: usize,
    },
    /// The in-order run failed, and the run with this seed passed.
    Baseline {
        /// The in-order run's error.
        error: String,
        /// The seed whose run passed.
        seed: u64,
    },
    /// The run with this seed failed.
    Error {
        /// The seed.
        seed: u64,
        /// Its error.
        error: String,
    },
    /// The run with this seed read back other data than the in-order run.
    Divergence {
        /// The seed.
        seed: u64,
        /// Which download, which element, both values.
        detail: String,
    },
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::Fails { error, random: 0 } => write!(
                f,
                "the command fails in order (no random schedules tried): {error}"
            ),
            Finding::Fails { error, random } => write!(
                f,
                "the command fails in order and under all {random} random schedules, so its \
                 failure does not depend on the schedule: {error}"
            ),
            Finding::Baseline { error, seed } => write!(
                f,
                "the in-order run fails where seed {seed} (random schedule) passes: {error}"
            ),
            Finding::Error { seed, error } => write!(
                f,
                "seed {seed} (random schedule) fails where the in-order run passes: {error}"
            ),
            Finding::Divergence { seed, detail } => write!(
                f,
                "seed {seed} (random schedule) diverges from the in-order run: {detail}"
            ),
        }
    }
}

impl Finding {
    /// The seed that reproduces it (`None`: the in-order run).
    pub fn seed(&self) -> Option<u64> {
        match self {
            Finding::Fails { .. } | Finding::Baseline { .. } => None,
            Finding::Error { seed, .. } | Finding::Divergence { seed, .. } => Some(*seed),
        }
    }
    /// `true` when the result depends on the schedule (every finding but
    /// [`Finding::Fails`], a program that fails whatever the schedule).
    pub fn schedule_dependent(&self) -> bool {
        !matches!(self, Finding::Fails { .. })
    }
}

/// Element `i` of a download, as a number for a report.
fn element(d: &Download, i: usize) -> String {
    let e = d.elem_bytes.max(1);
    let b = &d.bytes[i * e..(i + 1) * e];
    match e {
        4 => {
            let v = f32::from_le_bytes(b.try_into().unwrap_or([0; 4]));
            let u = u32::from_le_bytes(b.try_into().unwrap_or([0; 4]));
            format!("{v:e} (bits {u:#010x})")
        }
        8 => {
            let v = f64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
            format!("{v:e}")
        }
        _ => format!("{b:02x?}"),
    }
}

/// The first difference between the downloads of two runs, described.
pub fn first_difference(base: &[Download], other: &[Download]) -> Option<String> {
    for (n, (a, b)) in base.iter().zip(other).enumerate() {
        if a == b {
            continue;
        }
        if a.bytes.len() != b.bytes.len() || a.elem_bytes != b.elem_bytes || a.after != b.after {
            return Some(format!(
                "download {n} differs in shape: {} bytes after `{}` in order, {} bytes after `{}`",
                a.bytes.len(),
                a.after,
                b.bytes.len(),
                b.after
            ));
        }
        let e = a.elem_bytes.max(1);
        let i = (0..a.bytes.len() / e)
            .find(|&i| a.bytes[i * e..(i + 1) * e] != b.bytes[i * e..(i + 1) * e])
            .unwrap_or(0);
        let count = (0..a.bytes.len() / e)
            .filter(|&i| a.bytes[i * e..(i + 1) * e] != b.bytes[i * e..(i + 1) * e])
            .count();
        return Some(format!(
            "download {n} (after kernel `{}`): {count} of {} elements differ, the first at index \
             {i}: {} in order, {} under this schedule",
            a.after,
            a.bytes.len() / e,
            element(a, i),
            element(b, i)
        ));
    }
    (base.len() != other.len()).then(|| {
        format!(
            "{} downloads in order, {} under this schedule",
            base.len(),
            other.len()
        )
    })
}

/// Runs the program in order, then with each seed, until the first
/// finding; `run` runs it once under a schedule. Returns the number of
/// random schedules tried and the finding. When the in-order run fails,
/// the seeds run until one passes ([`Finding::Baseline`]); when none does,
/// the program fails whatever the schedule ([`Finding::Fails`]).
pub fn fuzz(
    seeds: impl IntoIterator<Item = u64>,
    mut run: impl FnMut(Schedule) -> Run,
    mut progress: impl FnMut(Option<u64>, &Run),
) -> (usize, Option<Finding>) {
    let base = run(Schedule::InOrder);
    progress(None, &base);
    let mut tried = 0;
    if let Some(error) = base.error {
        for seed in seeds {
            let r = run(Schedule::Random { seed });
            tried += 1;
            progress(Some(seed), &r);
            if r.error.is_none() {
                return (tried, Some(Finding::Baseline { error, seed }));
            }
        }
        return (
            tried,
            Some(Finding::Fails {
                error,
                random: tried,
            }),
        );
    }
    for seed in seeds {
        let r = run(Schedule::Random { seed });
        tried += 1;
        progress(Some(seed), &r);
        if let Some(error) = r.error {
            return (tried, Some(Finding::Error { seed, error }));
        }
        if let Some(detail) = first_difference(&base.downloads, &r.downloads) {
            return (tried, Some(Finding::Divergence { seed, detail }));
        }
    }
    (tried, None)
}

/// The command line to fuzz, made to run on the simulator: when the
/// `ptxlab` subcommand `command[0]` has a `--backend` option and none is
/// given, `--backend sim` is added; a command whose `--backend` is another
/// backend is refused, as is an unknown subcommand or `sim-fuzz` itself.
pub fn on_simulator(command: &[String]) -> std::result::Result<Vec<String>, String> {
    use clap::CommandFactory;
    // Global options (`--race-check off`, `--race-check=off`) may come
    // first; the schedule is sim-fuzz's to choose.
    let mut at = 0;
    while let Some(w) = command.get(at).filter(|w| w.starts_with("--")) {
        if w.starts_with("--sim-schedule") || w.starts_with("--sim-seed") {
            return Err(format!(
                "{w}: sim-fuzz chooses the schedule of each run (in order, then --seeds random \
                 ones); leave it out"
            ));
        }
        at += if w.contains('=') { 1 } else { 2 };
    }
    let Some(name) = command.get(at) else {
        return Err("give the ptxlab command to fuzz after `--`".into());
    };
    if name == "sim-fuzz" {
        return Err("the command to fuzz cannot be sim-fuzz itself".into());
    }
    let cli = crate::command_line::Cli::command();
    let Some(sub) = cli.find_subcommand(name) else {
        return Err(format!(
            "`{name}` is not a ptxlab command; valid commands: {}",
            crate::command_line::subcommand_names().join(", ")
        ));
    };
    if !sub.get_arguments().any(|a| a.get_long() == Some("backend")) {
        return Ok(command.to_vec());
    }
    // The backend given: `--backend X` or `--backend=X`, before a bare `--`.
    let mut given = None;
    let mut words = command[at + 1..].iter();
    while let Some(w) = words.next() {
        if w == "--" {
            break;
        }
        if w == "--backend" {
            given = Some(words.next().cloned().unwrap_or_default());
        } else if let Some(v) = w.strip_prefix("--backend=") {
            given = Some(v.to_string());
        }
    }
    match given {
        None => {
            let mut c = command.to_vec();
            c.splice(at + 1..at + 1, ["--backend".to_string(), "sim".to_string()]);
            Ok(c)
        }
        Some(b) if b == "sim" => Ok(command.to_vec()),
        Some(b) => Err(format!(
            "`ptxlab {name} --backend {b}` does not run on the simulator, and sim-fuzz varies the \
             simulator's schedule: give --backend sim, or leave --backend out (sim-fuzz adds it)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn the_command_is_put_on_the_simulator_or_refused() {
        assert_eq!(
            on_simulator(&words("vector-add --n 100")).unwrap(),
            words("vector-add --backend sim --n 100")
        );
        assert_eq!(
            on_simulator(&words("vector-add --backend sim")).unwrap(),
            words("vector-add --backend sim")
        );
        assert_eq!(
            on_simulator(&words("pipeline-bugs --backend=sim")).unwrap(),
            words("pipeline-bugs --backend=sim")
        );
        // No --backend option: as given.
        assert_eq!(
            on_simulator(&words("sim-bench --race off")).unwrap(),
            words("sim-bench --race off")
        );
        let e = on_simulator(&words("reduce --backend gpu")).unwrap_err();
        assert!(
            e.contains("--backend gpu") && e.contains("does not run on the simulator"),
            "{e}"
        );
        let e = on_simulator(&words("reduce --backend=cpu")).unwrap_err();
        assert!(e.contains("--backend cpu"), "{e}");
        let e = on_simulator(&words("vector-sub")).unwrap_err();
        assert!(
            e.contains("not a ptxlab command") && e.contains("vector-add"),
            "{e}"
        );
        let e = on_simulator(&words("sim-fuzz -- info")).unwrap_err();
        assert!(e.contains("sim-fuzz itself"), "{e}");
        // Global options first; the schedule is sim-fuzz's.
        assert_eq!(
            on_simulator(&words("--race-check off reduce --n 9")).unwrap(),
            words("--race-check off reduce --backend sim --n 9")
        );
        let e = on_simulator(&words("--sim-seed 3 reduce")).unwrap_err();
        assert!(
            e.contains("--sim-seed") && e.contains("leave it out"),
            "{e}"
        );
    }

    fn outcome(error: Option<&str>) -> Run {
        Run {
            error: error.map(str::to_string),
            downloads: Vec::new(),
        }
    }

    #[test]
    fn a_failing_command_is_told_from_a_schedule_dependent_one() {
        // Fails in order and everywhere: a failing command.
        let (tried, f) = fuzz(1..=3, |_| outcome(Some("boom")), |_, _| {});
        let f = f.unwrap();
        assert_eq!(
            (tried, &f),
            (
                3,
                &Finding::Fails {
                    error: "boom".into(),
                    random: 3
                }
            )
        );
        assert!(!f.schedule_dependent());
        assert!(
            f.to_string().contains("does not depend on the schedule"),
            "{f}"
        );
        // --seeds 0: the in-order run only, and the message says so.
        let (tried, f) = fuzz(1..1, |_| outcome(Some("boom")), |_, _| {});
        let f = f.unwrap();
        assert_eq!(tried, 0);
        assert!(f.to_string().contains("no random schedules tried"), "{f}");
        // Fails in order, passes with seed 2: schedule-dependent.
        let (tried, f) = fuzz(
            1..=5,
            |s| match s {
                Schedule::Random { seed: 2 } => outcome(None),
                _ => outcome(Some("boom")),
            },
            |_, _| {},
        );
        let f = f.unwrap();
        assert_eq!(tried, 2);
        assert_eq!(
            f,
            Finding::Baseline {
                error: "boom".into(),
                seed: 2
            }
        );
        assert!(f.schedule_dependent());
        // Passes in order, fails with seed 4: schedule-dependent.
        let (_, f) = fuzz(
            1..=5,
            |s| match s {
                Schedule::Random { seed: 4 } => outcome(Some("late")),
                _ => outcome(None),
            },
            |_, _| {},
        );
        assert_eq!(
            f,
            Some(Finding::Error {
                seed: 4,
                error: "late".into()
            })
        );
    }
}
