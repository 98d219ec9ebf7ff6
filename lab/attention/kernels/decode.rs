//! Decoding: attention of a few new query rows per sequence over a paged
//! key/value cache, split over the cached length (FlashDecoding) and
//! reduced by the log-sum-exp rule.
//!
//! # The problem
//! A batch of `B` sequences, sequence `b` with `kv_len[b]` cached tokens;
//! `H` query heads read `H_kv` key/value heads (`H_kv` divides `H`; query
//! head `h` reads `K`/`V` head `h / G`, `G = H / H_kv`). Each sequence
//! brings `q_len` new query rows (1 for plain decoding, a few for
//! speculative decoding), the last `q_len` tokens of the sequence: query
//! `t` sees keys `j <= kv_len - q_len + t` (the causal mask aligned to the
//! bottom right, as FlashAttention's `flash_attn_with_kvcache`). All 16-bit
//! values are BF16; scores, the softmax and the accumulators are f32.
//!
//! ```text
//! q          (B, q_len, H, D)                 out, likewise; lse (B, q_len, H) f32
//! k_cache    (num_pages, page_size, H_kv, D)  v_cache, likewise
//! block_table (B, max_pages) i32              kv_lens (B) i32
//! key j of sequence b:  k_cache[block_table[b][j / page_size]][j % page_size][h_kv][:]
//! ```
//!
//! The cache is paged as vLLM's: a sequence's tokens live in fixed-size
//! pages anywhere in the cache, and its row of the block table lists them
//! in order. Entries past the sequence's last page are never read.
//!
//! # Why split the keys
//! One new token per sequence is a matrix-vector product per head: every
//! byte of the cache is read once and used for `2 G q_len` flops, so the
//! time is the time to read the cache, and the only way to read it fast is
//! to have the whole GPU reading at once. A grid of one block per
//! (sequence, `K`/`V` head) has `B H_kv` blocks, 64 at `B = 8, H_kv = 8`,
//! half an H200's 132 SMs, each reading a long sequence alone. So the keys
//! of each sequence are cut into splits of `chunk` keys ([`attn_decode`],
//! one block per split), which gives every SM a few blocks whatever the
//! batch; each block writes a partial result (its softmax's log-sum-exp and
//! its normalised output), and [`attn_decode_combine`] merges the splits of
//! a row:
//!
//! ```text
//! M = max_s lse_s      w_s = 2^(lse_s - M)      O = sum_s w_s o_s / sum_s w_s      lse = M + log2 sum_s w_s
//! ```
//!
//! (base-2 log-sum-exps, as the online softmax keeps them).
//!
//! # Why one block per `K`/`V` head, not per query head
//! The `G` query heads of a `K`/`V` head (and the `q_len` rows of each)
//! are one block's `G q_len` rows, so each `K`/`V` byte is read from memory
//! once for all of them: with 8:1 grouping that is 8 times less traffic
//! than a block per query head. Those rows are the `M` side of a
//! tensor-core product: `mma.sync.m16n8k16` has 16 rows, so eight rows
//! leave half of `S = Q K^T` idle; the waste costs nothing, because the
//! kernel is bound by memory and the tensor cores run at a few per cent of
//! their rate. `O` is computed transposed, `O^T = V^T P^T`, where the rows
//! are the `N = 8` side: no idle half, half the accumulators, and the
//! probabilities go from the score registers straight into the `B`
//! fragment (no shuffles, no shared memory).

use super::fa2::mma_block;
use super::{LN_2, Rows, log2_approx, online_softmax};
use ptxlab_device::math::fast;
use ptxlab_device::mem::{F32x2, U32x4};
use ptxlab_device::mma::{Bf16, FragA16, ldmatrix_x4, ldmatrix_x4_trans, pack_rn};
use ptxlab_device::prelude::*;
use ptxlab_device::shared::{commit_async_copies, wait_async_copies};
use ptxlab_device::unroll;

