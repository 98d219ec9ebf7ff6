//! Packed variable-length batches (FlashAttention's `cu_seqlens`): `B`
//! sequences of different lengths stored one after the other, `Q` and `O`
//! as `(T_q, H, D)`, `K` and `V` as `(T_kv, H_kv, D)`, the log-sum-exp as
//! `(T_q, H)`. Sequence `b` holds query tokens `cu_q[b] .. cu_q[b + 1]`
//! and key tokens `cu_k[b] .. cu_k[b + 1]`; its queries see only its keys,
//! with the causal mask and the window counted within the sequence (query
//! `i` of a sequence sees its keys `j <= i` when causal, torch's
//! top-left convention as for dense problems).
//!
//! A [`Packed`] problem runs on rung 2 ([`super::Plan::packed`], the
//! `PACKED` instances of `attn_fa2_ranged`) and in the backward pass
//! ([`super::Backward::packed`]). The f64 references here compute each
//! sequence as a dense problem of batch 1 ([`Packed::seq`]) and scatter
//! the results back into the packed layout.

use super::backward::{
    BWD_LABEL, Backward, GradErrors, Grads, grad_bounds, grad_errors, verify_grads,
};
use super::check::{Errors, bound, errors, verify};
use super::cli::{Args, CPU_MAX_WORK, FULL_CHECK_WORK, SIM_MAX_WORK};
use super::cpu::{
    POISON_16, all_rows, generated, grad_reference, reference, round_checked, sample_rows, widen,
};
use super::launch::{Inputs, Plan};
use super::types::{MAX_ELEMENTS, MAX_HEADS, NAME, Precision, Rung, Shape};
use crate::Backend;
use crate::cli::{OneOrAll, timed_row};
use crate::error::{Error, Result};
use crate::report::{Row, fmt_ms};
use crate::runtime::Device;
use std::path::{Path, PathBuf};

/// Most sequences of a packed batch (the kernels put the sequence in the
/// launch grid's `z`).
pub const MAX_SEQS: usize = 65535;

/// A validated packed batch: the per-token problem (heads, `K`/`V` heads,
/// head dim, mask, window, scale) and the sequence offsets.
#[derive(Debug, Clone, PartialEq)]
pub struct Packed {
    /// The heads, head dim, mask, window and scale, with batch 1 and the
    /// longest sequences' lengths as `sq` and `skv` (the launch grid's
    /// extent).
    base: Shape,
    cu_q: Vec<usize>,
    cu_k: Vec<usize>,
}

/// `offsets` as a validated list: at least two entries, starting at 0,
/// strictly increasing (every sequence at least one token), the last at
/// most `u32::MAX`.
fn check_offsets(flag: &str, offsets: &[usize]) -> Result<()> {
    if offsets.len() < 2 {
        return Err(Error::input(
            flag,
            format!(
                "{} offset(s); a packed batch of B sequences needs B + 1 offsets, from 0 to the \
                 token count",
                offsets.len()
            ),
        ));
    }
    if offsets[0] != 0 {
        return Err(Error::input(
            flag,
            format!(
                "starts at {}; the offsets start at 0 (sequence b holds tokens offsets[b] .. \
                 offsets[b + 1])",
                offsets[0]
            ),
        ));
    }
    if let Some(b) = (1..offsets.len()).find(|&i| offsets[i] <= offsets[i - 1]) {
        return Err(Error::input(
            flag,
            format!(
                "offsets[{b}] = {} is not above offsets[{}] = {}; the offsets must increase \
                 (every sequence holds at least one token)",
                offsets[b],
                b - 1,
                offsets[b - 1]
            ),
        ));
    }
    let last = offsets[offsets.len() - 1];
    if last > u32::MAX as usize {
        return Err(Error::input(
            flag,
            format!("{last} tokens; at most {} (32-bit offsets)", u32::MAX),
        ));
    }
    Ok(())
}

