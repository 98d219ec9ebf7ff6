//! The backward pass at head dimension 256 (sm_90a): [`attn_bwd_wide`],
//! rung 2's algorithm ([`super::backward_hopper`]) re-planned for the
//! register budget of `D = 256`.
//!
//! Rung 2 gives each warpgroup 64 keys and all `D` columns of their `dK`
//! and `dV`: `D / 2` accumulators each per thread, 64 + 64 at `D = 128`,
//! but 128 + 128 at `D = 256`, past the 255 registers a thread may have.
//! Here a block owns 64 keys and the two warpgroups split the work the
//! other way round:
//!
//! * **`dK` and `dV` by columns**: warpgroup `g` holds columns
//!   `128 g .. 128 g + 128` of `dK` and `dV` for all 64 keys, 64
//!   accumulators each per thread, as rung 2 at `D = 128`.
//! * **`S^T` and `dP^T` by queries**: `wgmma`'s `M` is 64, the block's
//!   keys, so the split goes along `N`: warpgroup `g` computes queries
//!   `32 g .. 32 g + 32` of the 64-query tile, `m64n32k16` over the 256
//!   values of `D` (16 steps).
//! * **`P^T` and `dS^T` through shared memory**: `dV` needs `P^T` over all
//!   64 queries, but a warpgroup has only its 32 in registers, so both
//!   warpgroups write their halves of `P^T` and `dS^T` (16-bit) to two
//!   64 x 64 tiles, and `dV += P^T dO`, `dK += dS^T Q` read `A` from
//!   there (`m64n128k16`, both operands in shared memory).
//! * **`dQ` by columns**: `dQ_i = dS K`, warpgroup `g` columns
//!   `128 g ..` as two `m64n64k16` over the 64 keys, `A` the `dS^T` tile
//!   read M-major, `B` the `K` tile read N-major; then `red.global.add`.
//!
//! Each product is computed once (no warpgroup repeats another's work),
//! and a thread's registers peak at `dK`, `dV` (64 + 64) and `dQ_i` (64).
//!
//! # Shared memory
//! From the first 1024-byte boundary, every 16-bit tile in the 128-byte
//! swizzled panels of rung 2 ([`panel_chunk`]): `K` and `V` (64 rows x 256
//! columns, 32 KiB each, four panels), two stages of `Q_i` and `dO_i` (32
//! KiB each), the `P^T` and `dS^T` tiles (64 keys x 64 queries, 8 KiB
//! each, one panel), two stages of the tile's `lse log2(e)` and `Delta`:
//! 210 KiB with the alignment slack.
//!
//! # Two barriers a tile, and what overlaps
//! The next tile's copies start after the first barrier of this one (every
//! thread has then waited for the last tile's products, which read the
//! stage they refill), so a tile needs only the barrier that publishes its
//! copies and the one that publishes `P^T` and `dS^T`. The `dQ_i`
//! products go to the tensor core first and `dV`, `dK` second, as two
//! groups: a thread waits for the first, sends `dQ_i`'s reductions while
//! the tensor core computes the second, and waits for that one at the top
//! of the next tile. The statistics (`lse`, `Delta`) of a tile are read
//! from global memory during the tile before, into a register.

use super::backward_hopper::{Rows16, copy_panels, k_major, mn_major, panel_chunk, tile_bytes};
use super::{AttnShape, LOG2_E, RowSlab, hidden, p_frag, rescale, store_rows};
use ptxlab_device::hopper::fence_proxy_async_shared;
use ptxlab_device::math::{Real, fast};
use ptxlab_device::mem::U32x4;
use ptxlab_device::mma::{Bf16, F16, Half16, shared_addr};
use ptxlab_device::prelude::*;
use ptxlab_device::shared::{commit_async_copies, wait_async_copies};
use ptxlab_device::unroll;
use ptxlab_device::wgmma::{
    fence_operands, wgmma_commit_group, wgmma_fence, wgmma_m64n32k16, wgmma_m64n64k16,
    wgmma_m64n128k16, wgmma_wait_group,
};

/// The head dimension of this module's kernel.
pub const BWD_WIDE_D: usize = 256;
/// Keys a block.
pub const BWD_WIDE_BN: usize = 64;
/// Queries a tile.
const BM: usize = 64;
/// Threads a block: two warpgroups.
pub const BWD_WIDE_THREADS: u32 = 256;
/// `Q`/`dO` stages (double buffering).
const STAGES: usize = 2;
const D: usize = BWD_WIDE_D;
const BN: usize = BWD_WIDE_BN;

