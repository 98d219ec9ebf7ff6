//! `ptxlab attention --cu-seqlens ...`: a packed variable-length batch
//! ([`Packed`]) on rung 2 and in the backward pass, from the command line.

use super::backward::{Backward, Grads, grad_bounds, verify_grads};
use super::check::{bound, packed_errors, packed_grad_errors, verify};
use super::cli::{Args, CPU_MAX_WORK, FULL_CHECK_WORK, SIM_MAX_WORK};
use super::cpu::{POISON_16, generated, round_checked, widen};
use super::launch::{Inputs, Plan};
use super::packed::{Offsets, Packed, packed_grad_reference, packed_reference};
use super::types::{NAME, Rung};
use ptxlab_common::Backend;
use ptxlab_common::cli::{OneOrAll, timed_row};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::{Row, fmt_ms};
use std::path::{Path, PathBuf};

/// The query and key offsets of `--cu-seqlens` (with its `Q.npy,K.npy`
/// form) and `--cu-seqlens-kv`.
fn offsets_of(args: &Args) -> Result<(Vec<usize>, Option<Vec<usize>>)> {
    let Some(q) = &args.cu_seqlens else {
        return Err(Error::input(
            "--cu-seqlens-kv",
            "give --cu-seqlens too (the query offsets of the packed batch)",
        ));
    };
    let (q, k_in_q) = q.read("--cu-seqlens")?;
    let k = match (k_in_q, &args.cu_seqlens_kv) {
        (Some(_), Some(_)) => {
            return Err(Error::input(
                "--cu-seqlens-kv",
                "the key offsets came with --cu-seqlens Q.npy,K.npy already; give them once",
            ));
        }
        (_, Some(Offsets::Pair(..))) => {
            return Err(Error::input(
                "--cu-seqlens-kv",
                "one list or one .npy of key offsets (the pair form belongs to --cu-seqlens)",
            ));
        }
        (Some(k), None) => Some(k),
        (None, Some(k)) => Some(k.read("--cu-seqlens-kv")?.0),
        (None, None) => None,
    };
    Ok((q, k))
}

