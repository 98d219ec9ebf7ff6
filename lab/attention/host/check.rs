//! Checks against the f64 reference: the error measures, their bounds and
//! why, and [`sim_check_16bit`] (every 16-bit kernel on the simulator at odd shapes).
//!
//! # The bounds
//! The inputs are rounded to the working type first; the reference is
//! computed in f64 from those rounded values, so only the kernels' own
//! rounding counts. A fused rung rounds twice: each probability `p` to
//! the 16-bit type before `P V` (relative error at most `u`, the unit
//! roundoff: 2^-8 for BF16, 2^-11 for FP16) and each output once (again at
//! most `u`). Scores, sums and accumulators are f32 (relative 2^-24 per
//! operation) and the exponentials `ex2.approx` (2^-22): negligible
//! against `u`. Each output is a weighted mean `O = sum_j p_j V_j / l`,
//! so its error from the `p` roundings is a weighted mean of errors of at
//! most `u`, and the two roundings add up to at most about `2u` in the
//! norm of `O`; the bound is twice that, `4u` (1.6e-2 BF16, 2.0e-3 FP16).
//! Rung 1 also rounds the scores `s` to the 16-bit type (the GEMM's
//! output) before the exponential: an absolute error up to `u |scale s|`
//! in the exponent, so its bound is `u (4 + 2 max |scale s|)`.
//!
//! The same measures are applied to torch's result at the same inputs in
//! the bench (`peers/attention.py`): the relative error by norm over the
//! compared rows, and the largest absolute error over the largest
//! reference value ("max").

use super::backward::{Backward, BwdRung, GradErrors, Grads, grad_errors, verify_grads};
use super::cpu::{POISON_16, Reference, all_rows, check_inputs, reference, widen};
use super::cpu::{grad_reference, sample_rows};
use super::launch::{Inputs, Plan};
use super::packed::{Packed, packed_inputs};
use super::types::{Precision, Rung, Shape};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::rng::rel_err_norm;
use ptxlab_common::runtime::Device;

/// What a check measured.
#[derive(Debug, Clone, Copy)]
pub struct Errors {
    /// `||o - ref|| / ||ref||` over the compared rows.
    pub rel: f64,
    /// `max |o - ref| / max |ref|`.
    pub max: f64,
    /// Largest `|lse - ref|` (natural units), `0` when not checked.
    pub lse: f64,
}

impl Errors {
    /// The errors of the output rows `got` against the reference's `want`
    /// (the same rows), with the log-sum-exp's error `lse`.
    pub fn of_output(got: &[f64], want: &[f64], lse: f64) -> Self {
        let peak = want.iter().fold(0f64, |m, v| m.max(v.abs()));
        let worst = got
            .iter()
            .zip(want)
            .fold(0f64, |m, (a, b)| m.max((a - b).abs()));
        Errors {
            rel: rel_err_norm(got, want),
            max: if peak > 0.0 { worst / peak } else { worst },
            lse,
        }
    }

    /// `Ok` when the relative error is within `b`, the largest within
    /// `2 b` and the log-sum-exp's within `lb` (NaN is never within), else
    /// the verification error naming `what`.
    pub fn within(&self, what: &str, b: f64, lb: f64) -> Result<()> {
        if !(self.rel <= b) || !(self.max <= 2.0 * b) || !(self.lse <= lb) {
            return Err(Error::Verification {
                what: what.into(),
                detail: format!(
                    "relative error {:.2e} (bound {b:.1e}), max {:.2e} (bound {:.1e}), lse {:.2e} \
                     (bound {lb:.1e})",
                    self.rel,
                    self.max,
                    2.0 * b,
                    self.lse
                ),
            });
        }
        Ok(())
    }
}

/// The bound on [`Errors::rel`] for `rung` in `prec` (module docs);
/// `max_score` is the reference's largest `|scale s|`. [`Errors::max`] is
/// held to twice it, the log-sum-exp to `u (1 + max_score)` (rung 1) or
/// `2^-16 (1 + max_score)` (the fused rungs: f32 scores and sums).
pub fn bound(rung: Rung, prec: Precision, max_score: f64) -> f64 {
    let u = prec.unit_roundoff();
    match rung {
        Rung::Split => u * (4.0 + 2.0 * max_score),
        _ => 4.0 * u,
    }
}

