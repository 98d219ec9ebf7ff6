// Rungs 3d and 3e of the tensor-core ladder: lean tile copies,
// XOR-swizzled shared memory, fragments loaded a step ahead and rasterised
// blocks (`matmul_pipes`, the fastest `mma.sync` rung), and the same with
// 256x128 tiles, one block of eight warps per SM (`matmul_pipet`). Included
// into `tensor` (see its module doc).

/// Rung 3d block tile columns (rows: [`PIPE_BM`]).
pub const PIPES_BN: usize = 128;
/// Rung 3d `k` per tile: 64 values, so a row of the `A` tile is one
/// 128-byte line (eight 16-byte chunks) and a row of the `B` tile two.
pub const PIPES_BK: usize = 64;
/// Rung 3d tiles in flight (`cp.async` stages).
pub const PIPES_STAGES: usize = 3;
/// Rung 3d threads: four warps, 2 x 2, each a 64 x 64 warp tile.
pub const PIPES_THREADS: u32 = pipes_threads(PIPE_BM, PIPES_BN) as u32;
/// Rung 3d block rows per raster group ([`raster`]).
pub const PIPES_GROUP: usize = 8;

/// Threads of a rung-3d/3e block with a `bm x bn` tile: one warp per
/// 64 x 64 warp tile.
pub const fn pipes_threads(bm: usize, bn: usize) -> usize {
    32 * (bm / 64) * (bn / 64)
}

/// 16-byte chunks of one rung-3d/3e stage with a `bm x bn` block tile:
/// `As[bm][8]` then `Bs[64][bn / 8]` (rows of [`PIPES_BK`] values, no
/// padding).
pub const fn pipes_stage_chunks(bm: usize, bn: usize) -> usize {
    (bm + bn) * PIPES_BK / 8
}

/// Dynamic shared memory of rung 3d: [`PIPES_STAGES`] stages of 32 KiB,
/// no padding (98,304 bytes: two blocks per SM fit in an H100's 227 KiB).
pub const fn pipes_shared_bytes() -> usize {
    shared::shared_bytes::<U32x4>(0, PIPES_STAGES * pipes_stage_chunks(PIPE_BM, PIPES_BN))
}

/// Rung 3d's shared-memory swizzle: chunk `q` (16 bytes) of row `r` of a
/// tile whose rows are whole 128-byte lines is stored at chunk
/// `q ^ (r % 8)` of that row (only the chunk's position inside its line
/// changes).
///
/// Why it is conflict-free: the 32 banks are one 128-byte line. An
/// `ldmatrix` matrix is eight rows `r..r + 8` at the same logical chunk
/// `q`: their physical chunks `q ^ (r % 8)` are eight different positions
/// in the line, so the eight 16-byte reads cover all 32 banks once. A
/// warp's `cp.async` writes are whole rows (eight chunks of a line): a
/// permutation of the line, again all 32 banks once.
#[inline(always)]
pub const fn swizzle(r: usize, q: usize) -> usize {
    q ^ (r % 8)
}

/// The tile `(row, col)` that block `bid` (numbered row-major, `x`
/// fastest, as the hardware roughly starts them) computes in a grid of
/// `gx x gy` tiles: blocks walk down groups of `g` tile rows column by
/// column (the last group may be shorter), so the blocks running at once
/// share a few panels of `A` and `B` in L2 instead of all of `B`.
pub const fn raster(bid: usize, gx: usize, gy: usize, g: usize) -> (usize, usize) {
    let per = g * gx;
    let first = bid / per * g;
    let rows = if gy - first < g { gy - first } else { g };
    let i = bid % per;
    (first + i % rows, i / rows)
}