/// Keys per tile of [`attn_decode`]: 16 per warp.
pub const DEC_TK: usize = 64;
/// Threads of a block of [`attn_decode`]: four warps.
pub const DEC_THREADS: u32 = 128;
/// Warps of a block of [`attn_decode`].
pub const DEC_WARPS: usize = DEC_THREADS as usize / 32;
/// Threads of a block of [`attn_decode_combine`]: one warp per output row.
pub const COMBINE_THREADS: u32 = 32;
/// Largest page size (tokens per page) the kernels take; every power of two
/// from 1 up to it is taken.
pub const MAX_PAGE_SIZE: usize = 1 << 12;
/// Head dimensions with a kernel instance.
pub const DEC_DIMS: [usize; 3] = [64, 128, 256];

/// Tiles in flight for head dimension `d`: each stage holds a `K` and a
/// `V` tile of [`DEC_TK`] keys (`256 d` bytes), and the stages are as many
/// as keep two blocks on an SM for `d <= 128` (96 KiB at `d = 128`) and one
/// at `d = 256` (128 KiB).
pub const fn dec_stages(d: usize) -> usize {
    if d <= 64 {
        4
    } else if d <= 128 {
        3
    } else {
        2
    }
}

/// Bytes of the region of [`attn_decode`]'s shared memory that holds the
/// tile stages and, after the last tile, the four warps' partial results.
pub const fn dec_tiles_bytes(d: usize, rows: usize) -> usize {
    let pipe = dec_stages(d) * 2 * DEC_TK * d * 2;
    let merge = DEC_WARPS * rows * d * 4 + 2 * DEC_WARPS * rows * 4;
    let b = if pipe > merge { pipe } else { merge };
    b.div_ceil(16) * 16
}

/// Dynamic shared memory of [`attn_decode`] for head dimension `d` and
/// `rows` query rows per block: [`dec_tiles_bytes`], then two tiles' row
/// offsets (`u64`, one per key).
pub const fn decode_shared_bytes(d: usize, rows: usize) -> usize {
    dec_tiles_bytes(d, rows) + 2 * DEC_TK * 8
}

/// The problem as both kernels see it. `rows_per_block` is the instance's
/// `ROWS`; the query rows of a `K`/`V` head, `(H / H_kv) q_len` of them,
/// are cut into `groups` blocks of that many (row `r` of a head is query
/// position `r / G` of query head `h_kv G + r % G`).
#[derive(Debug, Clone, Copy, PartialEq, KernelParams)]
#[repr(C)]
pub struct Decode {
    /// Sequences `B`.
    pub batch: u32,
    /// Query heads `H`.
    pub heads: u32,
    /// `K`/`V` heads `H_kv` (divides `heads`).
    pub kv_heads: u32,
    /// New query rows per sequence (at most every sequence's length).
    pub q_len: u32,
    /// Query rows per block (the instance's `ROWS`).
    pub rows_per_block: u32,
    /// Row blocks per `K`/`V` head: `ceil(G q_len / rows_per_block)`.
    pub groups: u32,
    /// `log2` of the page size.
    pub page_log2: u32,
    /// Entries per row of the block table.
    pub max_pages: u32,
    /// Pages in the cache.
    pub num_pages: u32,
    /// Keys per split (a multiple of [`DEC_TK`]).
    pub chunk: u32,
    /// Splits of the longest sequence (grid y of [`attn_decode`]).
    pub splits: u32,
    /// `scale log2(e)`.
    pub scale_log2: f32,
}

impl Decode {
    /// Query heads per `K`/`V` head.
    #[inline(always)]
    pub fn group(&self) -> usize {
        // Divisors kept at least 1: no division-by-zero branch in the
        // kernels (the launch checks reject such a shape first).
        (self.heads / self.kv_heads.max(1)).max(1) as usize
    }
    /// Query rows per `K`/`V` head.
    #[inline(always)]
    pub fn rows(&self) -> usize {
        self.group() * self.q_len as usize
    }
    /// Elements of the partial outputs: `splits x rows_per_block x d` per
    /// row block.
    pub fn part_len(&self, d: usize) -> usize {
        self.part_rows() * d
    }
    /// Partial log-sum-exps: one per row of every split of every row block.
    pub fn part_rows(&self) -> usize {
        (self.batch * self.kv_heads * self.groups) as usize
            * self.splits as usize
            * self.rows_per_block as usize
    }
}