impl Packed {
    /// A packed batch of `cu_q.len() - 1` sequences with `heads` heads of
    /// `d` values, the `causal` mask and the `scale` (default `1 /
    /// sqrt(d)`); `cu_k` the key offsets (the query offsets when `None`).
    /// Every sequence holds at least one query and one key.
    pub fn new(
        heads: usize,
        d: usize,
        causal: bool,
        scale: Option<f64>,
        cu_q: Vec<usize>,
        cu_k: Option<Vec<usize>>,
    ) -> Result<Self> {
        let cu_k = cu_k.unwrap_or_else(|| cu_q.clone());
        check_offsets("--cu-seqlens", &cu_q)?;
        check_offsets("--cu-seqlens-kv", &cu_k)?;
        if cu_q.len() != cu_k.len() {
            return Err(Error::input(
                "--cu-seqlens-kv",
                format!(
                    "{} key offsets against {} query offsets; both list B + 1 offsets of the \
                     same B sequences",
                    cu_k.len(),
                    cu_q.len()
                ),
            ));
        }
        let batch = cu_q.len() - 1;
        if batch > MAX_SEQS {
            return Err(Error::input(
                "--cu-seqlens",
                format!("{batch} sequences; at most {MAX_SEQS} (the sequence is the grid's z)"),
            ));
        }
        let longest = |cu: &[usize]| cu.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(1);
        let base = Shape::new(1, heads, longest(&cu_q), longest(&cu_k), d, causal, scale)?;
        let tokens = cu_q[batch].max(cu_k[batch]);
        let elements = tokens.saturating_mul(heads).saturating_mul(d);
        if elements > MAX_ELEMENTS || heads > MAX_HEADS {
            return Err(Error::input(
                "--cu-seqlens",
                format!(
                    "{tokens} tokens x {heads} heads x {d} = {elements} elements per tensor; at \
                     most {MAX_ELEMENTS}"
                ),
            ));
        }
        Ok(Self { base, cu_q, cu_k })
    }

    /// The batch with `kv_heads` `K`/`V` heads per token (dividing the
    /// heads: grouped-query attention).
    pub fn with_kv_heads(self, kv_heads: usize) -> Result<Self> {
        Ok(Self {
            base: self.base.with_kv_heads(kv_heads)?,
            ..self
        })
    }

    /// The batch with a sliding window of `window` keys in every sequence
    /// (query `i` sees its keys `|i - j| < window`): wide enough that every
    /// query of every sequence sees a key.
    pub fn with_window(self, window: usize) -> Result<Self> {
        for b in 0..self.batch() {
            if let Err(e) = self.seq(b).with_window(window) {
                let detail = match e {
                    Error::Runtime(ptxlab_runtime::Error::Input { detail, .. }) => detail,
                    other => other.to_string(),
                };
                return Err(Error::input(
                    "--window",
                    format!("in sequence {b}: {detail}"),
                ));
            }
        }
        // Every sequence's check refused 0 and windows past u32::MAX.
        let base = Shape {
            window: Some(window),
            ..self.base
        };
        Ok(Self { base, ..self })
    }

    /// The per-token problem: heads, `K`/`V` heads, head dim, mask, window
    /// and scale (batch 1; `sq`, `skv` the longest sequences).
    pub fn base(&self) -> &Shape {
        &self.base
    }

    /// Sequences `B`.
    pub fn batch(&self) -> usize {
        self.cu_q.len() - 1
    }

    /// Query offsets, `B + 1`.
    pub fn cu_q(&self) -> &[usize] {
        &self.cu_q
    }

    /// Key offsets, `B + 1`.
    pub fn cu_k(&self) -> &[usize] {
        &self.cu_k
    }

    /// Query tokens `T_q` and key tokens `T_kv`.
    pub fn tokens(&self) -> (usize, usize) {
        (self.cu_q[self.batch()], self.cu_k[self.batch()])
    }

    /// Elements of `Q` and `O` (`T_q H D`).
    pub fn q_len(&self) -> usize {
        self.tokens().0 * self.base.heads * self.base.d
    }

    /// Elements of `K` and of `V` (`T_kv H_kv D`).
    pub fn kv_len(&self) -> usize {
        self.tokens().1 * self.base.kv_heads * self.base.d
    }

    /// Entries of the log-sum-exp (`T_q H`).
    pub fn lse_len(&self) -> usize {
        self.tokens().0 * self.base.heads
    }

