//! `ptxlab matmul --precision fp8`: the FP8 GEMM on a GPU (sm_90) or the
//! simulator, checked against the f64 reference before it is timed.
//!
//! The inputs are the other precisions' random `A` and `B` in `[-1, 1)`,
//! quantised to E4M3 with per-tensor scales (`--scale-a`, `--scale-b`;
//! by default each tensor's largest magnitude over 448), or with
//! `--scaling block` each scale block weighted by a random power of two
//! and quantised with block scales (`--scale-a-file`, `--scale-b-file`;
//! by default each block's largest magnitude over 448: [`fp8_block_inputs`]).
//! `B` is transposed to `B^T` on the host once, before the upload and
//! outside the timing: the kernel reads both operands with `k` contiguous
//! ([`super::fp8`]'s module docs).

use super::args::{Args, check_sim_size, product_elems, size_label};
use super::check::verify;
use super::cpu::flops;
use super::fp8::{
    Fp8BlockScaleBufs, Fp8BlockScales, Fp8Kernel, Fp8Plan, Fp8Scaling, check_scale,
    fp8_shape_refusal,
};
use super::fp8_check::{
    Fp8BlockInputs, Fp8Inputs, fp8_block_error, fp8_block_inputs, fp8_error, fp8_inputs, fp8_tol,
};
use super::tensor::Precision;
use super::tensor_check::POISON_16;
use ptxlab_common::Backend;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::{Row, fmt_ms};

/// `ptxlab matmul --precision fp8`.
pub fn cli_fp8(args: &Args, backend: Backend, m: usize, n: usize, kk: usize) -> Result<Vec<Row>> {
    if args.colsum.is_some() {
        return Err(Error::input(
            "--colsum",
            "the column sum is an f32 workload; use it with --precision f32",
        ));
    }
    let kernels: Vec<Fp8Kernel> = args.variant.pick(Precision::Fp8)?;
    ptxlab_common::cli::check_reps(args.reps)?;
    if backend == Backend::Cpu {
        return Err(Error::input(
            "--backend",
            "cpu has no FP8 kernels (its baselines are f32: --precision f32); use gpu or sim",
        ));
    }
    if let Some(why) = fp8_shape_refusal(kk) {
        return Err(Error::input("--k", why));
    }
    match args.scaling {
        Fp8Scaling::Tensor => {
            if args.scale_a_file.is_some() || args.scale_b_file.is_some() {
                return Err(Error::input(
                    "--scale-a-file/--scale-b-file",
                    "block scales need --scaling block (per-tensor scales are --scale-a and \
                     --scale-b)",
                ));
            }
            for (flag, s) in [("--scale-a", args.scale_a), ("--scale-b", args.scale_b)] {
                if let Some(s) = s {
                    check_scale(flag, s)?;
                }
            }
        }
        Fp8Scaling::Block => {
            if args.scale_a.is_some() || args.scale_b.is_some() {
                return Err(Error::input(
                    "--scale-a/--scale-b",
                    "per-tensor scales do not apply with --scaling block; give block scales with \
                     --scale-a-file and --scale-b-file (or neither, for each block's own)",
                ));
            }
            if args.scale_a_file.is_some() != args.scale_b_file.is_some() {
                return Err(Error::input(
                    "--scale-a-file/--scale-b-file",
                    "give both block-scale files or neither (each block's largest magnitude over \
                     448)",
                ));
            }
        }
    }
    check_sim_size(backend, (m, n, kk), "")?;
    // Host arrays at once: A and B as f32, their codes, D.
    let host_elems = product_elems("D", (m, n, kk))?;
    ptxlab_common::cli::check_host_arrays("--m/--n/--k", host_elems, 4, 2)?;
    let given = block_scale_files(args, (m, n, kk))?;
    let Some(dev) = ptxlab_common::cli::open_device(backend)? else {
        unreachable!("gpu and sim open a device")
    };
    let seed = ptxlab_common::cli::DEFAULT_SEED;
    let shape = (m, n, kk);
    let inputs = match args.scaling {
        Fp8Scaling::Tensor => {
            Inputs::Tensor(fp8_inputs(m, n, kk, seed, (args.scale_a, args.scale_b))?)
        }
        Fp8Scaling::Block => {
            let b = fp8_block_inputs(m, n, kk, seed, given)?;
            let bufs = Fp8BlockScaleBufs::new(&dev, &b.scales, shape)?;
            Inputs::Block(b, bufs)
        }
    };
    let (codes_a, codes_bt) = match &inputs {
        Inputs::Tensor(i) => (&i.a, &i.bt),
        Inputs::Block(b, _) => (&b.a, &b.bt),
    };
    let a = dev.upload(codes_a)?;
    let bt = dev.upload(codes_bt)?;
    let mut d = dev.alloc_filled(m * n, POISON_16)?;
    let full = m.saturating_mul(n).saturating_mul(kk) <= 1 << 27;
    let reps = if dev.is_sim() { 1 } else { args.reps };
    let mut rows = Vec::new();
    for kernel in kernels {
        let label = kernel.label_for(args.scaling);
        let plan = match &inputs {
            Inputs::Tensor(i) => Fp8Plan::new(&dev, kernel, (&a, &bt), shape, i.scales)?,
            Inputs::Block(_, bufs) => {
                Fp8Plan::new_blockscaled(&dev, kernel, (&a, &bt), shape, bufs)?
            }
        };
        match plan.run(&dev, &mut d) {
            Ok(()) => {}
            Err(e @ Error::Runtime(ptxlab_common::runtime::Error::Unsupported { .. })) => {
                println!("SKIP {label}: {}", e.to_string().replace('\n', " "));
                continue;
            }
            Err(e) => return Err(e),
        }
        let what = format!("matmul {label} {m}x{n}x{kk}");
        let got = dev.download(&d)?;
        let e = match &inputs {
            Inputs::Tensor(i) => fp8_error(&what, &got, i, m, n, kk, full)?,
            Inputs::Block(b, _) => fp8_block_error(&what, &got, b, m, n, kk, full)?,
        };
        verify(what, e, fp8_tol())?;
        let t = dev.time(1, reps, |_| plan.run(&dev, &mut d))?;
        let ms = t.median_ms;
        let tflops = flops(m, n, kk) / (ms * 1e-3) / 1e12;
        let scales = match &inputs {
            Inputs::Tensor(i) => format!("scale_a {:e}, scale_b {:e}", i.scales.a, i.scales.b),
            Inputs::Block(..) => "block scales 1x128 and 128x128".to_string(),
        };
        println!(
            "PASS {label} on {}: rel err {e:.1e}, median {} ms, {tflops:.1} TFLOP/s ({scales})",
            dev.name(),
            fmt_ms(ms),
        );
        let mut r = ptxlab_common::cli::timed_row(
            "matmul",
            &label,
            if dev.is_sim() { "sim" } else { "gpu" },
            &format!("{}{}", size_label(m, n, kk), args.scaling.size_words()),
            "fp8",
            &t,
            Some((tflops * 1e3, "GFLOP/s")),
        );
        r.rel_err = Some(e);
        rows.push(r);
    }
    Ok(rows)
}