/// The packed problem and its values (f32, before rounding): `Q`, `K`,
/// `V` from `--query/--key/--value` (`(T, H, D)`, `(T_kv, H_kv, D)`) or the
/// hash inputs of `--seed`, and the output gradient (`--grad-out` or hash
/// tensor `3 seed + 3`).
fn packed_args(args: &Args) -> Result<(Packed, [Vec<f32>; 4])> {
    for (flag, v) in [
        ("--batch", args.batch),
        ("--seq", args.seq),
        ("--seq-kv", args.seq_kv),
    ] {
        if v.is_some() {
            return Err(Error::input(
                flag,
                "a packed batch takes its sequences and their lengths from --cu-seqlens \
                 (and --cu-seqlens-kv); leave out --batch, --seq and --seq-kv",
            ));
        }
    }
    let (cu_q, cu_k) = offsets_of(args)?;
    let files = [&args.query, &args.key, &args.value];
    let read3 = |p: &Path| ptxlab_common::npy::read_nd::<f32>(p, "a float32 array (T, H, D)", 3);
    let (p, [q, k, v]) = if files.iter().any(|f| f.is_some()) {
        let [Some(qp), Some(kp), Some(vp)] = files else {
            return Err(Error::input(
                "--query/--key/--value",
                "give all three files, or none (random inputs from --heads --dim)",
            ));
        };
        if let Some((flag, _)) = [
            ("--heads", args.heads),
            ("--kv-heads", args.kv_heads),
            ("--dim", args.dim),
        ]
        .iter()
        .find(|(_, v)| v.is_some())
        {
            return Err(Error::input(
                *flag,
                "the heads and head dim come from the --query/--key/--value files",
            ));
        }
        let ((qs, q), (ks, k), (vs, v)) = (read3(qp)?, read3(kp)?, read3(vp)?);
        if ks != vs || qs[2] != ks[2] || ks[1] == 0 || !qs[1].is_multiple_of(ks[1]) {
            return Err(Error::input(
                "--query/--key/--value",
                format!(
                    "Q is {qs:?}, K {ks:?}, V {vs:?}; packed tensors are (T, H, D) and (T_kv, \
                     H_kv, D), K and V of one shape, one head dim, H_kv dividing H"
                ),
            ));
        }
        let p =
            Packed::new(qs[1], qs[2], args.causal, args.scale, cu_q, cu_k)?.with_kv_heads(ks[1])?;
        let (tq, tk) = p.tokens();
        if qs[0] != tq || ks[0] != tk {
            return Err(Error::input(
                "--query/--key",
                format!(
                    "Q has {} tokens and K {}; the offsets end at {tq} and {tk}",
                    qs[0], ks[0]
                ),
            ));
        }
        (p, [q, k, v])
    } else {
        let heads = args.heads.unwrap_or(4);
        let p = Packed::new(
            heads,
            args.dim.unwrap_or(128),
            args.causal,
            args.scale,
            cu_q,
            cu_k,
        )?
        .with_kv_heads(args.kv_heads.unwrap_or(heads))?;
        ptxlab_common::cli::check_host_arrays("--cu-seqlens", p.q_len().max(p.kv_len()), 4, 6)?;
        let s = args.seed.wrapping_mul(3);
        let x = [
            generated(s, p.q_len()),
            generated(s + 1, p.kv_len()),
            generated(s + 2, p.kv_len()),
        ];
        (p, x)
    };
    let p = match args.window {
        Some(w) => p.with_window(w)?,
        None => p,
    };
    let g = match &args.grad_out {
        Some(path) => {
            let (gs, g) = read3(path)?;
            let want = [p.tokens().0, p.base().heads, p.base().d];
            if gs != want {
                return Err(Error::input(
                    "--grad-out",
                    format!(
                        "dO is {gs:?}; it must have the shape of Q and O, (T, H, D) = {want:?}"
                    ),
                ));
            }
            g
        }
        None => generated(args.seed.wrapping_mul(3) + 3, p.q_len()),
    };
    Ok((p, [q, k, v, g]))
}

