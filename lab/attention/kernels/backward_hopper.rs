//! The backward pass, second rung (sm_90a): rung 1's algorithm
//! ([`super::backward`]) with every product on `wgmma`.
//!
//! The first and last kernels (`Delta` with the zeroed `dQ` accumulator,
//! and `dQ` rounded) are rung 1's; this module replaces the main kernel.
//! What changes is who multiplies: rung 1 runs each product as
//! `mma.sync.m16n8k16` per warp, with every operand fragment loaded by
//! `ldmatrix` into registers first, so most of its instructions move
//! operands and its tensor pipe waits (a profile of it is in
//! `docs/results`); here one `wgmma` of a warpgroup reads a 64 x 16 and a
//! 16 x 64 (or x `D`) operand straight from shared memory, and the
//! threads issue a handful of instructions per product.
//!
//! # The five products per query tile, per warpgroup
//! A block owns 128 keys; warpgroup `g` (threads `128 g ..`) owns keys
//! `64 g .. 64 g + 64`, so each thread holds the same keys (rows) and
//! queries (columns) as in rung 1, where warp `w` owns keys
//! `16 w .. 16 w + 16` (the `wgmma` accumulator layout is the
//! `mma.m16n8` layout per warp). With `Q_i`, `dO_i` a tile of 64 queries:
//!
//! | product | `A` | `B` | instruction |
//! |---|---|---|---|
//! | `S^T = K Q_i^T` | `K`, K-major (smem) | `Q_i`, K-major (smem) | `m64n64k16` x `D / 16` |
//! | `dP^T = V dO_i^T` | `V`, K-major | `dO_i`, K-major | `m64n64k16` x `D / 16` |
//! | `dV += P^T dO_i` | `P^T` (registers) | `dO_i`, N-major | `m64nDk16` x 4 |
//! | `dK += dS^T Q_i` | `dS^T` (registers) | `Q_i`, N-major | `m64nDk16` x 4 |
//! | `dQ_i += dS K` | `dS^T` tile, M-major (smem) | `K`, N-major | `m64n64k16` x 8 (or 4) |
//!
//! Every tile is stored once and read both ways: the descriptors' major-ness
//! (`wgmma`'s transpose bits for 16-bit types) turns `Q_i` and `dO_i` from
//! the `B` of `S^T` and `dP^T` into the `B` of `dK` and `dV`, `K` from the
//! `A` of `S^T` into the `B` of `dQ`, and the `dS^T` tile that the
//! warpgroups write into the `A` (`dS`) of `dQ`. `P^T` and `dS^T` never
//! leave the registers for `dV` and `dK`: the scores' accumulators are
//! packed into `A` fragments in place, as the forward's `P V`.
//!
//! `dQ` needs all 128 keys of the block for each query: after both
//! warpgroups wrote their `dS^T` rows (and a barrier), at `D = 128`
//! warpgroup `g` computes columns `64 g .. 64 g + 64` of `dS K` over the
//! 128 keys; at `D = 64` each warpgroup computes all 64 columns over its
//! own 64 keys (both then add to the same rows: the same number of
//! atomics a block as at `D = 128`). The results go to the f32
//! accumulator with `red.global.add`, as in rung 1.
//!
//! # Shared memory
//! From the first 1024-byte boundary (the 128-byte swizzle repeats every
//! 8 rows of 128 bytes, and `wgmma` reads a tile relative to that): `K`
//! and `V` (128 rows), two stages of `Q_i` and `dO_i` (64 rows), the
//! `dS^T` tile (128 keys x 64 queries), two stages of the tile's
//! `lse log2(e)` and `Delta`. Each 16-bit tile is `D / 64` panels of its
//! rows x 128 bytes, chunk `q` of row `r` at chunk `(q ^ r % 8)` of the
//! row ([`panel_chunk`]): the canonical 128-byte-swizzled layout of both
//! majors. The tiles arrive by `cp.async` (as rung 1's, with the same
//! zero-fill past a head's rows and the same packed-batch addressing), so
//! the copies end with `fence.proxy.async` before the barrier that lets
//! `wgmma` (the asynchronous proxy) read them.

use super::hopper::wgmma_pv;
use super::pipe::fence_first;
use super::{AttnShape, LOG2_E, RowSlab, Seq, hidden, p_frag, rescale, store_rows};
use ptxlab_device::hopper::{Swizzle, fence_proxy_async_shared};
use ptxlab_device::math::{Real, fast};
use ptxlab_device::mem::U32x4;
use ptxlab_device::mma::{Bf16, F16, Half16, shared_addr};
use ptxlab_device::prelude::*;
use ptxlab_device::shared::{commit_async_copies, wait_async_copies};
use ptxlab_device::unroll;
use ptxlab_device::wgmma::{
    SmemDesc, fence_operands, wgmma_commit_group, wgmma_fence, wgmma_m64n64k16, wgmma_wait_group,
};

