//! Rung 11: the three-term recurrence with anchors from tables.

use super::*;

use super::recurrence::{Sums, steps};

/// Frequencies per thread of the table-anchored kernels (f32).
pub const TAB_RUN_F32: usize = 16;
/// Frequencies per thread of the table-anchored kernels (f64).
pub const TAB_RUN_F64: usize = 8;
/// Threads of a block of the table-anchored kernels that share one
/// high-part anchor: thread `t = 16 h + l` (`l = t % 16`, `h = t / 16`).
pub const TAB_LO: usize = 16;
/// High-part anchors per block and sample (`BLOCK / TAB_LO`).
pub const TAB_HI: usize = BLOCK as usize / TAB_LO;
/// Samples per shared-memory chunk of the table-anchored kernels.
pub const TAB_CHUNK: usize = 64;

/// Dynamic shared memory of the table-anchored kernels: for a chunk of
/// [`TAB_CHUNK`] samples, the low-part rotations `cos`, `sin` (`TAB_LO` per
/// sample each), then the high-part anchors `cos`, `sin` (`TAB_HI` per
/// sample each), all of `T`.
pub const fn lomb_tab_shared_bytes<T>() -> usize {
    shared::shared_bytes::<T>(0, TAB_CHUNK * 2 * (TAB_LO + TAB_HI))
}

/// The body of the table-anchored kernels (rung 11), see [`lomb_tab`](fn@lomb_tab).
/// `SPLIT`: the `_long` kernels (the high anchors from split phases, the
/// table of [`rec_stride`]`(true)` values per sample).
#[inline(always)]
fn recurrence_tab<
    T: Pack4,
    const R: usize,
    const CHEBY: bool,
    const PIPE: bool,
    const SPLIT: bool,
>(
    tab: DeviceSlice<T>,
    lo: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    grid: Grid<T>,
    scale: T,
) {
    let Grid { start, step } = grid;
    const J: usize = TAB_CHUNK;
    let stride = rec_stride(SPLIT);
    let n = tab.len() / stride;
    if !tab.len().is_multiple_of(stride) || lo.len() != n * 2 * TAB_LO {
        ptxlab_device::trap(
            "lomb table anchors: the table must hold 4 (8 long) values per sample, lo 32",
        );
    }
    if thread::block_dim_x() != BLOCK {
        ptxlab_device::trap("lomb table anchors: blocks must have 128 threads");
    }
    let sz = core::mem::size_of::<T>();
    let lo_c = shared::dynamic_shared::<T>(0, J * TAB_LO);
    let lo_s = shared::dynamic_shared::<T>(J * TAB_LO * sz, J * TAB_LO);
    let hi_c = shared::dynamic_shared::<T>(2 * J * TAB_LO * sz, J * TAB_HI);
    let hi_s = shared::dynamic_shared::<T>((2 * J * TAB_LO + J * TAB_HI) * sz, J * TAB_HI);
    let nf = out.len();
    let groups = nf.div_ceil(R).div_ceil(BLOCK as usize);
    let t = thread::thread_idx_x() as usize;
    let (h, l) = (t / TAB_LO, t % TAB_LO);
    let nt = T::from_f64(n as f64);
    // Block-uniform loop over groups of 128 runs: every thread reaches the
    // barriers, including those whose run lies past the end.
    let mut g = thread::block_idx_x() as usize;
    while g < groups {
        let first = (g * BLOCK as usize + t) * R;
        let mut acc = Sums::<T, R>::new();
        let mut j0 = 0;
        while j0 < n {
            let m = if n - j0 < J { n - j0 } else { J };
            // The chunk's tables: low parts copied, high parts computed (one
            // precise sincos per sample and 16 threads).
            let mut i = t;
            while i < m * TAB_LO {
                let (jj, ll) = (i / TAB_LO, i % TAB_LO);
                let base = (j0 + jj) * 2 * TAB_LO + ll;
                lo_c.set(i, lo.get(base));
                lo_s.set(i, lo.get(base + TAB_LO));
                i += BLOCK as usize;
            }
            let mut i = t;
            while i < m * TAB_HI {
                let (jj, hh) = (i / TAB_HI, i % TAB_HI);
                let kh = T::from_f64(((g * BLOCK as usize + hh * TAB_LO) * R) as f64);
                let an = if SPLIT {
                    let e = 8 * (j0 + jj);
                    let (ah, al, bh, bl) =
                        (tab.get(e), tab.get(e + 1), tab.get(e + 2), tab.get(e + 3));
                    T::anchor(ah, al, bh, bl, kh)
                } else {
                    (start + kh * step) * tab.get(4 * (j0 + jj))
                };
                let (s, c) = an.sincos();
                hi_c.set(i, c);
                hi_s.set(i, s);
                i += BLOCK as usize;
            }
            sync_threads();
            // Sample `jj` of the chunk: `(y, p, q, sin, cos)` with the anchor.
            let fetch = |jj: usize| -> [T; 5] {
                // SAFETY: callers pass `jj < m`, so `j0 + jj < n = tab.len() /
                // stride`; device buffers are 16-byte aligned.
                let [yj, p, q] = unsafe {
                    if SPLIT {
                        let [yj, p, q, _] = T::load4(&tab, 2 * (j0 + jj) + 1);
                        [yj, p, q]
                    } else {
                        let [_, yj, p, q] = T::load4(&tab, j0 + jj);
                        [yj, p, q]
                    }
                };
                // SAFETY: `jj < m <= J`, `h < TAB_HI`, `l < TAB_LO`: inside
                // the views (`J * TAB_HI`, `J * TAB_LO` elements).
                let (hc, hs, lc, ls) = unsafe {
                    (
                        hi_c.get_unchecked(jj * TAB_HI + h),
                        hi_s.get_unchecked(jj * TAB_HI + h),
                        lo_c.get_unchecked(jj * TAB_LO + l),
                        lo_s.get_unchecked(jj * TAB_LO + l),
                    )
                };
                // Anchor: e^{i w_h x} e^{i l R step x}, one complex product.
                [
                    yj,
                    p,
                    q,
                    hs.mul_add(lc, hc * ls),
                    hc.mul_add(lc, -(hs * ls)),
                ]
            };
            let mut jj = 0;
            if PIPE {
                // Sample `jj + 1`'s loads and anchor are issued before sample
                // `jj`'s steps, so their latency hides behind them.
                let mut cur = fetch(0);
                while jj < m {
                    let nxt = fetch(if jj + 1 < m { jj + 1 } else { jj });
                    let [yj, p, q, s, c] = cur;
                    steps::<T, R, CHEBY>(&mut acc, yj, p, q, s, c);
                    cur = nxt;
                    jj += 1;
                }
            } else {
                while jj < m {
                    let [yj, p, q, s, c] = fetch(jj);
                    steps::<T, R, CHEBY>(&mut acc, yj, p, q, s, c);
                    jj += 1;
                }
            }
            sync_threads();
            j0 += J;
        }
        acc.store::<true>(&out, first, nt, scale);
        g += thread::grid_dim_x() as usize;
    }
}

