//! Batches: the periodograms of many light curves (ragged lengths) on one
//! shared frequency grid, in one launch.
//!
//! Curve `c` owns samples `offsets[c] .. offsets[c + 1]` of a table built by
//! the host (times centred per curve, weights normalised per curve, values
//! centred when asked) and four scalars `curves[4c .. 4c + 4] = (sum w, sum w
//! y, sum w y^2, scale)`; `fit_mean` and `mode` are the batch's. The output
//! is `out[c nf + k]`, curves by rows. The model is always the floating-mean
//! one of [`general`](super::general) (SciPy's classic periodogram is its
//! special case with unit weights, no mean fit and the `psd` scale).
//!
//! Survey curves are short (a few hundred samples) and the grids coarse
//! (a few samples per peak), which is where per-(sample, frequency) work is
//! unavoidable: the Taylor rung needs `|2 tau| < 0.05` over a run, i.e.
//! hundreds of frequencies per peak width. So the even-grid kernel is rung 9
//! made for batches: runs of [`BATCH_RUN_F32`] frequencies per thread, one
//! anchor per (sample, run) and a rotation per step, 11 FP32 operations per
//! (sample, frequency) and no SFU work but the anchors. Uneven grids get
//! the direct kernel.

use super::general::{GEN_STRIDE, gen_frequency, gen_value, gen_value_d, low_phase};
use super::*;

/// Threads per block of the batch kernels.
pub const BATCH_BLOCK: u32 = 128;
/// Frequencies per thread of [`lomb_batch_rotate_f32`].
pub const BATCH_RUN_F32: usize = 16;
/// Frequencies per thread of [`lomb_batch_rotate_f64`].
pub const BATCH_RUN_F64: usize = 8;
/// Values per sample of the batch rotation table: `(alpha_hi, alpha_lo,
/// beta_hi, beta_lo, 1 - cos(step u), sin(step u), w y, w)`, `alpha = start
/// u`, `beta = step u` modulo 2 pi, `u = x - x0` of the sample's curve.
pub const BATCH_ROT_STRIDE: usize = 8;
/// Scalars per curve: `(sum w, sum w y, sum w y^2, scale, h)`, `h` the
/// largest `|x - x0|` of the curve.
pub const BATCH_CURVE_PARAMS: usize = 5;

/// Curve `c`'s sample range and model ([`BATCH_CURVE_PARAMS`]); traps on a
/// malformed batch.
#[inline(always)]
fn curve<T: Real>(
    offsets: &DeviceSlice<u32>,
    curves: &DeviceSlice<T>,
    c: usize,
    n: usize,
    fit_mean: u32,
    mode: u32,
) -> (usize, usize, GenModel<T>) {
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
        h: curves.get(q + 4),
        fit_mean: fit_mean != 0,
        mode,
    };
    (j0, j1, model)
}

/// The body of [`lomb_batch_direct_f32`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn batch_direct<T: Pack4>(
    tab: DeviceSlice<T>,
    offsets: DeviceSlice<u32>,
    curves: DeviceSlice<T>,
    freqs: DeviceSlice<T>,
    freqs_lo: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    fit_mean: u32,
    mode: u32,
) {
    if !tab.len().is_multiple_of(GEN_STRIDE) {
        ptxlab_device::trap("lomb batch: the table must hold 4 values per sample");
    }
    let nc = offsets.len().saturating_sub(1);
    let nf = freqs.len();
    if nc * BATCH_CURVE_PARAMS != curves.len() || nc * nf != out.len() {
        ptxlab_device::trap("lomb batch: curves must hold 5 values and out nf values per curve");
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
            let (j0, j1, model) = curve(&offsets, &curves, ci, n, fit_mean, mode);
            // SAFETY: `i < nf = freqs.len()`.
            let w = unsafe { fr.get(i) };
            // SAFETY: `j1 <= n = tab.len() / 4` (`curve`); device buffers
            // are 16-byte aligned.
            let v = unsafe { gen_frequency(&tab, j0, j1, w, &k, &model) };
            out.set(ci * nf + i, v);
        }
        b += thread::grid_dim_x() as usize;
    }
}

