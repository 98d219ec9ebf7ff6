//! The benchmark rows of the three primitives: CPU baselines, then every
//! rung checked against its reference before it is timed.

use super::{
    HistKey, HistRung, PiLayout, ReduceRung, SumElement, SumPlan, check_buffer,
    cpu_histogram_rayon, cpu_histogram_serial, cpu_pi_rayon, cpu_pi_serial, cpu_sum_rayon,
    cpu_sum_serial, estimate, histogram, histogram_into, pi_hits, pi_into, random_inputs,
    random_keys, resources, size_label,
};
use kernels_gpu::histogram as hk;
use ptxlab_common::bench_ctx::{BenchCtx, skipped_gpu};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::{Row, Status};
use ptxlab_common::runtime::{Device, Timing};
fn timed_row(
    row: &mut Row,
    t: Timing,
    bytes: Option<f64>,
    copy_gbs: Option<f64>,
    cpu1_ms: Option<f64>,
) {
    if let Some(b) = bytes {
        let gbs = b / (t.median_ms * 1e-3) / 1e9;
        row.throughput = Some(gbs);
        row.unit = "GB/s".into();
        row.pct_of_ceiling = copy_gbs.map(|c| 100.0 * gbs / c);
    }
    row.speedup = cpu1_ms.map(|c| c / t.median_ms);
    row.timing = Some(t);
}

/// The two CPU rows of `[workload, size, precision]` (one thread `t1`, all
/// cores `tr`, over `bytes`), and the one-thread median.
fn cpu_rows(
    [workload, size, precision]: [&str; 3],
    bytes: f64,
    t1: Timing,
    tr: Timing,
) -> (Vec<Row>, f64) {
    let cpu1 = t1.median_ms;
    let rows = [("CPU 1 thread", t1), ("CPU rayon all cores", tr)]
        .into_iter()
        .map(|(name, t)| {
            let mut r = Row::new(workload, name, "cpu", size, precision);
            timed_row(&mut r, t, Some(bytes), None, Some(cpu1));
            r
        })
        .collect();
    (rows, cpu1)
}

/// CPU rows of a sum of `n` elements; returns them and the one-thread median.
fn reduce_cpu_rows<T: SumElement>(hx: &[T], reps: usize) -> (Vec<Row>, f64) {
    let n = hx.len();
    let size = size_label(n as u64);
    let bytes = std::mem::size_of_val(hx) as f64;
    let mut sink = T::ZERO;
    let t1 = Timing::host(1, reps, || sink = std::hint::black_box(cpu_sum_serial(hx)));
    let tr = Timing::host(1, reps.max(3), || {
        sink = std::hint::black_box(cpu_sum_rayon(hx))
    });
    let _ = sink;
    cpu_rows(["reduce", &size, T::NAME], bytes, t1, tr)
}

/// Checks, then times, every rung in `rungs` at `n` elements on `dev`.
fn reduce_rows<T: SumElement>(
    dev: &Device,
    ctx: &BenchCtx,
    n: usize,
    rungs: &[ReduceRung],
    cpu: bool,
) -> Result<Vec<Row>> {
    let backend = if dev.is_sim() { "sim" } else { "gpu" };
    let size = size_label(n as u64);
    let bytes = (n * std::mem::size_of::<T>()) as f64;
    let hx = random_inputs::<T>(n, 3);
    let x = dev.upload(&hx)?;
    let mut rows = Vec::new();
    let cpu1 = if cpu {
        let (r, t1) = reduce_cpu_rows(&hx, if n >= 1 << 26 { 2 } else { 3 });
        rows.extend(r);
        Some(t1)
    } else {
        None
    };
    for &rung in rungs {
        let mut row = Row::new("reduce", rung.label(), backend, &size, T::NAME);
        resources(dev, &mut row, rung.entry::<T>());
        let t0 = std::time::Instant::now();
        match check_buffer(dev, rung, &hx, &x) {
            Ok(c) if c.ok() => {
                row.rel_err = Some(c.rel_err());
                if c.inaccurate(T::UNIT_ROUNDOFF) {
                    row.status = Status::Inaccurate(format!(
                        "relative error {:.1e}: {} chained {} additions (h u = {:.1}) leave no usable error bound",
                        c.rel_err(),
                        c.depth,
                        T::NAME,
                        c.depth * T::UNIT_ROUNDOFF
                    ));
                }
            }
            Ok(c) => {
                row.status = Status::Failed(format!(
                    "error {:.3e} exceeds the bound {:.3e}",
                    c.err, c.bound
                ));
                rows.push(row);
                continue;
            }
            Err(e) => {
                row.status = Status::Failed(e.to_string());
                rows.push(row);
                continue;
            }
        }
        row.first_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
        let (warmup, reps) = if rung == ReduceRung::AtomicThread && n >= 1 << 24 {
            (1, 3)
        } else {
            (3, ctx.reps())
        };
        let mut plan = SumPlan::<T>::new(dev, rung, n)?;
        let init = if rung.accumulates() {
            T::ZERO
        } else {
            T::POISON
        };
        let mut out = dev.alloc_filled(warmup + reps, init)?;
        let t = dev.time(warmup, reps, |i| plan.run(dev, &x, &mut out, i))?;
        timed_row(&mut row, t, Some(bytes), ctx.ceilings.copy_gbs, cpu1);
        rows.push(row);
    }
    Ok(rows)
}

