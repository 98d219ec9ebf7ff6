//! Attention, `O = softmax(Q K^T * scale) V`: the FlashAttention ladder.
//!
//! # What is computed
//! For every head (the `B H` heads of a batch are independent, stored one
//! after the other) with queries `Q` (`Sq x D`), keys `K` and values `V`
//! (`Skv x D`), all row-major 16-bit values (`H`: BF16 or FP16, as bits):
//!
//! ```text
//! s[i][j] = scale * sum_d Q[i][d] K[j][d]        (masked: -inf where j >= Skv, j > i when causal,
//!                                                  |i - j| >= W with a window W)
//! m[i]    = max_j s[i][j],   l[i] = sum_j exp(s[i][j] - m[i])
//! O[i][:] = sum_j exp(s[i][j] - m[i]) V[j][:] / l[i]     lse[i] = m[i] + ln l[i]
//! ```
//!
//! Causal masking is torch's (`is_causal=True`): query `i` sees keys
//! `j <= i`, counted from the top-left corner also when `Sq != Skv`, so
//! every row sees at least key 0. A sliding window of `W` (local
//! attention) masks the keys `W` or more positions away, `|i - j| >= W`,
//! alone or with the causal mask (then query `i` sees `i - W < j <= i`);
//! rung 2's [`fa2::attn_fa2_ranged`] and the backward pass skip the tiles
//! outside the band. Scores, the softmax and the `O` accumulators are f32;
//! `O` is rounded to `H` once at the end; the log-sum-exp `lse` (what a
//! backward pass needs) is f32.
//!
//! # The online softmax
//! The fused rungs never hold a whole row of `s`: they walk the keys in
//! tiles and keep, per row, the running maximum `m` and sum `l` of what
//! they have seen, and an unnormalised output `o`. A tile with scores
//! `s_t` updates them as
//!
//! ```text
//! m' = max(m, max_j s_t[j])      alpha = exp(m - m')
//! p  = exp(s_t - m')             l' = alpha l + sum_j p[j]      o' = alpha o + p V_t
//! ```
//!
//! which after the last tile gives `O = o / l` exactly as the formula
//! above (every term carries the same `exp(-m)` factor). Exponentials are
//! `ex2.approx` of `s log2(e) scale`, so the scale costs one FMA per score.
//!
//! # The ladder
//! 1. [`split`]: three steps through memory: `S = Q K^T` with the
//!    project's GEMM (tensor rung 3d, one launch per head, `K` transposed
//!    first by [`split::attn_transpose`]), [`split::attn_softmax`] in
//!    place, `O = P V` with the same GEMM.
//! 2. [`fa2::attn_fa2`]: one kernel, `mma.sync` and `ldmatrix`,
//!    FlashAttention-2's structure (sm_80 and newer).
//! 3. [`hopper::attn_wgmma`]: `wgmma` from shared memory and registers,
//!    `Q`, `K`, `V` through TMA, an mbarrier pipeline (sm_90a).
//! 4. [`hopper::attn_ws`]: warp-specialised: a producer warpgroup, two
//!    consumer warpgroups taking turns at the tensor core, the softmax of
//!    one tile overlapped with the `wgmma` of the next (FlashAttention-3's
//!    structure).
//! 5. [`hopper::attn_ws`] with `SKIP`: causal attention that never visits
//!    a fully masked tile, heaviest query tiles first.
//!
//! At `D = 256` rungs 4 and 5 are [`wide::attn_ws_wide`]: the same
//! structure with 64-key tiles, so that the 128 output accumulators of a
//! thread fit beside the scores.
//!
//! The backward pass ([`backward`]) starts its own ladder: FlashAttention-2's
//! algorithm on `mma.sync` (recomputing `P` from the forward's `lse`, `dK`
//! and `dV` per key tile, `dQ` through f32 atomics).
//!
//! Decoding ([`decode`]) is a separate pair of kernels: a few new query
//! rows per sequence over a paged key/value cache, split over the cached
//! length and merged by the log-sum-exp rule (FlashDecoding).
//!
//! The measured figures and the history are in `docs/book/src/workloads/attention.md`.
//!
//! # Register layout shared by the fused rungs
//! Every fused rung gives each warp 16 query rows and keeps a tile of
//! scores (and the output accumulators) in the accumulator layout of
//! `mma.m16n8` / `wgmma.m64nN`: element `i` of a thread with lane
//! `(gid, tig) = (lane / 4, lane % 4)` is row `gid + 8 ((i / 2) % 2)` of
//! its warp's 16, column `8 (i / 4) + 2 tig + i % 2`. So a thread holds two
//! rows ([`Rows`]), each shared by the four lanes of its quad, and the
//! scores of key-step `k` (16 keys) are elements `8 k .. 8 k + 8`, exactly
//! the `A` fragment of the next product ([`p_frag`]).

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

