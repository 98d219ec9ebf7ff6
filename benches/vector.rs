//! `vector-add/<backend>/<variant>`.

use criterion::{Criterion, Throughput};
use ptxlab::runtime::{Device, ModuleKey};
use ptxlab::workloads::vector::{self, Rung};
use std::time::Duration;

pub fn bench(c: &mut Criterion, dev: Option<&Device>) {
    let n = 1usize << 24;
    let (a, b) = vector::inputs::<f32>(n, 1);
    let mut out = vec![0f32; n];
    let bytes = vector::bytes::<f32>(n) as u64;
    let mut g = c.benchmark_group("vector-add/cpu");
    g.throughput(Throughput::Bytes(bytes)).sample_size(10);
    g.bench_function("serial", |bch| {
        bch.iter(|| vector::cpu_serial(&a, &b, &mut out))
    });
    g.bench_function("rayon", |bch| {
        bch.iter(|| vector::cpu_rayon(&a, &b, &mut out))
    });
    g.finish();
    let Some(dev) = dev else { return };
    let (da, db) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap());
    let mut dc = dev.alloc_filled(n, 0f32).unwrap();
    let mut g = c.benchmark_group("vector-add/gpu");
    g.throughput(Throughput::Bytes(bytes));
    for rung in Rung::ALL {
        g.bench_function(rung.label(), |bch| {
            bch.iter_custom(|iters| {
                // Device events around the whole batch; one sync after it.
                let t = dev
                    .time(1, 1, |_| {
                        for _ in 0..iters {
                            vector::add(dev, rung, ModuleKey::default(), &da, &db, &mut dc)?;
                        }
                        Ok(())
                    })
                    .expect("GPU timing");
                Duration::from_secs_f64(t.median_ms * 1e-3)
            })
        });
    }
    g.finish();
}