/// Rung 11: the three-term recurrence of [`lomb_cheby`](fn@lomb_cheby)
/// (`CHEBY`; without it the rotation of [`lomb_rotate`](fn@lomb_rotate), for
/// grids whose step angles span too much for the three-term recurrence)
/// with its anchors from tables instead of a precise `sincos` per sample and
/// thread; `PIPE` is rung 11b, the sample loop software pipelined.
///
/// What rung 10 spends: per sample and thread, one precise `sincos` (about
/// 40 instructions in f32) for 16 steps of 6 FMAs, so a third of its issue
/// slots are anchors. Here the anchor of run `r = 128 g + 16 h + l` (block
/// `g`'s thread `t = 16 h + l`) at frequency `w_r = start + R r step` is
/// split as `w_r = W_gh + l R step`, and
///
/// ```text
/// e^{i w_r x_j} = e^{i W_gh x_j} * e^{i l R step x_j}   (one complex product: 4 FMAs)
/// ```
///
/// The low factor does not depend on the block: `lo[32 j + l]`, `lo[32 j +
/// 16 + l]` = `cos`, `sin(l R step x_j)`, `l < 16`, from the host in f64. The
/// high factor is one precise `sincos` per (sample, 16 threads), computed by
/// the block into shared memory. Each factor is within an ulp or so, so the
/// anchor is within a few ulp, like rung 10's. In f64 the anchors weigh
/// more than in f32 (a precise double `sincos` is about 60 instructions of
/// the half-rate FP64 pipe against 8 steps of 6 FMAs), so that is where the
/// tables pay most.
///
/// Thread mapping: block `g` (grid-stride over groups of 128 runs) thread `t`
/// owns frequencies `R (128 g + t) .. + R` of the grid `(start, step)`
/// ([`Grid`], by value; `R` = [`TAB_RUN_F32`] or [`TAB_RUN_F64`]); per
/// sample it reads `(x, y, p, q)` (16 bytes, a broadcast; the table of
/// [`lomb_cheby`](fn@lomb_cheby) with `CHEBY`, of
/// [`lomb_rotate`](fn@lomb_rotate) without), its high anchor (a broadcast
/// to 16 lanes) and its low factor (16 consecutive values: conflict-free).
///
/// The finish is [`finish_half`]: the tau angle's cosine and sine from the
/// double angle by half-angle formulas, no `atan2` or `sincos` (at the
/// material's 114 samples the finish is about a sixth of a thread's work).
///
/// Shared layout (elements of `T`, chunks of [`TAB_CHUNK`] = 64 samples):
/// `lo_cos[64][16]`, `lo_sin[64][16]`, `hi_cos[64][8]`, `hi_sin[64][8]`
/// (6 KiB in f32, 12 KiB in f64; [`lomb_tab_shared_bytes`]). Two barriers per
/// chunk. Blocks must have [`BLOCK`] = 128 threads (the kernel traps
/// otherwise).
///
/// `LONG` (long time spans): the block's high anchors from split phases,
/// `alpha + K beta` at the high frequency index `K` ([`Phase::anchor`]),
/// and the table of [`lomb_rotate`](fn@lomb_rotate)'s `LONG` instances (8
/// values per sample); the low factors come from the host in f64 as before
/// (exact to f32 for any span). The extra work is per (sample, 16 threads):
/// below one percent. Span in f32: up to `max |w| max |x - x0| <=`
/// [`SPLIT_PHASE_MAX_F32`]; the host runs it beyond [`PLAIN_PHASE_MAX_F32`]
/// (in f64 the low parts are zero; the reduction keeps the precise `sincos`
/// off its Payne-Hanek path).
///
/// `PIPE` (rung 11b): sample `j + 1`'s table entry, shared-memory factors
/// and anchor are loaded and computed before sample `j`'s steps, so the load
/// latency (an L1 hit and two shared loads, some 30 cycles each) overlaps
/// the recurrence instead of stalling the warp at the top of every sample.
/// The cost is the next sample's five values held across the steps.
///
/// The entries keep the names of the rungs: `lomb_cheby_tab_*` (`CHEBY`),
/// `lomb_rotate_tab_*`, `lomb_cheby_tabp_*` (`CHEBY`, `PIPE`) and
/// `lomb_rotate_tabp_*` (`PIPE`), each with a `_long` twin (`LONG`), for
/// `f32` (at least 4 blocks per SM) and `f64`.

