//! Lomb-Scargle periodogram: the ladder of the material, and a rotation
//! variant below the SFU floor.
//!
//! For each angular frequency `w` and samples `(x_j, y_j)` (SciPy's
//! definition, Townsend's one-pass form):
//!
//! ```text
//! c_j = cos(w x_j), s_j = sin(w x_j)
//! XC = sum y c, XS = sum y s, CC = sum c^2, SS = sum s^2, CS = sum c s
//! 2 w tau = atan2(2 CS, CC - SS)              (= atan2(sum sin 2wx, sum cos 2wx))
//! ct = cos(w tau), st = sin(w tau)
//! P(w) = 0.5 [ (ct XC + st XS)^2 / (ct^2 CC + 2 ct st CS + st^2 SS)
//!            + (ct XS - st XC)^2 / (ct^2 SS - 2 ct st CS + st^2 CC) ]
//! ```
//!
//! The kernels take `scale` instead of the 0.5: 0.5 for SciPy's plain
//! periodogram, `1 / sum y^2` for `normalize=True`; `precenter` is applied to
//! `y` on the host. `x` and `y` must have the same length (a kernel traps
//! otherwise; the host checks first).
//!
//! Launch shape (the material's): `SM count x 20` blocks of [`BLOCK`] threads,
//! a grid-stride loop over frequencies, each thread one frequency at a time,
//! looping over every sample. Every thread of a warp reads the same `x_j`,
//! `y_j` (a broadcast through L1).
//!
//! The build-time rungs (JIT on every call, cached module, fast math, register
//! cap, cubin) launch the same `lomb_direct_*` kernel from another module; the
//! source rungs are separate kernels below.

use ptxlab_device::precise::Trig;
use ptxlab_device::prelude::*;

/// Threads per block of the material's launch shape.
pub const BLOCK: u32 = 128;
/// Blocks per SM of the material's launch shape (`SM count x 20` blocks).
pub const BLOCKS_PER_SM: u32 = 20;
/// Consecutive frequencies per thread in `lomb_rotate_f32`.
pub const ROT_RUN_F32: usize = 16;
/// Consecutive frequencies per thread in `lomb_rotate_f64`.
pub const ROT_RUN_F64: usize = 8;

/// The periodogram value from the five sums (`scale` is 0.5, or `1/sum y^2`).
#[inline(always)]
pub fn finish<T: Real + Trig>(xc: T, xs: T, cc: T, ss: T, cs: T, scale: T) -> T {
    // 2 w tau; the kernels rotate by w tau directly instead of dividing by w
    // and multiplying back (one division less, no 0 * inf at w = 0).
    let wtau = T::from_f64(0.5) * (cs + cs).atan2(cc - ss);
    let (st, ct) = wtau.sincos();
    let (ct2, st2, cst) = (ct * ct, st * st, (ct + ct) * st);
    let a = ct * xc + st * xs;
    let b = ct * xs - st * xc;
    let d1 = ct2 * cc + cst * cs + st2 * ss;
    let d2 = ct2 * ss - cst * cs + st2 * cc;
    scale * (a * a / d1 + b * b / d2)
}

#[inline(always)]
fn check_lengths<T: Copy>(x: &DeviceSlice<T>, y: &DeviceSlice<T>) {
    if x.len() != y.len() {
        ptxlab_device::trap("lomb: x and y lengths differ");
    }
}