/// The six sums of each frequency of one run over samples `j0..j1` of the
/// rotation table: an anchor at the run's first frequency (index `k0`),
/// then `R` rotations by `step u`. `VERSINE`: the sums of
/// [`finish_general_d`] (`[YD, YS, D, S, DD, DS]`), stepping `(d, s)` with
/// `d = 1 - cos` (two FMAs more per step, relative accuracy for phases near
/// 0); otherwise `[YC, YS, CC, CS, C, S]`, stepping `(c, s)`.
///
/// # Safety
/// `j1 <= tab.len() / 8`, and `tab` starts on a 16-byte boundary.
#[inline(always)]
#[allow(unused_assignments)] // the rotation after the last step is not read
unsafe fn rotate_sums<T: Pack4, const R: usize, const VERSINE: bool>(
    tab: &DeviceSlice<T>,
    j0: usize,
    j1: usize,
    k0: T,
) -> [[T; R]; 6] {
    let mut acc = [[T::ZERO; R]; 6];
    let mut j = j0 as u32;
    while j < j1 as u32 {
        // SAFETY: `j < j1 <= tab.len() / 8` (the caller's contract).
        let ([ah, al, bh, bl], [p, q, wy, wt]) = unsafe {
            (
                T::load4(tab, 2 * j as usize),
                T::load4(tab, 2 * j as usize + 1),
            )
        };
        // Anchor at the run's first frequency, then R rotations by `step u`
        // (`p = 1 - cos`, `q = sin`, from the host in f64).
        let r = T::anchor(ah, al, bh, bl, k0);
        let (mut s, c) = r.sincos();
        if VERSINE {
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
        } else {
            let mut c = c;
            unroll16!(f, {
                if f < R {
                    let wc = wt * c;
                    acc[0][f] = wy.mul_add(c, acc[0][f]);
                    acc[1][f] = wy.mul_add(s, acc[1][f]);
                    acc[2][f] = wc.mul_add(c, acc[2][f]);
                    acc[3][f] = wc.mul_add(s, acc[3][f]);
                    acc[4][f] += wc;
                    acc[5][f] = wt.mul_add(s, acc[5][f]);
                    if f + 1 < R {
                        (c, s) = (
                            (-q).mul_add(s, (-p).mul_add(c, c)),
                            q.mul_add(c, (-p).mul_add(s, s)),
                        );
                    }
                }
            });
        }
        j += 1;
    }
    acc
}