/// The inputs of one run: quantised with per-tensor scales, or with block
/// scales (and those on the device).
enum Inputs {
    Tensor(Fp8Inputs),
    Block(Fp8BlockInputs, Fp8BlockScaleBufs),
}

/// The block scales of `--scale-a-file` and `--scale-b-file` (float32
/// `.npy`, shapes `(m, ceil(k / 128))` and `(ceil(n / 128), ceil(k /
/// 128))`), checked ([`Fp8BlockScales::check`]); `None` when not given.
fn block_scale_files(
    args: &Args,
    (m, n, kk): (usize, usize, usize),
) -> Result<Option<Fp8BlockScales>> {
    let (Some(pa), Some(pb)) = (&args.scale_a_file, &args.scale_b_file) else {
        return Ok(None);
    };
    let ((ra, ca), (rb, cb)) = Fp8BlockScales::shapes(m, n, kk);
    let read = |flag: &str, p: &std::path::Path, (r, c): (usize, usize)| -> Result<Vec<f32>> {
        let want = format!("a float32 array of shape ({r}, {c})");
        let (rows, cols, v) = ptxlab_common::npy::read_2d::<f32>(p, &want)?;
        if (rows, cols) != (r, c) {
            return Err(Error::input(
                flag,
                format!(
                    "{} holds a ({rows}, {cols}) array; a {m}x{n}x{kk} product's block scales are \
                     {want}",
                    p.display()
                ),
            ));
        }
        Ok(v)
    };
    let scales = Fp8BlockScales {
        a: read("--scale-a-file", pa, (ra, ca))?,
        b: read("--scale-b-file", pb, (rb, cb))?,
    };
    scales.check(m, n, kk)?;
    Ok(Some(scales))
}
