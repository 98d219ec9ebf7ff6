//! Rung 2: one fused kernel, FlashAttention-2's structure on `mma.sync`.

use super::{
    AttnShape, Lse, RowSlab, Rows, Seq, finish, mask_scores, online_softmax, p_frag, rescale,
    store_lse, store_lse_at, store_rows,
};
use ptxlab_device::mem::U32x4;
use ptxlab_device::mma::{
    Bf16, F16, FragA16, FragB16, FragC, Half16, ldmatrix_x4, ldmatrix_x4_trans, mma_m16n8k16,
};
use ptxlab_device::prelude::*;
use ptxlab_device::shared::{commit_async_copies, wait_async_copies};
use ptxlab_device::unroll;

/// Query rows of a block (16 per warp).
pub const FA2_BM: usize = 64;
/// Keys per tile.
pub const FA2_BN: usize = 64;
/// Threads of a block: four warps.
pub const FA2_THREADS: u32 = 128;
/// Key/value stages (double buffering).
pub const FA2_STAGES: usize = 2;

/// Dynamic shared memory of rung 2 for head dimension `d`: the `Q` tile
/// and two stages of `K` and `V` tiles, `d` 16-bit values a row (80 KiB at
/// `d = 128`, so two blocks fit on an SM).
pub const fn fa2_shared_bytes(d: usize) -> usize {
    (FA2_BM + 2 * FA2_STAGES * FA2_BN) * d * 2
}

/// The 16-byte chunk of shared memory that holds chunk `q` of row `r` of
/// a tile with `cpr` chunks a row: `q ^ (r % 8)` (an XOR swizzle: the
/// eight rows an `ldmatrix` matrix reads, and the rows a warp's copies
/// write, fall on eight different 16-byte bank groups).
#[inline(always)]
pub(super) fn chunk(r: usize, q: usize, cpr: usize) -> usize {
    r * cpr + (q ^ (r % 8))
}

/// The rows of one head in a 16-bit tensor: the head's first row `first`
/// in `src` and `stride` rows of `src` from one of its rows to the next
/// (1 dense, the heads of a token packed: [`Seq`]), its `rows` rows (a
/// copy zero-fills the rows at or past them), `cpr` 16-byte chunks a row
/// (`D / 8`).
#[derive(Clone, Copy)]
pub(super) struct HeadRows<'a> {
    pub src: DeviceSlice<'a, u16>,
    pub first: usize,
    pub stride: usize,
    pub rows: usize,
    pub cpr: usize,
}

/// Starts the copies of rows `r0..r0 + 64` of `head` into the tile at
/// chunk `at` of `sm` (thread `t` of the block's [`FA2_THREADS`]); rows at
/// or past the head's `rows` are zero-filled.
#[inline(always)]
pub(super) fn copy_tile(
    sm: SharedSlice<U32x4>,
    at: usize,
    head: HeadRows<'_>,
    r0: usize,
    t: usize,
) {
    let HeadRows {
        src,
        first: head_row,
        stride,
        rows,
        cpr,
    } = head;
    unroll!(c in [0, 1, 2, 3, 4, 5, 6, 7] {
        if c < FA2_BN * cpr / FA2_THREADS as usize {
            let i = t + FA2_THREADS as usize * c;
            let (r, q) = (i / cpr, i % cpr);
            let valid = r0 + r < rows;
            let g = if valid { (head_row + (r0 + r) * stride) * cpr + q } else { 0 };
            // SAFETY: `chunk(r, q)` is inside the tile (`r < 64`, `q < cpr`),
            // which lies inside `sm`; when `valid`, row
            // `head_row + (r0 + r) stride` is a row of the head inside `src`
            // (length checked by the kernel), and groups of 16 bytes of a
            // 256-byte aligned buffer are 16-byte aligned. Nothing touches
            // the chunk until the wait that completes this copy.
            unsafe { sm.copy_async(at + chunk(r, q, cpr), src, g, valid) };
        }
    });
}

