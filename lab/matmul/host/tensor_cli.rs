//! `ptxlab matmul --precision bf16|f16|tf32x3`: the tensor-core ladder on a
//! GPU or the simulator, each kernel checked against the f64 reference
//! before it is timed.

use super::args::{Args, Variant, check_sim_size, product_elems};
use super::check::{TOL, sample_check, verify};
use super::cpu::{flops, inputs, reference_f64};
use super::tensor::{Half, HalfPlan, Precision, TcRung, Tf32x3, Tf32x3Plan, tf32x3_scratch};
use super::tensor_check::{POISON_16, verify_tf32x3, widen};
use ptxlab_common::Backend;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::fmt_ms;
use ptxlab_common::rng::rel_err_norm;
use ptxlab_common::runtime::{Buffer, Device};

/// The error of `got` against the full f64 reference (`want`, small
/// problems) or 64 sampled entries (large ones), with every element
/// required to be written.
fn error_of(
    got: &[f32],
    a: &[f32],
    b: &[f32],
    want: Option<&[f64]>,
    m: usize,
    n: usize,
    kk: usize,
) -> f64 {
    if got.iter().any(|v| !v.is_finite()) {
        return f64::NAN;
    }
    match want {
        Some(w) => rel_err_norm(&got.iter().map(|v| *v as f64).collect::<Vec<_>>(), w),
        None => sample_check(got, a, b, m, n, kk),
    }
}

/// Prints one PASS line and returns its row (`precision` as rows name
/// it), or returns the verification error.
#[allow(clippy::too_many_arguments)]
fn report(
    dev: &Device,
    label: &str,
    precision: &str,
    e: f64,
    tol: f64,
    t: &ptxlab_common::runtime::Timing,
    m: usize,
    n: usize,
    kk: usize,
) -> Result<ptxlab_common::report::Row> {
    verify(format!("matmul {label} {m}x{n}x{kk}"), e, tol)?;
    let ms = t.median_ms;
    println!(
        "PASS {label} on {}: rel err {e:.1e}, median {} ms, {:.1} TFLOP/s",
        dev.name(),
        fmt_ms(ms),
        flops(m, n, kk) / (ms * 1e-3) / 1e12
    );
    let mut r = ptxlab_common::cli::timed_row(
        "matmul",
        label,
        if dev.is_sim() { "sim" } else { "gpu" },
        &super::args::size_label(m, n, kk),
        precision,
        t,
        Some((flops(m, n, kk) / (ms * 1e-3) / 1e9, "GFLOP/s")),
    );
    r.rel_err = Some(e);
    Ok(r)
}

