//! Batches: the periodograms of many light curves (ragged lengths) on one
//! shared frequency grid, in one launch.
//!
//! Curve `c` owns samples `offsets[c] .. offsets[c + 1]` of a table built by
//! the host (times centred per curve, weights normalised per curve, values
//! centred when asked) and [`BATCH_CURVE_PARAMS`] scalars `curves[6c .. 6c +
//! 6]`; whether to fit the mean and the normalization are the batch's
//! ([`GenOptions`]). The output
//! is `out[c nf + k]`, curves by rows. The model is always the floating-mean
//! one of [`general`](super::general) (SciPy's classic periodogram is its
//! special case with unit weights, no mean fit and the `psd` scale).
//!
//! Survey curves are short (a few hundred samples) and the grids coarse
//! (a few samples per peak), which is where per-(sample, frequency) work is
//! unavoidable: the Taylor rung needs `|2 tau| < 0.05` over a run, i.e.
//! hundreds of frequencies per peak width. So the even-grid kernel is rung
//! 10 made for batches: runs of [`BATCH_RUN_F32`] frequencies per thread,
//! one anchor per (sample, run) and a three-term recurrence per step, 8 FP32
//! operations per (sample, frequency) (see [`lomb_batch_rotate`](fn@lomb_batch_rotate) for the
//! count and for the rotation it replaced, 11). Uneven grids get the direct
//! kernel.

use super::general::{GEN_STRIDE, gen_frequency, gen_value, gen_value_d, low_phase};
use super::*;

/// Threads per block of the batch kernels.
pub const BATCH_BLOCK: u32 = 128;
/// Frequencies per thread of [`lomb_batch_rotate`](fn@lomb_batch_rotate) (f32).
pub const BATCH_RUN_F32: usize = 16;
/// Frequencies per thread of [`lomb_batch_rotate`](fn@lomb_batch_rotate) (f64).
pub const BATCH_RUN_F64: usize = 8;
/// Values per sample of the batch even-grid table, three groups of four:
/// `(alpha_hi, alpha_lo, beta_hi, beta_lo)`, `(1 - cos beta, sin beta, y
/// sqrt w, sqrt w)`, `(cos p, sin p, 0, 0)`; `alpha = start u`, `beta = step
/// u` modulo 2 pi, `u = x - x0` of the sample's curve, `p = beta + gamma`
/// with the curve's shift `gamma` of the three-term recurrence (zeros where
/// the curve has none).
pub const BATCH_ROT_STRIDE: usize = 12;
/// Scalars per curve: `(sum w, sum w y, sum w y^2, scale, h, cheby)`, `h`
/// the largest `|x - x0|` of the curve, `cheby` 1 where the curve's table
/// holds the three-term recurrence's `(cos p, sin p)` (else 0: rotation).
/// `sum w` is the sum of the table's `(sqrt w)^2`.
pub const BATCH_CURVE_PARAMS: usize = 6;

/// One curve of a batch as a thread sees it: its samples `j0..j1` of the
/// table, its model (the batch's [`GenOptions`]), `h` the largest `|x -
/// x0|` of its times, and whether its table holds the three-term
/// recurrence's `(cos p, sin p)` (`cheby`).
struct Curve<T> {
    j0: usize,
    j1: usize,
    model: GenModel<T>,
    h: T,
    cheby: bool,
}

/// Curve `c` of a batch whose table holds `n` samples
/// ([`BATCH_CURVE_PARAMS`]); traps on a malformed batch.
#[inline(always)]
fn curve<T: Real>(
    offsets: &DeviceSlice<u32>,
    curves: &DeviceSlice<T>,
    c: usize,
    n: usize,
    opts: GenOptions,
) -> Curve<T> {
    let (j0, j1) = (offsets.get(c) as usize, offsets.get(c + 1) as usize);
    if j0 > j1 || j1 > n {
        ptxlab_device::trap("lomb batch: offsets must be non-decreasing and within the table");
    }
    let q = BATCH_CURVE_PARAMS * c;
    let model = GenModel {
        w_sum: curves.get(q),
        y_mean: curves.get(q + 1),
        yy: curves.get(q + 2),
        scale: curves.get(q + 3),
        opts,
    };
    Curve {
        j0,
        j1,
        model,
        h: curves.get(q + 4),
        cheby: curves.get(q + 5) != T::ZERO,
    }
}

