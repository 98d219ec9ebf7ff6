//! Rungs 3 to 5 (sm_90a): `wgmma`, TMA, mbarriers, warp specialisation.
//!
//! Common to the three kernels:
//!
//! * A block owns 128 query rows of one head (grid `(ceil(Sq / 128),
//!   heads)`: the query tiles of a head run side by side, so its `K` and
//!   `V` are read from memory about once and from L2 by the rest). Two
//!   warpgroups of 128 threads compute, 64 rows each; warp `w` of a
//!   warpgroup owns 16 of them, in the accumulator layout of the module
//!   docs of [`attention`](super).
//! * Grouped `K`/`V` heads: with `group` query heads per `K`/`V` head
//!   ([`AttnShape::group`]; 1 without grouping), the block of flat
//!   query head `head` reads `K`/`V` head `head / group` (the heads of a
//!   batch element are consecutive and `group` divides their number), so
//!   the `K` and `V` tensor maps have `heads / group x Skv` rows.
//! * `Q`, `K` and `V` arrive by TMA (`cp.async.bulk.tensor`), as boxes of
//!   128 rows x 64 columns (128 bytes a row, the 128-byte swizzle that
//!   `wgmma` reads without bank conflicts): one box per 64 columns of the
//!   head dimension. The tensor maps view each of `Q`, `K`, `V` as one
//!   matrix of `heads x S` rows and `D` columns, so a tile that runs past
//!   a head's last row reads the next head's first rows (or zeros past
//!   the matrix): those keys are masked, those query rows are never
//!   stored.
//! * Per key tile of 128: `S = Q K^T` is `D / 16` `wgmma.m64n128k16` per
//!   warpgroup, both operands in shared memory (`K` K-major: each key's
//!   `D` values contiguous). The online softmax runs on the 64 scores a
//!   thread holds, and `O += P V` is 8 `wgmma.m64nDk16` with `A` (the
//!   probabilities) in registers, packed straight from the scores
//!   ([`p_frag`]), and `V` MN-major in shared memory.
//!
//! Shared-memory layout: from the first 1024-byte boundary, the `Q` tile
//! (128 x `D`), then per stage a `K` tile and a `V` tile (128 x `D` each);
//! a tile is `D / 64` panels of 128 rows x 128 bytes. Then the mbarriers
//! (`Bar`).

pub use super::pipe::HP_BM;
use super::pipe::{BAR_SLOTS, Bar, fence_first, init_barriers, needs_mask};
use super::ws::{Consumed, Tiles, Work, WsTile, consume, produce, query_tile};
use super::{
    AttnShape, Lse, RowSlab, Rows, finish, mask_scores, online_softmax, p_frag, rescale, store_lse,
    store_rows,
};
use ptxlab_device::hopper::{Mbarrier, Swizzle, setmaxnreg_dec, setmaxnreg_inc, tma_load_2d};
use ptxlab_device::mem::U32x4;
use ptxlab_device::mma::{Bf16, F16, Half16, shared_addr};
use ptxlab_device::prelude::*;
use ptxlab_device::unroll;
use ptxlab_device::wgmma::{
    SmemDesc, fence_operands, wgmma_commit_group, wgmma_fence, wgmma_m64n128k16, wgmma_wait_group,
};

/// Keys per tile.
pub const HP_BN: usize = 128;
/// Columns of one TMA box (128 bytes of 16-bit values: one swizzle span).
pub const HP_BOX_COLS: usize = 64;
/// Threads of rung 3: two warpgroups that both compute.
pub const WGMMA_THREADS: u32 = 256;
/// Threads of rungs 4 and 5: a producer warpgroup and two consumers.
pub const WS_THREADS: u32 = 384;

/// Keys per tile for head dimension `d`: [`HP_BN`] up to `d = 128`, 80
/// at `d = 256` (rungs 4 and 5 at `D = 256`: [`super::wide`]).
pub const fn hp_bn(d: usize) -> usize {
    if d <= 128 { HP_BN } else { 80 }
}

/// Key/value stages for head dimension `d`: two at `d = 128` (160 KiB of
/// tiles) and `d = 256` (192 KiB with the `Q` tile), three at `d = 64`.
pub const fn hp_stages(d: usize) -> usize {
    if d <= 64 { 3 } else { 2 }
}

