//! `ptxlab matmul`: the command (f32: the SGEMM ladder; the tensor-core
//! precisions go to `tensor_cli.rs`, fp8 to `fp8_cli.rs`).

use super::args::{Args, CPU_MAX_MNK, check_sim_size, product_elems, size_label};
use super::check::{TOL, check_colsum, sample_check, verify};
use super::colsum::{Colsum, ColsumBufs, colsum_of_product};
use super::cpu::{colsum_bytes, cpu_ndarray, cpu_rayon, flops, inputs, reference_f64};
use super::launch::{check_shapes, gemm};
use super::rung::Rung;
use super::tensor::Precision;
use ptxlab_common::cli::timed_row;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::{Row, fmt_ms};
use ptxlab_common::rng::rel_err_norm;
use ptxlab_common::runtime::Timing;

/// `ptxlab matmul`: the rows it measured.
pub fn cli(args: &Args) -> Result<Vec<Row>> {
    let backend = args.backend;
    let (m, n, kk) = check_shapes(args.m, args.k, args.k, args.n)?;
    let precision = args.precision;
    if precision != Precision::Fp8 && (args.scale_a.is_some() || args.scale_b.is_some()) {
        return Err(Error::input(
            "--scale-a/--scale-b",
            "per-tensor scales belong to the FP8 GEMM; use them with --precision fp8",
        ));
    }
    if precision != Precision::Fp8
        && (args.scaling != super::fp8::Fp8Scaling::Tensor
            || args.scale_a_file.is_some()
            || args.scale_b_file.is_some())
    {
        return Err(Error::input(
            "--scaling/--scale-a-file/--scale-b-file",
            "block scales belong to the FP8 GEMM; use them with --precision fp8",
        ));
    }
    if precision == Precision::Fp8 {
        return super::fp8_cli::cli_fp8(args, backend, m, n, kk);
    }
    if precision != Precision::F32 {
        return super::tensor_cli::cli_tensor(args, precision, backend, m, n, kk);
    }
    let rungs: Vec<Rung> = args.variant.pick(precision)?;
    let colsum: Option<Colsum> = args.colsum;
    ptxlab_common::cli::check_reps(args.reps)?;
    check_sim_size(backend, (m, n, kk), ", or --backend cpu")?;
    // A, B, C (and the f64 reference of C, and the device's copies).
    let host_elems = product_elems("C", (m, n, kk))?;
    ptxlab_common::cli::check_host_arrays("--m/--n/--k", host_elems, 4, 4)?;
    if backend == ptxlab_common::Backend::Cpu
        && m.saturating_mul(n).saturating_mul(kk) > CPU_MAX_MNK
    {
        return Err(Error::input(
            "matmul",
            format!(
                "{m}x{n}x{kk} = {} multiply-adds is too large for the one-thread CPU baseline; at \
                 most 2^36 (about a minute): use smaller --m/--n/--k, or --backend gpu",
                m.saturating_mul(n).saturating_mul(kk)
            ),
        ));
    }
    // Before the inputs are made: a missing driver is reported at once.
    let dev = ptxlab_common::cli::open_device(backend)?;
    let (ha, hb) = inputs(m, n, kk, ptxlab_common::cli::DEFAULT_SEED);
    let size = size_label(m, n, kk);
    let gflops = |t: &Timing| flops(m, n, kk) / (t.median_ms * 1e-3) / 1e9;
    let mut rows = Vec::new();
    let dev = match dev {
        Some(d) => d,
        None => {
            let t1 = Timing::host(0, 1, || {
                std::hint::black_box(cpu_ndarray(&ha, &hb, m, n, kk));
            });
            let tr = Timing::host(0, args.reps.min(3), || {
                std::hint::black_box(cpu_rayon(&ha, &hb, m, n, kk));
            });
            for (name, t) in [("ndarray dot, 1 thread", &t1), ("rayon blocked", &tr)] {
                println!(
                    "{name}: {} ms, {:.1} GFLOP/s",
                    fmt_ms(t.median_ms),
                    gflops(t)
                );
                let mut r = timed_row(
                    "matmul",
                    name,
                    "cpu",
                    &size,
                    "f32",
                    t,
                    Some((gflops(t), "GFLOP/s")),
                );
                r.speedup = Some(t1.median_ms / t.median_ms);
                rows.push(r);
            }
            return Ok(rows);
        }
    };
    let a = dev.upload(&ha)?;
    let b = dev.upload(&hb)?;
    let mut c = dev.alloc_filled(m * n, f32::NAN)?;
    let small = m * n * kk <= 1 << 27;
    let want = if small {
        Some(reference_f64(&ha, &hb, m, n, kk))
    } else {
        None
    };
    let reps = if dev.is_sim() { 1 } else { args.reps };
    let backend_name = if dev.is_sim() { "sim" } else { "gpu" };
    for rung in rungs {
        dev.write(&mut c, &vec![f32::NAN; m * n])?;
        gemm(&dev, rung, &a, &b, &mut c, m, n, kk)?;
        let got = dev.download(&c)?;
        let e = match &want {
            Some(w) => rel_err_norm(&got.iter().map(|v| *v as f64).collect::<Vec<_>>(), w),
            None => sample_check(&got, &ha, &hb, m, n, kk),
        };
        verify(
            format!("matmul {} {m}x{n}x{kk}", rung.label()),
            e,
            if small { TOL } else { 1e-3 },
        )?;
        let t = dev.time(1, reps, |_| gemm(&dev, rung, &a, &b, &mut c, m, n, kk))?;
        println!(
            "PASS {} on {}: rel err {e:.1e}, median {} ms, {:.1} GFLOP/s",
            rung.label(),
            dev.name(),
            fmt_ms(t.median_ms),
            gflops(&t)
        );
        let mut r = timed_row(
            "matmul",
            rung.label(),
            backend_name,
            &size,
            "f32",
            &t,
            Some((gflops(&t), "GFLOP/s")),
        );
        r.rel_err = Some(e);
        rows.push(r);
    }
    if let Some(how) = colsum {
        let e = check_colsum(&dev, how, m, n, kk, 42)?;
        verify(format!("column sum {how:?}"), e, 1e-3)?;
        let mut bufs = ColsumBufs::new(&dev, how, m, n, kk)?;
        let t = dev.time(1, reps, |_| {
            colsum_of_product(&dev, how, &a, &b, &mut bufs, m, n, kk)
        })?;
        let gbs = colsum_bytes(m, n, kk) / (t.median_ms * 1e-3) / 1e9;
        println!(
            "PASS column sum {how:?}: rel err {e:.1e}, median {} ms, {gbs:.1} GB/s of the {:.0} MB floor",
            fmt_ms(t.median_ms),
            colsum_bytes(m, n, kk) / 1e6
        );
        let label = format!("colsum {}", ptxlab_common::cli::value_name(&how));
        let mut r = timed_row(
            "matmul",
            &label,
            backend_name,
            &format!("({m}x{kk})({kk}x{n})"),
            "f32",
            &t,
            Some((gbs, "GB/s")),
        );
        r.rel_err = Some(e);
        rows.push(r);
    }
    Ok(rows)
}