/// The `(sin, cos)` of the batch kernels' anchors (phases from
/// [`Phase::anchor`], within about `2 pi + 1` of 0): in f32 the SFU
/// approximations (`sin.approx`, `cos.approx`: absolute error about 2^-21,
/// two instructions where the precise `sincos` takes about 25; rung 9b's
/// choice), in f64 the precise branch-free Cody-Waite `sincos` (valid far
/// beyond that range).
pub trait BatchAnchor: Pack4 {
    /// `(sin self, cos self)` for a reduced anchor phase.
    fn anchor_sincos(self) -> (Self, Self);
}

impl BatchAnchor for f32 {
    #[inline(always)]
    fn anchor_sincos(self) -> (f32, f32) {
        (
            ptxlab_device::math::fast::sin(self),
            ptxlab_device::math::fast::cos(self),
        )
    }
}

impl BatchAnchor for f64 {
    #[inline(always)]
    fn anchor_sincos(self) -> (f64, f64) {
        self.sincos_cw()
    }
}

/// The six sums of each frequency of one run over samples `j0..j1` of the
/// even-grid table in the versine form of [`finish_general_d`] (`[YD, YS, D,
/// S, DD, DS]`, `d = 1 - cos`): an anchor at the run's first frequency
/// (index `k0`, precise `sincos`), then `R` rotations of `(d, s)` by `step
/// u`, two FMAs more per step than a rotation of `(c, s)`, relative accuracy
/// for phases near 0. For the runs with a frequency below
/// [`GEN_LOW_PHASE`] only.
///
/// # Safety
/// `j1 <= tab.len() / 12`, and `tab` starts on a 16-byte boundary.
#[inline(always)]
#[allow(unused_assignments)] // the rotation after the last step is not read
unsafe fn versine_sums<T: Pack4, const R: usize>(
    tab: &DeviceSlice<T>,
    j0: usize,
    j1: usize,
    k0: T,
) -> [[T; R]; 6] {
    let mut acc = [[T::ZERO; R]; 6];
    let mut j = j0 as u32;
    while j < j1 as u32 {
        // SAFETY: `j < j1 <= tab.len() / 12` (the caller's contract).
        let ([ah, al, bh, bl], [p, q, ys, sw]) = unsafe {
            (
                T::load4(tab, 3 * j as usize),
                T::load4(tab, 3 * j as usize + 1),
            )
        };
        let (wy, wt) = (ys * sw, sw * sw);
        let r = T::anchor(ah, al, bh, bl, k0);
        let (mut s, c) = r.sincos();
        let mut d = versine(T::reduce_2pi(r), c);
        unroll16!(f, {
            if f < R {
                let wd = wt * d;
                acc[0][f] = wy.mul_add(d, acc[0][f]);
                acc[1][f] = wy.mul_add(s, acc[1][f]);
                acc[2][f] += wd;
                acc[3][f] = wt.mul_add(s, acc[3][f]);
                acc[4][f] = wd.mul_add(d, acc[4][f]);
                acc[5][f] = wd.mul_add(s, acc[5][f]);
                if f + 1 < R {
                    // d' = d + p (1 - d) + q s, s' = s (1 - p) + q (1 - d).
                    (d, s) = (
                        d + q.mul_add(s, (-p).mul_add(d, p)),
                        (-p).mul_add(s, s) + (-q).mul_add(d, q),
                    );
                }
            }
        });
        j += 1;
    }
    acc
}

