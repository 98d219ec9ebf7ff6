//! The parallel primitives, under the workload names of their report rows:
//! `reduce/cpu/{serial,rayon}-f32` and
//! `reduce/gpu/{tree,shuffle,atomic-thread,atomic-warp,gridstride}-{f32,f64,i32}`
//! (2^24 elements, bytes read as throughput);
//! `histogram/cpu/{serial,rayon}-u8` and `histogram/gpu/{global,shared}-{u8,u32}`
//! (2^24 keys, 256 bins, bytes read as throughput);
//! `monte-carlo-pi/cpu/{serial,rayon}` (10^7 samples) and
//! `monte-carlo-pi/gpu/xoroshiro128plus` (10^9 samples), samples as throughput.

use criterion::{BenchmarkGroup, Criterion, Throughput, measurement::WallTime};
use kernels_gpu::histogram::BINS;
use ptxlab::runtime::Device;
use ptxlab::workloads::primitives::{
    self as prim, HistKey, HistRung, PiLayout, ReduceRung, SumElement, SumPlan,
};
use std::hint::black_box;

/// Elements of the sums and keys of the histograms.
const N: usize = 1 << 24;
/// Monte-Carlo samples per call on the CPU and on the GPU.
const PI_SAMPLES_CPU: u64 = 10_000_000;
const PI_SAMPLES_GPU: u64 = 1_000_000_000;

/// Short name of a histogram rung (its `--variant` spelling).
fn hist_name(rung: HistRung) -> &'static str {
    match rung {
        HistRung::Global => "global",
        HistRung::Shared => "shared",
    }
}

pub fn bench(c: &mut Criterion, dev: Option<&Device>) {
    reduce(c, dev);
    histogram(c, dev);
    pi(c, dev);
}

fn reduce(c: &mut Criterion, dev: Option<&Device>) {
    let x = prim::random_inputs::<f32>(N, 3);
    let mut g = crate::cpu_group(c, "reduce");
    g.throughput(Throughput::Bytes(std::mem::size_of_val(x.as_slice()) as u64));
    g.bench_function("serial-f32", |bch| {
        bch.iter(|| prim::cpu_sum_serial(black_box(&x)))
    });
    g.bench_function("rayon-f32", |bch| {
        bch.iter(|| prim::cpu_sum_rayon(black_box(&x)))
    });
    g.finish();
    let Some(dev) = dev else { return };
    let mut g = c.benchmark_group("reduce/gpu");
    reduce_rungs::<f32>(&mut g, dev);
    reduce_rungs::<f64>(&mut g, dev);
    reduce_rungs::<i32>(&mut g, dev);
    g.finish();
}

/// Every reduction rung for `T`; the atomic rungs keep adding into one slot
/// (its value does not matter here, the workload's bench checks the results).
fn reduce_rungs<T: SumElement>(g: &mut BenchmarkGroup<'_, WallTime>, dev: &Device) {
    let x = dev.upload(&prim::random_inputs::<T>(N, 3)).expect("upload");
    let mut out = dev.alloc_filled(1, T::ZERO).expect("alloc");
    g.throughput(Throughput::Bytes((N * std::mem::size_of::<T>()) as u64));
    for rung in ReduceRung::ALL {
        let mut plan = SumPlan::<T>::new(dev, rung, N).expect("reduction plan");
        g.bench_function(format!("{}-{}", rung.name(), T::NAME), |bch| {
            bch.iter_custom(|iters| crate::gpu_time(dev, iters, || plan.run(dev, &x, &mut out, 0)))
        });
    }
}

fn histogram(c: &mut Criterion, dev: Option<&Device>) {
    let keys = prim::random_keys::<u8>(N, 17);
    let mut g = crate::cpu_group(c, "histogram");
    g.throughput(Throughput::Bytes(keys.len() as u64));
    g.bench_function("serial-u8", |bch| {
        bch.iter(|| prim::cpu_histogram_serial(black_box(&keys), BINS))
    });
    g.bench_function("rayon-u8", |bch| {
        bch.iter(|| prim::cpu_histogram_rayon(black_box(&keys), BINS))
    });
    g.finish();
    let Some(dev) = dev else { return };
    let mut g = c.benchmark_group("histogram/gpu");
    hist_rungs::<u8>(&mut g, dev);
    hist_rungs::<u32>(&mut g, dev);
    g.finish();
}

/// Both histogram rungs for key type `K`, adding into one set of bins.
fn hist_rungs<K: HistKey>(g: &mut BenchmarkGroup<'_, WallTime>, dev: &Device) {
    let keys = dev.upload(&prim::random_keys::<K>(N, 17)).expect("upload");
    let mut hist = dev.alloc_filled(BINS as usize, 0u32).expect("alloc");
    g.throughput(Throughput::Bytes((N * std::mem::size_of::<K>()) as u64));
    for rung in HistRung::ALL {
        g.bench_function(format!("{}-{}", hist_name(rung), K::NAME), |bch| {
            bch.iter_custom(|iters| {
                crate::gpu_time(dev, iters, || {
                    prim::histogram_into(dev, rung, &keys, &mut hist, BINS, 0)
                })
            })
        });
    }
}

fn pi(c: &mut Criterion, dev: Option<&Device>) {
    let layout = PiLayout::DEFAULT;
    let mut g = crate::cpu_group(c, "monte-carlo-pi");
    g.throughput(Throughput::Elements(PI_SAMPLES_CPU));
    g.bench_function("serial", |bch| {
        bch.iter(|| prim::cpu_pi_serial(layout, PI_SAMPLES_CPU, 1).expect("layout"))
    });
    g.bench_function("rayon", |bch| {
        bch.iter(|| prim::cpu_pi_rayon(layout, PI_SAMPLES_CPU, 1).expect("layout"))
    });
    g.finish();
    let Some(dev) = dev else { return };
    let mut hits = dev.alloc_filled(1, 0u64).expect("alloc");
    let mut g = c.benchmark_group("monte-carlo-pi/gpu");
    g.throughput(Throughput::Elements(PI_SAMPLES_GPU));
    g.bench_function("xoroshiro128plus", |bch| {
        bch.iter_custom(|iters| {
            crate::gpu_time(dev, iters, || {
                prim::pi_into(dev, layout, PI_SAMPLES_GPU, 1, &mut hits, 0)
            })
        })
    });
    g.finish();
}
