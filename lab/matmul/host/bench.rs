//! The benchmark rows: CPU baselines, every SGEMM rung and the column sum.

use super::check::{TOL, check_rung, download_f64, first_unwritten, sample_check, verify};
use super::colsum::{Colsum, ColsumBufs, FusedPlan, bench_plans, colsum_of_product, fused_colsum};
use super::cpu::{colsum_bytes, colsum_reference, cpu_ndarray, cpu_rayon, flops, inputs};
use super::launch::gemm;
use super::rung::Rung;
use ptxlab_common::bench_ctx::BenchCtx;
use ptxlab_common::error::Result;
use ptxlab_common::report::{Row, Status};
use ptxlab_common::rng::rel_err_norm;
use ptxlab_common::runtime::Timing;

fn cpu_rows(ctx: &BenchCtx, rows: &mut Vec<Row>) -> f64 {
    let s = if ctx.quick { 256 } else { 512 };
    let (a, b) = inputs(s, s, s, 1);
    let t1 = Timing::host(0, 2, || {
        std::hint::black_box(cpu_ndarray(&a, &b, s, s, s));
    });
    let rs = if ctx.quick { 512 } else { 1024 };
    let (ra, rb) = inputs(rs, rs, rs, 2);
    let tr = Timing::host(0, 2, || {
        std::hint::black_box(cpu_rayon(&ra, &rb, rs, rs, rs));
    });
    let g1 = flops(s, s, s) / (t1.median_ms * 1e-3) / 1e9;
    let gr = flops(rs, rs, rs) / (tr.median_ms * 1e-3) / 1e9;
    for (name, size, t, g) in [
        ("CPU 1 thread (ndarray dot)", format!("{s}^3"), t1, g1),
        ("CPU rayon blocked", format!("{rs}^3"), tr, gr),
    ] {
        let mut r = Row::new("matmul", name, "cpu", &size, "f32");
        r.throughput = Some(g);
        r.unit = "GFLOP/s".into();
        r.speedup = Some(g / g1);
        r.timing = Some(t);
        rows.push(r);
    }
    g1
}

/// Timed repetitions for a call that took `ms` once: about 2 s per row at most.
fn reps_for(ms: f64, max: usize) -> usize {
    ((2000.0 / ms.max(1e-3)) as usize).clamp(3, max.max(3))
}