/// The direct body: one frequency per thread at a time, grid-stride.
#[inline(always)]
fn direct<T: Real + Trig>(
    x: DeviceSlice<T>,
    y: DeviceSlice<T>,
    freqs: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    scale: T,
) {
    check_lengths(&x, &y);
    let n = x.len();
    let nf = if freqs.len() < out.len() {
        freqs.len()
    } else {
        out.len()
    };
    for i in thread::grid_stride(nf) {
        // SAFETY: `i < nf <= freqs.len()`.
        let w = unsafe { freqs.get_unchecked(i) };
        let (mut xc, mut xs, mut cc, mut ss, mut cs) =
            (T::ZERO, T::ZERO, T::ZERO, T::ZERO, T::ZERO);
        let mut j = 0;
        while j < n {
            // SAFETY: `j < n = x.len() = y.len()` (checked above).
            let (xj, yj) = unsafe { (x.get_unchecked(j), y.get_unchecked(j)) };
            let (s, c) = (w * xj).sincos();
            xc = yj.mul_add(c, xc);
            xs = yj.mul_add(s, xs);
            cc = c.mul_add(c, cc);
            ss = s.mul_add(s, ss);
            cs = c.mul_add(s, cs);
            j += 1;
        }
        // SAFETY: `i < nf <= out.len()`.
        unsafe { out.set_unchecked(i, finish(xc, xs, cc, ss, cs, scale)) };
    }
}

/// Rungs 1-6 (f32): the material's kernel. Thread `t` of the grid computes
/// frequencies `t, t + T, t + 2T, ...` (`T` threads in the grid), each with a
/// loop over all samples: one `sincos` (precise, pure Rust: `precise::sincos_f32`)
/// and 5 FMAs per (sample, frequency), then `atan2` and one more `sincos`
/// per frequency. No shared memory.
///
/// The build-time rungs launch this same kernel: JIT on every call, from the
/// cached module, from the fast-math module (the `sincos` becomes
/// `sin.approx`/`cos.approx` on the SFU, the divisions `div.approx`), under a
/// register cap (`.maxnreg` in the PTX) and from the precompiled cubin.
#[kernel]
pub fn lomb_direct_f32(
    x: DeviceSlice<f32>,
    y: DeviceSlice<f32>,
    freqs: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    scale: f32,
) {
    direct(x, y, freqs, out, scale);
}

/// Rung 3 (f64): the same generic body as `lomb_direct_f32`, instantiated for
/// f64 (`precise::sincos_f64`). In Rust nothing is promoted implicitly: the
/// f32 kernel has no f64 instruction, constants come in through `Real::from_f64`.
#[kernel]
pub fn lomb_direct_f64(
    x: DeviceSlice<f64>,
    y: DeviceSlice<f64>,
    freqs: DeviceSlice<f64>,
    out: DeviceSliceMut<f64>,
    scale: f64,
) {
    direct(x, y, freqs, out, scale);
}

/// Rung 7 (f32): `lomb_direct` with `launch_bounds(128)` (`.maxntid 128`).
/// What changed: ptxas knows no block is larger than 128 threads, so it may
/// use up to 255 registers without limiting occupancy below what 128-thread
/// blocks allow (and, with the fast-math module, it schedules for it). Must
/// be launched with at most 128 threads per block (checked by the host).
#[kernel(launch_bounds(128))]
pub fn lomb_bounds_f32(
    x: DeviceSlice<f32>,
    y: DeviceSlice<f32>,
    freqs: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    scale: f32,
) {
    direct(x, y, freqs, out, scale);
}

/// Rung 7 (f64): `lomb_direct_f64` with `launch_bounds(128)`.
#[kernel(launch_bounds(128))]
pub fn lomb_bounds_f64(
    x: DeviceSlice<f64>,
    y: DeviceSlice<f64>,
    freqs: DeviceSlice<f64>,
    out: DeviceSliceMut<f64>,
    scale: f64,
) {
    direct(x, y, freqs, out, scale);
}

/// Dynamic shared memory of `lomb_shared_*`: `x` then `y` chunks of `block`
/// elements each, 16-byte aligned.
pub const fn lomb_shared_bytes<T>(block: usize) -> usize {
    shared::shared_bytes::<T>(lomb_shared_y_offset::<T>(block), block)
}

/// Byte offset of the `y` chunk in the shared buffer.
pub const fn lomb_shared_y_offset<T>(block: usize) -> usize {
    shared::shared_bytes::<T>(0, block)
}