/// The sums `[YC, YS, CC, CS, C, S]` of each frequency of one run over
/// samples `j0..j1` of the even-grid table, stepping the *weighted* pair
/// `(a, b) = sqrt(w) (cos, sin)`: then every sum is one FMA, `YC += (y
/// sqrt w) a`, `CC += a a`, `CS += a b`, `C += sqrt(w) a` (and the same
/// for `b`), six per step where `(cos, sin)` took seven (`w c` first).
/// Both steps are linear in `(a, b)`, so the weight rides along for free.
/// `CHEBY`: the three-term recurrence `x' = 2 cos(p) x - x_prev` (one FMA
/// per component) with the curve's shifted angle `p = step u + gamma`
/// (frequency `k0 + f` then carries the common phase `f gamma`, which the
/// periodogram does not see: see [`lomb_cheby`](fn@lomb_cheby)); the value before the
/// anchor is one rotation back by `p`. Otherwise the rotation by `step u`
/// (4 FMAs per step). `FIT`: take `C` and `S` (the floating mean); without
/// it they stay 0 and unused.
///
/// # Safety
/// `j1 <= tab.len() / 12`, and `tab` starts on a 16-byte boundary.
#[inline(always)]
#[allow(unused_assignments)] // the step after the last frequency is not read
unsafe fn weighted_sums<T: BatchAnchor, const R: usize, const CHEBY: bool, const FIT: bool>(
    tab: &DeviceSlice<T>,
    j0: usize,
    j1: usize,
    k0: T,
) -> [[T; R]; 6] {
    let mut acc = [[T::ZERO; R]; 6];
    let mut j = j0 as u32;
    while j < j1 as u32 {
        // SAFETY: `j < j1 <= tab.len() / 12` (the caller's contract).
        let ([ah, al, bh, bl], [p, q, ys, sw]) = unsafe {
            (
                T::load4(tab, 3 * j as usize),
                T::load4(tab, 3 * j as usize + 1),
            )
        };
        let (s0, c0) = T::anchor(ah, al, bh, bl, k0).anchor_sincos();
        let (mut a, mut b) = (sw * c0, sw * s0);
        macro_rules! add {
            ($f:ident) => {
                acc[0][$f] = ys.mul_add(a, acc[0][$f]);
                acc[1][$f] = ys.mul_add(b, acc[1][$f]);
                acc[2][$f] = a.mul_add(a, acc[2][$f]);
                acc[3][$f] = a.mul_add(b, acc[3][$f]);
                if FIT {
                    acc[4][$f] = sw.mul_add(a, acc[4][$f]);
                    acc[5][$f] = sw.mul_add(b, acc[5][$f]);
                }
            };
        }
        if CHEBY {
            // SAFETY: as above.
            let [cp, sp, _, _] = unsafe { T::load4(tab, 3 * j as usize + 2) };
            let tau = cp + cp;
            // One rotation back by p: the value at "frequency k0 - 1".
            let (mut ap, mut bp) = (a.mul_add(cp, b * sp), b.mul_add(cp, -(a * sp)));
            unroll16!(f, {
                if f < R {
                    add!(f);
                    if f + 1 < R {
                        let (an, bn) = (tau.mul_add(a, -ap), tau.mul_add(b, -bp));
                        (ap, bp, a, b) = (a, b, an, bn);
                    }
                }
            });
        } else {
            unroll16!(f, {
                if f < R {
                    add!(f);
                    if f + 1 < R {
                        // a' = a - p a - q b, b' = b - p b + q a (p = 1 - cos).
                        (a, b) = (
                            (-q).mul_add(b, (-p).mul_add(a, a)),
                            q.mul_add(a, (-p).mul_add(b, b)),
                        );
                    }
                }
            });
        }
        j += 1;
    }
    acc
}

