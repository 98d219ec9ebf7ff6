//! Inputs, their rounding to the working precision, and the f64 CPU
//! reference (with the log-sum-exp).

use super::types::{Precision, Shape};
use ptxlab_common::error::{Error, Result};
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

/// The output poison: a NaN in both 16-bit types.
pub const POISON_16: u16 = 0x7fff;

/// Inputs for a check: the hash inputs of `seed` (tensors `3 seed ..`),
/// with the queries multiplied by `spread` (larger: peakier softmax rows),
/// rounded to `prec`.
pub fn check_inputs(
    shape: &Shape,
    prec: Precision,
    seed: u64,
    spread: f32,
) -> Result<[Vec<u16>; 3]> {
    let q: Vec<f32> = generated(3 * seed, shape.q_len())
        .iter()
        .map(|x| x * spread)
        .collect();
    let k = generated(3 * seed + 1, shape.kv_len());
    let v = generated(3 * seed + 2, shape.kv_len());
    Ok([
        round_checked(prec, "Q", &q)?,
        round_checked(prec, "K", &k)?,
        round_checked(prec, "V", &v)?,
    ])
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
/// and the largest `|scale s|` seen (rung 1's error bound uses it). A row
/// is named by `R`: `(head, query row)` here, `(sequence, token, head)` in
/// decoding.
#[derive(Debug, Clone)]
pub struct Reference<R = (usize, usize)> {
    /// The rows, in order.
    pub rows: Vec<R>,
    /// Output rows, `d` values each.
    pub o: Vec<f64>,
    /// Log-sum-exp (natural units) per row.
    pub lse: Vec<f64>,
    /// Largest `|scale s|` over the unmasked scores of these rows.
    pub max_score: f64,
}

impl<R> Reference<R> {
    /// The reference of `rows` from each row's `(output row, log-sum-exp,
    /// largest |scale s|)`, in the same order.
    pub fn from_rows(rows: Vec<R>, per: Vec<(Vec<f64>, f64, f64)>, d: usize) -> Self {
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

/// Attention in f64 on the given rows (flat query head, row), from the
/// (rounded) input values; query head `h` reads `K`/`V` head
/// `h / shape.group()`.
pub fn reference(
    shape: &Shape,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    rows: Vec<(usize, usize)>,
) -> Reference {
    let (sq, skv, d, group) = (shape.sq, shape.skv, shape.d, shape.group());
    let per: Vec<(Vec<f64>, f64, f64)> = rows
        .par_iter()
        .map(|&(h, r)| {
            let qr = &q[(h * sq + r) * d..(h * sq + r + 1) * d];
            let kh = h / group;
            let seen = shape.keys(r);
            let mut s = vec![0f64; seen.len()];
            let mut m = f64::NEG_INFINITY;
            let mut big = 0f64;
            for (j, sj) in seen.clone().zip(s.iter_mut()) {
                let kr = &k[(kh * skv + j) * d..(kh * skv + j + 1) * d];
                let dot: f64 = qr.iter().zip(kr).map(|(a, b)| *a as f64 * *b as f64).sum();
                *sj = dot * shape.scale;
                m = m.max(*sj);
                big = big.max(sj.abs());
            }
            let mut o = vec![0f64; d];
            let mut l = 0f64;
            for (j, sj) in seen.zip(&s) {
                let p = (sj - m).exp();
                l += p;
                let vr = &v[(kh * skv + j) * d..(kh * skv + j + 1) * d];
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
    Reference::from_rows(rows, per, d)
}

/// The f64 gradients of some heads: `dq` (`Sq x D` values per query head,
/// in the order asked) and `dk`, `dv` (`Skv x D` per `K`/`V` head, for
/// the `K`/`V` heads that the asked query heads read, in order of first
/// use). A `K`/`V` head's gradients sum over every query head of its
/// group, asked or not.
#[derive(Debug, Clone)]
pub struct GradReference {
    /// The query heads of `dq`, in order.
    pub heads: Vec<usize>,
    /// The `K`/`V` heads of `dk` and `dv`, in order.
    pub kv_heads: Vec<usize>,
    /// `dL/dQ`.
    pub dq: Vec<f64>,
    /// `dL/dK`.
    pub dk: Vec<f64>,
    /// `dL/dV`.
    pub dv: Vec<f64>,
}

/// The backward pass in f64 on the given heads, from the (rounded) input
/// values and the output gradient `dout` (`Sq x D` per head): per query
/// row `i`, with `P` the softmax row and `O_i = sum_j P_ij V_j`,
///
/// ```text
/// dP_ij = dO_i . V_j     Delta_i = dO_i . O_i     dS_ij = P_ij (dP_ij - Delta_i)
/// dQ_i  = scale sum_j dS_ij K_j     dK_j += scale dS_ij Q_i     dV_j += P_ij dO_i
/// ```
///
/// Rows are processed in parallel, each worker adding into its own `dK`
/// and `dV`, summed at the end. With grouped heads (`shape.group() > 1`)
/// query head `h` reads `K`/`V` head `h / group`, and the `dK`, `dV` of a
/// `K`/`V` head add up the contributions of its `group` query heads.
pub fn grad_reference(
    shape: &Shape,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    dout: &[f32],
    heads: &[usize],
) -> GradReference {
    let (sq, skv, d, group) = (shape.sq, shape.skv, shape.d, shape.group());
    let mut kv_heads: Vec<usize> = Vec::new();
    for &h in heads {
        if !kv_heads.contains(&(h / group)) {
            kv_heads.push(h / group);
        }
    }
    // Every query head needed: the asked ones and the groups of their
    // K/V heads, each computed once.
    let mut need: Vec<usize> = heads.to_vec();
    need.extend(kv_heads.iter().flat_map(|&kh| kh * group..(kh + 1) * group));
    need.sort_unstable();
    need.dedup();
    let per: std::collections::HashMap<usize, HeadGrads> = need
        .iter()
        .map(|&h| (h, head_grads(shape, q, k, v, dout, h)))
        .collect();
    let mut out = GradReference {
        heads: heads.to_vec(),
        kv_heads: kv_heads.clone(),
        dq: Vec::with_capacity(heads.len() * sq * d),
        dk: Vec::with_capacity(kv_heads.len() * skv * d),
        dv: Vec::with_capacity(kv_heads.len() * skv * d),
    };
    for h in heads {
        out.dq.extend(&per[h].0);
    }
    for kh in kv_heads {
        let (mut dk, mut dv) = (vec![0f64; skv * d], vec![0f64; skv * d]);
        for h in kh * group..(kh + 1) * group {
            dk.iter_mut().zip(&per[&h].1).for_each(|(a, b)| *a += b);
            dv.iter_mut().zip(&per[&h].2).for_each(|(a, b)| *a += b);
        }
        out.dk.extend(dk);
        out.dv.extend(dv);
    }
    out
}

/// One query head's `dQ` and its contributions to its `K`/`V` head's `dK`
/// and `dV`.
type HeadGrads = (Vec<f64>, Vec<f64>, Vec<f64>);

/// [`grad_reference`]'s work for query head `h`.
fn head_grads(shape: &Shape, q: &[f32], k: &[f32], v: &[f32], dout: &[f32], h: usize) -> HeadGrads {
    let (sq, skv, d, scale) = (shape.sq, shape.skv, shape.d, shape.scale);
    let kh = h / shape.group();
    let dot =
        |a: &[f32], b: &[f32]| -> f64 { a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum() };
    let kr = |j: usize| &k[(kh * skv + j) * d..(kh * skv + j + 1) * d];
    let vr = |j: usize| &v[(kh * skv + j) * d..(kh * skv + j + 1) * d];
    let zero = || (vec![0f64; skv * d], vec![0f64; skv * d], Vec::new());
    let (dk, dv, mut dq_rows) = (0..sq)
        .into_par_iter()
        .fold(zero, |(mut dk, mut dv, mut dqs), i| {
            let qi = &q[(h * sq + i) * d..(h * sq + i + 1) * d];
            let gi = &dout[(h * sq + i) * d..(h * sq + i + 1) * d];
            let seen = shape.keys(i);
            let s: Vec<f64> = seen.clone().map(|j| dot(qi, kr(j)) * scale).collect();
            let m = s.iter().fold(f64::NEG_INFINITY, |a, b| a.max(*b));
            let mut p: Vec<f64> = s.iter().map(|x| (x - m).exp()).collect();
            let l: f64 = p.iter().sum();
            p.iter_mut().for_each(|x| *x /= l);
            let mut o = vec![0f64; d];
            for (j, pj) in seen.clone().zip(&p) {
                for (x, y) in o.iter_mut().zip(vr(j)) {
                    *x += pj * *y as f64;
                }
            }
            let delta: f64 = gi.iter().zip(&o).map(|(g, x)| *g as f64 * x).sum();
            let mut dq = vec![0f64; d];
            for (j, pj) in seen.zip(&p) {
                let ds = pj * (dot(gi, vr(j)) - delta);
                for (c, x) in dq.iter_mut().enumerate() {
                    *x += scale * ds * kr(j)[c] as f64;
                }
                let row = j * d..(j + 1) * d;
                for ((a, b), (qc, gc)) in dk[row.clone()]
                    .iter_mut()
                    .zip(&mut dv[row])
                    .zip(qi.iter().zip(gi))
                {
                    *a += scale * ds * *qc as f64;
                    *b += pj * *gc as f64;
                }
            }
            dqs.push((i, dq));
            (dk, dv, dqs)
        })
        .reduce(zero, |(mut k1, mut v1, mut q1), (k2, v2, q2)| {
            k1.iter_mut().zip(&k2).for_each(|(a, b)| *a += b);
            v1.iter_mut().zip(&v2).for_each(|(a, b)| *a += b);
            q1.extend(q2);
            (k1, v1, q1)
        });
    dq_rows.sort_by_key(|r| r.0);
    (dq_rows.into_iter().flat_map(|r| r.1).collect(), dk, dv)
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

    /// The gradients of head 0 of `L = sum O * G`, checked against central
    /// differences of the f64 forward for every entry of `q`, `k` and `v`.
    fn grads_by_finite_differences(
        shape: &Shape,
        q: &[f32],
        k: &[f32],
        v: &[f32],
        g: &[f32],
    ) -> GradReference {
        let loss = |q: &[f32], k: &[f32], v: &[f32]| -> f64 {
            let r = reference(shape, q, k, v, all_rows(shape));
            r.o.iter().zip(g).map(|(o, g)| o * *g as f64).sum()
        };
        let gr = grad_reference(shape, q, k, v, g, &[0]);
        let h = 1e-3f32;
        for (which, grad) in [(0, &gr.dq), (1, &gr.dk), (2, &gr.dv)] {
            for i in 0..grad.len() {
                let (mut a, mut b) = (
                    [q.to_vec(), k.to_vec(), v.to_vec()],
                    [q.to_vec(), k.to_vec(), v.to_vec()],
                );
                a[which][i] += h;
                b[which][i] -= h;
                let fd = (loss(&a[0], &a[1], &a[2]) - loss(&b[0], &b[1], &b[2])) / (2.0 * h as f64);
                assert!(
                    (fd - grad[i]).abs() < 1e-3,
                    "tensor {which} element {i}: {fd} vs {}",
                    grad[i]
                );
            }
        }
        gr
    }

    #[test]
    fn the_gradient_reference_matches_finite_differences() {
        // L = sum O * G: dL/dx by central differences of the f64 forward,
        // against the analytic gradients, for a few entries of each input.
        let shape = Shape::new(1, 1, 3, 4, 2, true, Some(0.7)).unwrap();
        let q = [0.3f32, -0.5, 0.8, 0.1, -0.4, 0.9];
        let k = [0.2f32, 0.7, -0.6, 0.4, 0.5, -0.3, 0.9, 0.1];
        let v = [1.0f32, -0.5, 0.25, 0.75, -1.0, 0.5, 0.3, 0.2];
        let g = [0.6f32, -0.2, 0.4, 0.9, -0.7, 0.3];
        let gr = grads_by_finite_differences(&shape, &q, &k, &v, &g);
        // Key 3 is seen by no query (causal, Sq = 3): no gradient.
        assert!(gr.dk[6..8].iter().chain(&gr.dv[6..8]).all(|x| *x == 0.0));
    }

    #[test]
    fn grouped_heads_are_the_ungrouped_problem_with_k_and_v_repeated() {
        // Four query heads on two K/V heads (group 2), causal, Sq != Skv:
        // the same as four K/V heads where heads 2g and 2g + 1 both hold
        // K/V head g; the grouped dK and dV are the sums of those pairs.
        let (sq, skv, d) = (5, 7, 3);
        let plain = Shape::new(1, 4, sq, skv, d, true, None).unwrap();
        let grouped = plain.with_kv_heads(2).unwrap();
        assert_eq!((grouped.group(), grouped.kv_len()), (2, 2 * skv * d));
        let q = generated(0, plain.q_len());
        let k = generated(1, grouped.kv_len());
        let v = generated(2, grouped.kv_len());
        let g = generated(3, plain.q_len());
        let rep = |x: &[f32]| -> Vec<f32> {
            (0..4)
                .flat_map(|h| x[(h / 2) * skv * d..(h / 2 + 1) * skv * d].to_vec())
                .collect()
        };
        let (kr, vr) = (rep(&k), rep(&v));
        let a = reference(&grouped, &q, &k, &v, all_rows(&grouped));
        let b = reference(&plain, &q, &kr, &vr, all_rows(&plain));
        assert!(a.o.iter().zip(&b.o).all(|(x, y)| (x - y).abs() < 1e-12));
        let heads: Vec<usize> = (0..4).collect();
        let ga = grad_reference(&grouped, &q, &k, &v, &g, &heads);
        let gb = grad_reference(&plain, &q, &kr, &vr, &g, &heads);
        assert_eq!(ga.kv_heads, vec![0, 1]);
        assert!(ga.dq.iter().zip(&gb.dq).all(|(x, y)| (x - y).abs() < 1e-12));
        let n = skv * d;
        for kh in 0..2 {
            for i in 0..n {
                let want = |t: &[f64]| t[2 * kh * n + i] + t[(2 * kh + 1) * n + i];
                assert!((ga.dk[kh * n + i] - want(&gb.dk)).abs() < 1e-12);
                assert!((ga.dv[kh * n + i] - want(&gb.dv)).abs() < 1e-12);
            }
        }
        // Asking for query head 3 alone still sums K/V head 1 over heads 2 and 3.
        let one = grad_reference(&grouped, &q, &k, &v, &g, &[3]);
        assert_eq!(one.kv_heads, vec![1]);
        assert_eq!(one.dk, ga.dk[n..]);
        // A K/V head count that does not divide the heads is refused.
        for bad in [0, 3] {
            let e = plain.with_kv_heads(bad).unwrap_err().to_string();
            assert!(e.contains("--kv-heads") && e.contains("must divide"), "{e}");
        }
        assert!(grouped.label().contains("Hkv=2"), "{}", grouped.label());
    }

    #[test]
    fn a_window_hides_the_keys_w_or_more_away() {
        let (sq, skv, d) = (6, 8, 3);
        let q = generated(4, sq * d);
        let k = generated(5, skv * d);
        let v = generated(6, skv * d);
        let plain = Shape::new(1, 1, sq, skv, d, false, Some(0.9)).unwrap();
        // Window 2: row i averages keys i - 1, i, i + 1 (those that exist).
        let w2 = plain.with_window(2).unwrap();
        let r = reference(&w2, &q, &k, &v, all_rows(&w2));
        for i in 0..sq {
            let keys: Vec<usize> = (i.saturating_sub(1)..(i + 2).min(skv)).collect();
            assert_eq!(w2.keys(i), keys[0]..keys[keys.len() - 1] + 1);
            let s: Vec<f64> = keys
                .iter()
                .map(|&j| {
                    (0..d)
                        .map(|c| q[i * d + c] as f64 * k[j * d + c] as f64)
                        .sum::<f64>()
                        * 0.9
                })
                .collect();
            let m = s.iter().fold(f64::NEG_INFINITY, |a, b| a.max(*b));
            let l: f64 = s.iter().map(|x| (x - m).exp()).sum();
            for c in 0..d {
                let want: f64 = keys
                    .iter()
                    .zip(&s)
                    .map(|(&j, x)| (x - m).exp() / l * v[j * d + c] as f64)
                    .sum();
                assert!((r.o[i * d + c] - want).abs() < 1e-12, "row {i} col {c}");
            }
        }
        // A window wider than both lengths is no window.
        let wide = plain.with_window(sq + skv).unwrap();
        let a = reference(&wide, &q, &k, &v, all_rows(&wide));
        let b = reference(&plain, &q, &k, &v, all_rows(&plain));
        assert_eq!(a.o, b.o);
        // Causal with window 1: each query sees only its own position.
        let own = Shape {
            causal: true,
            ..plain
        }
        .with_window(1)
        .unwrap();
        let r = reference(&own, &q, &k, &v, all_rows(&own));
        for (x, y) in r.o.iter().zip(&v[..sq * d]) {
            assert!((x - *y as f64).abs() < 1e-12);
        }
        // The gradients of the windowed loss against finite differences.
        let g = generated(7, sq * d);
        let gr = grads_by_finite_differences(&w2, &q, &k, &v, &g);
        // Key 7 is seen by no query (the last row, 5, sees keys 4..=6).
        assert!(
            gr.dk[7 * d..]
                .iter()
                .chain(&gr.dv[7 * d..])
                .all(|x| *x == 0.0)
        );
        assert!(w2.label().ends_with("window=2"), "{}", w2.label());
        // Pairs inside the band: rows 0 and 5 see 2 and 3 keys, the rest 3.
        assert_eq!(w2.flops(), 4.0 * d as f64 * 17.0);
        // Bad windows are named.
        let e = plain.with_window(0).unwrap_err().to_string();
        assert!(e.contains("--window") && e.contains("at least 1"), "{e}");
        let long = Shape::new(1, 1, 20, 8, d, false, None).unwrap();
        let e = long.with_window(5).unwrap_err().to_string();
        assert!(e.contains("see no key") && e.contains("at least 13"), "{e}");
        assert!(long.with_window(13).is_ok());
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