/// Bytes of a tile of `rows` rows of `d` 16-bit values.
const fn tile_bytes(rows: usize, d: usize) -> usize {
    rows * d * 2
}

/// Dynamic shared memory of rungs 3 to 5 for head dimension `d` (64 or
/// 128; `D = 256`: [`super::wide::wide_shared_bytes`]): 1024
/// bytes of alignment slack, the `Q` tile, the stages, the barriers.
pub const fn hopper_shared_bytes(d: usize) -> usize {
    1024 + tile_bytes(HP_BM, d) + hp_stages(d) * 2 * tile_bytes(HP_BN, d) + 8 * BAR_SLOTS
}

/// The block's tile area (shared address, 1024-aligned) and its barriers.
#[inline(always)]
fn layout(d: usize) -> (u32, Bar) {
    let all = shared::dynamic_shared::<U32x4>(0, hopper_shared_bytes(d) / 16);
    let raw = shared_addr(all.as_mut_ptr());
    let pad = ((1024 - raw % 1024) % 1024) as usize;
    let tiles = tile_bytes(HP_BM, d) + hp_stages(d) * 2 * tile_bytes(HP_BN, d);
    let bars = shared::dynamic_shared::<u64>(pad + tiles, BAR_SLOTS);
    (raw + pad as u32, Bar(bars))
}

/// [`layout`] of the kernels of `ws.rs`: `tiles` bytes of tiles (the
/// dynamic shared memory being 1024 bytes of slack, the tiles and the
/// barriers).
#[inline(always)]
pub(super) fn layout_tiles(tiles: usize) -> (u32, Bar) {
    let all = shared::dynamic_shared::<U32x4>(0, (1024 + tiles + 8 * BAR_SLOTS) / 16);
    let raw = shared_addr(all.as_mut_ptr());
    let pad = ((1024 - raw % 1024) % 1024) as usize;
    let bars = shared::dynamic_shared::<u64>(pad + tiles, BAR_SLOTS);
    (raw + pad as u32, Bar(bars))
}

/// Shared address of stage `s`'s `K` tile (its `V` tile follows).
#[inline(always)]
fn k_at(base: u32, d: usize, s: usize) -> u32 {
    base + (tile_bytes(HP_BM, d) + s * 2 * tile_bytes(HP_BN, d)) as u32
}

/// Shared address of stage `s`'s `V` tile.
#[inline(always)]
fn v_at(base: u32, d: usize, s: usize) -> u32 {
    k_at(base, d, s) + tile_bytes(HP_BN, d) as u32
}

/// Starts the TMA copies of the `rows` rows (the map's box height) from
/// `row` of the matrix behind `map` (`d` columns, one box per 64) into the
/// tile at `dst`, completing on `bar`.
#[inline(always)]
pub(super) fn load_tile(
    dst: u32,
    map: DeviceSlice<u64>,
    row: usize,
    rows: usize,
    d: usize,
    bar: Mbarrier,
) {
    unroll!(p in [0, 1, 2, 3] {
        if p < d / HP_BOX_COLS {
            tma_load_2d(dst + (p * rows * 128) as u32, map, (p * HP_BOX_COLS) as i32, row as i32, bar);
        }
    });
}

/// `A` descriptor of key-step `kk` (16 of `D`) for warpgroup `wg`'s 64
/// rows of the `Q` tile at `q`: K-major, 8-row groups 1024 bytes apart,
/// the step 32 bytes into its panel's 128-byte rows.
#[inline(always)]
pub(super) fn q_desc(q: u32, wg: usize, kk: usize) -> SmemDesc {
    let at = q + ((kk / 4) * HP_BM * 128 + wg * 64 * 128) as u32;
    SmemDesc::new(at, 16, 1024, Swizzle::B128).offset(32 * (kk % 4) as u32)
}

/// `B` descriptor of key-step `kk` for the `K` tile of `bn` keys at `k`
/// (`S = Q K^T`: `B[d][key] = K[key][d]`, K-major, like [`q_desc`]).
#[inline(always)]
pub(super) fn k_desc(k: u32, kk: usize, bn: usize) -> SmemDesc {
    let at = k + ((kk / 4) * bn * 128) as u32;
    SmemDesc::new(at, 16, 1024, Swizzle::B128).offset(32 * (kk % 4) as u32)
}