/// Where block `y` (grid x) of either kernel sits: `(b, h_kv, row block)`.
#[inline(always)]
fn block_coords(p: &Decode, y: usize) -> (usize, usize, usize) {
    let groups = p.groups.max(1) as usize;
    let kv_heads = p.kv_heads.max(1) as usize;
    let kvh = (y / groups) % kv_heads;
    let b = y / groups / kv_heads;
    (b, kvh, y % groups)
}

/// The length of sequence `b`, trapping on a length the host would have
/// refused (0, shorter than `q_len`, or past the block table's pages).
#[inline(always)]
fn seq_len(p: &Decode, kv_lens: DeviceSlice<i32>, b: usize) -> usize {
    let kv = kv_lens.get(b);
    if kv <= 0
        || (kv as usize) < p.q_len as usize
        || kv as usize > (p.max_pages as usize) << p.page_log2
    {
        ptxlab_device::trap(
            "attn_decode: a kv length is 0, shorter than q_len or longer than its pages",
        );
    }
    kv as usize
}

/// The element offset of query row `r` of a block's `K`/`V` head (`None`
/// past the head's rows): query position `r / G`, query head `h_kv G + r % G`.
#[inline(always)]
fn q_row(p: &Decode, b: usize, kvh: usize, r: usize, d: usize) -> Option<usize> {
    let g = p.group();
    if r < p.rows() {
        let (t, h) = (r / g, kvh * g + r % g);
        Some(((b * p.q_len as usize + t) * p.heads as usize + h) * d)
    } else {
        None
    }
}

/// Waits until at most `stages - 1` copy groups are in flight (the oldest
/// of `stages` stages has landed): `wait_async_copies` takes the count as
/// a const, and `stages` is a constant of each instance, so one arm stays.
#[inline(always)]
fn wait_oldest(stages: usize) {
    match stages {
        2 => wait_async_copies::<1>(),
        3 => wait_async_copies::<2>(),
        _ => wait_async_copies::<3>(),
    }
}

/// The two caches, as [`issue_tile`] reads them.
#[derive(Clone, Copy)]
struct Cache<'a> {
    k: DeviceSlice<'a, u16>,
    v: DeviceSlice<'a, u16>,
}

/// Which tile [`issue_tile`] copies, and where to.
#[derive(Clone, Copy)]
struct TileAt {
    /// The tile's first key.
    key0: usize,
    /// Where the tile's row offsets start in the offsets buffer.
    off_at: usize,
    /// The stage the tile is copied into.
    st: usize,
}

/// Starts the `cp.async` copies of one tile of [`attn_decode`]: `K` and
/// `V` rows of keys `key0 .. key0 + 64` into stage `st` of `which` (keys
/// at or past `end` zero-filled), each row from the cache chunk offset at
/// `offs[off_at + r]`. Thread `t` copies chunks `t + 128 c` of each
/// tile.
#[inline(always)]
fn issue_tile<const D: usize>(
    sm: SharedSlice<U32x4>,
    offs: SharedSlice<u64>,
    cache: Cache<'_>,
    t: usize,
    end: usize,
    which: TileAt,
) {
    let TileAt { key0, off_at, st } = which;
    let cpr = D / 8;
    let tile = DEC_TK * cpr;
    // Chunk `t + 128 c` of the tile is row `r0 + step c`, column `qd`;
    // `step c` is a multiple of 4, so the row's swizzle `r % 8` takes at
    // most two values over `c`, and the chunk's place `chunk(r, qd)` is
    // `r0 cpr + 128 c + x` with `x` one of two values.
    let (r0, qd, step) = (t / cpr, t % cpr, DEC_THREADS as usize / cpr);
    let base = 2 * st * tile + r0 * cpr;
    unroll!(c in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
        if c < tile / DEC_THREADS as usize {
            let r = r0 + step * c;
            let valid = key0 + r < end;
            let g = if valid { offs[off_at + r] as usize + qd } else { 0 };
            let at = base + DEC_THREADS as usize * c + (qd ^ ((r0 + (step * c) % 8) % 8));
            // SAFETY: `chunk(r, qd)` is inside stage `st`'s tiles (`r <
            // 64`, `qd < cpr`), inside `sm` (the kernel's layout); when
            // `valid`, chunk `g` is in row `(page P + slot) H_kv + h_kv` of
            // the cache with `page < num_pages` (checked when the offset was
            // made), so inside both caches (lengths checked by the kernel);
            // device buffers are 256-byte aligned. Nothing touches the
            // chunk until the wait that completes this copy: the stage was
            // released by the barrier after its last use.
            unsafe {
                sm.copy_async(at, cache.k, g, valid);
                sm.copy_async(at + tile, cache.v, g, valid);
            }
        }
    });
}