/// Keys a block (two warpgroups of 64).
pub const BWD2_BN: usize = 128;
/// Queries a tile.
pub const BWD2_BM: usize = 64;
/// Threads a block: two warpgroups.
pub const BWD2_THREADS: u32 = 256;
/// `Q`/`dO` stages (double buffering).
const STAGES: usize = 2;

/// Bytes of a tile of `rows` rows of `d` 16-bit values.
pub(super) const fn tile_bytes(rows: usize, d: usize) -> usize {
    rows * d * 2
}

/// Byte offsets from the aligned base: `K`, `V`, stage 0's `Q` and `dO`
/// (stage `s` is `s` times [`Layout::stage`] further), the `dS^T` tile,
/// the statistics. (Offsets, not arrays indexed by the stage: an array
/// indexed at run time would live in local memory.)
#[derive(Clone, Copy)]
struct Layout {
    k: usize,
    v: usize,
    q: usize,
    dout: usize,
    stage: usize,
    ds: usize,
    stats: usize,
}

impl Layout {
    const fn of(d: usize) -> Self {
        let (kt, qt) = (tile_bytes(BWD2_BN, d), tile_bytes(BWD2_BM, d));
        let ds = 2 * kt + 2 * STAGES * qt;
        Self {
            k: 0,
            v: kt,
            q: 2 * kt,
            dout: 2 * kt + qt,
            stage: 2 * qt,
            ds,
            stats: ds + tile_bytes(BWD2_BN, BWD2_BM),
        }
    }
}

/// Dynamic shared memory of [`attn_bwd_wgmma`] for head dimension `d`:
/// 1024 bytes of alignment slack and the tiles of the module docs' layout
/// (146 KiB at `d = 128`, 82 KiB at `d = 64`).
pub const fn bwd2_shared_bytes(d: usize) -> usize {
    1024 + Layout::of(d).stats + STAGES * 2 * BWD2_BM * 4
}

/// The 16-byte chunk of a panelled tile of `rows` rows holding chunk `q`
/// (of the row's `D / 8`) of row `r`: panel `q / 8`, row `r` of 128 bytes
/// in it, the chunk XOR-swizzled by the row's place in its group of 8.
#[inline(always)]
pub const fn panel_chunk(r: usize, q: usize, rows: usize) -> usize {
    (q / 8) * rows * 8 + r * 8 + ((q % 8) ^ (r % 8))
}

/// The rows of one head in a 16-bit tensor, as rung 1's `HeadRows`: the
/// head's first row `first`, `stride` rows of the tensor from one of its
/// rows to the next, its `rows` rows (a copy zero-fills rows at or past
/// them).
#[derive(Clone, Copy)]
pub(super) struct Rows16<'a> {
    pub(super) src: DeviceSlice<'a, u16>,
    pub(super) first: usize,
    pub(super) stride: usize,
    pub(super) rows: usize,
}

/// Starts the copies of rows `r0 .. r0 + ROWS` of `head` into the panelled
/// tile at chunk `at` of `sm` (thread `t` of [`BWD2_THREADS`]).
#[inline(always)]
pub(super) fn copy_panels<const D: usize, const ROWS: usize>(
    sm: SharedSlice<U32x4>,
    at: usize,
    head: Rows16<'_>,
    r0: usize,
    t: usize,
) {
    let cpr = D / 8;
    unroll!(c in [0, 1, 2, 3, 4, 5, 6, 7] {
        if c < ROWS * cpr / BWD2_THREADS as usize {
            let i = t + BWD2_THREADS as usize * c;
            let (r, q) = (i / cpr, i % cpr);
            let valid = r0 + r < head.rows;
            let g = if valid { (head.first + (r0 + r) * head.stride) * cpr + q } else { 0 };
            // SAFETY: `panel_chunk(r, q, ROWS)` is inside the tile (`r <
            // ROWS`, `q < cpr`), which the caller placed inside `sm`; when
            // `valid`, the row is one of the head's inside `src` (lengths
            // checked by the kernel), 16-byte aligned (256-byte aligned
            // allocations, rows of `D` even values). Nothing touches the
            // chunk before the wait that completes this copy.
            unsafe { sm.copy_async(at + panel_chunk(r, q, ROWS), head.src, g, valid) };
        }
    });
}