fn lse_bound(rung: Rung, prec: Precision, max_score: f64) -> f64 {
    match rung {
        Rung::Split => prec.unit_roundoff() * (1.0 + max_score),
        _ => 2f64.powi(-16) * (1.0 + max_score),
    }
}

/// The errors of `o` (all heads' outputs as bits) and `lse` (when given)
/// on the reference's rows; an output never written (the poison) or not
/// finite is an error naming the element.
pub fn errors(
    shape: &Shape,
    prec: Precision,
    refr: &Reference,
    o: &[u16],
    lse: Option<&[f32]>,
) -> std::result::Result<Errors, String> {
    let d = shape.d;
    let mut got = Vec::with_capacity(refr.o.len());
    for &(h, r) in &refr.rows {
        let at = (h * shape.sq + r) * d;
        for c in 0..d {
            let v = prec.value(o[at + c]);
            if !v.is_finite() {
                return Err(format!(
                    "O[head {h}, row {r}, col {c}] is {v} (never written, or overflow)"
                ));
            }
            got.push(v as f64);
        }
    }
    let mut e = Errors::of_output(&got, &refr.o, 0.0);
    if let Some(l) = lse {
        for (i, &(h, r)) in refr.rows.iter().enumerate() {
            let v = l[h * shape.sq + r] as f64;
            if !v.is_finite() {
                return Err(format!("lse[head {h}, row {r}] is {v} (never written)"));
            }
            e.lse = e.lse.max((v - refr.lse[i]).abs());
        }
    }
    Ok(e)
}

/// `Ok` when `e` is within the bounds of `rung` (module docs), else the
/// verification error naming `what`.
pub fn verify(what: &str, rung: Rung, prec: Precision, max_score: f64, e: &Errors) -> Result<()> {
    e.within(
        what,
        bound(rung, prec, max_score),
        lse_bound(rung, prec, max_score),
    )
}

/// Runs `rung` on `shape` against the full f64 reference, outputs and
/// log-sum-exp poisoned first; returns the errors after [`verify`].
pub fn check_rung(
    dev: &Device,
    rung: Rung,
    prec: Precision,
    shape: &Shape,
    seed: u64,
) -> Result<Errors> {
    let [q, k, v] = check_inputs(shape, prec, seed, 2.0)?;
    let x = Inputs::upload(dev, shape, &q, &k, &v)?;
    let refr = reference(
        shape,
        &widen(prec, &q),
        &widen(prec, &k),
        &widen(prec, &v),
        all_rows(shape),
    );
    let mut o = dev.alloc_filled(shape.q_len(), POISON_16)?;
    let mut lse = dev.alloc_filled(shape.bh() * shape.sq, f32::NAN)?;
    let mut plan = Plan::new(dev, rung, prec, *shape, &x)?;
    plan.run(dev, &mut o, Some(&mut lse))?;
    let (o, lse) = (dev.download(&o)?, dev.download(&lse)?);
    let what = format!(
        "attention {} {} {}",
        rung.label(),
        prec.name(),
        shape.label()
    );
    let e = errors(shape, prec, &refr, &o, Some(&lse)).map_err(|detail| Error::Verification {
        what: what.clone(),
        detail,
    })?;
    verify(&what, rung, prec, refr.max_score, &e)?;
    Ok(e)
}

/// The odd shapes of the simulator checks: `(batch, heads, sq, skv)`,
/// lengths that are not multiples of any tile, queries and keys of
/// different lengths both ways.
pub const SIM_SHAPES: [(usize, usize, usize, usize); 2] = [(1, 2, 77, 133), (2, 1, 133, 77)];

/// The grouped-head shapes of the simulator checks: `(batch, heads,
/// kv_heads, sq, skv)`: two query heads per `K`/`V` head, and one `K`/`V`
/// head for all (multi-query) with two batch elements (so the flat `K`/`V`
/// head `b H_kv + h / group` is exercised past the first element).
pub const SIM_GQA_SHAPES: [(usize, usize, usize, usize, usize); 2] =
    [(1, 4, 2, 77, 133), (2, 2, 1, 133, 77)];