use ptxlab_device::math::{Real, fast};
use ptxlab_device::mma::{Half16, pack_rn};
use ptxlab_device::prelude::*;
use ptxlab_device::unroll;

#[cfg(not(all(target_arch = "nvptx64", feature = "sm90a")))]
pub mod backward;
#[cfg(any(not(target_arch = "nvptx64"), feature = "sm90a"))]
pub mod backward_hopper;
#[cfg(any(not(target_arch = "nvptx64"), feature = "sm90a"))]
pub mod backward_wide;
#[cfg(not(all(target_arch = "nvptx64", feature = "sm90a")))]
pub mod decode;
#[cfg(not(all(target_arch = "nvptx64", feature = "sm90a")))]
pub mod fa2;
#[cfg(any(not(target_arch = "nvptx64"), feature = "sm90a"))]
pub mod fp8;
#[cfg(any(not(target_arch = "nvptx64"), feature = "sm90a"))]
pub mod hopper;
#[cfg(any(not(target_arch = "nvptx64"), feature = "sm90a"))]
mod pipe;
#[cfg(not(all(target_arch = "nvptx64", feature = "sm90a")))]
pub mod split;
#[cfg(any(not(target_arch = "nvptx64"), feature = "sm90a"))]
pub mod wide;
#[cfg(any(not(target_arch = "nvptx64"), feature = "sm90a"))]
mod ws;

/// `log2(e)`: scores are scaled by `scale log2(e)` so that `exp` is `ex2`.
pub const LOG2_E: f32 = core::f32::consts::LOG2_E;
/// `ln(2)`, to turn the base-2 log-sum-exp back into natural units.
pub const LN_2: f32 = core::f32::consts::LN_2;

/// One attention problem as the fused forward rungs ([`fa2::attn_fa2`],
/// [`hopper::attn_wgmma`], [`hopper::attn_ws`]) and the backward pass's
/// main kernel ([`backward::attn_bwd`]) see it, a kernel parameter by
/// value. The number of heads is the launch grid's (its `y` dimension
/// counts query heads in the forward rungs, `K`/`V` heads in the
/// backward), so it has no field here.
///
/// Causal masking travels as a 32-bit word, 0 or 1, read through
/// [`AttnShape::causal`]: the kernels test the word where they use it, as
/// they test any integer, while a `bool` field is narrowed to a predicate
/// where it is loaded, one more value live across the key loop.
#[derive(Debug, Clone, Copy, PartialEq, KernelParams)]
#[repr(C)]
pub struct AttnShape {
    /// Query rows per head, `Sq`.
    pub sq: u32,
    /// Key and value rows per head, `Skv`.
    pub skv: u32,
    /// `scale log2(e)`: what the online softmax multiplies the scores by.
    pub scale_log2: f32,
    /// The softmax scale itself (the backward pass scales `dK` by it).
    pub scale: f32,
    /// 1: causal masking, 0: none (only [`AttnShape::new`] writes it).
    causal: u32,
    /// Query heads per `K`/`V` head (1: one each; the number of heads:
    /// multi-query attention); it divides the query heads of a batch
    /// element.
    pub group: u32,
    /// The sliding window `W`: query `i` sees keys `|i - j| < W`; 0: every
    /// key (only [`AttnShape::new`] writes it). Rungs 3-5 do not read it
    /// (the host refuses a window there).
    window: u32,
}

impl AttnShape {
    /// `Sq` query rows and `Skv` key rows per head, `group` query heads per
    /// `K`/`V` head, the softmax `scale` (and `scale_log2 = scale
    /// log2(e)`), with `causal` torch's causal mask (query `i` sees keys
    /// `j <= i`), and a sliding `window` (keys `|i - j| < window`; 0: no
    /// window).
    #[inline(always)]
    pub const fn new(
        sq: u32,
        skv: u32,
        scale_log2: f32,
        scale: f32,
        causal: bool,
        group: u32,
        window: u32,
    ) -> Self {
        Self {
            sq,
            skv,
            scale_log2,
            scale,
            causal: causal as u32,
            group,
            window,
        }
    }

