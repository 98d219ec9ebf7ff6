//! Benchmark rows of the tensor-core ladder: every BF16/FP16 rung and the
//! 3xTF32 kernels at 4096^3, 8192^3 and the material's shape (quick:
//! 2048^3), each checked first (at an odd size against the f64 reference,
//! then at the benchmark size: every element written, sampled entries
//! against f64), then timed with device events; and the SGEMM rung 4g at
//! the same shapes, the f32 baseline the 3xTF32 rows are compared with.

use super::check::{TOL, first_unwritten, sample_check, verify};
use super::cpu::{flops, inputs};
use super::launch::gemm;
use super::rung::Rung;
use super::tensor::{Half, HalfPlan, TcRung, Tf32x3, Tf32x3Plan, tf32x3_scratch};
use super::tensor_check::{POISON_16, check_half, check_tf32x3, verify_tf32x3, widen};
use ptxlab_common::bench_ctx::BenchCtx;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::{Row, Status};
use ptxlab_common::runtime::{Buffer, Device, Timing};

/// The shapes `(m, n, k)` of the tensor-core rows.
pub fn tensor_shapes(quick: bool) -> Vec<(usize, usize, usize)> {
    if quick {
        vec![(2048, 2048, 2048)]
    } else {
        vec![(4096, 4096, 4096), (8192, 8192, 8192), (10000, 7000, 5000)]
    }
}

fn size_label(m: usize, n: usize, kk: usize) -> String {
    if m == n && n == kk {
        format!("{m}^3")
    } else {
        format!("({m}x{kk})({kk}x{n})")
    }
}

/// Timed repetitions for a call that took `ms` once: about 2 s per row at most.
fn reps_for(ms: f64, max: usize) -> usize {
    ((2000.0 / ms.max(1e-3)) as usize).clamp(3, max.max(3))
}

/// One row: the odd-size check's outcome, then at the benchmark size a
/// first call into `c`, the full-output and sampled checks (`check`
/// returns the sampled error or why it fails), and the timing of `call`.
#[allow(clippy::too_many_arguments)]
pub(super) fn measure<T>(
    ctx: &BenchCtx,
    dev: &Device,
    row: &mut Row,
    odd: &Result<f64>,
    kernel: &str,
    flop: f64,
    c: &mut Buffer<T>,
    mut call: impl FnMut(&mut Buffer<T>) -> Result<()>,
    check: impl FnOnce(&Buffer<T>) -> Result<std::result::Result<f64, String>>,
) -> Result<()> {
    let arch = dev.as_gpu().map(|g| g.info().arch()).unwrap_or_default();
    // Hopper kernels are reported for the arch-specific target (sm_90a).
    let res = ptxlab_common::modules::resource(kernel, &arch, false)
        .or_else(|| ptxlab_common::modules::resource(kernel, &format!("{arch}a"), false));
    if let Some(res) = res {
        row.registers = Some(res.registers);
        row.spills = Some(res.spill_stores + res.spill_loads);
    }
    match odd {
        Ok(e) => row.rel_err = Some(*e),
        Err(e) => {
            row.status = Status::Failed(e.to_string());
            return Ok(());
        }
    }
    let t0 = std::time::Instant::now();
    if let Err(e) = call(c).and_then(|()| Ok(dev.synchronize()?)) {
        row.status = status_of(e);
        return Ok(());
    }
    let first = t0.elapsed().as_secs_f64() * 1e3;
    row.first_ms = Some(first);
    if let Err(why) = check(c)? {
        row.status = Status::Failed(why);
        return Ok(());
    }
    let t: Timing = match dev.time(1, reps_for(first, ctx.reps()), |_| call(c)) {
        Ok(t) => t,
        Err(e) => {
            row.status = Status::Failed(e.to_string());
            return Ok(());
        }
    };
    row.throughput = Some(flop / (t.median_ms * 1e-3) / 1e9);
    row.unit = "GFLOP/s".into();
    row.timing = Some(t);
    Ok(())
}

/// A failure's row status: skipped (with the one-line reason) when this
/// GPU cannot run the kernel at all (an sm_90a kernel elsewhere), failed
/// otherwise.
pub(super) fn status_of(e: Error) -> Status {
    match e {
        Error::Runtime(ptxlab_common::runtime::Error::Unsupported { .. }) => {
            Status::Skipped(e.to_string().replace('\n', " "))
        }
        e => Status::Failed(e.to_string()),
    }
}

/// The sampled error of a product, or why it fails: a poisoned (NaN)
/// element anywhere, or sampled entries off by more than `tol`.
#[allow(clippy::too_many_arguments)]
fn judge(
    got: &[f32],
    a: &[f32],
    b: &[f32],
    m: usize,
    n: usize,
    kk: usize,
    tol: f64,
) -> std::result::Result<f64, String> {
    if let Some(why) = first_unwritten(got, n) {
        return Err(why);
    }
    let e = sample_check(got, a, b, m, n, kk);
    if !(e <= tol) {
        return Err(format!(
            "64 sampled entries: relative error {e:.2e} > {tol:.0e}"
        ));
    }
    Ok(e)
}

