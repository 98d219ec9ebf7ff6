//! The floating-mean (generalized) periodogram on the direct rungs: astropy's
//! `LombScargle(t, y, dy, fit_mean, center_data, normalization)`.
//!
//! Per frequency the kernels need six weighted sums instead of five plain
//! ones: `YC = sum w y c`, `YS = sum w y s`, `CC = sum w c^2`, `CS = sum w c
//! s`, `C = sum w c`, `S = sum w s` (`SS = sum w - CC`), with `w_j =
//! dy_j^-2 / sum dy^-2` (or `1 / N`) and `y` centred on the host when asked.
//! [`finish_general`] turns them into `p`, [`normalize`] into astropy's
//! normalizations. The phases are always split ([`phase`]): these kernels
//! take any span up to [`SPLIT_PHASE_MAX_F32`] in f32.

use super::*;

/// Values per sample of the floating-mean direct tables: `(x_hi, x_lo, w y,
/// w)` with `x - x0 = x_hi + x_lo` (`phase`; `x_lo = 0` in f64).
pub const GEN_STRIDE: usize = 4;

/// The six weighted sums of one frequency over samples `j0..j1` of a
/// floating-mean table: `[YC, YS, CC, CS, C, S]`.
///
/// # Safety
/// `j1 <= tab.len() / GEN_STRIDE`, and `tab` starts on a 16-byte boundary
/// (device allocations do).
#[inline(always)]
pub(super) unsafe fn gen_sums<T: Pack4>(
    tab: &DeviceSlice<T>,
    j0: usize,
    j1: usize,
    w: (T, T),
    k: &T::Consts,
) -> [T; 6] {
    let mut acc = [T::ZERO; 6];
    // A 32-bit counter: the loop overhead is one add and one compare.
    let (mut j, j1) = (j0 as u32, j1 as u32);
    while j < j1 {
        // SAFETY: `j < j1 <= tab.len() / 4` (the caller's contract).
        let [uh, ul, wy, wt] = unsafe { T::load4(tab, j as usize) };
        let (s, c) = T::split_phase(w.0, w.1, uh, ul).sincos_with(k);
        let wc = wt * c;
        acc[0] = wy.mul_add(c, acc[0]);
        acc[1] = wy.mul_add(s, acc[1]);
        acc[2] = wc.mul_add(c, acc[2]);
        acc[3] = wc.mul_add(s, acc[3]);
        acc[4] += wc;
        acc[5] = wt.mul_add(s, acc[5]);
        j += 1;
    }
    acc
}

/// As [`gen_sums`] in the versine form of [`finish_general_d`]: `[YD, YS,
/// D, S, DD, DS]` with `d = 1 - c` from [`versine`] (for the frequencies
/// whose phases all lie near 0, `|w| h <` [`GEN_LOW_PHASE`]).
///
/// # Safety
/// As [`gen_sums`].
#[inline(always)]
pub(super) unsafe fn gen_sums_d<T: Pack4>(
    tab: &DeviceSlice<T>,
    j0: usize,
    j1: usize,
    w: (T, T),
    k: &T::Consts,
) -> [T; 6] {
    let mut acc = [T::ZERO; 6];
    let (mut j, j1) = (j0 as u32, j1 as u32);
    while j < j1 {
        // SAFETY: `j < j1 <= tab.len() / 4` (the caller's contract).
        let [uh, ul, wy, wt] = unsafe { T::load4(tab, j as usize) };
        let r = T::split_phase(w.0, w.1, uh, ul);
        let (s, c) = r.sincos_with(k);
        let d = versine(r, c);
        let wd = wt * d;
        acc[0] = wy.mul_add(d, acc[0]);
        acc[1] = wy.mul_add(s, acc[1]);
        acc[2] += wd;
        acc[3] = wt.mul_add(s, acc[3]);
        acc[4] = wd.mul_add(d, acc[4]);
        acc[5] = wd.mul_add(s, acc[5]);
        j += 1;
    }
    acc
}

/// Whether frequency `w` of a curve whose times reach `h` from their
/// centre takes the versine form ([`GEN_LOW_PHASE`]).
#[inline(always)]
pub(super) fn low_phase<T: Real>(w: T, h: T) -> bool {
    (w * h).abs() < T::from_f64(GEN_LOW_PHASE)
}

/// The six sums of one frequency, in the form its phases need, and its
/// value: [`gen_sums`] and [`finish_general`], or [`gen_sums_d`] and
/// [`finish_general_d`] below [`GEN_LOW_PHASE`] (`h` the largest `|x -
/// x0|` of the curve).
///
/// # Safety
/// As [`gen_sums`].
#[inline(always)]
pub(super) unsafe fn gen_frequency<T: Pack4>(
    tab: &DeviceSlice<T>,
    j0: usize,
    j1: usize,
    w: (T, T),
    k: &T::Consts,
    model: &GenModel<T>,
    h: T,
) -> T {
    if low_phase(w.0, h) {
        // SAFETY: the caller's contract.
        let acc = unsafe { gen_sums_d(tab, j0, j1, w, k) };
        gen_value_d(acc, model)
    } else {
        // SAFETY: the caller's contract.
        let acc = unsafe { gen_sums(tab, j0, j1, w, k) };
        gen_value(acc, model)
    }
}

