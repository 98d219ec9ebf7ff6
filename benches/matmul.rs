//! `matmul/<backend>/<variant>`: SGEMM `matmul/cpu/{ndarray,rayon}` at 512^3
//! and `matmul/gpu/<rung>` (`naive`, `tiled`, `regblock`, `vec`, `vec1`: every
//! rung of `Rung::ALL`, by its `--variant` name) at 4096^3, FLOP (`2mnk`)
//! as elements, as the workload's GFLOP/s rows; the column sum of `A B` at
//! the material's shape, `matmul/gpu/colsum-{direct,fused}`, with the bytes
//! of `A` and `B` as throughput, as the workload's GB/s rows.

use criterion::{Criterion, Throughput};
use ptxlab::runtime::Device;
use ptxlab::workloads::matmul::{self, Colsum, ColsumBufs, Rung};
use std::hint::black_box;

/// Square size of the CPU baselines.
const CPU_SIZE: usize = 512;
/// Square size of the GPU SGEMM ladder.
const GPU_SIZE: usize = 4096;
/// The material's column-sum shape `(m, n, k)`.
const COLSUM_SHAPE: (usize, usize, usize) = (10000, 7000, 5000);

pub fn bench(c: &mut Criterion, dev: Option<&Device>) {
    let s = CPU_SIZE;
    let (a, b) = matmul::inputs(s, s, s, 1);
    let mut g = crate::cpu_group(c, "matmul");
    g.throughput(Throughput::Elements(matmul::flops(s, s, s) as u64));
    g.bench_function("ndarray", |bch| {
        bch.iter(|| matmul::cpu_ndarray(black_box(&a), black_box(&b), s, s, s))
    });
    g.bench_function("rayon", |bch| {
        bch.iter(|| matmul::cpu_rayon(black_box(&a), black_box(&b), s, s, s))
    });
    g.finish();
    let Some(dev) = dev else { return };
    let mut g = c.benchmark_group("matmul/gpu");
    // The naive rung takes about 0.1 s a call at 4096^3 on an H100.
    g.sample_size(20);
    let s = GPU_SIZE;
    let (ha, hb) = matmul::inputs(s, s, s, 7);
    let (da, db) = (
        dev.upload(&ha).expect("upload"),
        dev.upload(&hb).expect("upload"),
    );
    let mut dc = dev.alloc_filled(s * s, 0f32).expect("alloc");
    g.throughput(Throughput::Elements(matmul::flops(s, s, s) as u64));
    for rung in Rung::ALL {
        g.bench_function(rung.name(), |bch| {
            bch.iter_custom(|iters| {
                crate::gpu_time(dev, iters, || {
                    matmul::gemm(dev, rung, &da, &db, &mut dc, s, s, s)
                })
            })
        });
    }
    drop((da, db, dc));
    let (m, n, kk) = COLSUM_SHAPE;
    let (ha, hb) = matmul::inputs(m, n, kk, 13);
    let (da, db) = (
        dev.upload(&ha).expect("upload"),
        dev.upload(&hb).expect("upload"),
    );
    g.throughput(Throughput::Bytes(matmul::colsum_bytes(m, n, kk) as u64));
    for (how, label) in [
        (Colsum::Direct, "colsum-direct"),
        (Colsum::Fused, "colsum-fused"),
    ] {
        let mut bufs = ColsumBufs::new(dev, how, m, n, kk).expect("alloc");
        g.bench_function(label, |bch| {
            bch.iter_custom(|iters| {
                crate::gpu_time(dev, iters, || {
                    matmul::colsum_of_product(dev, how, &da, &db, &mut bufs, m, n, kk)
                })
            })
        });
    }
    g.finish();
}
