//! Rungs 9-10: recurrences over runs of frequencies on an even grid
//! (rotation, three-term).

use super::*;

/// frequency of a run to the next.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Rotation by `step x_j`: table `(x, y, 1 - cos, sin)`, 4 FMAs per step.
    Rotate,
    /// Three-term recurrence `c' = 2 cos(p) c - c_prev` with the shifted
    /// angle `p = step x_j + gamma`: table `(x, y, cos p, sin p)`, 2 FMAs.
    Cheby,
}

/// The per-frequency sums of one run (registers: every index is a constant).
pub(super) struct Sums<T, const R: usize> {
    pub(super) xc: [T; R],
    xs: [T; R],
    cc: [T; R],
    cs: [T; R],
}

impl<T: Real + Trig, const R: usize> Sums<T, R> {
    /// Zero sums.
    #[inline(always)]
    pub(super) fn new() -> Self {
        Sums {
            xc: [T::ZERO; R],
            xs: [T::ZERO; R],
            cc: [T::ZERO; R],
            cs: [T::ZERO; R],
        }
    }

    /// Writes the periodogram of the run's frequencies `first..first + R`
    /// that exist (`n` samples: `SS = n - CC`). `HALF` selects
    /// [`finish_half`] instead of [`finish`].
    #[inline(always)]
    pub(super) fn store<const HALF: bool>(
        self,
        out: &DeviceSliceMut<T>,
        first: usize,
        n: T,
        scale: T,
    ) {
        let Sums { xc, xs, cc, cs } = self;
        let fin = if HALF { finish_half::<T> } else { finish::<T> };
        unroll16!(k, {
            if k < R && first + k < out.len() {
                out.set(first + k, fin(xc[k], xs[k], cc[k], n - cc[k], cs[k], scale));
            }
        });
    }
}

#[allow(unused_assignments)] // the last step of a run is not read
/// One sample's `R` steps: accumulate `(c, s)` into frequency `k`, then step
/// to `k + 1` (rotation or three-term recurrence, see [`Step`]).
#[inline(always)]
pub(super) fn steps<T: Real, const R: usize, const CHEBY: bool>(
    acc: &mut Sums<T, R>,
    yj: T,
    p: T,
    q: T,
    mut s: T,
    mut c: T,
) {
    let mode = if CHEBY { Step::Cheby } else { Step::Rotate };
    let (mut sp, mut cp) = (T::ZERO, T::ZERO);
    let tau = p + p;
    unroll16!(k, {
        if k < R {
            acc.xc[k] = yj.mul_add(c, acc.xc[k]);
            acc.xs[k] = yj.mul_add(s, acc.xs[k]);
            acc.cc[k] = c.mul_add(c, acc.cc[k]);
            acc.cs[k] = c.mul_add(s, acc.cs[k]);
            let (c1, s1) = match mode {
                // c' = c - alpha c - beta s, s' = s - alpha s + beta c
                // (alpha = p = 1 - cos, beta = q = sin): two FMAs each.
                Step::Rotate => (
                    (-q).mul_add(s, (-p).mul_add(c, c)),
                    q.mul_add(c, (-p).mul_add(s, s)),
                ),
                // First step: rotate by the shifted angle (p = cos, q = sin);
                // then c_{k+1} = 2 cos(angle) c_k - c_{k-1}.
                Step::Cheby if k == 0 => (c.mul_add(p, -(s * q)), s.mul_add(p, c * q)),
                Step::Cheby => (tau.mul_add(c, -cp), tau.mul_add(s, -sp)),
            };
            cp = c;
            sp = s;
            c = c1;
            s = s1;
        }
    });
}

