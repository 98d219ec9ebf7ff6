//! The decoding problem: its validated shape, the paged cache and block
//! table (generated or checked), and the f64 reference.

use super::super::cpu::hash_value;
use super::super::types::Precision;
use kernels_gpu::attention::decode::{DEC_DIMS, MAX_PAGE_SIZE};
use ptxlab_common::error::{Error, Result};
use rayon::prelude::*;

/// A validated decoding problem: `batch` sequences of `kv_lens` cached
/// tokens in a cache of `num_pages` pages of `page_size` tokens, each
/// sequence's pages listed in its row of a `batch x max_pages` block
/// table; `q_len` new query rows per sequence, `heads` query heads on
/// `kv_heads` key/value heads, head dimension `d`.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeShape {
    /// Sequences `B`.
    pub batch: usize,
    /// Query heads `H`.
    pub heads: usize,
    /// `K`/`V` heads `H_kv` (divides `heads`).
    pub kv_heads: usize,
    /// New query rows per sequence (the last `q_len` tokens of each).
    pub q_len: usize,
    /// Head dimension (64, 128 or 256).
    pub d: usize,
    /// Tokens per page (a power of two).
    pub page_size: usize,
    /// Pages in the cache.
    pub num_pages: usize,
    /// Entries per row of the block table.
    pub max_pages: usize,
    /// Cached tokens of each sequence (the new ones included).
    pub kv_lens: Vec<usize>,
    /// The scale of the scores (default `1 / sqrt(d)`).
    pub scale: f64,
}

/// Most elements of one cache (`num_pages x page_size x H_kv x D`): the
/// kernels index it in 64 bits, the check keeps it in host memory.
pub const MAX_CACHE_ELEMENTS: usize = 1 << 34;

