//! `ptxlab matmul --precision fp8`: the FP8 GEMM on a GPU (sm_90) or the
//! simulator, checked against the f64 reference before it is timed.
//!
//! The inputs are the other precisions' random `A` and `B` in `[-1, 1)`,
//! quantised to E4M3 with per-tensor scales (`--scale-a`, `--scale-b`;
//! by default each tensor's largest magnitude over 448). `B` is transposed
//! to `B^T` on the host once, before the upload and outside the timing:
//! the kernel reads both operands with `k` contiguous
//! ([`super::fp8`]'s module docs).

use super::args::{Args, SIM_MAX_MNK, size_label};
use super::check::verify;
use super::cpu::flops;
use super::fp8::{Fp8Kernel, Fp8Plan, check_scale, fp8_shape_refusal};
use super::fp8_check::{fp8_error, fp8_inputs, fp8_tol};
use super::launch::elems;
use super::tensor::Precision;
use super::tensor_check::POISON_16;
use crate::Backend;
use crate::error::{Error, Result};
use crate::report::{Row, fmt_ms};

/// `ptxlab matmul --precision fp8`.
pub fn cli_fp8(args: &Args, backend: Backend, m: usize, n: usize, kk: usize) -> Result<Vec<Row>> {
    if args.colsum.is_some() {
        return Err(Error::input(
            "--colsum",
            "the column sum is an f32 workload; use it with --precision f32",
        ));
    }
    let kernels: Vec<Fp8Kernel> = args.variant.pick(Precision::Fp8)?;
    crate::cli::check_reps(args.reps)?;
    if backend == Backend::Cpu {
        return Err(Error::input(
            "--backend",
            "cpu has no FP8 kernels (its baselines are f32: --precision f32); use gpu or sim",
        ));
    }
    if let Some(why) = fp8_shape_refusal(kk) {
        return Err(Error::input("--k", why));
    }
    for (flag, s) in [("--scale-a", args.scale_a), ("--scale-b", args.scale_b)] {
        if let Some(s) = s {
            check_scale(flag, s)?;
        }
    }
    if backend == Backend::Sim && m.saturating_mul(n).saturating_mul(kk) > SIM_MAX_MNK {
        return Err(Error::input(
            "matmul",
            format!(
                "{m}x{n}x{kk} is too large for the simulator; use m*n*k <= 2^27 (e.g. --m 512 --n 512 \
                 --k 512)"
            ),
        ));
    }
    // Host arrays at once: A and B as f32, their codes, D.
    let host_elems = [elems("A", m, kk)?, elems("B", kk, n)?, elems("D", m, n)?]
        .iter()
        .try_fold(0usize, |a, &b| a.checked_add(b))
        .ok_or_else(|| {
            Error::input(
                "--m/--n/--k",
                "A, B and D together overflow the address space",
            )
        })?;
    crate::cli::check_host_arrays("--m/--n/--k", host_elems, 4, 2)?;
    let Some(dev) = crate::cli::open_device(backend)? else {
        unreachable!("gpu and sim open a device")
    };
    let inp = fp8_inputs(
        m,
        n,
        kk,
        crate::cli::DEFAULT_SEED,
        (args.scale_a, args.scale_b),
    )?;
    let a = dev.upload(&inp.a)?;
    let bt = dev.upload(&inp.bt)?;
    let mut d = dev.alloc_filled(m * n, POISON_16)?;
    let full = m.saturating_mul(n).saturating_mul(kk) <= 1 << 27;
    let reps = if dev.is_sim() { 1 } else { args.reps };
    let mut rows = Vec::new();
    for kernel in kernels {
        let label = kernel.label();
        let plan = Fp8Plan::new(&dev, kernel, (&a, &bt), (m, n, kk), inp.scales)?;
        match plan.run(&dev, &mut d) {
            Ok(()) => {}
            Err(e @ Error::Runtime(crate::runtime::Error::Unsupported { .. })) => {
                println!("SKIP {label}: {}", e.to_string().replace('\n', " "));
                continue;
            }
            Err(e) => return Err(e),
        }
        let what = format!("matmul {label} {m}x{n}x{kk}");
        let e = fp8_error(&what, &dev.download(&d)?, &inp, m, n, kk, full)?;
        verify(what, e, fp8_tol())?;
        let t = dev.time(1, reps, |_| plan.run(&dev, &mut d))?;
        let ms = t.median_ms;
        let tflops = flops(m, n, kk) / (ms * 1e-3) / 1e12;
        println!(
            "PASS {label} on {}: rel err {e:.1e}, median {} ms, {tflops:.1} TFLOP/s (scale_a {:e}, \
             scale_b {:e})",
            dev.name(),
            fmt_ms(ms),
            inp.scales.a,
            inp.scales.b
        );
        let mut r = crate::cli::timed_row(
            "matmul",
            label,
            if dev.is_sim() { "sim" } else { "gpu" },
            &size_label(m, n, kk),
            "fp8",
            &t,
            Some((tflops * 1e3, "GFLOP/s")),
        );
        r.rel_err = Some(e);
        rows.push(r);
    }
    Ok(rows)
}