/// Descriptor of the K-major operand rows `row0 .. row0 + 64` of a
/// panelled tile of `rows` rows at shared address `tile`, `k` step `kk`
/// (16 values of `D`).
#[inline(always)]
pub(super) fn k_major(tile: u32, rows: usize, row0: usize, kk: usize) -> SmemDesc {
    let at = tile + ((kk / 4) * rows * 128 + row0 * 128) as u32;
    SmemDesc::new(at, 16, 1024, Swizzle::B128).offset(32 * (kk % 4) as u32)
}

/// Descriptor of a panelled tile of `rows` rows at `tile` read MN-major
/// (its columns contiguous) from row `row0` on: 16 rows are the `k` of
/// one instruction, 64 columns a panel (`rows x 128` bytes apart).
#[inline(always)]
pub(super) fn mn_major(tile: u32, rows: usize, row0: usize) -> SmemDesc {
    SmemDesc::new(
        tile + (row0 * 128) as u32,
        (rows * 128) as u32,
        1024,
        Swizzle::B128,
    )
}

/// Backward kernel 2, rung 2: `dK` and `dV` of 128 keys and their
/// contributions to `dQ`, on `wgmma` (module docs).
///
/// Thread mapping: grid `(ceil(Skv / 128), heads / group)` as rung 1's
/// (packed batches: `(ceil(max Skv / 128), H_kv, B)`), two warpgroups;
/// the walk over the query tiles of the group's heads, the masks (only in
/// tiles that cross an edge) and the stores of `dK` and `dV` are rung 1's,
/// thread for thread. Per tile:
/// 1. all threads start the copies of the next tile's `Q` and `dO` and
///    write this tile's statistics; the copies of this tile complete,
///    `fence.proxy.async`, barrier;
/// 2. issue `S^T` (one group), then `dP^T` (a second); wait for the first,
///    mask and exponentiate while the tensor core computes `dP^T`; wait
///    for the second, `dS^T = P^T (dP^T - Delta)`;
/// 3. pack `P^T` and `dS^T` into `A` fragments (rounded to `H`), write
///    the `dS^T` fragments to its tile, `fence.proxy.async`, barrier;
/// 4. issue `dV += P^T dO_i` and `dK += dS^T Q_i` from the registers and
///    this warpgroup's part of `dQ_i = dS K`, wait for all three, add
///    `dQ_i` to the accumulator; barrier (the stage and the `dS^T` tile
///    are free).
///
/// Registers: `dK` and `dV` are `D / 2` each per thread for the whole
/// kernel; the scores and `dP^T` (32 each) die when they are packed (16
/// words each), before `dQ_i` (32) is born, and the packed fragments stay
/// until the products that read them complete. One block of 256 threads
/// an SM (shared memory limits it too at `D = 128`).
#[kernel(launch_bounds(256, 1), instances(<Bf16, 128, false>, <F16, 128, false>, <Bf16, 64, false>, <F16, 64, false>, <Bf16, 128, true>, <F16, 128, true>, <Bf16, 64, true>, <F16, 64, true>))]
#[allow(
    clippy::too_many_arguments,
    reason = "ten device buffers, each its own parameter (its accesses stay ld/st.global), and one struct"
)]
pub fn attn_bwd_wgmma<H: Half16, const D: usize, const PACKED: bool>(
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
        ptxlab_device::trap(
            "attn_bwd_wgmma: a buffer is shorter than its shape, or the group is 0",
        );
    }
    let seq = Seq::of::<PACKED>(&shape, offsets, heads, kvh * group, kvh);
    let (sq, skv) = (seq.sq, seq.skv);
    let head_step = if PACKED { 1 } else { sq };
    let kv0 = thread::block_idx_x() as usize * BWD2_BN;
    if PACKED && kv0 >= skv {
        return;
    }
    // The tiles from the first 1024-byte boundary of the dynamic shared
    // memory (the launch adds 1024 bytes of slack for it).
    let lay = Layout::of(D);
    let all = shared::dynamic_shared::<U32x4>(0, bwd2_shared_bytes(D) / 16);
    let raw = shared_addr(all.as_mut_ptr());
    let pad = ((1024 - raw % 1024) % 1024) as usize;
    let base = raw + pad as u32;
    let ck = |bytes: usize| (pad + bytes) / 16;
    let dsw = shared::dynamic_shared::<u32>(pad + lay.ds, tile_bytes(BWD2_BN, BWD2_BM) / 4);
    let stats = shared::dynamic_shared::<f32>(pad + lay.stats, STAGES * 2 * BWD2_BM);

    let t = thread::thread_idx_x() as usize;
    let (qlo, qhi) = shape
        .with_lengths(sq, skv)
        .queries_seeing(kv0, kv0 + BWD2_BN - 1);
    let (first, end) = if qlo < qhi {
        (qlo / BWD2_BM, qhi.div_ceil(BWD2_BM))
    } else {
        (0, 0)
    };
    let per = end - first;
    let steps = group * per;
    let at = |it: usize| {
        (
            seq.q_first + (it / per) * head_step,
            (first + it % per) * BWD2_BM,
        )
    };
    let qs = seq.q_stride;
    let kv_rows = |src| Rows16 {
        src,
        first: seq.k_first,
        stride: seq.k_stride,
        rows: skv,
    };
    let q_rows_of = |src, first| Rows16 {
        src,
        first,
        stride: qs,
        rows: sq,
    };
    copy_panels::<D, BWD2_BN>(all, ck(lay.k), kv_rows(k), kv0, t);
    copy_panels::<D, BWD2_BN>(all, ck(lay.v), kv_rows(v), kv0, t);
    let load_q = |it: usize, s: usize, t: usize| {
        let (qh, r0) = at(it);
        let off = s * lay.stage;
        copy_panels::<D, BWD2_BM>(all, ck(lay.q + off), q_rows_of(q, qh), r0, t);
        copy_panels::<D, BWD2_BM>(all, ck(lay.dout + off), q_rows_of(dout, qh), r0, t);
    };
    if steps > 0 {
        load_q(0, 0, t);
    }
    commit_async_copies();

    let mut dk_acc = [0f32; 64];
    let mut dv_acc = [0f32; 64];
    for it in 0..steps {
        let st = it % STAGES;
        let (qh, q0) = at(it);
        // The base address and the thread index through an opaque move each
        // trip, so that the tiles' descriptors and the swizzled offsets
        // below are recomputed here (an add or two each) rather than
        // hoisted out of the loop, where they would take the registers
        // that dK and dV need and spill.
        let base = thread::opaque(base);
        let t = thread::opaque(t as u32) as usize;
        let (wg, w, lane) = (t / 128, t / 32, t % 32);
        let (gid, tig) = (lane / 4, lane % 4);
        let key0 = kv0 + 16 * w + gid;
        let (k_tile, v_tile, ds_tile) = (
            base + lay.k as u32,
            base + lay.v as u32,
            base + lay.ds as u32,
        );
        // dQ_i's share of this warpgroup: at D = 128 columns 64 wg .. over
        // the 128 keys (8 steps); at D = 64 all columns over its own 64
        // keys (4).
        let (dq_key0, dq_steps, dq_col0) = if D == 128 {
            (0, 8, 64 * wg)
        } else {
            (64 * wg, 4, 0)
        };
        if it + 1 < steps {
            load_q(it + 1, (it + 1) % STAGES, t);
        }
        commit_async_copies();
        if t < 2 * BWD2_BM {
            let (c, is_delta) = (t % BWD2_BM, t >= BWD2_BM);
            let r = q0 + c;
            let val = if r >= sq {
                if is_delta { 0.0 } else { f32::INFINITY }
            } else if is_delta {
                delta.get(qh + r * qs)
            } else {
                lse.get(qh + r * qs) * LOG2_E
            };
            stats.set(st * 2 * BWD2_BM + t, val);
        }
        wait_async_copies::<1>();
        fence_proxy_async_shared();
        sync_threads();

        let off = st * lay.stage;
        let (q_tile, do_tile) = (base + (lay.q + off) as u32, base + (lay.dout + off) as u32);
        let mut s = [0f32; 32];
        let mut dp = [0f32; 32];
        wgmma_fence();
        unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7] {
            if kk < D / 16 {
                let a = k_major(k_tile, BWD2_BN, 64 * wg, kk);
                let b = k_major(q_tile, BWD2_BM, 0, kk);
                wgmma_m64n64k16::<H, false, false>(&mut s, a, b, kk != 0);
            }
        });
        wgmma_commit_group();
        unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7] {
            if kk < D / 16 {
                let a = k_major(v_tile, BWD2_BN, 64 * wg, kk);
                let b = k_major(do_tile, BWD2_BM, 0, kk);
                wgmma_m64n64k16::<H, false, false>(&mut dp, a, b, kk != 0);
            }
        });
        wgmma_commit_group();
        wgmma_wait_group::<1>();
        fence_operands(&mut s);
        // The masks where the warp's 16 keys x 64 queries cross an edge,
        // then P^T, as rung 1.
        let (kw0, kw1, q1) = (kv0 + 16 * w, kv0 + 16 * w + 15, q0 + BWD2_BM - 1);
        if kw1 >= skv
            || (causal && kw1 > q0)
            || (window != 0 && (q1 >= kw0 + window || kw1 >= q0 + window))
        {
            unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31] {
                let key = key0 + 8 * ((i / 2) % 2);
                let c = 8 * (i / 4) + 2 * tig + i % 2;
                if hidden(q0 + c, key, skv, causal, window) {
                    s[i] = f32::NEG_INFINITY;
                }
            });
        }
        unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31] {
            let c = 8 * (i / 4) + 2 * tig + i % 2;
            let l2 = stats.get(st * 2 * BWD2_BM + c);
            s[i] = fast::exp2(Real::mul_add(s[i], scale_log2, -l2));
        });
        wgmma_wait_group::<0>();
        fence_operands(&mut dp);
        unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31] {
            let c = 8 * (i / 4) + 2 * tig + i % 2;
            dp[i] = s[i] * (dp[i] - stats.get(st * 2 * BWD2_BM + BWD2_BM + c));
        });
        // P^T and dS^T as the A fragments of 4 steps of 16 queries (s and
        // dp are dead after this), and dS^T to its tile from the same
        // packed pairs: row `16 w + gid (+ 8)` (the block's key), query
        // columns 8 (i / 4) + 2 tig, + 1 as one word.
        let mut pf = [[0u32; 4]; 4];
        let mut sf = [[0u32; 4]; 4];
        unroll!(kt in [0, 1, 2, 3] {
            pf[kt] = p_frag::<H, 32>(&s, kt);
            sf[kt] = p_frag::<H, 32>(&dp, kt);
        });
        unroll!(p in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            let i = 2 * p;
            let row = 16 * w + gid + 8 * ((i / 2) % 2);
            dsw.set(4 * panel_chunk(row, i / 4, BWD2_BN) + tig, sf[p / 4][p % 4]);
        });
        fence_proxy_async_shared();
        sync_threads();
        // dV += P^T dO_i and dK += dS^T Q_i (A from the registers), then
        // this warpgroup's part of dQ_i = dS K (unscaled; kernel 3
        // scales), all in flight together.
        wgmma_fence();
        unroll!(kt in [0, 1, 2, 3] {
            wgmma_pv::<H, D>(&mut dv_acc, pf[kt], mn_major(do_tile, BWD2_BM, 16 * kt));
        });
        unroll!(kt in [0, 1, 2, 3] {
            wgmma_pv::<H, D>(&mut dk_acc, sf[kt], mn_major(q_tile, BWD2_BM, 16 * kt));
        });
        let mut dq = [0f32; 32];
        unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7] {
            if kk < dq_steps {
                let key = dq_key0 + 16 * kk;
                let a = mn_major(ds_tile, BWD2_BN, key);
                let b = mn_major(k_tile + (dq_col0 / 64 * BWD2_BN * 128) as u32, BWD2_BN, key);
                wgmma_m64n64k16::<H, true, true>(&mut dq, a, b, kk != 0);
            }
        });
        wgmma_commit_group();
        wgmma_wait_group::<0>();
        fence_operands(&mut dq);
        let qrow = q0 + 16 * (w % 4) + gid;
        // Neighbouring columns as one vector reduction (`D` and the
        // column even, so the pair is aligned).
        unroll!(p in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            let i = 2 * p;
            let row = qrow + 8 * ((i / 2) % 2);
            let col = dq_col0 + 8 * (i / 4) + 2 * tig;
            if row < sq {
                dq_acc.red_add_pair((qh + row * qs) * D + col, [dq[i], dq[i + 1]]);
            }
        });
        // Everyone is done with stage `st` and the dS^T tile before they
        // are refilled.
        sync_threads();
    }
    wait_async_copies::<0>();
    let lane = t % 32;
    let (key0, tig) = (kv0 + 16 * (t / 32) + lane / 4, lane % 4);
    fence_first(&mut dk_acc, D / 2);
    fence_first(&mut dv_acc, D / 2);
    rescale(&mut dk_acc, D / 2, [scale, scale]);
    let keys = RowSlab::new(seq.k_first, key0, skv, D).strided(seq.k_stride);
    store_rows::<H, 64>(dk, &dk_acc, D / 2, tig, keys);
    store_rows::<H, 64>(dv, &dv_acc, D / 2, tig, keys);
}
