//! Rung 12: Taylor moments per run of frequencies.

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

/// `(lanes, runs)` of a Taylor block for runs of `run` frequencies: `lanes`
/// threads share one run's moments (`run / 8`, at least 1), so a block of
/// 128 threads takes `128 / lanes` runs, `128 run / lanes` frequencies.
#[inline(always)]
pub const fn taylor_shape(run: u32) -> (u32, u32) {
    let lanes = if run >= 8 { run / 8 } else { 1 };
    (lanes, TAYLOR_BLOCK / lanes)
}

/// The body of the Taylor kernels (rung 12), see [`lomb_taylor_f32`].
#[inline(always)]
#[allow(unused_assignments)] // the last power `v^P` is not read
fn taylor<T: Pack4 + warp::ShuffleValue, const P: usize>(
    tab: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    start: T,
    step: T,
    h: T,
    run: u32,
    scale: T,
) {
    let n = tab.len() / 4;
    if !tab.len().is_multiple_of(4) {
        ptxlab_device::trap("lomb taylor: the table must hold 4 values per sample");
    }
    if thread::block_dim_x() != TAYLOR_BLOCK {
        ptxlab_device::trap("lomb taylor: blocks must have 128 threads");
    }
    if run == 0 || run > TAYLOR_MAX_RUN || !run.is_power_of_two() {
        ptxlab_device::trap("lomb taylor: the run must be a power of two up to 128");
    }
    const GMAX: usize = TAYLOR_BLOCK as usize;
    let mom = shared::dynamic_shared::<T>(0, 4 * P * GMAX);
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
        // M1[p] = sum y v^p e^{i W u}, M2[p] = sum v^p e^{2 i W u}.
        let k = b * groups + g;
        let mut m = [[T::ZERO; P]; 4];
        if k * r < nf {
            let w = start + (T::from_f64((k * r) as f64) + centre) * step;
            let mut j = lane;
            while j < n {
                // SAFETY: `j < n = tab.len() / 4`; device buffers are 16-byte aligned.
                let [u, v, y, _] = unsafe { T::load4(&tab, j) };
                let (s, c) = (w * u).sincos();
                let (c2, s2) = (c.mul_add(c, -(s * s)), (c + c) * s);
                let mut vp = T::ONE;
                unroll16!(p, {
                    if p < P {
                        let a = y * vp;
                        m[0][p] = a.mul_add(c, m[0][p]);
                        m[1][p] = a.mul_add(s, m[1][p]);
                        m[2][p] = vp.mul_add(c2, m[2][p]);
                        m[3][p] = vp.mul_add(s2, m[3][p]);
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
                    for mq in m.iter_mut() {
                        mq[p] = mq[p] + warp::shfl_xor(FULL_MASK, mq[p], off as u32);
                    }
                }
            });
            off *= 2;
        }
        if lane == 0 {
            unroll16!(p, {
                if p < P {
                    for (q, mq) in m.iter().enumerate() {
                        // SAFETY: `(q P + p) 128 + g < 4 P 128` (`g < groups <= 128`).
                        unsafe { mom.set_unchecked((q * P + p) * GMAX + g, mq[p]) };
                    }
                }
            });
        }
        sync_threads();
        // Phase 2: each frequency `f = b per_block + i` of the block, `i =
        // t, t + 128, ...`: run `i / r`, offset `d = i % r - centre` steps
        // from its centre, `tau = d step h`; the sums are the Taylor series
        // S1 = sum_p M1[p] (i tau)^p / p!, S2 = sum_p M2[p] (2 i tau)^p / p!.
        let mut i = t;
        while i < per_block {
            let f = b * per_block + i;
            if f < nf {
                let (gi, l) = (i / r, i % r);
                let tau = (T::from_f64(l as f64) - centre) * step * h;
                // SAFETY: `(q P + p) 128 + gi < 4 P 128` (`gi < groups`).
                let at = |q: usize, p: usize| unsafe { mom.get_unchecked((q * P + p) * GMAX + gi) };
                let (mut s1r, mut s1i) = (at(0, P - 1), at(1, P - 1));
                let (mut s2r, mut s2i) = (at(2, P - 1), at(3, P - 1));
                // S = M[p] + S (i tau / (p + 1)), p = P-2 down to 0: two
                // FMAs per sum and term (1 / (p + 1) a constant).
                unroll16!(q, {
                    if q + 1 < P {
                        let p = P - 2 - q;
                        let c1 = tau * T::from_f64(1.0 / (p + 1) as f64);
                        let c2 = c1 + c1;
                        (s1r, s1i) = ((-s1i).mul_add(c1, at(0, p)), s1r.mul_add(c1, at(1, p)));
                        (s2r, s2i) = ((-s2i).mul_add(c2, at(2, p)), s2r.mul_add(c2, at(3, p)));
                    }
                });
                // S2 = CC - SS + 2 i CS, and CC + SS = n.
                let half = T::from_f64(0.5);
                let cc = half * (nt + s2r);
                let ss = half * (nt - s2r);
                out.set(f, finish_half(s1r, s1i, cc, ss, half * s2i, scale));
            }
            i += TAYLOR_BLOCK as usize;
        }
        sync_threads();
        b += thread::grid_dim_x() as usize;
    }
}

