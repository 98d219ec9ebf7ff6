//! The warp-specialised loop of rungs 4 and 5, generic over the tile
//! geometry: [`produce`] (the producer warpgroup's copies) and [`consume`]
//! (a consumer warpgroup's ping-pong loop), used by rung 4/5 at `D = 64`
//! and `128` ([`super::hopper::attn_ws`]), at `D = 256`
//! ([`super::wide`]) and in FP8 ([`super::fp8`]). The algorithm is
//! [`hopper::attn_ws`](super::hopper::attn_ws)'s, whose docs walk through
//! it; a [`WsTile`] says what a tile is made of: how many keys, how `S =
//! Q K^T` and `O += P V` are issued, and how the probabilities are packed
//! for the second product.

use super::pipe::{Bar, HP_BM, Turn, fence_first, needs_mask};
use super::{Rows, mask_scores, online_softmax, rescale};
use ptxlab_device::hopper::Mbarrier;
use ptxlab_device::prelude::*;
use ptxlab_device::wgmma::{fence_operands, wgmma_commit_group, wgmma_fence, wgmma_wait_group};

/// One tile geometry of rungs 4 and 5: a thread holds `NS` scores of a
/// key tile and `NO` output accumulators (accumulator layout of the module
/// docs of [`attention`](super)).
pub(super) trait WsTile<const NS: usize, const NO: usize> {
    /// Keys per tile (`2 NS`: 64 rows of scores over 128 threads).
    const BN: usize;
    /// Output accumulators in use (`D / 2`; `NO`, or fewer when one array
    /// size serves several `D`: the rest is never touched nor kept alive).
    const O_USED: usize;
    /// The probabilities of a tile as `A` fragments of `O += P V`.
    type P: Copy;
    /// Issues `S = Q K^T` for warpgroup `wg`'s 64 rows of the `Q` tile at
    /// `q` and the `K` tile at `k` (not waited for).
    fn issue_s(s: &mut [f32; NS], q: u32, wg: usize, k: u32);
    /// Issues `O += P V` with the `V` tile at `v` (not waited for).
    fn issue_pv(o: &mut [f32; NO], p: &Self::P, v: u32);
    /// Packs the probabilities (the softmaxed scores).
    fn pack(s: &[f32; NS]) -> Self::P;
}

/// Where a block's tiles are: the `Q` tile at `base`, then `stages` pairs
/// of a `K` tile and a `V` tile of `kv_bytes` each.
#[derive(Clone, Copy)]
pub(super) struct Tiles {
    /// Shared address of the `Q` tile (1024-aligned).
    pub base: u32,
    /// Bytes of the `Q` tile.
    pub q_bytes: u32,
    /// Bytes of one `K` (or `V`) tile.
    pub kv_bytes: u32,
    /// Key/value stages.
    pub stages: usize,
}

impl Tiles {
    /// Shared address of stage `s`'s `K` tile.
    #[inline(always)]
    pub fn k(self, s: usize) -> u32 {
        self.base + self.q_bytes + 2 * s as u32 * self.kv_bytes
    }
    /// Shared address of stage `s`'s `V` tile.
    #[inline(always)]
    pub fn v(self, s: usize) -> u32 {
        self.k(s) + self.kv_bytes
    }
}

/// The block's first query row and the number of key tiles of `bn` keys
/// it walks: every tile of the `skv` keys, or with `SKIP` and `causal`
/// (rung 5) those up to the block's last row, the query tiles of a head
/// taken from the last (the most keys) to the first.
#[inline(always)]
pub(super) fn query_tile<const SKIP: bool>(bn: usize, skv: usize, causal: bool) -> (usize, usize) {
    let qt = if SKIP {
        thread::grid_dim_x() - 1 - thread::block_idx_x()
    } else {
        thread::block_idx_x()
    };
    let q0 = qt as usize * HP_BM;
    let all = skv.div_ceil(bn);
    let n = if SKIP && causal {
        all.min((q0 + HP_BM).div_ceil(bn))
    } else {
        all
    };
    (q0, n)
}

/// The producer (one thread): `Q` once, then for each of the `n` key
/// tiles its `K` tile on `k_full[s]` and its `V` tile on `v_full[s]`, each
/// once the consumers released the stage's previous one. `load_q(bar)`,
/// `load_k(dst, j, bar)` and `load_v(dst, j, bar)` start the copies (the
/// barrier expects `q_bytes` and `kv_bytes` from them).
#[inline(always)]
pub(super) fn produce(
    bars: Bar,
    tiles: Tiles,
    n: usize,
    load_q: impl Fn(Mbarrier),
    load_k: impl Fn(u32, usize, Mbarrier),
    load_v: impl Fn(u32, usize, Mbarrier),
) {
    let stages = tiles.stages;
    bars.q_full().arrive_expect_tx(tiles.q_bytes);
    load_q(bars.q_full());
    for j in 0..n {
        let s = j % stages;
        let reuse = (((j / stages) & 1) ^ 1) as u32;
        if j >= stages {
            bars.k_empty(s).wait(reuse);
        }
        bars.k_full(s).arrive_expect_tx(tiles.kv_bytes);
        load_k(tiles.k(s), j, bars.k_full(s));
        if j >= stages {
            bars.v_empty(s).wait(reuse);
        }
        bars.v_full(s).arrive_expect_tx(tiles.kv_bytes);
        load_v(tiles.v(s), j, bars.v_full(s));
    }
}