/// Rung 3d: rung 3b's tiles (128 x 128 x 64, four warps of 64 x 64, three
/// `cp.async` stages) with lean tile copies, XOR-swizzled shared memory,
/// fragments loaded one `k16` step ahead, and a rasterised block order.
///
/// Why it is faster than 3b: the lean copies. In rungs 3 to 3c each
/// 16-byte chunk copy (`copy_chunk16`) recomputes its row, column, bounds
/// checks and 64-bit products, inside a loop with a branch per chunk
/// between the aligned and the element-by-element path: several times as
/// many instructions per thread and tile as the warp's 128 `mma`, issued in
/// one burst during which that warp feeds no tensor core. The other three
/// changes below, on their own, left the rung at 3b's speed. The SASS
/// counts before and after, the measured speed-up and the history of this
/// rung are in `docs/book/src/workloads/matmul.md` ("The rungs", 3d).
///
/// What changed from 3b, and what each was meant to buy:
/// * **Lean copies** (`PipesCopy`): each thread's copy plan is made once,
///   and the aligned and general bodies are compiled apart, so the same 16
///   `cp.async` per tile cost a few integer instructions each.
/// * **Swizzle instead of padding** ([`swizzle`]): `As` rows are exactly
///   one 128-byte line and `Bs` rows two, chunk `q` of row `r` at
///   `q ^ (r % 8)`. `ldmatrix` stays conflict-free, and now so are the
///   `cp.async` writes (a warp writes four whole `A` rows or two whole `B`
///   rows: each line once), which padded rows were not; a stage is
///   32 KiB instead of 33.8, and the per-lane addresses are constants XOR
///   a step constant (one `lop3` per `ldmatrix`, the rest immediate
///   offsets).
/// * **Fragments a step ahead**: while the 32 `mma` of step `kk` issue,
///   the 4 + 4 `ldmatrix.x4` of step `kk + 1` are already in flight (two
///   sets of `A` fragments; each pair of `B` fragments is reloaded right
///   after its last `mma`: `pipes_step`), so the tensor cores do not
///   wait on shared-memory latency at each step. At the tile's last step the wait
///   for the next stage and the block's one barrier come *before* that
///   step's `mma`: the previous step's `mma` are still executing while
///   the warp waits, and the next tile's first fragments load before the
///   last `mma` of this one.
/// * **Rasterised blocks** ([`raster`], groups of [`PIPES_GROUP`] tile
///   rows): at 8192^3 the two blocks per SM of all 132 SMs cover about
///   8 x 33 tiles instead of 4 x 64, so a wave reads 8 panels of `A` and
///   33 of `B` (82 MiB) instead of 4 and all 64 (136 MiB), and more of it
///   hits L2.
///
/// Thread mapping: warp `w` owns rows `64 (w / 2)..+64` and columns
/// `64 (w % 2)..+64` of the block tile (4 x 8 accumulator fragments). Lane
/// `l` names, for `ldmatrix`, row `l % 16` of each 16-row block of `A` at
/// chunk `2 kk + l / 16`, and `k` row `16 kk + l % 16` of `B` at chunk
/// `8 (w % 2) + 2 nj + l / 16`; since every such row is `l % 8` modulo 8,
/// the swizzled chunk is `2 kk ^ s` (and `2 nj ^ s`) with the lane's
/// `s = (l / 16) ^ (l % 8)`. Copies: thread `t` copies `A` rows
/// `t / 8 + 16 j` at chunk `t % 8` and `B` rows `t / 16 + 8 j` at chunk
/// `t % 16` (`j < 8`), so its swizzled chunk is the same for every `j`.
///
/// Pipeline per tile `t` (4 steps): steps 0 to 2 issue their 32 `mma`
/// while loading the next step's fragments; step 3 first waits for tile
/// `t + 1` (`wait_group 1`) and synchronises, then issues its `mma` while
/// loading tile `t + 1`'s first fragments. After step 0 the copy of tile
/// `t + 2` starts, into the stage tile `t - 1` used (every warp finished
/// reading it before the barrier of tile `t - 1`'s step 3): one barrier
/// per tile: the steps of [`CpAsyncPipeline`], with the wait moved before
/// step 3.
#[kernel(launch_bounds(128, 2), instances(Bf16, F16))]
pub fn matmul_pipes<T: Half16>(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    pipes_body::<T, PIPE_BM, PIPES_BN, PIPES_STAGES>(a, b, c, m, n, k);
}

/// Where a rung-3d warp finds one `k16` step's fragments in a swizzled
/// stage: the stage's first chunk, the step, and the lane's terms (see
/// [`matmul_pipes`]): `a_lane` and `b_lane` its row's first chunk in
/// `As` and `Bs`, `s` its swizzle term; `a_ch` is the chunks of `As` (where
/// `Bs` starts) and `bld` the chunks of a `Bs` row (block tile columns / 8).
#[derive(Clone, Copy)]
struct PipesAt {
    base: usize,
    kk: usize,
    a_lane: usize,
    b_lane: usize,
    s: usize,
    a_ch: usize,
    bld: usize,
}

