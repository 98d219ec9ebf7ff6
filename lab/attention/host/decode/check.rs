//! Checks against the f64 reference and the simulator check of every
//! decoding kernel instance.
//!
//! # The bound
//! As the fused forward rungs (`super::super::check`): the inputs are
//! rounded to BF16 first and the reference is computed in f64 from those
//! values, so only the kernels' rounding counts. The probabilities are
//! rounded to BF16 before `P V` and the output once at the end (each at
//! most `u = 2^-8` relative, and the output a weighted mean), while the
//! scores, the sums, the partial results of the splits and their merge
//! stay f32 (and `ex2.approx`, `lg2.approx`: about `2^-22`). So the
//! relative error by norm is held to `4u` and the largest error over the
//! largest reference value to twice that; the log-sum-exp, which sees no
//! 16-bit rounding, to `2^-16 (1 + max |scale s|)`.

use super::launch::{DecodeInputs, DecodePlan};
use super::problem::{DecodeShape, HostInputs, Reference, all_rows, generate, reference};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::runtime::Device;

/// The output poison: a NaN in BF16.
pub const POISON: u16 = 0x7fff;

/// What a check measured (the forward pass's measures).
pub use super::super::check::Errors;

/// The bound on [`Errors::rel`] (module docs): `4u`, `u = 2^-8`.
pub fn bound() -> f64 {
    4.0 * 2f64.powi(-8)
}

/// The bound on [`Errors::lse`] for the reference's largest `|scale s|`.
pub fn lse_bound(max_score: f64) -> f64 {
    2f64.powi(-16) * (1.0 + max_score)
}

/// The errors of `o` (every row's output as BF16 bits) and `lse` on the
/// reference's rows; a value never written (the poison) or not finite is
/// an error naming the row.
pub fn errors(
    shape: &DecodeShape,
    refr: &Reference,
    o: &[u16],
    lse: &[f32],
) -> std::result::Result<Errors, String> {
    let d = shape.d;
    let mut got = Vec::with_capacity(refr.o.len());
    let mut e_lse = 0f64;
    for (i, &(b, t, h)) in refr.rows.iter().enumerate() {
        let row = (b * shape.q_len + t) * shape.heads + h;
        for c in 0..d {
            let v = super::super::types::Precision::Bf16.value(o[row * d + c]);
            if !v.is_finite() {
                return Err(format!(
                    "O[sequence {b}, token {t}, head {h}, dim {c}] is {v} (never written, or \
                     overflow)"
                ));
            }
            got.push(v as f64);
        }
        let l = lse[row] as f64;
        if !l.is_finite() {
            return Err(format!(
                "lse[sequence {b}, token {t}, head {h}] is {l} (never written)"
            ));
        }
        e_lse = e_lse.max((l - refr.lse[i]).abs());
    }
    Ok(Errors::of_output(&got, &refr.o, e_lse))
}

/// `Ok` when `e` is within the bounds (module docs), else the verification
/// error naming `what`.
pub fn verify(what: &str, max_score: f64, e: &Errors) -> Result<()> {
    e.within(what, bound(), lse_bound(max_score))
}

/// Runs one decoding step of `x` (outputs poisoned first) and checks it
/// against `refr`; returns the plan (for timing) and the errors.
pub fn run_checked(
    dev: &Device,
    shape: &DecodeShape,
    x: &DecodeInputs,
    refr: &Reference,
    split_keys: Option<usize>,
) -> Result<(DecodePlan, Errors, Vec<u16>, Vec<f32>)> {
    let mut plan = DecodePlan::new(dev, shape, split_keys)?;
    let mut out = dev.alloc_filled(shape.q_elems(), POISON)?;
    let mut lse = dev.alloc_filled(shape.out_rows(), f32::NAN)?;
    plan.run(dev, x, &mut out, &mut lse)?;
    let (o, l) = (dev.download(&out)?, dev.download(&lse)?);
    let what = format!(
        "attention-decode {} ({} keys per split)",
        shape.label(),
        plan.split_keys()
    );
    let e = errors(shape, refr, &o, &l).map_err(|detail| Error::Verification {
        what: what.clone(),
        detail,
    })?;
    verify(&what, refr.max_score, &e)?;
    Ok((plan, e, o, l))
}

/// Generates the inputs of `seed`, runs `shape` and checks every row
/// against the f64 reference.
pub fn check_decode(
    dev: &Device,
    shape: &DecodeShape,
    seed: u64,
    split_keys: Option<usize>,
) -> Result<Errors> {
    let x: HostInputs = generate(shape, seed);
    let refr = reference(shape, &x, all_rows(shape));
    let dx = DecodeInputs::upload(dev, shape, &x)?;
    Ok(run_checked(dev, shape, &dx, &refr, split_keys)?.1)
}

/// The simulator's shapes: `(batch, heads, kv_heads, q_len, d, page_size,
/// kv_lens, split_keys)`, one per kernel instance (`D`, rows per block):
/// a sequence of one token, lengths with a partial last page and a partial
/// last tile, splits shorter than a sequence (so the merge has work),
/// grouped heads with one and several row blocks per `K`/`V` head, and
/// page sizes 16, 1 and 128.
#[allow(clippy::type_complexity)]
pub const SIM_SHAPES: [(usize, usize, usize, usize, usize, usize, &[usize], usize); 5] = [
    (3, 4, 2, 1, 64, 16, &[1, 77, 133], 64),
    (2, 8, 1, 2, 64, 16, &[133, 77], 64),
    (3, 4, 2, 3, 128, 1, &[3, 133, 77], 64),
    (2, 12, 1, 2, 128, 128, &[77, 200], 128),
    (2, 6, 2, 3, 256, 16, &[133, 9], 64),
];

/// The shape of one entry of [`SIM_SHAPES`].
pub fn sim_shape(i: usize) -> Result<(DecodeShape, usize)> {
    let (b, h, hkv, ql, d, ps, lens, split) = SIM_SHAPES[i];
    Ok((
        DecodeShape::generated(b, h, hkv, ql, d, ps, lens.to_vec(), None)?,
        split,
    ))
}

/// Every decoding kernel instance on the simulator against the f64
/// reference at [`SIM_SHAPES`].
pub fn sim_check() -> Result<()> {
    let dev = Device::sim();
    for i in 0..SIM_SHAPES.len() {
        let (shape, split) = sim_shape(i)?;
        check_decode(&dev, &shape, i as u64 + 1, Some(split))?;
    }
    Ok(())
}
