//! `lomb-scargle/<backend>/<variant>`: `lomb-scargle/cpu/{serial,rayon}` (the
//! f64 reference, the material's 114 samples x 2^12 frequencies) and
//! `lomb-scargle/gpu/<rung>-{f32,f64}` for every rung of `Rung::LADDER`, by
//! its `--variant` name (`baseline`, `cached`, `fast-math`, `fast-math-fit`,
//! `fast-lean`, `regcap32`, `cubin`, `launch-bounds`, `launch-bounds-fast`,
//! `shared`, `rotate`, `rotate-fast`, ...) at the material's 114 samples x 2^20
//! frequencies; throughput in (sample, frequency) pairs, as the workload's
//! Gpairs/s rows.

use criterion::{Criterion, Throughput};
use ptxlab::runtime::Device;
use ptxlab::workloads::lomb::{self, Bufs, Elem, Options, Rung, Shape, WORKLOAD};

/// Frequencies of the CPU groups (the GPU groups use the material's 2^20).
const CPU_FREQS: usize = 1 << 12;

pub fn bench(c: &mut Criterion, dev: Option<&Device>) {
    let (x, y) = lomb::material_samples().expect("the material's samples");
    let freqs = lomb::material_freqs(CPU_FREQS);
    let opts = Options::default();
    let mut g = crate::cpu_group(c, WORKLOAD);
    g.throughput(Throughput::Elements((x.len() * freqs.len()) as u64));
    g.bench_function("serial", |bch| {
        bch.iter(|| lomb::reference(&x, &y, &freqs, opts).expect("reference"))
    });
    g.bench_function("rayon", |bch| {
        bch.iter(|| lomb::reference_rayon(&x, &y, &freqs, opts).expect("reference"))
    });
    g.finish();
    let Some(dev) = dev else { return };
    let freqs = lomb::material_freqs(lomb::MATERIAL_FREQS);
    let mut g = c.benchmark_group(format!("{WORKLOAD}/gpu"));
    g.throughput(Throughput::Elements((x.len() * freqs.len()) as u64));
    gpu_ladder::<f32>(&mut g, dev, &x, &y, &freqs);
    gpu_ladder::<f64>(&mut g, dev, &x, &y, &freqs);
    g.finish();
}

/// Every rung of the ladder for element type `T`.
fn gpu_ladder<T: Elem>(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    dev: &Device,
    x: &[f64],
    y: &[f64],
    freqs: &[f64],
) {
    let shape = Shape::material(dev);
    let mut bufs = Bufs::<T>::new(dev, x, y, freqs, Options::default()).expect("upload");
    for rung in Rung::LADDER {
        g.bench_function(format!("{}-{}", rung.name(), T::NAME), |bch| {
            bch.iter_custom(|iters| {
                crate::gpu_time(dev, iters, || {
                    lomb::run_rung(dev, rung, &mut bufs, shape.for_rung(rung))
                })
            })
        });
    }
}