#[kernel(
    launch_bounds(128),
    instances(
        <true, false, false, f32> => (launch_bounds(128, 4), name = "lomb_cheby_tab_f32"),
        <true, false, false, f64> => (name = "lomb_cheby_tab_f64"),
        <true, false, true, f32> => (launch_bounds(128, 4), name = "lomb_cheby_tab_long_f32"),
        <true, false, true, f64> => (name = "lomb_cheby_tab_long_f64"),
        <false, false, false, f32> => (launch_bounds(128, 4), name = "lomb_rotate_tab_f32"),
        <false, false, false, f64> => (name = "lomb_rotate_tab_f64"),
        <false, false, true, f32> => (launch_bounds(128, 4), name = "lomb_rotate_tab_long_f32"),
        <false, false, true, f64> => (name = "lomb_rotate_tab_long_f64"),
        <true, true, false, f32> => (launch_bounds(128, 4), name = "lomb_cheby_tabp_f32"),
        <true, true, false, f64> => (name = "lomb_cheby_tabp_f64"),
        <true, true, true, f32> => (launch_bounds(128, 4), name = "lomb_cheby_tabp_long_f32"),
        <true, true, true, f64> => (name = "lomb_cheby_tabp_long_f64"),
        <false, true, false, f32> => (launch_bounds(128, 4), name = "lomb_rotate_tabp_f32"),
        <false, true, false, f64> => (name = "lomb_rotate_tabp_f64"),
        <false, true, true, f32> => (launch_bounds(128, 4), name = "lomb_rotate_tabp_long_f32"),
        <false, true, true, f64> => (name = "lomb_rotate_tabp_long_f64"),
    )
)]
pub fn lomb_tab<const CHEBY: bool, const PIPE: bool, const LONG: bool, T: LombFloat>(
    tab: DeviceSlice<T>,
    lo: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    grid: Grid<T>,
    scale: T,
) {
    if T::SINGLE {
        recurrence_tab::<T, TAB_RUN_F32, CHEBY, PIPE, LONG>(tab, lo, out, grid, scale);
    } else {
        recurrence_tab::<T, TAB_RUN_F64, CHEBY, PIPE, LONG>(tab, lo, out, grid, scale);
    }
}
