//! Batches of light curves: many curves (ragged lengths) on one frequency
//! grid, one launch for all of them (`kernels_gpu::lomb::batch`). The batch
//! in memory, its device buffers, the run, the CPU reference of one curve,
//! and the best periods of each curve.

use super::input::even_grid;
use super::launch::{BatchBufs, Elem, launch_batch, use_long};
use super::model::{General, prepare_general, reference_general};
use super::phase::{Phases, centre, max_phase, mod_2pi, split};
use super::tables::cheby_shift;
use kernels_gpu::lomb::{BATCH_BLOCK, BATCH_CURVE_PARAMS, BATCH_ROT_STRIDE, GEN_STRIDE};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::runtime::{Buffer, Device, LaunchConfig};
use rayon::prelude::*;

/// Curves of a batch: their samples one after the other, and where each
/// curve starts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    /// Sample times of every curve, curve after curve.
    pub t: Vec<f64>,
    /// Values.
    pub y: Vec<f64>,
    /// Uncertainties (all curves or none).
    pub dy: Option<Vec<f64>>,
    /// `curves + 1` offsets: curve `c` is samples `offsets[c]..offsets[c + 1]`.
    pub offsets: Vec<usize>,
}

impl Batch {
    /// Curves in the batch.
    pub fn curves(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Curve `c`: `(t, y, dy)`.
    pub fn curve(&self, c: usize) -> (&[f64], &[f64], Option<&[f64]>) {
        let r = self.offsets[c]..self.offsets[c + 1];
        (
            &self.t[r.clone()],
            &self.y[r.clone()],
            self.dy.as_ref().map(|d| &d[r]),
        )
    }

    /// Checks the layout and the values: offsets from 0 to the sample count,
    /// non-decreasing, every curve with at least 2 samples; finite times
    /// and values, `dy` (when given) as long as `y`, finite and positive.
    pub fn validate(&self) -> Result<()> {
        let n = self.t.len();
        let bad = |d: String| Error::input("lomb-scargle batch", d);
        if self.y.len() != n {
            return Err(bad(format!(
                "t has {n} values and y has {}; they must have the same length",
                self.y.len()
            )));
        }
        if let Some(dy) = &self.dy
            && dy.len() != n
        {
            return Err(bad(format!(
                "dy has {} values and t has {n}; they must have the same length",
                dy.len()
            )));
        }
        if self.curves() == 0 {
            return Err(bad("the batch has no curves; give at least one".into()));
        }
        if self.offsets[0] != 0 || self.offsets[self.curves()] != n {
            return Err(bad(format!(
                "offsets must start at 0 and end at the sample count {n}; they run from {} to {}",
                self.offsets[0],
                self.offsets[self.curves()]
            )));
        }
        for c in 0..self.curves() {
            let (a, b) = (self.offsets[c], self.offsets[c + 1]);
            if b < a {
                return Err(bad(format!(
                    "offsets[{}] = {b} is below offsets[{c}] = {a}; they must not decrease",
                    c + 1
                )));
            }
            if b < a + 2 {
                return Err(bad(format!(
                    "curve {c} has {} samples (offsets {a}..{b}); each curve needs at least 2",
                    b.saturating_sub(a)
                )));
            }
        }
        for (name, v) in [("t", &self.t), ("y", &self.y)] {
            if let Some(i) = v.iter().position(|a| !a.is_finite()) {
                return Err(bad(format!(
                    "{name}[{i}] = {} is not finite; every value must be a finite number",
                    v[i]
                )));
            }
        }
        if let Some(dy) = &self.dy
            && let Some(i) = dy.iter().position(|d| !(d.is_finite() && *d > 0.0))
        {
            return Err(bad(format!(
                "dy[{i}] = {}; every uncertainty must be a finite number above 0",
                dy[i]
            )));
        }
        if n > u32::MAX as usize {
            return Err(bad(format!("{n} samples; at most 2^32 - 1 in one batch")));
        }
        Ok(())
    }
}

/// One curve of a batch, prepared: its table entries, its scalars and its
/// largest phase.
type Prepared<T> = (Vec<T>, [T; BATCH_CURVE_PARAMS], f64);

impl<T: Elem> BatchBufs<T> {
    /// Validates the batch and the grid, prepares every curve's model
    /// (centred times, weights, centred values, normalization) and uploads;
    /// the output (`curves x freqs`) is poisoned with NaN. An even grid gets
    /// the rotation kernel's table, any other grid the direct kernel's.
    pub fn new(dev: &Device, batch: &Batch, freqs: &[f64], g: General) -> Result<Self> {
        batch.validate()?;
        super::input::validate(&batch.t[..2], &batch.y[..2], freqs)?;
        let nc = batch.curves();
        let nf = freqs.len();
        ptxlab_common::cli::check_host_arrays(
            "lomb-scargle batch output",
            nc.saturating_mul(nf),
            std::mem::size_of::<T>(),
            2,
        )?;
        let grid = even_grid(freqs);
        let stride = if grid.is_some() {
            BATCH_ROT_STRIDE
        } else {
            GEN_STRIDE
        };
        // Curves are independent: prepare them on every core.
        let per_curve: Vec<Result<Prepared<T>>> = (0..nc)
            .into_par_iter()
            .map(|c| {
                let (t, y, dy) = batch.curve(c);
                let p = prepare_general(y, dy, g).map_err(|e| match e {
                    Error::Runtime(ptxlab_common::runtime::Error::Input { what, detail }) => {
                        Error::input(format!("{what} (curve {c})"), detail)
                    }
                    e => e,
                })?;
                let (_, u) = centre(t);
                let phase = max_phase(&u, freqs);
                // The three-term recurrence's shift for this curve (even
                // grids whose step angles span at most 2 pi / 3).
                let gamma = grid.and_then(|(_, step)| cheby_shift(&u, step));
                let mut tab = Vec::with_capacity(stride * t.len());
                let mut w_sum = 0.0;
                for ((&uj, &wy), &w) in u.iter().zip(&p.wy).zip(&p.w) {
                    match grid {
                        Some((start, step)) => {
                            // The weighted pair's factors: sqrt w and y sqrt w
                            // (w > 0: dy is positive), and sum w as the sum
                            // of the stored (sqrt w)^2.
                            let sw = T::from_f64(w.sqrt());
                            w_sum += sw.to_f64() * sw.to_f64();
                            let (ah, al) = split::<T>(mod_2pi(start * uj));
                            let (bh, bl) = split::<T>(mod_2pi(step * uj));
                            let h = 0.5 * step * uj;
                            tab.extend([ah, al, bh, bl]);
                            tab.extend(
                                [2.0 * h.sin() * h.sin(), (step * uj).sin(), wy / w.sqrt()]
                                    .map(T::from_f64),
                            );
                            tab.push(sw);
                            let (sp, cp) = gamma.map_or((0.0, 0.0), |g| (step * uj + g).sin_cos());
                            tab.extend([cp, sp, 0.0, 0.0].map(T::from_f64));
                        }
                        None => {
                            let wt = T::from_f64(w);
                            w_sum += wt.to_f64();
                            let (uh, ul) = split::<T>(uj);
                            tab.extend([uh, ul, T::from_f64(wy), wt]);
                        }
                    }
                }
                let h = u.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                let cheby = if gamma.is_some() { 1.0 } else { 0.0 };
                let params = [w_sum, p.y_mean, p.yy, p.scale, h, cheby].map(T::from_f64);
                Ok((tab, params, phase))
            })
            .collect();
        let mut tab = Vec::with_capacity(stride * batch.t.len());
        let mut curves = Vec::with_capacity(BATCH_CURVE_PARAMS * nc);
        let mut phase = 0.0f64;
        for r in per_curve {
            let (t, p, ph) = r?;
            tab.extend(t);
            curves.extend(p);
            phase = phase.max(ph);
        }
        use_long::<T>(phase, Phases::Long)?;
        let offsets: Vec<u32> = batch.offsets.iter().map(|&o| o as u32).collect();
        let freqs_buf = match grid {
            Some(_) => None,
            None => {
                let (fh, fl): (Vec<T>, Vec<T>) = freqs.iter().map(|&v| split::<T>(v)).unzip();
                Some((dev.upload(&fh)?, dev.upload(&fl)?))
            }
        };
        Ok(BatchBufs {
            tab: dev.upload(&tab)?,
            offsets: dev.upload(&offsets)?,
            curves: dev.upload(&curves)?,
            freqs: freqs_buf,
            grid,
            nf,
            out: dev.alloc_filled(nc * nf, T::from_f64(f64::NAN))?,
            opts: g.kernel_options(),
        })
    }
}

/// The launch shape of a batch: one block per curve and 128 runs (even
/// grid) or 128 frequencies, the kernels grid-stride beyond 2^31 - 1 blocks.
pub fn batch_config<T: Elem>(b: &BatchBufs<T>) -> Result<LaunchConfig> {
    let per_curve = match b.freqs {
        None => b.nf.div_ceil(T::BATCH_RUN),
        Some(_) => b.nf,
    }
    .div_ceil(BATCH_BLOCK as usize);
    let blocks = (b.curves() * per_curve).clamp(1, (1 << 31) - 1);
    Ok(LaunchConfig::for_threads(
        blocks * BATCH_BLOCK as usize,
        BATCH_BLOCK,
    )?)
}

/// Runs the batch once (asynchronous on a GPU).
pub fn run_batch<T: Elem>(dev: &Device, b: &mut BatchBufs<T>) -> Result<()> {
    let cfg = batch_config(b)?;
    launch_batch(dev, cfg, b)
}

/// The periodograms of every curve of `batch` on `freqs` (`curves x freqs`,
/// curves by rows).
pub fn batch_periodogram<T: Elem>(
    dev: &Device,
    batch: &Batch,
    freqs: &[f64],
    g: General,
) -> Result<Vec<T>> {
    let mut b = BatchBufs::<T>::new(dev, batch, freqs, g)?;
    run_batch(dev, &mut b)?;
    Ok(dev.download(&b.out)?)
}

/// Each curve's peak over `freqs` without the periodograms leaving the
/// device: the batch kernel, then [`device_row_peaks`] on
/// its output; `2 x curves` values come back, first each curve's index of
/// its first highest finite power (-1 without one), then that power (NaN
/// without one).
pub fn batch_peaks<T: Elem>(
    dev: &Device,
    batch: &Batch,
    freqs: &[f64],
    g: General,
) -> Result<Vec<f64>> {
    let mut b = BatchBufs::<T>::new(dev, batch, freqs, g)?;
    run_batch(dev, &mut b)?;
    device_row_peaks(dev, &b.out, b.curves(), b.nf)
}

/// The peaks of `rows` rows of `width` values of `power` (a device buffer,
/// row-major), found on the device ([`kernels_gpu::lomb::lomb_row_peaks`]):
/// `2 x rows` values, first each row's index of its first highest finite
/// value (-1 without one), then that value (NaN without one).
pub fn device_row_peaks<T: Elem>(
    dev: &Device,
    power: &Buffer<T>,
    rows: usize,
    width: usize,
) -> Result<Vec<f64>> {
    let mut peaks = dev.alloc_filled(2 * rows, f64::NAN)?;
    super::launch::launch_row_peaks(dev, power, &mut peaks, rows, width)?;
    Ok(dev.download(&peaks)?)
}

/// The host's answer to [`device_row_peaks`]: each row's index of its
/// first highest finite value (-1 without one), then that value (NaN
/// without one), `2 x rows` values.
pub fn host_row_peaks(p: &[f64], rows: usize, width: usize) -> Vec<f64> {
    let mut idx = vec![-1.0; rows];
    let mut val = vec![f64::NAN; rows];
    for (r, row) in p.chunks(width.max(1)).take(rows).enumerate() {
        for (k, &x) in row.iter().enumerate() {
            if x.is_finite() && (idx[r] < 0.0 || x > val[r]) {
                idx[r] = k as f64;
                val[r] = x;
            }
        }
    }
    idx.into_iter().chain(val).collect()
}

/// The f64 reference of curve `c` at the frequencies `idx` of `freqs`.
pub fn batch_reference(
    batch: &Batch,
    freqs: &[f64],
    g: General,
    c: usize,
    idx: &[usize],
) -> Result<Vec<f64>> {
    let (t, y, dy) = batch.curve(c);
    let sub: Vec<f64> = idx.iter().map(|&i| freqs[i]).collect();
    reference_general(t, y, dy, &sub, g)
}

/// The indices of the `k` highest local maxima of `p` (a value not below
/// its neighbours), highest first; fewer when `p` has fewer. NaN values are
/// never peaks.
pub fn top_peaks(p: &[f64], k: usize) -> Vec<usize> {
    let n = p.len();
    let mut peaks: Vec<usize> = (0..n)
        .filter(|&i| {
            let v = p[i];
            // A NaN neighbour does not hide a peak.
            let not_below = |j: usize| !(p[j] > v);
            v.is_finite() && (i == 0 || not_below(i - 1)) && (i + 1 == n || not_below(i + 1))
        })
        .collect();
    peaks.sort_by(|&a, &b| p[b].total_cmp(&p[a]).then(a.cmp(&b)));
    peaks.truncate(k);
    peaks
}

/// A reproducible survey-like batch: `curves` curves of `n_lo..=n_hi`
/// samples (ragged) over `span` time units, each a sinusoid of its own
/// period (2 to 50 time units) with Gaussian-like noise, and uncertainties
/// in `[0.5, 1.5)`; with `shared_times`, every curve has the first curve's
/// times (what nifty-ls's batched mode needs) and `n_lo` samples.
pub fn survey_batch(
    curves: usize,
    n_lo: usize,
    n_hi: usize,
    span: f64,
    shared_times: bool,
    seed: u64,
) -> Batch {
    let mut r = ptxlab_common::rng::SplitMix64(seed);
    let mut b = Batch {
        offsets: vec![0],
        dy: Some(Vec::new()),
        ..Default::default()
    };
    let mut common = Vec::new();
    for c in 0..curves {
        let n = if shared_times {
            n_lo
        } else {
            n_lo + (r.next_f64() * (n_hi - n_lo + 1) as f64) as usize
        }
        .min(n_hi.max(n_lo));
        let t: Vec<f64> = if shared_times && c > 0 {
            common.clone()
        } else {
            let mut t: Vec<f64> = (0..n).map(|_| r.uniform(0.0, span)).collect();
            t.sort_by(f64::total_cmp);
            if shared_times {
                common = t.clone();
            }
            t
        };
        let period = r.uniform(2.0, 50.0);
        let phase = r.uniform(0.0, std::f64::consts::TAU);
        for &tj in &t {
            let noise = (0..4).map(|_| r.next_f64()).sum::<f64>() - 2.0;
            b.y.push((std::f64::consts::TAU * tj / period + phase).sin() + 0.6 * noise);
            if let Some(dy) = b.dy.as_mut() {
                dy.push(r.uniform(0.5, 1.5));
            }
        }
        b.t.extend(t);
        b.offsets.push(b.t.len());
    }
    b
}