impl PipesAt {
    /// `ldmatrix.x4` of the `A` fragment of the warp's 16-row block `mi`.
    #[inline(always)]
    fn a(self, sm: SharedSlice<U32x4>, mi: usize) -> FragA16 {
        let ca = self.base + self.a_lane + 16 * (PIPES_BK / 8) * mi + (self.s ^ (2 * self.kk));
        FragA16(mma::ldmatrix_x4(sm, ca))
    }
    /// `ldmatrix.x4.trans` of the `B` fragments of the warp's 8-column
    /// blocks `2 nj` and `2 nj + 1`.
    #[inline(always)]
    fn b(self, sm: SharedSlice<U32x4>, nj: usize, fb: &mut [FragB16; 8]) {
        let rows = 16 * self.bld * self.kk;
        let cb = self.base + self.a_ch + self.b_lane + rows + (self.s ^ (2 * nj));
        let r = mma::ldmatrix_x4_trans(sm, cb);
        fb[2 * nj] = FragB16([r[0], r[1]]);
        fb[2 * nj + 1] = FragB16([r[2], r[3]]);
    }
}

/// One `k16` step of a rung-3d warp (64 x 64: 4 x 8 `mma`) on the
/// fragments `fa`, `fb`, loading the next step's fragments from `next`
/// (when given) as it goes: the 4 `A` fragments into `fa_next` first,
/// then each pair of `B` fragments into `fb` right after the last `mma`
/// that reads the pair (so only `A` needs two register sets: 16 registers
/// fewer than two full sets, which is what keeps the rung from spilling;
/// the counts are in `docs/book/src/workloads/matmul.md`).
#[inline(always)]
fn pipes_step<T: Half16>(
    acc: &mut [[FragC; 8]; 4],
    sm: SharedSlice<U32x4>,
    fa: &[FragA16; 4],
    fb: &mut [FragB16; 8],
    fa_next: &mut [FragA16; 4],
    next: Option<PipesAt>,
) {
    if let Some(at) = next {
        unroll!(mi in [0, 1, 2, 3] {
            fa_next[mi] = at.a(sm, mi);
        });
    }
    unroll!(nj in [0, 1, 2, 3] {
        unroll!(h in [0, 1] {
            unroll!(mi in [0, 1, 2, 3] {
                mma::mma_m16n8k16::<T>(&mut acc[mi][2 * nj + h], &fa[mi], &fb[2 * nj + h]);
            });
        });
        if let Some(at) = next {
            at.b(sm, nj, fb);
        }
    });
}

/// One thread's share of the copy of a rung-3d/3e stage: a `BM x 64`
/// tile of `A` and a `64 x BN` tile of `B`, 16-byte chunks, swizzled.
///
/// Thread `t` of `threads` copies `A` rows `ar + a_step j` (`ar = t / 8`,
/// `a_step = threads / 8`) at chunk `aq = t % 8`, and `B` rows
/// `br + b_step j` (`br = t / bld`, `b_step = threads / bld`, `bld = BN / 8`
/// chunks a row) at chunk `bq = t % bld`: both row steps are multiples of
/// 8, so the swizzled chunk is the same for every `j`.
///
/// When every row of `A` and `B` is 16-byte aligned (`k` and `n`
/// multiples of 8) the plan is made once: the 16-byte group of the
/// thread's first chunk in tile 0 (`a_g`, `b_g`), the groups between its
/// chunks `j` and `j + 1` (`a_gj`, `b_gj`) and between tiles (`A`: 8,
/// `b_gt`), which of its `A` rows are inside `m` (bit `j` of `a_rows`) and
/// whether its `B` column is inside `n`. Per chunk and tile that leaves an
/// add, a compare and the `cp.async`, about 12 instructions. (The
/// general [`copy_chunk16`], the other path, recomputes the row, column,
/// bounds and products of every chunk: in rungs 3 to 3c, several times
/// more integer instructions per tile than `mma`; see
/// [`matmul_pipes`].)
///
/// The tile-derived values (`bld`, the steps, the counts per thread) are
/// fields, not associated constants: they fold to constants after
/// inlining all the same, but a version with associated constants changed
/// ptxas's schedule of the rung, and it is the schedule measured on the
/// device that stays (`docs/book/src/workloads/matmul.md`, 3d).
#[derive(Clone, Copy)]
struct PipesCopy {
    m: usize,
    n: usize,
    k: usize,
    bm: usize,
    bn: usize,
    ar: usize,
    aq: usize,
    br: usize,
    bq: usize,
    a_step: usize,
    b_step: usize,
    a_dst: usize,
    b_dst: usize,
    bld: usize,
    a_per: usize,
    b_per: usize,
    a_g: usize,
    a_gj: usize,
    b_g: usize,
    b_gj: usize,
    b_gt: usize,
    a_rows: u32,
    b_col: bool,
}