    /// Sequence `b` as a dense problem of batch 1.
    pub fn seq(&self, b: usize) -> Shape {
        Shape {
            sq: self.cu_q[b + 1] - self.cu_q[b],
            skv: self.cu_k[b + 1] - self.cu_k[b],
            ..self.base
        }
    }

    /// The kernels' offsets: the `B + 1` query offsets, then the `B + 1`
    /// key offsets (each at most `u32::MAX`: [`Packed::new`] checked).
    pub fn offsets(&self) -> Vec<u32> {
        self.cu_q
            .iter()
            .chain(&self.cu_k)
            .map(|&o| o as u32)
            .collect()
    }

    /// The FLOPs of the forward pass: the sum of the sequences' ([`Shape::flops`]).
    pub fn flops(&self) -> f64 {
        (0..self.batch()).map(|b| self.seq(b).flops()).sum()
    }

    /// `varlen B=3 H=4 T=420 (77-210) D=128 causal` (with `Hkv`, the key
    /// tokens when they differ, and the window).
    pub fn label(&self) -> String {
        let s = &self.base;
        let lens = |cu: &[usize]| {
            let l: Vec<usize> = cu.windows(2).map(|w| w[1] - w[0]).collect();
            let (lo, hi) = (l.iter().min(), l.iter().max());
            match (lo, hi) {
                (Some(lo), Some(hi)) if lo != hi => format!("{lo}-{hi}"),
                (_, Some(hi)) => format!("{hi}"),
                _ => String::new(),
            }
        };
        let (tq, tk) = self.tokens();
        let t = if self.cu_q == self.cu_k {
            format!("T={tq} ({})", lens(&self.cu_q))
        } else {
            format!(
                "Tq={tq} ({}) Tkv={tk} ({})",
                lens(&self.cu_q),
                lens(&self.cu_k)
            )
        };
        let kv = if s.kv_heads == s.heads {
            String::new()
        } else {
            format!(" Hkv={}", s.kv_heads)
        };
        let window = s.window.map(|w| format!(" window={w}")).unwrap_or_default();
        format!(
            "varlen B={} H={}{kv} {t} D={}{}{window}",
            self.batch(),
            s.heads,
            s.d,
            if s.causal { " causal" } else { "" }
        )
    }

    /// Sequence `b` of a packed tensor `x` (`(T, heads, D)`, offsets `cu`)
    /// as a dense `(heads, L, D)` one.
    pub fn gather<T: Copy>(&self, x: &[T], keys: bool, b: usize) -> Vec<T> {
        self.gather_rows(x, keys, b, self.base.d)
    }

    /// Sequence `b` of a packed tensor of `d` values a row (`d = 1`: the
    /// log-sum-exp's `(T, heads)`) as a dense `(heads, L, d)` one.
    pub fn gather_rows<T: Copy>(&self, x: &[T], keys: bool, b: usize, d: usize) -> Vec<T> {
        let (cu, heads) = self.side(keys);
        let (t0, len) = (cu[b], cu[b + 1] - cu[b]);
        let mut out = Vec::with_capacity(heads * len * d);
        for h in 0..heads {
            for r in 0..len {
                let at = ((t0 + r) * heads + h) * d;
                out.extend_from_slice(&x[at..at + d]);
            }
        }
        out
    }

    /// Writes a dense `(heads, L, D)` result of sequence `b` into the
    /// packed `out` (`(T, heads, D)`; with `d = 1` the log-sum-exp's
    /// `(T, heads)`).
    pub fn scatter<T: Copy>(&self, dense: &[T], keys: bool, b: usize, d: usize, out: &mut [T]) {
        let (cu, heads) = self.side(keys);
        let (t0, len) = (cu[b], cu[b + 1] - cu[b]);
        for h in 0..heads {
            for r in 0..len {
                let (from, to) = ((h * len + r) * d, ((t0 + r) * heads + h) * d);
                out[to..to + d].copy_from_slice(&dense[from..from + d]);
            }
        }
    }

    /// The offsets and heads of the query side or the key side.
    fn side(&self, keys: bool) -> (&[usize], usize) {
        if keys {
            (&self.cu_k, self.base.kv_heads)
        } else {
            (&self.cu_q, self.base.heads)
        }
    }
}