/// `B` descriptor of key-step `kk` (keys `16 kk..`) for the `V` tile of
/// `bn` keys at `v` (`O += P V`: `B[key][d] = V[key][d]`, MN-major): 64
/// columns per panel, panels `bn x 128` bytes apart (the leading offset),
/// 8 keys 1024 bytes apart (the stride).
#[inline(always)]
pub(super) fn v_desc(v: u32, kk: usize, bn: usize) -> SmemDesc {
    SmemDesc::new(
        v + (kk * 16 * 128) as u32,
        (bn * 128) as u32,
        1024,
        Swizzle::B128,
    )
}

/// `S = Q K^T` for a warpgroup: `D / 16` `wgmma.m64n128k16`, issued, not
/// waited for.
#[inline(always)]
fn issue_s<H: Half16, const D: usize>(s: &mut [f32; 64], q: u32, wg: usize, k: u32) {
    unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7] {
        if kk < D / 16 {
            wgmma_m64n128k16::<H, false>(s, q_desc(q, wg, kk), k_desc(k, kk, HP_BN), kk != 0);
        }
    });
}

/// `O += P V` for a warpgroup: 8 `wgmma.m64nDk16` with `P` from the
/// registers of `p` (the packed probabilities), issued, not waited for.
#[inline(always)]
fn issue_pv<H: Half16, const D: usize>(o: &mut [f32; 64], p: &[[u32; 4]; 8], v: u32) {
    unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7] {
        wgmma_pv::<H, D>(o, p[kk], v_desc(v, kk, HP_BN));
    });
}

/// The probabilities of a tile (64 per thread) as the `A` fragments of
/// the 8 key-steps of `O += P V`.
#[inline(always)]
fn pack_p<H: Half16>(s: &[f32; 64]) -> [[u32; 4]; 8] {
    let mut p = [[0u32; 4]; 8];
    unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7] {
        p[kk] = p_frag::<H, 64>(s, kk);
    });
    p
}

/// Rung 4's tile at `D = 64` and `128`: 128 keys, 64 scores a thread and
/// the first `D / 2` of 64 output accumulators.
struct Tile128<H, const D: usize>(core::marker::PhantomData<H>);

impl<H: Half16, const D: usize> WsTile<64, 64> for Tile128<H, D> {
    const BN: usize = HP_BN;
    const O_USED: usize = D / 2;
    type P = [[u32; 4]; 8];

    #[inline(always)]
    fn issue_s(s: &mut [f32; 64], q: u32, wg: usize, k: u32) {
        issue_s::<H, D>(s, q, wg, k);
    }

    #[inline(always)]
    fn issue_pv(o: &mut [f32; 64], p: &[[u32; 4]; 8], v: u32) {
        issue_pv::<H, D>(o, p, v);
    }

    #[inline(always)]
    fn pack(s: &[f32; 64]) -> [[u32; 4]; 8] {
        pack_p::<H>(s)
    }
}

#[cfg(target_arch = "nvptx64")]
macro_rules! regs {
    ($f:literal $(, $r:literal)*) => {
        concat!("{", stringify!($f), "}" $(, ", {", stringify!($r), "}")*)
    };
}

#[cfg(target_arch = "nvptx64")]
macro_rules! wgmma_rs_asm {
    ($shape:literal, $ty:literal, $d:ident, $a:expr, $b:expr, [$($i:literal),+]) => {
        // SAFETY: the warpgroup-wide instruction reads `A` from the four
        // registers, the `B` tile the descriptor names, and writes the
        // accumulators; the kernel's contract (the whole warpgroup executes
        // it, converged, the tile landed and fenced) is the caller's.
        unsafe {
            core::arch::asm!(
                "{{",
                ".reg .pred p;",
                "setp.ne.b32 p, {sc}, 0;",
                concat!(
                    "wgmma.mma_async.sync.aligned.", $shape, ".f32.", $ty, ".", $ty, " {{",
                    regs!($($i),+), "}}, {{{a0}, {a1}, {a2}, {a3}}}, {db}, p, 1, 1, 1;"
                ),
                "}}",
                $(inout(reg32) $d[$i],)+
                a0 = in(reg32) $a[0],
                a1 = in(reg32) $a[1],
                a2 = in(reg32) $a[2],
                a3 = in(reg32) $a[3],
                db = in(reg64) $b.0,
                sc = in(reg32) 1u32,
                options(nostack),
            )
        }
    };
}