fn hist_cpu_rows<K: HistKey>(keys: &[K], bins: u32, reps: usize) -> (Vec<Row>, f64) {
    let size = size_label(keys.len() as u64);
    let bytes = std::mem::size_of_val(keys) as f64;
    let t1 = Timing::host(1, reps, || {
        std::hint::black_box(cpu_histogram_serial(keys, bins));
    });
    let tr = Timing::host(1, reps.max(3), || {
        std::hint::black_box(cpu_histogram_rayon(keys, bins));
    });
    cpu_rows(["histogram", &size, K::NAME], bytes, t1, tr)
}

fn hist_rows<K: HistKey>(dev: &Device, ctx: &BenchCtx, n: usize, bins: u32) -> Result<Vec<Row>> {
    let backend = if dev.is_sim() { "sim" } else { "gpu" };
    let size = size_label(n as u64);
    let keys = random_keys::<K>(n, 17);
    let bytes = std::mem::size_of_val(keys.as_slice()) as f64;
    let (mut rows, cpu1) = hist_cpu_rows(&keys, bins, 3);
    let want = cpu_histogram_serial(&keys, bins);
    let kb = dev.upload(&keys)?;
    for rung in HistRung::ALL {
        let mut row = Row::new(
            "histogram",
            &format!("{} ({bins} bins)", rung.label()),
            backend,
            &size,
            K::NAME,
        );
        resources(dev, &mut row, rung.entry::<K>());
        let t0 = std::time::Instant::now();
        match histogram(dev, rung, &kb, bins) {
            Ok(got) => {
                let bad = got.iter().zip(&want).filter(|(g, w)| g != w).count();
                if bad != 0 {
                    row.status =
                        Status::Failed(format!("{bad} of {bins} bins differ from the CPU"));
                    rows.push(row);
                    continue;
                }
                row.rel_err = Some(0.0);
            }
            Err(e) => {
                row.status = Status::Failed(e.to_string());
                rows.push(row);
                continue;
            }
        }
        row.first_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
        let (warmup, reps) = (2, ctx.reps());
        let mut hist = dev.alloc_filled((warmup + reps) * bins as usize, 0u32)?;
        let t = dev.time(warmup, reps, |i| {
            histogram_into(dev, rung, &kb, &mut hist, bins, i * bins as usize)
        })?;
        timed_row(&mut row, t, Some(bytes), ctx.ceilings.copy_gbs, Some(cpu1));
        rows.push(row);
    }
    Ok(rows)
}

fn pi_row(
    variant: &str,
    backend: &str,
    samples: u64,
    hits: u64,
    t: Timing,
    cpu1_ns_per_sample: Option<f64>,
) -> Row {
    let mut r = Row::new(
        "monte-carlo-pi",
        variant,
        backend,
        &format!("{samples:.0e} samples"),
        "u64 hits",
    );
    let est = estimate(hits, samples);
    r.rel_err = Some((est - std::f64::consts::PI).abs() / std::f64::consts::PI);
    r.throughput = Some(samples as f64 / (t.median_ms * 1e-3) / 1e9);
    r.unit = "Gsamples/s".into();
    r.speedup = cpu1_ns_per_sample.map(|ns| ns * samples as f64 * 1e-6 / t.median_ms);
    r.timing = Some(t);
    r
}

fn pi_cpu_rows(layout: PiLayout, samples: u64) -> Result<(Vec<Row>, f64)> {
    let mut h1 = 0;
    let mut hr = 0;
    let mut err = None;
    let t1 = Timing::host(0, 2, || match cpu_pi_serial(layout, samples, 1) {
        Ok(h) => h1 = h,
        Err(e) => err = Some(e),
    });
    let tr = Timing::host(1, 3, || match cpu_pi_rayon(layout, samples, 1) {
        Ok(h) => hr = h,
        Err(e) => err = Some(e),
    });
    if let Some(e) = err {
        return Err(e);
    }
    let ns = t1.median_ms * 1e6 / samples as f64;
    Ok((
        vec![
            pi_row(
                "CPU 1 thread (same streams)",
                "cpu",
                samples,
                h1,
                t1,
                Some(ns),
            ),
            pi_row(
                "CPU rayon all cores (same streams)",
                "cpu",
                samples,
                hr,
                tr,
                Some(ns),
            ),
        ],
        ns,
    ))
}

