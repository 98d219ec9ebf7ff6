//! The backward pass, first rung: FlashAttention-2's algorithm on
//! `mma.sync`, in three kernels.
//!
//! # What is computed
//! Given the forward's inputs `Q`, `K`, `V`, its output `O`, its
//! log-sum-exp `lse` per query row and the gradient `dO` of the loss with
//! respect to `O`, per head:
//!
//! ```text
//! P[i][j]  = exp(scale Q_i . K_j - lse[i])       (0 where masked)
//! dV       = P^T dO
//! dP       = dO V^T
//! Delta[i] = sum_j P[i][j] dP[i][j] = dO_i . O_i
//! dS       = P * (dP - Delta)                    (elementwise; Delta per row)
//! dQ       = scale dS K            dK = scale dS^T Q
//! ```
//!
//! `P` is never stored: it is recomputed tile by tile from `Q`, `K` and the
//! forward's `lse` (one exponential per score, no running maximum: `lse`
//! already normalises each row). `Delta` uses the identity
//! `sum_j P dP = dO . O`, so the softmax's Jacobian costs one dot product
//! per row instead of a pass over the keys.
//!
//! # The three kernels
//! 1. [`attn_bwd_pre`]: `Delta` per query row, and zeroes the f32 `dQ`
//!    accumulator.
//! 2. [`attn_bwd`]: one block per tile of 128 keys; the block keeps `dK`
//!    and `dV` of its keys in registers while it walks every query tile,
//!    and adds its share of `dQ` to the f32 accumulator with atomics.
//! 3. [`attn_bwd_dq`]: `dQ = scale x accumulator`, rounded to the 16-bit
//!    type.
//!
//! # Grouped `K`/`V` heads
//! With `group` query heads per `K`/`V` head (grouped-query attention;
//! `group = H` is multi-query attention), `dK` and `dV` of a `K`/`V` head
//! are sums over the query heads of its group as well as over the queries.
//! [`attn_bwd`] gives that sum to the block that owns the key tile: its
//! grid has one row of blocks per `K`/`V` head, and each block walks the
//! query tiles of every query head of its group one after the other,
//! adding into the same `dK` and `dV` registers. The alternatives were f32
//! atomics into `dK` and `dV` accumulators (one block per query head, as
//! today, and a third conversion pass), or per-query-head `dK` and `dV`
//! buffers summed by a second pass (`group` times the memory and traffic
//! of `dK` and `dV`). Walking the group in the block needs neither scratch
//! nor atomics, keeps `dK` and `dV` bitwise reproducible and reads each
//! key tile once for the whole group; what it gives up is parallelism:
//! `group` times fewer blocks, each `group` times longer, which only
//! matters when `B H_kv ceil(Skv / 128)` is below about twice the number
//! of SMs (short sequences with few `K`/`V` heads). `dQ` is per query
//! head and goes through the same atomics as without grouping.
//!
//! # Why `dQ` goes through atomics
//! `dK` and `dV` of a key are sums over queries, `dQ` of a query a sum
//! over keys. A block that owns a key tile finishes `dK` and `dV` in
//! registers, but each query row receives a contribution from every key
//! tile, that is from every block of the head. The choices are atomics
//! into an f32 accumulator (FlashAttention-2's choice, taken here: one
//! pass over the scores, `S x D` f32 atomics per key tile), or a second
//! kernel organised by query tiles that recomputes `P` and `dP` a second
//! time (no atomics, but the two products that dominate the work done
//! twice). The atomics are f32 adds in an order that varies between runs,
//! so `dQ` is not bitwise reproducible; its error is that of f32 sums,
//! far below the 16-bit rounding of the result.

use super::LOG2_E;
use super::fa2::{FA2_BM, FA2_BN, FA2_THREADS, HeadRows, chunk, copy_tile, mma_block};
use super::{AttnShape, RowSlab, Seq, p_frag, store_rows};
use ptxlab_device::math::{Real, fast};
use ptxlab_device::mem::{F32x2, U32x4};
use ptxlab_device::mma::{Bf16, F16, FragA16, Half16, ldmatrix_x4, ldmatrix_x4_trans, pack_rn};
use ptxlab_device::prelude::*;
use ptxlab_device::shared::{commit_async_copies, wait_async_copies};
use ptxlab_device::unroll;