/// The f64 forward of a packed batch: `o` (`(T_q, H, D)`), `lse`
/// (`(T_q, H)`) and the largest `|scale s|` over the unmasked scores.
#[derive(Debug, Clone)]
pub struct PackedReference {
    /// Outputs in the packed layout.
    pub o: Vec<f64>,
    /// Log-sum-exp (natural units) in the packed layout.
    pub lse: Vec<f64>,
    /// Largest `|scale s|`.
    pub max_score: f64,
}

/// The forward pass in f64 from the (rounded) input values, sequence by
/// sequence ([`reference()`] on [`Packed::seq`]).
pub fn packed_reference(p: &Packed, q: &[f32], k: &[f32], v: &[f32]) -> PackedReference {
    let d = p.base.d;
    let mut out = PackedReference {
        o: vec![0.0; p.q_len()],
        lse: vec![0.0; p.lse_len()],
        max_score: 0.0,
    };
    for b in 0..p.batch() {
        let s = p.seq(b);
        let r = reference(
            &s,
            &p.gather(q, false, b),
            &p.gather(k, true, b),
            &p.gather(v, true, b),
            all_rows(&s),
        );
        p.scatter(&r.o, false, b, d, &mut out.o);
        p.scatter(&r.lse, false, b, 1, &mut out.lse);
        out.max_score = out.max_score.max(r.max_score);
    }
    out
}

/// The f64 gradients of a packed batch, each in its tensor's packed
/// layout: `dq` as `Q`, `dk` and `dv` as `K`.
pub fn packed_grad_reference(p: &Packed, [q, k, v, dout]: [&[f32]; 4]) -> [Vec<f64>; 3] {
    let d = p.base.d;
    let mut dq = vec![0.0; p.q_len()];
    let mut dk = vec![0.0; p.kv_len()];
    let mut dv = vec![0.0; p.kv_len()];
    for b in 0..p.batch() {
        let s = p.seq(b);
        let heads: Vec<usize> = (0..s.heads).collect();
        let r = grad_reference(
            &s,
            &p.gather(q, false, b),
            &p.gather(k, true, b),
            &p.gather(v, true, b),
            &p.gather(dout, false, b),
            &heads,
        );
        p.scatter(&r.dq, false, b, d, &mut dq);
        p.scatter(&r.dk, true, b, d, &mut dk);
        p.scatter(&r.dv, true, b, d, &mut dv);
    }
    [dq, dk, dv]
}

/// The inputs of a packed check: the hash tensors of `seed` (as
/// [`super::cpu::check_inputs`]: queries times 2, then keys, values and,
/// tensor `3 seed + 3`, the output gradient), rounded to `prec`.
pub fn packed_inputs(p: &Packed, prec: Precision, seed: u64) -> Result<[Vec<u16>; 4]> {
    let q: Vec<f32> = generated(3 * seed, p.q_len())
        .iter()
        .map(|x| x * 2.0)
        .collect();
    Ok([
        round_checked(prec, "Q", &q)?,
        round_checked(prec, "K", &generated(3 * seed + 1, p.kv_len()))?,
        round_checked(prec, "V", &generated(3 * seed + 2, p.kv_len()))?,
        round_checked(prec, "dO", &generated(3 * seed + 3, p.q_len()))?,
    ])
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
            p.gather_rows(o, false, b, p.base.d),
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
    let d = p.base.d;
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
    let mut grads = Grads::poisoned_lens(dev, p.q_len(), p.kv_len())?;
    Backward::packed(dev, prec, p.clone())?.run(dev, &x, &o, &lse, &dout, &mut grads)?;
    let what = format!("attention backward {} {}", prec.name(), p.label());
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
    Ok((e, Some(ge)))
}

/// The ragged batches of the simulator checks: `(query offsets, key
/// offsets)`: three sequences of lengths that are no multiple of a tile,
/// one with more queries than keys and one with fewer, and a short one.
pub const SIM_PACKED: [(&[usize], &[usize]); 2] = [
    (&[0, 77, 210, 229], &[0, 133, 210, 300]),
    (&[0, 133, 152, 229], &[0, 77, 160, 179]),
];

