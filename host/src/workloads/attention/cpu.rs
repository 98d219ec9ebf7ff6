//! Inputs, their rounding to the working precision, and the f64 CPU
//! reference (with the log-sum-exp).

use super::types::{Precision, Shape};
use crate::error::{Error, Result};
use rayon::prelude::*;

/// Input `i` of tensor `tensor` (0: `Q`, 1: `K`, 2: `V`; add 3 per seed):
/// a hash of the index, uniform in `[-sqrt(3), sqrt(3))` (unit variance, so
/// with the default scale the scores have unit variance too). Integer
/// arithmetic that `peers/attention.py` repeats exactly in torch, so the
/// torch peers see the same inputs.
pub fn hash_value(tensor: u64, i: u64) -> f32 {
    const M32: u64 = 0xffff_ffff;
    let mut x = i
        .wrapping_mul(0x9e37_79b1)
        .wrapping_add((tensor + 1).wrapping_mul(0x85eb_ca77))
        & M32;
    x ^= x >> 16;
    x = (x * 0x045d_9f3b) & M32;
    x ^= x >> 16;
    x = (x * 0x045d_9f3b) & M32;
    x ^= x >> 16;
    let u = x as f64 / 4294967296.0;
    ((2.0 * u - 1.0) * 3f64.sqrt()) as f32
}

/// `n` values of tensor `tensor` ([`hash_value`]).
pub fn generated(tensor: u64, n: usize) -> Vec<f32> {
    (0..n)
        .into_par_iter()
        .map(|i| hash_value(tensor, i as u64))
        .collect()
}

/// `x` rounded to `prec` (bits), refusing non-finite values and values that
/// overflow the type, with the tensor's name and the index in the message.
pub fn round_checked(prec: Precision, what: &str, x: &[f32]) -> Result<Vec<u16>> {
    if let Some(i) = x.iter().position(|v| !v.is_finite()) {
        return Err(Error::input(
            what,
            format!("element {i} is {}; inputs must be finite numbers", x[i]),
        ));
    }
    let bits: Vec<u16> = x.par_iter().map(|v| prec.round(*v)).collect();
    if let Some(i) = bits.iter().position(|b| !prec.value(*b).is_finite()) {
        return Err(Error::input(
            what,
            format!(
                "element {i} is {:e}, which overflows {} (largest finite {}); rescale the input \
                 or use --precision bf16",
                x[i],
                prec.name(),
                if prec == Precision::F16 {
                    "65504"
                } else {
                    "3.39e38"
                }
            ),
        ));
    }
    Ok(bits)
}

/// The values of 16-bit bits, as f32.
pub fn widen(prec: Precision, bits: &[u16]) -> Vec<f32> {
    bits.par_iter().map(|b| prec.value(*b)).collect()
}

/// The f64 reference on some rows: `o` (`rows.len() x d`), `lse` per row,
/// and the largest `|scale s|` seen (rung 1's error bound uses it).
#[derive(Debug, Clone)]
pub struct Reference {
    /// The `(head, query row)` pairs, in order.
    pub rows: Vec<(usize, usize)>,
    /// Output rows, `d` values each.
    pub o: Vec<f64>,
    /// Log-sum-exp (natural units) per row.
    pub lse: Vec<f64>,
    /// Largest `|scale s|` over the unmasked scores of these rows.
    pub max_score: f64,
}

/// Every row of every head, in order.
pub fn all_rows(shape: &Shape) -> Vec<(usize, usize)> {
    (0..shape.bh())
        .flat_map(|h| (0..shape.sq).map(move |r| (h, r)))
        .collect()
}

/// The rows a large check compares: of the first and the last head, every
/// 64th query row and the last one (what `peers/attention.py` compares
/// too).
pub fn sample_rows(shape: &Shape) -> Vec<(usize, usize)> {
    let mut heads = vec![0];
    if shape.bh() > 1 {
        heads.push(shape.bh() - 1);
    }
    let mut rows: Vec<usize> = (0..shape.sq).step_by(64).collect();
    if rows.last() != Some(&(shape.sq - 1)) {
        rows.push(shape.sq - 1);
    }
    heads
        .iter()
        .flat_map(|&h| rows.iter().map(move |&r| (h, r)))
        .collect()
}

