//! The FP8 forward pass (sm_90a): rungs 4 and 5 with E4M3 `Q`, `K` and
//! `V`, [`attn_ws_fp8`], and the transpose it needs, [`attn_fp8_vt`].
//!
//! # What is computed
//! `Q`, `K` and `V` are E4M3 codes with one scale each (a value is its
//! code's value times the tensor's scale: per-tensor scaling). Scores are
//! `scale s_q s_k (Q K^T)` in f32 (the two scales fold into the softmax's
//! multiplier), the online softmax runs in f32 as in the 16-bit rungs, the
//! probabilities are rounded to E4M3 for `O += P V`, and `O` is scaled by
//! `s_v / l` and written as BF16 (with the log-sum-exp in f32).
//!
//! # Why `V` is transposed first
//! FP8 `wgmma` reads both shared-memory operands K-major only (the
//! transpose bits exist for 16-bit types alone). `S = Q K^T` is K-major as
//! it stands (each query's and each key's `D` values are contiguous); `O
//! += P V` sums over keys, so its `B` operand must have each column of `V`
//! (one `d`) with its keys contiguous: `V^T`. [`attn_fp8_vt`] writes `V^T`
//! per `K`/`V` head (`D` rows of `ld` keys, `ld` the key count rounded up
//! to 16) before the attention kernel runs, and the timing includes it.
//!
//! # Why the keys of `V^T` are permuted
//! With `A` (the probabilities) in registers, an FP8 `wgmma` expects each
//! thread to hold 4 consecutive `k` of a row in one register (`k = 4 tig
//! ..`, and `16 + 4 tig ..` in the next), but the scores arrive in the
//! accumulator layout: keys `2 tig, 2 tig + 1` and `8 + 2 tig, 9 + 2 tig`
//! of each 16. Rather than shuffling bytes between lanes, the kernel
//! packs the four keys it holds as if they were `k = 4 tig .. 4 tig + 3`,
//! and [`attn_fp8_vt`] stores `V^T`'s keys in the same order: within each
//! group of 16 keys, position `4 t + r` holds key `[2 t, 2 t + 1, 8 + 2 t,
//! 9 + 2 t][r]` ([`vt_position`]). A sum over keys does not care about
//! their order, only that `P` and `V` agree on it.
//!
//! # Tiles
//! 128 query rows a block (two consumer warpgroups of 64), 128 keys a
//! tile, `D = 128`: every tile (`Q`, `K`, `V^T`) is 128 rows of 128 bytes,
//! 16 KiB, one 128-byte-swizzled panel, so [`FP8_STAGES`] stages fit with
//! room to spare. Per tile and warpgroup: `S` is 4 `wgmma.m64n128k32`
//! (both operands in shared memory), `O += P V` 4 `wgmma.m64n128k32` with
//! `P` from registers.

use super::hopper::{check_out, k_desc, kv_row, layout_tiles, q_desc};
use super::pipe::{BAR_SLOTS, init_barriers};
use super::ws::{Consumed, Tiles, Work, WsTile, consume, produce, query_tile};
use super::{AttnShape, Lse, RowSlab, finish, rescale, store_lse, store_rows};
use ptxlab_device::fp8::{E4m3, Fp8};
use ptxlab_device::hopper::{setmaxnreg_dec, setmaxnreg_inc, tma_load_2d};
use ptxlab_device::mma::Bf16;
use ptxlab_device::prelude::*;
use ptxlab_device::unroll;
use ptxlab_device::wgmma::{SmemDesc, wgmma_m64n128k32};

/// The head dimension of the FP8 kernel.
pub const FP8_D: usize = 128;
/// Keys per tile.
const BN: usize = 128;
/// Bytes of a `Q`, `K` or `V^T` tile (128 rows of 128 one-byte codes).
const TILE: usize = 128 * 128;
/// Key/value stages.
pub const FP8_STAGES: usize = 4;
/// Keys of a `V^T` row are padded to a multiple of this (TMA's 16-byte
/// row pitch; the permutation's group).
pub const VT_ALIGN: usize = 16;
/// Threads of [`attn_fp8_vt`]: 64 keys x 128 `d` a block.
pub const VT_THREADS: u32 = 256;
/// Keys a block of [`attn_fp8_vt`] transposes.
pub const VT_KEYS: usize = 64;