/// Offsets as the command line gives them (`--cu-seqlens`,
/// `--cu-seqlens-kv`): a comma list of whole numbers, one `.npy` file
/// (int32 or int64, one dimension), or for `--cu-seqlens` two files,
/// `Q.npy,K.npy` (the query offsets, then the key offsets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Offsets {
    /// `0,77,210`.
    List(Vec<usize>),
    /// `cu.npy`.
    Npy(PathBuf),
    /// `q.npy,k.npy`.
    Pair(PathBuf, PathBuf),
}

impl Offsets {
    /// Parses the option's text (clap's value parser).
    pub fn parse(text: &str) -> std::result::Result<Self, String> {
        let npy = |t: &str| t.trim().ends_with(".npy");
        match text.split_once(',') {
            Some((a, b)) if npy(a) && npy(b) => {
                return Ok(Offsets::Pair(a.trim().into(), b.trim().into()));
            }
            None if npy(text) => return Ok(Offsets::Npy(text.trim().into())),
            _ => {}
        }
        text.split(',')
            .map(|t| {
                crate::cli::parse_whole::<usize>(t.trim()).map_err(|e| {
                    format!("{t:?}: {e}; give offsets as 0,77,210, a.npy or q.npy,k.npy")
                })
            })
            .collect::<std::result::Result<Vec<_>, _>>()
            .map(Offsets::List)
    }

    /// The query offsets and, for `Q.npy,K.npy`, the key offsets.
    fn read(&self, flag: &str) -> Result<(Vec<usize>, Option<Vec<usize>>)> {
        Ok(match self {
            Offsets::List(v) => (v.clone(), None),
            Offsets::Npy(p) => (read_offsets(flag, p)?, None),
            Offsets::Pair(q, k) => (read_offsets(flag, q)?, Some(read_offsets(flag, k)?)),
        })
    }
}

