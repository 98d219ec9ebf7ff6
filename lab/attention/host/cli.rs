//! `ptxlab attention`: the ladder on a GPU or the simulator (each rung
//! checked against the f64 reference before it is timed), or the f64
//! reference alone on the CPU.

use super::check::{bound, errors, verify};
use super::cpu::POISON_16;
use super::cpu::{Reference, all_rows, generated, reference, round_checked, sample_rows, widen};
use super::launch::{Inputs, Plan};
use super::types::{Precision, Rung, Shape};
use ptxlab_common::Backend;
use ptxlab_common::cli::{OneOrAll, timed_row};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::{Row, fmt_ms};
use std::path::{Path, PathBuf};

/// `ptxlab attention` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Queries: a float32 .npy of shape (B, H, S, D). With --key and
    /// --value; replaces --batch/--heads/--seq/--dim.
    #[arg(long, value_name = "Q.npy")]
    pub query: Option<PathBuf>,
    /// Keys: float32 .npy (B, H_kv, S_kv, D), H_kv dividing Q's H
    /// (grouped-query attention when fewer).
    #[arg(long, value_name = "K.npy")]
    pub key: Option<PathBuf>,
    /// Values: float32 .npy of K's shape (B, H_kv, S_kv, D).
    #[arg(long, value_name = "V.npy")]
    pub value: Option<PathBuf>,
    /// Batch size of random inputs [default: 1].
    #[arg(long, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub batch: Option<usize>,
    /// Heads per batch element of random inputs [default: 4].
    #[arg(long, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub heads: Option<usize>,
    /// Query length of random inputs [default: 1024].
    #[arg(long, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub seq: Option<usize>,
    /// K/V heads per batch element of random inputs [default: --heads]: must
    /// divide --heads; query head h reads K/V head h / (heads / kv-heads)
    /// (grouped-query attention; 1 is multi-query attention).
    #[arg(long, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub kv_heads: Option<usize>,
    /// Key/value length of random inputs [default: --seq].
    #[arg(long, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub seq_kv: Option<usize>,
    /// Head dimension of random inputs [default: 128]; rungs 2-5 take 64 and 128, rungs 4-5 and the
    /// backward pass also 256.
    #[arg(long, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub dim: Option<usize>,
    /// Causal mask (torch's `is_causal`: query i sees keys j <= i).
    #[arg(long)]
    pub causal: bool,
    /// Sliding window (local attention): query i sees keys |i - j| < W
    /// (with --causal, i - W < j <= i); rungs 1-2 and the backward pass.
    #[arg(long, value_name = "W", value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub window: Option<usize>,
    /// Packed variable-length batch (FlashAttention's cu_seqlens): the B + 1
    /// query offsets, increasing from 0 to the token count, as a list
    /// (0,77,210) or an int32/int64 .npy; "Q.npy,K.npy" gives the key
    /// offsets too. Q and O are then (T, H, D), K and V (T_kv, H_kv, D),
    /// the log-sum-exp (T, H); masks count within each sequence. Rung 2
    /// and the backward pass.
    #[arg(long, value_name = "OFFSETS", value_parser = super::packed::Offsets::parse)]
    pub cu_seqlens: Option<super::packed::Offsets>,
    /// Key offsets of a packed batch, as --cu-seqlens [default: the query
    /// offsets].
    #[arg(long, value_name = "OFFSETS", value_parser = super::packed::Offsets::parse)]
    pub cu_seqlens_kv: Option<super::packed::Offsets>,
    /// Working precision of inputs and output (softmax and accumulation in f32).
    #[arg(long, value_enum, default_value_t = Precision::Bf16)]
    pub precision: Precision,
    /// The rung, or all of them. With --backward, the backward rung: fa2
    /// (rung 1, mma.sync), wgmma (rung 2, sm_90) or all (every one the
    /// device runs).
    #[arg(long, value_parser = OneOrAll::<Rung>::parser(), default_value = "all")]
    pub variant: OneOrAll<Rung>,
    /// gpu, sim or cpu (the f64 reference alone).
    #[arg(long, value_enum, default_value_t = Backend::Gpu)]
    pub backend: Backend,
    /// Scale of the scores [default: 1/sqrt(D)].
    #[arg(long, allow_negative_numbers = true)]
    pub scale: Option<f64>,
    /// Write O (float32, (B, H, S, D)) of the last rung run.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write the log-sum-exp per query row (float32, (B, H, S)).
    #[arg(long)]
    pub lse: Option<PathBuf>,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = ptxlab_common::cli::DEFAULT_SEED, value_parser = ptxlab_common::cli::parse_whole::<u64>, allow_negative_numbers = true)]
    pub seed: u64,
    /// Timed repetitions (1..=10000).
    #[arg(long, default_value_t = ptxlab_common::cli::DEFAULT_REPS, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
    /// Print the measured rows as JSON on stdout (the row objects of
    /// `results.json`), and nothing else there.
    #[arg(long)]
    pub json: bool,
    /// Run the backward pass: rung 2's forward (for O and the log-sum-exp;
    /// at D = 256 rung 4, 5 or 1), then the backward kernels, checked
    /// against the f64 gradients; timed alone, TFLOP/s counted as 2.5x the
    /// forward's FLOPs. Implied by --grad-out, --dq, --dk and --dv.
    #[arg(long)]
    pub backward: bool,
    /// Output gradient dL/dO: float32 .npy of Q's shape (B, H, S, D)
    /// [default: random, hash tensor 3 seed + 3].
    #[arg(long, value_name = "dO.npy")]
    pub grad_out: Option<PathBuf>,
    /// Write dL/dQ (float32, (B, H, S, D)).
    #[arg(long, value_name = "dQ.npy")]
    pub dq: Option<PathBuf>,
    /// Write dL/dK (float32, (B, H_kv, S_kv, D); with grouped heads summed
    /// over each K/V head's query heads).
    #[arg(long, value_name = "dK.npy")]
    pub dk: Option<PathBuf>,
    /// Write dL/dV (float32, (B, H_kv, S_kv, D)).
    #[arg(long, value_name = "dV.npy")]
    pub dv: Option<PathBuf>,
    /// Also run the FP8 forward (D = 128, sm_90): the float32 inputs
    /// quantised to E4M3 with one scale per tensor (largest magnitude /
    /// 448), checked against the f64 reference of the dequantised inputs,
    /// its error printed beside the 16-bit rungs'.
    #[arg(long)]
    pub fp8: bool,
}

