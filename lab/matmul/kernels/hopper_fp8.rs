//! FP8 GEMM on Hopper (sm_90a): `D = scale (A B)` with E4M3 inputs, f32
//! accumulation and a BF16 output, on `wgmma.m64n128k32.f32.e4m3.e4m3`;
//! and the same with DeepGEMM's block scales (one per 1 x 128 block of
//! `A`, one per 128 x 128 block of `B`) in place of `scale`.
//!
//! Shapes: `A` is `m x k` row-major and `B^T` is `n x k` row-major (`B`
//! column-major, the layout `torch._scaled_mm` asks for too): 8-bit
//! `wgmma` has no transposed form, so both operands must be K-major in
//! shared memory, and TMA copies a K-major tile only from rows that run
//! along `k`. `D` is `m x n` row-major, BF16 bits. `scale` is the product
//! of the per-tensor scales (`scale_a scale_b`, checked finite and
//! positive by the host), applied once to the f32 sum before the rounding
//! to BF16, as cuBLAS applies `alpha`.
//!
//! The operands arrive through TMA tensor maps of 1-byte elements (the
//! host makes them: `ptxlab_runtime::TensorMap`), which zero-fill boxes
//! past the matrix edges: any `m` and `n` work, stores past the edges are
//! skipped, and `k` needs only rows 16-byte aligned (a multiple of 16);
//! the zeros past `k` add nothing to the sums.
//!
//! [`matmul_fp8_ws`] has rung 5's structure
//! ([`matmul_ws`](crate::hopper::matmul_ws)): a producer warpgroup, two
//! consumer warpgroups, 128 x 256 tiles, a persistent grid in the grouped
//! tile order of [`grouped_tile`]. What the 8-bit type changes is in its
//! doc comment. [`matmul_fp8_ws_blockscaled`] is the same body with the
//! scales applied where the partial sums are promoted; the two entries
//! share it through a private `Scaling` trait whose per-tensor side adds
//! nothing, so [`matmul_fp8_ws`]'s code is what it was without the
//! block-scaled one.

use crate::hopper::{GemmDims, OutTile, grouped_tile};
use ptxlab_device::fp8::E4m3;
use ptxlab_device::hopper::{
    Mbarrier, Swizzle, fence_mbarrier_init, fence_tensormap_acquire, setmaxnreg_dec,
    setmaxnreg_inc, tma_load_2d,
};
use ptxlab_device::mem::U32x4;
use ptxlab_device::mma::{self, Bf16, shared_addr};
use ptxlab_device::prelude::*;
use ptxlab_device::unroll;
use ptxlab_device::wgmma::{
    self, SmemDesc, acc_coord, fence_operands, wgmma_commit_group, wgmma_fence, wgmma_wait_group,
};

/// Rows of the block tile (two consumer warpgroups of 64 rows each).
pub const FP8_BM: usize = 128;
/// Columns of the block tile (two `m64n128k32` per consumer warpgroup and
/// `k32`).
pub const FP8_BN: usize = 256;
/// `k` per stage: 128 one-byte values, one 128-byte swizzle span per row.
pub const FP8_BK: usize = 128;
/// Depth of `k` of one block of the block scales ([`matmul_fp8_ws_blockscaled`]:
/// `A`'s are 1 x 128, `B^T`'s 128 x 128): one stage, whose partial sums the
/// scales multiply as they are promoted.
pub const FP8_SCALE_BLOCK: usize = FP8_BK;
/// Stages of the shared-memory ring.
pub const FP8_STAGES: usize = 4;
/// Threads per block: a producer warpgroup and two consumers.
pub const FP8_THREADS: u32 = 384;
/// Bytes of one stage: the `A` box (128 x 128), then the `B^T` box (256
/// x 128).
pub const FP8_STAGE: usize = (FP8_BM + FP8_BN) * FP8_BK;
/// Registers the producer warpgroup keeps after `setmaxnreg.dec`.
const PRODUCER_REGS: u32 = 40;
/// Registers each consumer thread gets after `setmaxnreg.inc`: 64 partial
/// sums, 128 running sums, addresses (`128 * 40 + 256 * 232 <= 65536`).
const CONSUMER_REGS: u32 = 232;

