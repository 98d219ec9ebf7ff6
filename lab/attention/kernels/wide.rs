//! Rungs 4 and 5 at head dimension 256 (sm_90a): [`attn_ws_wide`].
//!
//! The algorithm, the roles, the barriers and the turns are rung 4's
//! ([`hopper::attn_ws`](super::hopper::attn_ws)); what changes is the
//! budget. A consumer thread holds its share of the output accumulators,
//! `64 x D / 128` of them: 128 f32 registers at `D = 256` against 64 at
//! `D = 128`. With rung 4's 128-key tiles the scores of the next tile (64
//! registers) and the probabilities of the last one (32) would come on top,
//! past the 240 registers a consumer warpgroup may hold. So the key tile
//! shrinks to 80 ([`hp_bn`], FlashAttention-3's choice at this `D`): 40
//! score registers, 20 of probabilities, about 220 in all, no spills.
//!
//! Per key tile, per consumer warpgroup:
//! * `S = Q K^T`: 16 `wgmma.m64n80k16` (both operands K-major in shared
//!   memory, the `Q` tile's four panels read one after the other);
//! * `O += P V`: 5 `wgmma.m64n256k16` with `P` in registers and `V`
//!   N-major (four 64-column panels, the descriptor's leading offset
//!   stepping from one to the next).
//!
//! Shared memory: the `Q` tile (128 rows x 256 columns, 64 KiB, four
//! panels of 128 rows x 128 bytes), two stages of a `K` and a `V` tile (80
//! rows x 256 columns, 40 KiB each, four panels of 80 rows x 128 bytes,
//! each panel a whole number of the swizzle's 1024-byte atoms): 224 KiB of
//! the 227 a block may have, then the barriers. Each `K`/`V` tile arrives
//! as four TMA boxes of 80 rows x 64 columns (the host makes their tensor
//! maps with 80-row boxes at this `D`).

use super::hopper::{
    check_out, hp_bn, hp_stages, k_desc, kv_row, layout_tiles, load_tile, q_desc, v_desc,
    wgmma_rs_n256,
};
use super::pipe::{BAR_SLOTS, Bar, HP_BM, init_barriers};
use super::ws::{Consumed, Tiles, Work, WsTile, consume, produce, query_tile};
use super::{AttnShape, Lse, RowSlab, finish, p_frag, store_lse, store_rows};
use ptxlab_device::hopper::{setmaxnreg_dec, setmaxnreg_inc};
use ptxlab_device::mma::{Bf16, F16, Half16};
use ptxlab_device::prelude::*;
use ptxlab_device::unroll;
use ptxlab_device::wgmma::wgmma_m64n80k16;

/// The head dimension of this module's kernel.
pub const WIDE_D: usize = 256;
/// Keys per tile at [`WIDE_D`].
const BN: usize = hp_bn(WIDE_D);
/// Bytes of the tiles: the `Q` tile and the stages of `K` and `V`.
const TILES: usize = (HP_BM + hp_stages(WIDE_D) * 2 * BN) * WIDE_D * 2;

/// Dynamic shared memory of [`attn_ws_wide`]: 1024 bytes of alignment
/// slack, the tiles, the barriers.
pub const fn wide_shared_bytes() -> usize {
    1024 + TILES + 8 * BAR_SLOTS
}

/// The 80-key tile of `D = 256`: 40 scores and 128 output accumulators a
/// thread.
struct WideTile<H>(core::marker::PhantomData<H>);

impl<H: Half16> WsTile<40, 128> for WideTile<H> {
    const BN: usize = BN;
    const O_USED: usize = 128;
    type P = [[u32; 4]; 5];

    /// 16 `wgmma.m64n80k16`, both operands K-major in shared memory (the
    /// `Q` tile's four panels one after the other).
    #[inline(always)]
    fn issue_s(s: &mut [f32; 40], q: u32, wg: usize, k: u32) {
        unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            wgmma_m64n80k16::<H, false, false>(s, q_desc(q, wg, kk), k_desc(k, kk, BN), kk != 0);
        });
    }

    /// 5 `wgmma.m64n256k16`, `P` from registers, `V` N-major.
    #[inline(always)]
    fn issue_pv(o: &mut [f32; 128], p: &[[u32; 4]; 5], v: u32) {
        unroll!(kk in [0, 1, 2, 3, 4] {
            wgmma_rs_n256::<H>(o, p[kk], v_desc(v, kk, BN));
        });
    }

    /// The `A` fragments of the 5 key-steps.
    #[inline(always)]
    fn pack(s: &[f32; 40]) -> [[u32; 4]; 5] {
        let mut p = [[0u32; 4]; 5];
        unroll!(kk in [0, 1, 2, 3, 4] {
            p[kk] = p_frag::<H, 40>(s, kk);
        });
        p
    }
}