#[inline(always)]
fn shared_body<T: Real + Trig>(
    x: DeviceSlice<T>,
    y: DeviceSlice<T>,
    freqs: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    scale: T,
) {
    check_lengths(&x, &y);
    let n = x.len();
    let nf = if freqs.len() < out.len() {
        freqs.len()
    } else {
        out.len()
    };
    let bd = thread::block_dim_x() as usize;
    let tid = thread::thread_idx_x() as usize;
    let sx = shared::dynamic_shared::<T>(0, bd);
    let sy = shared::dynamic_shared::<T>(lomb_shared_y_offset::<T>(bd), bd);
    let stride = thread::grid_size_1d();
    // Block-uniform loop: every thread of the block runs the same iterations,
    // so the barriers inside are reached by all of them.
    let mut base = thread::block_idx_x() as usize * bd;
    while base < nf {
        let i = base + tid;
        let active = i < nf;
        let w = if active { freqs.get(i) } else { T::ZERO };
        let (mut xc, mut xs, mut cc, mut ss, mut cs) =
            (T::ZERO, T::ZERO, T::ZERO, T::ZERO, T::ZERO);
        let mut j0 = 0;
        while j0 < n {
            let m = if n - j0 < bd { n - j0 } else { bd };
            if tid < m {
                sx.set(tid, x.get(j0 + tid));
                sy.set(tid, y.get(j0 + tid));
            }
            sync_threads();
            let mut j = 0;
            while j < m {
                // SAFETY: `j < m <= bd`, the length of both views.
                let (xj, yj) = unsafe { (sx.get_unchecked(j), sy.get_unchecked(j)) };
                let (s, c) = (w * xj).sincos();
                xc = yj.mul_add(c, xc);
                xs = yj.mul_add(s, xs);
                cc = c.mul_add(c, cc);
                ss = s.mul_add(s, ss);
                cs = c.mul_add(s, cs);
                j += 1;
            }
            sync_threads();
            j0 += bd;
        }
        if active {
            out.set(i, finish(xc, xs, cc, ss, cs, scale));
        }
        base += stride;
    }
}

/// Shared-memory rung (f32): `x` and `y` staged in shared memory, one chunk of
/// `blockDim.x` samples at a time (layout: `x[0..block]`, then `y[0..block]`
/// at [`lomb_shared_y_offset`]). Thread mapping as `lomb_direct_f32`, but the
/// grid-stride loop is block-uniform (the barriers need every thread).
/// What it should buy: the inner loop reads shared memory (a broadcast, no
/// L1 tag lookups or global-load latency); in practice `x, y` of 114 samples
/// already sit in L1, so expect little.
#[kernel]
pub fn lomb_shared_f32(
    x: DeviceSlice<f32>,
    y: DeviceSlice<f32>,
    freqs: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    scale: f32,
) {
    shared_body(x, y, freqs, out, scale);
}

/// Shared-memory rung (f64), as `lomb_shared_f32`.
#[kernel]
pub fn lomb_shared_f64(
    x: DeviceSlice<f64>,
    y: DeviceSlice<f64>,
    freqs: DeviceSlice<f64>,
    out: DeviceSliceMut<f64>,
    scale: f64,
) {
    shared_body(x, y, freqs, out, scale);
}