impl DecodeShape {
    /// Checks every size (at least 1; `H_kv` dividing `H`; `d` one of
    /// 64, 128, 256; the page size a power of two up to 4096; one length per
    /// sequence, each at least `q_len` and at most `max_pages` pages) and
    /// the scale (positive and finite; default `1 / sqrt(d)`).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        batch: usize,
        heads: usize,
        kv_heads: usize,
        q_len: usize,
        d: usize,
        page_size: usize,
        num_pages: usize,
        max_pages: usize,
        kv_lens: Vec<usize>,
        scale: Option<f64>,
    ) -> Result<Self> {
        for (flag, v) in [
            ("--batch", batch),
            ("--heads", heads),
            ("--kv-heads", kv_heads),
            ("--q-len", q_len),
            ("--dim", d),
            ("--page-size", page_size),
            ("pages of the cache", num_pages),
            ("block-table columns", max_pages),
        ] {
            if v == 0 {
                return Err(Error::input(flag, "0; every size must be at least 1"));
            }
        }
        if !heads.is_multiple_of(kv_heads) {
            return Err(Error::input(
                "--kv-heads",
                format!(
                    "{kv_heads} with {heads} query heads; the K/V heads must divide the query \
                     heads (each K/V head serves heads / kv-heads query heads)"
                ),
            ));
        }
        if !DEC_DIMS.contains(&d) {
            return Err(Error::input(
                "--dim",
                format!("{d}; the decoding kernels are built for head dims {DEC_DIMS:?}"),
            ));
        }
        if !page_size.is_power_of_two() || page_size > MAX_PAGE_SIZE {
            return Err(Error::input(
                "--page-size",
                format!(
                    "{page_size} tokens; the page size must be a power of two from 1 to \
                     {MAX_PAGE_SIZE} (16 is vLLM's default)"
                ),
            ));
        }
        if kv_lens.len() != batch {
            return Err(Error::input(
                "--kv-lens",
                format!(
                    "{} lengths for {batch} sequences; give one per sequence (or one for all)",
                    kv_lens.len()
                ),
            ));
        }
        for (b, &kv) in kv_lens.iter().enumerate() {
            if kv == 0 {
                return Err(Error::input(
                    "--kv-lens",
                    format!(
                        "sequence {b} has 0 cached tokens; every sequence needs at least its \
                         own q_len = {q_len} new tokens in the cache"
                    ),
                ));
            }
            if kv < q_len {
                return Err(Error::input(
                    "--kv-lens",
                    format!(
                        "sequence {b} has {kv} cached tokens but {q_len} new query rows; the \
                         cache holds the new tokens too, so every length is at least --q-len"
                    ),
                ));
            }
            if kv > max_pages.saturating_mul(page_size) {
                return Err(Error::input(
                    "--kv-lens",
                    format!(
                        "sequence {b} has {kv} tokens, more than its {max_pages} block-table \
                         entries of {page_size}-token pages hold ({})",
                        max_pages.saturating_mul(page_size)
                    ),
                ));
            }
            if kv > i32::MAX as usize {
                return Err(Error::input(
                    "--kv-lens",
                    format!("sequence {b} has {kv} tokens; at most {}", i32::MAX),
                ));
            }
        }
        let cache = num_pages
            .saturating_mul(page_size)
            .saturating_mul(kv_heads)
            .saturating_mul(d);
        if cache > MAX_CACHE_ELEMENTS || num_pages > i32::MAX as usize {
            return Err(Error::input(
                "cache",
                format!(
                    "{num_pages} pages x {page_size} x {kv_heads} x {d} = {cache} elements; at \
                     most {MAX_CACHE_ELEMENTS}"
                ),
            ));
        }
        let q = batch
            .saturating_mul(q_len)
            .saturating_mul(heads)
            .saturating_mul(d);
        if q > MAX_CACHE_ELEMENTS || max_pages > u32::MAX as usize {
            return Err(Error::input(
                "shape",
                format!("{q} query elements; at most {MAX_CACHE_ELEMENTS}"),
            ));
        }
        let scale = scale.unwrap_or(1.0 / (d as f64).sqrt());
        if !(scale.is_finite() && scale > 0.0 && (scale as f32) > 0.0 && (scale as f32).is_finite())
        {
            return Err(Error::input(
                "--scale",
                format!("{scale}; the scale must be a positive finite f32"),
            ));
        }
        Ok(DecodeShape {
            batch,
            heads,
            kv_heads,
            q_len,
            d,
            page_size,
            num_pages,
            max_pages,
            kv_lens,
            scale,
        })
    }

    /// The shape of generated inputs: each sequence gets the pages its
    /// length needs, `max_pages` is the most any needs, and the cache has
    /// `batch x max_pages` pages ([`scatter_table`] spreads them).
    #[allow(clippy::too_many_arguments)]
    pub fn generated(
        batch: usize,
        heads: usize,
        kv_heads: usize,
        q_len: usize,
        d: usize,
        page_size: usize,
        kv_lens: Vec<usize>,
        scale: Option<f64>,
    ) -> Result<Self> {
        let ps = page_size.max(1);
        // At least one column, so a length of 0 is refused as such.
        let max_pages = kv_lens
            .iter()
            .map(|k| k.div_ceil(ps))
            .max()
            .unwrap_or(0)
            .max(1);
        Self::new(
            batch,
            heads,
            kv_heads,
            q_len,
            d,
            page_size,
            batch.saturating_mul(max_pages),
            max_pages,
            kv_lens,
            scale,
        )
    }
    /// Query heads per `K`/`V` head.
    pub fn group(&self) -> usize {
        self.heads / self.kv_heads
    }
    /// Elements of `Q` and of the output, `(B, q_len, H, D)`.
    pub fn q_elems(&self) -> usize {
        self.batch * self.q_len * self.heads * self.d
    }
    /// Elements of one cache, `(num_pages, page_size, H_kv, D)`.
    pub fn cache_elems(&self) -> usize {
        self.num_pages * self.page_size * self.kv_heads * self.d
    }
    /// Rows of the output (one per sequence, new token and query head).
    pub fn out_rows(&self) -> usize {
        self.batch * self.q_len * self.heads
    }
    /// Pages sequence `b` uses.
    pub fn pages_of(&self, b: usize) -> usize {
        self.kv_lens[b].div_ceil(self.page_size)
    }
    /// `scale log2(e)`, as the kernels take it.
    pub fn scale_log2(&self) -> f32 {
        (self.scale * std::f64::consts::LOG2_E) as f32
    }
    /// The bytes a decoding step must move: every cached `K` and `V` row of
    /// every sequence once (`sum kv_len x H_kv x D x 2` bytes each), `Q`
    /// and the output. What the GB/s of a row divide by the time.
    pub fn bytes(&self) -> f64 {
        let tokens: usize = self.kv_lens.iter().sum();
        let kv = 2.0 * tokens as f64 * self.kv_heads as f64 * self.d as f64 * 2.0;
        kv + 2.0 * self.q_elems() as f64 * 2.0
    }
    /// Multiply-adds of the f64 reference on every row.
    pub fn work(&self) -> usize {
        let tokens: usize = self.kv_lens.iter().sum();
        tokens
            .saturating_mul(self.q_len)
            .saturating_mul(self.heads)
            .saturating_mul(self.d)
    }
    /// `B=8 H=32 Hkv=8 q=1 kv=4096 D=128 P=16`; mixed lengths as
    /// `kv=77..4096 (mean 2000)`.
    pub fn label(&self) -> String {
        let (lo, hi) = (
            self.kv_lens.iter().min().copied().unwrap_or(0),
            self.kv_lens.iter().max().copied().unwrap_or(0),
        );
        let kv = if lo == hi {
            format!("kv={hi}")
        } else {
            let mean = self.kv_lens.iter().sum::<usize>() / self.batch.max(1);
            format!("kv={lo}..{hi} (mean {mean})")
        };
        format!(
            "B={} H={} Hkv={} q={} {kv} D={} P={}",
            self.batch, self.heads, self.kv_heads, self.q_len, self.d, self.page_size
        )
    }
}