/// The body of [`lomb_batch_rotate_f32`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn batch_rotate<T: Pack4, const R: usize>(
    tab: DeviceSlice<T>,
    offsets: DeviceSlice<u32>,
    curves: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    start: T,
    step: T,
    fit_mean: u32,
    mode: u32,
) {
    if !tab.len().is_multiple_of(BATCH_ROT_STRIDE) {
        ptxlab_device::trap("lomb batch: the rotation table must hold 8 values per sample");
    }
    let nc = offsets.len().saturating_sub(1);
    let nf = out.len().checked_div(nc).unwrap_or(0);
    if nc * BATCH_CURVE_PARAMS != curves.len() || nc * nf != out.len() {
        ptxlab_device::trap("lomb batch: curves must hold 5 values and out nf values per curve");
    }
    let n = tab.len() / BATCH_ROT_STRIDE;
    let runs = nf.div_ceil(R);
    let per_curve = runs.div_ceil(BATCH_BLOCK as usize);
    let mut b = thread::block_idx_x() as usize;
    while b < nc * per_curve {
        let (ci, part) = (b / per_curve, b % per_curve);
        let r = part * BATCH_BLOCK as usize + thread::thread_idx_x() as usize;
        if r < runs {
            let (j0, j1, model) = curve(&offsets, &curves, ci, n, fit_mean, mode);
            let first = r * R;
            let k0 = T::from_f64(first as f64);
            // The versine form where any frequency of the run is below
            // GEN_LOW_PHASE (an end is, or the run crosses 0).
            let last = T::from_f64((first + R - 1) as f64);
            let (w0, w1) = (start + k0 * step, start + last * step);
            let low = low_phase(w0, model.h) || low_phase(w1, model.h) || w0 * w1 <= T::ZERO;
            // SAFETY: `j1 <= n = tab.len() / 8` (`curve`); device buffers
            // are 16-byte aligned.
            let acc = unsafe {
                if low {
                    rotate_sums::<T, R, true>(&tab, j0, j1, k0)
                } else {
                    rotate_sums::<T, R, false>(&tab, j0, j1, k0)
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

/// A batch of curves on an evenly spaced grid (f32), in one launch:
/// rung 9's rotation, made for many short curves and the floating-mean
/// model.
///
/// Thread mapping: block `b` is part `b % P` of curve `b / P` (`P =
/// ceil(runs / 128)`, grid-stride over `curves x P` blocks); its thread `t`
/// owns the run of [`BATCH_RUN_F32`] frequencies starting at `16 (128 part +
/// t)`. Every thread of a block walks the same curve's samples (a broadcast
/// of two 16-byte loads per sample, [`BATCH_ROT_STRIDE`]): one anchor
/// `sincos` at the run's first frequency from split phases
/// ([`Phase::anchor`]: any span up to [`SPLIT_PHASE_MAX_F32`]), then 16 steps
/// of 6 sums (7 FP32 operations) and a rotation (4 FMAs). The weighted sums
/// of the floating-mean model need no more: `SS = sum w - CC`. Per frequency
/// [`finish_general`] and [`normalize`] with the curve's scalars. No shared
/// memory, no barrier; 96 accumulators in registers. A run with a
/// frequency of `|w| h <` [`GEN_LOW_PHASE`] (the lowest of each curve)
/// steps `(1 - cos, sin)` instead and finishes with
/// [`finish_general_d`] (`rotate_sums`): two FMAs more per step, and the
/// mean-fitted variances keep f32 accuracy where every phase is near 0.
/// `start` and `step` are the grid's (`nf = out.len() / curves`).
#[kernel(launch_bounds(128))]
#[allow(clippy::too_many_arguments)]
pub fn lomb_batch_rotate_f32(
    tab: DeviceSlice<f32>,
    offsets: DeviceSlice<u32>,
    curves: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    start: f32,
    step: f32,
    fit_mean: u32,
    mode: u32,
) {
    batch_rotate::<f32, BATCH_RUN_F32>(tab, offsets, curves, out, start, step, fit_mean, mode);
}

/// A batch of curves on an evenly spaced grid (f64), as
/// [`lomb_batch_rotate_f32`] with runs of [`BATCH_RUN_F64`].
#[kernel(launch_bounds(128))]
#[allow(clippy::too_many_arguments)]
pub fn lomb_batch_rotate_f64(
    tab: DeviceSlice<f64>,
    offsets: DeviceSlice<u32>,
    curves: DeviceSlice<f64>,
    out: DeviceSliceMut<f64>,
    start: f64,
    step: f64,
    fit_mean: u32,
    mode: u32,
) {
    batch_rotate::<f64, BATCH_RUN_F64>(tab, offsets, curves, out, start, step, fit_mean, mode);
}

/// A batch of curves on any frequency grid (f32): [`lomb_gen_f32`]'s sums
/// per (curve, frequency). Block `b` is part `b % P` of curve `b / P` (`P =
/// ceil(nf / 128)`), thread `t` frequency `128 part + t`, looping over the
/// curve's samples (a broadcast: the whole block reads the same curve).
#[kernel(launch_bounds(128))]
#[allow(clippy::too_many_arguments)]
pub fn lomb_batch_direct_f32(
    tab: DeviceSlice<f32>,
    offsets: DeviceSlice<u32>,
    curves: DeviceSlice<f32>,
    freqs: DeviceSlice<f32>,
    freqs_lo: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    fit_mean: u32,
    mode: u32,
) {
    batch_direct(tab, offsets, curves, freqs, freqs_lo, out, fit_mean, mode);
}

/// A batch of curves on any frequency grid (f64), as [`lomb_batch_direct_f32`].
#[kernel(launch_bounds(128))]
#[allow(clippy::too_many_arguments)]
pub fn lomb_batch_direct_f64(
    tab: DeviceSlice<f64>,
    offsets: DeviceSlice<u32>,
    curves: DeviceSlice<f64>,
    freqs: DeviceSlice<f64>,
    freqs_lo: DeviceSlice<f64>,
    out: DeviceSliceMut<f64>,
    fit_mean: u32,
    mode: u32,
) {
    batch_direct(tab, offsets, curves, freqs, freqs_lo, out, fit_mean, mode);
}