/// Rung 12 (f32): Taylor moments. Even grid only; far below the per-pair
/// floors of rungs 9-11, because most of the work is no longer per (sample,
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
/// series is cut after [`TAYLOR_P_F32`] = 5 terms: the host picks the
/// largest run (a power of two up to 128) with `|2 tau| <= 0.047`, where
/// the first term left out is below `2e-9` of `sum |y|` (at the material's
/// grid: runs of 128, `|2 tau| <= 0.019`). Per frequency the work is `N /
/// R` sincos-and-moment steps (a ninth of a pair each, at `R = 128`) plus
/// a 5-term series and the finish, instead of `N` pairs.
///
/// Thread mapping: a block of 128 threads takes `128 / L` runs (`L = R / 8`
/// lanes per run, at least 1): in phase 1 lane `l` of run `g` sums samples
/// `l, l + L, ...`, the `L` lanes combine by `shfl.xor`, and lane 0 writes
/// the run's `4 P` moments to shared memory (value-major, `[4 P][128]`, so
/// phase 2's reads are broadcasts or consecutive words); after a barrier,
/// phase 2 gives each thread frequencies `t, t + 128, ...` of the block
/// (coalesced stores). `tab[4j..4j+4] = (u_j, v_j, y_j, 0)`, `h` the
/// half-span of the times, from the host ([`TAYLOR_BLOCK`] threads; the
/// kernel traps on another block size or a bad run).
///
/// Registers (ptxas 13.0, sm_90): 64, no spill (f64: 118). On an H100
/// (2026-11-23, same run as rung 11 and CuPy): 16.2 us at the material's
/// 114 x 2^20 (rung 11: 52.3 us, CuPy's fast-math kernel 84.0 us), 0.251 ms
/// at 10^4 x 2^20 (rung 11: 3.10 ms); f64 29.6 us and 0.631 ms.
#[kernel(launch_bounds(128))]
pub fn lomb_taylor_f32(
    tab: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    start: f32,
    step: f32,
    h: f32,
    run: u32,
    scale: f32,
) {
    taylor::<f32, TAYLOR_P_F32>(tab, out, start, step, h, run, scale);
}

/// Rung 12 (f64): as [`lomb_taylor_f32`] with [`TAYLOR_P_F64`] = 8 terms and
/// runs with `|2 tau| <= 0.05`, where the first term left out is below
/// `1e-15` of `sum |y|`.
#[kernel(launch_bounds(128))]
pub fn lomb_taylor_f64(
    tab: DeviceSlice<f64>,
    out: DeviceSliceMut<f64>,
    start: f64,
    step: f64,
    h: f64,
    run: u32,
    scale: f64,
) {
    taylor::<f64, TAYLOR_P_F64>(tab, out, start, step, h, run, scale);
}