/// `ptxlab matmul --precision bf16|f16|tf32x3`.
pub fn cli_tensor(
    args: &Args,
    precision: Precision,
    backend: Backend,
    m: usize,
    n: usize,
    kk: usize,
) -> Result<Vec<ptxlab_common::report::Row>> {
    if args.colsum.is_some() {
        return Err(Error::input(
            "--colsum",
            "the column sum is an f32 workload; use it with --precision f32",
        ));
    }
    ptxlab_common::cli::check_reps(args.reps)?;
    if backend == Backend::Cpu {
        return Err(Error::input(
            "--backend",
            "cpu has no tensor-core kernels (its baselines are f32: --precision f32); use gpu or sim",
        ));
    }
    check_sim_size(backend, (m, n, kk), "")?;
    // Host arrays: A, B, C as f32 plus their 16-bit copies.
    let host_elems = product_elems("C", (m, n, kk))?;
    ptxlab_common::cli::check_host_arrays("--m/--n/--k", host_elems, 4, 3)?;
    let Some(dev) = ptxlab_common::cli::open_device(backend)? else {
        unreachable!("gpu and sim open a device")
    };
    let (fa, fb) = inputs(m, n, kk, ptxlab_common::cli::DEFAULT_SEED);
    let mut rows = Vec::new();
    let small = m.saturating_mul(n).saturating_mul(kk) <= 1 << 27;
    let reps = if dev.is_sim() { 1 } else { args.reps };
    let all = args.variant == Variant::ALL;
    match (precision, precision.half()) {
        (_, Some(half)) => {
            let rungs: Vec<TcRung> = args.variant.pick(precision)?;
            let ha: Vec<u16> = fa.iter().map(|x| half.from_f32(*x)).collect();
            let hb: Vec<u16> = fb.iter().map(|x| half.from_f32(*x)).collect();
            let (wa, wb) = (widen(half, &ha), widen(half, &hb));
            let want = small.then(|| reference_f64(&wa, &wb, m, n, kk));
            let a = dev.upload(&ha)?;
            let b = dev.upload(&hb)?;
            let mut c: Buffer<u16> = dev.alloc_filled(m * n, POISON_16)?;
            for rung in rungs {
                let label = format!("{} {}", half_name(half), rung.label());
                // Every rung takes every shape: the TMA rungs' plans stage an
                // operand whose rows are not on 16-byte boundaries.
                dev.write(&mut c, &vec![POISON_16; m * n])?;
                let mut plan = HalfPlan::new(&dev, rung, half, &a, &b, m, n, kk)?;
                if skipped(&label, plan.run(&dev, &mut c))? {
                    continue;
                }
                let got = widen(half, &dev.download(&c)?);
                let e = error_of(&got, &wa, &wb, want.as_deref(), m, n, kk);
                let t = dev.time(1, reps, |_| plan.run(&dev, &mut c))?;
                rows.push(report(
                    &dev,
                    &label,
                    half.name(),
                    e,
                    half.tol(),
                    &t,
                    m,
                    n,
                    kk,
                )?);
            }
        }
        (Precision::Tf32x3, _) => {
            let variants: Vec<Tf32x3> = args.variant.pick(precision)?;
            let a = dev.upload(&fa)?;
            let b = dev.upload(&fb)?;
            let mut c = dev.alloc_filled(m * n, f32::NAN)?;
            for v in variants {
                if not_for_shape(v.label(), all, v.shape_refusal(kk)) {
                    continue;
                }
                dev.write(&mut c, &vec![f32::NAN; m * n])?;
                let mut scratch = if v.uses_tma() {
                    Some(tf32x3_scratch(&dev, m, n, kk)?)
                } else {
                    None
                };
                let mut plan = Tf32x3Plan::new(&dev, v, &a, &b, scratch.as_mut(), m, n, kk)?;
                if skipped(v.label(), plan.run(&dev, &mut c))? {
                    continue;
                }
                let got = dev.download(&c)?;
                // Element-wise against the 3xTF32 bound: every element when
                // the full reference is affordable, else 64 sampled ones.
                let what = format!("matmul {} {m}x{n}x{kk}", v.label());
                let e = verify_tf32x3(&what, v, &got, &fa, &fb, m, n, kk, small)?;
                let t = dev.time(1, reps, |_| plan.run(&dev, &mut c))?;
                rows.push(report(&dev, v.label(), "f32", e, TOL, &t, m, n, kk)?);
            }
        }
        (_, None) => unreachable!("f32 runs the SGEMM ladder"),
    }
    Ok(rows)
}

/// With `--variant all`, `true` after printing the row of a kernel that
/// cannot take the shape (`label: not for this shape: <why>`), so the rest
/// of the ladder runs and the command succeeds. A kernel named on its own
/// is refused with the error instead (its plan returns it).
fn not_for_shape(label: &str, all: bool, why: Option<String>) -> bool {
    match why {
        Some(why) if all => {
            println!("{label}: not for this shape: {why}");
            true
        }
        _ => false,
    }
}

/// `Ok(true)` after printing a SKIP line when the kernel cannot run on this
/// GPU (an sm_90a kernel elsewhere); other errors pass through.
fn skipped(label: &str, first: Result<()>) -> Result<bool> {
    match first {
        Ok(()) => Ok(false),
        Err(e @ Error::Runtime(ptxlab_common::runtime::Error::Unsupported { .. })) => {
            println!("SKIP {label}: {}", e.to_string().replace('\n', " "));
            Ok(true)
        }
        Err(e) => Err(e),
    }
}

fn half_name(half: Half) -> &'static str {
    match half {
        Half::Bf16 => "BF16",
        Half::F16 => "FP16",
    }
}
