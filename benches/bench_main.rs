//! Criterion benchmarks: one module per workload, group names
//! `<workload>/<backend>/<variant>`, GPU work timed with device events through
//! `iter_custom`, throughput set, so `cargo bench -- --save-baseline NAME` and
//! `--baseline NAME` comparisons work.
//!
//! Without a GPU the GPU groups are skipped with one line; the CPU baselines run.

use criterion::{Criterion, criterion_group, criterion_main};

mod vector;

fn gpu() -> Option<ptxlab::Device> {
    match ptxlab::Device::gpu(0) {
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

fn all(c: &mut Criterion) {
    let dev = gpu();
    vector::bench(c, dev.as_ref());
}

criterion_group!(benches, all);
criterion_main!(benches);
