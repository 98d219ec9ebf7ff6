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
//! the results back into the packed layout. This file is the floor the
//! launchers stand on; the checks are in `check.rs`, the command line in
//! `packed_cli.rs`.

use super::cpu::{all_rows, generated, grad_reference, reference, round_checked};
use super::types::{MAX_ELEMENTS, MAX_HEADS, Precision, Shape};
use ptxlab_common::error::{Error, Result};
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
                ptxlab_common::cli::parse_whole::<usize>(t.trim()).map_err(|e| {
                    format!("{t:?}: {e}; give offsets as 0,77,210, a.npy or q.npy,k.npy")
                })
            })
            .collect::<std::result::Result<Vec<_>, _>>()
            .map(Offsets::List)
    }

    /// The query offsets and, for `Q.npy,K.npy`, the key offsets.
    pub(super) fn read(&self, flag: &str) -> Result<(Vec<usize>, Option<Vec<usize>>)> {
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
    let v: Vec<i64> = match ptxlab_common::npy::read_1d::<i32>(path, want) {
        Ok(v) => v.into_iter().map(i64::from).collect(),
        Err(_) => ptxlab_common::npy::read_1d::<i64>(path, want)?,
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
        ptxlab_common::npy::write_nd(&good, &[3], &[0i64, 5, 9]).unwrap();
        ptxlab_common::npy::write_nd(&neg, &[2], &[0i64, -4]).unwrap();
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
