//! `vector-add/<backend>/<variant>`: `vector-add/cpu/{serial,rayon}` and
//! `vector-add/gpu/{scalar,wide}-f32`, 2^24 f32 elements, bytes moved
//! (2 reads, 1 write) as throughput.

use criterion::{Criterion, Throughput};
use ptxlab::runtime::{Device, ModuleKey};
use ptxlab::workloads::vector::{self, Rung};

/// Short name of a rung (its `--variant` spelling).
fn name(rung: Rung) -> &'static str {
    match rung {
        Rung::Scalar => "scalar",
        Rung::Wide => "wide",
    }
}

pub fn bench(c: &mut Criterion, dev: Option<&Device>) {
    let n = 1usize << 24;
    let (a, b) = vector::inputs::<f32>(n, 1);
    let mut out = vec![0f32; n];
    let bytes = vector::bytes::<f32>(n) as u64;
    let mut g = crate::cpu_group(c, "vector-add");
    g.throughput(Throughput::Bytes(bytes));
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
        g.bench_function(format!("{}-f32", name(rung)), |bch| {
            bch.iter_custom(|iters| {
                crate::gpu_time(dev, iters, || {
                    vector::add(dev, rung, ModuleKey::default(), &da, &db, &mut dc)
                })
            })
        });
    }
    g.finish();
}