/// Dynamic shared memory of [`matmul_fp8_ws`] (197,696 bytes): 1024 bytes
/// of alignment slack, the stages, two barriers per stage.
pub const fn fp8_shared_bytes() -> usize {
    1024 + FP8_STAGES * FP8_STAGE + 16 * FP8_STAGES
}

/// Bytes of one stage's block scales ([`matmul_fp8_ws_blockscaled`]):
/// `A`'s 128 rows (512 bytes), then `B`'s column blocks (a 16-byte box at
/// byte 512, of which the tile's two are used), padded to 128-byte TMA
/// destinations.
pub const FP8_SCALE_SLOT: usize = 640;

/// Dynamic shared memory of [`matmul_fp8_ws_blockscaled`]: that of
/// [`matmul_fp8_ws`] plus a [`FP8_SCALE_SLOT`] per stage.
pub const fn fp8_blockscaled_shared_bytes() -> usize {
    fp8_shared_bytes() + FP8_STAGES * FP8_SCALE_SLOT
}

/// The tiles' first byte (shared address, 1024-aligned), the barrier
/// slots (`full[0..S]`, `empty[0..S]`) and the byte offset (in dynamic
/// shared memory) of the `extra_per_stage` bytes per stage between the
/// stages and the barriers (the block scales' slots; none for per-tensor
/// scales).
#[inline(always)]
fn layout(extra_per_stage: usize) -> (u32, SharedSlice<u64>, usize) {
    let all = shared::dynamic_shared::<U32x4>(
        0,
        (fp8_shared_bytes() + FP8_STAGES * extra_per_stage) / 16,
    );
    let raw = shared_addr(all.as_mut_ptr());
    let pad = ((1024 - raw % 1024) % 1024) as usize;
    let extra = pad + FP8_STAGES * FP8_STAGE;
    let bars = shared::dynamic_shared::<u64>(extra + FP8_STAGES * extra_per_stage, 2 * FP8_STAGES);
    (raw + pad as u32, bars, extra)
}

/// Stores a warpgroup's 64 x 128 sums (thread `t` of the warpgroup, its 64
/// values in the `wgmma` accumulator layout) times `scale` at `out` in
/// `D`, rounded to BF16: neighbouring pairs as one 32-bit store when inside
/// `D` and `n` is even, one by one otherwise.
#[inline(always)]
fn store_scaled(d: DeviceSliceMut<u16>, acc: &[f32; 64], scale: f32, t: u32, out: OutTile) {
    let OutTile { row0, col0, m, n } = out;
    unroll!(p in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31] {
        let (r, cc) = acc_coord(t, 2 * p);
        let (row, col) = (row0 + r, col0 + cc);
        if row < m {
            let w = mma::pack_rn::<Bf16>(scale * acc[2 * p], scale * acc[2 * p + 1]);
            if n.is_multiple_of(2) && col + 1 < n {
                // SAFETY: `D[row, col..col + 2]` is inside `D` (its length
                // was checked against `m n`, `row < m`, `col + 1 < n`) and
                // 4-byte aligned (`n`, `col` even).
                unsafe { d.set_vec_unchecked::<u32>((row * n + col) / 2, w) };
            } else {
                if col < n {
                    d.set(row * n + col, w as u16);
                }
                if col + 1 < n {
                    d.set(row * n + col + 1, (w >> 16) as u16);
                }
            }
        }
    });
}

