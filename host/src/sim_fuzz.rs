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
//! hid.

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
    /// The in-order run itself failed (nothing to compare with).
    Baseline {
        /// Its error.
        error: String,
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
            Finding::Baseline { error } => write!(f, "the in-order run fails: {error}"),
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
            Finding::Baseline { .. } => None,
            Finding::Error { seed, .. } | Finding::Divergence { seed, .. } => Some(*seed),
        }
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
/// random schedules tried and the finding.
pub fn fuzz(
    seeds: impl IntoIterator<Item = u64>,
    mut run: impl FnMut(Schedule) -> Run,
    mut progress: impl FnMut(Option<u64>, &Run),
) -> (usize, Option<Finding>) {
    let base = run(Schedule::InOrder);
    progress(None, &base);
    if let Some(error) = base.error {
        return (0, Some(Finding::Baseline { error }));
    }
    let mut tried = 0;
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