/// The value of one frequency from its [`gen_sums_d`].
#[inline(always)]
pub(super) fn gen_value_d<T: Pack4>(acc: [T; 6], model: &GenModel<T>) -> T {
    normalize(finish_general_d(acc, model), model)
}

/// The value of one frequency from its sums.
#[inline(always)]
pub(super) fn gen_value<T: Pack4>(acc: [T; 6], model: &GenModel<T>) -> T {
    normalize(finish_general(acc, model), model)
}

/// The body of [`lomb_gen`](fn@lomb_gen): one frequency per thread at a time,
/// grid-stride, every sample of the table.
#[inline(always)]
fn gen_direct<T: Pack4>(
    tab: DeviceSlice<T>,
    freqs: DeviceSlice<T>,
    freqs_lo: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    model: GenModel<T>,
    h: T,
) {
    if !tab.len().is_multiple_of(GEN_STRIDE) {
        ptxlab_device::trap("lomb general: the table must hold 4 values per sample");
    }
    let n = tab.len() / GEN_STRIDE;
    let fr = Freqs::<T, true>::new(freqs, freqs_lo);
    let nf = freq_count(&freqs, &out);
    let k = T::trig_consts();
    for i in thread::grid_stride(nf) {
        // SAFETY: `i < nf <= freqs.len()`.
        let w = unsafe { fr.get(i) };
        // SAFETY: `n = tab.len() / 4`; device buffers are 16-byte aligned.
        let v = unsafe { gen_frequency(&tab, 0, n, w, &k, &model, h) };
        // SAFETY: `i < nf <= out.len()`.
        unsafe { out.set_unchecked(i, v) };
    }
}

/// The floating-mean periodogram on the direct rungs (the build-time rungs
/// 1-6 launch it from their modules as they launch
/// [`lomb_direct`](fn@lomb_direct)): astropy's `fit_mean`, `center_data`,
/// weights from `dy` and its four normalizations.
///
/// Thread mapping as [`lomb_direct`](fn@lomb_direct): thread `t` of the grid
/// takes frequencies `t, t + T, ...`, each with a loop over every sample.
/// Per sample one 16-byte load (f32; two in f64) of `(x_hi, x_lo, w y, w)`
/// ([`GEN_STRIDE`], a broadcast), the split phase ([`Phase::split_phase`],
/// about eight FP32 operations), one `sincos` and seven FP32 operations for
/// the six sums (`gen_sums`); per frequency [`finish_general`] (one
/// division) and [`normalize`] (one more division, or a logarithm). No
/// shared memory.
///
/// Parameters: `freqs`/`freqs_lo` the angular frequencies split in two
/// parts (the low parts zero in f64, where the phase is still reduced
/// modulo 2 pi before the precise `sincos`, so long spans stay on its fast
/// path); `scalars` the curve's ([`GenScalars`], by value: `sum w`, `sum w
/// y`, `sum w y^2`, the scale); `opts` whether to fit the mean and the
/// [`Norm`] ([`GenOptions`], by value); `h` the largest `|x - x0|`
/// (frequencies with `|w| h <` [`GEN_LOW_PHASE`] take the versine form,
/// `gen_frequency`). Span: any, up to [`SPLIT_PHASE_MAX_F32`] in f32.
#[kernel(instances(f32, f64))]
pub fn lomb_gen<T: Pack4>(
    tab: DeviceSlice<T>,
    freqs: DeviceSlice<T>,
    freqs_lo: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    scalars: GenScalars<T>,
    opts: GenOptions,
    h: T,
) {
    gen_direct(tab, freqs, freqs_lo, out, GenModel::new(scalars, opts), h);
}

/// Rung 7 for the floating-mean model: [`lomb_gen`](fn@lomb_gen) with
/// `launch_bounds(128)`, as [`lomb_bounds`](fn@lomb_bounds) is to
/// [`lomb_direct`](fn@lomb_direct); the same parameters.
#[kernel(launch_bounds(128), instances(f32, f64))]
pub fn lomb_gen_bounds<T: Pack4>(
    tab: DeviceSlice<T>,
    freqs: DeviceSlice<T>,
    freqs_lo: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    scalars: GenScalars<T>,
    opts: GenOptions,
    h: T,
) {
    gen_direct(tab, freqs, freqs_lo, out, GenModel::new(scalars, opts), h);
}