/// Rung 2: the whole attention of 64 query rows in one block, with the
/// online softmax, `mma.sync.m16n8k16` and `ldmatrix`.
///
/// Grouped `K`/`V` heads: `group` query heads share one `K`/`V` head
/// (`group = 1`: one each; `group = heads`: multi-query attention). The
/// heads of a batch element are consecutive and `group` divides their
/// number, so the flat query head `head = b H + h` reads the flat `K`/`V`
/// head `head / group = b H_kv + h / group`: one division per block, and
/// the blocks of a group's query heads read the same `K`/`V` rows (from
/// L2 after the first).
///
/// Thread mapping: grid `(ceil(Sq / 64), heads)`, four warps; warp `w`
/// owns query rows `16 w .. 16 w + 16` of the block's 64 and keeps, in
/// the accumulator layout of the module docs, 32 scores (16 rows x 64 keys
/// of the current tile) and `D / 2` output accumulators (16 rows x `D`).
/// `Q`'s fragments are loaded once (`D / 4` registers).
///
/// Shared memory: the `Q` tile, then `K` and `V` tiles of 64 rows in two
/// stages, each row `D` 16-bit values as 16-byte chunks XOR-swizzled by
/// the row (`chunk`). The copies are `cp.async` (rows past `Sq` or
/// `Skv` zero-filled): tile `j + 1` is in flight while tile `j` is used.
///
/// Per key tile: `S = Q K^T` (`ldmatrix.x4` of `K` rows gives the `B`
/// fragments of two 8-key blocks), the scale and the masks, the online
/// softmax in registers (row maxima and sums over a quad with two
/// shuffles), then `O += P V` with `P` taken straight from the score
/// registers (the accumulator layout of `m16n8` is the `A` layout of
/// `m16n8k16`: no shared memory, no shuffles) and `V` through
/// `ldmatrix.x4.trans`.
///
/// Why it is faster than rung 1: no score matrix in memory (rung 1 writes
/// and reads `Sq x Skv` 16-bit values three times per head), one launch
/// instead of `3 heads + 1`, and the exponentials and the products of a
/// tile interleave in the same warps. Scores stay f32 until `P`.
#[kernel(launch_bounds(128), instances(<Bf16, 128>, <F16, 128>, <Bf16, 64>, <F16, 64>))]
pub fn attn_fa2<H: Half16, const D: usize>(
    q: DeviceSlice<u16>,
    k: DeviceSlice<u16>,
    v: DeviceSlice<u16>,
    out: DeviceSliceMut<u16>,
    lse: DeviceSliceMut<f32>,
    shape: AttnShape,
    lse_out: Lse,
) {
    let want_lse = lse_out as u32;
    let (sq, skv, causal) = (shape.sq as usize, shape.skv as usize, shape.causal());
    let (scale_log2, group) = (shape.scale_log2, shape.group);
    let heads = thread::grid_dim_y() as usize;
    let head = thread::block_idx_y() as usize;
    let group = group as usize;
    if group == 0 || !heads.is_multiple_of(group) {
        ptxlab_device::trap("attn_fa2: the group does not divide the heads");
    }
    let kv_heads = heads / group;
    if q.len() < heads * sq * D
        || out.len() < heads * sq * D
        || k.len() < kv_heads * skv * D
        || v.len() < kv_heads * skv * D
        || (want_lse != 0 && lse.len() < heads * sq)
    {
        ptxlab_device::trap("attn_fa2: a buffer is shorter than its shape");
    }
    let kv_row = (head / group) * skv;
    let cpr = D / 8;
    let sm = shared::dynamic_shared::<U32x4>(0, fa2_shared_bytes(D) / 16);
    let tile = FA2_BN * cpr;
    let k_at = |s: usize| tile + 2 * s * tile;
    let v_at = |s: usize| tile + 2 * s * tile + tile;
    let t = thread::thread_idx_x() as usize;
    let (w, lane) = (t / 32, t % 32);
    let (gid, tig) = (lane / 4, lane % 4);
    let q0 = thread::block_idx_x() as usize * FA2_BM;
    let row0 = q0 + 16 * w + gid;
    let ntiles = skv.div_ceil(FA2_BN);

    let krows = HeadRows {
        src: k,
        first: kv_row,
        stride: 1,
        rows: skv,
        cpr,
    };
    let vrows = HeadRows {
        src: v,
        first: kv_row,
        stride: 1,
        rows: skv,
        cpr,
    };
    copy_tile(
        sm,
        0,
        HeadRows {
            src: q,
            first: head * sq,
            stride: 1,
            rows: sq,
            cpr,
        },
        q0,
        t,
    );
    copy_tile(sm, k_at(0), krows, 0, t);
    copy_tile(sm, v_at(0), vrows, 0, t);
    commit_async_copies();

    let mut qf = [[0u32; 4]; 8];
    let mut o = [0f32; 64];
    let mut rows = Rows::new();
    for j in 0..ntiles {
        let st = j % FA2_STAGES;
        if j + 1 < ntiles {
            let nx = (j + 1) % FA2_STAGES;
            let r0 = (j + 1) * FA2_BN;
            copy_tile(sm, k_at(nx), krows, r0, t);
            copy_tile(sm, v_at(nx), vrows, r0, t);
        }
        // An empty group on the last tile keeps the count uniform.
        commit_async_copies();
        wait_async_copies::<1>();
        sync_threads();
        if j == 0 {
            unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7] {
                if kk < D / 16 {
                    let r = 16 * w + lane % 16;
                    qf[kk] = ldmatrix_x4(sm, chunk(r, 2 * kk + lane / 16, cpr));
                }
            });
        }
        // S = Q K^T: 16 rows x 64 keys per warp, 8 blocks of 8 keys.
        let mut s = [0f32; 32];
        unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7] {
            if kk < D / 16 {
                let a = FragA16(qf[kk]);
                unroll!(nb in [0, 1, 2, 3] {
                    // Lanes 8m..8m+8 name matrix m: key block 2 nb + m / 2,
                    // k half m % 2.
                    let m = lane / 8;
                    let r = (2 * nb + m / 2) * 8 + lane % 8;
                    let b = ldmatrix_x4(sm, k_at(st) + chunk(r, 2 * kk + m % 2, cpr));
                    mma_block::<H, 32>(&mut s, 2 * nb, &a, [b[0], b[1]]);
                    mma_block::<H, 32>(&mut s, 2 * nb + 1, &a, [b[2], b[3]]);
                });
            }
        });
        let col0 = j * FA2_BN;
        if col0 + FA2_BN > skv || (causal && col0 + FA2_BN - 1 > q0 + 16 * w) {
            mask_scores(&mut s, tig, col0, row0, skv, causal, 0);
        }
        let alpha = online_softmax(&mut s, &mut rows, scale_log2);
        rescale(&mut o, D / 2, alpha);
        // O += P V: 4 steps of 16 keys, D / 8 blocks of 8 columns.
        unroll!(kt in [0, 1, 2, 3] {
            let a = FragA16(p_frag::<H, 32>(&s, kt));
            unroll!(db in [0, 1, 2, 3, 4, 5, 6, 7] {
                if db < D / 16 {
                    // Lanes 0..16 name key rows 16 kt.. of column block
                    // 2 db, lanes 16..32 the same rows of block 2 db + 1.
                    let r = 16 * kt + lane % 16;
                    let b = ldmatrix_x4_trans(sm, v_at(st) + chunk(r, 2 * db + lane / 16, cpr));
                    mma_block::<H, 64>(&mut o, 2 * db, &a, [b[0], b[1]]);
                    mma_block::<H, 64>(&mut o, 2 * db + 1, &a, [b[2], b[3]]);
                }
            });
        });
        // Everyone is done with stage `st` before it is refilled.
        sync_threads();
    }
    let l = finish(&mut o, D / 2, &rows);
    store_rows::<H, 64>(out, &o, D / 2, tig, RowSlab::new(head * sq, row0, sq, D));
    if want_lse != 0 {
        store_lse(lse, l, tig, head * sq, row0, sq);
    }
}

