//! Timing samples and their statistics.

use std::time::Instant;

/// Timing samples of a region, in milliseconds.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Timing {
    /// Median.
    pub median_ms: f64,
    /// Fastest.
    pub min_ms: f64,
    /// Slowest.
    pub max_ms: f64,
    /// Number of samples.
    pub reps: usize,
}

impl Timing {
    /// Statistics of a set of samples.
    pub fn from_samples(mut ms: Vec<f64>) -> Self {
        ms.sort_by(|a, b| a.total_cmp(b));
        let n = ms.len();
        let median_ms = if n == 0 {
            f64::NAN
        } else if n % 2 == 1 {
            ms[n / 2]
        } else {
            0.5 * (ms[n / 2 - 1] + ms[n / 2])
        };
        Self {
            median_ms,
            min_ms: ms.first().copied().unwrap_or(f64::NAN),
            max_ms: ms.last().copied().unwrap_or(f64::NAN),
            reps: n,
        }
    }
    /// Times a host closure with a wall clock (CPU baselines and the simulator).
    pub fn host(warmup: usize, reps: usize, mut f: impl FnMut()) -> Self {
        for _ in 0..warmup {
            f();
        }
        let ms = (0..reps.max(1))
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        Self::from_samples(ms)
    }
}