/// Byte offsets from the aligned base (module docs): `K`, `V`, stage 0's
/// `Q` and `dO` (stage `s` is `s` times `STAGE` further), the `P^T` and
/// `dS^T` tiles, the statistics.
const K_AT: usize = 0;
const V_AT: usize = tile_bytes(BN, D);
const Q_AT: usize = 2 * tile_bytes(BN, D);
const DO_AT: usize = Q_AT + tile_bytes(BM, D);
const STAGE: usize = 2 * tile_bytes(BM, D);
const PT_AT: usize = Q_AT + STAGES * STAGE;
const DS_AT: usize = PT_AT + tile_bytes(BN, BM);
const STATS_AT: usize = DS_AT + tile_bytes(BN, BM);

/// Dynamic shared memory of [`attn_bwd_wide`]: 1024 bytes of alignment
/// slack and the tiles of the module docs' layout.
pub const fn bwd_wide_shared_bytes() -> usize {
    1024 + STATS_AT + STAGES * 2 * BM * 4
}

/// Backward kernel 2, rung 2 at `D = 256`: `dK` and `dV` of 64 keys and
/// their contributions to `dQ` (module docs).
///
/// Thread mapping: grid `(ceil(Skv / 64), heads / group)`, two
/// warpgroups; the walk over the query tiles of the group's heads and the
/// masks are rung 2's. Thread `t` of warpgroup `g = t / 128` holds keys
/// `16 (w % 4) + gid` and `+ 8` (`w = t / 32`, `gid = t % 32 / 4`) of
/// every product whose `M` is the keys, and query rows `16 (w % 4) + gid`
/// (`+ 8`) of `dQ_i`. Per tile:
/// 1. write this tile's statistics (fetched during the last tile), wait
///    for the last tile's `dV`/`dK` products and this tile's copies,
///    `fence.proxy.async`, barrier; start the copies of the next tile and
///    fetch its statistics;
/// 2. issue `S^T` (16 `m64n32k16`), then `dP^T` (16 more); mask and
///    exponentiate the first while the tensor core computes the second;
///    `dS^T = P^T (dP^T - Delta)`;
/// 3. write `P^T` and `dS^T` (rounded to `H`) to their tiles,
///    `fence.proxy.async`, barrier;
/// 4. issue `dQ_i = dS K` (8 `m64n64k16`), then `dV += P^T dO_i` and
///    `dK += dS^T Q_i` (4 `m64n128k16` each); wait for `dQ_i` and add it to
///    the f32 accumulator with vector reductions while the second group
///    runs.
#[kernel(launch_bounds(256, 1), instances(<Bf16>, <F16>))]
#[allow(
    clippy::too_many_arguments,
    reason = "nine device buffers, each its own parameter (its accesses stay ld/st.global), and one struct"
)]
pub fn attn_bwd_wide<H: Half16>(
    q: DeviceSlice<u16>,
    k: DeviceSlice<u16>,
    v: DeviceSlice<u16>,
    dout: DeviceSlice<u16>,
    lse: DeviceSlice<f32>,
    delta: DeviceSlice<f32>,
    dq_acc: DeviceSliceMut<f32>,
    dk: DeviceSliceMut<u16>,
    dv: DeviceSliceMut<u16>,
    shape: AttnShape,
) {
    let (causal, group) = (shape.causal(), shape.group as usize);
    let window = shape.window();
    let (scale_log2, scale) = (shape.scale_log2, shape.scale);
    let kv_heads = thread::grid_dim_y() as usize;
    let kvh = thread::block_idx_y() as usize;
    let heads = kv_heads * group;
    let (q_rows, k_rows) = (heads * shape.sq as usize, kv_heads * shape.skv as usize);
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
        ptxlab_device::trap("attn_bwd_wide: a buffer is shorter than its shape, or the group is 0");
    }
    // The dense layout: the group's query heads one after the other, then
    // its K/V head.
    let (sq, skv) = (shape.sq as usize, shape.skv as usize);
    let (q_first, k_first) = (kvh * group * sq, kvh * skv);
    let kv0 = thread::block_idx_x() as usize * BN;
    // The tiles from the first 1024-byte boundary of the dynamic shared
    // memory (the launch adds 1024 bytes of slack for it).
    let all = shared::dynamic_shared::<U32x4>(0, bwd_wide_shared_bytes() / 16);
    let raw = shared_addr(all.as_mut_ptr());
    let pad = ((1024 - raw % 1024) % 1024) as usize;
    let base = raw + pad as u32;
    let ck = |bytes: usize| (pad + bytes) / 16;
    let ptw = shared::dynamic_shared::<u32>(pad + PT_AT, tile_bytes(BN, BM) / 4);
    let dsw = shared::dynamic_shared::<u32>(pad + DS_AT, tile_bytes(BN, BM) / 4);
    let stats = shared::dynamic_shared::<f32>(pad + STATS_AT, STAGES * 2 * BM);

    let t = thread::thread_idx_x() as usize;
    let (qlo, qhi) = shape
        .with_lengths(sq, skv)
        .queries_seeing(kv0, kv0 + BN - 1);
    let (first, end) = if qlo < qhi {
        (qlo / BM, qhi.div_ceil(BM))
    } else {
        (0, 0)
    };
    let per = end - first;
    let steps = group * per;
    let at = |it: usize| (q_first + (it / per) * sq, (first + it % per) * BM);
    let kv_rows = |src| Rows16 {
        src,
        first: k_first,
        stride: 1,
        rows: skv,
    };
    let q_rows_of = |src, first| Rows16 {
        src,
        first,
        stride: 1,
        rows: sq,
    };
    copy_panels::<D, BN>(all, ck(K_AT), kv_rows(k), kv0, t);
    copy_panels::<D, BN>(all, ck(V_AT), kv_rows(v), kv0, t);
    let load_q = |it: usize, t: usize| {
        let (qh, r0) = at(it);
        let off = (it % STAGES) * STAGE;
        copy_panels::<D, BM>(all, ck(Q_AT + off), q_rows_of(q, qh), r0, t);
        copy_panels::<D, BM>(all, ck(DO_AT + off), q_rows_of(dout, qh), r0, t);
    };
    if steps > 0 {
        load_q(0, t);
    }
    commit_async_copies();
    // Threads 0..64 fetch a tile's `lse log2(e)`, threads 64..128 its
    // `Delta` (rows past `Sq`: `+inf` and 0, so their `P` is 0), a tile
    // ahead: the value waits in a register for the tile's turn.
    let stat_of = |it: usize, t: usize| {
        let (qh, q0) = at(it);
        let (r, is_delta) = (q0 + t % BM, t >= BM);
        if r >= sq {
            if is_delta { 0.0 } else { f32::INFINITY }
        } else if is_delta {
            delta.get(qh + r)
        } else {
            lse.get(qh + r) * LOG2_E
        }
    };
    let mut stat = if steps > 0 && t < 2 * BM {
        stat_of(0, t)
    } else {
        0.0
    };

    let mut dk_acc = [0f32; 64];
    let mut dv_acc = [0f32; 64];
    for it in 0..steps {
        let st = it % STAGES;
        let (qh, q0) = at(it);
        // As rung 2: the base and the thread index through an opaque move
        // each trip, so that the descriptors below are recomputed here
        // rather than held across the loop in the registers dK and dV need.
        let base = thread::opaque(base);
        let t = thread::opaque(t as u32) as usize;
        let (wg, w, lane) = (t / 128, t / 32 % 4, t % 32);
        let (gid, tig) = (lane / 4, lane % 4);
        if t < 2 * BM {
            stats.set(st * 2 * BM + t, stat);
        }
        // The last tile's dV and dK (still in flight) read the stage that
        // the next copies refill.
        wgmma_wait_group::<0>();
        fence_operands(&mut dk_acc);
        fence_operands(&mut dv_acc);
        wait_async_copies::<0>();
        fence_proxy_async_shared();
        sync_threads();
        if it + 1 < steps {
            load_q(it + 1, t);
            if t < 2 * BM {
                stat = stat_of(it + 1, t);
            }
        }
        commit_async_copies();

        let off = (st * STAGE) as u32;
        let (k_tile, v_tile) = (base + K_AT as u32, base + V_AT as u32);
        let (q_tile, do_tile) = (base + Q_AT as u32 + off, base + DO_AT as u32 + off);
        let (pt_tile, ds_tile) = (base + PT_AT as u32, base + DS_AT as u32);
        // S^T and dP^T for this warpgroup's 32 queries (rows 32 wg .. of
        // the Q_i and dO_i tiles).
        let mut s = [0f32; 16];
        let mut dp = [0f32; 16];
        wgmma_fence();
        unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            let a = k_major(k_tile, BN, 0, kk);
            let b = k_major(q_tile, BM, 32 * wg, kk);
            wgmma_m64n32k16::<H, false, false>(&mut s, a, b, kk != 0);
        });
        wgmma_commit_group();
        unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            let a = k_major(v_tile, BN, 0, kk);
            let b = k_major(do_tile, BM, 32 * wg, kk);
            wgmma_m64n32k16::<H, false, false>(&mut dp, a, b, kk != 0);
        });
        wgmma_commit_group();
        wgmma_wait_group::<1>();
        fence_operands(&mut s);
        // Query column `c` of the thread's accumulator `i` within the
        // warpgroup's half; its keys are key0 and key0 + 8.
        let key0 = kv0 + 16 * w + gid;
        let qa = q0 + 32 * wg;
        let (kw0, kw1, qb) = (kv0 + 16 * w, kv0 + 16 * w + 15, qa + 31);
        if kw1 >= skv
            || (causal && kw1 > qa)
            || (window != 0 && (qb >= kw0 + window || kw1 >= qa + window))
        {
            unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                let key = key0 + 8 * ((i / 2) % 2);
                let c = 8 * (i / 4) + 2 * tig + i % 2;
                if hidden(qa + c, key, skv, causal, window) {
                    s[i] = f32::NEG_INFINITY;
                }
            });
        }
        unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            let c = 32 * wg + 8 * (i / 4) + 2 * tig + i % 2;
            let l2 = stats.get(st * 2 * BM + c);
            s[i] = fast::exp2(Real::mul_add(s[i], scale_log2, -l2));
        });
        wgmma_wait_group::<0>();
        fence_operands(&mut dp);
        unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            let c = 32 * wg + 8 * (i / 4) + 2 * tig + i % 2;
            dp[i] = s[i] * (dp[i] - stats.get(st * 2 * BM + BM + c));
        });
        // P^T and dS^T to their tiles: accumulators 2p, 2p + 1 are key
        // row `16 w + gid (+ 8 when p is odd)`, query columns
        // `32 wg + 8 (p / 2) + 2 tig` and `+ 1`, one word of chunk
        // `4 wg + p / 2`.
        unroll!(kt in [0, 1] {
            let (pf, sf) = (p_frag::<H, 16>(&s, kt), p_frag::<H, 16>(&dp, kt));
            unroll!(j in [0, 1, 2, 3] {
                let p = 4 * kt + j;
                let row = 16 * w + gid + 8 * (p % 2);
                let at = 4 * panel_chunk(row, 4 * wg + p / 2, BN) + tig;
                ptw.set(at, pf[j]);
                dsw.set(at, sf[j]);
            });
        });
        fence_proxy_async_shared();
        sync_threads();
        // dQ_i's columns 128 wg .. over the block's 64 keys (one group),
        // then dV and dK over the tile's 64 queries (A from the tiles just
        // written, B this warpgroup's two panels of dO_i and Q_i read
        // N-major; a second group). dQ_i's reductions go out while the
        // tensor core computes dV and dK, which the next tile waits for.
        let mut dq = [[0f32; 32]; 2];
        wgmma_fence();
        unroll!(h in [0, 1] {
            unroll!(kk in [0, 1, 2, 3] {
                let a = mn_major(ds_tile, BN, 16 * kk);
                let b = mn_major(k_tile + (2 * wg + h) as u32 * (BN * 128) as u32, BN, 16 * kk);
                wgmma_m64n64k16::<H, true, true>(&mut dq[h], a, b, kk != 0);
            });
        });
        wgmma_commit_group();
        let panel = (BM * 128) as u32;
        unroll!(kk in [0, 1, 2, 3] {
            let a = k_major(pt_tile, BN, 0, kk);
            let b = mn_major(do_tile + 2 * wg as u32 * panel, BM, 16 * kk);
            wgmma_m64n128k16::<H, true>(&mut dv_acc, a, b, true);
        });
        unroll!(kk in [0, 1, 2, 3] {
            let a = k_major(ds_tile, BN, 0, kk);
            let b = mn_major(q_tile + 2 * wg as u32 * panel, BM, 16 * kk);
            wgmma_m64n128k16::<H, true>(&mut dk_acc, a, b, true);
        });
        wgmma_commit_group();
        wgmma_wait_group::<1>();
        fence_operands(&mut dq[0]);
        fence_operands(&mut dq[1]);
        let qrow = q0 + 16 * w + gid;
        // Neighbouring columns as one vector reduction (the column even,
        // so the pair is aligned).
        unroll!(h in [0, 1] {
            unroll!(p in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                let i = 2 * p;
                let row = qrow + 8 * ((i / 2) % 2);
                let col = 128 * wg + 64 * h + 8 * (i / 4) + 2 * tig;
                if row < sq {
                    dq_acc.red_add_pair((qh + row) * D + col, [dq[h][i], dq[h][i + 1]]);
                }
            });
        });
    }
    wait_async_copies::<0>();
    wgmma_wait_group::<0>();
    fence_operands(&mut dk_acc);
    fence_operands(&mut dv_acc);
    let (wg, lane) = (t / 128, t % 32);
    let (key0, tig) = (kv0 + 16 * (t / 32 % 4) + lane / 4, lane % 4);
    rescale(&mut dk_acc, 64, [scale, scale]);
    let keys = RowSlab::new(k_first, key0, skv, D).from_col(128 * wg);
    store_rows::<H, 64>(dk, &dk_acc, 64, tig, keys);
    store_rows::<H, 64>(dv, &dv_acc, 64, tig, keys);
}