/// The body of the recurrence kernels: thread `t` owns runs of `R`
/// consecutive frequencies `start + (R r + k) step`, `k = 0..R`, runs
/// `r = t, t + T, ...` (`T` threads in the launch; `start`, `step` those of
/// the frequency grid `grid`). Per sample: one precise
/// `sincos` at the run's first frequency (the anchor), then `R` steps.
/// `SPLIT`: the `_long` kernels, anchors from split phases ([`rec_entry`]).
#[inline(always)]
fn recurrence<T: Pack4, const R: usize, const CHEBY: bool, const PIPE: bool, const SPLIT: bool>(
    tab: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    grid: Grid<T>,
    scale: T,
) {
    let stride = rec_stride(SPLIT);
    if !tab.len().is_multiple_of(stride) {
        ptxlab_device::trap("lomb recurrence: the table must hold 4 (8 long) values per sample");
    }
    let n = tab.len() / stride;
    let nf = out.len();
    let runs = nf.div_ceil(R);
    let nt = T::from_f64(n as f64);
    for r in thread::grid_stride(runs) {
        let first = r * R;
        let k0 = T::from_f64(first as f64);
        let w0 = grid.at(k0);
        let mut acc = Sums::<T, R>::new();
        // A 32-bit counter: the loop overhead is one add and one compare.
        let n32 = n as u32;
        if PIPE {
            // Software pipelining: the table entry and the anchor of sample
            // `j + 1` are computed in the same basic block as sample `j`'s R
            // steps (the branch-free Cody-Waite `sincos_cw`; the rare
            // argument beyond its range is fixed after the steps), so ptxas
            // interleaves the anchor's dependent chain with the recurrence's
            // instead of leaving the warp to wait on each in turn. Costs
            // registers: the next entry and anchor live across the steps.
            let mut e = (T::ZERO, [T::ZERO; 3]);
            if n32 > 0 {
                // SAFETY: `0 < n = tab.len() / stride`; device buffers are 16-byte aligned.
                e = unsafe { rec_entry::<T, SPLIT>(&tab, 0, w0, k0) };
            }
            let (mut s, mut c) = e.0.sincos();
            let mut j = 0u32;
            while j < n32 {
                let [yj, p, q] = e.1;
                let jn = if j + 1 < n32 { j + 1 } else { j };
                // SAFETY: `jn <= j < n = tab.len() / stride` or `jn = j + 1 <
                // n`; device buffers are 16-byte aligned.
                e = unsafe { rec_entry::<T, SPLIT>(&tab, jn as usize, w0, k0) };
                let an = e.0;
                let (sn, cn) = an.sincos_cw();
                steps::<T, R, CHEBY>(&mut acc, yj, p, q, s, c);
                (s, c) = if an.abs() <= T::CW_MAX {
                    (sn, cn)
                } else {
                    an.sincos()
                };
                j += 1;
            }
        } else {
            let mut j = 0u32;
            while j < n32 {
                // SAFETY: `j < n = tab.len() / stride`; device buffers are
                // 16-byte aligned.
                let (an, [yj, p, q]) = unsafe { rec_entry::<T, SPLIT>(&tab, j as usize, w0, k0) };
                // Anchor: exact (precise) sincos at the run's first frequency.
                let (s, c) = an.sincos();
                steps::<T, R, CHEBY>(&mut acc, yj, p, q, s, c);
                j += 1;
            }
        }
        acc.store::<false>(&out, first, nt, scale);
    }
}