/// What a consumer warpgroup works on.
#[derive(Clone, Copy)]
pub(super) struct Work {
    /// The consumer (0 or 1): rows `64 wg..` of the block's 128.
    pub wg: usize,
    /// The block's first query row.
    pub q0: usize,
    /// Key tiles to walk.
    pub n: usize,
    /// Keys of the head.
    pub skv: usize,
    /// torch's causal mask.
    pub causal: bool,
    /// What the online softmax multiplies the scores by (base 2).
    pub scale_log2: f32,
}

/// What a consumer thread holds after the loop: the unnormalised output
/// accumulators, its rows' softmax state, its first row (`row0`; the
/// other is `row0 + 8`) and its lane in the quad.
pub(super) struct Consumed<const NO: usize> {
    /// The output accumulators (accumulator layout).
    pub o: [f32; NO],
    /// The online softmax's state.
    pub rows: Rows,
    /// The thread's first query row in the head.
    pub row0: usize,
    /// Lane within the quad (`lane % 4`).
    pub tig: usize,
}

/// A consumer warpgroup's loop over the `n` key tiles (the steps of
/// [`hopper::attn_ws`](super::hopper::attn_ws)'s docs), thread `t` of the
/// block; the caller finishes and stores what it returns.
#[inline(always)]
pub(super) fn consume<T: WsTile<NS, NO>, const NS: usize, const NO: usize>(
    bars: Bar,
    tiles: Tiles,
    w: Work,
    t: usize,
) -> Consumed<NO> {
    let (wg, n, stages) = (w.wg, w.n, tiles.stages);
    let lane = t % 32;
    let (gid, tig) = (lane / 4, lane % 4);
    let row_min = w.q0 + 64 * wg;
    let row0 = row_min + 16 * ((t % 128) / 32) + gid;
    let mut mine = Turn::of(bars, wg, true);
    let mut other = Turn::of(bars, wg, false);
    let phase = |j: usize| ((j / stages) & 1) as u32;
    let masked = |sc: &mut [f32; NS], j: usize| {
        if needs_mask(j, T::BN, w.skv, w.causal, row_min) {
            mask_scores(sc, tig, j * T::BN, row0, w.skv, w.causal, 0);
        }
    };
    bars.q_full().wait(0);
    // Consumer 1 lets consumer 0 take the first turn.
    if wg == 1 {
        other.arrive();
    }
    let q = tiles.base;
    let mut o = [0f32; NO];
    let mut rows = Rows::new();
    // Tile 0: S_0 and its softmax (no P V to overlap yet).
    let mut sc = [0f32; NS];
    mine.sync();
    bars.k_full(0).wait(0);
    wgmma_fence();
    T::issue_s(&mut sc, q, wg, tiles.k(0));
    wgmma_commit_group();
    // Consumer 1's last signal would have no turn to open.
    if !(wg == 1 && n == 1) {
        other.arrive();
    }
    wgmma_wait_group::<0>();
    fence_operands(&mut sc);
    bars.k_empty(0).arrive();
    masked(&mut sc, 0);
    let mut alpha = online_softmax(&mut sc, &mut rows, w.scale_log2);
    let mut p = T::pack(&sc);
    for j in 1..n {
        let (s, sp) = (j % stages, (j - 1) % stages);
        let mut sc = [0f32; NS];
        mine.sync();
        bars.k_full(s).wait(phase(j));
        wgmma_fence();
        T::issue_s(&mut sc, q, wg, tiles.k(s));
        wgmma_commit_group();
        rescale(&mut o, T::O_USED, alpha);
        bars.v_full(sp).wait(phase(j - 1));
        wgmma_fence();
        T::issue_pv(&mut o, &p, tiles.v(sp));
        wgmma_commit_group();
        if !(wg == 1 && j == n - 1) {
            other.arrive();
        }
        wgmma_wait_group::<1>();
        fence_operands(&mut sc);
        bars.k_empty(s).arrive();
        masked(&mut sc, j);
        alpha = online_softmax(&mut sc, &mut rows, w.scale_log2);
        wgmma_wait_group::<0>();
        fence_first(&mut o, T::O_USED);
        bars.v_empty(sp).arrive();
        p = T::pack(&sc);
    }
    // The last tile's P V.
    let sp = (n - 1) % stages;
    rescale(&mut o, T::O_USED, alpha);
    bars.v_full(sp).wait(phase(n - 1));
    wgmma_fence();
    T::issue_pv(&mut o, &p, tiles.v(sp));
    wgmma_commit_group();
    wgmma_wait_group::<0>();
    fence_first(&mut o, T::O_USED);
    bars.v_empty(sp).arrive();
    Consumed { o, rows, row0, tig }
}