/// Every kernel of the workload on the simulator against the f64
/// reference: each rung, each `(precision, D)` instance, causal and not,
/// at the odd shapes of [`SIM_SHAPES`], and the backward pass once per
/// instance; then, per instance, every rung and the backward pass at one
/// grouped-head shape of [`SIM_GQA_SHAPES`], rungs 1-2 and the backward
/// pass with a sliding window, and rung 2 and the backward pass on a
/// packed variable-length batch ([`SIM_PACKED`]); and per precision the
/// rungs that take `D = 256` and the backward pass, causal and not, dense
/// and grouped. The workload's simulator check adds the FP8 forward's
/// (`fp8::sim_check_fp8`).
pub fn sim_check_16bit() -> Result<()> {
    let dev = Device::sim();
    for (i, prec) in Precision::ALL.into_iter().enumerate() {
        for (j, d) in [64usize, 128].into_iter().enumerate() {
            let (b, h, sq, skv) = SIM_SHAPES[(i + j) % SIM_SHAPES.len()];
            for causal in [false, true] {
                let shape = Shape::new(b, h, sq, skv, d, causal, None)?;
                for rung in Rung::ALL {
                    if rung.refuses(&shape).is_some() {
                        continue;
                    }
                    check_rung(
                        &dev,
                        rung,
                        prec,
                        &shape,
                        (i * 4 + j * 2 + causal as usize) as u64,
                    )?;
                }
            }
            // The backward pass, once per instance, causal for one D of
            // each precision and not for the other.
            let (b, h, sq, skv) = SIM_SHAPES[(i + j + 1) % SIM_SHAPES.len()];
            let shape = Shape::new(b, h, sq, skv, d, (i + j) % 2 == 1, None)?;
            super::backward::check_backward_rungs(&dev, prec, &shape, (i * 2 + j) as u64)?;
            // Grouped K/V heads: every rung and the backward pass.
            let (b, h, hkv, sq, skv) = SIM_GQA_SHAPES[(i + j) % SIM_GQA_SHAPES.len()];
            let shape = Shape::new(b, h, sq, skv, d, (i + j) % 2 == 0, None)?.with_kv_heads(hkv)?;
            for rung in Rung::ALL {
                if rung.refuses(&shape).is_none() {
                    check_rung(&dev, rung, prec, &shape, (i * 2 + j + 8) as u64)?;
                }
            }
            super::backward::check_backward_rungs(&dev, prec, &shape, (i * 2 + j + 8) as u64)?;
            // A sliding window that crosses the tiles' edges: rungs 1-2 and
            // the backward pass, causal for one D of each precision.
            let (b, h, sq, skv) = SIM_SHAPES[(i + j) % SIM_SHAPES.len()];
            let window = if sq > skv { sq - skv + 9 } else { 21 };
            let shape =
                Shape::new(b, h, sq, skv, d, (i + j) % 2 == 1, None)?.with_window(window)?;
            for rung in Rung::ALL {
                if rung.refuses(&shape).is_none() {
                    check_rung(&dev, rung, prec, &shape, (i * 2 + j + 16) as u64)?;
                }
            }
            super::backward::check_backward_rungs(&dev, prec, &shape, (i * 2 + j + 16) as u64)?;
            // A packed variable-length batch, two query heads per K/V head,
            // forward and backward: causal for one D of each precision,
            // and with a window for the other.
            let (cu_q, cu_k) = SIM_PACKED[(i + j) % SIM_PACKED.len()];
            let p = Packed::new(
                4,
                d,
                (i + j) % 2 == 1,
                None,
                cu_q.to_vec(),
                Some(cu_k.to_vec()),
            )?
            .with_kv_heads(2)?;
            let p = if (i + j) % 2 == 1 {
                p
            } else {
                p.with_window(60)?
            };
            check_packed(&dev, prec, &p, (i * 2 + j + 24) as u64, true)?;
        }
        // D = 256 (rungs 1, 4 and 5, and the backward's rung 2): causal
        // and not at an odd shape, and with grouped heads.
        let (b, h, sq, skv) = SIM_SHAPES[i % SIM_SHAPES.len()];
        let (gb, gh, ghkv, gsq, gskv) = SIM_GQA_SHAPES[(i + 1) % SIM_GQA_SHAPES.len()];
        for causal in [false, true] {
            let dense = Shape::new(b, h, sq, skv, 256, causal, None)?;
            let grouped = Shape::new(gb, gh, gsq, gskv, 256, !causal, None)?.with_kv_heads(ghkv)?;
            for shape in [dense, grouped] {
                for rung in Rung::ALL {
                    if rung.refuses(&shape).is_none() {
                        check_rung(
                            &dev,
                            rung,
                            prec,
                            &shape,
                            (i * 2 + causal as usize + 32) as u64,
                        )?;
                    }
                }
                let seed = (i * 2 + causal as usize + 36) as u64;
                super::backward::check_backward_rungs(&dev, prec, &shape, seed)?;
            }
        }
    }
    Ok(())
}