/// The benchmark: SGEMM GFLOP/s per rung at 4096^3 and at the material's
/// shape (quick: 2048^3), and the column sum both ways at the material's shape.
pub fn bench(ctx: &BenchCtx) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let g1 = cpu_rows(ctx, &mut rows);
    let Some(dev) = ctx.gpu() else {
        rows.push(ptxlab_common::bench_ctx::skipped_gpu("matmul", ctx));
        return Ok(rows);
    };
    let arch = dev.as_gpu().map(|g| g.info().arch()).unwrap_or_default();
    // Correctness of every rung at an odd size first.
    let mut ok = Vec::new();
    for rung in Rung::ALL {
        let r = check_rung(dev, rung, 517, 389, 301, 3)
            .and_then(|e| verify(format!("matmul {} 517x389x301", rung.label()), e, TOL));
        ok.push((rung, r));
    }
    let shapes: Vec<(usize, usize, usize)> = if ctx.quick {
        vec![(2048, 2048, 2048)]
    } else {
        vec![(4096, 4096, 4096), (10000, 7000, 5000)]
    };
    for &(m, n, kk) in &shapes {
        let size = if m == n && n == kk {
            format!("{m}^3")
        } else {
            format!("({m}x{kk})({kk}x{n})")
        };
        let (ha, hb) = inputs(m, n, kk, 7);
        let a = dev.upload(&ha)?;
        let b = dev.upload(&hb)?;
        let mut c = dev.alloc_filled(m * n, f32::NAN)?;
        for (rung, checked) in &ok {
            let mut row = Row::new("matmul", rung.label(), "gpu", &size, "f32");
            if let Some(res) = ptxlab_common::modules::resource(rung.entry(), &arch, false) {
                row.registers = Some(res.registers);
                row.spills = Some(res.spill_stores + res.spill_loads);
            }
            match checked {
                Ok(e) => row.rel_err = Some(*e),
                Err(e) => {
                    row.status = Status::Failed(e.to_string());
                    rows.push(row);
                    continue;
                }
            }
            dev.write(&mut c, &vec![f32::NAN; m * n])?;
            let t0 = std::time::Instant::now();
            gemm(dev, *rung, &a, &b, &mut c, m, n, kk)?;
            dev.synchronize()?;
            let first = t0.elapsed().as_secs_f64() * 1e3;
            row.first_ms = Some(first);
            let got = dev.download(&c)?;
            // Every element written (the output was poisoned with NaN), then
            // 64 sampled entries against f64 dots.
            if let Some(why) = first_unwritten(&got, n) {
                row.status = Status::Failed(why);
                rows.push(row);
                continue;
            }
            let e = sample_check(&got, &ha, &hb, m, n, kk);
            if !(e <= 1e-3) {
                row.status =
                    Status::Failed(format!("64 sampled entries: relative error {e:.2e} > 1e-3"));
                rows.push(row);
                continue;
            }
            if *rung == Rung::Naive && first > 2000.0 {
                row.status =
                    Status::Skipped(format!("one call took {first:.0} ms (> 2 s); not timed"));
                rows.push(row);
                continue;
            }
            let t = dev.time(1, reps_for(first, ctx.reps()), |_| {
                gemm(dev, *rung, &a, &b, &mut c, m, n, kk)
            })?;
            let g = flops(m, n, kk) / (t.median_ms * 1e-3) / 1e9;
            row.throughput = Some(g);
            row.unit = "GFLOP/s".into();
            row.pct_of_ceiling = ctx.ceilings.fp32_flops.map(|f| 100.0 * g * 1e9 / f);
            row.speedup = Some(g / g1);
            row.timing = Some(t);
            rows.push(row);
        }
    }
    // The tensor-core ladder (BF16, FP16, 3xTF32) and rung 4g beside it,
    // then the FP8 GEMM.
    super::tensor_bench::bench_tensor(ctx, dev, &mut rows)?;
    super::fp8_bench::bench_fp8(ctx, dev, &mut rows)?;
    // The material's column sum, both ways.
    let (m, n, kk) = if ctx.quick {
        (4000, 3000, 2000)
    } else {
        (10000, 7000, 5000)
    };
    let size = format!("({m}x{kk})({kk}x{n})");
    let (ha, hb) = inputs(m, n, kk, 13);
    let want = colsum_reference(&ha, &hb, m, n, kk);
    let a = dev.upload(&ha)?;
    let b = dev.upload(&hb)?;
    let bytes = colsum_bytes(m, n, kk);
    // The direct way, then every fused plan (the default first, with its
    // historical label). A plan that fails gives a failed row, not an
    // aborted benchmark.
    let mut ways: Vec<(String, Option<FusedPlan>)> = vec![(
        "colsum direct: SGEMM (rung 4g) + column sum".to_string(),
        None,
    )];
    match bench_plans(dev, m, n, kk) {
        Ok(plans) => ways.extend(plans.into_iter().map(|p| (p.label(), Some(p)))),
        Err(e) => {
            ways.push((FusedPlan::DEFAULT.label(), Some(FusedPlan::DEFAULT)));
            let mut row = Row::new("matmul", "colsum fused plans", "gpu", &size, "f32");
            row.status = Status::Failed(format!("could not size the one-wave plans: {e}"));
            rows.push(row);
        }
    }
    for (label, plan) in ways {
        let how = if plan.is_some() {
            Colsum::Fused
        } else {
            Colsum::Direct
        };
        let mut row = Row::new("matmul", &label, "gpu", &size, "f32");
        if plan.is_some_and(|p| p.one_launch)
            && let Some(res) = ptxlab_common::modules::resource(product_entry(), &arch, false)
        {
            row.registers = Some(res.registers);
            row.spills = Some(res.spill_stores + res.spill_loads);
        }
        let mut bufs = ColsumBufs::new(dev, how, m, n, kk)?;
        let call = |bufs: &mut ColsumBufs| match &plan {
            Some(p) => fused_colsum(dev, p, &a, &b, bufs, m, n, kk),
            None => colsum_of_product(dev, how, &a, &b, bufs, m, n, kk),
        };
        let t0 = std::time::Instant::now();
        let first = call(&mut bufs).and_then(|()| Ok(dev.synchronize()?));
        if let Err(e) = first {
            row.status = Status::Failed(e.to_string());
            rows.push(row);
            continue;
        }
        let first = t0.elapsed().as_secs_f64() * 1e3;
        row.first_ms = Some(first);
        if plan.is_some_and(|p| p.one_launch)
            && let Err(e) = bufs.check_no_timeout(dev)
        {
            row.status = Status::Failed(e.to_string());
            rows.push(row);
            continue;
        }
        let e = rel_err_norm(&download_f64(dev, &bufs.out)?, &want);
        row.rel_err = Some(e);
        if !(e <= 1e-3) {
            row.status = Status::Failed(format!("relative error {e:.2e} > 1e-3"));
            rows.push(row);
            continue;
        }
        let t = match dev.time(2, reps_for(first, ctx.reps()), |_| call(&mut bufs)) {
            Ok(t) => t,
            Err(e) => {
                row.status = Status::Failed(e.to_string());
                rows.push(row);
                continue;
            }
        };
        // Throughput against the fused way's floor (A and B read once), so
        // every row compares with the copy bandwidth.
        let gbs = bytes / (t.median_ms * 1e-3) / 1e9;
        row.throughput = Some(gbs);
        row.unit = "GB/s".into();
        row.pct_of_ceiling = ctx.ceilings.copy_gbs.map(|c| 100.0 * gbs / c);
        row.timing = Some(t);
        rows.push(row);
    }
    Ok(rows)
}

/// The PTX entry of the one-launch column sum (for the resource report).
fn product_entry() -> &'static str {
    use kernels_gpu::matmul::matmul_colsum_product_f32 as p;
    <p::Of as p::Instance>::ENTRY
}
