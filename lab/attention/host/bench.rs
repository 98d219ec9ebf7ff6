//! The benchmark rows: every rung at the shapes (BF16; FP16 at the
//! first), each checked first at an odd shape against the full f64
//! reference, then at the benchmark shape (every output written, sampled
//! rows against f64: the same rows and measures as the torch peers in
//! `peers/attention.py`), then timed with device events. Then the backward
//! pass at [`bench_backward_shapes`], timed alone. Then grouped-query
//! attention ([`bench_gqa_shapes`]): every rung and the backward pass with
//! fewer `K`/`V` heads than query heads, against torch's `enable_gqa=True`.
//! Then a sliding window ([`bench_window_shapes`]), forward and backward,
//! against torch's SDPA with the band as a mask and `flex_attention`. Then
//! a packed variable-length batch ([`bench_packed_lengths`]), forward and
//! backward, against `flex_attention` with a document mask and torch's
//! `varlen_attn`.

use super::backward::BwdRung;
use super::check::{bound, check_rung, errors};
use super::cpu::POISON_16;
use super::cpu::{all_rows, generated, reference, round_checked, sample_rows, widen};
use super::fp8::{FP8_LABEL, Fp8Plan, check_fp8, fp8_entry, fp8_refuses};
use super::launch::{Inputs, Plan, entry};
use super::packed::Packed;
use super::types::{NAME, Precision, Rung, Shape};
use ptxlab_common::bench_ctx::BenchCtx;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::{Row, Status};
use ptxlab_common::runtime::Device;

/// The benchmark shapes `(batch, heads, seq, dim)`, each non-causal and
/// causal: the (quick: one small one).
pub fn bench_shapes(quick: bool) -> Vec<(usize, usize, usize, usize)> {
    if quick {
        vec![(1, 8, 2048, 128)]
    } else {
        vec![(4, 16, 8192, 128), (4, 32, 8192, 64), (2, 16, 4096, 256)]
    }
}

/// The grouped-query shapes `(batch, heads, kv_heads, seq, dim)`, each
/// non-causal and causal, BF16, forward (every rung) and backward: Llama
/// 3's 4:1 grouping at the size (quick: one small one).
/// `peers/attention.py` times torch's `enable_gqa=True` at the same.
pub fn bench_gqa_shapes(quick: bool) -> Vec<(usize, usize, usize, usize, usize)> {
    if quick {
        vec![(1, 8, 2, 2048, 128)]
    } else {
        vec![(2, 32, 8, 4096, 128), (1, 32, 8, 8192, 128)]
    }
}

/// The sliding-window shapes `(batch, heads, seq, dim, window)`, each
/// non-causal and causal, BF16, forward (every rung; rungs 3-5 report that
/// they do not take a window) and backward (quick: one small one).
/// `peers/attention.py` times torch's SDPA with the band as a boolean
/// mask, and `flex_attention`, at the same.
pub fn bench_window_shapes(quick: bool) -> Vec<(usize, usize, usize, usize, usize)> {
    if quick {
        vec![(1, 8, 2048, 128, 256)]
    } else {
        vec![(4, 16, 8192, 128, 1024)]
    }
}

/// The odd shape checked against the full f64 reference before a row at
/// `shape`: 300 queries, 333 keys, grouped like `shape` when it is, and
/// with its window (at most 97 keys, so that the band crosses tiles).
fn odd_shape(shape: &Shape) -> Result<Shape> {
    let odd = if shape.group() > 1 {
        Shape::new(1, 4, 300, 333, shape.d, shape.causal, None)?.with_kv_heads(2)?
    } else {
        Shape::new(1, 3, 300, 333, shape.d, shape.causal, None)?
    };
    match shape.window {
        Some(w) => odd.with_window(w.min(97)),
        None => Ok(odd),
    }
}

/// Timed repetitions for a call that took `ms` once: about 2 s per row.
fn reps_for(ms: f64, max: usize) -> usize {
    ((2000.0 / ms.max(1e-3)) as usize).clamp(3, max.max(3))
}

