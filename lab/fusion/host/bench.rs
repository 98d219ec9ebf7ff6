//! The benchmark: unfused against fused (GB/s, % of one memory pass), and
//! microseconds per tiny kernel, plain against a graph.

use super::{COEFFS, check, cpu_rayon, cpu_serial, fused, input, launch_overhead, unfused};
use ptxlab_common::bench_ctx::{BenchCtx, skipped_gpu};
use ptxlab_common::error::Result;
use ptxlab_common::report::{Row, Status};
use ptxlab_common::runtime::Timing;

fn per_kernel(t: &Timing, kernels: usize) -> Timing {
    let d = kernels as f64;
    Timing {
        median_ms: t.median_ms / d,
        min_ms: t.min_ms / d,
        max_ms: t.max_ms / d,
        reps: t.reps,
    }
}

/// Benchmark: unfused vs fused GB/s and % of the copy ceiling; plain vs
/// graph microseconds per tiny kernel.
pub fn bench(ctx: &BenchCtx) -> Result<Vec<Row>> {
    let (a, b, c) = COEFFS;
    let n: usize = if ctx.quick { 1 << 24 } else { 1 << 26 };
    let size = format!("2^{}", n.trailing_zeros());
    let hx = input(n, 1);
    let mut hw = vec![0f32; n];
    let t1 = Timing::host(0, 2, || cpu_serial(&hx, &mut hw, a, b, c));
    let tr = Timing::host(1, 3, || cpu_rayon(&hx, &mut hw, a, b, c));
    let mut rows = Vec::new();
    for (name, t) in [
        ("CPU 1 thread (fused loop)", &t1),
        ("CPU rayon (fused loop)", &tr),
    ] {
        let mut r = Row::new("fusion", name, "cpu", &size, "f32");
        r.throughput = Some(8.0 * n as f64 / (t.median_ms * 1e-3) / 1e9);
        r.unit = "GB/s".into();
        r.speedup = Some(t1.median_ms / t.median_ms);
        r.timing = Some(t.clone());
        rows.push(r);
    }
    let Some(dev) = ctx.gpu() else {
        rows.push(skipped_gpu("fusion", ctx));
        return Ok(rows);
    };
    let (eu, ef) = check(dev, 1_000_003, 3)?;
    let x = dev.upload(&hx)?;
    let mut y = dev.alloc_filled(n, 0f32)?;
    let mut z = dev.alloc_filled(n, 0f32)?;
    let mut w = dev.alloc_filled(n, 0f32)?;
    for (fusedp, err) in [(false, eu), (true, ef)] {
        let label = if fusedp {
            "fused: 1 kernel, 8 B/element"
        } else {
            "unfused: 3 kernels, 24 B/element"
        };
        let mut row = Row::new("fusion", label, "gpu", &size, "f32");
        row.rel_err = Some(err);
        if !(err < 1e-6) {
            row.status = Status::Failed(format!("relative error {err:.1e} >= 1e-6"));
            rows.push(row);
            continue;
        }
        let t = dev.time(3, ctx.reps(), |_| {
            if fusedp {
                fused(dev, &x, &mut w, a, b, c)
            } else {
                unfused(dev, &x, &mut y, &mut z, &mut w, a, b, c)
            }
        })?;
        let bytes = if fusedp { 8.0 } else { 24.0 } * n as f64;
        let gbs = bytes / (t.median_ms * 1e-3) / 1e9;
        row.throughput = Some(gbs);
        row.unit = "GB/s".into();
        // The figure of merit: this pipeline's time against one memory pass
        // (8 bytes per element at the copy bandwidth).
        row.pct_of_ceiling = ctx
            .ceilings
            .copy_gbs
            .map(|cg| 100.0 * (8.0 * n as f64 / (t.median_ms * 1e-3) / 1e9) / cg);
        row.speedup = Some(t1.median_ms / t.median_ms);
        row.timing = Some(t);
        rows.push(row);
    }
    let kernels = if ctx.quick { 200 } else { 1000 };
    let (tp, tg) = launch_overhead(dev, kernels, if ctx.quick { 5 } else { 20 })?;
    let ksize = format!("{kernels} kernels");
    for (label, t) in [
        ("plain launches (launch!), per kernel", Some(tp)),
        ("CUDA graph replay, per kernel", tg),
    ] {
        let Some(t) = t else { continue };
        let per = per_kernel(&t, kernels);
        let mut row = Row::new("fusion", label, "gpu", &ksize, "f32");
        row.throughput = Some(per.median_ms * 1e3);
        row.unit = "us/kernel".into();
        row.timing = Some(per);
        rows.push(row);
    }
    Ok(rows)
}
