//! Criterion benchmarks: one module per workload, group names
//! `<workload>/<backend>/<variant>`, GPU work timed with device events through
//! `iter_custom`, throughput set, so `cargo bench --bench bench_main --
//! --save-baseline NAME` and `--baseline NAME` comparisons work.
//!
//! Without a GPU the GPU groups are skipped with one line; the CPU baselines run.
//! Defaults: 1 s warm-up and 3 s measurement per benchmark (the command line's
//! `--warm-up-time` / `--measurement-time` override them); CPU groups take 10
//! samples at sizes that keep each group well under 20 s on two cores.

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};
use ptxlab::Device;
use std::time::Duration;

mod diffusion;
mod fusion;
mod lomb;
mod matmul;
mod poisson;
mod primitives;
mod vector;

fn gpu() -> Option<Device> {
    match Device::gpu(0) {
        Ok(d) => Some(d),
        Err(e) => {
            eprintln!(
                "skipped GPU benchmarks: {}",
                e.to_string().lines().next().unwrap_or("")
            );
            None
        }
    }
}

/// A CPU group `<workload>/cpu`: 10 samples (the baselines take milliseconds each).
pub(crate) fn cpu_group<'a>(c: &'a mut Criterion, workload: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(format!("{workload}/cpu"));
    g.sample_size(10);
    g
}

/// Device time of `iters` calls of `f`: one pair of device events around the
/// whole batch, one synchronisation after it (for `iter_custom`).
pub(crate) fn gpu_time(
    dev: &Device,
    iters: u64,
    mut f: impl FnMut() -> ptxlab::Result<()>,
) -> Duration {
    let t = dev
        .time(0, 1, |_| {
            for _ in 0..iters {
                f()?;
            }
            Ok::<(), ptxlab::Error>(())
        })
        .expect("GPU timing");
    Duration::from_secs_f64(t.median_ms * 1e-3)
}

fn all(c: &mut Criterion) {
    let dev = gpu();
    let dev = dev.as_ref();
    vector::bench(c, dev);
    poisson::bench(c, dev);
    lomb::bench(c, dev);
    primitives::bench(c, dev);
    diffusion::bench(c, dev);
    matmul::bench(c, dev);
    fusion::bench(c, dev);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = all
}
criterion_main!(benches);