/// A failure's row status: skipped when this GPU cannot run the kernel
/// (an sm_90a kernel elsewhere) or the rung does not take the shape,
/// failed otherwise.
fn status_of(e: Error) -> Status {
    match e {
        Error::Runtime(ptxlab_common::runtime::Error::Unsupported { .. }) => {
            Status::Skipped(e.to_string().replace('\n', " "))
        }
        Error::Runtime(ptxlab_common::runtime::Error::Input { .. })
            if e.to_string().contains("not for this") =>
        {
            Status::Skipped(e.to_string())
        }
        e => Status::Failed(e.to_string()),
    }
}

/// The attention rows on `ctx`'s GPU (one "skipped" row without one).
pub fn bench(ctx: &BenchCtx) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let Some(dev) = ctx.gpu() else {
        rows.push(ptxlab_common::bench_ctx::skipped_gpu(NAME, ctx));
        return Ok(rows);
    };
    for (si, (b, h, s, d)) in bench_shapes(ctx.quick).into_iter().enumerate() {
        let precs: &[Precision] = if si == 0 {
            &Precision::ALL
        } else {
            &[Precision::Bf16]
        };
        for &prec in precs {
            for causal in [false, true] {
                let shape = Shape::new(b, h, s, s, d, causal, None)?;
                bench_shape(ctx, dev, &shape, prec, &mut rows)?;
                // FP8 beside BF16 where it runs (D = 128).
                if prec == Precision::Bf16 && d == 128 {
                    bench_fp8(ctx, dev, &shape, &mut rows)?;
                }
            }
        }
    }
    for (b, h, s, d) in bench_backward_shapes(ctx.quick) {
        for causal in [false, true] {
            let shape = Shape::new(b, h, s, s, d, causal, None)?;
            rows.extend(bench_backward(ctx, dev, &shape, Precision::Bf16)?);
        }
    }
    for (gi, (b, h, hkv, s, d)) in bench_gqa_shapes(ctx.quick).into_iter().enumerate() {
        for causal in [false, true] {
            let shape = Shape::new(b, h, s, s, d, causal, None)?.with_kv_heads(hkv)?;
            bench_shape(ctx, dev, &shape, Precision::Bf16, &mut rows)?;
            // The backward pass at the first grouped shape.
            if gi == 0 {
                rows.extend(bench_backward(ctx, dev, &shape, Precision::Bf16)?);
            }
        }
    }
    for (b, h, s, d, w) in bench_window_shapes(ctx.quick) {
        for causal in [false, true] {
            let shape = Shape::new(b, h, s, s, d, causal, None)?.with_window(w)?;
            bench_shape(ctx, dev, &shape, Precision::Bf16, &mut rows)?;
            rows.extend(bench_backward(ctx, dev, &shape, Precision::Bf16)?);
        }
    }
    let (heads, d, lens) = bench_packed_lengths(ctx.quick);
    let mut cu = vec![0];
    for l in lens {
        cu.push(cu[cu.len() - 1] + l);
    }
    for causal in [false, true] {
        let p = Packed::new(heads, d, causal, None, cu.clone(), None)?;
        rows.extend(bench_packed(ctx, dev, &p, Precision::Bf16)?);
    }
    Ok(rows)
}

/// The packed variable-length batch of the benchmark: `(heads, dim,
/// sequence lengths)`, each non-causal and causal, BF16, forward and
/// backward: sixteen sequences from 101 to 8192 tokens, 32768 in all
/// (quick: four short ones). `peers/attention.py` times torch's
/// `flex_attention` with a document mask and `varlen_attn` at the same.
pub fn bench_packed_lengths(quick: bool) -> (usize, usize, Vec<usize>) {
    if quick {
        (8, 128, vec![1000, 77, 511, 460])
    } else {
        (
            16,
            128,
            vec![
                4096, 1024, 3000, 517, 2048, 8192, 777, 1500, 4000, 333, 2222, 1111, 640, 2500,
                101, 1787,
            ],
        )
    }
}