/// `D = scale (A B)` with E4M3 `A` (`m x k`) and `B^T` (`n x k`), both
/// row-major through the tensor maps `a_map` and `bt_map` (boxes of 128 x
/// 128 and 256 x 128 bytes, 128-byte swizzle), `D` (`m x n`, BF16 bits).
///
/// # Thread mapping
/// 384 threads: warpgroup 0 is the producer (thread 0 issues the copies;
/// `setmaxnreg.dec 40` hands the others' registers to the consumers),
/// warpgroups 1 and 2 are the consumers (`setmaxnreg.inc 232`): consumer
/// `w` (0 or 1) owns rows `64 w..64 w + 64` of the block's 128 x 256 tile
/// and holds its 64 x 256 sums as two 64 x 128 halves, 64 f32 per thread
/// each, in the `wgmma` accumulator layout ([`acc_coord`]). The grid is
/// persistent (one block per SM): block `b` takes tiles `b, b + grid, ...`
/// in the order of [`grouped_tile`]
/// ([`WS_GROUP`](crate::hopper::WS_GROUP) tile rows per column band, so
/// the blocks running at once share bands of `B` in L2).
///
/// # Shared-memory layout
/// From the first 1024-byte boundary of dynamic shared memory,
/// [`FP8_STAGES`] stages of [`FP8_STAGE`] bytes: the `A` tile (128 rows of
/// 128 bytes of `k`), then the `B^T` tile (256 rows of 128 bytes), each
/// one TMA box written 128-byte swizzled, the canonical K-major layout
/// `wgmma` reads (rows 128 bytes apart, 8-row groups 1024 bytes apart; the
/// `k32` step `kk` starts `32 kk` bytes into the span). Then the barriers:
/// `full[s]` (one arrival, the producer's, with the stage's 49,152 bytes
/// expected) and `empty[s]` (256 arrivals, every consumer thread once its
/// `wgmma` that read the stage completed).
///
/// # Why this design
/// * One byte per value: a 128-byte swizzle row holds 128 values of `k`,
///   so a stage is 128 deep (rung 5's is 64) and the same 48 KiB ring
///   feeds twice the multiply-adds per byte of shared memory; each copy is
///   one box per operand (`B^T`'s 256 rows are one box).
/// * The tensor core's FP8 accumulation keeps fewer bits than f32 (about
///   14 of the sum's, and it truncates), so a chain over all of `k` loses
///   accuracy as `k` grows. Each stage therefore goes into fresh partial
///   sums (four `m64n128k32`, 128 deep, the first one not accumulating),
///   which are then added to the running f32 sums with ordinary adds
///   that round to nearest: DeepGEMM's promotion. The biased chains are 4
///   instructions long whatever `k` is.
/// * Registers: 64 partial sums plus 128 running ones fit under the
///   consumers' 232; a whole 64 x 256 partial (128 more) would not. So a
///   consumer multiplies the stage's two 128-column halves one after the
///   other into the same 64 partial sums, waiting for each (`wait_group
///   0`) before adding it; the other consumer's `wgmma` keep the tensor
///   core busy during that wait and the adds.
/// * `scale` multiplies the f32 sums once, at the store: the FP8 values
///   stay exact in the tensor core, and the result is rounded once to
///   BF16.
#[kernel(launch_bounds(384, 1))]
pub fn matmul_fp8_ws(
    a_map: DeviceSlice<u64>,
    bt_map: DeviceSlice<u64>,
    d: DeviceSliceMut<u16>,
    dims: GemmDims,
    scale: f32,
) {
    ws_body(a_map, bt_map, d, dims, PerTensor(scale));
}

