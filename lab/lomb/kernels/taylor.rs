//! Rung 12: Taylor moments per run of frequencies.

use super::general::{gen_value_d, low_phase};
use super::*;

/// Threads per block of the Taylor kernels.
pub const TAYLOR_BLOCK: u32 = 128;
/// Taylor terms of the f32 kernel.
pub const TAYLOR_P_F32: usize = 5;
/// Taylor terms of the f64 kernel.
pub const TAYLOR_P_F64: usize = 8;
/// Largest run (frequencies per Taylor expansion) the host may ask for.
pub const TAYLOR_MAX_RUN: u32 = 128;

/// Dynamic shared memory of the Taylor kernels with `p` terms: the moments
/// of up to 128 runs, `4 p` values each (`M1` real and imaginary, `M2` real
/// and imaginary, `p` of each), stored value-major (`[4 p][128]`).
pub const fn lomb_taylor_shared_bytes<T>(p: usize) -> usize {
    shared::shared_bytes::<T>(0, 4 * p * TAYLOR_BLOCK as usize)
}

/// Dynamic shared memory of the floating-mean Taylor kernels: as
/// [`lomb_taylor_shared_bytes`] with `6 p` values per run (`M0` too).
pub const fn lomb_taylor_gen_shared_bytes<T>(p: usize) -> usize {
    shared::shared_bytes::<T>(0, 6 * p * TAYLOR_BLOCK as usize)
}

/// Values per sample of the Taylor tables: `(u, v, y, 0)` in the plain
/// kernels; `(alpha_hi, alpha_lo, beta_hi, beta_lo, v, y, w, 0)` in the
/// `_long` and floating-mean ones (`alpha = W0 u`, `beta = R step u`, each
/// modulo 2 pi, `W0` the first run's centre; `y` weighted and `w` the weight
/// in the floating-mean kernels).
pub const fn taylor_stride(split: bool) -> usize {
    if split { 8 } else { 4 }
}

/// `(lanes, runs)` of a Taylor block for runs of `run` frequencies: `lanes`
/// threads share one run's moments (`run / 8`, at least 1), so a block of
/// 128 threads takes `128 / lanes` runs, `128 run / lanes` frequencies.
#[inline(always)]
pub const fn taylor_shape(run: u32) -> (u32, u32) {
    let lanes = if run >= 8 { run / 8 } else { 1 };
    (lanes, TAYLOR_BLOCK / lanes)
}

/// The runs of a Taylor kernel, from its parameters: the even grid, `h` the
/// half-span of the times (`v_j = u_j / h`, `|v_j| <= 1`), and `run` the
/// frequencies per Taylor expansion (a power of two up to
/// [`TAYLOR_MAX_RUN`], from the host's plan).
///
/// Not a kernel parameter itself: beside 64-bit fields its 32-bit `run`
/// would leave 4 bytes of padding, and the copy of the padded struct into
/// the kernel's body reads `run` as a 64-bit word; the kernels take `grid`,
/// `h` and `run` as three parameters.
struct TaylorRuns<T> {
    /// The frequency grid.
    grid: Grid<T>,
    /// The half-span of the times.
    h: T,
    /// Frequencies per run.
    run: u32,
}