/// The forward and backward rows of rung 2 on the packed batch `p`: each
/// checked first on a small ragged batch against the full f64 reference,
/// then on `p` (outputs poisoned; the first and the last sequence, sampled
/// rows, against f64; the gradients of head 0), then timed.
fn bench_packed(ctx: &BenchCtx, dev: &Device, p: &Packed, prec: Precision) -> Result<Vec<Row>> {
    use super::backward::{Backward, Grads, backward_entry, grad_bounds};
    use super::check::{SIM_PACKED, check_packed, packed_errors, packed_grad_errors};
    let rung = BwdRung::best(dev);
    let mut fwd = Row::new(NAME, Rung::Fa2.label(), "gpu", &p.label(), prec.name());
    let mut bwd_row = Row::new(
        NAME,
        rung.label(),
        "gpu",
        &format!("{} backward", p.label()),
        prec.name(),
    );
    let arch = dev.as_gpu().map(|g| g.info().arch()).unwrap_or_default();
    let base = p.base();
    set_resources(&mut fwd, super::launch::packed_entry(prec, base.d), &arch);
    set_resources(
        &mut bwd_row,
        backward_entry(rung, prec, base.d, true),
        &arch,
    );
    let (cu_q, cu_k) = SIM_PACKED[0];
    let odd = Packed::new(
        4,
        base.d,
        base.causal,
        None,
        cu_q.to_vec(),
        Some(cu_k.to_vec()),
    )?
    .with_kv_heads(2)?;
    if let Err(e) = check_packed(dev, prec, &odd, 11, true) {
        let why = e.to_string();
        fwd.status = status_of(e);
        bwd_row.status = Status::Failed(why);
        return Ok(vec![fwd, bwd_row]);
    }
    let q = round_checked(prec, "Q", &generated(0, p.q_len()))?;
    let k = round_checked(prec, "K", &generated(1, p.kv_len()))?;
    let v = round_checked(prec, "V", &generated(2, p.kv_len()))?;
    let g = round_checked(prec, "dO", &generated(3, p.q_len()))?;
    let wide = [&q, &k, &v, &g].map(|b| widen(prec, b));
    let x = Inputs::upload_lens(dev, (p.q_len(), p.kv_len()), &q, &k, &v)?;
    let dout = dev.upload(&g)?;
    drop((q, k, v, g));
    let seqs = [0, p.batch() - 1];
    let mut o = dev.alloc_filled(p.q_len(), POISON_16)?;
    let mut lse = dev.alloc_filled(p.lse_len(), f32::NAN)?;
    let mut plan = Plan::packed(dev, prec, p.clone(), &x)?;
    let t0 = std::time::Instant::now();
    plan.run(dev, &mut o, Some(&mut lse))?;
    dev.synchronize()?;
    fwd.first_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
    let got = (dev.download(&o)?, dev.download(&lse)?);
    match packed_errors(
        p,
        prec,
        [&wide[0][..], &wide[1], &wide[2]],
        (&got.0, &got.1),
        &seqs,
        true,
    ) {
        Ok((e, max_score)) => {
            let b = bound(Rung::Fa2, prec, max_score);
            fwd.rel_err = Some(e.rel);
            fwd.note = format!("max {:.1e}", e.max);
            if !(e.rel <= b) || !(e.max <= 2.0 * b) {
                fwd.status = Status::Failed(format!(
                    "sampled rows: relative error {:.2e} (bound {b:.1e}), max {:.2e}",
                    e.rel, e.max
                ));
            }
        }
        Err(why) => fwd.status = Status::Failed(why),
    }
    if fwd.status == Status::Ok {
        let first = fwd.first_ms.unwrap_or(1.0);
        let t = dev.time(1, reps_for(first, ctx.reps()), |_| {
            plan.run(dev, &mut o, None)
        })?;
        fwd.throughput = Some(p.flops() / (t.median_ms * 1e-3) / 1e9);
        fwd.unit = "GFLOP/s".into();
        fwd.timing = Some(t);
    }
    // The backward pass from rung 2's O and lse: the checked run wrote
    // both, the timed runs (without lse) wrote O's same values again.
    let mut grads = Grads::poisoned_lens(dev, p.q_len(), p.kv_len())?;
    let mut bwd = Backward::packed(dev, prec, p.clone())?;
    let t0 = std::time::Instant::now();
    bwd.run(dev, &x, &o, &lse, &dout, &mut grads)?;
    dev.synchronize()?;
    bwd_row.first_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
    let gb = [
        dev.download(&grads.dq)?,
        dev.download(&grads.dk)?,
        dev.download(&grads.dv)?,
    ];
    let inputs = [&wide[0][..], &wide[1], &wide[2], &wide[3]];
    match packed_grad_errors(p, prec, inputs, [&gb[0][..], &gb[1], &gb[2]], &[0], false) {
        Ok(e) => {
            let (b, bv) = grad_bounds(prec);
            bwd_row.rel_err = Some(e.dq.max(e.dk).max(e.dv));
            bwd_row.note = format!(
                "dQ {:.1e} dK {:.1e} dV {:.1e} (sequence 0, head 0)",
                e.dq, e.dk, e.dv
            );
            if !(e.dq <= b) || !(e.dk <= b) || !(e.dv <= bv) {
                bwd_row.status =
                    Status::Failed(format!("gradients past their bounds: {}", bwd_row.note));
            }
        }
        Err(why) => bwd_row.status = Status::Failed(why),
    }
    if bwd_row.status == Status::Ok {
        let first = bwd_row.first_ms.unwrap_or(1.0);
        let t = dev.time(1, reps_for(first, ctx.reps()), |_| {
            bwd.run(dev, &x, &o, &lse, &dout, &mut grads)
        })?;
        bwd_row.throughput = Some(2.5 * p.flops() / (t.median_ms * 1e-3) / 1e9);
        bwd_row.unit = "GFLOP/s".into();
        bwd_row.timing = Some(t);
    }
    Ok(vec![fwd, bwd_row])
}