/// `D[i, j] = sum over k blocks kb of sa[i, kb] sb[j / 128, kb] (A B)_kb[i,
/// j]`: [`matmul_fp8_ws`] with DeepGEMM's block scaling, `A`'s scales one
/// per row and 128-deep block of `k`, `B`'s one per 128 x 128 block of
/// `B^T`, read through the tensor maps `sa_map` and `sb_map` (f32, laid
/// out as [`fp8_block_scale_dims`] says: k-block-major, `sa[kb][i]` and
/// `sb[kb][j / 128]`, boxes of 1 x 128 and 1 x 4, no swizzle). The host
/// checks the scales finite and positive.
///
/// # Thread mapping
/// [`matmul_fp8_ws`]'s. The producer's thread also copies each stage's
/// scales. A consumer thread's 64 sums of each 64 x 128 half lie in two
/// rows (`r` and `r + 8`, [`acc_coord`]) and one 128-column block of
/// `B^T`, so each half of a k block needs two factors per thread: the two
/// rows' `sa` times the half's `sb`.
///
/// # Shared-memory layout
/// [`matmul_fp8_ws`]'s stages, then one [`FP8_SCALE_SLOT`] per stage (the
/// scales of the tile's 128 rows of `A` for the stage's k block, then
/// the box of four of `B`'s column blocks that holds the tile's two and
/// starts on a 16-byte boundary of its row, as TMA requires), then the
/// barriers.
/// `full[s]` expects the slot's 528 bytes with the stage's.
///
/// # What changes from [`matmul_fp8_ws`], and why
/// * A stage is exactly one scale block deep ([`FP8_SCALE_BLOCK`] is
///   [`FP8_BK`]), and its partial sums are already promoted into the
///   running sums with an ordinary add. The scales ride on that add: each
///   partial sum is multiplied by its `sa sb` and then added (64
///   multiplies per half and stage, beside the tensor core's 64 x 128 x
///   128 multiply-adds; a multiply and an add rather than one `fma`,
///   which `ptxas` cannot fit beside the 192 sums without spilling in the
///   k loop); the store multiplies by nothing.
/// * The scales travel with their stage: two more TMA boxes on the same
///   `full` barrier (DeepGEMM copies `A`'s the same way). After each
///   half's `wgmma`, a consumer reads three values from the stage's slot
///   (its two rows' `sa`, the half's `sb`) at offsets that depend only
///   on the stage and the parity of the tile's column, where global loads
///   would keep 64-bit pointers and indices live beside the 192 sums; the
///   stage is released only after the second half's read.
/// * Rows past `m` and blocks past `n` are zero-filled by TMA; their sums
///   are zeros and never stored.
#[kernel(launch_bounds(384, 1))]
pub fn matmul_fp8_ws_blockscaled(
    a_map: DeviceSlice<u64>,
    bt_map: DeviceSlice<u64>,
    sa_map: DeviceSlice<u64>,
    sb_map: DeviceSlice<u64>,
    d: DeviceSliceMut<u16>,
    dims: GemmDims,
) {
    ws_body(a_map, bt_map, d, dims, BlockScales { sa_map, sb_map });
}

/// The block scales' layout for [`matmul_fp8_ws_blockscaled`] at `m x n x
/// k`: `(kb, mp, np)`: `kb = ceil(k / 128)` k blocks, each a row of `mp`
/// scales of `A` (`m` rounded up to a multiple of 4, so rows are 16-byte
/// aligned for TMA) and a row of `np` scales of `B` (`ceil(n / 128)`
/// rounded up to a multiple of 4).
pub const fn fp8_block_scale_dims(m: usize, n: usize, k: usize) -> (usize, usize, usize) {
    (
        k.div_ceil(FP8_SCALE_BLOCK),
        m.next_multiple_of(4),
        n.div_ceil(FP8_SCALE_BLOCK).next_multiple_of(4),
    )
}

/// The first column of the box of four of `B`'s block scales that the
/// tile in column `tn` of tiles reads ([`matmul_fp8_ws_blockscaled`]): the
/// tile's first column block, `2 tn`, rounded down to a multiple of four,
/// so that the box starts on a 16-byte boundary of its row of f32 (TMA
/// refuses a box whose start in the innermost dimension is not 16-byte
/// aligned: the GPU stops the copy with an illegal instruction). The
/// tile's two column blocks are the box's first two or its last two.
#[inline(always)]
const fn sb_group(tn: usize) -> usize {
    tn * (FP8_BN / FP8_SCALE_BLOCK) / 4 * 4
}