/// The inputs of a decoding step on the host: `q` and both caches as BF16
/// bits, the block table, one row of `max_pages` per sequence (entries past
/// a sequence's pages are never read; generated tables hold -1 there).
#[derive(Debug, Clone)]
pub struct HostInputs {
    /// `(B, q_len, H, D)`.
    pub q: Vec<u16>,
    /// `(num_pages, page_size, H_kv, D)`.
    pub k: Vec<u16>,
    /// Likewise.
    pub v: Vec<u16>,
    /// `(B, max_pages)`.
    pub table: Vec<i32>,
}

/// The hash tensor `tensor` ([`hash_value`]) of `n` elements, rounded to
/// BF16 bits, in parallel.
pub fn hashed_bits(tensor: u64, n: usize) -> Vec<u16> {
    (0..n)
        .into_par_iter()
        .map(|i| Precision::Bf16.round(hash_value(tensor, i as u64)))
        .collect()
}

/// The multiplier of [`scatter_table`] for `n` pages: the first integer
/// from `0.618034 n` up that is coprime to `n` (so `i -> a i mod n` is a
/// permutation). `peers/attention_decode.py` computes the same.
pub fn scatter_multiplier(n: usize) -> usize {
    fn gcd(a: usize, b: usize) -> usize {
        if b == 0 { a } else { gcd(b, a % b) }
    }
    let mut a = (n as u128 * 618_034 / 1_000_000) as usize;
    while gcd(a, n) != 1 {
        a += 1;
    }
    a
}

/// A block table that spreads the sequences over the cache as a server's
/// allocator would after some churn: page `p` of sequence `b` is page
/// `a (p B + b) mod N` (`N = B max_pages`, `a` from [`scatter_multiplier`]),
/// so neighbouring pages of one sequence are far apart; entries past the
/// sequence's pages are -1.
pub fn scatter_table(shape: &DecodeShape) -> Vec<i32> {
    let (b_n, mp) = (shape.batch, shape.max_pages);
    let n = shape.num_pages;
    let a = scatter_multiplier(n);
    let mut t = vec![-1i32; b_n * mp];
    for b in 0..b_n {
        for p in 0..shape.pages_of(b) {
            t[b * mp + p] = ((a as u128 * (p * b_n + b) as u128) % n as u128) as i32;
        }
    }
    t
}

/// The generated inputs of `seed`: hash tensors `3 seed` (`Q`),
/// `3 seed + 1` (`K` cache) and `3 seed + 2` (`V` cache) over every
/// element, slots past a sequence's end included (so reading one would
/// show), and the scattered block table. The torch peer builds the same
/// for seed 0.
pub fn generate(shape: &DecodeShape, seed: u64) -> HostInputs {
    let s = seed.wrapping_mul(3);
    HostInputs {
        q: hashed_bits(s, shape.q_elems()),
        k: hashed_bits(s + 1, shape.cache_elems()),
        v: hashed_bits(s + 2, shape.cache_elems()),
        table: scatter_table(shape),
    }
}