    /// Whether the mask is causal.
    #[inline(always)]
    pub const fn causal(&self) -> bool {
        self.causal != 0
    }

    /// The sliding window (0: none).
    #[inline(always)]
    pub const fn window(&self) -> usize {
        self.window as usize
    }

    /// The same problem with `sq` query rows and `skv` key rows (one
    /// sequence of a packed batch: [`Seq`]).
    #[inline(always)]
    pub const fn with_lengths(self, sq: usize, skv: usize) -> Self {
        Self {
            sq: sq as u32,
            skv: skv as u32,
            ..self
        }
    }

    /// The keys that query rows `r0 ..= r1` see between them, as a range
    /// `lo .. hi` of key positions within `0 .. Skv`: from `r0 - W + 1`
    /// with a window (0 without), to `r1` when causal, else to
    /// `r1 + W - 1` with a window, else to the last key.
    #[inline(always)]
    pub const fn keys_seen(&self, r0: usize, r1: usize) -> (usize, usize) {
        let (skv, w) = (self.skv as usize, self.window as usize);
        let lo = if w == 0 { 0 } else { r0.saturating_sub(w - 1) };
        let hi = if self.causal != 0 {
            r1 + 1
        } else if w != 0 {
            r1 + w
        } else {
            skv
        };
        let hi = if hi < skv { hi } else { skv };
        (if lo < hi { lo } else { hi }, hi)
    }

    /// The query rows that see keys `k0 ..= k1` between them, as a range
    /// `lo .. hi` within `0 .. Sq`: every row without a window (causal:
    /// from `k0`); with one, from `k0 - W + 1` (`k0` when causal) to
    /// `k1 + W - 1`.
    #[inline(always)]
    pub const fn queries_seeing(&self, k0: usize, k1: usize) -> (usize, usize) {
        let (sq, w) = (self.sq as usize, self.window as usize);
        let causal = self.causal != 0;
        let lo = if causal {
            k0
        } else if w == 0 {
            0
        } else {
            k0.saturating_sub(w - 1)
        };
        let hi = if w == 0 || k1 + w > sq { sq } else { k1 + w };
        (if lo < hi { lo } else { hi }, hi)
    }
}

/// Where one block's sequence lies in its tensors, counted in rows of `D`
/// values: query `r` of the block's head is row `q_first + r q_stride` of
/// `Q` (and of `O`, `dO`, `dQ`; entry of `lse` and `Delta`), key `r` row
/// `k_first + r k_stride` of `K` and `V`.
///
/// Two layouts give it ([`Seq::of`]). **Dense** `(B, H, S, D)`: the
/// heads one after the other, each `Sq` (`Skv`) rows long, stride 1.
/// **Packed** `(T, H, D)` (variable-length batches, FlashAttention's
/// `cu_seqlens`): the tokens of every sequence one after the other, the
/// heads of a token side by side, so a head's rows are `H` (`H_kv`) rows
/// apart and sequence `b` starts at token `cu_q[b]` (`cu_k[b]`).
#[derive(Clone, Copy)]
pub struct Seq {
    /// Row of query 0 of the head.
    pub q_first: usize,
    /// Rows between two queries of the head (1 dense, `H` packed).
    pub q_stride: usize,
    /// Row of key 0 of the `K`/`V` head.
    pub k_first: usize,
    /// Rows between two keys of the head (1 dense, `H_kv` packed).
    pub k_stride: usize,
    /// Queries of the sequence.
    pub sq: usize,
    /// Keys of the sequence.
    pub skv: usize,
}

