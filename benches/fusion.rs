//! `fusion/<backend>/<variant>`: the elementwise pipeline
//! `w = sqrt((a x + b)^2) + c`, `fusion/cpu/{serial,rayon}` at 2^24 and
//! `fusion/gpu/{unfused,fused}` at 2^26 (bytes moved as throughput: 24 and
//! 8 per element, as the workload's GB/s rows); launch overhead,
//! `fusion/gpu/{plain-launches,graph-replay}`: 1000 tiny kernels per
//! iteration, launched one by one or replayed from a CUDA graph, kernels as
//! elements.

use criterion::{Criterion, Throughput};
use ptxlab::runtime::Device;
use ptxlab::workloads::fusion::{self, COEFFS, TinyGraph};
use std::time::Duration;

const CPU_N: usize = 1 << 24;
const GPU_N: usize = 1 << 26;
/// Tiny kernels per iteration of the launch-overhead benchmarks.
const KERNELS: usize = 1000;

pub fn bench(c: &mut Criterion, dev: Option<&Device>) {
    let (a, b, cc) = COEFFS;
    let x = fusion::input(CPU_N, 1);
    let mut w = vec![0f32; CPU_N];
    let mut g = crate::cpu_group(c, "fusion");
    g.throughput(Throughput::Bytes(8 * CPU_N as u64));
    g.bench_function("serial", |bch| {
        bch.iter(|| fusion::cpu_serial(&x, &mut w, a, b, cc))
    });
    g.bench_function("rayon", |bch| {
        bch.iter(|| fusion::cpu_rayon(&x, &mut w, a, b, cc))
    });
    g.finish();
    let Some(dev) = dev else { return };
    let n = GPU_N;
    let x = dev.upload(&fusion::input(n, 1)).expect("upload");
    let mut y = dev.alloc_filled(n, 0f32).expect("alloc");
    let mut z = dev.alloc_filled(n, 0f32).expect("alloc");
    let mut w = dev.alloc_filled(n, 0f32).expect("alloc");
    let mut g = c.benchmark_group("fusion/gpu");
    g.throughput(Throughput::Bytes(24 * n as u64));
    g.bench_function("unfused", |bch| {
        bch.iter_custom(|iters| {
            crate::gpu_time(dev, iters, || {
                fusion::unfused(dev, &x, &mut y, &mut z, &mut w, a, b, cc)
            })
        })
    });
    g.throughput(Throughput::Bytes(8 * n as u64));
    g.bench_function("fused", |bch| {
        bch.iter_custom(|iters| {
            crate::gpu_time(dev, iters, || fusion::fused(dev, &x, &mut w, a, b, cc))
        })
    });
    drop((x, y, z, w));
    // The tiny kernel adds 1 to a small buffer; its values are not checked here.
    let mut t = dev
        .alloc_filled(kernels_gpu::fusion::TINY_THREADS as usize, 0f32)
        .expect("alloc");
    g.throughput(Throughput::Elements(KERNELS as u64));
    g.bench_function("plain-launches", |bch| {
        bch.iter_custom(|iters| crate::gpu_time(dev, iters, || fusion::plain(dev, &mut t, KERNELS)))
    });
    let graph = TinyGraph::capture(dev, &mut t, KERNELS).expect("graph capture");
    g.bench_function("graph-replay", |bch| {
        // The graph runs on a stream of its own: its events time each replay;
        // the batch is the median replay times the iterations.
        bch.iter_custom(|iters| {
            let t = graph.time(0, iters as usize).expect("graph timing");
            Duration::from_secs_f64(t.median_ms * 1e-3 * iters as f64)
        })
    });
    g.finish();
    graph.synchronize().expect("graph sync");
}