/// The errors of a packed result on the sequences `seqs`: each
/// sequence's output (bits) and log-sum-exp gathered into its dense
/// layout and measured by [`errors`] against the f64 reference of its rows
/// (every row, or [`sample_rows`] when `sampled`). Returns the largest of
/// each measure over the sequences and the largest `|scale s|`; an output
/// never written (the poison) is an error naming its sequence.
pub fn packed_errors(
    p: &Packed,
    prec: Precision,
    [q, k, v]: [&[f32]; 3],
    (o, lse): (&[u16], &[f32]),
    seqs: &[usize],
    sampled: bool,
) -> std::result::Result<(Errors, f64), String> {
    let mut worst = Errors {
        rel: 0.0,
        max: 0.0,
        lse: 0.0,
    };
    let mut max_score = 0f64;
    for &b in seqs {
        let s = p.seq(b);
        let rows = if sampled {
            sample_rows(&s)
        } else {
            all_rows(&s)
        };
        let r = reference(
            &s,
            &p.gather(q, false, b),
            &p.gather(k, true, b),
            &p.gather(v, true, b),
            rows,
        );
        let (ob, lb) = (
            p.gather_rows(o, false, b, p.base().d),
            p.gather_rows(lse, false, b, 1),
        );
        let e = errors(&s, prec, &r, &ob, Some(&lb)).map_err(|e| format!("sequence {b}: {e}"))?;
        worst.rel = worst.rel.max(e.rel);
        worst.max = worst.max.max(e.max);
        worst.lse = worst.lse.max(e.lse);
        max_score = max_score.max(r.max_score);
    }
    Ok((worst, max_score))
}

/// The errors of packed gradients (bits) on the sequences `seqs`, each
/// gathered into its dense layout and measured by [`grad_errors`] against
/// the f64 gradients of its query heads (`heads`: every head, or head 0
/// and its `K`/`V` head); the largest of each over the sequences.
pub fn packed_grad_errors(
    p: &Packed,
    prec: Precision,
    inputs: [&[f32]; 4],
    grads: [&[u16]; 3],
    seqs: &[usize],
    every_head: bool,
) -> std::result::Result<GradErrors, String> {
    let [q, k, v, g] = inputs;
    let [dq, dk, dv] = grads;
    let d = p.base().d;
    let mut worst = GradErrors {
        dq: 0.0,
        dk: 0.0,
        dv: 0.0,
    };
    for &b in seqs {
        let s = p.seq(b);
        let heads: Vec<usize> = if every_head {
            (0..s.heads).collect()
        } else {
            vec![0]
        };
        let r = grad_reference(
            &s,
            &p.gather(q, false, b),
            &p.gather(k, true, b),
            &p.gather(v, true, b),
            &p.gather(g, false, b),
            &heads,
        );
        let e = grad_errors(
            &s,
            prec,
            &r,
            &p.gather_rows(dq, false, b, d),
            &p.gather_rows(dk, true, b, d),
            &p.gather_rows(dv, true, b, d),
        )
        .map_err(|e| format!("sequence {b}: {e}"))?;
        worst.dq = worst.dq.max(e.dq);
        worst.dk = worst.dk.max(e.dk);
        worst.dv = worst.dv.max(e.dv);
    }
    Ok(worst)
}