/// Rungs 4 and 5 at `D = 256`: warp specialisation, two consumer
/// warpgroups taking turns, the softmax of tile `j` overlapped with
/// `P_{j-1} V_{j-1}`; with `SKIP` (rung 5, causal) the tiles past the
/// block's last query row are never loaded, heaviest query tiles first.
///
/// Thread mapping: 384 threads, as rung 4. Warpgroup 0 produces (one
/// thread issues every TMA copy; the warpgroup gives back registers with
/// `setmaxnreg.dec 24`); warpgroups 1 and 2 consume query rows `0..64` and
/// `64..128` of the block's 128 (`setmaxnreg.inc 240`: the 128 output
/// accumulators need the room). A consumer thread holds rows `row0` and
/// `row0 + 8` of its warp's 16, in the accumulator layout of the module
/// docs of [`attention`](super): 40 scores of an 80-key tile, 128 output
/// values.
///
/// A consumer's loop, tile `j`: wait for its turn; issue `S_j`; scale `O`
/// by the last tile's `alpha`; issue `O += P_{j-1} V_{j-1}`; signal the
/// other consumer; wait for `S_j` (one group may still run), release
/// `K_j`, mask and run the online softmax; wait for `P V`, release
/// `V_{j-1}`, pack `P_j`.
///
/// Why this shape and not rung 4's: the 128-key tile would need 128 + 64 +
/// 32 registers of accumulators, scores and probabilities alone; an 80-key
/// tile keeps the whole tile in registers (no spills) and still gives the
/// tensor core 16 products of `S` and 5 of `P V` to queue per turn. A
/// 64-key tile (`m64n64k16` scores) also fits, with fewer multiply-adds
/// per barrier, wait and softmax step.
#[kernel(launch_bounds(384, 1), instances(<Bf16, false>, <F16, false>, <Bf16, true>, <F16, true>))]
pub fn attn_ws_wide<H: Half16, const SKIP: bool>(
    q_map: DeviceSlice<u64>,
    k_map: DeviceSlice<u64>,
    v_map: DeviceSlice<u64>,
    out: DeviceSliceMut<u16>,
    lse: DeviceSliceMut<f32>,
    shape: AttnShape,
    lse_out: Lse,
) {
    const D: usize = WIDE_D;
    let want_lse = lse_out as u32;
    let (sq, skv, causal) = (shape.sq as usize, shape.skv as usize, shape.causal());
    let (scale_log2, group) = (shape.scale_log2, shape.group);
    let heads = thread::grid_dim_y() as usize;
    check_out(&out, &lse, heads, sq, D, want_lse);
    let stages = hp_stages(D);
    let (base, bars): (u32, Bar) = layout_tiles(TILES);
    init_barriers(bars, stages, [q_map, k_map, v_map]);
    let t = thread::thread_idx_x() as usize;
    let head = thread::block_idx_y() as usize;
    let kv0 = kv_row(head, heads, group, skv);
    let (q0, n) = query_tile::<SKIP>(BN, skv, causal);
    let tiles = Tiles {
        base,
        q_bytes: (HP_BM * D * 2) as u32,
        kv_bytes: (BN * D * 2) as u32,
        stages,
    };
    let role = warp::shfl_idx(FULL_MASK, (t / 128) as u32, 0);
    if role == 0 {
        setmaxnreg_dec::<24>();
        if t == 0 {
            produce(
                bars,
                tiles,
                n,
                |bar| load_tile(base, q_map, head * sq + q0, HP_BM, D, bar),
                |dst, j, bar| load_tile(dst, k_map, kv0 + j * BN, BN, D, bar),
                |dst, j, bar| load_tile(dst, v_map, kv0 + j * BN, BN, D, bar),
            );
        }
    } else {
        setmaxnreg_inc::<240>();
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
        } = consume::<WideTile<H>, 40, 128>(bars, tiles, work, t);
        let l = finish(&mut o, D / 2, &rows);
        store_rows::<H, 128>(out, &o, D / 2, tig, RowSlab::new(head * sq, row0, sq, D));
        if want_lse != 0 {
            store_lse(lse, l, tig, head * sq, row0, sq);
        }
    }
}