/// `D += A B` on 64 x 128 x 16: `A` from registers (each warp's 16 rows
/// in the `mma.m16n8k16` `A` layout), `B` MN-major in shared memory
/// (`wgmma.mma_async` with `imm-trans-b = 1`).
#[inline(always)]
#[track_caller]
fn wgmma_rs_n128<H: Half16>(d: &mut [f32; 64], a: [u32; 4], b: SmemDesc) {
    #[cfg(target_arch = "nvptx64")]
    {
        macro_rules! go {
            ($ty:literal) => {
                wgmma_rs_asm!(
                    "m64n128k16",
                    $ty,
                    d,
                    a,
                    b,
                    [
                        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
                        21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39,
                        40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58,
                        59, 60, 61, 62, 63
                    ]
                )
            };
        }
        if H::IS_BF16 { go!("bf16") } else { go!("f16") }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    sim::rs::<H, 64>(d, a, b);
}

/// [`wgmma_rs_n128`] with `N = 64`.
#[inline(always)]
#[track_caller]
fn wgmma_rs_n64<H: Half16>(d: &mut [f32; 32], a: [u32; 4], b: SmemDesc) {
    #[cfg(target_arch = "nvptx64")]
    {
        macro_rules! go {
            ($ty:literal) => {
                wgmma_rs_asm!(
                    "m64n64k16",
                    $ty,
                    d,
                    a,
                    b,
                    [
                        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
                        21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
                    ]
                )
            };
        }
        if H::IS_BF16 { go!("bf16") } else { go!("f16") }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    sim::rs::<H, 32>(d, a, b);
}

/// [`wgmma_rs_n128`] with `N = 256` (rungs 4 and 5 at `D = 256`).
#[inline(always)]
#[track_caller]
pub(super) fn wgmma_rs_n256<H: Half16>(d: &mut [f32; 128], a: [u32; 4], b: SmemDesc) {
    #[cfg(target_arch = "nvptx64")]
    {
        macro_rules! go {
            ($ty:literal) => {
                wgmma_rs_asm!(
                    "m64n256k16",
                    $ty,
                    d,
                    a,
                    b,
                    [
                        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
                        21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39,
                        40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58,
                        59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77,
                        78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96,
                        97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111,
                        112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126,
                        127
                    ]
                )
            };
        }
        if H::IS_BF16 { go!("bf16") } else { go!("f16") }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    sim::rs::<H, 128>(d, a, b);
}

/// One key-step of `O += P V` into the first `D / 2` accumulators.
#[inline(always)]
#[track_caller]
pub(super) fn wgmma_pv<H: Half16, const D: usize>(o: &mut [f32; 64], a: [u32; 4], b: SmemDesc) {
    if D == 128 {
        wgmma_rs_n128::<H>(o, a, b);
    } else {
        // SAFETY: the first 32 of 64 contiguous f32: a valid, exclusive
        // borrow of part of `o` for the call.
        let lo = unsafe { &mut *(o.as_mut_ptr() as *mut [f32; 32]) };
        wgmma_rs_n64::<H>(lo, a, b);
    }
}

/// The simulator's `wgmma` with `A` in registers: each thread gathers its
/// two rows of `A` from the four lanes of its quad (a warp exchange) and
/// reads `B` through the descriptor (raw shared-memory reads, the
/// asynchronous proxy's), accumulating in f64 and rounding once, as the
/// device layer's `wgmma` model does.
#[cfg(not(target_arch = "nvptx64"))]
mod sim {
    use ptxlab_device::mma::Half16;
    use ptxlab_device::sim::{shared_base, warp_exchange};
    use ptxlab_device::warp::FULL_MASK;
    use ptxlab_device::wgmma::{SmemDesc, acc_coord};

    #[track_caller]
    pub(super) fn rs<H: Half16, const R: usize>(d: &mut [f32; R], a: [u32; 4], b: SmemDesc) {
        let t = ptxlab_device::thread::thread_rank() % 128;
        let gid = ((t % 32) / 4) as usize;
        let (lo, _) = warp_exchange(FULL_MASK, a[0] as u64 | (a[1] as u64) << 32);
        let (hi, _) = warp_exchange(FULL_MASK, a[2] as u64 | (a[3] as u64) << 32);
        // A[h][k]: row gid + 8 h, column k, held by lane 4 gid + (k % 8) / 2
        // in register 2 (k / 8) + h, half k % 2.
        let mut av = [[0f64; 16]; 2];
        for (h, row) in av.iter_mut().enumerate() {
            for (k, x) in row.iter_mut().enumerate() {
                let lane = 4 * gid + (k % 8) / 2;
                let word = if k < 8 { lo[lane] } else { hi[lane] };
                let reg = (word >> (32 * h)) as u32;
                *x = H::to_f32((reg >> (16 * (k % 2))) as u16) as f64;
            }
        }
        let mut at = [[0usize; 16]; R];
        let mut end = 0;
        for (i, col) in at.iter_mut().enumerate() {
            let c = acc_coord(t, i).1 as u32;
            for (k, x) in col.iter_mut().enumerate() {
                *x = b
                    .swizzle()
                    .apply(b.start() + b.mn_major_offset(c, k as u32, 2))
                    as usize;
                end = end.max(*x + 2);
            }
        }
        let base = shared_base(end, 0, 1);
        for (i, acc) in d.iter_mut().enumerate() {
            let h = (i / 2) % 2;
            let mut s = *acc as f64;
            for k in 0..16 {
                // SAFETY: `shared_base` checked that every address is inside
                // the block's shared memory; they are even, so aligned.
                let bits =
                    unsafe { ptxlab_device::sim::mem::read(base.add(at[i][k]) as *const u16) };
                s += av[h][k] * H::to_f32(bits) as f64;
            }
            *acc = s as f32;
        }
    }
}

/// The first row of the block's `K`/`V` head in the `K` and `V` tensor
/// maps (`skv` rows a head), for `group` query heads per `K`/`V` head;
/// traps unless `group` divides the heads.
#[inline(always)]
pub(super) fn kv_row(head: usize, heads: usize, group: u32, skv: usize) -> usize {
    let group = group as usize;
    if group == 0 || !heads.is_multiple_of(group) {
        ptxlab_device::trap("attention: the group does not divide the heads");
    }
    (head / group) * skv
}

/// Traps unless `out` (and `lse`, when wanted) hold `heads x sq` rows.
#[inline(always)]
pub(super) fn check_out(
    out: &DeviceSliceMut<u16>,
    lse: &DeviceSliceMut<f32>,
    heads: usize,
    sq: usize,
    d: usize,
    want_lse: u32,
) {
    if out.len() < heads * sq * d || (want_lse != 0 && lse.len() < heads * sq) {
        ptxlab_device::trap("attention: O or lse is shorter than its shape");
    }
}

/// Rung 3: `wgmma` with `Q`, `K`, `V` through TMA and an mbarrier
/// pipeline.
///
/// Thread mapping: 256 threads, warpgroup `wg` (0, 1) computes query rows
/// `64 wg..` of the block's 128 (module docs); thread 0 also issues every
/// copy. Stages: [`hp_stages`] pairs of `K` and `V` tiles; `full[s]`
/// (one arrival with the stage's byte count) completes when both landed,
/// `empty[s]` when all 256 threads have finished the `wgmma` that read
/// them, after which thread 0 refills the stage with tile `j + stages`.
///
/// Per tile each warpgroup waits for the stage, issues `S = Q K^T`, waits
/// for it, runs the softmax, issues `O += P V`, waits for it and releases
/// the stage.
///
/// Why it is faster than rung 2: `wgmma` runs at about three times the
/// rate of `mma.sync` on Hopper and reads its operands from shared memory
/// itself (no `ldmatrix`, no fragments in registers except `P`), TMA moves
/// whole tiles without a thread computing an address, and `P` never
/// leaves the registers. What it leaves on the table: the tensor core
/// idles while a warpgroup runs its softmax (each `wgmma` batch is waited
/// for at once), and thread 0's warpgroup stalls whenever it refills a
/// stage. Rung 4 removes both.
#[kernel(launch_bounds(256, 1), instances(<Bf16, 128>, <F16, 128>, <Bf16, 64>, <F16, 64>))]
pub fn attn_wgmma<H: Half16, const D: usize>(
    q_map: DeviceSlice<u64>,
    k_map: DeviceSlice<u64>,
    v_map: DeviceSlice<u64>,
    out: DeviceSliceMut<u16>,
    lse: DeviceSliceMut<f32>,
    shape: AttnShape,
    lse_out: Lse,
) {
    let want_lse = lse_out as u32;
    let (sq, skv, causal) = (shape.sq as usize, shape.skv as usize, shape.causal());
    let (scale_log2, group) = (shape.scale_log2, shape.group);
    let heads = thread::grid_dim_y() as usize;
    check_out(&out, &lse, heads, sq, D, want_lse);
    let stages = hp_stages(D);
    let (base, bars) = layout(D);
    init_barriers(bars, stages, [q_map, k_map, v_map]);
    let t = thread::thread_idx_x() as usize;
    let wg = warp::shfl_idx(FULL_MASK, (t / 128) as u32, 0) as usize;
    let lane = t % 32;
    let (gid, tig) = (lane / 4, lane % 4);
    let head = thread::block_idx_y() as usize;
    let kv0 = kv_row(head, heads, group, skv);
    let q0 = thread::block_idx_x() as usize * HP_BM;
    let row0 = q0 + 64 * wg + 16 * ((t % 128) / 32) + gid;
    let ntiles = skv.div_ceil(HP_BN);
    let kv_bytes = 2 * tile_bytes(HP_BN, D) as u32;
    let full = |s: usize| bars.k_full(s);
    let empty = |s: usize| bars.k_empty(s);
    let load_kv = |s: usize, j: usize| {
        full(s).arrive_expect_tx(kv_bytes);
        load_tile(k_at(base, D, s), k_map, kv0 + j * HP_BN, HP_BN, D, full(s));
        load_tile(v_at(base, D, s), v_map, kv0 + j * HP_BN, HP_BN, D, full(s));
    };
    if t == 0 {
        bars.q_full().arrive_expect_tx(tile_bytes(HP_BM, D) as u32);
        load_tile(base, q_map, head * sq + q0, HP_BM, D, bars.q_full());
        for s in 0..stages.min(ntiles) {
            load_kv(s, s);
        }
    }
    bars.q_full().wait(0);
    let mut o = [0f32; 64];
    let mut rows = Rows::new();
    for j in 0..ntiles {
        let (s, phase) = (j % stages, ((j / stages) & 1) as u32);
        full(s).wait(phase);
        let mut sc = [0f32; 64];
        wgmma_fence();
        issue_s::<H, D>(&mut sc, base, wg, k_at(base, D, s));
        wgmma_commit_group();
        wgmma_wait_group::<0>();
        fence_operands(&mut sc);
        if needs_mask(j, HP_BN, skv, causal, q0 + 64 * wg) {
            mask_scores(&mut sc, tig, j * HP_BN, row0, skv, causal, 0);
        }
        let alpha = online_softmax(&mut sc, &mut rows, scale_log2);
        rescale(&mut o, D / 2, alpha);
        let p = pack_p::<H>(&sc);
        wgmma_fence();
        issue_pv::<H, D>(&mut o, &p, v_at(base, D, s));
        wgmma_commit_group();
        wgmma_wait_group::<0>();
        fence_first(&mut o, D / 2);
        empty(s).arrive();
        if t == 0 && j + stages < ntiles {
            empty(s).wait(phase);
            load_kv(s, j + stages);
        }
    }
    let l = finish(&mut o, D / 2, &rows);
    store_rows::<H, 64>(out, &o, D / 2, tig, RowSlab::new(head * sq, row0, sq, D));
    if want_lse != 0 {
        store_lse(lse, l, tig, head * sq, row0, sq);
    }
}

/// Rungs 4 and 5: warp specialisation, two consumer warpgroups taking
/// turns at the tensor core, and the softmax of one tile overlapped with
/// the `wgmma` of the next. With `SKIP` (rung 5, causal only) the block
/// never visits a tile whose keys all lie after its last query row, and
/// the query tiles of a head run from the last (the most keys) to the
/// first.
///
/// Thread mapping: 384 threads. Warpgroup 0 is the producer: it gives
/// back registers (`setmaxnreg.dec 40`) and one thread issues every copy:
/// `Q` once, then per tile `j` the `K` tile (on `k_full[s]`) and the `V`
/// tile (on `v_full[s]`), each after the consumers released the stage's
/// previous one (`k_empty[s]`, `v_empty[s]`, 256 arrivals). Warpgroups 1
/// and 2 are the consumers (`setmaxnreg.inc 232`), rows `0..64` and
/// `64..128` of the block's 128.
///
/// A consumer's loop, tile `j`:
/// 1. wait for its turn (a named barrier the other consumer signals);
/// 2. issue `S_j = Q K_j^T`; scale `O` by the last tile's `alpha` (while
///    the tensor core works); issue `O += P_{j-1} V_{j-1}` (`P` in
///    registers); signal the other consumer's turn;
/// 3. wait for `S_j` (`wait_group 1`: the `P V` product may still run),
///    release `K_j`, run the online softmax of `S_j`;
/// 4. wait for `P V` (`wait_group 0`), release `V_{j-1}`, pack `P_j`.
///
/// So the exponentials of tile `j` run while the tensor core computes
/// `P_{j-1} V_{j-1}` of the same warpgroup and both products of the other
/// warpgroup, which the turns keep out of step by half a tile.
///
/// Why it is faster than rung 3: no computing thread ever issues a copy
/// or waits for one to be issued; `K` and `V` have their own barriers, so
/// `S_j` starts as soon as `K_j` lands; the tensor core always has the
/// other warpgroup's or the next product queued while a softmax runs
/// (rung 3 waited for every product before its softmax, and the softmax
/// before the next product).
///
/// Rung 5 over rung 4 (causal): about half the tiles are never loaded nor
/// multiplied, masks are applied only to the tiles on the diagonal, and
/// the heaviest query tiles start first so the last wave is short.
#[kernel(launch_bounds(384, 1), instances(<Bf16, 128, false>, <F16, 128, false>, <Bf16, 64, false>, <F16, 64, false>, <Bf16, 128, true>, <F16, 128, true>, <Bf16, 64, true>, <F16, 64, true>))]
pub fn attn_ws<H: Half16, const D: usize, const SKIP: bool>(
    q_map: DeviceSlice<u64>,
    k_map: DeviceSlice<u64>,
    v_map: DeviceSlice<u64>,
    out: DeviceSliceMut<u16>,
    lse: DeviceSliceMut<f32>,
    shape: AttnShape,
    lse_out: Lse,
) {
    let want_lse = lse_out as u32;
    let (sq, skv, causal) = (shape.sq as usize, shape.skv as usize, shape.causal());
    let (scale_log2, group) = (shape.scale_log2, shape.group);
    let heads = thread::grid_dim_y() as usize;
    check_out(&out, &lse, heads, sq, D, want_lse);
    let stages = hp_stages(D);
    let (base, bars) = layout(D);
    init_barriers(bars, stages, [q_map, k_map, v_map]);
    let t = thread::thread_idx_x() as usize;
    let head = thread::block_idx_y() as usize;
    let kv0 = kv_row(head, heads, group, skv);
    let (q0, n) = query_tile::<SKIP>(HP_BN, skv, causal);
    let tiles = Tiles {
        base,
        q_bytes: tile_bytes(HP_BM, D) as u32,
        kv_bytes: tile_bytes(HP_BN, D) as u32,
        stages,
    };
    // The warpgroup index through a shuffle, uniform per warp (see the
    // tensor ladder's rung 5), so each role's branch is known uniform.
    let role = warp::shfl_idx(FULL_MASK, (t / 128) as u32, 0);
    if role == 0 {
        setmaxnreg_dec::<40>();
        if t == 0 {
            produce(
                bars,
                tiles,
                n,
                |bar| load_tile(base, q_map, head * sq + q0, HP_BM, D, bar),
                |dst, j, bar| load_tile(dst, k_map, kv0 + j * HP_BN, HP_BN, D, bar),
                |dst, j, bar| load_tile(dst, v_map, kv0 + j * HP_BN, HP_BN, D, bar),
            );
        }
    } else {
        setmaxnreg_inc::<232>();
        let work = Work {
            wg: role as usize - 1,
            q0,
            n,
            skv,
            causal,
            scale_log2,
        };
        let Consumed {
            mut o,
            rows,
            row0,
            tig,
        } = consume::<Tile128<H, D>, 64, 64>(bars, tiles, work, t);
        let l = finish(&mut o, D / 2, &rows);
        store_rows::<H, 64>(out, &o, D / 2, tig, RowSlab::new(head * sq, row0, sq, D));
        if want_lse != 0 {
            store_lse(lse, l, tig, head * sq, row0, sq);
        }
    }
}