/// The backward pass's benchmark shapes `(batch, heads, seq, dim)`, each
/// non-causal and causal, BF16: the two and an odd length (quick:
/// one small one). `peers/attention.py` times torch's backward at the same.
pub fn bench_backward_shapes(quick: bool) -> Vec<(usize, usize, usize, usize)> {
    if quick {
        vec![(1, 8, 2048, 128)]
    } else {
        vec![
            (4, 16, 8192, 128),
            (4, 16, 8192, 64),
            (4, 16, 8192, 256),
            (2, 16, 4097, 128),
        ]
    }
}

/// The backward row at `shape`: checked first at an odd shape against the
/// full f64 gradients, then at `shape` (forward by rung 2, gradients
/// poisoned, head 0 against the f64 gradients), then the backward alone
/// timed, TFLOP/s counted as 2.5x the forward's FLOPs.
fn bench_backward(
    ctx: &BenchCtx,
    dev: &Device,
    shape: &Shape,
    prec: Precision,
) -> Result<Vec<Row>> {
    BwdRung::all_on(dev, shape.d)
        .map(|rung| bench_backward_on(ctx, dev, rung, shape, prec))
        .collect()
}

/// [`bench_backward`]'s row of one rung.
fn bench_backward_on(
    ctx: &BenchCtx,
    dev: &Device,
    rung: BwdRung,
    shape: &Shape,
    prec: Precision,
) -> Result<Row> {
    use super::backward::{
        Backward, Grads, backward_entry, backward_flops, backward_label, check_backward_on,
        lse_forward, verify_grads,
    };
    use super::cpu::grad_reference;
    let mut row = Row::new(
        NAME,
        rung.label(),
        "gpu",
        &backward_label(shape),
        prec.name(),
    );
    let arch = dev.as_gpu().map(|g| g.info().arch()).unwrap_or_default();
    set_resources(&mut row, backward_entry(rung, prec, shape.d, false), &arch);
    let odd = odd_shape(shape)?;
    if let Err(e) = check_backward_on(dev, rung, prec, &odd, 11) {
        row.status = status_of(e);
        return Ok(row);
    }
    let q = round_checked(prec, "Q", &generated(0, shape.q_len()))?;
    let k = round_checked(prec, "K", &generated(1, shape.kv_len()))?;
    let v = round_checked(prec, "V", &generated(2, shape.kv_len()))?;
    let g = round_checked(prec, "dO", &generated(3, shape.q_len()))?;
    let refr = grad_reference(
        shape,
        &widen(prec, &q),
        &widen(prec, &k),
        &widen(prec, &v),
        &widen(prec, &g),
        &[0],
    );
    let x = Inputs::upload(dev, shape, &q, &k, &v)?;
    let dout = dev.upload(&g)?;
    drop((q, k, v, g));
    let mut o = dev.alloc_filled(shape.q_len(), POISON_16)?;
    let mut lse = dev.alloc_filled(shape.bh() * shape.sq, f32::NAN)?;
    let res = Plan::new(dev, lse_forward(shape), prec, *shape, &x)
        .and_then(|mut p| p.run(dev, &mut o, Some(&mut lse)));
    if let Err(e) = res {
        row.status = status_of(e);
        return Ok(row);
    }
    let mut grads = Grads::poisoned(dev, shape)?;
    let mut bwd = Backward::new(dev, prec, *shape)?.with_rung(dev, rung)?;
    let t0 = std::time::Instant::now();
    if let Err(e) = bwd
        .run(dev, &x, &o, &lse, &dout, &mut grads)
        .and_then(|()| Ok(dev.synchronize()?))
    {
        row.status = status_of(e);
        return Ok(row);
    }
    row.first_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
    let e = grads.errors(dev, shape, prec, &refr)?;
    match e {
        Ok(e) => {
            row.rel_err = Some(e.dq.max(e.dk).max(e.dv));
            row.note = format!("dQ {:.1e} dK {:.1e} dV {:.1e} (head 0)", e.dq, e.dk, e.dv);
            if let Err(err) = verify_grads("head 0", prec, &e) {
                row.status = Status::Failed(err.to_string());
                return Ok(row);
            }
        }
        Err(why) => {
            row.status = Status::Failed(why);
            return Ok(row);
        }
    }
    let first = row.first_ms.unwrap_or(1.0);
    match dev.time(1, reps_for(first, ctx.reps()), |_| {
        bwd.run(dev, &x, &o, &lse, &dout, &mut grads)
    }) {
        Ok(t) => {
            row.throughput = Some(backward_flops(shape) / (t.median_ms * 1e-3) / 1e9);
            row.unit = "GFLOP/s".into();
            row.timing = Some(t);
        }
        Err(e) => row.status = Status::Failed(e.to_string()),
    }
    Ok(row)
}