/// How the consumers scale the products: the extra bytes a stage carries
/// and the copies that fill them (producer), the factors one consumer
/// thread reads for one stage, how a stage's partial sums join the running
/// sums, and the factor of the store.
trait Scaling: Copy {
    /// Bytes per stage after the stages (the scales' slots).
    const SLOT: usize;
    /// Bytes [`Scaling::load`] copies per stage.
    const TX: usize;
    /// What a consumer reads the factors from.
    type View: Copy;
    /// The factors of one k block and one 128-column half for one
    /// consumer thread.
    type Block: Copy;
    /// Fences the tensor maps of the scales (the producer's thread, once).
    fn acquire(&self);
    /// Copies k block `kt`'s scales of tile `(tm, tn)` to the shared
    /// address `slot`, completing on `bar`.
    fn load(&self, slot: u32, tile: (usize, usize), kt: usize, bar: Mbarrier);
    /// The view of the slots, which start `at` bytes into dynamic shared
    /// memory.
    fn view(&self, at: usize) -> Self::View;
    /// Stage `s`'s factors of the half `HALF` (0 or 1) of a tile in
    /// column `tn` of tiles, for thread `t` (0..128) of consumer warpgroup
    /// `wg`.
    fn block<const HALF: usize>(
        v: Self::View,
        s: usize,
        tn: usize,
        wg: usize,
        t: u32,
    ) -> Self::Block;
    /// Adds the partial sums `part` of the tile's half `HALF` (0 or 1) to
    /// the running sums `acc`, scaled by `f`.
    fn promote<const HALF: usize>(f: Self::Block, acc: &mut [f32; 64], part: &[f32; 64]);
    /// The factor of the store.
    fn store_scale(&self) -> f32;
}

/// One scale for the whole product, applied at the store.
#[derive(Clone, Copy)]
struct PerTensor(f32);

impl Scaling for PerTensor {
    const SLOT: usize = 0;
    const TX: usize = 0;
    type View = ();
    type Block = ();
    #[inline(always)]
    fn acquire(&self) {}
    #[inline(always)]
    fn load(&self, _slot: u32, _tile: (usize, usize), _kt: usize, _bar: Mbarrier) {}
    #[inline(always)]
    fn view(&self, _at: usize) {}
    #[inline(always)]
    fn block<const HALF: usize>(_v: (), _s: usize, _tn: usize, _wg: usize, _t: u32) {}
    #[inline(always)]
    fn promote<const HALF: usize>(_f: (), acc: &mut [f32; 64], part: &[f32; 64]) {
        unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63] {
            acc[i] += part[i];
        });
    }
    #[inline(always)]
    fn store_scale(&self) -> f32 {
        self.0
    }
}

/// DeepGEMM's block scales ([`matmul_fp8_ws_blockscaled`]): tensor maps
/// of `sa` (`kb x mp`) and `sb` (`kb x np`), [`fp8_block_scale_dims`].
#[derive(Clone, Copy)]
struct BlockScales<'a> {
    sa_map: DeviceSlice<'a, u64>,
    sb_map: DeviceSlice<'a, u64>,
}