/// Offsets from an int32 or int64 `.npy` of one dimension, refusing
/// negative ones.
fn read_offsets(flag: &str, path: &Path) -> Result<Vec<usize>> {
    let want = "an int32 or int64 array (B + 1,)";
    let v: Vec<i64> = match crate::npy::read_1d::<i32>(path, want) {
        Ok(v) => v.into_iter().map(i64::from).collect(),
        Err(_) => crate::npy::read_1d::<i64>(path, want)?,
    };
    v.into_iter()
        .enumerate()
        .map(|(i, x)| {
            usize::try_from(x).map_err(|_| {
                Error::input(
                    flag,
                    format!("offset {i} is {x}; offsets are token counts (0 or more)"),
                )
            })
        })
        .collect()
}

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
    let read3 = |p: &Path| crate::npy::read_nd::<f32>(p, "a float32 array (T, H, D)", 3);
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
        crate::cli::check_host_arrays("--cu-seqlens", p.q_len().max(p.kv_len()), 4, 6)?;
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
            let want = [p.tokens().0, p.base.heads, p.base.d];
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
        p.base.scale,
        flops / 1e9,
        if backward {
            " (backward: 2.5x the forward's)"
        } else {
            ""
        }
    );
    let (tq, tk) = p.tokens();
    let (h, hkv, d) = (p.base.heads, p.base.kv_heads, p.base.d);
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
        let t = crate::runtime::Timing {
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
    let dev = crate::cli::open_device(args.backend)?.expect("gpu and sim have a device");
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
    bwd.run(&dev, &x, &o, &lse, &dout, &mut grads)?;
    let gb = [
        dev.download(&grads.dq)?,
        dev.download(&grads.dk)?,
        dev.download(&grads.dv)?,
    ];
    let what = format!("attention {BWD_LABEL} {} {}", prec.name(), p.label());
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
        "PASS {BWD_LABEL} on {}: rel err dQ {:.2e}, dK {:.2e} (bound {b:.1e}), dV {:.2e} (bound \
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
        BWD_LABEL,
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
            crate::npy::write_reported(path, &shape, x)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packed(cu: &[usize]) -> Result<Packed> {
        Packed::new(4, 64, true, None, cu.to_vec(), None)
    }

    #[test]
    fn offsets_that_do_not_increase_or_start_at_zero_are_refused() {
        for (cu, says) in [
            (&[0usize][..], "B + 1 offsets"),
            (&[1, 5][..], "start at 0"),
            (
                &[0, 5, 5, 9][..],
                "offsets[2] = 5 is not above offsets[1] = 5",
            ),
            (&[0, 9, 5][..], "must increase"),
        ] {
            let e = packed(cu).unwrap_err().to_string();
            assert!(
                e.contains("--cu-seqlens") && e.contains(says),
                "{cu:?}: {e}"
            );
        }
        let e = Packed::new(4, 64, false, None, vec![0, 5, 9], Some(vec![0, 9]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("2 key offsets against 3 query offsets"), "{e}");
        let e = packed(&[0, 5, 9]).unwrap().with_kv_heads(3).unwrap_err();
        assert!(e.to_string().contains("--kv-heads"), "{e}");
    }

    #[test]
    fn offsets_parse_as_a_list_a_file_or_a_pair_of_files() {
        assert_eq!(
            Offsets::parse("0, 77,210"),
            Ok(Offsets::List(vec![0, 77, 210]))
        );
        assert_eq!(Offsets::parse("cu.npy"), Ok(Offsets::Npy("cu.npy".into())));
        assert_eq!(
            Offsets::parse("q.npy,k.npy"),
            Ok(Offsets::Pair("q.npy".into(), "k.npy".into()))
        );
        for bad in ["0,-1", "0,x", "", "q.npy,7"] {
            let e = Offsets::parse(bad).unwrap_err();
            assert!(e.contains("give offsets as"), "{bad}: {e}");
        }
        // Offsets from an int64 file; a negative one is refused by name.
        let dir = std::env::temp_dir().join(format!("ptxlab-offsets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (good, neg) = (dir.join("good.npy"), dir.join("neg.npy"));
        crate::npy::write_nd(&good, &[3], &[0i64, 5, 9]).unwrap();
        crate::npy::write_nd(&neg, &[2], &[0i64, -4]).unwrap();
        assert_eq!(
            Offsets::Npy(good).read("--cu-seqlens").unwrap().0,
            vec![0, 5, 9]
        );
        let e = Offsets::Npy(neg)
            .read("--cu-seqlens")
            .unwrap_err()
            .to_string();
        assert!(e.contains("offset 1 is -4"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_window_must_reach_a_key_in_every_sequence() {
        let p = Packed::new(2, 64, false, None, vec![0, 10, 40], Some(vec![0, 30, 35])).unwrap();
        // Sequence 1: 30 queries, 5 keys: rows 5 + W - 1.. see nothing.
        let e = p.clone().with_window(20).unwrap_err().to_string();
        assert!(
            e.contains("in sequence 1") && e.contains("at least 26"),
            "{e}"
        );
        assert!(p.clone().with_window(26).is_ok());
        assert!(p.with_window(0).is_err());
    }

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

    #[test]
    fn gather_and_scatter_are_inverse_and_the_sizes_add_up() {
        let p = packed(&[0, 3, 8, 9]).unwrap().with_kv_heads(2).unwrap();
        assert_eq!(p.batch(), 3);
        assert_eq!(p.tokens(), (9, 9));
        assert_eq!(
            (p.q_len(), p.kv_len(), p.lse_len()),
            (9 * 4 * 64, 9 * 2 * 64, 36)
        );
        assert_eq!(p.offsets(), vec![0, 3, 8, 9, 0, 3, 8, 9]);
        let x: Vec<u32> = (0..p.q_len() as u32).collect();
        let mut back = vec![u32::MAX; x.len()];
        for b in 0..p.batch() {
            let dense = p.gather(&x, false, b);
            assert_eq!(dense.len(), 4 * p.seq(b).sq * 64);
            // Head 1, row 0 of sequence 1 is token 3's second head.
            if b == 1 {
                assert_eq!(dense[p.seq(b).sq * 64], ((3 * 4 + 1) * 64) as u32);
            }
            p.scatter(&dense, false, b, 64, &mut back);
        }
        assert_eq!(back, x);
        // Causal FLOPs are the sequences' own, not the padded batch's.
        let f: f64 = [3usize, 5, 1]
            .iter()
            .map(|&l| Shape::new(1, 4, l, l, 64, true, None).unwrap().flops())
            .sum();
        assert_eq!(p.flops(), f);
        assert_eq!(p.label(), "varlen B=3 H=4 Hkv=2 T=9 (1-5) D=64 causal");
    }
}