/// Rung 2 for problems whose blocks see different key ranges: a sliding
/// window (`AttnShape::window`), packed variable-length batches
/// (`PACKED`), or both. [`attn_fa2`]'s thread mapping, shared-memory
/// layout and per-tile work, but each block walks only the key tiles its
/// rows see ([`AttnShape::keys_seen`]: the band around them with a window,
/// none past the last row when causal) and only the tiles that cross an
/// edge (of the band, of the causal triangle, of the keys) run the masks.
///
/// Packed (`PACKED`): `Q`, `O` are `(T_q, H, D)`, `K`, `V`
/// `(T_kv, H_kv, D)` and `lse` `(T_q, H)`: the tokens of the `B`
/// sequences one after the other, sequence `b` at tokens
/// `offsets[b] .. offsets[b + 1]` of `Q` and `offsets[B + 1 + b] ..
/// offsets[B + 2 + b]` of `K`/`V` (FlashAttention's `cu_seqlens_q` then
/// `cu_seqlens_k`). The grid is `(ceil(max Sq / 64), H, B)`; a block past
/// its sequence's queries returns at once, and the masks (causal, window)
/// are counted within each sequence. [`Seq`] turns the block's
/// coordinates into its rows; the dense instances (`offsets` unread)
/// compute exactly [`attn_fa2`]'s addresses.
///
/// One difference besides the key range: `Q` travels alone in the first
/// group of copies and its fragments go to registers before the key loop
/// (the range's bounds, live across the loop, would otherwise push the
/// D = 128 instances past 255 registers). A kernel of its own, so the
/// plain rung never reads a window or an offset.
#[kernel(launch_bounds(128), instances(<Bf16, 128, false>, <F16, 128, false>, <Bf16, 64, false>, <F16, 64, false>, <Bf16, 128, true>, <F16, 128, true>, <Bf16, 64, true>, <F16, 64, true>))]
#[allow(
    clippy::too_many_arguments,
    reason = "six device buffers, each its own parameter (their accesses stay ld/st.global), the shape and the lse switch"
)]
pub fn attn_fa2_ranged<H: Half16, const D: usize, const PACKED: bool>(
    q: DeviceSlice<u16>,
    k: DeviceSlice<u16>,
    v: DeviceSlice<u16>,
    out: DeviceSliceMut<u16>,
    lse: DeviceSliceMut<f32>,
    offsets: DeviceSlice<u32>,
    shape: AttnShape,
    lse_out: Lse,
) {
    let want_lse = lse_out as u32;
    let (causal, window) = (shape.causal(), shape.window());
    let (scale_log2, group) = (shape.scale_log2, shape.group as usize);
    let heads = thread::grid_dim_y() as usize;
    let head = thread::block_idx_y() as usize;
    if group == 0 || !heads.is_multiple_of(group) {
        ptxlab_device::trap("attn_fa2_ranged: the group does not divide the heads");
    }
    let kv_heads = heads / group;
    // Rows of Q (and O) and of K (and V) in all.
    let (q_rows, k_rows) = if PACKED {
        let (tq, tk) = Seq::tokens(offsets, thread::grid_dim_z() as usize);
        (tq * heads, tk * kv_heads)
    } else {
        (heads * shape.sq as usize, kv_heads * shape.skv as usize)
    };
    if q.len() < q_rows * D
        || out.len() < q_rows * D
        || k.len() < k_rows * D
        || v.len() < k_rows * D
        || (want_lse != 0 && lse.len() < q_rows)
    {
        ptxlab_device::trap("attn_fa2_ranged: a buffer is shorter than its shape");
    }
    let seq = Seq::of::<PACKED>(&shape, offsets, heads, head, head / group);
    let (sq, skv) = (seq.sq, seq.skv);
    let q0 = thread::block_idx_x() as usize * FA2_BM;
    if q0 >= sq {
        // Past this sequence's queries (packed: the grid covers the longest).
        return;
    }
    let cpr = D / 8;
    let sm = shared::dynamic_shared::<U32x4>(0, fa2_shared_bytes(D) / 16);
    let tile = FA2_BN * cpr;
    let k_at = |s: usize| tile + 2 * s * tile;
    let v_at = |s: usize| tile + 2 * s * tile + tile;
    let t = thread::thread_idx_x() as usize;
    let (w, lane) = (t / 32, t % 32);
    let (gid, tig) = (lane / 4, lane % 4);
    let row0 = q0 + 16 * w + gid;
    // The key tiles the block's rows see (the first one, `first`, starts
    // the pipeline).
    let (klo, khi) = shape
        .with_lengths(sq, skv)
        .keys_seen(q0, (q0 + FA2_BM).min(sq) - 1);
    let (first, ntiles) = (klo / FA2_BN, khi.div_ceil(FA2_BN));

    let rows_of = |src, first, stride, rows| HeadRows {
        src,
        first,
        stride,
        rows,
        cpr,
    };
    let qrows = rows_of(q, seq.q_first, seq.q_stride, sq);
    let krows = rows_of(k, seq.k_first, seq.k_stride, skv);
    let vrows = rows_of(v, seq.k_first, seq.k_stride, skv);
    copy_tile(sm, 0, qrows, q0, t);
    let mut qf = [[0u32; 4]; 8];
    // Q alone in the first group of copies, the first K/V tile in the
    // second: Q's fragments go to registers before the key loop.
    commit_async_copies();
    copy_tile(sm, k_at(first % FA2_STAGES), krows, first * FA2_BN, t);
    copy_tile(sm, v_at(first % FA2_STAGES), vrows, first * FA2_BN, t);
    commit_async_copies();
    wait_async_copies::<1>();
    sync_threads();
    load_q::<D>(sm, &mut qf, w, lane);

    let mut o = [0f32; 64];
    let mut rows = Rows::new();
    for j in first..ntiles {
        let st = j % FA2_STAGES;
        if j + 1 < ntiles {
            let nx = (j + 1) % FA2_STAGES;
            let r0 = (j + 1) * FA2_BN;
            copy_tile(sm, k_at(nx), krows, r0, t);
            copy_tile(sm, v_at(nx), vrows, r0, t);
        }
        // An empty group on the last tile keeps the count uniform.
        commit_async_copies();
        wait_async_copies::<1>();
        sync_threads();
        // S = Q K^T: 16 rows x 64 keys per warp, 8 blocks of 8 keys.
        let mut s = [0f32; 32];
        unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7] {
            if kk < D / 16 {
                let a = FragA16(qf[kk]);
                unroll!(nb in [0, 1, 2, 3] {
                    // Lanes 8m..8m+8 name matrix m: key block 2 nb + m / 2,
                    // k half m % 2.
                    let m = lane / 8;
                    let r = (2 * nb + m / 2) * 8 + lane % 8;
                    let b = ldmatrix_x4(sm, k_at(st) + chunk(r, 2 * kk + m % 2, cpr));
                    mma_block::<H, 32>(&mut s, 2 * nb, &a, [b[0], b[1]]);
                    mma_block::<H, 32>(&mut s, 2 * nb + 1, &a, [b[2], b[3]]);
                });
            }
        });
        let col0 = j * FA2_BN;
        // The warp's rows are q0 + 16 w ..= q0 + 16 w + 15: a tile needs
        // the masks where it runs past Skv, holds a key after one of the
        // rows (causal), or a key W or more away from one (window).
        let (wr0, wc1) = (q0 + 16 * w, col0 + FA2_BN - 1);
        if wc1 >= skv
            || (causal && wc1 > wr0)
            || (window != 0 && (wr0 + 15 >= col0 + window || wc1 >= wr0 + window))
        {
            mask_scores(&mut s, tig, col0, row0, skv, causal, window);
        }
        let alpha = online_softmax(&mut s, &mut rows, scale_log2);
        rescale(&mut o, D / 2, alpha);
        // O += P V: 4 steps of 16 keys, D / 8 blocks of 8 columns.
        unroll!(kt in [0, 1, 2, 3] {
            let a = FragA16(p_frag::<H, 32>(&s, kt));
            unroll!(db in [0, 1, 2, 3, 4, 5, 6, 7] {
                if db < D / 16 {
                    // Lanes 0..16 name key rows 16 kt.. of column block
                    // 2 db, lanes 16..32 the same rows of block 2 db + 1.
                    let r = 16 * kt + lane % 16;
                    let b = ldmatrix_x4_trans(sm, v_at(st) + chunk(r, 2 * db + lane / 16, cpr));
                    mma_block::<H, 64>(&mut o, 2 * db, &a, [b[0], b[1]]);
                    mma_block::<H, 64>(&mut o, 2 * db + 1, &a, [b[2], b[3]]);
                }
            });
        });
        // Everyone is done with stage `st` before it is refilled.
        sync_threads();
    }
    let l = finish(&mut o, D / 2, &rows);
    let rows_at = RowSlab::new(seq.q_first, row0, sq, D).strided(seq.q_stride);
    store_rows::<H, 64>(out, &o, D / 2, tig, rows_at);
    if want_lse != 0 {
        store_lse_at(lse, l, tig, rows_at);
    }
}

/// Warp `w`'s `A` fragments of its 16 rows of the `Q` tile (at the start
/// of `sm`), `D / 16` steps of 16 columns.
#[inline(always)]
fn load_q<const D: usize>(sm: SharedSlice<U32x4>, qf: &mut [[u32; 4]; 8], w: usize, lane: usize) {
    let cpr = D / 8;
    unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7] {
        if kk < D / 16 {
            let r = 16 * w + lane % 16;
            qf[kk] = ldmatrix_x4(sm, chunk(r, 2 * kk + lane / 16, cpr));
        }
    });
}

/// `mma.m16n8k16` into 8-column block `nb` of accumulators held in the
/// accumulator layout (elements `4 nb .. 4 nb + 4`).
#[inline(always)]
pub(super) fn mma_block<H: Half16, const N: usize>(
    acc: &mut [f32; N],
    nb: usize,
    a: &FragA16,
    b: [u32; 2],
) {
    let e = 4 * nb;
    let mut c = FragC([acc[e], acc[e + 1], acc[e + 2], acc[e + 3]]);
    mma_m16n8k16::<H>(&mut c, a, &FragB16(b));
    acc[e..e + 4].copy_from_slice(&c.0);
}