/// Query rows per tile of the main kernel (the tile `copy_tile` moves).
pub const BWD_BM: usize = FA2_BM;
/// Keys per block of the main kernel (16 per warp).
pub const BWD_BN: usize = 2 * FA2_BN;
/// Threads of a block of [`attn_bwd`]: eight warps, 16 keys each.
pub const BWD_MAIN_THREADS: u32 = 256;
/// Threads of a block of the two small backward kernels: four warps.
pub const BWD_THREADS: u32 = 128;
/// Query/`dO` stages of the main kernel (double buffering).
pub const BWD_STAGES: usize = 2;
/// Rows of [`attn_bwd_pre`] per block (one per warp).
pub const PRE_ROWS: u32 = BWD_THREADS / 32;
/// Most blocks of [`attn_bwd_dq`]'s grid-stride loop.
pub const DQ_MAX_BLOCKS: u32 = 1 << 16;

/// 16-byte chunks of a tile of `rows` rows of `d` 16-bit values.
const fn tile_chunks(rows: usize, d: usize) -> usize {
    rows * d / 8
}

/// Chunks of the `dS^T` tile: 128 keys x 64 queries of 16 bits.
const DS_CHUNKS: usize = BWD_BN * BWD_BM / 8;

/// Dynamic shared memory of [`attn_bwd`] for head dimension `d`: the `K`
/// and `V` tiles (128 rows), two stages of `Q` and `dO` tiles (64 rows),
/// the `dS^T` tile and two stages of the query tile's `lse` and `Delta`
/// (145 KiB at `d = 128`, 81 KiB at `d = 64`).
pub const fn bwd_shared_bytes(d: usize) -> usize {
    (2 * tile_chunks(BWD_BN, d) + 2 * BWD_STAGES * tile_chunks(BWD_BM, d) + DS_CHUNKS) * 16
        + BWD_STAGES * 2 * BWD_BM * 4
}

/// Backward kernel 1: `Delta[r] = sum_c dO[r][c] O[r][c]` (f32, from the
/// 16-bit values) for each of the `rows = heads x Sq` query rows, and
/// `dq_acc[r][..] = 0`.
///
/// Thread mapping: one warp per row, [`PRE_ROWS`] rows per block, grid x
/// `ceil(rows / PRE_ROWS)`; lane `l` takes columns `2l, 2l + 1, 2l + 64,
/// ..` (one 32-bit load of each tensor per pair, so a warp reads 128
/// contiguous bytes of each), then the warp adds its 32 partial sums with
/// five shuffles. No shared memory: the kernel streams `O` and `dO` once.
#[kernel(launch_bounds(128), instances(Bf16, F16))]
pub fn attn_bwd_pre<H: Half16>(
    o: DeviceSlice<u16>,
    dout: DeviceSlice<u16>,
    mut delta: DeviceSliceMut<f32>,
    dq_acc: DeviceSliceMut<f32>,
    rows: u32,
    d: u32,
) {
    let (rows, d) = (rows as usize, d as usize);
    if o.len() < rows * d
        || dout.len() < rows * d
        || delta.len() < rows
        || dq_acc.len() < rows * d
        || d % 2 == 1
    {
        ptxlab_device::trap("attn_bwd_pre: a buffer is shorter than rows x d, or d is odd");
    }
    let t = thread::thread_idx_x() as usize;
    let (w, lane) = (t / 32, t % 32);
    let row = thread::block_idx_x() as usize * PRE_ROWS as usize + w;
    if row >= rows {
        return;
    }
    let mut acc = 0f32;
    let mut c = 2 * lane;
    while c < d {
        let at = (row * d + c) / 2;
        // SAFETY: `c + 1 < d` (`d` even), so the pair is inside row `row`
        // of both tensors, whose lengths were checked; 4-byte aligned
        // (`row * d + c` even, device allocations 256-byte aligned).
        let (ow, gw) = unsafe {
            (
                o.get_vec_unchecked::<u32>(at),
                dout.get_vec_unchecked::<u32>(at),
            )
        };
        let lo = |x: u32| H::to_f32(x as u16);
        let hi = |x: u32| H::to_f32((x >> 16) as u16);
        acc = Real::mul_add(lo(ow), lo(gw), acc);
        acc = Real::mul_add(hi(ow), hi(gw), acc);
        // SAFETY: the same pair of `dq_acc` (same length as `O`), 8-byte
        // aligned (`row * d + c` even).
        unsafe { dq_acc.set_vec_unchecked::<F32x2>(at, F32x2([0.0, 0.0])) };
        c += 64;
    }
    let acc = warp::reduce_sum(acc);
    if lane == 0 {
        delta[row] = acc;
    }
}