/// Dynamic shared memory of [`attn_ws_fp8`]: alignment slack, the `Q`
/// tile, the stages, the barriers.
pub const fn fp8_shared_bytes() -> usize {
    1024 + TILE + FP8_STAGES * 2 * TILE + 8 * BAR_SLOTS
}

/// Dynamic shared memory of [`attn_fp8_vt`]: a 64-key x 128-byte tile.
pub const fn vt_shared_bytes() -> usize {
    VT_KEYS * FP8_D
}

/// The position within its group of 16 at which `V^T` stores key `p`
/// (0..16) of the group (module docs): keys `2 t, 2 t + 1` go to `4 t, 4 t
/// + 1`, keys `8 + 2 t, 9 + 2 t` to `4 t + 2, 4 t + 3`.
pub const fn vt_position(p: usize) -> usize {
    let (t, r) = if p < 8 {
        (p / 2, p % 2)
    } else {
        ((p - 8) / 2, 2 + p % 2)
    };
    4 * t + r
}

/// The key stored at position `l` (0..16) of a group: the inverse of
/// [`vt_position`].
pub const fn vt_key(l: usize) -> usize {
    let (t, r) = (l / 4, l % 4);
    if r < 2 {
        2 * t + r
    } else {
        8 + 2 * t + (r - 2)
    }
}

/// `V^T` of each `K`/`V` head with its keys permuted ([`vt_key`]):
/// `vt[h][d][16 g + l] = v[h][16 g + vt_key(l)][d]` for keys below `skv`,
/// 0 for the padding up to `ld` (a multiple of 16 at least `skv`).
///
/// Thread mapping: a block of 256 threads per 64 keys of one head (grid
/// `(ceil(ld / 64), heads)`). The block copies the 64 x 128-byte tile into
/// shared memory as words (each thread 8, a warp reading 512 contiguous
/// bytes), then each thread writes 8 words of `V^T`: word `w` is row `d =
/// w / 16` and positions `4 (w % 16) ..` of the tile's 64, its four bytes
/// gathered from four keys of the tile (a warp writes two rows' 64 bytes).
#[kernel(launch_bounds(256))]
pub fn attn_fp8_vt(v: DeviceSlice<u32>, mut vt: DeviceSliceMut<u32>, skv: u32, ld: u32) {
    const WORDS: usize = VT_KEYS * FP8_D / 4;
    let (skv, ld) = (skv as usize, ld as usize);
    let head = thread::block_idx_y() as usize;
    let (row_words, vt_words) = (FP8_D / 4, ld / 4);
    if ld % VT_ALIGN != 0
        || ld < skv
        || v.len() < (head + 1) * skv * row_words
        || vt.len() < (head + 1) * FP8_D * vt_words
    {
        ptxlab_device::trap("attn_fp8_vt: ld or a buffer does not fit heads x skv x 128");
    }
    let mut tile = shared::dynamic_shared::<u32>(0, WORDS);
    let t = thread::thread_idx_x() as usize;
    let k0 = thread::block_idx_x() as usize * VT_KEYS;
    let mut i = t;
    while i < WORDS {
        let key = k0 + i / row_words;
        tile[i] = if key < skv {
            v[(head * skv + key) * row_words + i % row_words]
        } else {
            0
        };
        i += VT_THREADS as usize;
    }
    sync_threads();
    let mut i = t;
    while i < WORDS {
        let (d, pos) = (i / (VT_KEYS / 4), 4 * (i % (VT_KEYS / 4)));
        if k0 + pos < ld {
            let mut w = 0u32;
            for b in 0..4 {
                let l = pos + b;
                let key = (l / 16) * 16 + vt_key(l % 16);
                let word = tile[key * row_words + d / 4];
                w |= ((word >> (8 * (d % 4))) & 0xff) << (8 * b);
            }
            vt[(head * FP8_D + d) * vt_words + (k0 + pos) / 4] = w;
        }
        i += VT_THREADS as usize;
    }
}