impl Seq {
    /// The sequence of query head `h` (flat `b H + h` when dense, `h <
    /// heads` when packed) and of `K`/`V` head `h_kv`; packed, in batch
    /// element `b` = the block's `z` of a grid with `z` = `B`. `offsets`
    /// holds the packed batch's `B + 1` query offsets then its `B + 1` key
    /// offsets (the dense layout does not read it); traps when they are
    /// shorter than that, or when the block's sequence ends before it
    /// starts or past the last offset (so its rows lie inside buffers
    /// checked against [`Seq::tokens`]).
    #[inline(always)]
    pub fn of<const PACKED: bool>(
        shape: &AttnShape,
        offsets: DeviceSlice<u32>,
        heads: usize,
        h: usize,
        h_kv: usize,
    ) -> Self {
        let (sq, skv) = (shape.sq as usize, shape.skv as usize);
        if !PACKED {
            return Self {
                q_first: h * sq,
                q_stride: 1,
                k_first: h_kv * skv,
                k_stride: 1,
                sq,
                skv,
            };
        }
        let (b, batch) = (
            thread::block_idx_z() as usize,
            thread::grid_dim_z() as usize,
        );
        if offsets.len() < 2 * batch + 2 {
            ptxlab_device::trap("attention: the packed offsets are shorter than 2 (B + 1)");
        }
        let (qa, qb) = (offsets.get(b) as usize, offsets.get(b + 1) as usize);
        let (ka, kb) = (
            offsets.get(batch + 1 + b) as usize,
            offsets.get(batch + 2 + b) as usize,
        );
        let (tq, tk) = Self::tokens(offsets, batch);
        if qb < qa || kb < ka || qb > tq || kb > tk {
            ptxlab_device::trap("attention: the packed offsets decrease or pass the last one");
        }
        let kv_heads = heads / (shape.group as usize);
        Self {
            q_first: qa * heads + h,
            q_stride: heads,
            k_first: ka * kv_heads + h_kv,
            k_stride: kv_heads,
            sq: qb - qa,
            skv: kb - ka,
        }
    }

    /// The query and key tokens of a packed batch of `batch` sequences:
    /// the last query offset and the last key offset (what the kernels
    /// check the buffers against; 0 when the offsets are too short, which
    /// [`Seq::of`] then refuses).
    #[inline(always)]
    pub fn tokens(offsets: DeviceSlice<u32>, batch: usize) -> (usize, usize) {
        if offsets.len() < 2 * batch + 2 {
            return (0, 0);
        }
        (
            offsets.get(batch) as usize,
            offsets.get(2 * batch + 1) as usize,
        )
    }
}

/// Whether key `col` is hidden from query `row`: past `skv`, after the
/// query when `causal`, or `window` or more positions away (`window` 0:
/// no window).
#[inline(always)]
pub fn hidden(row: usize, col: usize, skv: usize, causal: bool, window: usize) -> bool {
    col >= skv
        || (causal && col > row)
        || (window != 0 && (row >= col + window || col >= row + window))
}

/// Whether a forward rung writes the log-sum-exp of each query row (what
/// the backward pass reads), a kernel parameter by value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, KernelParams)]
#[repr(u32)]
pub enum Lse {
    /// `lse` is not written (it may be empty).
    Skip = 0,
    /// `lse` holds `heads x Sq` values, one per query row.
    Store = 1,
}

/// The per-thread state of the online softmax for the thread's two rows
/// (see the module docs): the running maximum of `s log2(e) scale` and the
/// thread's partial sum of `exp2` (its quad's four partial sums add up to
/// the row's `l` in [`finish`]).
#[derive(Clone, Copy)]
pub struct Rows {
    /// Running maxima (base-2 units), `-inf` before the first score.
    pub m: [f32; 2],
    /// This thread's share of the running sums.
    pub l: [f32; 2],
}

impl Rows {
    /// Nothing seen yet.
    #[inline(always)]
    pub fn new() -> Self {
        Rows {
            m: [f32::NEG_INFINITY; 2],
            l: [0.0; 2],
        }
    }
}

impl Default for Rows {
    fn default() -> Self {
        Self::new()
    }
}

/// `log2(x)`: `lg2.approx.f32` on the GPU (relative error about 2^-22).
#[inline(always)]
pub fn log2_approx(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: a register-only arithmetic instruction, defined for every input.
        unsafe {
            core::arch::asm!("lg2.approx.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x,
                options(pure, nomem, nostack));
        }
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        std::primitive::f32::log2(x)
    }
}