/// The body of [`lomb_batch_rotate`](fn@lomb_batch_rotate).
#[inline(always)]
fn batch_rotate<T: BatchAnchor, const R: usize>(
    tab: DeviceSlice<T>,
    offsets: DeviceSlice<u32>,
    curves: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    grid: Grid<T>,
    opts: GenOptions,
) {
    if !tab.len().is_multiple_of(BATCH_ROT_STRIDE) {
        ptxlab_device::trap("lomb batch: the even-grid table must hold 12 values per sample");
    }
    let nc = offsets.len().saturating_sub(1);
    let nf = out.len().checked_div(nc).unwrap_or(0);
    if nc * BATCH_CURVE_PARAMS != curves.len() || nc * nf != out.len() {
        ptxlab_device::trap("lomb batch: curves must hold 6 values and out nf values per curve");
    }
    let n = tab.len() / BATCH_ROT_STRIDE;
    let runs = nf.div_ceil(R);
    let per_curve = runs.div_ceil(BATCH_BLOCK as usize);
    let mut b = thread::block_idx_x() as usize;
    while b < nc * per_curve {
        let (ci, part) = (b / per_curve, b % per_curve);
        let r = part * BATCH_BLOCK as usize + thread::thread_idx_x() as usize;
        if r < runs {
            let Curve {
                j0,
                j1,
                model,
                h,
                cheby,
            } = curve(&offsets, &curves, ci, n, opts);
            let first = r * R;
            let k0 = T::from_f64(first as f64);
            // The versine form where any frequency of the run is below
            // GEN_LOW_PHASE (an end is, or the run crosses 0).
            let last = T::from_f64((first + R - 1) as f64);
            let (w0, w1) = (grid.at(k0), grid.at(last));
            let low = low_phase(w0, h) || low_phase(w1, h) || w0 * w1 <= T::ZERO;
            // SAFETY: `j1 <= n = tab.len() / 12` (`curve`); device buffers
            // are 16-byte aligned.
            let acc = unsafe {
                match (low, cheby, opts.fit_mean()) {
                    (true, _, _) => versine_sums::<T, R>(&tab, j0, j1, k0),
                    (false, true, true) => weighted_sums::<T, R, true, true>(&tab, j0, j1, k0),
                    (false, true, false) => weighted_sums::<T, R, true, false>(&tab, j0, j1, k0),
                    (false, false, true) => weighted_sums::<T, R, false, true>(&tab, j0, j1, k0),
                    (false, false, false) => weighted_sums::<T, R, false, false>(&tab, j0, j1, k0),
                }
            };
            unroll16!(f, {
                if f < R && first + f < nf {
                    let sums = [
                        acc[0][f], acc[1][f], acc[2][f], acc[3][f], acc[4][f], acc[5][f],
                    ];
                    let v = if low {
                        gen_value_d(sums, &model)
                    } else {
                        gen_value(sums, &model)
                    };
                    out.set(ci * nf + first + f, v);
                }
            });
        }
        b += thread::grid_dim_x() as usize;
    }
}

/// A batch of curves on an evenly spaced grid, in one launch:
/// rung 10's three-term recurrence made for many short curves and the
/// floating-mean model (the name stays from the rotation it replaced, which
/// it keeps for the curves that need it).
///
/// Thread mapping: block `b` is part `b % P` of curve `b / P` (`P =
/// ceil(runs / 128)`, grid-stride over `curves x P` blocks); its thread `t`
/// owns the run of `R` frequencies starting at `R (128 part + t)` (`R` =
/// [`BATCH_RUN_F32`] = 16 in f32, [`BATCH_RUN_F64`] = 8 in f64). Every thread of a block walks the same curve's samples (a broadcast
/// of three 16-byte loads per sample, [`BATCH_ROT_STRIDE`]; the curve's
/// table is a few kB, so L1 serves all but the first warp). No shared
/// memory, no barrier; 96 accumulators in registers. Per (sample, run): one
/// anchor at the run's first frequency from split phases
/// ([`Phase::anchor`]: any span up to [`SPLIT_PHASE_MAX_F32`]) and its
/// `sincos` on the SFU ([`BatchAnchor`]). Per frequency [`finish_general`]
/// and [`normalize`] with the curve's scalars.
///
/// Why faster than the rotation (11 FP32 operations per (sample,
/// frequency)): per step it now costs 8. (1) The weight rides in the stepped
/// pair, `(a, b) = sqrt(w) (cos, sin)` (the host stores `sqrt w` and `y
/// sqrt w`), so each of the six sums `YC, YS, CC, CS, C, S` is one FMA
/// (`SS = sum w - CC`); the unweighted pair needed `w c` first (7). (2) The
/// curve's step angles are shifted by one `gamma` per curve (host:
/// `cheby_shift`, centred on pi/2 where `2 cos p` rounds harmlessly), and
/// the pair advances by `x' = 2 cos(p) x - x_prev`, one FMA per component
/// instead of the rotation's two; the shift adds the phase `f gamma` to
/// every sample of frequency `first + f` alike, which the periodogram (and
/// its floating mean) does not see. (3) The anchor's `sincos` is two SFU
/// instructions instead of about 25. Curves whose step angles span more than
/// `2 pi / 3` (grids coarser than about 3 frequencies per peak width) have
/// no shift and keep the rotation (with the weighted pair: 10 operations);
/// a run with a frequency of `|w| h <` [`GEN_LOW_PHASE`] (the lowest of
/// each curve) steps `(1 - cos, sin)` with a precise anchor instead and
/// finishes with [`finish_general_d`] (`versine_sums`): the mean-fitted
/// variances keep f32 accuracy where every phase is near 0. Without
/// `fit_mean` (SciPy's classic model) `C` and `S` are not taken: 6
/// operations per step. The measured times against the rotation, and what
/// is not yet accounted for, are in `docs/book/src/workloads/lomb-scargle.md`
/// ("Batches of curves"). `grid` is the frequency grid ([`Grid`], by
/// value; `nf = out.len() / curves`), `opts` whether to fit the mean and
/// the normalization, the same for every curve ([`GenOptions`], by value).
#[kernel(launch_bounds(128), instances(f32, f64))]
pub fn lomb_batch_rotate<T: LombFloat>(
    tab: DeviceSlice<T>,
    offsets: DeviceSlice<u32>,
    curves: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    grid: Grid<T>,
    opts: GenOptions,
) {
    if T::SINGLE {
        batch_rotate::<T, BATCH_RUN_F32>(tab, offsets, curves, out, grid, opts);
    } else {
        batch_rotate::<T, BATCH_RUN_F64>(tab, offsets, curves, out, grid, opts);
    }
}