/// Most multiply-adds (`heads Sq Skv D`) of one rung on the simulator.
pub const SIM_MAX_WORK: usize = 1 << 26;
/// Most multiply-adds of the f64 reference on every row (`--backend cpu`,
/// and the full check of smaller GPU runs).
pub const CPU_MAX_WORK: usize = 1 << 34;
/// Above this, GPU results are checked on sampled rows only.
pub const FULL_CHECK_WORK: usize = 1 << 30;

/// `shape` with the `--window` when one is given.
fn windowed(shape: Shape, window: Option<usize>) -> Result<Shape> {
    match window {
        Some(w) => shape.with_window(w),
        None => Ok(shape),
    }
}

/// The shape and the values (f32, before rounding) of the problem.
fn inputs(args: &Args) -> Result<(Shape, [Vec<f32>; 3])> {
    let files = [&args.query, &args.key, &args.value];
    if files.iter().any(|f| f.is_some()) {
        let [Some(qp), Some(kp), Some(vp)] = files else {
            return Err(Error::input(
                "--query/--key/--value",
                "give all three files, or none (random inputs from --batch --heads --seq --dim)",
            ));
        };
        if let Some((flag, _)) = [
            ("--batch", args.batch),
            ("--heads", args.heads),
            ("--kv-heads", args.kv_heads),
            ("--seq", args.seq),
            ("--seq-kv", args.seq_kv),
            ("--dim", args.dim),
        ]
        .iter()
        .find(|(_, v)| v.is_some())
        {
            return Err(Error::input(
                *flag,
                "the shape comes from the --query/--key/--value files; leave out --batch, --heads, \
                 --kv-heads, --seq, --seq-kv and --dim",
            ));
        }
        let read =
            |p: &Path| ptxlab_common::npy::read_nd::<f32>(p, "a float32 array (B, H, S, D)", 4);
        let (qs, q) = read(qp)?;
        let (ks, k) = read(kp)?;
        let (vs, v) = read(vp)?;
        let txt = |s: &[usize]| {
            format!(
                "({})",
                s.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        if ks != vs {
            return Err(Error::input(
                "--key/--value",
                format!(
                    "K is {} and V is {}; they must have the same shape (B, H, S_kv, D)",
                    txt(&ks),
                    txt(&vs)
                ),
            ));
        }
        if qs[0] != ks[0] || qs[3] != ks[3] || ks[1] == 0 || !qs[1].is_multiple_of(ks[1]) {
            return Err(Error::input(
                "--query/--key",
                format!(
                    "Q is {} and K is {}; batch and head dim (dimensions 0 and 3) must agree, and \
                     K's heads must divide Q's (grouped-query attention; only the sequence \
                     lengths may differ otherwise)",
                    txt(&qs),
                    txt(&ks)
                ),
            ));
        }
        let shape = Shape::new(qs[0], qs[1], qs[2], ks[2], qs[3], args.causal, args.scale)?
            .with_kv_heads(ks[1])?;
        return Ok((windowed(shape, args.window)?, [q, k, v]));
    }
    let seq = args.seq.unwrap_or(1024);
    let heads = args.heads.unwrap_or(4);
    let shape = Shape::new(
        args.batch.unwrap_or(1),
        heads,
        seq,
        args.seq_kv.unwrap_or(seq),
        args.dim.unwrap_or(128),
        args.causal,
        args.scale,
    )?
    .with_kv_heads(args.kv_heads.unwrap_or(heads))?;
    let shape = windowed(shape, args.window)?;
    ptxlab_common::cli::check_host_arrays("shape", shape.q_len().max(shape.kv_len()), 4, 6)?;
    let s = args.seed.wrapping_mul(3);
    Ok((
        shape,
        [
            generated(s, shape.q_len()),
            generated(s + 1, shape.kv_len()),
            generated(s + 2, shape.kv_len()),
        ],
    ))
}

/// `heads Sq Skv D`: the multiply-adds of one product.
pub(super) fn work(shape: &Shape) -> usize {
    shape
        .bh()
        .saturating_mul(shape.sq)
        .saturating_mul(shape.skv)
        .saturating_mul(shape.d)
}

/// `ptxlab attention` on a dense problem: the rows it measured.
pub fn cli_dense(args: &Args) -> Result<Vec<Row>> {
    ptxlab_common::cli::check_reps(args.reps)?;
    let (shape, [qf, kf, vf]) = inputs(args)?;
    if args.fp8 {
        if let Some(why) = super::fp8::fp8_refuses(&shape) {
            return Err(Error::input("--fp8", why));
        }
        if args.backend == Backend::Cpu {
            return Err(Error::input(
                "--fp8",
                "the FP8 forward runs on --backend gpu or sim",
            ));
        }
    }
    let prec = args.precision;
    let (q, k, v) = (&qf, &kf, &vf);
    let q = round_checked(prec, "Q", q)?;
    let k = round_checked(prec, "K", k)?;
    let v = round_checked(prec, "V", v)?;
    let (wq, wk, wv) = (widen(prec, &q), widen(prec, &k), widen(prec, &v));
    println!(
        "attention {} {}, scale {:.6}, {:.3} GFLOP",
        shape.label(),
        prec.name(),
        shape.scale,
        shape.flops() / 1e9
    );
    let w = work(&shape);
    let dims = [shape.batch, shape.heads, shape.sq, shape.d];
    if args.backward
        || args.grad_out.is_some()
        || args.dq.is_some()
        || args.dk.is_some()
        || args.dv.is_some()
    {
        return cli_backward(args, &shape, [q, k, v]);
    }
    if args.backend == Backend::Cpu {
        if w > CPU_MAX_WORK {
            return Err(Error::input(
                "shape",
                format!(
                    "{w} multiply-adds for the f64 reference; at most {CPU_MAX_WORK} with --backend \
                     cpu: use a smaller problem"
                ),
            ));
        }
        let t = std::time::Instant::now();
        let r = reference(&shape, &wq, &wk, &wv, all_rows(&shape));
        let ms = t.elapsed().as_secs_f64() * 1e3;
        println!(
            "CPU f64 reference ({} threads): {} ms",
            rayon::current_num_threads(),
            fmt_ms(ms)
        );
        let o: Vec<f32> = r.o.iter().map(|x| *x as f32).collect();
        let l: Vec<f32> = r.lse.iter().map(|x| *x as f32).collect();
        write(args, &dims, &o, &l)?;
        let t = ptxlab_common::runtime::Timing {
            median_ms: ms,
            min_ms: ms,
            max_ms: ms,
            reps: 1,
        };
        let gflops = shape.flops() / (ms * 1e-3) / 1e9;
        return Ok(vec![timed_row(
            "attention",
            "CPU f64 reference",
            "cpu",
            &shape.label(),
            "f64",
            &t,
            Some((gflops, "GFLOP/s")),
        )]);
    }
    let dev = ptxlab_common::cli::open_device(args.backend)?.expect("gpu and sim have a device");
    if dev.is_sim() && w > SIM_MAX_WORK {
        return Err(Error::input(
            "shape",
            format!(
                "{w} multiply-adds per rung on the simulator; at most {SIM_MAX_WORK} (it runs on \
                 the CPU, with a race detector): use a smaller problem, or --backend cpu"
            ),
        ));
    }
    let rows = if w <= FULL_CHECK_WORK {
        all_rows(&shape)
    } else {
        sample_rows(&shape)
    };
    let full = rows.len() == shape.bh() * shape.sq;
    let refr: Reference = reference(&shape, &wq, &wk, &wv, rows);
    let x = Inputs::upload(&dev, &shape, &q, &k, &v)?;
    let mut o = dev.alloc_filled(shape.q_len(), POISON_16)?;
    let mut lse = dev.alloc_filled(shape.bh() * shape.sq, f32::NAN)?;
    let mut last = None;
    let mut measured = Vec::new();
    let backend_name = if dev.is_sim() { "sim" } else { "gpu" };
    let one = matches!(args.variant, OneOrAll::One(_));
    for rung in args.variant.rungs() {
        if let Some(why) = rung.refuses(&shape) {
            if one {
                return Err(Error::input(format!("--variant {}", rung.name()), why));
            }
            println!("{}: {why}", rung.label());
            continue;
        }
        let mut plan = Plan::new(&dev, rung, prec, shape, &x)?;
        dev.write(&mut o, &vec![POISON_16; shape.q_len()])?;
        dev.write(&mut lse, &vec![f32::NAN; shape.bh() * shape.sq])?;
        match plan.run(&dev, &mut o, Some(&mut lse)) {
            Err(Error::Runtime(ptxlab_common::runtime::Error::Unsupported {
                what, hint, ..
            })) if !one => {
                println!(
                    "{}: skipped on {}: {what} ({hint})",
                    rung.label(),
                    dev.name()
                );
                continue;
            }
            r => r?,
        }
        let (got, got_lse) = (dev.download(&o)?, dev.download(&lse)?);
        let what = format!(
            "attention {} {} {}",
            rung.label(),
            prec.name(),
            shape.label()
        );
        let e = errors(&shape, prec, &refr, &got, Some(&got_lse)).map_err(|detail| {
            Error::Verification {
                what: what.clone(),
                detail,
            }
        })?;
        verify(&what, rung, prec, refr.max_score, &e)?;
        let reps = if dev.is_sim() { 1 } else { args.reps };
        let t = dev.time(1, reps, |_| plan.run(&dev, &mut o, None))?;
        println!(
            "PASS {} on {}: rel err {:.2e} (bound {:.1e}, {}), max {:.2e}, lse {:.1e}; median {} ms \
             ({}-{}), {:.1} TFLOP/s",
            rung.label(),
            dev.name(),
            e.rel,
            bound(rung, prec, refr.max_score),
            if full { "every row" } else { "sampled rows" },
            e.max,
            e.lse,
            fmt_ms(t.median_ms),
            fmt_ms(t.min_ms),
            fmt_ms(t.max_ms),
            shape.flops() / (t.median_ms * 1e-3) / 1e12
        );
        let mut r = timed_row(
            "attention",
            rung.label(),
            backend_name,
            &shape.label(),
            prec.name(),
            &t,
            Some((shape.flops() / (t.median_ms * 1e-3) / 1e9, "GFLOP/s")),
        );
        r.rel_err = Some(e.rel);
        measured.push(r);
        last = Some((got, got_lse));
    }
    if args.fp8 {
        let rows = if full {
            all_rows(&shape)
        } else {
            sample_rows(&shape)
        };
        measured.extend(cli_fp8(&dev, &shape, [&qf, &kf, &vf], rows, args.reps)?);
    }
    match last {
        Some((got, l)) => {
            let o: Vec<f32> = got.iter().map(|b| prec.value(*b)).collect();
            write(args, &dims, &o, &l)?;
            Ok(measured)
        }
        None => Err(Error::input(
            "--variant",
            format!("no rung takes {} (see the lines above)", shape.label()),
        )),
    }
}

/// Refuses `--fp8` with what it does not run with: the backward pass
/// (`--backward`, `--grad-out`, `--dq`, `--dk`, `--dv`) and packed batches
/// (`--cu-seqlens`), rather than ignoring it.
pub(super) fn check_fp8_flags(args: &Args) -> Result<()> {
    if !args.fp8 {
        return Ok(());
    }
    let with = [
        ("--backward", args.backward),
        ("--grad-out", args.grad_out.is_some()),
        ("--dq", args.dq.is_some()),
        ("--dk", args.dk.is_some()),
        ("--dv", args.dv.is_some()),
        ("--cu-seqlens", args.cu_seqlens.is_some()),
        ("--cu-seqlens-kv", args.cu_seqlens_kv.is_some()),
    ];
    if let Some((flag, _)) = with.iter().find(|(_, on)| *on) {
        return Err(Error::input(
            "--fp8",
            format!(
                "not with {flag}: the FP8 forward runs dense problems, forward only (the \
                 backward pass and packed batches run in BF16 or FP16)"
            ),
        ));
    }
    Ok(())
}

/// `--fp8`: the FP8 forward on the float32 inputs against the f64
/// reference of the dequantised ones (on `rows`), then timed; the rows of
/// the kernel and of the `V^T` it reads (made once per `V`).
fn cli_fp8(
    dev: &ptxlab_common::runtime::Device,
    shape: &Shape,
    inputs: [&[f32]; 3],
    rows: Vec<(usize, usize)>,
    reps: usize,
) -> Result<Vec<Row>> {
    use super::fp8::{Fp8Plan, check_fp8, fp8_bound};
    let full = rows.len() == shape.bh() * shape.sq;
    let (e, mut x) = check_fp8(dev, shape, inputs, rows)?;
    let reps = if dev.is_sim() { 1 } else { reps };
    let tv = dev.time(1, reps, |_| x.transpose_v(dev))?;
    let mut o = dev.alloc_filled(shape.q_len(), POISON_16)?;
    let mut plan = Fp8Plan::new(dev, *shape, &x)?;
    let t = dev.time(1, reps, |_| plan.run(dev, &mut o, None))?;
    let s = x.scales();
    let label = super::fp8::FP8_LABEL;
    println!(
        "PASS {label} on {}: rel err {:.2e} (bound {:.1e}, {}, against the dequantised inputs), \
         max {:.2e}, lse {:.1e}; scales Q {:.3e} K {:.3e} V {:.3e}; median {} ms ({}-{}), {:.1} \
         TFLOP/s; V^T (once per V) {} ms",
        dev.name(),
        e.rel,
        fp8_bound(),
        if full { "every row" } else { "sampled rows" },
        e.max,
        e.lse,
        s.q,
        s.k,
        s.v,
        fmt_ms(t.median_ms),
        fmt_ms(t.min_ms),
        fmt_ms(t.max_ms),
        shape.flops() / (t.median_ms * 1e-3) / 1e12,
        fmt_ms(tv.median_ms)
    );
    let backend = if dev.is_sim() { "sim" } else { "gpu" };
    let mut r = timed_row(
        "attention",
        label,
        backend,
        &shape.label(),
        "fp8",
        &t,
        Some((shape.flops() / (t.median_ms * 1e-3) / 1e9, "GFLOP/s")),
    );
    r.rel_err = Some(e.rel);
    let vt = timed_row(
        "attention",
        "FP8: V^T for the kernel (attn_fp8_vt, once per V)",
        backend,
        &shape.label(),
        "fp8",
        &tv,
        None,
    );
    Ok(vec![r, vt])
}

/// The output gradient: `--grad-out` (Q's shape, named when it differs)
/// or the hash tensor `3 seed + 3`.
fn grad_out(args: &Args, shape: &Shape) -> Result<Vec<f32>> {
    let Some(p) = &args.grad_out else {
        return Ok(generated(args.seed.wrapping_mul(3) + 3, shape.q_len()));
    };
    let (gs, g) = ptxlab_common::npy::read_nd::<f32>(p, "a float32 array (B, H, S, D)", 4)?;
    let want = [shape.batch, shape.heads, shape.sq, shape.d];
    if gs != want {
        return Err(Error::input(
            "--grad-out",
            format!("dO is {gs:?}; it must have the shape of Q and O, (B, H, S, D) = {want:?}"),
        ));
    }
    Ok(g)
}

/// `--backward`: the forward ([`lse_forward`](super::backward::lse_forward))
/// and the backward pass, checked against the f64 gradients (every head for
/// smaller problems, the first head for larger ones), then the backward
/// alone timed.
fn cli_backward(args: &Args, shape: &Shape, [q, k, v]: [Vec<u16>; 3]) -> Result<Vec<Row>> {
    use super::backward::{
        Backward, BwdRung, Grads, backward_flops, backward_label, backward_refuses, grad_bounds,
        grad_errors, lse_forward, verify_grads,
    };
    use super::cpu::grad_reference;
    let rungs: Vec<BwdRung> = match args.variant {
        OneOrAll::All => BwdRung::ALL.to_vec(),
        OneOrAll::One(r) => match BwdRung::ALL.into_iter().find(|b| b.variant() == r) {
            Some(b) => vec![b],
            None => {
                return Err(Error::input(
                    format!("--variant {}", r.name()),
                    "the backward pass has two rungs, fa2 (mma.sync) and wgmma (sm_90), run \
                     after rung 2's forward; leave out --variant or give one of them",
                ));
            }
        },
    };
    let prec = args.precision;
    let g = round_checked(prec, "dO", &grad_out(args, shape)?)?;
    let (wq, wk, wv, wg) = (
        widen(prec, &q),
        widen(prec, &k),
        widen(prec, &v),
        widen(prec, &g),
    );
    let qdims = [shape.batch, shape.heads, shape.sq, shape.d];
    let kdims = [shape.batch, shape.kv_heads, shape.skv, shape.d];
    let w = work(shape);
    let size = backward_label(shape);
    println!(
        "backward: {:.3} GFLOP (2.5x the forward's, FlashAttention's convention)",
        backward_flops(shape) / 1e9
    );
    if args.backend == Backend::Cpu {
        if w.saturating_mul(3) > CPU_MAX_WORK {
            return Err(Error::input(
                "shape",
                format!(
                    "{} multiply-adds for the f64 gradients; at most {CPU_MAX_WORK} with --backend \
                     cpu: use a smaller problem",
                    w.saturating_mul(3)
                ),
            ));
        }
        let t = std::time::Instant::now();
        let heads: Vec<usize> = (0..shape.bh()).collect();
        let r = grad_reference(shape, &wq, &wk, &wv, &wg, &heads);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        println!("CPU f64 gradients: {} ms", fmt_ms(ms));
        let f = |x: &[f64]| x.iter().map(|v| *v as f32).collect::<Vec<f32>>();
        write_grads(args, &qdims, &kdims, &f(&r.dq), &f(&r.dk), &f(&r.dv))?;
        let t = ptxlab_common::runtime::Timing {
            median_ms: ms,
            min_ms: ms,
            max_ms: ms,
            reps: 1,
        };
        return Ok(vec![timed_row(
            "attention",
            "CPU f64 gradients",
            "cpu",
            &size,
            "f64",
            &t,
            Some((backward_flops(shape) / (ms * 1e-3) / 1e9, "GFLOP/s")),
        )]);
    }
    if let Some(why) = backward_refuses(shape) {
        return Err(Error::input("--backward", why));
    }
    let dev = ptxlab_common::cli::open_device(args.backend)?.expect("gpu and sim have a device");
    if dev.is_sim() && w > SIM_MAX_WORK / 2 {
        return Err(Error::input(
            "shape",
            format!(
                "{w} multiply-adds per product on the simulator; at most {} for the backward pass \
                 (it runs on the CPU, with a race detector): use a smaller problem",
                SIM_MAX_WORK / 2
            ),
        ));
    }
    let heads: Vec<usize> = if w <= FULL_CHECK_WORK {
        (0..shape.bh()).collect()
    } else {
        vec![0]
    };
    let refr = grad_reference(shape, &wq, &wk, &wv, &wg, &heads);
    let x = Inputs::upload(&dev, shape, &q, &k, &v)?;
    let dout = dev.upload(&g)?;
    let mut o = dev.alloc_filled(shape.q_len(), POISON_16)?;
    let mut lse = dev.alloc_filled(shape.bh() * shape.sq, f32::NAN)?;
    Plan::new(&dev, lse_forward(shape), prec, *shape, &x)?.run(&dev, &mut o, Some(&mut lse))?;
    let val = |bits: &[u16]| bits.iter().map(|b| prec.value(*b)).collect::<Vec<f32>>();
    let mut rows = Vec::new();
    // The last rung's gradients, for --dq, --dk and --dv (every rung passed
    // the same check).
    let mut last = None;
    for rung in rungs {
        if !rung.takes(shape.d) && matches!(args.variant, OneOrAll::All) {
            println!("skip {}: built for head dims 64 and 128", rung.label());
            continue;
        }
        if !rung.runs_on(&dev) && matches!(args.variant, OneOrAll::All) {
            println!("skip {}: needs an sm_90 GPU", rung.label());
            continue;
        }
        // An explicit --variant that the device cannot run is an error here.
        let mut bwd = Backward::new(&dev, prec, *shape)?.with_rung(&dev, rung)?;
        let mut grads = Grads::poisoned(&dev, shape)?;
        bwd.run(&dev, &x, &o, &lse, &dout, &mut grads)?;
        let (dq, dk, dv) = (
            dev.download(&grads.dq)?,
            dev.download(&grads.dk)?,
            dev.download(&grads.dv)?,
        );
        let label = rung.label();
        let what = format!("attention {label} {} {}", prec.name(), shape.label());
        let e = grad_errors(shape, prec, &refr, &dq, &dk, &dv).map_err(|detail| {
            Error::Verification {
                what: what.clone(),
                detail,
            }
        })?;
        verify_grads(&what, prec, &e)?;
        let reps = if dev.is_sim() { 1 } else { args.reps };
        let t = dev.time(1, reps, |_| bwd.run(&dev, &x, &o, &lse, &dout, &mut grads))?;
        let (b, bv) = grad_bounds(prec);
        println!(
            "PASS {label} on {}: rel err dQ {:.2e}, dK {:.2e} (bound {b:.1e}), dV {:.2e} (bound \
             {bv:.1e}), {}; median {} ms ({}-{}), {:.1} TFLOP/s",
            dev.name(),
            e.dq,
            e.dk,
            e.dv,
            if heads.len() == shape.bh() {
                "every head"
            } else {
                "head 0"
            },
            fmt_ms(t.median_ms),
            fmt_ms(t.min_ms),
            fmt_ms(t.max_ms),
            backward_flops(shape) / (t.median_ms * 1e-3) / 1e12
        );
        let mut r = timed_row(
            "attention",
            label,
            if dev.is_sim() { "sim" } else { "gpu" },
            &size,
            prec.name(),
            &t,
            Some((
                backward_flops(shape) / (t.median_ms * 1e-3) / 1e9,
                "GFLOP/s",
            )),
        );
        r.rel_err = Some(e.dq.max(e.dk).max(e.dv));
        r.note = format!("dQ {:.1e} dK {:.1e} dV {:.1e}", e.dq, e.dk, e.dv);
        rows.push(r);
        last = Some([dq, dk, dv]);
    }
    write(args, &qdims, &val(&dev.download(&o)?), &dev.download(&lse)?)?;
    if let Some([dq, dk, dv]) = last {
        write_grads(args, &qdims, &kdims, &val(&dq), &val(&dk), &val(&dv))?;
    }
    Ok(rows)
}

/// Writes `--dq`, `--dk` and `--dv` when asked.
fn write_grads(
    args: &Args,
    qdims: &[usize; 4],
    kdims: &[usize; 4],
    dq: &[f32],
    dk: &[f32],
    dv: &[f32],
) -> Result<()> {
    for (p, dims, x) in [
        (&args.dq, qdims, dq),
        (&args.dk, kdims, dk),
        (&args.dv, kdims, dv),
    ] {
        if let Some(p) = p {
            ptxlab_common::npy::write_reported(p, dims, x)?;
        }
    }
    Ok(())
}

/// Writes `--out` and `--lse` when asked.
fn write(args: &Args, dims: &[usize; 4], o: &[f32], lse: &[f32]) -> Result<()> {
    write_o_lse([args.out.as_deref(), args.lse.as_deref()], dims, o, lse)
}

/// Writes `O` (`dims`, `(B, H, S, D)`) to `paths[0]` and the log-sum-exp
/// (`(B, H, S)`) to `paths[1]`, each when given, as float32 `.npy`.
pub(super) fn write_o_lse(
    paths: [Option<&std::path::Path>; 2],
    dims: &[usize; 4],
    o: &[f32],
    lse: &[f32],
) -> Result<()> {
    for (p, shape, x) in [(paths[0], &dims[..], o), (paths[1], &dims[..3], lse)] {
        if let Some(p) = p {
            ptxlab_common::npy::write_reported(p, shape, x)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> std::result::Result<Args, clap::Error> {
        ptxlab_common::cli::parse_line("attention", line)
    }

    fn err_of(line: &str) -> String {
        cli_dense(&parse(line).unwrap()).unwrap_err().to_string()
    }

    #[test]
    fn a_misspelt_rung_gets_clap_s_suggestion() {
        let e = parse("--variant ws-skp").err().unwrap().to_string();
        assert!(e.contains("ws-skip"), "{e}");
        let e = parse("--precision bf61").err().unwrap().to_string();
        assert!(e.contains("bf16"), "{e}");
        let a = parse("--variant wgmma --precision f16 --causal").unwrap();
        assert_eq!(a.variant, OneOrAll::One(Rung::Wgmma));
        assert_eq!(a.precision, Precision::F16);
    }

    #[test]
    fn fp8_is_refused_where_it_does_not_run() {
        let fp8 = |line: &str| {
            let a = parse(line).unwrap();
            super::super::cli(&a).unwrap_err().to_string()
        };
        let e = fp8("--backend sim --seq 8 --fp8 --backward");
        assert!(
            e.contains("--fp8") && e.contains("not with --backward"),
            "{e}"
        );
        let e = fp8("--backend sim --fp8 --cu-seqlens 0,5,9 --heads 1 --dim 128");
        assert!(e.contains("not with --cu-seqlens"), "{e}");
        let e = fp8("--backend sim --seq 8 --dim 64 --fp8");
        assert!(e.contains("D = 128") && e.contains("D = 64"), "{e}");
        let e = fp8("--backend cpu --seq 8 --fp8");
        assert!(e.contains("--backend gpu or sim"), "{e}");
    }

    #[test]
    fn hostile_options_are_refused_with_a_reason() {
        let e = err_of("--backend cpu --seq 0");
        assert!(e.contains("--seq") && e.contains("at least 1"), "{e}");
        let e = err_of("--backend cpu --seq 8 --scale -1");
        assert!(e.contains("--scale") && e.contains("positive"), "{e}");
        let e = err_of("--backend sim --seq 8 --dim 96 --variant fa2");
        assert!(
            e.contains("not for this shape") && e.contains("64 and 128"),
            "{e}"
        );
        let e = err_of("--backend sim --seq 8 --dim 64 --variant ws-skip");
        assert!(e.contains("without --causal"), "{e}");
        let e = err_of("--backend sim --seq 4096 --heads 8");
        assert!(e.contains("simulator"), "{e}");
        for kv in [3, 0, 8] {
            let e = err_of(&format!("--backend cpu --seq 8 --heads 4 --kv-heads {kv}"));
            assert!(e.contains("--kv-heads") && e.contains("must divide"), "{e}");
        }
        let e = err_of("--backend cpu --query q.npy");
        assert!(e.contains("all three"), "{e}");
        let e = err_of("--backend cpu --seq 8 --window 0");
        assert!(e.contains("--window") && e.contains("at least 1"), "{e}");
        let e = err_of("--backend cpu --seq 40 --seq-kv 8 --window 4");
        assert!(e.contains("see no key") && e.contains("at least 33"), "{e}");
        let e = err_of("--backend sim --seq 8 --dim 64 --variant wgmma --window 4");
        assert!(e.contains("does not take --window"), "{e}");
    }

    #[test]
    fn the_backward_rung_is_chosen_by_variant() {
        let e = err_of("--backend sim --backward --seq 8 --dim 64 --variant ws");
        assert!(
            e.contains("two rungs") && e.contains("fa2") && e.contains("wgmma"),
            "{e}"
        );
        let run = |line: &str| -> Vec<String> {
            let rows = cli_dense(&parse(line).unwrap()).unwrap();
            rows.into_iter().map(|r| r.variant).collect()
        };
        let base = "--backend sim --backward --seq 21 --seq-kv 19 --dim 64 --heads 1";
        let one = run(&format!("{base} --variant wgmma"));
        assert!(
            one.len() == 1 && one[0].starts_with("backward 2"),
            "{one:?}"
        );
        let one = run(&format!("{base} --variant fa2"));
        assert!(
            one.len() == 1 && one[0].starts_with("backward 1"),
            "{one:?}"
        );
        // Both rungs by default: the simulator runs sm_90 kernels too.
        let both = run(base);
        assert!(
            both.len() == 2
                && both[0].starts_with("backward 1")
                && both[1].starts_with("backward 2"),
            "{both:?}"
        );
    }

    #[test]
    fn npy_inputs_of_mismatched_shapes_or_with_nan_are_refused() {
        let dir = std::env::temp_dir().join(format!("ptxlab-attn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = |n: &str| dir.join(n);
        let save = |n: &str, shape: &[usize], v: f32| {
            let len = shape.iter().product();
            ptxlab_common::npy::write_nd(&path(n), shape, &vec![v; len]).unwrap();
        };
        save("q.npy", &[1, 2, 5, 8], 0.5);
        save("k.npy", &[1, 2, 7, 8], 0.25);
        save("v.npy", &[1, 2, 7, 8], 1.0);
        save("v4.npy", &[1, 2, 7, 4], 1.0);
        save("kh.npy", &[1, 3, 7, 8], 0.25);
        save("k1.npy", &[1, 1, 7, 8], 0.25);
        save("v1.npy", &[1, 1, 7, 8], 1.0);
        save("qnan.npy", &[1, 2, 5, 8], f32::NAN);
        let files = |q: &str, k: &str, v: &str| {
            format!(
                "--backend cpu --query {} --key {} --value {}",
                path(q).display(),
                path(k).display(),
                path(v).display()
            )
        };
        let e = err_of(&files("q.npy", "k.npy", "v4.npy"));
        assert!(e.contains("same shape"), "{e}");
        let e = err_of(&files("q.npy", "kh.npy", "kh.npy"));
        assert!(
            e.contains("must divide") && e.contains("(1, 3, 7, 8)"),
            "{e}"
        );
        let e = err_of(&files("qnan.npy", "k.npy", "v.npy"));
        assert!(e.contains("Q") && e.contains("NaN"), "{e}");
        let e = err_of(&format!("{} --seq 5", files("q.npy", "k.npy", "v.npy")));
        assert!(
            e.contains("--seq") && e.contains("from the --query/--key/--value files"),
            "{e}"
        );
        // A good set runs (CPU reference) and writes O and lse: V constant,
        // so O is that constant.
        let line = format!(
            "{} --out {} --lse {}",
            files("q.npy", "k.npy", "v.npy"),
            path("o.npy").display(),
            path("l.npy").display()
        );
        cli_dense(&parse(&line).unwrap()).unwrap();
        let (shape, o) = ptxlab_common::npy::read_nd::<f32>(&path("o.npy"), "O", 4).unwrap();
        assert_eq!(shape, vec![1, 2, 5, 8]);
        assert!(o.iter().all(|x| (*x - 1.0).abs() < 1e-6));
        let (shape, _) = ptxlab_common::npy::read_nd::<f32>(&path("l.npy"), "lse", 3).unwrap();
        assert_eq!(shape, vec![1, 2, 5]);
        // One K/V head for two query heads (multi-query): runs, and the
        // gradients of K and V have K's shape.
        let line = format!(
            "{} --backward --dk {}",
            files("q.npy", "k1.npy", "v1.npy"),
            path("dk.npy").display()
        );
        cli_dense(&parse(&line).unwrap()).unwrap();
        let (shape, _) = ptxlab_common::npy::read_nd::<f32>(&path("dk.npy"), "dK", 4).unwrap();
        assert_eq!(shape, vec![1, 1, 7, 8]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