/// Rung 2 on the packed batch `p` (output and log-sum-exp poisoned first)
/// against the f64 reference of every token, then, when `backward`, the
/// backward pass (gradients poisoned first) against the f64 gradients;
/// returns the errors after [`verify`] and [`verify_grads`].
pub fn check_packed(
    dev: &Device,
    prec: Precision,
    p: &Packed,
    seed: u64,
    backward: bool,
) -> Result<(Errors, Option<GradErrors>)> {
    let [q, k, v, g] = packed_inputs(p, prec, seed)?;
    let wide = [&q, &k, &v, &g].map(|b| widen(prec, b));
    let x = Inputs::upload_lens(dev, (p.q_len(), p.kv_len()), &q, &k, &v)?;
    let mut o = dev.alloc_filled(p.q_len(), POISON_16)?;
    let mut lse = dev.alloc_filled(p.lse_len(), f32::NAN)?;
    Plan::packed(dev, prec, p.clone(), &x)?.run(dev, &mut o, Some(&mut lse))?;
    let what = format!(
        "attention {} {} {}",
        Rung::Fa2.label(),
        prec.name(),
        p.label()
    );
    let seqs: Vec<usize> = (0..p.batch()).collect();
    let inputs = [&wide[0][..], &wide[1], &wide[2]];
    let (e, max_score) = packed_errors(
        p,
        prec,
        inputs,
        (&dev.download(&o)?, &dev.download(&lse)?),
        &seqs,
        false,
    )
    .map_err(|detail| Error::Verification {
        what: what.clone(),
        detail,
    })?;
    verify(&what, Rung::Fa2, prec, max_score, &e)?;
    if !backward {
        return Ok((e, None));
    }
    let dout = dev.upload(&g)?;
    // Every backward rung the device runs; the errors returned are the
    // last rung's (each passed its bounds).
    let mut last = None;
    for rung in BwdRung::all_on(dev, p.base().d) {
        let mut grads = Grads::poisoned_lens(dev, p.q_len(), p.kv_len())?;
        Backward::packed(dev, prec, p.clone())?
            .with_rung(dev, rung)?
            .run(dev, &x, &o, &lse, &dout, &mut grads)?;
        let what = format!("attention {} {} {}", rung.label(), prec.name(), p.label());
        let ge = packed_grad_errors(
            p,
            prec,
            [&wide[0][..], &wide[1], &wide[2], &wide[3]],
            [
                &dev.download(&grads.dq)?,
                &dev.download(&grads.dk)?,
                &dev.download(&grads.dv)?,
            ],
            &seqs,
            true,
        )
        .map_err(|detail| Error::Verification {
            what: what.clone(),
            detail,
        })?;
        verify_grads(&what, prec, &ge)?;
        last = Some(ge);
    }
    Ok((e, last))
}

/// The ragged batches of the simulator checks: `(query offsets, key
/// offsets)`: three sequences of lengths that are no multiple of a tile,
/// one with more queries than keys and one with fewer, and a short one.
pub const SIM_PACKED: [(&[usize], &[usize]); 2] = [
    (&[0, 77, 210, 229], &[0, 133, 210, 300]),
    (&[0, 133, 152, 229], &[0, 77, 160, 179]),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Rung 2 and the backward pass on the simulator: a ragged batch with
    /// a sequence longer than a tile in queries and keys, one of five
    /// queries, grouped heads; causal, then with a window. The check
    /// compares every token against the f64 reference (outputs poisoned).
    #[test]
    fn a_ragged_batch_matches_the_reference_on_the_simulator() {
        let dev = Device::sim();
        let p = Packed::new(
            2,
            64,
            true,
            None,
            vec![0, 70, 75, 140],
            Some(vec![0, 65, 131, 140]),
        )
        .and_then(|p| p.with_kv_heads(1))
        .unwrap();
        let (e, g) = check_packed(&dev, Precision::Bf16, &p, 3, true).unwrap();
        let g = g.unwrap();
        assert!(e.rel > 0.0 && e.rel < 1e-2 && g.dq > 0.0, "{e:?} {g:?}");
        let p = Packed::new(2, 64, false, None, vec![0, 70, 75, 140], None)
            .and_then(|p| p.with_window(9))
            .unwrap();
        check_packed(&dev, Precision::F16, &p, 4, true).unwrap();
    }
}