/// A batch of curves on any frequency grid: [`lomb_gen`](fn@lomb_gen)'s sums
/// per (curve, frequency). Block `b` is part `b % P` of curve `b / P` (`P =
/// ceil(nf / 128)`), thread `t` frequency `128 part + t`, looping over the
/// curve's samples (a broadcast: the whole block reads the same curve).
/// `freqs`/`freqs_lo` the frequencies in two parts, `opts` as in
/// [`lomb_batch_rotate`](fn@lomb_batch_rotate).
#[kernel(launch_bounds(128), instances(f32, f64))]
pub fn lomb_batch_direct<T: Pack4>(
    tab: DeviceSlice<T>,
    offsets: DeviceSlice<u32>,
    curves: DeviceSlice<T>,
    freqs: DeviceSlice<T>,
    freqs_lo: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    opts: GenOptions,
) {
    if !tab.len().is_multiple_of(GEN_STRIDE) {
        ptxlab_device::trap("lomb batch: the table must hold 4 values per sample");
    }
    let nc = offsets.len().saturating_sub(1);
    let nf = freqs.len();
    if nc * BATCH_CURVE_PARAMS != curves.len() || nc * nf != out.len() {
        ptxlab_device::trap("lomb batch: curves must hold 6 values and out nf values per curve");
    }
    let fr = Freqs::<T, true>::new(freqs, freqs_lo);
    let n = tab.len() / GEN_STRIDE;
    let per_curve = nf.div_ceil(BATCH_BLOCK as usize);
    let k = T::trig_consts();
    let mut b = thread::block_idx_x() as usize;
    while b < nc * per_curve {
        let (ci, part) = (b / per_curve, b % per_curve);
        let i = part * BATCH_BLOCK as usize + thread::thread_idx_x() as usize;
        if i < nf {
            let c = curve(&offsets, &curves, ci, n, opts);
            // SAFETY: `i < nf = freqs.len()`.
            let w = unsafe { fr.get(i) };
            // SAFETY: `c.j1 <= n = tab.len() / 4` (`curve`); device buffers
            // are 16-byte aligned.
            let v = unsafe { gen_frequency(&tab, c.j0, c.j1, w, &k, &c.model, c.h) };
            out.set(ci * nf + i, v);
        }
        b += thread::grid_dim_x() as usize;
    }
}