/// Attention in f64 on the given rows, from the (rounded) input values.
pub fn reference(
    shape: &Shape,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    rows: Vec<(usize, usize)>,
) -> Reference {
    let (sq, skv, d) = (shape.sq, shape.skv, shape.d);
    let per: Vec<(Vec<f64>, f64, f64)> = rows
        .par_iter()
        .map(|&(h, r)| {
            let qr = &q[(h * sq + r) * d..(h * sq + r + 1) * d];
            let seen = if shape.causal { skv.min(r + 1) } else { skv };
            let mut s = vec![0f64; seen];
            let mut m = f64::NEG_INFINITY;
            let mut big = 0f64;
            for (j, sj) in s.iter_mut().enumerate() {
                let kr = &k[(h * skv + j) * d..(h * skv + j + 1) * d];
                let dot: f64 = qr.iter().zip(kr).map(|(a, b)| *a as f64 * *b as f64).sum();
                *sj = dot * shape.scale;
                m = m.max(*sj);
                big = big.max(sj.abs());
            }
            let mut o = vec![0f64; d];
            let mut l = 0f64;
            for (j, sj) in s.iter().enumerate() {
                let p = (sj - m).exp();
                l += p;
                let vr = &v[(h * skv + j) * d..(h * skv + j + 1) * d];
                for (x, y) in o.iter_mut().zip(vr) {
                    *x += p * *y as f64;
                }
            }
            for x in &mut o {
                *x /= l;
            }
            (o, m + l.ln(), big)
        })
        .collect();
    let mut o = Vec::with_capacity(rows.len() * d);
    let mut lse = Vec::with_capacity(rows.len());
    let mut max_score = 0f64;
    for (row, l, big) in per {
        o.extend(row);
        lse.push(l);
        max_score = max_score.max(big);
    }
    Reference {
        rows,
        o,
        lse,
        max_score,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_inputs_are_the_ones_the_torch_peer_makes() {
        // Bit patterns from peers/attention.py's arithmetic (Python ints,
        // then float32 rounding).
        for (t, i, bits) in [
            (0u64, 0u64, 0xbea3_d052u32),
            (1, 1, 0x3ed8_35a5),
            (2, 12345, 0x3fd8_b950),
            (0, (1 << 26) + 17, 0xbea4_b13f),
            (5, (1 << 31) + 3, 0x3f84_b5ff),
        ] {
            assert_eq!(hash_value(t, i).to_bits(), bits, "tensor {t}, index {i}");
        }
    }

    #[test]
    fn the_reference_on_a_case_worked_by_hand() {
        // Two keys with scores 0 and ln 3 (scale 1): weights 1/4, 3/4.
        let shape = Shape::new(1, 1, 1, 2, 1, false, Some(1.0)).unwrap();
        let r = reference(
            &shape,
            &[3f32.ln()],
            &[0.0, 1.0],
            &[4.0, 8.0],
            all_rows(&shape),
        );
        assert!((r.o[0] - 7.0).abs() < 1e-6, "{}", r.o[0]);
        assert!((r.lse[0] - 4f64.ln()).abs() < 1e-7, "{}", r.lse[0]);
        // Causal: the first query sees only the first key.
        let shape = Shape::new(1, 1, 2, 2, 1, true, Some(1.0)).unwrap();
        let r = reference(
            &shape,
            &[1.0, 1.0],
            &[0.0, 1.0],
            &[4.0, 8.0],
            all_rows(&shape),
        );
        assert_eq!(r.o[0], 4.0);
        assert!(r.o[1] > 4.0 && r.o[1] < 8.0);
    }

    #[test]
    fn non_finite_and_overflowing_inputs_are_named() {
        let e = round_checked(Precision::Bf16, "K", &[1.0, f32::NAN])
            .unwrap_err()
            .to_string();
        assert!(e.contains("K") && e.contains("element 1 is NaN"), "{e}");
        let e = round_checked(Precision::F16, "V", &[7e4])
            .unwrap_err()
            .to_string();
        assert!(e.contains("overflows f16") && e.contains("65504"), "{e}");
        assert!(round_checked(Precision::Bf16, "V", &[7e4]).is_ok());
    }
}