/// Sets to `-inf` the scores of a tile that are [`hidden`]: keys at or
/// past `skv`, with `causal` keys after the row's query, and keys `window`
/// or more positions away (0: no window). `col0` is the tile's first key,
/// `row0` this thread's first query row (its second is `row0 + 8`); `N`
/// scores, `N / 4` column blocks of 8.
#[inline(always)]
pub fn mask_scores<const N: usize>(
    s: &mut [f32; N],
    tig: usize,
    col0: usize,
    row0: usize,
    skv: usize,
    causal: bool,
    window: usize,
) {
    unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63] {
        if i < N {
            let col = col0 + 8 * (i / 4) + 2 * tig + i % 2;
            let row = row0 + 8 * ((i / 2) % 2);
            if hidden(row, col, skv, causal, window) {
                s[i] = f32::NEG_INFINITY;
            }
        }
    });
}

/// The online-softmax step of one tile of `N` scores (module docs): finds
/// the rows' new maxima (over the quad, by two shuffles), replaces each
/// score by `p = exp2(s scale_log2 - m')`, adds the tile's `p` to the
/// thread's share of `l` (after scaling it by `alpha`) and returns each
/// row's `alpha = exp2(m - m')`, by which the caller scales its output
/// accumulators. A row with no unmasked score yet keeps `m = -inf` and gets
/// `p = 0`, `alpha = 1` (never `NaN`).
#[inline(always)]
pub fn online_softmax<const N: usize>(
    s: &mut [f32; N],
    rows: &mut Rows,
    scale_log2: f32,
) -> [f32; 2] {
    // Four partial maxima per row shorten the dependency chain.
    let mut mx = [f32::NEG_INFINITY; 8];
    unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63] {
        if i < N {
            let h = (i / 2) % 2;
            let k = 2 * ((i / 4) % 4) + h;
            mx[k] = mx[k].max(s[i]);
        }
    });
    let mut alpha = [1f32; 2];
    let mut base = [0f32; 2];
    for h in 0..2 {
        let mut m = mx[h].max(mx[2 + h]).max(mx[4 + h].max(mx[6 + h]));
        m = m.max(warp::shfl_xor(FULL_MASK, m, 1));
        m = m.max(warp::shfl_xor(FULL_MASK, m, 2));
        // scale > 0 (checked by the host): the maximum of the scaled
        // scores is the scaled maximum.
        let m_new = rows.m[h].max(m * scale_log2);
        base[h] = if m_new == f32::NEG_INFINITY {
            0.0
        } else {
            m_new
        };
        alpha[h] = fast::exp2(rows.m[h] - base[h]);
        rows.m[h] = m_new;
    }
    let mut sum = [0f32; 4];
    unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63] {
        if i < N {
            let h = (i / 2) % 2;
            let p = fast::exp2(Real::mul_add(s[i], scale_log2, -base[h]));
            s[i] = p;
            sum[2 * ((i / 4) % 2) + h] += p;
        }
    });
    for h in 0..2 {
        rows.l[h] = Real::mul_add(rows.l[h], alpha[h], sum[h] + sum[2 + h]);
    }
    alpha
}

/// Multiplies the first `n` output accumulators by their row's `alpha`.
#[inline(always)]
pub fn rescale<const N: usize>(o: &mut [f32; N], n: usize, alpha: [f32; 2]) {
    unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127] {
        if i < N && i < n {
            o[i] *= alpha[(i / 2) % 2];
        }
    });
}

/// The `A` fragment of key-step `k` (16 keys) of the probabilities `p`
/// held in the accumulator layout: elements `8 k .. 8 k + 8` rounded to
/// `H` in pairs, as `mma.m16n8k16` and `wgmma` (`A` in registers) read it.
#[inline(always)]
pub fn p_frag<H: Half16, const N: usize>(p: &[f32; N], k: usize) -> [u32; 4] {
    let e = 8 * k;
    [
        pack_rn::<H>(p[e], p[e + 1]),
        pack_rn::<H>(p[e + 2], p[e + 3]),
        pack_rn::<H>(p[e + 4], p[e + 5]),
        pack_rn::<H>(p[e + 6], p[e + 7]),
    ]
}

/// Ends the online softmax: adds up each row's `l` over its quad, scales
/// the first `n` accumulators of `o` by `1 / l` and returns the rows'
/// log-sum-exp in natural units (`-inf` for a row with nothing unmasked).
#[inline(always)]
pub fn finish<const N: usize>(o: &mut [f32; N], n: usize, rows: &Rows) -> [f32; 2] {
    let mut inv = [0f32; 2];
    let mut lse = [0f32; 2];
    for h in 0..2 {
        let mut l = rows.l[h];
        l += warp::shfl_xor(FULL_MASK, l, 1);
        l += warp::shfl_xor(FULL_MASK, l, 2);
        inv[h] = if l > 0.0 { fast::recip(l) } else { 0.0 };
        lse[h] = (rows.m[h] + log2_approx(l)) * LN_2;
    }
    rescale(o, n, inv);
    lse
}