fn pi_rows(dev: &Device, ctx: &BenchCtx) -> Result<Vec<Row>> {
    let layout = PiLayout::DEFAULT;
    let check_samples = if ctx.quick { 10_000_000 } else { 100_000_000 };
    let (mut rows, cpu_ns) = pi_cpu_rows(layout, check_samples)?;
    let label = format!(
        "xoroshiro128+ per thread, {} x {} threads, 1 atomic/block",
        layout.blocks, layout.block
    );
    let mut check_row = Row::new(
        "monte-carlo-pi",
        &label,
        "gpu",
        &format!("{check_samples:.0e} samples"),
        "u64 hits",
    );
    resources(dev, &mut check_row, "montecarlo_pi");
    let t0 = std::time::Instant::now();
    let got = pi_hits(dev, layout, check_samples, 1)?;
    let first_ms = t0.elapsed().as_secs_f64() * 1e3;
    let want = cpu_pi_rayon(layout, check_samples, 1)?;
    if got != want {
        check_row.status = Status::Failed(format!(
            "{got} hits on the GPU, {want} on the CPU with the same seed and layout"
        ));
        rows.push(check_row);
        return Ok(rows);
    }
    let mut sizes = vec![1_000_000_000u64];
    if !ctx.quick {
        sizes.insert(0, check_samples);
    }
    let mut i = 0;
    while i < sizes.len() {
        let samples = sizes[i];
        let (warmup, reps) = if samples >= 10_000_000_000 {
            (1, 5)
        } else {
            (2, ctx.reps().min(20))
        };
        let mut hits = dev.alloc_filled(warmup + reps, 0u64)?;
        let t = dev.time(warmup, reps, |s| {
            pi_into(dev, layout, samples, 1 + s as u64, &mut hits, s)
        })?;
        let counts = dev.download(&hits)?;
        let mut row = pi_row(
            &label,
            "gpu",
            samples,
            counts[warmup],
            t.clone(),
            Some(cpu_ns),
        );
        row.registers = check_row.registers;
        row.spills = check_row.spills;
        if i == 0 {
            row.first_ms = Some(first_ms);
        }
        rows.push(row);
        if samples == 1_000_000_000 && t.median_ms * 10.0 < 1000.0 {
            sizes.push(10_000_000_000);
        }
        i += 1;
    }
    Ok(rows)
}

/// Benchmark rows of the three primitives. Without a GPU: CPU baselines and
/// a skipped row; on the simulator: small sizes.
pub fn bench(ctx: &BenchCtx) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    match ctx.dev {
        None => {
            rows.push(skipped_gpu("monte-carlo-pi", ctx));
            let n = if ctx.quick { 1 << 20 } else { 1 << 24 };
            rows.extend(reduce_cpu_rows(&random_inputs::<f32>(n, 3), 3).0);
            rows.extend(hist_cpu_rows(&random_keys::<u8>(n, 17), hk::BINS, 3).0);
            rows.extend(
                pi_cpu_rows(
                    PiLayout::DEFAULT,
                    if ctx.quick { 1_000_000 } else { 10_000_000 },
                )?
                .0,
            );
        }
        Some(dev) if dev.is_sim() => {
            rows.extend(reduce_rows::<f32>(dev, ctx, 4097, &ReduceRung::ALL, true)?);
            rows.extend(hist_rows::<u8>(dev, ctx, 4097, hk::BINS)?);
            let layout = PiLayout::SIM;
            let samples = 25_601;
            let want = cpu_pi_serial(layout, samples, 1)?;
            let t = dev.time(0, 2, |_| {
                let got = pi_hits(dev, layout, samples, 1)?;
                if got != want {
                    return Err(Error::Verification {
                        what: "monte-carlo-pi (simulator)".into(),
                        detail: format!("{got} hits on the simulator, {want} on the CPU"),
                    });
                }
                Ok(())
            })?;
            rows.push(pi_row(
                "xoroshiro128+ per thread",
                "sim",
                samples,
                want,
                t,
                None,
            ));
        }
        Some(dev) => {
            let sizes: Vec<usize> = if ctx.quick {
                vec![1 << 24]
            } else {
                vec![1 << 20, 1 << 24, (1 << 24) + 3, 1 << 28]
            };
            for &n in &sizes {
                let rungs: &[ReduceRung] = if n == (1 << 24) + 3 {
                    &[ReduceRung::GridStride]
                } else {
                    &ReduceRung::ALL
                };
                rows.extend(reduce_rows::<f32>(dev, ctx, n, rungs, n != (1 << 24) + 3)?);
            }
            rows.extend(reduce_rows::<f64>(
                dev,
                ctx,
                1 << 24,
                &ReduceRung::ALL,
                !ctx.quick,
            )?);
            rows.extend(reduce_rows::<i32>(
                dev,
                ctx,
                1 << 24,
                &ReduceRung::ALL,
                !ctx.quick,
            )?);
            rows.extend(hist_rows::<u8>(dev, ctx, 1 << 24, hk::BINS)?);
            rows.extend(hist_rows::<u32>(dev, ctx, 1 << 24, hk::BINS)?);
            rows.extend(pi_rows(dev, ctx)?);
        }
    }
    Ok(rows)
}