/// The versine-form sums of one low frequency straight from a floating-mean
/// Taylor table (`wh = w h`: the phase of sample `j` is `wh v_j`, below
/// [`GEN_LOW_PHASE`] in magnitude, so one f32 product holds it).
#[inline(always)]
fn taylor_direct_d<T: Pack4>(tab: &DeviceSlice<T>, n: usize, wh: T) -> [T; 6] {
    let mut acc = [T::ZERO; 6];
    let mut j = 0;
    while j < n {
        // SAFETY: `j < n = tab.len() / 8`; device buffers are 16-byte aligned.
        let [v, wy, wt, _] = unsafe { T::load4(tab, 2 * j + 1) };
        let r = wh * v;
        let (s, c) = r.sincos();
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

/// The body of the Taylor kernels (rung 12), see [`lomb_taylor`](fn@lomb_taylor).
/// `SPLIT`: anchors from split phases ([`Phase::anchor`], the 8-value table
/// of [`taylor_stride`]); `GEN`: the floating-mean model with weights (also
/// split), `model` its scalars (`scale` unused), else the classic one with
/// `scale` (`model` unused).
#[inline(always)]
#[allow(unused_assignments)] // the last power `v^P` is not read
fn taylor<T: Pack4 + warp::ShuffleValue, const P: usize, const SPLIT: bool, const GEN: bool>(
    tab: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    runs: &TaylorRuns<T>,
    scale: T,
    model: &GenModel<T>,
) {
    let (start, step, h, run) = (runs.grid.start, runs.grid.step, runs.h, runs.run);
    let stride = taylor_stride(SPLIT || GEN);
    let n = tab.len() / stride;
    if !tab.len().is_multiple_of(stride) {
        ptxlab_device::trap("lomb taylor: the table must hold 4 (8 long) values per sample");
    }
    if thread::block_dim_x() != TAYLOR_BLOCK {
        ptxlab_device::trap("lomb taylor: blocks must have 128 threads");
    }
    if run == 0 || run > TAYLOR_MAX_RUN || !run.is_power_of_two() {
        ptxlab_device::trap("lomb taylor: the run must be a power of two up to 128");
    }
    const GMAX: usize = TAYLOR_BLOCK as usize;
    // Moments per run: M1 (re, im), M2 (re, im), and M0 (re, im) with `GEN`.
    let nq = if GEN { 6 } else { 4 };
    let mom = shared::dynamic_shared::<T>(0, nq * P * GMAX);
    let (lanes, groups) = taylor_shape(run);
    let (lanes, groups, r) = (lanes as usize, groups as usize, run as usize);
    let per_block = groups * r;
    let nf = out.len();
    let blocks = nf.div_ceil(per_block);
    let t = thread::thread_idx_x() as usize;
    let (g, lane) = (t / lanes, t % lanes);
    let centre = T::from_f64(0.5 * (r - 1) as f64);
    let nt = T::from_f64(n as f64);
    let mut b = thread::block_idx_x() as usize;
    // Block-uniform loop: the barriers need every thread.
    while b < blocks {
        // Phase 1: the moments of run `k = b groups + g` at its centre
        // frequency `W`, over this lane's samples `lane, lane + lanes, ...`:
        // M1[p] = sum y v^p e^{i W u}, M2[p] = sum v^p e^{2 i W u} (weighted
        // by `w` with `GEN`, which adds M0[p] = sum w v^p e^{i W u}).
        let k = b * groups + g;
        let mut m = [[T::ZERO; P]; 6];
        if k * r < nf {
            let kf = T::from_f64(k as f64);
            let w = start + (T::from_f64((k * r) as f64) + centre) * step;
            let mut j = lane;
            while j < n {
                let (ph, v, y, wt) = if SPLIT || GEN {
                    // SAFETY: `j < n = tab.len() / 8`; device buffers are
                    // 16-byte aligned.
                    let ([ah, al, bh, bl], [v, y, wt, _]) =
                        unsafe { (T::load4(&tab, 2 * j), T::load4(&tab, 2 * j + 1)) };
                    (T::anchor(ah, al, bh, bl, kf), v, y, wt)
                } else {
                    // SAFETY: `j < n = tab.len() / 4`; device buffers are 16-byte aligned.
                    let [u, v, y, _] = unsafe { T::load4(&tab, j) };
                    (w * u, v, y, T::ONE)
                };
                let (s, c) = ph.sincos();
                let (c2, s2) = (c.mul_add(c, -(s * s)), (c + c) * s);
                let mut vp = T::ONE;
                unroll16!(p, {
                    if p < P {
                        let a = y * vp;
                        m[0][p] = a.mul_add(c, m[0][p]);
                        m[1][p] = a.mul_add(s, m[1][p]);
                        if GEN {
                            let bw = wt * vp;
                            m[2][p] = bw.mul_add(c2, m[2][p]);
                            m[3][p] = bw.mul_add(s2, m[3][p]);
                            m[4][p] = bw.mul_add(c, m[4][p]);
                            m[5][p] = bw.mul_add(s, m[5][p]);
                        } else {
                            m[2][p] = vp.mul_add(c2, m[2][p]);
                            m[3][p] = vp.mul_add(s2, m[3][p]);
                        }
                        vp *= v;
                    }
                });
                j += lanes;
            }
        }
        // The `lanes` threads of a run are consecutive lanes of one warp.
        // (Every index below is a constant, so `m` stays in registers.)
        let mut off = 1;
        while off < lanes {
            unroll16!(p, {
                if p < P {
                    for (q, mq) in m.iter_mut().enumerate() {
                        if q < nq {
                            mq[p] = mq[p] + warp::shfl_xor(FULL_MASK, mq[p], off as u32);
                        }
                    }
                }
            });
            off *= 2;
        }
        if lane == 0 {
            unroll16!(p, {
                if p < P {
                    for (q, mq) in m.iter().enumerate() {
                        if q < nq {
                            // SAFETY: `(q P + p) 128 + g < nq P 128` (`g < groups <= 128`).
                            unsafe { mom.set_unchecked((q * P + p) * GMAX + g, mq[p]) };
                        }
                    }
                }
            });
        }
        sync_threads();
        // Phase 2: each frequency `f = b per_block + i` of the block, `i =
        // t, t + 128, ...`: run `i / r`, offset `d = i % r - centre` steps
        // from its centre, `tau = d step h`; the sums are the Taylor series
        // S1 = sum_p M1[p] (i tau)^p / p!, S2 = sum_p M2[p] (2 i tau)^p / p!
        // (and S0 from M0 as S1).
        let mut i = t;
        while i < per_block {
            let f = b * per_block + i;
            if f < nf {
                let (gi, l) = (i / r, i % r);
                let tau = (T::from_f64(l as f64) - centre) * step * h;
                // SAFETY: `(q P + p) 128 + gi < nq P 128` (`gi < groups`, `q < nq`).
                let at = |q: usize, p: usize| unsafe { mom.get_unchecked((q * P + p) * GMAX + gi) };
                let (mut s1r, mut s1i) = (at(0, P - 1), at(1, P - 1));
                let (mut s2r, mut s2i) = (at(2, P - 1), at(3, P - 1));
                let (mut s0r, mut s0i) = if GEN {
                    (at(4, P - 1), at(5, P - 1))
                } else {
                    (T::ZERO, T::ZERO)
                };
                // S = M[p] + S (i tau / (p + 1)), p = P-2 down to 0: two
                // FMAs per sum and term (1 / (p + 1) a constant).
                unroll16!(q, {
                    if q + 1 < P {
                        let p = P - 2 - q;
                        let c1 = tau * T::from_f64(1.0 / (p + 1) as f64);
                        let c2 = c1 + c1;
                        (s1r, s1i) = ((-s1i).mul_add(c1, at(0, p)), s1r.mul_add(c1, at(1, p)));
                        (s2r, s2i) = ((-s2i).mul_add(c2, at(2, p)), s2r.mul_add(c2, at(3, p)));
                        if GEN {
                            (s0r, s0i) = ((-s0i).mul_add(c1, at(4, p)), s0r.mul_add(c1, at(5, p)));
                        }
                    }
                });
                // S2 = CC - SS + 2 i CS, and CC + SS = n (sum w with `GEN`).
                let half = T::from_f64(0.5);
                let wf = start + T::from_f64(f as f64) * step;
                let v = if GEN && low_phase(wf, h) {
                    // Every phase of this frequency is near 0: the direct
                    // sums in the versine form (the moments' CC - C^2 would
                    // cancel in f32; see GEN_LOW_PHASE).
                    gen_value_d(taylor_direct_d(&tab, n, wf * h), model)
                } else if GEN {
                    let cc = half * (model.w_sum + s2r);
                    let cs = half * s2i;
                    let p = finish_general([s1r, s1i, cc, cs, s0r, s0i], model);
                    normalize(p, model)
                } else {
                    let cc = half * (nt + s2r);
                    let ss = half * (nt - s2r);
                    finish_half(s1r, s1i, cc, ss, half * s2i, scale)
                };
                out.set(f, v);
            }
            i += TAYLOR_BLOCK as usize;
        }
        sync_threads();
        b += thread::grid_dim_x() as usize;
    }
}

/// The unused model of the classic Taylor kernels.
#[inline(always)]
fn no_model<T: Real>() -> GenModel<T> {
    GenModel {
        w_sum: T::ZERO,
        y_mean: T::ZERO,
        yy: T::ONE,
        scale: T::ONE,
        opts: GenOptions::new(false, Norm::Scale),
    }
}

/// Rung 12: Taylor moments. Even grid only; far below the per-pair floors
/// of rungs 9-11, because most of the work is no longer per (sample,
/// frequency) pair.
///
/// A run of `R` consecutive frequencies around its centre `W` (`w = W +
/// delta`, `|delta| <= (R - 1) step / 2`) sees each sample through
///
/// ```text
/// e^{i (W + delta) u_j} = e^{i W u_j} e^{i delta h v_j}
///                       = e^{i W u_j} sum_p (i tau)^p v_j^p / p!,   tau = delta h
/// ```
///
/// with the times centred and scaled, `u_j = x_j - x0`, `v_j = u_j / h`,
/// `|v_j| <= 1` (the periodogram does not change under a time shift: tau
/// absorbs it). So per run the kernel computes the moments `M1[p] = sum_j
/// y_j v_j^p e^{i W u_j}` and `M2[p] = sum_j v_j^p e^{2 i W u_j}` once
/// (one precise `sincos` per sample and run), and every frequency of the
/// run is a Taylor series in `tau` over them: `XC + i XS = sum_p M1[p] (i
/// tau)^p / p!`, `CC - SS + 2 i CS` the same with `M2` and `2 tau`. The
/// series is cut after [`TAYLOR_P_F32`] = 5 terms in f32: the host picks the
/// largest run (a power of two up to 128) with `|2 tau| <= 0.047`, where
/// the first term left out is below `2e-9` of `sum |y|` (at the material's
/// grid: runs of 128, `|2 tau| <= 0.019`); in f64 after [`TAYLOR_P_F64`] = 8
/// terms, with runs of `|2 tau| <= 0.05`, where the first term left out is
/// below `1e-15` of `sum |y|`. Per frequency the work is `N / R`
/// sincos-and-moment steps (a ninth of a pair each, at `R = 128`) plus a
/// short series and the finish, instead of `N` pairs.
///
/// Thread mapping: a block of 128 threads takes `128 / L` runs (`L = R / 8`
/// lanes per run, at least 1): in phase 1 lane `l` of run `g` sums samples
/// `l, l + L, ...`, the `L` lanes combine by `shfl.xor`, and lane 0 writes
/// the run's `4 P` moments to shared memory (value-major, `[4 P][128]`, so
/// phase 2's reads are broadcasts or consecutive words); after a barrier,
/// phase 2 gives each thread frequencies `t, t + 128, ...` of the block
/// (coalesced stores). `tab[4j..4j+4] = (u_j, v_j, y_j, 0)` from the host;
/// `grid` the even grid `(start, step)` ([`Grid`], by value), `h` the
/// half-span of the times and `run` the run `R`; `scale` as in
/// [`lomb_direct`](fn@lomb_direct) ([`TAYLOR_BLOCK`] threads; the kernel
/// traps on another block size or a bad run).
///
/// `LONG` (long time spans): each run's anchor phase from split parts,
/// `alpha + k beta` at run `k` ([`Phase::anchor`]), instead of `W u` in one
/// product: table `(alpha_hi, alpha_lo, beta_hi, beta_lo, v, y, 0, 0)`
/// ([`taylor_stride`]). About ten more FP32 operations and a second 16-byte
/// load per (sample, run). Span in f32: up to `max |w| max |x - x0| <=`
/// [`SPLIT_PHASE_MAX_F32`]; the host runs it beyond [`PLAIN_PHASE_MAX_F32`]
/// (f64: anchors reduced modulo 2 pi, low parts zero, beyond
/// [`PLAIN_PHASE_MAX_F64`]). Long spans also shorten the runs the series
/// allows, down to runs of 1 on coarse grids, where the kernel is a direct
/// sum.
///
/// Registers and the measured times against rung 11 and CuPy:
/// `docs/book/src/workloads/lomb-scargle.md` (rung 12).
#[kernel(launch_bounds(128), instances(<false, f32>, <false, f64>, <true, f32>, <true, f64>))]
pub fn lomb_taylor<const LONG: bool, T: LombFloat>(
    tab: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    grid: Grid<T>,
    h: T,
    run: u32,
    scale: T,
) {
    let runs = TaylorRuns { grid, h, run };
    let model = no_model();
    if T::SINGLE {
        taylor::<T, TAYLOR_P_F32, LONG, false>(tab, out, &runs, scale, &model);
    } else {
        taylor::<T, TAYLOR_P_F64, LONG, false>(tab, out, &runs, scale, &model);
    }
}

// ---- the floating-mean model ---------------------------------------------------

/// Rung 12 for the floating-mean model: astropy's `fit_mean` /
/// `center_data` / weights from `dy` and its normalizations, by Taylor
/// moments. Per run three complex moment series instead of two: `M1[p] =
/// sum w y v^p e^{i W u}`, `M2[p] = sum w v^p e^{2 i W u}` and `M0[p] = sum
/// w v^p e^{i W u}` (the weighted `C + i S` the mean fit needs), `6 P`
/// values in shared memory ([`lomb_taylor_gen_shared_bytes`]: 48 KiB in
/// f64 at runs below 8); each frequency evaluates the three series and
/// finishes with [`finish_general`] and [`normalize`]; frequencies with
/// `|w| h <` [`GEN_LOW_PHASE`] (the lowest few, where the moments'
/// variances would cancel in f32) are summed directly in the versine form
/// instead ([`finish_general_d`]). Anchors always from split phases (table
/// `(alpha_hi, alpha_lo, beta_hi, beta_lo, v, w y, w, 0)`), so any span up
/// to [`SPLIT_PHASE_MAX_F32`]. `grid`, `h` and `run` as in
/// [`lomb_taylor`](fn@lomb_taylor) (`h` also decides the versine form);
/// `scalars` the curve's ([`GenScalars`], by value: `sum w`, `sum w y`,
/// `sum w y^2`, the scale), `opts` whether to fit the mean and the
/// [`Norm`] ([`GenOptions`], by value). Thread mapping and terms as
/// [`lomb_taylor`](fn@lomb_taylor).
#[kernel(launch_bounds(128), instances(f32, f64))]
pub fn lomb_taylor_gen<T: LombFloat>(
    tab: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    grid: Grid<T>,
    h: T,
    run: u32,
    scalars: GenScalars<T>,
    opts: GenOptions,
) {
    let runs = TaylorRuns { grid, h, run };
    let scale = scalars.scale;
    let model = GenModel::new(scalars, opts);
    if T::SINGLE {
        taylor::<T, TAYLOR_P_F32, true, true>(tab, out, &runs, scale, &model);
    } else {
        taylor::<T, TAYLOR_P_F64, true, true>(tab, out, &runs, scale, &model);
    }
}