/// Fills the row's registers and spill bytes from ptxas's report of
/// `kernel` for `arch`, or for `{arch}a` (the sm_90a module's kernels).
fn set_resources(row: &mut Row, kernel: Option<&str>, arch: &str) {
    use ptxlab_common::modules::resource;
    let res = kernel
        .and_then(|k| resource(k, arch, false).or_else(|| resource(k, &format!("{arch}a"), false)));
    if let Some(res) = res {
        row.registers = Some(res.registers);
        row.spills = Some(res.spill_stores + res.spill_loads);
    }
}

/// The rows of every rung at `shape` in `prec`.
fn bench_shape(
    ctx: &BenchCtx,
    dev: &Device,
    shape: &Shape,
    prec: Precision,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let odd = odd_shape(shape)?;
    let size = shape.label();
    let q = round_checked(prec, "Q", &generated(0, shape.q_len()))?;
    let k = round_checked(prec, "K", &generated(1, shape.kv_len()))?;
    let v = round_checked(prec, "V", &generated(2, shape.kv_len()))?;
    let refr = reference(
        shape,
        &widen(prec, &q),
        &widen(prec, &k),
        &widen(prec, &v),
        sample_rows(shape),
    );
    let x = Inputs::upload(dev, shape, &q, &k, &v)?;
    drop((q, k, v));
    let mut o = dev.alloc_filled(shape.q_len(), POISON_16)?;
    let arch = dev.as_gpu().map(|g| g.info().arch()).unwrap_or_default();
    for rung in Rung::ALL {
        let mut row = Row::new(NAME, rung.label(), "gpu", &size, prec.name());
        if let Some(why) = rung.refuses(shape) {
            row.status = Status::Skipped(why);
            rows.push(row);
            continue;
        }
        set_resources(
            &mut row,
            entry(rung, prec, shape.d, shape.window.is_some()),
            &arch,
        );
        if let Err(e) = check_rung(dev, rung, prec, &odd, 11) {
            row.status = status_of(e);
            rows.push(row);
            continue;
        }
        let mut plan = match Plan::new(dev, rung, prec, *shape, &x) {
            Ok(p) => p,
            Err(e) => {
                row.status = status_of(e);
                rows.push(row);
                continue;
            }
        };
        dev.write(&mut o, &vec![POISON_16; shape.q_len()])?;
        let t0 = std::time::Instant::now();
        if let Err(e) = plan
            .run(dev, &mut o, None)
            .and_then(|()| Ok(dev.synchronize()?))
        {
            row.status = status_of(e);
            rows.push(row);
            continue;
        }
        row.first_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
        let got = dev.download(&o)?;
        match errors(shape, prec, &refr, &got, None) {
            Ok(e) => {
                let b = bound(rung, prec, refr.max_score);
                row.rel_err = Some(e.rel);
                row.note = format!("max {:.1e}", e.max);
                if !(e.rel <= b) || !(e.max <= 2.0 * b) {
                    row.status = Status::Failed(format!(
                        "sampled rows: relative error {:.2e} (bound {b:.1e}), max {:.2e}",
                        e.rel, e.max
                    ));
                    rows.push(row);
                    continue;
                }
            }
            Err(why) => {
                row.status = Status::Failed(why);
                rows.push(row);
                continue;
            }
        }
        let first = row.first_ms.unwrap_or(1.0);
        match dev.time(1, reps_for(first, ctx.reps()), |_| {
            plan.run(dev, &mut o, None)
        }) {
            Ok(t) => {
                row.throughput = Some(shape.flops() / (t.median_ms * 1e-3) / 1e9);
                row.unit = "GFLOP/s".into();
                row.timing = Some(t);
            }
            Err(e) => row.status = Status::Failed(e.to_string()),
        }
        rows.push(row);
    }
    Ok(())
}