impl Scaling for BlockScales<'_> {
    const SLOT: usize = FP8_SCALE_SLOT;
    /// `A`'s 128 scales and `B`'s box of four.
    const TX: usize = 4 * FP8_BM + 16;
    /// The slots, as f32.
    type View = SharedSlice<f32>;
    /// `sa[row] sb[cb + HALF]`, `sa[row + 8] sb[cb + HALF]`.
    type Block = [f32; 2];
    #[inline(always)]
    fn acquire(&self) {
        fence_tensormap_acquire(self.sa_map);
        fence_tensormap_acquire(self.sb_map);
    }
    #[inline(always)]
    fn load(&self, slot: u32, (tm, tn): (usize, usize), kt: usize, bar: Mbarrier) {
        tma_load_2d(slot, self.sa_map, (tm * FP8_BM) as i32, kt as i32, bar);
        tma_load_2d(
            slot + 4 * FP8_BM as u32,
            self.sb_map,
            sb_group(tn) as i32,
            kt as i32,
            bar,
        );
    }
    #[inline(always)]
    fn view(&self, at: usize) -> SharedSlice<f32> {
        shared::dynamic_shared::<f32>(at, FP8_STAGES * FP8_SCALE_SLOT / 4)
    }
    #[inline(always)]
    fn block<const HALF: usize>(
        v: SharedSlice<f32>,
        s: usize,
        tn: usize,
        wg: usize,
        t: u32,
    ) -> [f32; 2] {
        let at = s * (FP8_SCALE_SLOT / 4);
        let row = 64 * wg + acc_coord(t, 0).0;
        // The tile's first column block within the box of four.
        let cb = tn * (FP8_BN / FP8_SCALE_BLOCK) - sb_group(tn);
        // SAFETY: `s < FP8_STAGES`, `row + 8 < 128`, `cb + HALF < 4`: every
        // index lies in the stage's slot (`FP8_SCALE_SLOT / 4 = 160` f32),
        // inside the view.
        let (a0, a1, b) = unsafe {
            (
                v.get_unchecked(at + row),
                v.get_unchecked(at + row + 8),
                v.get_unchecked(at + FP8_BM + cb + HALF),
            )
        };
        [a0 * b, a1 * b]
    }
    #[inline(always)]
    fn promote<const HALF: usize>(f: [f32; 2], acc: &mut [f32; 64], part: &[f32; 64]) {
        // Value `i` lies in row `row + 8 ((i / 2) % 2)` ([`acc_coord`]).
        unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63] {
            acc[i] += part[i] * f[(i / 2) % 2];
        });
    }
    #[inline(always)]
    fn store_scale(&self) -> f32 {
        1.0
    }
}