/// Split-KV decoding, one block per (split, row block of a `K`/`V` head):
/// the partial softmax of `ROWS` query rows over the split's keys.
///
/// Thread mapping: grid `(B H_kv groups, splits)`, four warps. The block
/// walks its split's keys in tiles of [`DEC_TK`] = 64; warp `w` takes keys
/// `16 w .. 16 w + 16` of each tile and keeps its own online softmax (the
/// accumulator layout of the module docs of [`super`]: lane `(gid, tig)`
/// holds rows `gid` and `gid + 8`). `S = Q K^T` is 16 rows (the `ROWS`
/// query rows, the rest zero) by 16 keys: `Q`'s `A` fragments stay in
/// registers for the whole split (loaded once from global memory), `K`'s
/// `B` fragments come from `ldmatrix`. `O^T = V^T P^T` is `D` by `ROWS`:
/// `V^T`'s `A` fragments from `ldmatrix.trans` of the `V` tile, `P^T`'s `B`
/// fragment packed from the score registers of rows `gid` (and `gid + 8`
/// for the second 8 rows), so lane `(gid, tig)` accumulates `O^T` rows
/// (dims) `16 m + gid`, `+ 8` for query rows `8 n + 2 tig`, `+ 1`; the
/// softmax's rescale factors reach those lanes by two shuffles per 8 rows.
///
/// Shared memory: `S` stages ([`dec_stages`]), each a `K` tile and a `V`
/// tile of 64 keys by `D` 16-bit values, rows as 16-byte chunks
/// XOR-swizzled by the row (as rung 2's), then two tiles' worth of row
/// offsets (`u64`: where key `r` of the tile starts in the cache, from the
/// block table). Every thread copies 16-byte chunks with `cp.async`
/// (keys past the split zero-filled); tile `j + S - 1` is in flight while
/// tile `j` is used, and the block-table entries of tile `j + S` are read
/// during tile `j`'s arithmetic, so their latency is hidden too. After the
/// last tile the same memory holds the four warps' `m`, `l` and
/// unnormalised `O` (f32, `ROWS x D` each), which the block merges into the
/// split's normalised output and base-2 log-sum-exp in `part_o`,
/// `part_lse` (row `(y splits + split) ROWS + r`). A split past its
/// sequence's end writes nothing ([`attn_decode_combine`] does not read it).
///
/// `rows_per_block` must equal `ROWS`; every length is checked against the
/// shape (a trap otherwise), and so is every page index read.
#[kernel(
    launch_bounds(128, 2),
    instances(<64, 8>, <64, 16>, <128, 8>, <128, 16>, <256, 8>)
)]
#[allow(
    clippy::too_many_arguments,
    reason = "seven device buffers, each its own parameter (its accesses stay ld/st.global), and one struct"
)]
pub fn attn_decode<const D: usize, const ROWS: usize>(
    q: DeviceSlice<u16>,
    k_cache: DeviceSlice<u16>,
    v_cache: DeviceSlice<u16>,
    block_table: DeviceSlice<i32>,
    kv_lens: DeviceSlice<i32>,
    part_o: DeviceSliceMut<f32>,
    part_lse: DeviceSliceMut<f32>,
    p: Decode,
) {
    let cpr = D / 8;
    let stages = dec_stages(D);
    let (batch, kv_heads) = (p.batch as usize, p.kv_heads as usize);
    let (max_pages, num_pages) = (p.max_pages as usize, p.num_pages as usize);
    let (split_len, splits) = (p.chunk as usize, p.splits as usize);
    let page_log2 = p.page_log2 as usize;
    if p.kv_heads == 0
        || !p.heads.is_multiple_of(p.kv_heads.max(1))
        || p.rows_per_block as usize != ROWS
        || p.groups as usize != p.rows().div_ceil(ROWS)
        || thread::grid_dim_x() as usize != batch * kv_heads * p.groups as usize
        || thread::grid_dim_y() as usize != splits
        || split_len == 0
        || !split_len.is_multiple_of(DEC_TK)
        || page_log2 > 12
    {
        ptxlab_device::trap("attn_decode: the launch does not match its parameters");
    }
    let cache = (num_pages << page_log2) * kv_heads * D;
    if q.len() < batch * p.q_len as usize * p.heads as usize * D
        || k_cache.len() < cache
        || v_cache.len() < cache
        || block_table.len() < batch * max_pages
        || kv_lens.len() < batch
        || part_o.len() < p.part_len(D)
        || part_lse.len() < p.part_rows()
    {
        ptxlab_device::trap("attn_decode: a buffer is shorter than its shape");
    }
    let y = thread::block_idx_x() as usize;
    let split = thread::block_idx_y() as usize;
    let (b, kvh, grp) = block_coords(&p, y);
    let kv_len = seq_len(&p, kv_lens, b);
    let start = split * split_len;
    // The whole block leaves together, before any barrier.
    if start >= kv_len {
        return;
    }
    let end = kv_len.min(start + split_len);
    let ntiles = (end - start).div_ceil(DEC_TK);

    let t = thread::thread_idx_x() as usize;
    let (w, lane) = (t / 32, t % 32);
    let (gid, tig) = (lane / 4, lane % 4);
    let tiles_bytes = dec_tiles_bytes(D, ROWS);
    let sm = shared::dynamic_shared::<U32x4>(0, tiles_bytes / 16);
    let mut offs = shared::dynamic_shared::<u64>(tiles_bytes, 2 * DEC_TK);
    let tile = DEC_TK * cpr;
    let k_at = |s: usize| 2 * s * tile;
    let v_at = |s: usize| 2 * s * tile + tile;

    // Block-table entry of key `t` of tile `n` (thread `t < DEC_TK`), 0
    // past the split: a plain load, used only after the tile's arithmetic.
    let fetch = move |n: usize| -> i32 {
        let key = start + n * DEC_TK + t;
        if t < DEC_TK && key < end {
            block_table.get(b * max_pages + (key >> page_log2))
        } else {
            0
        }
    };
    // The chunk offset in the cache of that key's row of this K/V head.
    let offset = move |n: usize, page: i32| -> u64 {
        let key = start + n * DEC_TK + t;
        if key >= end {
            return 0;
        }
        if page < 0 || page as usize >= num_pages {
            ptxlab_device::trap("attn_decode: a block-table entry is outside the cache");
        }
        let slot = key & ((1 << page_log2) - 1);
        ((((page as usize) << page_log2) + slot) * kv_heads + kvh) as u64 * cpr as u64
    };
    let cache = Cache {
        k: k_cache,
        v: v_cache,
    };

    // Q's A fragments: rows gid (a0, a2) and gid + 8 (a1, a3; zero when
    // ROWS = 8), k-step kk covering dims 16 kk .. 16 kk + 16.
    let mut qa = [[0u32; 4]; 16];
    let rbase = grp * ROWS;
    let q0 = q_row(&p, b, kvh, rbase + gid, D);
    let q1 = if ROWS > 8 {
        q_row(&p, b, kvh, rbase + gid + 8, D)
    } else {
        None
    };
    unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
        if kk < D / 16 {
            let c = 16 * kk + 2 * tig;
            // SAFETY: `c + 9 < D`, so both pairs are inside the row, which
            // is inside `q` (length checked above); 4-byte aligned (`D` and
            // `c` even).
            unsafe {
                if let Some(at) = q0 {
                    qa[kk][0] = q.get_vec_unchecked::<u32>((at + c) / 2);
                    qa[kk][2] = q.get_vec_unchecked::<u32>((at + c + 8) / 2);
                }
                if let Some(at) = q1 {
                    qa[kk][1] = q.get_vec_unchecked::<u32>((at + c) / 2);
                    qa[kk][3] = q.get_vec_unchecked::<u32>((at + c + 8) / 2);
                }
            }
        }
    });
    // The last key each of the thread's two rows sees, plus one: query
    // position `t` sees keys `j <= kv_len - q_len + t`; rows past the
    // head's (zero queries) see the sequence.
    let see = |r: usize| -> usize {
        if r < p.rows() {
            kv_len - p.q_len as usize + r / p.group() + 1
        } else {
            kv_len
        }
    };
    let lim = [
        see(rbase + gid),
        if ROWS > 8 {
            see(rbase + gid + 8)
        } else {
            kv_len
        },
    ];
    let lim_min = if lim[0] < lim[1] { lim[0] } else { lim[1] };

    // Prologue: the offsets of tiles 0 .. S - 1, the copies of 0 .. S - 2.
    for n in 0..stages - 1 {
        if t < DEC_TK {
            offs[(n % 2) * DEC_TK + t] = offset(n, fetch(n));
        }
        sync_threads();
        if n < ntiles {
            let which = TileAt {
                key0: start + n * DEC_TK,
                off_at: (n % 2) * DEC_TK,
                st: n,
            };
            issue_tile::<D>(sm, offs, cache, t, end, which);
        }
        commit_async_copies();
        // Buffer `n % 2` is read before tile `n + 2` rewrites it.
        sync_threads();
    }
    if t < DEC_TK {
        offs[((stages - 1) % 2) * DEC_TK + t] = offset(stages - 1, fetch(stages - 1));
    }
    sync_threads();

    let mut o = [0f32; 64];
    let mut rows = Rows::new();
    let nr_blocks = ROWS / 8;
    let m_blocks = D / 16;
    // The rows a lane names for `ldmatrix` (the same in the K and V
    // tiles): lanes 8m..8m+8 give rows 16 w + 8 (m / 2) + lane % 8, at
    // 16-byte column 2 c + m % 2, which the swizzle puts at
    // `8 (c / 4) + xs[c % 4]`.
    let m = lane / 8;
    let lrow = (16 * w + 8 * (m / 2) + lane % 8) * cpr;
    let xs = [0, 1, 2, 3].map(|c| (2 * c + m % 2) ^ (lane % 8));
    for j in 0..ntiles {
        let st = j % stages;
        let n = j + stages - 1;
        if n < ntiles {
            let which = TileAt {
                key0: start + n * DEC_TK,
                off_at: (n % 2) * DEC_TK,
                st: n % stages,
            };
            issue_tile::<D>(sm, offs, cache, t, end, which);
        }
        // An empty group past the last tile keeps the count uniform.
        commit_async_copies();
        wait_oldest(stages);
        sync_threads();
        // The block-table entries of tile `n + 1`, stored after the
        // arithmetic below.
        let next = fetch(n + 1);
        let key0 = start + j * DEC_TK + 16 * w;
        if key0 < end {
            // S = Q K^T: 16 rows x 16 keys (two 8-key blocks).
            let mut s = [0f32; 8];
            unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                if kk < D / 16 {
                    let a = FragA16(qa[kk]);
                    // Lanes 8m..8m+8 name matrix m: key block m / 2, k half
                    // m % 2 (`chunk(lrow, 2 kk + m % 2)` of the K tile).
                    let kb = ldmatrix_x4(sm, k_at(st) + lrow + 8 * (kk / 4) + xs[kk % 4]);
                    mma_block::<Bf16, 8>(&mut s, 0, &a, [kb[0], kb[1]]);
                    mma_block::<Bf16, 8>(&mut s, 1, &a, [kb[2], kb[3]]);
                }
            });
            if key0 + 16 > lim_min {
                unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7] {
                    let key = key0 + 8 * (i / 4) + 2 * tig + i % 2;
                    if key >= lim[(i / 2) % 2] {
                        s[i] = f32::NEG_INFINITY;
                    }
                });
            }
            let alpha = online_softmax(&mut s, &mut rows, p.scale_log2);
            // O^T = V^T P^T: the scale of query rows 8 nr + 2 tig (+1),
            // held by lanes 4 (2 tig) and 4 (2 tig + 1).
            unroll!(nr in [0, 1] {
                if nr < nr_blocks {
                    let a0 = warp::shfl_idx(FULL_MASK, alpha[nr], (8 * tig) as u32);
                    let a1 = warp::shfl_idx(FULL_MASK, alpha[nr], (8 * tig + 4) as u32);
                    unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63] {
                        if i / (4 * m_blocks) == nr && i < 4 * m_blocks * nr_blocks {
                            o[i] *= if i.is_multiple_of(2) { a0 } else { a1 };
                        }
                    });
                }
            });
            // P^T's B fragments: rows gid (scores 0, 1 | 4, 5) and gid + 8
            // (2, 3 | 6, 7), keys 2 tig (+1) and 8 + 2 tig (+1).
            let pb = [
                [pack_rn::<Bf16>(s[0], s[1]), pack_rn::<Bf16>(s[4], s[5])],
                [pack_rn::<Bf16>(s[2], s[3]), pack_rn::<Bf16>(s[6], s[7])],
            ];
            unroll!(mb in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                if mb < m_blocks {
                    // Lanes 8m..8m+8 name matrix m: dims 16 mb + 8 (m % 2),
                    // keys 8 (m / 2) of the warp's 16 (transposed: V^T's A;
                    // `chunk(lrow, 2 mb + m % 2)` of the V tile).
                    let at = v_at(st) + lrow + 8 * (mb / 4) + xs[mb % 4];
                    let va = FragA16(ldmatrix_x4_trans(sm, at));
                    unroll!(nr in [0, 1] {
                        if nr < nr_blocks {
                            mma_block::<Bf16, 64>(&mut o, nr * m_blocks + mb, &va, pb[nr]);
                        }
                    });
                }
            });
        }
        if t < DEC_TK {
            offs[((n + 1) % 2) * DEC_TK + t] = offset(n + 1, next);
        }
        // Everyone is done with stage `st` (and the offsets of tile `n`)
        // before they are refilled.
        sync_threads();
    }
    wait_async_copies::<0>();

    // The four warps' partial softmaxes, merged through shared memory.
    let f = shared::dynamic_shared::<f32>(0, DEC_WARPS * ROWS * (D + 2));
    let (mo, lo) = (DEC_WARPS * ROWS * D, DEC_WARPS * ROWS * (D + 1));
    let mut l = rows.l;
    for h in 0..2 {
        l[h] += warp::shfl_xor(FULL_MASK, l[h], 1);
        l[h] += warp::shfl_xor(FULL_MASK, l[h], 2);
    }
    if tig == 0 {
        for h in 0..2 {
            if h < nr_blocks {
                f.set(mo + w * ROWS + gid + 8 * h, rows.m[h]);
                f.set(lo + w * ROWS + gid + 8 * h, l[h]);
            }
        }
    }
    unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63] {
        if i < 4 * m_blocks * nr_blocks {
            let (blk, e) = (i / 4, i % 4);
            let (nr, mb) = (blk / m_blocks, blk % m_blocks);
            let d = 16 * mb + gid + 8 * (e / 2);
            let r = 8 * nr + 2 * tig + e % 2;
            f.set((w * ROWS + r) * D + d, o[i]);
        }
    });
    sync_threads();
    let pbase = (y * splits + split) * ROWS;
    let mut e = t;
    while e < ROWS * D {
        let (r, d) = (e / D, e % D);
        let mut big = f32::NEG_INFINITY;
        for v in 0..DEC_WARPS {
            big = big.max(f.get(mo + v * ROWS + r));
        }
        let (val, lse) = if big == f32::NEG_INFINITY {
            (0.0, f32::NEG_INFINITY)
        } else {
            let (mut num, mut den) = (0f32, 0f32);
            for v in 0..DEC_WARPS {
                let wt = fast::exp2(f.get(mo + v * ROWS + r) - big);
                num += wt * f.get((v * ROWS + r) * D + d);
                den += wt * f.get(lo + v * ROWS + r);
            }
            (num * fast::recip(den), big + log2_approx(den))
        };
        part_o.set((pbase + r) * D + d, val);
        if d == 0 {
            part_lse.set(pbase + r, lse);
        }
        e += DEC_THREADS as usize;
    }
}