/// Four f32 rounded to `F` in one register, the first in the low byte.
#[inline(always)]
fn pack4<F: Fp8>(a: f32, b: f32, c: f32, d: f32) -> u32 {
    F::pair_bits(a, b) as u32 | (F::pair_bits(c, d) as u32) << 16
}

/// The 128-key tile of the FP8 kernel: 64 scores and 64 output
/// accumulators a thread, codes of format `F`.
struct Fp8Tile<F>(core::marker::PhantomData<F>);

impl<F: Fp8> WsTile<64, 64> for Fp8Tile<F> {
    const BN: usize = BN;
    const O_USED: usize = 64;
    type P = [[u32; 4]; 4];

    /// 4 `wgmma.m64n128k32` (E4M3, both operands K-major, the `k` step 32
    /// bytes into the 128-byte rows).
    #[inline(always)]
    fn issue_s(s: &mut [f32; 64], q: u32, wg: usize, k: u32) {
        unroll!(kk in [0, 1, 2, 3] {
            wgmma_m64n128k32::<F>(s, q_desc(q, wg, kk), k_desc(k, kk, BN), kk != 0);
        });
    }

    /// 4 `wgmma.m64n128k32` with `P` from registers and `V^T` K-major.
    #[inline(always)]
    fn issue_pv(o: &mut [f32; 64], p: &[[u32; 4]; 4], v: u32) {
        unroll!(kk in [0, 1, 2, 3] {
            wgmma_rs_fp8::<F>(o, p[kk], k_desc(v, kk, BN));
        });
    }

    /// Step `kk` (keys `32 kk..`): registers `a0`/`a1` (rows `gid`, `gid +
    /// 8`) from the first 16 keys, `a2`/`a3` from the next, each the four
    /// keys the thread holds of its row ([`vt_position`]'s order).
    #[inline(always)]
    fn pack(s: &[f32; 64]) -> [[u32; 4]; 4] {
        let mut p = [[0u32; 4]; 4];
        unroll!(kk in [0, 1, 2, 3] {
            let e = 16 * kk;
            p[kk] = [
                pack4::<F>(s[e], s[e + 1], s[e + 4], s[e + 5]),
                pack4::<F>(s[e + 2], s[e + 3], s[e + 6], s[e + 7]),
                pack4::<F>(s[e + 8], s[e + 9], s[e + 12], s[e + 13]),
                pack4::<F>(s[e + 10], s[e + 11], s[e + 14], s[e + 15]),
            ];
        });
        p
    }
}

