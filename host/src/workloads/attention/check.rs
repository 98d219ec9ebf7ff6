//! Checks against the f64 reference: the error measures, their bounds and
//! why, and [`sim_check`] (every kernel on the simulator at odd shapes).
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

use super::cpu::{POISON_16, Reference, all_rows, check_inputs, reference, widen};
use super::launch::{Inputs, Plan};
use super::packed::{Packed, SIM_PACKED, check_packed};
use super::types::{Precision, Rung, Shape};
use crate::error::{Error, Result};
use crate::rng::rel_err_norm;
use crate::runtime::Device;

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
    let rel = rel_err_norm(&got, &refr.o);
    let peak = refr.o.iter().fold(0f64, |m, v| m.max(v.abs()));
    let worst = got
        .iter()
        .zip(&refr.o)
        .fold(0f64, |m, (a, b)| m.max((a - b).abs()));
    let mut e = Errors {
        rel,
        max: if peak > 0.0 { worst / peak } else { worst },
        lse: 0.0,
    };
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
    let b = bound(rung, prec, max_score);
    let lb = lse_bound(rung, prec, max_score);
    if !(e.rel <= b) || !(e.max <= 2.0 * b) || !(e.lse <= lb) {
        return Err(Error::Verification {
            what: what.into(),
            detail: format!(
                "relative error {:.2e} (bound {b:.1e}), max {:.2e} (bound {:.1e}), lse {:.2e} \
                 (bound {lb:.1e})",
                e.rel,
                e.max,
                2.0 * b,
                e.lse
            ),
        });
    }
    Ok(())
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
/// packed variable-length batch ([`SIM_PACKED`]).
pub fn sim_check() -> Result<()> {
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
            super::backward::check_backward(&dev, prec, &shape, (i * 2 + j) as u64)?;
            // Grouped K/V heads: every rung and the backward pass.
            let (b, h, hkv, sq, skv) = SIM_GQA_SHAPES[(i + j) % SIM_GQA_SHAPES.len()];
            let shape = Shape::new(b, h, sq, skv, d, (i + j) % 2 == 0, None)?.with_kv_heads(hkv)?;
            for rung in Rung::ALL {
                if rung.refuses(&shape).is_none() {
                    check_rung(&dev, rung, prec, &shape, (i * 2 + j + 8) as u64)?;
                }
            }
            super::backward::check_backward(&dev, prec, &shape, (i * 2 + j + 8) as u64)?;
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
            super::backward::check_backward(&dev, prec, &shape, (i * 2 + j + 16) as u64)?;
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
    }
    Ok(())
}