/// Repeats `$body` with `$k` bound to the constants 0..16, so arrays indexed
/// by `$k` stay in registers (a run-time index would put them in local memory).
macro_rules! unroll16 {
    ($k:ident, $body:block) => {
        unroll16!(@ $k, $body, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    (@ $k:ident, $body:block, $($i:literal)*) => {
        $({
            #[allow(non_upper_case_globals)]
            const $k: usize = $i;
            $body
        })*
    };
}

#[allow(unused_assignments)] // the last rotation of a run is not read
/// The rotation body: thread `t` owns runs of `R` consecutive frequencies
/// `start + (R r + k) step`, `k = 0..R`, runs `r = t, t + T, ...`.
#[inline(always)]
fn rotate<T: Real + Trig, const R: usize>(
    x: DeviceSlice<T>,
    y: DeviceSlice<T>,
    rot: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    start: T,
    step: T,
    scale: T,
) {
    check_lengths(&x, &y);
    let n = x.len();
    if rot.len() != 2 * n {
        ptxlab_device::trap("lomb_rotate: rot must hold 2 values per sample");
    }
    let nf = out.len();
    let runs = nf.div_ceil(R);
    let nt = T::from_f64(n as f64);
    for r in thread::grid_stride(runs) {
        let first = r * R;
        let w0 = start + T::from_f64(first as f64) * step;
        let mut xc = [T::ZERO; R];
        let mut xs = [T::ZERO; R];
        let mut cc = [T::ZERO; R];
        let mut cs = [T::ZERO; R];
        let mut j = 0;
        while j < n {
            // SAFETY: `j < n = x.len() = y.len()`, `2j + 1 < 2n = rot.len()`.
            let (xj, yj, alpha, beta) = unsafe {
                (
                    x.get_unchecked(j),
                    y.get_unchecked(j),
                    rot.get_unchecked(2 * j),
                    rot.get_unchecked(2 * j + 1),
                )
            };
            // Anchor: exact (precise) sincos at the run's first frequency.
            let (mut s, mut c) = (w0 * xj).sincos();
            unroll16!(k, {
                if k < R {
                    xc[k] = yj.mul_add(c, xc[k]);
                    xs[k] = yj.mul_add(s, xs[k]);
                    cc[k] = c.mul_add(c, cc[k]);
                    cs[k] = c.mul_add(s, cs[k]);
                    // Rotate by step*x_j: c' = c - (alpha c + beta s),
                    // s' = s - (alpha s - beta c), alpha = 1 - cos, beta = sin.
                    let c1 = c - alpha.mul_add(c, beta * s);
                    let s1 = s - alpha.mul_add(s, -(beta * c));
                    c = c1;
                    s = s1;
                }
            });
            j += 1;
        }
        unroll16!(k, {
            if k < R && first + k < nf {
                out.set(
                    first + k,
                    finish(xc[k], xs[k], cc[k], nt - cc[k], cs[k], scale),
                );
            }
        });
    }
}

/// Below the SFU floor (f32), evenly spaced frequencies only: each thread
/// takes [`ROT_RUN_F32`] consecutive frequencies. Per sample it computes one
/// precise `sincos` at the run's first frequency (the anchor), then advances
/// `(cos, sin)` of `w x_j` to the next frequency by a fixed rotation of angle
/// `step * x_j` (4 FMAs; `rot[2j] = 1 - cos(step x_j)`, `rot[2j+1] =
/// sin(step x_j)`, from the host in f64: the `1 - cos` form keeps the small
/// angle's information that `cos` itself would round away). `SS = n - CC`,
/// and `2 CS`, `CC - SS` give the tau angle (double angle), so per (sample,
/// frequency) it is 4 FMAs of rotation and 4 of accumulation, no SFU or
/// polynomial. Re-anchored every run, so the rotation error stays below a
/// few x 16 ulp. Accumulators: 4 x 16 registers per thread.
#[kernel]
pub fn lomb_rotate_f32(
    x: DeviceSlice<f32>,
    y: DeviceSlice<f32>,
    rot: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    start: f32,
    step: f32,
    scale: f32,
) {
    rotate::<f32, ROT_RUN_F32>(x, y, rot, out, start, step, scale);
}

/// Below the SFU floor (f64): as `lomb_rotate_f32` with runs of
/// [`ROT_RUN_F64`] frequencies (4 x 8 f64 accumulators = 64 registers).
#[kernel]
pub fn lomb_rotate_f64(
    x: DeviceSlice<f64>,
    y: DeviceSlice<f64>,
    rot: DeviceSlice<f64>,
    out: DeviceSliceMut<f64>,
    start: f64,
    step: f64,
    scale: f64,
) {
    rotate::<f64, ROT_RUN_F64>(x, y, rot, out, start, step, scale);
}