/// The FP8 row at `shape` (`D = 128`; skipped otherwise): checked at the
/// odd shape against the f64 reference of the dequantised inputs (every
/// row), then at `shape` on sampled rows, then the kernel timed (`V^T` is
/// made once per `V`, outside the timing; the CLI reports its time).
fn bench_fp8(ctx: &BenchCtx, dev: &Device, shape: &Shape, rows: &mut Vec<Row>) -> Result<()> {
    let mut row = Row::new(NAME, FP8_LABEL, "gpu", &shape.label(), "fp8");
    if let Some(why) = fp8_refuses(shape) {
        row.status = Status::Skipped(why);
        rows.push(row);
        return Ok(());
    }
    let arch = dev.as_gpu().map(|g| g.info().arch()).unwrap_or_default();
    set_resources(&mut row, Some(fp8_entry(shape.causal)), &arch);
    let inputs = |s: &Shape| {
        [
            generated(0, s.q_len()),
            generated(1, s.kv_len()),
            generated(2, s.kv_len()),
        ]
    };
    let odd = odd_shape(shape)?;
    let [q, k, v] = inputs(&odd);
    if let Err(e) = check_fp8(dev, &odd, [&q, &k, &v], all_rows(&odd)) {
        row.status = status_of(e);
        rows.push(row);
        return Ok(());
    }
    let [q, k, v] = inputs(shape);
    let x = match check_fp8(dev, shape, [&q, &k, &v], sample_rows(shape)) {
        Ok((e, x)) => {
            row.rel_err = Some(e.rel);
            row.note = format!("max {:.1e}, against the dequantised inputs", e.max);
            x
        }
        Err(e) => {
            row.status = status_of(e);
            rows.push(row);
            return Ok(());
        }
    };
    drop((q, k, v));
    let mut o = dev.alloc_filled(shape.q_len(), POISON_16)?;
    let mut plan = Fp8Plan::new(dev, *shape, &x)?;
    let t0 = std::time::Instant::now();
    plan.run(dev, &mut o, None)?;
    dev.synchronize()?;
    row.first_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
    let first = row.first_ms.unwrap_or(1.0);
    match dev.time(1, reps_for(first, ctx.reps()), |_| {
        plan.run(dev, &mut o, None)
    }) {
        Ok(t) => {
            row.throughput = Some(shape.flops() / (t.median_ms * 1e-3) / 1e9);
            row.unit = "GFLOP/s".into();
            row.timing = Some(t);
        }
        Err(e) => row.status = Status::Failed(e.to_string()),
    }
    rows.push(row);
    Ok(())
}