/// Rung 9, below the SFU floor, evenly spaced frequencies only (the grid
/// `(start, step)` a [`Grid`], by value): each thread
/// takes a run of consecutive frequencies ([`ROT_RUN_F32`] = 16 in f32,
/// [`ROT_RUN_F64`] = 8 in f64: 4 x 8 f64 accumulators are 64 registers).
/// Per sample it computes one precise `sincos` at the run's first frequency
/// (the anchor), then advances `(cos, sin)` of `w x_j` to the next frequency
/// by a fixed rotation of angle `step * x_j`, written as two FMAs per
/// component. `tab[4j..4j+4] = (x_j, y_j, 1 - cos(step x_j), sin(step
/// x_j))`, from the host in f64: the `1 - cos` form keeps the small angle's
/// information that `cos` itself would round away. `SS = n - CC`, and `2
/// CS`, `CC - SS` give the tau angle (double angle), so per (sample,
/// frequency) it is 4 FMAs of rotation and 4 of accumulation, no SFU or
/// polynomial. Re-anchored every run, so the rotation error stays below a
/// few x 16 ulp. Accumulators: 4 x 16 registers in f32. The f32 instances
/// pipeline the sample loop (the next sample's anchor computed beside this
/// one's steps, see `recurrence`).
///
/// `LONG` (rung 9 for long time spans): each anchor's phase from split
/// parts, `alpha + k0 beta` ([`Phase::anchor`], `k0` the run's first
/// frequency index), instead of `w0 x` in one product. The table has 8
/// values per sample, `(alpha_hi, alpha_lo, beta_hi, beta_lo, y, 1 -
/// cos(step u), sin(step u), 0)` with `u = x - x0` ([`rec_stride`]); the
/// steps are unchanged (the host's f64 rotation angle is exact to f32
/// whatever the span). About ten more FP32 operations and one more 16-byte
/// load per (sample, run of 16): a few percent. Span in f32: up to `max |w|
/// max |x - x0| <=` [`SPLIT_PHASE_MAX_F32`]; the host runs it beyond
/// [`PLAIN_PHASE_MAX_F32`]. In f64 the low parts are zero and the reduction
/// keeps the precise `sincos` off its Payne-Hanek path beyond 2^20 rad.
#[kernel(
    launch_bounds(128),
    instances(
        <false, f32> => (launch_bounds(128, 4)),
        <false, f64>,
        <true, f32> => (launch_bounds(128, 4)),
        <true, f64>,
    )
)]
pub fn lomb_rotate<const LONG: bool, T: LombFloat>(
    tab: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    grid: Grid<T>,
    scale: T,
) {
    if T::SINGLE {
        recurrence::<T, ROT_RUN_F32, false, true, LONG>(tab, out, grid, scale);
    } else {
        recurrence::<T, ROT_RUN_F64, false, false, LONG>(tab, out, grid, scale);
    }
}

/// Rung 10, the three-term recurrence: 6 FMAs per (sample, frequency)
/// instead of the rotation's 8.
///
/// `cos(a + (k+1) p) = 2 cos(p) cos(a + k p) - cos(a + (k-1) p)`, and the same
/// for `sin`: one FMA per component and step. Its weakness is `2 cos(p)`
/// rounded: the step angle it encodes is off by `ulp / (2 sin p)`, which is
/// hopeless for the small angles `step x_j` of a fine grid. The way out is the
/// periodogram's time-shift invariance: adding the same phase to every
/// sample's angle at one frequency leaves `P` unchanged (tau absorbs it). So
/// the kernel steps by `p_j = step x_j + gamma`, with `gamma` chosen by the
/// host to centre all `p_j` on pi/2 (where `sin p_j >= 1/2`, and `2 cos p_j`
/// is small, so its rounding error is tiny); frequency `first + k` then
/// carries the common phase `k gamma`, which `P` does not see. In f64 the
/// recurrence saves more than in f32: a double FMA costs two issue cycles of
/// the half-rate FP64 pipe.
///
/// `tab[4j..4j+4] = (x_j, y_j, cos p_j, sin p_j)` (f64 on the host). The host
/// uses this kernel only when the `p_j` span at most 2 pi / 3 (else the
/// rotation kernel). Thread mapping, runs and anchors as
/// [`lomb_rotate`](fn@lomb_rotate): [`CHEBY_RUN_F32`] / [`CHEBY_RUN_F64`]
/// frequencies per thread.
///
/// `LONG`: split anchors as in [`lomb_rotate`](fn@lomb_rotate) (table
/// `(alpha_hi, alpha_lo, beta_hi, beta_lo, y, cos p, sin p, 0)`). Long
/// spans usually spread the step angles over more than 2 pi / 3, where the
/// host runs the rotation kernel instead.
#[kernel(
    launch_bounds(128),
    instances(
        <false, f32> => (launch_bounds(128, 4)),
        <false, f64>,
        <true, f32> => (launch_bounds(128, 4)),
        <true, f64>,
    )
)]
pub fn lomb_cheby<const LONG: bool, T: LombFloat>(
    tab: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    grid: Grid<T>,
    scale: T,
) {
    if T::SINGLE {
        recurrence::<T, CHEBY_RUN_F32, true, true, LONG>(tab, out, grid, scale);
    } else {
        recurrence::<T, CHEBY_RUN_F64, true, false, LONG>(tab, out, grid, scale);
    }
}