impl PipesCopy {
    /// Thread `t`'s plan for the block tile at `(bm, bn)` of `C` (`m x n`,
    /// depth `k`).
    #[inline(always)]
    fn new<const BM: usize, const BN: usize>(
        t: usize,
        bm: usize,
        bn: usize,
        m: usize,
        n: usize,
        k: usize,
    ) -> Self {
        const ALD: usize = PIPES_BK / 8;
        let (threads, bld) = (pipes_threads(BM, BN), BN / 8);
        let (ar, aq, br, bq) = (t / 8, t % 8, t / bld, t % bld);
        let (a_step, b_step) = (threads / 8, threads / bld);
        let a_per = BM * ALD / threads;
        let mut a_rows = 0u32;
        for j in 0..a_per {
            a_rows |= ((bm + ar + a_step * j < m) as u32) << j;
        }
        PipesCopy {
            m,
            n,
            k,
            bm,
            bn,
            ar,
            aq,
            br,
            bq,
            a_step,
            b_step,
            a_dst: ar * ALD + swizzle(ar, aq),
            b_dst: BM * ALD + br * bld + swizzle(br, bq),
            bld,
            a_per,
            b_per: PIPES_BK * bld / threads,
            a_g: ((bm + ar) * k + 8 * aq) / 8,
            a_gj: a_step * k / 8,
            b_g: (br * n + bn + 8 * bq) / 8,
            b_gj: b_step * n / 8,
            b_gt: PIPES_BK * n / 8,
            a_rows,
            b_col: bn + 8 * bq < n,
        }
    }

    /// Starts the copies of tile `tile` (`k` from `64 tile`) into the
    /// stage at chunk `base` of `sm` (not committed); `FAST`: every row of
    /// `A` and `B` is 16-byte aligned.
    #[inline(always)]
    fn issue<const FAST: bool>(
        &self,
        sm: SharedSlice<U32x4>,
        a: DeviceSlice<u16>,
        b: DeviceSlice<u16>,
        base: usize,
        tile: usize,
    ) {
        const ALD: usize = PIPES_BK / 8;
        let (k0, bld) = (tile * PIPES_BK, self.bld);
        let (m, n, k, bm, bn) = (self.m, self.n, self.k, self.bm, self.bn);
        let (ar, aq, br, bq) = (self.ar, self.aq, self.br, self.bq);
        let (a_step, b_step) = (self.a_step, self.b_step);
        if FAST {
            let a_col = k0 + 8 * aq < k;
            unroll!(j in [0, 1, 2, 3, 4, 5, 6, 7] {
                if j < self.a_per {
                    let valid = a_col && (self.a_rows >> j) & 1 != 0;
                    let at = base + self.a_dst + a_step * ALD * j;
                    let g = self.a_g + ALD * tile + self.a_gj * j;
                    // SAFETY: `at` is inside the stage at `base`; when
                    // `valid`, row `bm + ar + a_step j < m` and column
                    // `k0 + 8 aq < k` with `k` a multiple of 8, so group
                    // `g` is inside `a` (256-byte aligned).
                    unsafe { sm.copy_async(at, a, g, valid) };
                }
            });
            unroll!(j in [0, 1, 2, 3, 4, 5, 6, 7] {
                if j < self.b_per {
                    let valid = self.b_col && k0 + br + b_step * j < k;
                    let at = base + self.b_dst + b_step * bld * j;
                    let g = self.b_g + self.b_gt * tile + self.b_gj * j;
                    // SAFETY: as above, with row `k0 + br + b_step j < k`
                    // and column `bn + 8 bq < n`, `n` a multiple of 8.
                    unsafe { sm.copy_async(at, b, g, valid) };
                }
            });
        } else {
            let (a_al, b_al) = (k.is_multiple_of(8), n.is_multiple_of(8));
            let (a_src, b_src) = RowMajor::operands(a, b, [m, n, k], [a_al, b_al]);
            for j in 0..self.a_per {
                let at = base + self.a_dst + a_step * ALD * j;
                copy_chunk16(sm, at, a_src, bm + ar + a_step * j, k0 + 8 * aq);
            }
            for j in 0..self.b_per {
                let at = base + self.b_dst + b_step * bld * j;
                copy_chunk16(sm, at, b_src, k0 + br + b_step * j, bn + 8 * bq);
            }
        }
    }
}

