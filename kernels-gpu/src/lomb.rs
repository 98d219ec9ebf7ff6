//! Lomb-Scargle periodogram: the ladder of the material, and, for evenly
//! spaced frequencies, variants below the SFU floor: recurrences per
//! (sample, frequency) pair (rungs 9-11) and Taylor moments per run of
//! frequencies (rung 12).
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

use ptxlab_device::mem::{F32x4, F64x2};
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
/// Consecutive frequencies per thread in `lomb_cheby_f32`.
pub const CHEBY_RUN_F32: usize = 16;
/// Consecutive frequencies per thread in `lomb_cheby_f64`.
pub const CHEBY_RUN_F64: usize = 8;

/// The periodogram value from the five sums (`scale` is 0.5, or `1/sum y^2`).
#[inline(always)]
pub fn finish<T: Real + Trig>(xc: T, xs: T, cc: T, ss: T, cs: T, scale: T) -> T {
    // 2 w tau; the kernels rotate by w tau directly instead of dividing by w
    // and multiplying back (one division less, no 0 * inf at w = 0).
    let wtau = T::from_f64(0.5) * (cs + cs).atan2(cc - ss);
    let (st, ct) = wtau.sincos();
    finish_at(ct, st, xc, xs, cc, ss, cs, scale)
}

/// As [`finish`], without trigonometry (rung 11): `cos(w tau)` and
/// `sin(w tau)` from the double angle by half-angle formulas.
///
/// With `u = CC - SS`, `v = 2 CS`, `r = sqrt(u^2 + v^2)`, the double angle
/// has `cos 2 w tau = u / r`, `sin 2 w tau = v / r`. Then `cos w tau =
/// sqrt((1 + cos 2 w tau) / 2)` and `sin w tau = sin 2 w tau / (2 cos w
/// tau)` when `cos 2 w tau >= 0`; otherwise the other way round from `sin w
/// tau = sqrt((1 - cos 2 w tau) / 2)`, so the square root never takes a
/// difference of nearly equal numbers and the division never a small one.
/// That picks `w tau` or `w tau + pi`, and `P` does not see the difference
/// (it depends on `ct^2`, `st^2` and `ct st` only). `r = 0` (no preferred
/// angle) gives `tau = 0`, as `atan2(0, 0) = 0` does in [`finish`]. Costs two
/// square roots and two divisions instead of an `atan2` and a `sincos`.
#[inline(always)]
pub fn finish_half<T: Real + Trig>(xc: T, xs: T, cc: T, ss: T, cs: T, scale: T) -> T {
    let (u, v) = (cc - ss, cs + cs);
    let r = u.mul_add(u, v * v).sqrt();
    let half = T::from_f64(0.5);
    let (ct, st) = if r > T::ZERO {
        let inv = T::ONE / r;
        let (c2, s2) = (u * inv, v * inv);
        if c2 >= T::ZERO {
            let ct = half.mul_add(c2, half).sqrt();
            (ct, s2 / (ct + ct))
        } else {
            let st = (-half).mul_add(c2, half).sqrt();
            (s2 / (st + st), st)
        }
    } else {
        (T::ONE, T::ZERO)
    };
    finish_at(ct, st, xc, xs, cc, ss, cs, scale)
}

/// The periodogram value from the five sums and `(cos, sin)(w tau)`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn finish_at<T: Real>(ct: T, st: T, xc: T, xs: T, cc: T, ss: T, cs: T, scale: T) -> T {
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

/// Frequencies a kernel computes: the shorter of `freqs` and `out`.
#[inline(always)]
fn freq_count<T: Copy>(freqs: &DeviceSlice<T>, out: &DeviceSliceMut<T>) -> usize {
    if freqs.len() < out.len() {
        freqs.len()
    } else {
        out.len()
    }
}