/// The body of both FP8 kernels (their doc comments), with the scaling
/// `sc` deciding how partial sums are promoted and what the store
/// multiplies by.
#[inline(always)]
fn ws_body<Sc: Scaling>(
    a_map: DeviceSlice<u64>,
    bt_map: DeviceSlice<u64>,
    d: DeviceSliceMut<u16>,
    dims: GemmDims,
    sc: Sc,
) {
    const S: usize = FP8_STAGES;
    /// Bytes of the `A` box of a stage (where `B^T`'s starts).
    const A_BYTES: usize = FP8_BM * FP8_BK;
    /// Bytes of a 128-column half of the `B^T` box.
    const HALF_BYTES: usize = 128 * FP8_BK;
    let (m, n, k) = (dims.m as usize, dims.n as usize, dims.k as usize);
    if d.len() < m * n {
        ptxlab_device::trap("matmul_fp8: D is shorter than m n");
    }
    let (base, bars, slots) = layout(Sc::SLOT);
    if thread::thread_idx_x() == 0 {
        for s in 0..S {
            Mbarrier::at(bars, s).init(1);
            Mbarrier::at(bars, S + s).init(2 * 128);
        }
        fence_mbarrier_init();
        fence_tensormap_acquire(a_map);
        fence_tensormap_acquire(bt_map);
        sc.acquire();
    }
    sync_threads();
    let t = thread::thread_idx_x() as usize;
    let (tiles_m, tiles_n) = (m.div_ceil(FP8_BM), n.div_ceil(FP8_BN));
    let tiles = tiles_m * tiles_n;
    let ktiles = k.div_ceil(FP8_BK);
    let (first, step) = (
        thread::block_idx_x() as usize,
        thread::grid_dim_x() as usize,
    );
    let full = |s: usize| Mbarrier::at(bars, s);
    let empty = |s: usize| Mbarrier::at(bars, S + s);
    let stage_at = |s: usize| base + (s * FP8_STAGE) as u32;
    // The warpgroup index through a shuffle: the same value in every lane,
    // so the compiler knows each role's branch is uniform per warpgroup
    // and keeps the `wgmma` asynchronous (as in rung 5).
    let role = warp::shfl_idx(FULL_MASK, (t / 128) as u32, 0);
    if role == 0 {
        setmaxnreg_dec::<PRODUCER_REGS>();
        if t == 0 {
            let mut it = 0;
            let mut tile = first;
            while tile < tiles {
                let (tm, tn) = grouped_tile(tile, tiles_m, tiles_n);
                for kt in 0..ktiles {
                    let s = it % S;
                    if it >= S {
                        empty(s).wait((((it / S) & 1) ^ 1) as u32);
                    }
                    let (at, k0) = (stage_at(s), (kt * FP8_BK) as i32);
                    let f = full(s);
                    f.arrive_expect_tx((FP8_STAGE + Sc::TX) as u32);
                    tma_load_2d(at, a_map, k0, (tm * FP8_BM) as i32, f);
                    tma_load_2d(at + A_BYTES as u32, bt_map, k0, (tn * FP8_BN) as i32, f);
                    sc.load(
                        base + (S * FP8_STAGE + s * Sc::SLOT) as u32,
                        (tm, tn),
                        kt,
                        f,
                    );
                    it += 1;
                }
                tile += step;
            }
        }
    } else {
        setmaxnreg_inc::<CONSUMER_REGS>();
        let wg = role as usize - 1;
        let view = sc.view(slots);
        let mut it = 0;
        let mut tile = first;
        while tile < tiles {
            let (tm, tn) = grouped_tile(tile, tiles_m, tiles_n);
            let mut lo = [0f32; 64];
            let mut hi = [0f32; 64];
            for _ in 0..ktiles {
                let s = it % S;
                full(s).wait(((it / S) & 1) as u32);
                let at = stage_at(s);
                // K-major descriptors: rows 128 bytes apart, 8-row groups
                // 1024 bytes apart, step `kk` 32 bytes into the span.
                let desc = |start: usize, kk: usize| {
                    SmemDesc::new(at + start as u32, 16, 1024, Swizzle::B128).offset(32 * kk as u32)
                };
                let a_rows = wg * 64 * FP8_BK;
                let mut part = [0f32; 64];
                wgmma_fence();
                unroll!(kk in [0, 1, 2, 3] {
                    wgmma::wgmma_m64n128k32::<E4m3>(
                        &mut part,
                        desc(a_rows, kk),
                        desc(A_BYTES, kk),
                        kk != 0,
                    );
                });
                wgmma_commit_group();
                wgmma_wait_group::<0>();
                fence_operands(&mut part);
                let f = Sc::block::<0>(view, s, tn, wg, (t % 128) as u32);
                Sc::promote::<0>(f, &mut lo, &part);
                wgmma_fence();
                unroll!(kk in [0, 1, 2, 3] {
                    wgmma::wgmma_m64n128k32::<E4m3>(
                        &mut part,
                        desc(a_rows, kk),
                        desc(A_BYTES + HALF_BYTES, kk),
                        kk != 0,
                    );
                });
                wgmma_commit_group();
                wgmma_wait_group::<0>();
                fence_operands(&mut part);
                let f = Sc::block::<1>(view, s, tn, wg, (t % 128) as u32);
                // Both halves' `wgmma` are done and the scales read: the
                // stage can be refilled.
                empty(s).arrive();
                Sc::promote::<1>(f, &mut hi, &part);
                it += 1;
            }
            let tw = (t % 128) as u32;
            let (row0, col0) = (tm * FP8_BM + 64 * wg, tn * FP8_BN);
            let scale = sc.store_scale();
            let out = OutTile { row0, col0, m, n };
            store_scaled(d, &lo, scale, tw, out);
            let out = OutTile {
                col0: col0 + 128,
                ..out
            };
            store_scaled(d, &hi, scale, tw, out);
            tile += step;
        }
    }
}