/// `D += A B` on 64 x 128 x 32 in FP8 format `F`: `A` from registers
/// (four codes a register, the layout of [`WsTile::pack`]), `B` K-major in
/// shared memory.
#[inline(always)]
#[track_caller]
fn wgmma_rs_fp8<F: Fp8>(d: &mut [f32; 64], a: [u32; 4], b: SmemDesc) {
    #[cfg(target_arch = "nvptx64")]
    {
        macro_rules! regs {
            ($f:literal $(, $r:literal)*) => {
                concat!("{", stringify!($f), "}" $(, ", {", stringify!($r), "}")*)
            };
        }
        macro_rules! go {
            ($ty:literal, $($i:literal),+) => {
                // SAFETY: the warpgroup-wide instruction reads `A` from the
                // four registers and the `B` tile the descriptor names, and
                // writes the accumulators; the whole warpgroup executes it,
                // converged, after the tile landed (the caller's contract,
                // as every `wgmma` of the kernels).
                unsafe {
                    core::arch::asm!(
                        "{{",
                        ".reg .pred p;",
                        "setp.ne.b32 p, {sc}, 0;",
                        concat!(
                            "wgmma.mma_async.sync.aligned.m64n128k32.f32.", $ty, ".", $ty, " {{",
                            regs!($($i),+),
                            "}}, {{{a0}, {a1}, {a2}, {a3}}}, {db}, p, 1, 1;"
                        ),
                        "}}",
                        $(inout(reg32) d[$i],)+
                        a0 = in(reg32) a[0],
                        a1 = in(reg32) a[1],
                        a2 = in(reg32) a[2],
                        a3 = in(reg32) a[3],
                        db = in(reg64) b.0,
                        sc = in(reg32) 1u32,
                        options(nostack),
                    )
                }
            };
        }
        macro_rules! all {
            ($ty:literal) => {
                go!(
                    $ty, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
                    21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
                    41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60,
                    61, 62, 63
                )
            };
        }
        if F::IS_E4M3 {
            all!("e4m3")
        } else {
            all!("e5m2")
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    sim::rs_fp8::<F>(d, a, b);
}

/// The simulator's FP8 `wgmma` with `A` in registers: each thread gathers
/// its two rows of `A` from the four lanes of its quad and reads `B`
/// through the descriptor, accumulating in f64 and rounding once.
#[cfg(not(target_arch = "nvptx64"))]
mod sim {
    use ptxlab_device::fp8::Fp8;
    use ptxlab_device::sim::{shared_base, warp_exchange};
    use ptxlab_device::warp::FULL_MASK;
    use ptxlab_device::wgmma::{SmemDesc, acc_coord};

    #[track_caller]
    pub(super) fn rs_fp8<F: Fp8>(d: &mut [f32; 64], a: [u32; 4], b: SmemDesc) {
        let t = ptxlab_device::thread::thread_rank() % 128;
        let gid = ((t % 32) / 4) as usize;
        let (lo, _) = warp_exchange(FULL_MASK, a[0] as u64 | (a[1] as u64) << 32);
        let (hi, _) = warp_exchange(FULL_MASK, a[2] as u64 | (a[3] as u64) << 32);
        // A[h][k]: row gid + 8 h, column k, held by lane 4 gid + (k % 16) / 4
        // in register 2 (k / 16) + h, byte k % 4.
        let mut av = [[0f64; 32]; 2];
        for (h, row) in av.iter_mut().enumerate() {
            for (k, x) in row.iter_mut().enumerate() {
                let lane = 4 * gid + (k % 16) / 4;
                let word = if k < 16 { lo[lane] } else { hi[lane] };
                let reg = (word >> (32 * h)) as u32;
                *x = F::from_bits((reg >> (8 * (k % 4))) as u8).to_f32() as f64;
            }
        }
        let mut at = [[0usize; 32]; 64];
        let mut end = 0;
        for (i, col) in at.iter_mut().enumerate() {
            let n = acc_coord(t, i).1 as u32;
            for (k, x) in col.iter_mut().enumerate() {
                *x = b
                    .swizzle()
                    .apply(b.start() + b.k_major_offset(n, k as u32, 1))
                    as usize;
                end = end.max(*x + 1);
            }
        }
        let base = shared_base(end, 0, 1);
        for (i, acc) in d.iter_mut().enumerate() {
            let h = (i / 2) % 2;
            let mut s = *acc as f64;
            for k in 0..32 {
                // SAFETY: `shared_base` checked that every address is inside
                // the block's shared memory; one-byte reads need no alignment.
                let bits = unsafe { ptxlab_device::sim::mem::read(base.add(at[i][k])) };
                s += av[h][k] * F::from_bits(bits).to_f32() as f64;
            }
            *acc = s as f32;
        }
    }
}

/// The output epilogue of [`attn_ws_fp8`], a kernel parameter by value.
#[derive(Debug, Clone, Copy, PartialEq, KernelParams)]
#[repr(C)]
pub struct Fp8Out {
    /// `V`'s scale: `O = s_v (P V) / l`.
    pub v_scale: f32,
    /// 1: write the log-sum-exp ([`Lse::Store`]), 0: not.
    pub lse: u32,
}

/// Rungs 4 and 5 in FP8, `D = 128`: [`hopper::attn_ws`](super::hopper::attn_ws)'s
/// warp specialisation and ping-pong (`ws.rs`) on E4M3 tiles. With
/// `SKIP` (causal) the key tiles past a block's last query row are never
/// loaded, heaviest query tiles first.
///
/// Thread mapping: 384 threads; warpgroup 0 produces (one thread issues
/// the TMA copies of `Q`, `K` and `V^T`; `setmaxnreg.dec 40`), warpgroups
/// 1 and 2 consume query rows `0..64` and `64..128` (`setmaxnreg.inc
/// 232`), a thread holding rows `row0`, `row0 + 8` of its warp's 16.
/// `shape.scale_log2` already carries `s_q s_k` (the host folds them in).
///
/// Why it is faster than BF16 rung 4: an FP8 `wgmma` does twice the
/// multiply-adds of a 16-bit one in the same time, and every tile is half
/// the bytes, so twice the stages fit; the softmax is the same work per
/// score, so it is now a larger share of the loop, which the ping-pong
/// hides behind the other warpgroup's products.
#[kernel(launch_bounds(384, 1), instances(<E4m3, false>, <E4m3, true>))]
pub fn attn_ws_fp8<F: Fp8, const SKIP: bool>(
    q_map: DeviceSlice<u64>,
    k_map: DeviceSlice<u64>,
    vt_map: DeviceSlice<u64>,
    out: DeviceSliceMut<u16>,
    lse: DeviceSliceMut<f32>,
    shape: AttnShape,
    epi: Fp8Out,
) {
    let (sq, skv, causal) = (shape.sq as usize, shape.skv as usize, shape.causal());
    let heads = thread::grid_dim_y() as usize;
    check_out(&out, &lse, heads, sq, FP8_D, epi.lse);
    let (base, bars) = layout_tiles(TILE + FP8_STAGES * 2 * TILE);
    init_barriers(bars, FP8_STAGES, [q_map, k_map, vt_map]);
    let tiles = Tiles {
        base,
        q_bytes: TILE as u32,
        kv_bytes: TILE as u32,
        stages: FP8_STAGES,
    };
    let t = thread::thread_idx_x() as usize;
    let head = thread::block_idx_y() as usize;
    let kv_head = kv_row(head, heads, shape.group, 1);
    let (q0, n) = query_tile::<SKIP>(BN, skv, causal);
    let role = warp::shfl_idx(FULL_MASK, (t / 128) as u32, 0);
    if role == 0 {
        setmaxnreg_dec::<40>();
        if t == 0 {
            produce(
                bars,
                tiles,
                n,
                |bar| tma_load_2d(base, q_map, 0, (head * sq + q0) as i32, bar),
                |dst, j, bar| tma_load_2d(dst, k_map, 0, (kv_head * skv + j * BN) as i32, bar),
                // The maps count in words (four codes): tile j's keys start at
                // word 32 j of a V^T row.
                |dst, j, bar| {
                    tma_load_2d(
                        dst,
                        vt_map,
                        (j * BN / 4) as i32,
                        (kv_head * FP8_D) as i32,
                        bar,
                    )
                },
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
            scale_log2: shape.scale_log2,
        };
        let Consumed {
            mut o,
            rows,
            row0,
            tig,
        } = consume::<Fp8Tile<F>, 64, 64>(bars, tiles, work, t);
        let l = finish(&mut o, 64, &rows);
        rescale(&mut o, 64, [epi.v_scale; 2]);
        store_rows::<Bf16, 64>(out, &o, 64, tig, RowSlab::new(head * sq, row0, sq, FP8_D));
        if epi.lse != Lse::Skip as u32 {
            store_lse(lse, l, tig, head * sq, row0, sq);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_permutation_is_a_bijection_that_matches_the_register_layout() {
        for p in 0..16 {
            assert_eq!(vt_key(vt_position(p)), p);
        }
        // Thread tig holds keys 2 tig, 2 tig + 1, 8 + 2 tig, 9 + 2 tig of a
        // group and packs them as k = 4 tig .. 4 tig + 3.
        for tig in 0..4 {
            let held = [2 * tig, 2 * tig + 1, 8 + 2 * tig, 9 + 2 * tig];
            for (r, key) in held.into_iter().enumerate() {
                assert_eq!(vt_position(key), 4 * tig + r);
            }
        }
    }
}