/// The reduction of [`attn_decode`]'s splits into the output: one warp per
/// query row, which reads the row's base-2 log-sum-exp of every split of
/// its sequence, takes their maximum `M` and `sum_s 2^(lse_s - M)` (lanes
/// strided over the splits, then butterflies), then accumulates
/// `2^(lse_s - M) o_s` over the splits (lane `l` owns dims `2 (l + 32 i)`
/// and the next, read as 8-byte pairs), and writes the BF16 row of `out`
/// (4-byte pairs) and the natural-log `lse`.
///
/// Thread mapping: grid `(B H_kv groups, rows_per_block)`, one warp; a
/// block whose row is past its head's rows returns at once. No shared
/// memory.
#[kernel(launch_bounds(32), instances(<64>, <128>, <256>))]
pub fn attn_decode_combine<const D: usize>(
    part_o: DeviceSlice<f32>,
    part_lse: DeviceSlice<f32>,
    kv_lens: DeviceSlice<i32>,
    out: DeviceSliceMut<u16>,
    lse: DeviceSliceMut<f32>,
    p: Decode,
) {
    let (batch, kv_heads) = (p.batch as usize, p.kv_heads as usize);
    let rpb = p.rows_per_block as usize;
    let splits = p.splits as usize;
    let heads = p.heads as usize;
    if p.kv_heads == 0
        || !p.heads.is_multiple_of(p.kv_heads.max(1))
        || rpb == 0
        || p.groups as usize != p.rows().div_ceil(rpb.max(1))
        || thread::grid_dim_x() as usize != batch * kv_heads * p.groups as usize
        || thread::grid_dim_y() as usize != rpb
        || p.chunk == 0
    {
        ptxlab_device::trap("attn_decode_combine: the launch does not match its parameters");
    }
    let rows_out = batch * p.q_len as usize * heads;
    if part_o.len() < p.part_len(D)
        || part_lse.len() < p.part_rows()
        || kv_lens.len() < batch
        || out.len() < rows_out * D
        || lse.len() < rows_out
    {
        ptxlab_device::trap("attn_decode_combine: a buffer is shorter than its shape");
    }
    let y = thread::block_idx_x() as usize;
    let r = thread::block_idx_y() as usize;
    let (b, kvh, grp) = block_coords(&p, y);
    let Some(orow) = q_row(&p, b, kvh, grp * rpb + r, D) else {
        return;
    };
    let kv_len = seq_len(&p, kv_lens, b);
    let ns = kv_len.div_ceil(p.chunk.max(1) as usize);
    if ns > splits {
        ptxlab_device::trap("attn_decode_combine: a sequence has more splits than the grid");
    }
    let lane = thread::thread_idx_x() as usize;
    let at = |s: usize| (y * splits + s) * rpb + r;
    let mut big = f32::NEG_INFINITY;
    let mut s = lane;
    while s < ns {
        big = big.max(part_lse.get(at(s)));
        s += 32;
    }
    let big = warp::reduce_max(big);
    let mut den = 0f32;
    let mut s = lane;
    while s < ns {
        den += fast::exp2(part_lse.get(at(s)) - big);
        s += 32;
    }
    let den = warp::reduce_sum(den);
    let mut acc = [0f32; 8];
    for s in 0..ns {
        let wt = fast::exp2(part_lse.get(at(s)) - big);
        unroll!(i in [0, 1, 2, 3] {
            if i < D / 64 {
                // SAFETY: the pair `2 (lane + 32 i)`, `+ 1` is inside row
                // `at(s)` of `part_o` (`D` values, length checked above);
                // 8-byte aligned (`D` even, the pair's index even).
                let v: F32x2 = unsafe {
                    part_o.get_vec_unchecked::<F32x2>((at(s) * D + 2 * (lane + 32 * i)) / 2)
                };
                acc[2 * i] += wt * v.0[0];
                acc[2 * i + 1] += wt * v.0[1];
            }
        });
    }
    let inv = fast::recip(den);
    unroll!(i in [0, 1, 2, 3] {
        if i < D / 64 {
            let c = 2 * (lane + 32 * i);
            let word = pack_rn::<Bf16>(acc[2 * i] * inv, acc[2 * i + 1] * inv);
            // SAFETY: `c + 1 < D`: inside row `orow` of `out` (length
            // checked above); 4-byte aligned (`D` and `c` even).
            unsafe { out.set_vec_unchecked::<u32>((orow + c) / 2, word) };
        }
    });
    if lane == 0 {
        lse.set(orow / D, (big + log2_approx(den)) * LN_2);
    }
}