/// Rung 3d's body (see [`matmul_pipes`]) for a `BM x BN` block tile
/// of `(BM / 64) x (BN / 64)` warps, each 64 x 64, tiles 64 deep and an
/// `S`-stage [`CpAsyncPipeline`] whose wait comes before the last step of
/// the previous tile. Rung 3d is `<128, 128, 3>`, 3e `<256, 128, 4>`.
///
/// The body is compiled twice, for aligned rows (`k` and `n` multiples of
/// 8: the lean copies of [`PipesCopy`]) and for the rest, so that neither
/// keeps the other's copy state in registers (with both, ptxas spilled).
#[inline(always)]
fn pipes_body<T: Half16, const BM: usize, const BN: usize, const S: usize>(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    if k.is_multiple_of(8) && n.is_multiple_of(8) {
        pipes_main::<T, BM, BN, S, true>(a, b, c, m, n, k);
    } else {
        pipes_main::<T, BM, BN, S, false>(a, b, c, m, n, k);
    }
}

/// [`pipes_body`] for rows aligned (`FAST`) or not.
#[inline(always)]
fn pipes_main<T: Half16, const BM: usize, const BN: usize, const S: usize, const FAST: bool>(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    const BK: usize = PIPES_BK;
    const ALD: usize = BK / 8;
    // Four `k16` steps per tile, an even number: step 0 of every tile uses
    // fragment set 0. Rows of whole 128-byte lines for the swizzle.
    const { assert!(BK == 64 && BM.is_multiple_of(64) && BN.is_multiple_of(64)) };
    // At most eight chunks of each operand per thread and tile (`unroll!`).
    const { assert!(BM * BK / 8 <= 8 * pipes_threads(BM, BN)) };
    const { assert!(BK * BN / 8 <= 8 * pipes_threads(BM, BN)) };
    let bld = BN / 8;
    let a_ch = BM * ALD;
    let stage = pipes_stage_chunks(BM, BN);
    let (m, n, k) = (m as usize, n as usize, k as usize);
    check_lengths(a, b, c, m, n, k);
    let sm = shared::dynamic_shared::<U32x4>(0, S * stage);
    let t = thread::thread_idx_x() as usize;
    let l = warp::lane_id() as usize;
    let w = t / 32;
    let (wm, wn) = (w / (BN / 64), w % (BN / 64));
    let gx = thread::grid_dim_x() as usize;
    let bid = thread::block_idx_y() as usize * gx + thread::block_idx_x() as usize;
    let (tr, tc) = raster(bid, gx, thread::grid_dim_y() as usize, PIPES_GROUP);
    let (bm, bn) = (tr * BM, tc * BN);
    let copy = PipesCopy::new::<BM, BN>(t, bm, bn, m, n, k);
    let issue = |st: usize, tile: usize| copy.issue::<FAST>(sm, a, b, st * stage, tile);
    let s = (l / 16) ^ (l % 8);
    let (a_lane, b_lane) = ((64 * wm + l % 16) * ALD, (l % 16) * bld + 8 * wn);
    let at = |base: usize, kk: usize| PipesAt {
        base,
        kk,
        a_lane,
        b_lane,
        s,
        a_ch,
        bld,
    };
    let mut acc = [[FragC::default(); 8]; 4];
    let mut fa = [[FragA16::default(); 4]; 2];
    let mut fb = [FragB16::default(); 8];
    let pipe = CpAsyncPipeline::<S>::new(k.div_ceil(BK));
    let ntiles = pipe.tiles();
    pipe.prologue(issue);
    pipe.wait_oldest();
    unroll!(mi in [0, 1, 2, 3] {
        fa[0][mi] = at(0, 0).a(sm, mi);
    });
    unroll!(nj in [0, 1, 2, 3] {
        at(0, 0).b(sm, nj, &mut fb);
    });
    // The stage being read and the stage the next copy fills.
    let (mut rd, mut wr) = (0, S - 1);
    let mut tile = 0;
    while tile < ntiles {
        let base = rd * stage;
        rd = if rd + 1 == S { 0 } else { rd + 1 };
        unroll!(kk in [0, 1, 2, 3] {
            let next = if kk < 3 {
                Some(at(base, kk + 1))
            } else if tile + 1 < ntiles {
                pipe.wait_oldest();
                Some(at(rd * stage, 0))
            } else {
                None
            };
            let [f0, f1] = &mut fa;
            let (cur, nxt) = if kk.is_multiple_of(2) { (&*f0, f1) } else { (&*f1, f0) };
            pipes_step::<T>(&mut acc, sm, cur, &mut fb, nxt, next);
            if kk == 0 {
                pipe.refill(tile, wr, issue);
                wr = if wr + 1 == S { 0 } else { wr + 1 };
            }
        });
        tile += 1;
    }
    store_warp16::<T, 4, 8>(c, &acc, bm + 64 * wm, bn + 64 * wn, m, n);
}