/// Where a thread's two rows of a `16 x n`-column slab go: rows `row0` and
/// `row0 + 8` of the head whose first row is `base` (row `r` of the head
/// is row `base + r stride` of the tensor), written while below the
/// head's `rows`, `d` values a row.
#[derive(Clone, Copy)]
pub struct RowSlab {
    /// The head's first row in the tensor.
    pub base: usize,
    /// Rows of the tensor from one row of the head to the next (1 in the
    /// dense layout, the number of heads in the packed one: [`Seq`]).
    pub stride: usize,
    /// This thread's first row within the head (its second is `row0 + 8`).
    pub row0: usize,
    /// Rows of the head (rows at or past it are not written).
    pub rows: usize,
    /// Values a row (even).
    pub d: usize,
    /// The slab's first column (even; 0 unless the row is split between
    /// warpgroups).
    pub col0: usize,
}

impl RowSlab {
    /// Rows `row0` and `row0 + 8` of the head whose first row is `base`,
    /// of `rows` rows of `d` values.
    #[inline(always)]
    pub const fn new(base: usize, row0: usize, rows: usize, d: usize) -> Self {
        Self {
            base,
            stride: 1,
            row0,
            rows,
            d,
            col0: 0,
        }
    }

    /// The same rows with the slab starting at column `col0` (even).
    #[inline(always)]
    pub const fn from_col(self, col0: usize) -> Self {
        Self { col0, ..self }
    }

    /// The same rows with `stride` rows of the tensor between two rows of
    /// the head.
    #[inline(always)]
    pub const fn strided(self, stride: usize) -> Self {
        Self { stride, ..self }
    }
}

/// Stores the first `n` accumulators of `o` (the thread's two rows of a
/// `16 x n`-column slab, accumulator layout) as `H` into `out` (row-major)
/// at `at`. Pairs of neighbours go as one 32-bit store (`d` is even).
#[inline(always)]
pub fn store_rows<H: Half16, const N: usize>(
    out: DeviceSliceMut<u16>,
    o: &[f32; N],
    n: usize,
    tig: usize,
    at: RowSlab,
) {
    let RowSlab {
        base: base_row,
        stride,
        row0,
        rows: sq,
        d,
        col0,
    } = at;
    unroll!(p in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63] {
        if 2 * p < N && 2 * p < n {
            let i = 2 * p;
            let row = row0 + 8 * ((i / 2) % 2);
            let col = col0 + 8 * (i / 4) + 2 * tig;
            if row < sq {
                let w = pack_rn::<H>(o[i], o[i + 1]);
                // SAFETY: `row < sq` and `col + 1 < d` (the caller's slab
                // of columns `col0 ..` fits in the row): inside this head's
                // rows of `O`, whose length the kernel checked; 4-byte
                // aligned (`d`, `col0` and `col` even).
                unsafe {
                    out.set_vec_unchecked::<u32>(((base_row + row * stride) * d + col) / 2, w)
                };
            }
        }
    });
}

/// Writes the log-sum-exp of the thread's two rows (lane `tig == 0` of
/// each quad), rows at or past `sq` skipped.
#[inline(always)]
pub fn store_lse(
    lse_out: DeviceSliceMut<f32>,
    lse: [f32; 2],
    tig: usize,
    base_row: usize,
    row0: usize,
    sq: usize,
) {
    if tig == 0 {
        for h in 0..2 {
            let row = row0 + 8 * h;
            if row < sq {
                lse_out.set(base_row + row, lse[h]);
            }
        }
    }
}

/// [`store_lse`] to the entries of `lse_out` that match the rows of `at`
/// (the `lse` of row `r` of a tensor is entry `r`; `at.stride` rows apart
/// in the packed layout).
#[inline(always)]
pub fn store_lse_at(lse_out: DeviceSliceMut<f32>, lse: [f32; 2], tig: usize, at: RowSlab) {
    if tig == 0 {
        for h in 0..2 {
            let row = at.row0 + 8 * h;
            if row < at.rows {
                lse_out.set(at.base + row * at.stride, lse[h]);
            }
        }
    }
}