/// The samples `(x_j, y_j)` of the direct and lean kernels, walked in order:
/// four at a time with 16-byte loads when both arrays start on a 16-byte
/// boundary (device allocations do), with a 32-bit counter, then the rest
/// one at a time. Per pair that is half a load and a quarter of a loop step,
/// not two loads and a 64-bit compare. On the SFU-bound fast-math rungs the
/// issue slots this frees are what lets the two `MUFU` per pair run back to
/// back.
struct Samples<'a, T: Copy> {
    x: DeviceSlice<'a, T>,
    y: DeviceSlice<'a, T>,
    /// Chunks of four for the 16-byte loads (0 when not aligned).
    n4: u32,
}

impl<'a, T: Pack4> Samples<'a, T> {
    /// Traps when `x` and `y` differ in length.
    #[inline(always)]
    fn new(x: DeviceSlice<'a, T>, y: DeviceSlice<'a, T>) -> Self {
        check_lengths(&x, &y);
        let aligned = (x.as_ptr() as usize | y.as_ptr() as usize).is_multiple_of(16);
        let n4 = if aligned { (x.len() / 4) as u32 } else { 0 };
        Samples { x, y, n4 }
    }

    /// Number of samples.
    #[inline(always)]
    fn len(&self) -> usize {
        self.x.len()
    }

    /// Calls `visit(x_j, y_j)` for every sample, in order.
    #[inline(always)]
    fn for_each(&self, mut visit: impl FnMut(T, T)) {
        let mut q = 0u32;
        while q < self.n4 {
            // SAFETY: `4q + 4 <= 4 n4 <= x.len() = y.len()` (`new`), and
            // both start on a 16-byte boundary when `n4 > 0`.
            let (xv, yv) =
                unsafe { (T::load4(&self.x, q as usize), T::load4(&self.y, q as usize)) };
            visit(xv[0], yv[0]);
            visit(xv[1], yv[1]);
            visit(xv[2], yv[2]);
            visit(xv[3], yv[3]);
            q += 1;
        }
        let mut j = 4 * self.n4 as usize;
        while j < self.x.len() {
            // SAFETY: `j < x.len() = y.len()` (`new`).
            let (xj, yj) = unsafe { (self.x.get_unchecked(j), self.y.get_unchecked(j)) };
            visit(xj, yj);
            j += 1;
        }
    }
}

/// Four consecutive values with 16-byte loads (one for f32, two for f64)
/// instead of four scalar loads: `x`, `y` in the direct kernels, the packed
/// per-sample table of the recurrence kernels.
pub trait Pack4: Real + Trig {
    /// `tab[4j..4j+4]`.
    ///
    /// # Safety
    /// `4j + 4 <= tab.len()`, and `tab` starts on a 16-byte boundary (device
    /// allocations do).
    unsafe fn load4(tab: &DeviceSlice<Self>, j: usize) -> [Self; 4];
}

impl Pack4 for f32 {
    #[inline(always)]
    unsafe fn load4(tab: &DeviceSlice<f32>, j: usize) -> [f32; 4] {
        // SAFETY: the caller's contract: float4 `j` is inside `tab` and aligned.
        unsafe { tab.get_vec_unchecked::<F32x4>(j).0 }
    }
}

impl Pack4 for f64 {
    #[inline(always)]
    unsafe fn load4(tab: &DeviceSlice<f64>, j: usize) -> [f64; 4] {
        // SAFETY: the caller's contract: double2 `2j` and `2j+1` are inside
        // `tab` and aligned.
        let (a, b) = unsafe {
            (
                tab.get_vec_unchecked::<F64x2>(2 * j).0,
                tab.get_vec_unchecked::<F64x2>(2 * j + 1).0,
            )
        };
        [a[0], a[1], b[0], b[1]]
    }
}

/// One (sample, frequency) pair of the direct kernels: `sincos(w x)` and the
/// five sums.
#[inline(always)]
fn pair<T: Real + Trig>(w: T, xj: T, yj: T, acc: &mut [T; 5], k: &T::Consts) {
    let (s, c) = (w * xj).sincos_with(k);
    acc[0] = yj.mul_add(c, acc[0]);
    acc[1] = yj.mul_add(s, acc[1]);
    acc[2] = c.mul_add(c, acc[2]);
    acc[3] = s.mul_add(s, acc[3]);
    acc[4] = c.mul_add(s, acc[4]);
}