/// Checks the inputs against `shape`: the lengths, and every block-table
/// entry a sequence uses inside the cache (the error names the first
/// outside).
pub fn check_inputs(shape: &DecodeShape, x: &HostInputs) -> Result<()> {
    for (what, got, want) in [
        ("Q", x.q.len(), shape.q_elems()),
        ("K cache", x.k.len(), shape.cache_elems()),
        ("V cache", x.v.len(), shape.cache_elems()),
        ("block table", x.table.len(), shape.batch * shape.max_pages),
    ] {
        if got != want {
            return Err(Error::input(
                what,
                format!("{got} elements; the shape needs {want}"),
            ));
        }
    }
    for b in 0..shape.batch {
        for p in 0..shape.pages_of(b) {
            let e = x.table[b * shape.max_pages + p];
            if e < 0 || e as usize >= shape.num_pages {
                return Err(Error::input(
                    "--block-table",
                    format!(
                        "entry [{b}][{p}] is {e}, outside the cache of {} pages (0..{}); \
                         sequence {b} ({} tokens) uses entries 0..{} of its row",
                        shape.num_pages,
                        shape.num_pages,
                        shape.kv_lens[b],
                        shape.pages_of(b)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// One output row: sequence, new-token position, query head.
pub type RowId = (usize, usize, usize);

/// Every output row, in memory order.
pub fn all_rows(shape: &DecodeShape) -> Vec<RowId> {
    let mut v = Vec::with_capacity(shape.out_rows());
    for b in 0..shape.batch {
        for t in 0..shape.q_len {
            for h in 0..shape.heads {
                v.push((b, t, h));
            }
        }
    }
    v
}

/// The rows a large check compares: of the first, middle and last
/// sequences, every new token, query heads 0, `G - 1` (the last of the
/// first group), `H / 2` and `H - 1`.
pub fn sample_rows(shape: &DecodeShape) -> Vec<RowId> {
    let mut seqs = vec![0, shape.batch / 2, shape.batch - 1];
    seqs.dedup();
    let mut heads = vec![0, shape.group() - 1, shape.heads / 2, shape.heads - 1];
    heads.sort_unstable();
    heads.dedup();
    let mut v = Vec::new();
    for &b in &seqs {
        for t in 0..shape.q_len {
            for &h in &heads {
                v.push((b, t, h));
            }
        }
    }
    v
}

/// The f64 reference on some rows of a decoding step.
pub type Reference = super::super::cpu::Reference<RowId>;

/// Decoding in f64 from the BF16 inputs: row `(b, t, h)` sees keys
/// `j <= kv_len - q_len + t` of sequence `b`, key `j` at slot `j % P` of
/// page `table[b][j / P]`, `K`/`V` head `h / G`.
pub fn reference(shape: &DecodeShape, x: &HostInputs, rows: Vec<RowId>) -> Reference {
    let (d, ps, hkv, g) = (shape.d, shape.page_size, shape.kv_heads, shape.group());
    let val = |bits: u16| Precision::Bf16.value(bits) as f64;
    let per: Vec<(Vec<f64>, f64, f64)> = rows
        .par_iter()
        .map(|&(b, t, h)| {
            let q0 = ((b * shape.q_len + t) * shape.heads + h) * d;
            let qr: Vec<f64> = x.q[q0..q0 + d].iter().map(|v| val(*v)).collect();
            let seen = shape.kv_lens[b] - shape.q_len + t + 1;
            let kvh = h / g;
            let row_at = |j: usize| {
                let page = x.table[b * shape.max_pages + j / ps] as usize;
                ((page * ps + j % ps) * hkv + kvh) * d
            };
            let mut s = vec![0f64; seen];
            let (mut m, mut big) = (f64::NEG_INFINITY, 0f64);
            for (j, sj) in s.iter_mut().enumerate() {
                let at = row_at(j);
                let dot: f64 = qr
                    .iter()
                    .zip(&x.k[at..at + d])
                    .map(|(a, k)| a * val(*k))
                    .sum();
                *sj = dot * shape.scale;
                m = m.max(*sj);
                big = big.max(sj.abs());
            }
            let mut o = vec![0f64; d];
            let mut l = 0f64;
            for (j, sj) in s.iter().enumerate() {
                let p = (sj - m).exp();
                l += p;
                let at = row_at(j);
                for (acc, v) in o.iter_mut().zip(&x.v[at..at + d]) {
                    *acc += p * val(*v);
                }
            }
            for acc in &mut o {
                *acc /= l;
            }
            (o, m + l.ln(), big)
        })
        .collect();
    Reference::from_rows(rows, per, d)
}
