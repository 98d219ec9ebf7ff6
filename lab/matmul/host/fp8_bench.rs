//! Benchmark rows of the FP8 GEMM (`matmul`, precision `fp8`): checked at
//! an odd shape against the full f64 reference, then at each benchmark
//! shape (every element written, 64 sampled entries against f64), then
//! timed with device events. The shapes are those of the `torch._scaled_mm`
//! peer (`peers/matmul.py`), so the two sit side by side. Block-scaled rows
//! ([`fp8_block_shapes`]) carry `block-scaled` in their size, so they are
//! their own problem and meet only the peer's block-scaled rows.

use super::check::verify;
use super::cpu::flops;
use super::fp8::{Fp8BlockScaleBufs, Fp8Kernel, Fp8Plan, Fp8Scaling};
use super::fp8_check::{
    check_fp8, check_fp8_block, fp8_block_error, fp8_block_inputs, fp8_error, fp8_inputs, fp8_tol,
};
use super::tensor_bench::{measure, status_of};
use super::tensor_check::POISON_16;
use ptxlab_common::bench_ctx::BenchCtx;
use ptxlab_common::error::Result;
use ptxlab_common::report::Row;
use ptxlab_common::runtime::{Buffer, Device};

/// The shapes `(m, n, k)` of the FP8 rows (quick: 2048^3).
pub fn fp8_shapes(quick: bool) -> Vec<(usize, usize, usize)> {
    if quick {
        vec![(2048, 2048, 2048)]
    } else {
        vec![
            (4096, 4096, 4096),
            (8192, 8192, 8192),
            (16384, 4096, 4096),
            (4096, 7168, 16384),
        ]
    }
}

/// The shapes `(m, n, k)` of the block-scaled FP8 rows (quick: 2048^3).
pub fn fp8_block_shapes(quick: bool) -> Vec<(usize, usize, usize)> {
    if quick {
        vec![(2048, 2048, 2048)]
    } else {
        vec![(4096, 4096, 4096), (8192, 8192, 8192)]
    }
}

/// The FP8 rows on `dev`: per-tensor scales, then block scales.
pub fn bench_fp8(ctx: &BenchCtx, dev: &Device, rows: &mut Vec<Row>) -> Result<()> {
    let odd = (517, 389, 304);
    let checked: Vec<(Fp8Kernel, Result<f64>)> = Fp8Kernel::ALL
        .into_iter()
        .map(|kernel| {
            let e = check_fp8(dev, kernel, odd, None, 3).and_then(|e| {
                let (m, n, kk) = odd;
                verify(
                    format!("matmul {} {m}x{n}x{kk}", kernel.label()),
                    e,
                    fp8_tol(),
                )
            });
            (kernel, e)
        })
        .collect();
    for (m, n, kk) in fp8_shapes(ctx.quick) {
        let size = super::args::size_label(m, n, kk);
        let inp = fp8_inputs(m, n, kk, 7, (None, None))?;
        let a = dev.upload(&inp.a)?;
        let bt = dev.upload(&inp.bt)?;
        let mut d: Buffer<u16> = dev.alloc_filled(m * n, POISON_16)?;
        for (kernel, odd) in &checked {
            let mut row = Row::new("matmul", kernel.label(), "gpu", &size, "fp8");
            let plan = match Fp8Plan::new(dev, *kernel, (&a, &bt), (m, n, kk), inp.scales) {
                Ok(p) => p,
                Err(e) => {
                    row.status = status_of(e);
                    rows.push(row);
                    continue;
                }
            };
            let what = format!("matmul {} {size}", kernel.label());
            measure(
                ctx,
                dev,
                &mut row,
                odd,
                kernel.entry(),
                flops(m, n, kk),
                &mut d,
                |d| plan.run(dev, d),
                |d| {
                    let got = dev.download(d)?;
                    Ok(fp8_error(&what, &got, &inp, m, n, kk, false)
                        .and_then(|e| verify(what.clone(), e, fp8_tol()))
                        .map_err(|e| e.to_string()))
                },
            )?;
            rows.push(row);
        }
    }
    bench_fp8_block(ctx, dev, rows)
}

/// The block-scaled FP8 rows on `dev` (checked at an odd shape first).
fn bench_fp8_block(ctx: &BenchCtx, dev: &Device, rows: &mut Vec<Row>) -> Result<()> {
    let odd = (517, 389, 304);
    let scaling = Fp8Scaling::Block;
    let checked: Vec<(Fp8Kernel, Result<f64>)> = Fp8Kernel::ALL
        .into_iter()
        .map(|kernel| {
            let e = check_fp8_block(dev, kernel, odd, 3).and_then(|e| {
                let (m, n, kk) = odd;
                verify(
                    format!("matmul {} {m}x{n}x{kk}", kernel.label_for(scaling)),
                    e,
                    fp8_tol(),
                )
            });
            (kernel, e)
        })
        .collect();
    for (m, n, kk) in fp8_block_shapes(ctx.quick) {
        let size = format!(
            "{}{}",
            super::args::size_label(m, n, kk),
            scaling.size_words()
        );
        let inp = fp8_block_inputs(m, n, kk, 7, None)?;
        let a = dev.upload(&inp.a)?;
        let bt = dev.upload(&inp.bt)?;
        let bufs = Fp8BlockScaleBufs::new(dev, &inp.scales, (m, n, kk))?;
        let mut d: Buffer<u16> = dev.alloc_filled(m * n, POISON_16)?;
        for (kernel, odd) in &checked {
            let label = kernel.label_for(scaling);
            let mut row = Row::new("matmul", &label, "gpu", &size, "fp8");
            let plan = match Fp8Plan::new_blockscaled(dev, *kernel, (&a, &bt), (m, n, kk), &bufs) {
                Ok(p) => p,
                Err(e) => {
                    row.status = status_of(e);
                    rows.push(row);
                    continue;
                }
            };
            let what = format!("matmul {label} {size}");
            measure(
                ctx,
                dev,
                &mut row,
                odd,
                kernel.entry_for(scaling),
                flops(m, n, kk),
                &mut d,
                |d| plan.run(dev, d),
                |d| {
                    let got = dev.download(d)?;
                    Ok(fp8_block_error(&what, &got, &inp, m, n, kk, false)
                        .and_then(|e| verify(what.clone(), e, fp8_tol()))
                        .map_err(|e| e.to_string()))
                },
            )?;
            rows.push(row);
        }
    }
    Ok(())
}