/// The tensor-core rows (and SGEMM rung 4g at the same shapes) on `dev`.
pub fn bench_tensor(ctx: &BenchCtx, dev: &Device, rows: &mut Vec<Row>) -> Result<()> {
    let (om, on, ok) = (517, 389, 301);
    let odd_half: Vec<(Half, TcRung, Result<f64>)> = Half::ALL
        .iter()
        .flat_map(|&h| TcRung::ALL.map(|r| (h, r)))
        .map(|(h, r)| {
            // Every rung at the odd shape (the TMA rungs stage both operands).
            let e = check_half(dev, r, h, om, on, ok, 3).and_then(|e| {
                verify(
                    format!("matmul {} {} {om}x{on}x{ok}", h.name(), r.label()),
                    e,
                    h.tol(),
                )
            });
            (h, r, e)
        })
        .collect();
    let odd_tf32: Vec<(Tf32x3, Result<f64>)> = Tf32x3::ALL
        .into_iter()
        .map(|v| {
            let ok = if v.uses_tma() { 304 } else { ok };
            let e = check_tf32x3(dev, v, om, on, ok, 3)
                .and_then(|e| verify(format!("matmul {} {om}x{on}x{ok}", v.label()), e, TOL));
            (v, e)
        })
        .collect();
    for (m, n, kk) in tensor_shapes(ctx.quick) {
        let size = size_label(m, n, kk);
        let flop = flops(m, n, kk);
        let (fa, fb) = inputs(m, n, kk, 7);
        for half in Half::ALL {
            let ha: Vec<u16> = fa.iter().map(|x| half.from_f32(*x)).collect();
            let hb: Vec<u16> = fb.iter().map(|x| half.from_f32(*x)).collect();
            let (wa, wb) = (widen(half, &ha), widen(half, &hb));
            let a = dev.upload(&ha)?;
            let b = dev.upload(&hb)?;
            let mut c: Buffer<u16> = dev.alloc_filled(m * n, POISON_16)?;
            for (_, rung, odd) in odd_half.iter().filter(|(h, _, _)| *h == half) {
                let mut row = Row::new("matmul", rung.label(), "gpu", &size, half.name());
                dev.write(&mut c, &vec![POISON_16; m * n])?;
                let mut plan = match HalfPlan::new(dev, *rung, half, &a, &b, m, n, kk) {
                    Ok(p) => p,
                    Err(e) => {
                        row.status = status_of(e);
                        rows.push(row);
                        continue;
                    }
                };
                measure(
                    ctx,
                    dev,
                    &mut row,
                    odd,
                    rung.entry(half),
                    flop,
                    &mut c,
                    |c| plan.run(dev, c),
                    |c| {
                        let got = widen(half, &dev.download(c)?);
                        Ok(judge(&got, &wa, &wb, m, n, kk, half.tol()))
                    },
                )?;
                rows.push(row);
            }
        }
        let a = dev.upload(&fa)?;
        let b = dev.upload(&fb)?;
        let mut c = dev.alloc_filled(m * n, f32::NAN)?;
        let f32_check = |c: &Buffer<f32>| Ok(judge(&dev.download(c)?, &fa, &fb, m, n, kk, 1e-4));
        for (v, odd) in &odd_tf32 {
            // Every element written, then 64 sampled entries against the
            // element-wise 3xTF32 bound and, by norm, against TOL.
            let tf32_check = |c: &Buffer<f32>| {
                let what = format!("matmul {} {size}", v.label());
                let got = dev.download(c)?;
                Ok(verify_tf32x3(&what, *v, &got, &fa, &fb, m, n, kk, false)
                    .and_then(|e| verify(what.clone(), e, TOL))
                    .map_err(|e| e.to_string()))
            };
            let mut row = Row::new("matmul", v.label(), "gpu", &size, "f32");
            dev.write(&mut c, &vec![f32::NAN; m * n])?;
            let mut scratch = if v.uses_tma() {
                Some(tf32x3_scratch(dev, m, n, kk)?)
            } else {
                None
            };
            let mut plan = match Tf32x3Plan::new(dev, *v, &a, &b, scratch.as_mut(), m, n, kk) {
                Ok(p) => p,
                Err(e) => {
                    row.status = status_of(e);
                    rows.push(row);
                    continue;
                }
            };
            measure(
                ctx,
                dev,
                &mut row,
                odd,
                v.entry(),
                flop,
                &mut c,
                |c| plan.run(dev, c),
                tf32_check,
            )?;
            rows.push(row);
        }
        // The f32 baseline of the 3xTF32 rows: SGEMM rung 4g, same inputs
        // (its odd-size check is the SGEMM rows').
        let best = Rung::BEST;
        let mut row = Row::new("matmul", best.label(), "gpu", &size, "f32");
        dev.write(&mut c, &vec![f32::NAN; m * n])?;
        measure(
            ctx,
            dev,
            &mut row,
            &Ok(f64::NAN),
            best.entry(),
            flop,
            &mut c,
            |c| gemm(dev, best, &a, &b, c, m, n, kk),
            f32_check,
        )?;
        row.rel_err = None;
        rows.push(row);
    }
    Ok(())
}