/// Backward kernel 3: `dq[i] = scale dq_acc[i]` rounded to `H`, two
/// elements per thread per step of a grid-stride loop (the length is
/// even: `D` is).
///
/// Thread mapping: [`BWD_THREADS`] threads a block, at most
/// [`DQ_MAX_BLOCKS`] blocks; thread `g` converts pairs `g, g + stride, ..`
/// (a warp reads 256 contiguous bytes and writes 128).
#[kernel(launch_bounds(128), instances(Bf16, F16))]
pub fn attn_bwd_dq<H: Half16>(dq_acc: DeviceSlice<f32>, dq: DeviceSliceMut<u16>, scale: f32) {
    let n = dq.len();
    if dq_acc.len() < n || n % 2 == 1 {
        ptxlab_device::trap("attn_bwd_dq: the accumulator is shorter than dQ, or dQ is odd");
    }
    let stride = (thread::grid_dim_x() * thread::block_dim_x()) as usize;
    let mut i = (thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x()) as usize;
    while i < n / 2 {
        // SAFETY: `2 i + 1 < n <= dq_acc.len()`; both buffers are device
        // allocations (256-byte aligned), so pair `i` is 8- and 4-byte aligned.
        unsafe {
            let F32x2([a, b]) = dq_acc.get_vec_unchecked::<F32x2>(i);
            dq.set_vec_unchecked::<u32>(i, pack_rn::<H>(a * scale, b * scale));
        }
        i += stride;
    }
}