/// `ptxlab attention --cu-seqlens ...`: a packed variable-length batch on
/// rung 2 (and the backward pass with `--backward`), checked against the
/// f64 reference of every sequence (the first and the last on sampled
/// rows and head 0 when the problem is large) and timed; or the f64
/// reference alone with `--backend cpu`.
pub fn cli_packed(args: &Args) -> Result<Vec<Row>> {
    if let OneOrAll::One(r) = args.variant
        && r != Rung::Fa2
    {
        return Err(Error::input(
            format!("--variant {}", r.name()),
            "packed batches (--cu-seqlens) run on rung 2 (fa2); leave out --variant or give \
             --variant fa2",
        ));
    }
    let prec = args.precision;
    let (p, [q, k, v, g]) = packed_args(args)?;
    let backward = args.backward
        || args.grad_out.is_some()
        || args.dq.is_some()
        || args.dk.is_some()
        || args.dv.is_some();
    let bits = [
        round_checked(prec, "Q", &q)?,
        round_checked(prec, "K", &k)?,
        round_checked(prec, "V", &v)?,
        round_checked(prec, "dO", &g)?,
    ];
    let wide = bits.clone().map(|b| widen(prec, &b));
    let work: usize = (0..p.batch()).map(|b| super::cli::work(&p.seq(b))).sum();
    let flops = if backward { 2.5 * p.flops() } else { p.flops() };
    let size = if backward {
        format!("{} backward", p.label())
    } else {
        p.label()
    };
    println!(
        "attention {} {}, scale {:.6}, {:.3} GFLOP{}",
        p.label(),
        prec.name(),
        p.base().scale,
        flops / 1e9,
        if backward {
            " (backward: 2.5x the forward's)"
        } else {
            ""
        }
    );
    let (tq, tk) = p.tokens();
    let (h, hkv, d) = (p.base().heads, p.base().kv_heads, p.base().d);
    let val = |b: &[u16]| b.iter().map(|x| prec.value(*x)).collect::<Vec<f32>>();
    if args.backend == Backend::Cpu {
        let need = if backward { 3 * work } else { work };
        if need > CPU_MAX_WORK {
            return Err(Error::input(
                "--cu-seqlens",
                format!(
                    "{need} multiply-adds for the f64 reference; at most {CPU_MAX_WORK} with \
                     --backend cpu: use a smaller problem"
                ),
            ));
        }
        let t = std::time::Instant::now();
        let r = packed_reference(&p, &wide[0], &wide[1], &wide[2]);
        let grads =
            backward.then(|| packed_grad_reference(&p, [&wide[0], &wide[1], &wide[2], &wide[3]]));
        let ms = t.elapsed().as_secs_f64() * 1e3;
        println!("CPU f64 reference: {} ms", fmt_ms(ms));
        let f = |x: &[f64]| x.iter().map(|v| *v as f32).collect::<Vec<f32>>();
        write_packed(
            args,
            [tq, tk, h, hkv, d],
            [&f(&r.o), &f(&r.lse)],
            grads.as_ref().map(|g| g.clone().map(|x| f(&x))),
        )?;
        let t = ptxlab_common::runtime::Timing {
            median_ms: ms,
            min_ms: ms,
            max_ms: ms,
            reps: 1,
        };
        let what = if backward {
            "CPU f64 gradients"
        } else {
            "CPU f64 reference"
        };
        return Ok(vec![timed_row(
            NAME,
            what,
            "cpu",
            &size,
            "f64",
            &t,
            Some((flops / (ms * 1e-3) / 1e9, "GFLOP/s")),
        )]);
    }
    let dev = ptxlab_common::cli::open_device(args.backend)?.expect("gpu and sim have a device");
    let sim_max = if backward {
        SIM_MAX_WORK / 2
    } else {
        SIM_MAX_WORK
    };
    if dev.is_sim() && work > sim_max {
        return Err(Error::input(
            "--cu-seqlens",
            format!(
                "{work} multiply-adds per product on the simulator; at most {sim_max} (it runs on \
                 the CPU, with a race detector): use a smaller problem, or --backend cpu"
            ),
        ));
    }
    // Every sequence for smaller problems; the first and the last (sampled
    // rows, head 0 of the gradients) for larger ones.
    let full = work <= FULL_CHECK_WORK;
    let seqs: Vec<usize> = if full || p.batch() == 1 {
        (0..p.batch()).collect()
    } else {
        vec![0, p.batch() - 1]
    };
    let x = Inputs::upload_lens(&dev, (p.q_len(), p.kv_len()), &bits[0], &bits[1], &bits[2])?;
    let mut o = dev.alloc_filled(p.q_len(), POISON_16)?;
    let mut lse = dev.alloc_filled(p.lse_len(), f32::NAN)?;
    let mut plan = Plan::packed(&dev, prec, p.clone(), &x)?;
    plan.run(&dev, &mut o, Some(&mut lse))?;
    let (ob, lb) = (dev.download(&o)?, dev.download(&lse)?);
    let what = format!(
        "attention {} {} {}",
        Rung::Fa2.label(),
        prec.name(),
        p.label()
    );
    let inputs = [&wide[0][..], &wide[1], &wide[2]];
    let (e, max_score) =
        packed_errors(&p, prec, inputs, (&ob, &lb), &seqs, !full).map_err(|detail| {
            Error::Verification {
                what: what.clone(),
                detail,
            }
        })?;
    verify(&what, Rung::Fa2, prec, max_score, &e)?;
    let reps = if dev.is_sim() { 1 } else { args.reps };
    let checked = if full {
        "every sequence"
    } else {
        "first and last sequence, sampled rows"
    };
    let backend = if dev.is_sim() { "sim" } else { "gpu" };
    let per_s = |ms: f64| Some((flops / (ms * 1e-3) / 1e9, "GFLOP/s"));
    if !backward {
        let t = dev.time(1, reps, |_| plan.run(&dev, &mut o, None))?;
        println!(
            "PASS {} on {}: rel err {:.2e} (bound {:.1e}, {checked}), max {:.2e}, lse {:.1e}; \
             median {} ms ({}-{}), {:.1} TFLOP/s",
            Rung::Fa2.label(),
            dev.name(),
            e.rel,
            bound(Rung::Fa2, prec, max_score),
            e.max,
            e.lse,
            fmt_ms(t.median_ms),
            fmt_ms(t.min_ms),
            fmt_ms(t.max_ms),
            flops / (t.median_ms * 1e-3) / 1e12
        );
        write_packed(args, [tq, tk, h, hkv, d], [&val(&ob), &lb], None)?;
        let mut r = timed_row(
            NAME,
            Rung::Fa2.label(),
            backend,
            &size,
            prec.name(),
            &t,
            per_s(t.median_ms),
        );
        r.rel_err = Some(e.rel);
        return Ok(vec![r]);
    }
    let dout = dev.upload(&bits[3])?;
    let mut grads = Grads::poisoned_lens(&dev, p.q_len(), p.kv_len())?;
    let mut bwd = Backward::packed(&dev, prec, p.clone())?;
    let label = bwd.rung().label();
    bwd.run(&dev, &x, &o, &lse, &dout, &mut grads)?;
    let gb = [
        dev.download(&grads.dq)?,
        dev.download(&grads.dk)?,
        dev.download(&grads.dv)?,
    ];
    let what = format!("attention {label} {} {}", prec.name(), p.label());
    let ge = packed_grad_errors(
        &p,
        prec,
        [&wide[0][..], &wide[1], &wide[2], &wide[3]],
        [&gb[0][..], &gb[1], &gb[2]],
        &seqs,
        full,
    )
    .map_err(|detail| Error::Verification {
        what: what.clone(),
        detail,
    })?;
    verify_grads(&what, prec, &ge)?;
    let t = dev.time(1, reps, |_| bwd.run(&dev, &x, &o, &lse, &dout, &mut grads))?;
    let (b, bv) = grad_bounds(prec);
    println!(
        "PASS {label} on {}: rel err dQ {:.2e}, dK {:.2e} (bound {b:.1e}), dV {:.2e} (bound \
         {bv:.1e}), {checked}; median {} ms ({}-{}), {:.1} TFLOP/s",
        dev.name(),
        ge.dq,
        ge.dk,
        ge.dv,
        fmt_ms(t.median_ms),
        fmt_ms(t.min_ms),
        fmt_ms(t.max_ms),
        flops / (t.median_ms * 1e-3) / 1e12
    );
    write_packed(
        args,
        [tq, tk, h, hkv, d],
        [&val(&ob), &lb],
        Some([val(&gb[0]), val(&gb[1]), val(&gb[2])]),
    )?;
    let mut r = timed_row(
        NAME,
        label,
        backend,
        &size,
        prec.name(),
        &t,
        per_s(t.median_ms),
    );
    r.rel_err = Some(ge.dq.max(ge.dk).max(ge.dv));
    r.note = format!("dQ {:.1e} dK {:.1e} dV {:.1e}", ge.dq, ge.dk, ge.dv);
    Ok(vec![r])
}

/// Writes `--out` (`(T, H, D)`), `--lse` (`(T, H)`) and, with gradients,
/// `--dq` (`(T, H, D)`), `--dk` and `--dv` (`(T_kv, H_kv, D)`) when asked.
fn write_packed(
    args: &Args,
    [tq, tk, h, hkv, d]: [usize; 5],
    [o, lse]: [&[f32]; 2],
    grads: Option<[Vec<f32>; 3]>,
) -> Result<()> {
    let mut files: Vec<(&Option<PathBuf>, Vec<usize>, &[f32])> = vec![
        (&args.out, vec![tq, h, d], o),
        (&args.lse, vec![tq, h], lse),
    ];
    if let Some(g) = &grads {
        files.push((&args.dq, vec![tq, h, d], &g[0]));
        files.push((&args.dk, vec![tk, hkv, d], &g[1]));
        files.push((&args.dv, vec![tk, hkv, d], &g[2]));
    }
    for (path, shape, x) in files {
        if let Some(path) = path {
            ptxlab_common::npy::write_reported(path, &shape, x)?;
        }
    }
    Ok(())
}