/// Rung 3e block tile rows (columns: [`PIPES_BN`]).
pub const PIPET_BM: usize = 256;
/// Rung 3e tiles in flight (`cp.async` stages, 48 KiB each).
pub const PIPET_STAGES: usize = 4;
/// Rung 3e threads: eight warps, 4 x 2, each a 64 x 64 warp tile.
pub const PIPET_THREADS: u32 = pipes_threads(PIPET_BM, PIPES_BN) as u32;

/// Dynamic shared memory of rung 3e: [`PIPET_STAGES`] stages of a
/// 256 x 64 `A` tile and a 64 x 128 `B` tile, swizzled, no padding
/// (196,608 bytes: one block per SM).
pub const fn pipet_shared_bytes() -> usize {
    shared::shared_bytes::<U32x4>(0, PIPET_STAGES * pipes_stage_chunks(PIPET_BM, PIPES_BN))
}

/// Rung 3e: rung 3d with 256 x 128 block tiles, eight warps and four
/// stages.
///
/// What it tries: a 128 x 128 block tile brings `(128 + 128) k` values
/// into shared memory for `128 * 128 k` multiply-adds (16 GiB from L2 at
/// 8192^3); a 256 x 128 tile brings `(256 + 128) k` for twice the work, a
/// quarter less traffic per FLOP. The block has the 256 threads of two 3d
/// blocks (one block per SM: its threads take the whole register file),
/// and 192 KiB of shared memory holds four stages, three tiles in flight.
///
/// What it teaches: it is not faster than 3d at square sizes. With L2
/// traffic no longer the limit, what decides is latency hiding: 3d's two
/// independent blocks per SM wait at their barriers at different times,
/// while 3e's one barrier stops all eight warps of the SM at once. The
/// figures (and the dropped 128 x 256 transpose) are in
/// `docs/book/src/workloads/matmul.md` ("The rungs", 3e).
///
/// Thread mapping as 3d with warp `w` at rows `64 (w / 2)`, columns
/// `64 (w % 2)`; copies: thread `t` copies `A` rows `t / 8 + 32 j`
/// (`j < 8`) at chunk `t % 8` and `B` rows `t / 16 + 16 j` (`j < 4`) at
/// chunk `t % 16`. Shared layout per stage: `As[256][8]` then `Bs[64][16]`
/// (16-byte chunks, swizzled as [`swizzle`]).
#[kernel(launch_bounds(256, 1), instances(Bf16, F16))]
pub fn matmul_pipet<T: Half16>(
    a: DeviceSlice<u16>,
    b: DeviceSlice<u16>,
    c: DeviceSliceMut<u16>,
    m: u32,
    n: u32,
    k: u32,
) {
    pipes_body::<T, PIPET_BM, PIPES_BN, PIPET_STAGES>(a, b, c, m, n, k);
}