/// Backward kernel 2: `dK` and `dV` of 128 keys, and their contributions to
/// `dQ`, on `mma.sync.m16n8k16` and `ldmatrix`.
///
/// Packed variable-length batches (`PACKED`): the layouts of
/// [`super::fa2::attn_fa2_ranged`] (`lse`, `Delta` and the `dQ`
/// accumulator laid out as `Q`, `dK` and `dV` as `K`), the grid
/// `(ceil(max Skv / 128), H_kv, B)`; a block past its sequence's keys
/// returns at once, and the masks count positions within the sequence
/// ([`Seq`]). The dense instances compute the addresses they always did.
///
/// Thread mapping: grid `(ceil(Skv / 128), heads / group)` (one row of
/// blocks per `K`/`V` head), eight warps; warp `w` owns keys
/// `16 w .. 16 w + 16` of the block's 128. The block walks the query tiles
/// (64 rows; with `causal`, from the first tile that reaches its keys:
/// earlier ones are fully masked; with a window, only the tiles that meet
/// the band around its keys) of each of the `group` query heads that
/// read its `K`/`V` head (module docs), one head after the other with the
/// pipeline running across heads, and per tile each warp holds,
/// in the accumulator layout of the module docs of [`super`] with keys as
/// rows and queries as columns:
///
/// * `S^T = K Q^T` (32 registers), turned in place into
///   `P^T = exp2(S^T scale log2(e) - lse log2(e))` with the masks (keys
///   past `Skv`, keys after the query when causal, keys `W` or more away
///   from the query with a window, tested only in the tiles that cross
///   one of those edges; queries past `Sq` get `lse = +inf`, so `P = 0`);
/// * `dV += P^T dO`, `P^T` taken straight from the score registers as the
///   `A` operand (as the forward's `P V`), `dO` through
///   `ldmatrix.x4.trans`;
/// * `dP^T = V dO^T` (32 registers), then `dS^T = P^T (dP^T - Delta)`;
/// * `dK += dS^T Q`, again with `dS^T` from registers.
///
/// `dK` and `dV` live in registers for the whole kernel (`D / 2` each per
/// thread) and are stored once, `dK` multiplied by the scale. For `dQ` the
/// roles flip: a query row needs all 128 keys, which eight warps hold,
/// so every warp writes its `dS^T` rows (rounded to `H`) to shared
/// memory, and after a barrier warp `w` computes rows
/// `16 (w % 4) .. + 16` and columns `(w / 4) D / 2 .. + D / 2` of `dS K`
/// (the `A` fragments of `dS` are `ldmatrix.x4.trans` reads of the stored
/// `dS^T`) and adds them to the f32 accumulator with `red.global.add`.
///
/// Shared memory (16-byte chunks, each tile XOR-swizzled by row as in the
/// forward): `K` and `V` (128 rows, loaded once), two stages of `Q` and
/// `dO` (64 rows; `cp.async`, tile `j + 1` in flight while `j` is used),
/// the `dS^T` tile (128 x 64), and two stages of 64 `lse log2(e)` and 64
/// `Delta` values.
///
/// Why this organisation: the work per query tile is four products of
/// `128 x 64 x D` and one of `64 x D x 128`, all from shared memory, while
/// `dK` and `dV` never leave registers; the only global writes inside the
/// loop are `dQ`'s atomics. Why 128 keys a block rather than 64: each
/// query tile (`Q`, `dO`, `lse`, `Delta`) is fetched once for twice the
/// keys, and each query row's `dQ` receives one atomic add per 128 keys
/// instead of per 64, which halves both the traffic from L2 and the
/// atomics; the registers (`dK` and `dV` of 16 keys per warp) are the
/// same, so the block of eight warps runs alone on its SM where two
/// blocks of four ran before. Rows of `Q`, `dO`, `K` and `V` past the
/// problem are zero-filled, which keeps their products finite, and the
/// masks set their `P` to 0, so tails need no other care.
///
/// Registers: `dK` and `dV` take 128 of a thread's 255 at `D = 128`, the
/// scores and `dP^T` 64 more. The swizzled shared-memory address of every
/// fragment is the same on every tile, so the compiler would compute them
/// all once before the loop and keep them, more than the registers left,
/// and spill; the loop passes the lane and warp indices through
/// [`thread::opaque`] each trip, which makes it recompute each address
/// where it is used (an `IMAD` or two) and spill nothing.
#[kernel(launch_bounds(256), instances(<Bf16, 128, false>, <F16, 128, false>, <Bf16, 64, false>, <F16, 64, false>, <Bf16, 128, true>, <F16, 128, true>, <Bf16, 64, true>, <F16, 64, true>))]
#[allow(
    clippy::too_many_arguments,
    reason = "ten device buffers, each its own parameter (its accesses stay ld/st.global), and one struct"
)]
pub fn attn_bwd<H: Half16, const D: usize, const PACKED: bool>(
    q: DeviceSlice<u16>,
    k: DeviceSlice<u16>,
    v: DeviceSlice<u16>,
    dout: DeviceSlice<u16>,
    lse: DeviceSlice<f32>,
    delta: DeviceSlice<f32>,
    dq_acc: DeviceSliceMut<f32>,
    dk: DeviceSliceMut<u16>,
    dv: DeviceSliceMut<u16>,
    offsets: DeviceSlice<u32>,
    shape: AttnShape,
) {
    let (causal, group) = (shape.causal(), shape.group as usize);
    let window = shape.window();
    let (scale_log2, scale) = (shape.scale_log2, shape.scale);
    let kv_heads = thread::grid_dim_y() as usize;
    let kvh = thread::block_idx_y() as usize;
    let heads = kv_heads * group;
    // Rows of Q (dO, dQ; entries of lse, Delta) and of K (V, dK, dV).
    let (q_rows, k_rows) = if PACKED {
        let (tq, tk) = Seq::tokens(offsets, thread::grid_dim_z() as usize);
        (tq * heads, tk * kv_heads)
    } else {
        (heads * shape.sq as usize, kv_heads * shape.skv as usize)
    };
    if group == 0
        || q.len() < q_rows * D
        || dout.len() < q_rows * D
        || dq_acc.len() < q_rows * D
        || lse.len() < q_rows
        || delta.len() < q_rows
        || k.len() < k_rows * D
        || v.len() < k_rows * D
        || dk.len() < k_rows * D
        || dv.len() < k_rows * D
    {
        ptxlab_device::trap("attn_bwd: a buffer is shorter than its shape, or the group is 0");
    }
    // The sequence of the group's first query head; query head `g` of the
    // group starts `g head_step` rows later.
    let seq = Seq::of::<PACKED>(&shape, offsets, heads, kvh * group, kvh);
    let (sq, skv) = (seq.sq, seq.skv);
    let head_step = if PACKED { 1 } else { sq };
    let kv0 = thread::block_idx_x() as usize * BWD_BN;
    if PACKED && kv0 >= skv {
        // Past this sequence's keys (the grid covers the longest).
        return;
    }
    let cpr = D / 8;
    let (ktile, qtile) = (tile_chunks(BWD_BN, D), tile_chunks(BWD_BM, D));
    let ds_at = 2 * ktile + 2 * BWD_STAGES * qtile;
    let sm = shared::dynamic_shared::<U32x4>(0, ds_at + DS_CHUNKS);
    let (k_at, v_at) = (0, ktile);
    let q_at = |s: usize| 2 * ktile + 2 * s * qtile;
    let do_at = |s: usize| 2 * ktile + 2 * s * qtile + qtile;
    let dsw = shared::dynamic_shared::<u32>(ds_at * 16, DS_CHUNKS * 4);
    let stats = shared::dynamic_shared::<f32>((ds_at + DS_CHUNKS) * 16, BWD_STAGES * 2 * BWD_BM);
    let t = thread::thread_idx_x() as usize;
    let (w, lane) = (t / 32, t % 32);
    let (gid, tig) = (lane / 4, lane % 4);
    let key0 = kv0 + 16 * w + gid;
    // The query tiles that see the block's keys: causal, query tile `j`
    // ends at row 64 j + 63 < kv0 for j < kv0 / 64; with a window, the
    // tiles that meet the band `kv0 - W < row < kv0 + 63 + W`.
    let (qlo, qhi) = shape
        .with_lengths(sq, skv)
        .queries_seeing(kv0, kv0 + BWD_BN - 1);
    let (first, end) = if qlo < qhi {
        (qlo / BWD_BM, qhi.div_ceil(BWD_BM))
    } else {
        (0, 0)
    };
    // Step `it` of the walk: query tile `first + it % per` of query head
    // `kvh group + it / per` (its first row in Q, dO, lse and Delta, and
    // the tile's first query row).
    let per = end - first;
    let steps = group * per;
    let at = |it: usize| {
        (
            seq.q_first + (it / per) * head_step,
            (first + it % per) * BWD_BM,
        )
    };
    let qs = seq.q_stride;

    let kv = |src| HeadRows {
        src,
        first: seq.k_first,
        stride: seq.k_stride,
        rows: skv,
        cpr,
    };
    let qd = |src, first| HeadRows {
        src,
        first,
        stride: qs,
        rows: sq,
        cpr,
    };
    // Each half of the block copies 64 rows of K and of V (the swizzle
    // repeats every 8 rows, so rows 64.. continue the tile), then one half
    // copies the Q tiles and the other the dO tiles.
    let (half, th) = (t / FA2_THREADS as usize, t % FA2_THREADS as usize);
    copy_tile(sm, k_at + half * qtile, kv(k), kv0 + half * BWD_BM, th);
    copy_tile(sm, v_at + half * qtile, kv(v), kv0 + half * BWD_BM, th);
    let q_or_do = |s: usize| if half == 0 { q_at(s) } else { do_at(s) };
    let src = if half == 0 { q } else { dout };
    if steps > 0 {
        let (qh, r0) = at(0);
        copy_tile(sm, q_or_do(0), qd(src, qh), r0, th);
    }
    commit_async_copies();

    let mut dk_acc = [0f32; 64];
    let mut dv_acc = [0f32; 64];
    for it in 0..steps {
        let st = it % BWD_STAGES;
        let (qh, q0) = at(it);
        // The lane and the warp through an opaque move each trip, so that
        // the swizzled shared-memory addresses of every fragment below are
        // recomputed here rather than hoisted out of the loop (where they
        // outnumber the registers left beside dK and dV and are spilled).
        let lane = thread::opaque(lane as u32) as usize;
        let w = thread::opaque(w as u32) as usize;
        let (gid, tig) = (lane / 4, lane % 4);
        let key0 = kv0 + 16 * w + gid;
        let th = thread::opaque(th as u32) as usize;
        if it + 1 < steps {
            let nx = (it + 1) % BWD_STAGES;
            let (nh, r0) = at(it + 1);
            copy_tile(sm, q_or_do(nx), qd(src, nh), r0, th);
        }
        // An empty group on the last tile keeps the count uniform.
        commit_async_copies();
        // The stage's statistics: lse in base-2 units (+inf past Sq, so
        // P = 0 there) and Delta. Stage `st` was last read two tiles ago,
        // before the barrier that ended the previous tile.
        if t < 2 * BWD_BM {
            let (c, is_delta) = (t % BWD_BM, t >= BWD_BM);
            let r = q0 + c;
            let val = if r >= sq {
                if is_delta { 0.0 } else { f32::INFINITY }
            } else if is_delta {
                delta.get(qh + r * qs)
            } else {
                lse.get(qh + r * qs) * LOG2_E
            };
            stats.set(st * 2 * BWD_BM + t, val);
        }
        wait_async_copies::<1>();
        sync_threads();

        // S^T = K Q^T: 16 keys x 64 queries per warp.
        let mut s = [0f32; 32];
        let mut dp = [0f32; 32];
        unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7] {
            if kk < D / 16 {
                let r = 16 * w + lane % 16;
                let ak = FragA16(ldmatrix_x4(sm, k_at + chunk(r, 2 * kk + lane / 16, cpr)));
                let av = FragA16(ldmatrix_x4(sm, v_at + chunk(r, 2 * kk + lane / 16, cpr)));
                unroll!(nb in [0, 1, 2, 3] {
                    // Lanes 8m..8m+8 name matrix m: query block 2 nb + m / 2,
                    // k half m % 2.
                    let m = lane / 8;
                    let r = (2 * nb + m / 2) * 8 + lane % 8;
                    let b = ldmatrix_x4(sm, q_at(st) + chunk(r, 2 * kk + m % 2, cpr));
                    mma_block::<H, 32>(&mut s, 2 * nb, &ak, [b[0], b[1]]);
                    mma_block::<H, 32>(&mut s, 2 * nb + 1, &ak, [b[2], b[3]]);
                    // dP^T = V dO^T, from the same rows of dO.
                    let b = ldmatrix_x4(sm, do_at(st) + chunk(r, 2 * kk + m % 2, cpr));
                    mma_block::<H, 32>(&mut dp, 2 * nb, &av, [b[0], b[1]]);
                    mma_block::<H, 32>(&mut dp, 2 * nb + 1, &av, [b[2], b[3]]);
                });
            }
        });
        // The masks, only where the warp's 16 keys x 64 queries cross an
        // edge: keys past Skv, a key after one of the queries (causal), a
        // key W or more away from one (window). A hidden score becomes
        // -inf, so its P below is exp2(-inf) = 0 like a query past Sq's
        // (lse = +inf); the tiles inside every edge, most of a long
        // sequence's, skip the per-score tests.
        let (kw0, kw1, q1) = (kv0 + 16 * w, kv0 + 16 * w + 15, q0 + BWD_BM - 1);
        if kw1 >= skv
            || (causal && kw1 > q0)
            || (window != 0 && (q1 >= kw0 + window || kw1 >= q0 + window))
        {
            unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31] {
                let key = key0 + 8 * ((i / 2) % 2);
                let c = 8 * (i / 4) + 2 * tig + i % 2;
                if super::hidden(q0 + c, key, skv, causal, window) {
                    s[i] = f32::NEG_INFINITY;
                }
            });
        }
        // P^T and dS^T = P^T (dP^T - Delta).
        unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31] {
            let c = 8 * (i / 4) + 2 * tig + i % 2;
            let l2 = stats.get(st * 2 * BWD_BM + c);
            let p = fast::exp2(Real::mul_add(s[i], scale_log2, -l2));
            s[i] = p;
            dp[i] = p * (dp[i] - stats.get(st * 2 * BWD_BM + BWD_BM + c));
        });
        // dV += P^T dO and dK += dS^T Q: 4 steps of 16 queries.
        unroll!(kt in [0, 1, 2, 3] {
            let ap = FragA16(p_frag::<H, 32>(&s, kt));
            let ads = FragA16(p_frag::<H, 32>(&dp, kt));
            unroll!(db in [0, 1, 2, 3, 4, 5, 6, 7] {
                if db < D / 16 {
                    let r = 16 * kt + lane % 16;
                    let b = ldmatrix_x4_trans(sm, do_at(st) + chunk(r, 2 * db + lane / 16, cpr));
                    mma_block::<H, 64>(&mut dv_acc, 2 * db, &ap, [b[0], b[1]]);
                    mma_block::<H, 64>(&mut dv_acc, 2 * db + 1, &ap, [b[2], b[3]]);
                    let b = ldmatrix_x4_trans(sm, q_at(st) + chunk(r, 2 * db + lane / 16, cpr));
                    mma_block::<H, 64>(&mut dk_acc, 2 * db, &ads, [b[0], b[1]]);
                    mma_block::<H, 64>(&mut dk_acc, 2 * db + 1, &ads, [b[2], b[3]]);
                }
            });
        });
        // dS^T to shared memory, pairs of queries as one word: row
        // `16 w + gid (+ 8)`, query columns 8 (i / 4) + 2 tig, + 1.
        unroll!(p in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            let i = 2 * p;
            let row = 16 * w + gid + 8 * ((i / 2) % 2);
            dsw.set(4 * chunk(row, i / 4, 8) + tig, pack_rn::<H>(dp[i], dp[i + 1]));
        });
        sync_threads();
        // dQ rows 16 (w % 4) .. + 16, columns (w / 4) D / 2 .. + D / 2 of
        // the tile += dS K (unscaled; kernel 3 scales). A fragments of dS
        // from the stored dS^T, transposed: 8 steps of 16 keys.
        let (wq, wd) = (w % 4, w / 4);
        let mut ads = [[0u32; 4]; 8];
        unroll!(kt in [0, 1, 2, 3, 4, 5, 6, 7] {
            let m = lane / 8;
            let r = 16 * kt + 8 * (m / 2) + lane % 8;
            ads[kt] = ldmatrix_x4_trans(sm, ds_at + chunk(r, 2 * wq + m % 2, 8));
        });
        let qrow = q0 + 16 * wq + gid;
        unroll!(dh in [0, 1, 2, 3] {
            if dh < D / 32 {
                let db = wd * (D / 32) + dh;
                let mut acc = [0f32; 8];
                unroll!(kt in [0, 1, 2, 3, 4, 5, 6, 7] {
                    let r = 16 * kt + lane % 16;
                    let b = ldmatrix_x4_trans(sm, k_at + chunk(r, 2 * db + lane / 16, cpr));
                    let a = FragA16(ads[kt]);
                    mma_block::<H, 8>(&mut acc, 0, &a, [b[0], b[1]]);
                    mma_block::<H, 8>(&mut acc, 1, &a, [b[2], b[3]]);
                });
                unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7] {
                    let row = qrow + 8 * ((i / 2) % 2);
                    let col = 16 * db + 8 * (i / 4) + 2 * tig + i % 2;
                    if row < sq {
                        dq_acc.red_add((qh + row * qs) * D + col, acc[i]);
                    }
                });
            }
        });
        // Everyone is done with stage `st` and the dS^T tile before they
        // are refilled.
        sync_threads();
    }
    // Completes the copies of a block whose loop never ran (causal keys
    // past every query): nothing may be in flight at exit.
    wait_async_copies::<0>();
    super::rescale(&mut dk_acc, D / 2, [scale, scale]);
    let keys = RowSlab::new(seq.k_first, key0, skv, D).strided(seq.k_stride);
    store_rows::<H, 64>(dk, &dk_acc, D / 2, tig, keys);
    store_rows::<H, 64>(dv, &dv_acc, D / 2, tig, keys);
}
