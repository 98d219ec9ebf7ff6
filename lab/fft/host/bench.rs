//! The benchmark: every rung checked against rustfft in f64, then timed,
//! beside rustfft itself on the CPU.

use super::check::{compare, run_once};
use super::cpu::{random_input, reference};
use super::launch::Rung;
use super::lines::Element;
use super::problem::{Fft, Spec};
use ptxlab_common::bench_ctx::{BenchCtx, skipped_gpu};
use ptxlab_common::error::Result;
use ptxlab_common::report::{Row, Status};
use ptxlab_common::runtime::{Device, Timing};

/// The problem's label: `4096x4096 2-D c2c`, `1x16777216 1-D c2c`.
pub fn size_label(spec: &Spec) -> String {
    format!(
        "{}x{} {} {}{}",
        spec.rows,
        spec.n,
        if spec.two_d { "2-D" } else { "1-D" },
        if spec.real { "r2c" } else { "c2c" },
        if spec.inverse { " inverse" } else { "" }
    )
}

/// Floating-point operations credited to one transform (the usual
/// `5 N log2 N` of a complex FFT of `N` points, half that for a real one),
/// for GFLOP/s figures comparable with other FFT libraries.
pub fn flops(spec: &Spec) -> f64 {
    let n = (spec.rows * spec.n) as f64;
    let per_row = if spec.two_d {
        n.log2()
    } else {
        (spec.n as f64).log2()
    };
    let f = 5.0 * n * per_row;
    if spec.real { f / 2.0 } else { f }
}

/// Checks then times every rung on `spec`; a CPU row (rustfft, one core)
/// first when `cpu`.
pub fn bench_spec<T: Element>(
    dev: &Device,
    spec: Spec,
    reps: usize,
    cpu: bool,
) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let size = size_label(&spec);
    let input: Vec<f64> = random_input(&spec, 1)
        .into_iter()
        .map(|v| T::from_f64(v).to_f64())
        .collect();
    let t0 = std::time::Instant::now();
    let want = reference(&spec, &input);
    let cpu_ms = t0.elapsed().as_secs_f64() * 1e3;
    let gflops = |ms: f64| flops(&spec) / (ms * 1e-3) / 1e9;
    if cpu {
        let mut r = Row::new("fft", "rustfft (CPU, 1 core, f64)", "cpu", &size, T::NAME);
        let t = Timing::from_samples(vec![cpu_ms]);
        r.throughput = Some(gflops(cpu_ms));
        r.unit = "GFLOP/s".into();
        r.timing = Some(t);
        rows.push(r);
    }
    let backend = if dev.is_sim() { "sim" } else { "gpu" };
    let x: Vec<T> = input.iter().map(|v| T::from_f64(*v)).collect();
    let xd = dev.upload(&x)?;
    for rung in Rung::ALL {
        let mut row = Row::new("fft", rung.label(), backend, &size, T::NAME);
        if let Some(g) = dev.as_gpu()
            && let Some(res) =
                ptxlab_common::modules::resource(rung.entry::<T>(), &g.info().arch(), false)
        {
            row.registers = Some(res.registers);
            row.spills = Some(res.spill_stores + res.spill_loads);
        }
        let mut fft = match Fft::<T>::new(dev, spec, rung) {
            Ok(f) => f,
            Err(e) => {
                row.status = Status::Failed(e.to_string());
                rows.push(row);
                continue;
            }
        };
        let checked = run_once(dev, &mut fft, &input)
            .and_then(|got| compare::<T>(&format!("fft {size} {}", rung.label()), &got, &want));
        match checked {
            Ok(e) => row.rel_err = Some(e),
            Err(e) => {
                row.status = Status::Failed(e.to_string());
                rows.push(row);
                continue;
            }
        }
        let mut out = dev.alloc_filled(spec.output_len(), T::ZERO)?;
        let t0 = std::time::Instant::now();
        fft.run(dev, &xd, &mut out)?;
        dev.synchronize()?;
        row.first_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
        let t = dev.time(3, reps, |_| fft.run(dev, &xd, &mut out))?;
        row.throughput = Some(gflops(t.median_ms));
        row.unit = "GFLOP/s".into();
        if cpu {
            row.speedup = Some(cpu_ms / t.median_ms);
        }
        row.timing = Some(t);
        rows.push(row);
    }
    Ok(rows)
}

/// The benchmark of `ptxlab bench`: c2c f32 and f64 4096x4096 2-D, 1-D c2c
/// f32 of 2^24, and a 2-D transform of odd sizes (4095x4097: the columns
/// mixed radix, the rows Bluestein); smaller ones with `--quick` and on the
/// simulator.
pub fn bench(ctx: &BenchCtx) -> Result<Vec<Row>> {
    let Some(dev) = ctx.dev else {
        return Ok(vec![skipped_gpu("fft", ctx)]);
    };
    let s = |rows, n, two_d| Spec {
        rows,
        n,
        two_d,
        real: false,
        inverse: false,
    };
    if dev.is_sim() {
        return bench_spec::<f32>(dev, s(45, 28, true), 2, true);
    }
    let reps = ctx.reps();
    let big = if ctx.quick { 1024 } else { 4096 };
    let mut rows = Vec::new();
    rows.extend(bench_spec::<f32>(dev, s(big, big, true), reps, true)?);
    rows.extend(bench_spec::<f64>(dev, s(big, big, true), reps, true)?);
    let long = if ctx.quick { 1 << 20 } else { 1 << 24 };
    rows.extend(bench_spec::<f32>(dev, s(1, long, false), reps, true)?);
    let odd = if ctx.quick {
        (1023, 1025)
    } else {
        (4095, 4097)
    };
    rows.extend(bench_spec::<f32>(dev, s(odd.0, odd.1, true), reps, true)?);
    Ok(rows)
}