/// The direct body: one frequency per thread at a time, grid-stride, the
/// samples through [`Samples`].
#[inline(always)]
fn direct<T: Pack4>(
    x: DeviceSlice<T>,
    y: DeviceSlice<T>,
    freqs: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    scale: T,
) {
    let samples = Samples::new(x, y);
    let nf = freq_count(&freqs, &out);
    // The sincos constants in registers for the whole kernel (f64: see
    // `precise::SinCos64Consts`).
    let k = T::trig_consts();
    for i in thread::grid_stride(nf) {
        // SAFETY: `i < nf <= freqs.len()`.
        let w = unsafe { freqs.get_unchecked(i) };
        let mut acc = [T::ZERO; 5];
        samples.for_each(|xj, yj| pair(w, xj, yj, &mut acc, &k));
        let [xc, xs, cc, ss, cs] = acc;
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
    let nf = freq_count(&freqs, &out);
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

// ---- rung 4c: fast math, lean ------------------------------------------------

/// Frequencies per thread of the lean kernels (rung 4c).
pub const LEAN_FREQS: usize = 2;
/// Threads per block the host launches the lean kernels with (rung 4c).
pub const LEAN_BLOCK: u32 = 512;

/// The periodogram from four sums, without `tau` (rung 4c): `SS = n - CC`
/// and the least-squares form
///
/// ```text
/// P = scale (XC^2 SS - 2 XC XS CS + XS^2 CC) / (CC SS - CS^2)
/// ```
///
/// Why it equals [`finish`]: `tau` only rotates the basis `(c, s)` into the
/// eigenvectors of the 2x2 matrix `M = [[CC, CS], [CS, SS]]`; the sum of the
/// two quotients is the rotation-invariant quadratic form `b^T M^-1 b` with
/// `b = (XC, XS)` (the sum of squares that the best least-squares sinusoid
/// explains, halved by `scale = 0.5`), and `M^-1` is the adjugate over the
/// determinant. One division and no `atan2`, `sincos` or square root: one
/// SFU operation (the reciprocal) instead of five. Conditioning is that of
/// [`finish`]: both divide by the small eigenvalue's worth of `M`, formed
/// by cancellation, so where `M` is nearly singular (`w -> 0`, or all
/// sample phases nearly equal mod pi) the error grows as in [`finish`]'s `d2`.
#[inline(always)]
pub fn finish_ls<T: Real>(xc: T, xs: T, cc: T, ss: T, cs: T, scale: T) -> T {
    let det = cc.mul_add(ss, -(cs * cs));
    let num = (xc * xc).mul_add(ss, (xs * xs).mul_add(cc, -((xc + xc) * xs * cs)));
    scale * num / det
}

/// One (sample, frequency) pair of the lean kernels: `sincos(w x)` and four
/// sums (`SS` is `n - CC`).
#[inline(always)]
fn pair4<T: Real + Trig>(w: T, xj: T, yj: T, acc: &mut [T; 4], k: &T::Consts) {
    let (s, c) = (w * xj).sincos_with(k);
    acc[0] = yj.mul_add(c, acc[0]);
    acc[1] = yj.mul_add(s, acc[1]);
    acc[2] = c.mul_add(c, acc[2]);
    acc[3] = c.mul_add(s, acc[3]);
}

/// The lean body: `F` consecutive frequencies per thread, grid-stride over
/// groups of `F`, the samples through [`Samples`], see [`lomb_lean_f32`].
#[inline(always)]
fn lean<T: Pack4, const F: usize>(
    x: DeviceSlice<T>,
    y: DeviceSlice<T>,
    freqs: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    scale: T,
) {
    let samples = Samples::new(x, y);
    let nf = freq_count(&freqs, &out);
    let nt = T::from_f64(samples.len() as f64);
    let k = T::trig_consts();
    for g in thread::grid_stride(nf.div_ceil(F)) {
        let i0 = g * F;
        // The last group may be partial: its missing frequencies repeat the
        // last one (computed, not stored), so the loop stays branch-free.
        let mut w = [T::ZERO; F];
        unroll16!(f, {
            if f < F {
                let i = if i0 + f < nf { i0 + f } else { nf - 1 };
                // SAFETY: `i < nf <= freqs.len()`.
                w[f] = unsafe { freqs.get_unchecked(i) };
            }
        });
        let mut acc = [[T::ZERO; 4]; F];
        // One chunk of four samples per loop iteration: unrolling further
        // (by hand: two chunks) takes 40 registers, 12 blocks per SM instead
        // of 16, and measured 2% slower.
        samples.for_each(|xj, yj| {
            unroll16!(f, {
                if f < F {
                    pair4(w[f], xj, yj, &mut acc[f], &k);
                }
            });
        });
        unroll16!(f, {
            if f < F && i0 + f < nf {
                let [xc, xs, cc, cs] = acc[f];
                // SAFETY: `i0 + f < nf <= out.len()`.
                unsafe { out.set_unchecked(i0 + f, finish_ls(xc, xs, cc, nt - cc, cs, scale)) };
            }
        });
    }
}

/// Rung 4c (f32, launched from the fast-math module): rung 4b made lean for
/// the SFU.
///
/// Thread mapping: thread `g` of the grid takes frequencies `2g` and
/// `2g + 1` ([`LEAN_FREQS`]) in one pass over the samples (four at a time,
/// 16-byte loads, a broadcast: every lane reads the same `x_j`, `y_j`); the
/// host launches `ceil(nf / 2)` threads in blocks of [`LEAN_BLOCK`], so the
/// grid-stride loop runs once. No shared memory. 32 registers, so an SM
/// holds 2048 threads, as many as it can (4 blocks of 512). Blocks of 512
/// measured 66.8 us at 114 x 2^20 on the H100, blocks of 128 or 256 67.3.
///
/// Why it is faster than rung 4b (4% at 114 samples on the H100): the loop
/// is SFU-bound (two `MUFU` per pair, 16 cycles of a sub-partition's SFU
/// per warp and pair) but every other instruction competes with them for
/// the one issue slot per cycle.
/// - Per pair rung 4b issues `FMUL`, `FMUL.RZ`, two `MUFU`, five `FFMA` and
///   half a load. Here `SS` is `n - CC` (`c^2 + s^2 = 1`), so four `FFMA`,
///   and each load serves two frequencies.
/// - Per frequency, [`finish_ls`] replaces the `atan2`, the `sincos` and the
///   two divisions (five SFU operations and about fifty instructions, a
///   twentieth of a 114-sample frequency) with one division.
///
/// Measured and rejected (docs/results/2026-11-23-h100-lomb-lean): one or
/// four frequencies per thread, a one-wave persistent grid, per-warp
/// balanced frequency ranges, and two chunks per loop iteration were all
/// slower.
#[kernel]
pub fn lomb_lean_f32(
    x: DeviceSlice<f32>,
    y: DeviceSlice<f32>,
    freqs: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    scale: f32,
) {
    lean::<f32, LEAN_FREQS>(x, y, freqs, out, scale);
}

/// Rung 4c (f64), as `lomb_lean_f32` (the fast-math module leaves f64
/// `sincos` precise: what changes for f64 is the finish and the sums).
#[kernel]
pub fn lomb_lean_f64(
    x: DeviceSlice<f64>,
    y: DeviceSlice<f64>,
    freqs: DeviceSlice<f64>,
    out: DeviceSliceMut<f64>,
    scale: f64,
) {
    lean::<f64, LEAN_FREQS>(x, y, freqs, out, scale);
}

/// How the recurrence kernels step `(cos, sin)` of `w x_j` from one
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
struct Sums<T, const R: usize> {
    xc: [T; R],
    xs: [T; R],
    cc: [T; R],
    cs: [T; R],
}

impl<T: Real + Trig, const R: usize> Sums<T, R> {
    /// Zero sums.
    #[inline(always)]
    fn new() -> Self {
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
    fn store<const HALF: bool>(self, out: &DeviceSliceMut<T>, first: usize, n: T, scale: T) {
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
fn steps<T: Real, const R: usize, const CHEBY: bool>(
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
/// `r = t, t + T, ...` (`T` threads in the grid). Per sample: one precise
/// `sincos` at the run's first frequency (the anchor), then `R` steps.
#[inline(always)]
fn recurrence<T: Pack4, const R: usize, const CHEBY: bool, const PIPE: bool>(
    tab: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    start: T,
    step: T,
    scale: T,
) {
    if !tab.len().is_multiple_of(4) {
        ptxlab_device::trap("lomb recurrence: the table must hold 4 values per sample");
    }
    let n = tab.len() / 4;
    let nf = out.len();
    let runs = nf.div_ceil(R);
    let nt = T::from_f64(n as f64);
    for r in thread::grid_stride(runs) {
        let first = r * R;
        let w0 = start + T::from_f64(first as f64) * step;
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
            let mut e = [T::ZERO; 4];
            if n32 > 0 {
                // SAFETY: `0 < n = tab.len() / 4`; device buffers are 16-byte aligned.
                e = unsafe { T::load4(&tab, 0) };
            }
            let (mut s, mut c) = (w0 * e[0]).sincos();
            let mut j = 0u32;
            while j < n32 {
                let [_, yj, p, q] = e;
                let jn = if j + 1 < n32 { j + 1 } else { j };
                // SAFETY: `jn <= j < n = tab.len() / 4` or `jn = j + 1 < n`;
                // device buffers are 16-byte aligned.
                e = unsafe { T::load4(&tab, jn as usize) };
                let an = w0 * e[0];
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
                // SAFETY: `j < n = tab.len() / 4`; device buffers are 16-byte aligned.
                let [xj, yj, p, q] = unsafe { T::load4(&tab, j as usize) };
                // Anchor: exact (precise) sincos at the run's first frequency.
                let (s, c) = (w0 * xj).sincos();
                steps::<T, R, CHEBY>(&mut acc, yj, p, q, s, c);
                j += 1;
            }
        }
        acc.store::<false>(&out, first, nt, scale);
    }
}

/// Below the SFU floor (f32), evenly spaced frequencies only: each thread
/// takes [`ROT_RUN_F32`] consecutive frequencies. Per sample it computes one
/// precise `sincos` at the run's first frequency (the anchor), then advances
/// `(cos, sin)` of `w x_j` to the next frequency by a fixed rotation of angle
/// `step * x_j`, written as two FMAs per component. `tab[4j..4j+4] = (x_j,
/// y_j, 1 - cos(step x_j), sin(step x_j))`, from the host in f64: the
/// `1 - cos` form keeps the small angle's information that `cos` itself would
/// round away. `SS = n - CC`, and `2 CS`, `CC - SS` give the tau angle
/// (double angle), so per (sample, frequency) it is 4 FMAs of rotation and 4
/// of accumulation, no SFU or polynomial. Re-anchored every run, so the
/// rotation error stays below a few x 16 ulp. Accumulators: 4 x 16 registers.
#[kernel(launch_bounds(128, 4))]
pub fn lomb_rotate_f32(
    tab: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    start: f32,
    step: f32,
    scale: f32,
) {
    recurrence::<f32, ROT_RUN_F32, false, true>(tab, out, start, step, scale);
}

/// Below the SFU floor (f64): as `lomb_rotate_f32` with runs of
/// [`ROT_RUN_F64`] frequencies (4 x 8 f64 accumulators = 64 registers).
#[kernel(launch_bounds(128))]
pub fn lomb_rotate_f64(
    tab: DeviceSlice<f64>,
    out: DeviceSliceMut<f64>,
    start: f64,
    step: f64,
    scale: f64,
) {
    recurrence::<f64, ROT_RUN_F64, false, false>(tab, out, start, step, scale);
}

/// Three-term recurrence (f32), the next rung below the SFU floor: 6 FMAs
/// per (sample, frequency) instead of the rotation's 8.
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
/// carries the common phase `k gamma`, which `P` does not see.
///
/// `tab[4j..4j+4] = (x_j, y_j, cos p_j, sin p_j)` (f64 on the host). The host
/// uses this kernel only when the `p_j` span at most 2 pi / 3 (else the
/// rotation kernel). Thread mapping, runs and anchors as `lomb_rotate_f32`:
/// [`CHEBY_RUN_F32`] frequencies per thread.
#[kernel(launch_bounds(128, 4))]
pub fn lomb_cheby_f32(
    tab: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    start: f32,
    step: f32,
    scale: f32,
) {
    recurrence::<f32, CHEBY_RUN_F32, true, true>(tab, out, start, step, scale);
}

/// Three-term recurrence (f64): as `lomb_cheby_f32` with runs of
/// [`CHEBY_RUN_F64`] frequencies. In f64 the recurrence saves more than in
/// f32: a double FMA costs two issue cycles of the half-rate FP64 pipe.
#[kernel(launch_bounds(128))]
pub fn lomb_cheby_f64(
    tab: DeviceSlice<f64>,
    out: DeviceSliceMut<f64>,
    start: f64,
    step: f64,
    scale: f64,
) {
    recurrence::<f64, CHEBY_RUN_F64, true, false>(tab, out, start, step, scale);
}

// ---- rung 11: anchors from tables ------------------------------------------

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

/// The body of the table-anchored kernels (rung 11), see [`lomb_cheby_tab_f32`].
#[inline(always)]
fn recurrence_tab<T: Pack4, const R: usize, const CHEBY: bool, const PIPE: bool>(
    tab: DeviceSlice<T>,
    lo: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    start: T,
    step: T,
    scale: T,
) {
    const J: usize = TAB_CHUNK;
    let n = tab.len() / 4;
    if !tab.len().is_multiple_of(4) || lo.len() != n * 2 * TAB_LO {
        ptxlab_device::trap("lomb table anchors: the table must hold 4 values per sample, lo 32");
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
                let wh =
                    start + T::from_f64(((g * BLOCK as usize + hh * TAB_LO) * R) as f64) * step;
                let (s, c) = (wh * tab.get(4 * (j0 + jj))).sincos();
                hi_c.set(i, c);
                hi_s.set(i, s);
                i += BLOCK as usize;
            }
            sync_threads();
            // Sample `jj` of the chunk: `(y, p, q, sin, cos)` with the anchor.
            let fetch = |jj: usize| -> [T; 5] {
                // SAFETY: callers pass `jj < m`, so `j0 + jj < n = tab.len() / 4`;
                // device buffers are 16-byte aligned.
                let [_, yj, p, q] = unsafe { T::load4(&tab, j0 + jj) };
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

/// Rung 11 (f32): the three-term recurrence of [`lomb_cheby_f32`] with its
/// anchors from tables instead of a precise `sincos` per sample and thread.
///
/// What rung 10 spends: per sample and thread, one precise `sincos` (about
/// 40 instructions) for 16 steps of 6 FMAs, so a third of its issue slots
/// are anchors. Here the anchor of run `r = 128 g + 16 h + l` (block `g`'s
/// thread `t = 16 h + l`) at frequency `w_r = start + R r step` is split as
/// `w_r = W_gh + l R step`, and
///
/// ```text
/// e^{i w_r x_j} = e^{i W_gh x_j} * e^{i l R step x_j}   (one complex product: 4 FMAs)
/// ```
///
/// The low factor does not depend on the block: `lo[32 j + l]`, `lo[32 j +
/// 16 + l]` = `cos`, `sin(l R step x_j)`, `l < 16`, from the host in f64. The
/// high factor is one precise `sincos` per (sample, 16 threads), computed by
/// the block into shared memory. Each factor is within an ulp or so, so the
/// anchor is within a few ulp, like rung 10's.
///
/// Thread mapping: block `g` (grid-stride over groups of 128 runs) thread `t`
/// owns frequencies `R (128 g + t) .. + R`; per sample it reads `(x, y, p, q)`
/// (16 bytes, a broadcast), its high anchor (a broadcast to 16 lanes) and its
/// low factor (16 consecutive values: conflict-free).
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
#[kernel(launch_bounds(128, 4))]
pub fn lomb_cheby_tab_f32(
    tab: DeviceSlice<f32>,
    lo: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    start: f32,
    step: f32,
    scale: f32,
) {
    recurrence_tab::<f32, TAB_RUN_F32, true, false>(tab, lo, out, start, step, scale);
}

/// Rung 11 (f64): as [`lomb_cheby_tab_f32`] with runs of [`TAB_RUN_F64`].
/// In f64 the anchors weigh more than in f32 (a precise double `sincos` is
/// about 60 instructions of the half-rate FP64 pipe against 8 steps of 6
/// FMAs), so this is where the tables pay most.
#[kernel(launch_bounds(128))]
pub fn lomb_cheby_tab_f64(
    tab: DeviceSlice<f64>,
    lo: DeviceSlice<f64>,
    out: DeviceSliceMut<f64>,
    start: f64,
    step: f64,
    scale: f64,
) {
    recurrence_tab::<f64, TAB_RUN_F64, true, false>(tab, lo, out, start, step, scale);
}

/// Rung 11 with the rotation step (f32), for grids whose step angles span
/// too much for the three-term recurrence (see [`lomb_rotate_f32`]); anchors
/// as [`lomb_cheby_tab_f32`].
#[kernel(launch_bounds(128, 4))]
pub fn lomb_rotate_tab_f32(
    tab: DeviceSlice<f32>,
    lo: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    start: f32,
    step: f32,
    scale: f32,
) {
    recurrence_tab::<f32, TAB_RUN_F32, false, false>(tab, lo, out, start, step, scale);
}

/// Rung 11 with the rotation step (f64), as [`lomb_rotate_tab_f32`].
#[kernel(launch_bounds(128))]
pub fn lomb_rotate_tab_f64(
    tab: DeviceSlice<f64>,
    lo: DeviceSlice<f64>,
    out: DeviceSliceMut<f64>,
    start: f64,
    step: f64,
    scale: f64,
) {
    recurrence_tab::<f64, TAB_RUN_F64, false, false>(tab, lo, out, start, step, scale);
}

/// Rung 11b (f32): [`lomb_cheby_tab_f32`] with the sample loop software
/// pipelined: sample `j + 1`'s table entry, shared-memory factors and anchor
/// are loaded and computed before sample `j`'s steps, so the load latency
/// (an L1 hit and two shared loads, some 30 cycles each) overlaps the
/// recurrence instead of stalling the warp at the top of every sample. The
/// cost is the next sample's five values held across the steps.
#[kernel(launch_bounds(128, 4))]
pub fn lomb_cheby_tabp_f32(
    tab: DeviceSlice<f32>,
    lo: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    start: f32,
    step: f32,
    scale: f32,
) {
    recurrence_tab::<f32, TAB_RUN_F32, true, true>(tab, lo, out, start, step, scale);
}

/// Rung 11b (f64), as [`lomb_cheby_tabp_f32`].
#[kernel(launch_bounds(128))]
pub fn lomb_cheby_tabp_f64(
    tab: DeviceSlice<f64>,
    lo: DeviceSlice<f64>,
    out: DeviceSliceMut<f64>,
    start: f64,
    step: f64,
    scale: f64,
) {
    recurrence_tab::<f64, TAB_RUN_F64, true, true>(tab, lo, out, start, step, scale);
}

/// Rung 11b with the rotation step (f32): [`lomb_rotate_tab_f32`] pipelined
/// as [`lomb_cheby_tabp_f32`].
#[kernel(launch_bounds(128, 4))]
pub fn lomb_rotate_tabp_f32(
    tab: DeviceSlice<f32>,
    lo: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    start: f32,
    step: f32,
    scale: f32,
) {
    recurrence_tab::<f32, TAB_RUN_F32, false, true>(tab, lo, out, start, step, scale);
}

/// Rung 11b with the rotation step (f64), as [`lomb_rotate_tabp_f32`].
#[kernel(launch_bounds(128))]
pub fn lomb_rotate_tabp_f64(
    tab: DeviceSlice<f64>,
    lo: DeviceSlice<f64>,
    out: DeviceSliceMut<f64>,
    start: f64,
    step: f64,
    scale: f64,
) {
    recurrence_tab::<f64, TAB_RUN_F64, false, true>(tab, lo, out, start, step, scale);
}

// ---- rung 12: Taylor moments ------------------------------------------------

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
