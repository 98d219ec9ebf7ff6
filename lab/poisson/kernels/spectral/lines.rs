//! The real-to-real transforms of grid lines around the complex FFT: the
//! pre- and post-processing that turns one complex FFT of length `N` into
//! the DST-I or DCT-II of two real lines (forward), and the inverse
//! transforms (the DST-I of one line through its odd extension, the
//! DCT-III of a pair). The parent module's doc gives the algebra; each
//! function here says which part of it it runs.

use super::{Axis, DIRICHLET, buf, cget, cset, fft, guard, ld, shared_len, st, threads, tid};
use crate::fft::Complex;
use ptxlab_device::prelude::*;

/// Writes the FFT input of the forward transform of the pair of real lines
/// at `src` (line `a`, `n` values) and `src + n` (line `b`) into complex
/// buffer `dst`: `z_j = y^a_j + i y^b_j`, one real sequence per line.
///
/// DST-I (`x_j` the value of the line at `j - 1`, `j = 1..N-1`):
/// `y_j = sin(pi j / N) (x_j + x_{N-j}) + (x_j - x_{N-j}) / 2`, `y_0 = 0`.
/// DCT-II: the even-odd reordering `v_j = x_{2j}`, `v_{n-1-j} = x_{2j+1}`.
#[inline(always)]
pub(super) fn build_pair<T: Complex>(sh: &SharedSlice<T>, ax: Axis<'_, T>, src: usize, dst: usize) {
    let (n, nf) = (ax.n, ax.nf);
    let d = buf(dst, nf);
    guard(sh, (src + 2 * n).max(d + 2 * nf));
    let half = T::from_f64(0.5);
    let mut j = tid();
    while j < nf {
        // SAFETY: the line indices are below `src + 2 n` (Dirichlet: `j - 1`
        // and `nf - j - 1` are below `n` for `1 <= j < nf = n + 1`; DCT: `i <
        // n`), `j < nf`, both regions guarded above, `ax` checked.
        let (re, im) = unsafe {
            if ax.kind == DIRICHLET {
                if j == 0 {
                    (T::ZERO, T::ZERO)
                } else {
                    // sin(pi j / N) is minus the imaginary part of e^{-i pi j / N}.
                    let s = T::ZERO - ax.post(j).1;
                    let y = |l: usize| {
                        let (x, xr) = (ld(sh, src + l * n + j - 1), ld(sh, src + l * n + nf - j - 1));
                        s.mul_add(x + xr, half * (x - xr))
                    };
                    (y(0), y(1))
                }
            } else {
                let i = if 2 * j < n { 2 * j } else { 2 * (n - 1 - j) + 1 };
                (ld(sh, src + i), ld(sh, src + n + i))
            }
        };
        // SAFETY: `j < nf`, the buffer guarded above.
        unsafe { cset(sh, d, nf, j, re, im) };
        j += threads();
    }
}

/// Inclusive prefix sums, in place, of the `count` values at stride 2 from
/// `a` and from `b` (the odd outputs of the DST-I of both lines of a pair).
///
/// Each warp owns a contiguous segment and walks it 32 values at a time: a
/// shuffle scan (`shfl.up` 1, 2, 4, 8, 16) plus the running carry, so
/// lanes touch neighbouring words (no bank conflicts, which a chunk per
/// thread would have). The warps' totals meet in `scratch` (two values
/// per warp) and each warp adds those of the warps before it. Every
/// thread of the block must call it; it ends with a barrier.
#[inline(always)]
pub(super) fn scan_odd<T: Real>(sh: &SharedSlice<T>, a: usize, b: usize, count: usize, scratch: usize) {
    let (lane, warp, warps) = (tid() % 32, tid() / 32, threads() / 32);
    let seg = count.div_ceil(warps).div_ceil(32) * 32;
    let start = (warp * seg).min(count);
    let end = (start + seg).min(count);
    let (mut ca, mut cb) = (T::ZERO, T::ZERO);
    let mut i0 = start;
    while i0 < end {
        let i = i0 + lane;
        let (mut va, mut vb) = if i < end {
            (sh.get(a + 2 * i), sh.get(b + 2 * i))
        } else {
            (T::ZERO, T::ZERO)
        };
        ptxlab_device::unroll!(d in [1, 2, 4, 8, 16] {
            let ua = warp::shfl_up(warp::FULL_MASK, va, d as u32);
            let ub = warp::shfl_up(warp::FULL_MASK, vb, d as u32);
            if lane >= d {
                va += ua;
                vb += ub;
            }
        });
        va += ca;
        vb += cb;
        if i < end {
            sh.set(a + 2 * i, va);
            sh.set(b + 2 * i, vb);
        }
        ca = warp::shfl_idx(warp::FULL_MASK, va, 31);
        cb = warp::shfl_idx(warp::FULL_MASK, vb, 31);
        i0 += 32;
    }
    if lane == 0 {
        sh.set(scratch + 2 * warp, ca);
        sh.set(scratch + 2 * warp + 1, cb);
    }
    sync_threads();
    if warp > 0 && start < end {
        let (mut oa, mut ob) = (T::ZERO, T::ZERO);
        for w in 0..warp {
            oa += sh.get(scratch + 2 * w);
            ob += sh.get(scratch + 2 * w + 1);
        }
        let mut i = start + lane;
        while i < end {
            sh.set(a + 2 * i, sh.get(a + 2 * i) + oa);
            sh.set(b + 2 * i, sh.get(b + 2 * i) + ob);
            i += 32;
        }
    }
    sync_threads();
}

/// The forward transforms of both lines from the FFT result in buffer
/// `res`, written as two lines of `n` reals at the start of the other
/// buffer (returned: line `a` there, line `b` `n` later). Every thread of
/// the block must call it; it ends with a barrier.
///
/// The two real sequences come apart as `Y^a_k = (Z_k + conj Z_{N-k}) / 2`
/// and `Y^b_k = (Z_k - conj Z_{N-k}) / 2i`. DST-I: with
/// `Y_k = A_k - i B_k`, the even outputs are `X_{2k} = B_k` and the odd
/// ones the running sums `X_{2k+1} = A_0 / 2 + A_1 + ... + A_k`
/// ([`scan_odd`]). DCT-II: `X_k = Re(e^{-i pi k / 2n} Y_k)`.
///
/// The running sum carries the rounding of every `A_m` before it (the
/// error of `X_{2k+1}` grows like `sqrt(k)`): in a forward transform it
/// lands on the high modes, which the division by the eigenvalues then
/// shrinks; in an inverse it would land on the field as a zig-zag, which
/// the residual amplifies by `8 / h^2`. So only the forward DST-I runs
/// here; the inverse DST-I takes [`dst_line`], one line at a time.
#[inline(always)]
pub(super) fn post_pair<T: Complex>(sh: &SharedSlice<T>, ax: Axis<'_, T>, res: usize) -> usize {
    let (n, nf) = (ax.n, ax.nf);
    let z = buf(res, nf);
    let out = buf(1 - res, nf);
    // Both buffers, and the scan's totals after them.
    guard(sh, shared_len(nf));
    let half = T::from_f64(0.5);
    // SAFETY: every `k` passed is below `nf`; the buffer fits (guarded).
    let zk = |k: usize| unsafe { cget(sh, z, nf, k) };
    if ax.kind == DIRICHLET {
        let mut m = tid();
        while m <= nf / 2 {
            let ((zr, zi), (wr, wi)) = (zk(m), zk(if m == 0 { 0 } else { nf - m }));
            // SAFETY: the outputs `2 m - 1` and `2 m` are below `nf - 1 = n`
            // where written, so every index is below `out + 2 n <= 4 nf`.
            unsafe {
                if m >= 1 && 2 * m < nf {
                    st(sh, out + 2 * m - 1, half * (wi - zi));
                    st(sh, out + n + 2 * m - 1, half * (zr - wr));
                }
                if 2 * m + 1 < nf {
                    let f = if m == 0 { half * half } else { half };
                    st(sh, out + 2 * m, f * (zr + wr));
                    st(sh, out + n + 2 * m, f * (zi + wi));
                }
            }
            m += threads();
        }
        sync_threads();
        scan_odd(sh, out, out + n, nf / 2, 4 * nf);
    } else {
        let mut k = tid();
        while k < n {
            let ((zr, zi), (wr, wi)) = (zk(k), zk(if k == 0 { 0 } else { nf - k }));
            // SAFETY: `k < n = nf` (DCT), `ax` checked; `out + n + k < out +
            // 2 nf <= 4 nf` (guarded).
            unsafe {
                let (pr, pi) = ax.post(k);
                // Y^a = ((zr + wr) + i (zi - wi)) / 2, Y^b = ((zi + wi) + i (wr - zr)) / 2.
                st(sh, out + k, half * (pr * (zr + wr) - pi * (zi - wi)));
                st(sh, out + n + k, half * (pr * (zi + wi) - pi * (wr - zr)));
            }
            k += threads();
        }
        sync_threads();
    }
    out
}

/// The DST-I of the one real line at `line` (`n` values, in the buffer
/// that is not `free`) through the half-length packing of its odd
/// extension, results to `put(k, X_k)`: the extension `u` (length `2N`:
/// `0, x, 0, -x` reversed) is never stored; its even and odd samples form
/// one complex sequence `z_j = u_{2j} + i u_{2j+1}` of length `N` built in
/// buffer `free`, and `U_k = E_k + e^{-i pi k / N} O_k` with
/// `E_k = (Z_k + conj Z_{N-k}) / 2`, `O_k = (Z_k - conj Z_{N-k}) / 2i`
/// gives `X_k = -Im(U_k) / 2`. Every output comes from two FFT values, no
/// running sum: the inverse transforms use it, as their rounding errors
/// land in the field itself (see [`post_pair`]). Every thread of the block
/// must call it (it has barriers), after a barrier that completes the line.
#[inline(always)]
pub(super) fn dst_line<T: Complex>(
    sh: &SharedSlice<T>,
    ax: Axis<'_, T>,
    line: usize,
    free: usize,
    mut put: impl FnMut(usize, T),
) {
    let (n, nf) = (ax.n, ax.nf);
    let d = buf(free, nf);
    guard(sh, (line + n).max(shared_len(nf)));
    // The odd extension's sample `m`: the line's value `m - 1` for `m < nf`,
    // minus its value `2 nf - m - 1` past `nf`; both below `line + nf - 1 =
    // line + n`, guarded above.
    let u = |m: usize| -> T {
        if m == 0 || m == nf {
            T::ZERO
        } else if m < nf {
            // SAFETY: `m - 1 < n`, so the index is inside the guarded line.
            unsafe { ld(sh, line + m - 1) }
        } else {
            // SAFETY: `nf < m < 2 nf`, so `2 nf - m - 1 < n`: inside the line.
            T::ZERO - unsafe { ld(sh, line + 2 * nf - m - 1) }
        }
    };
    let mut j = tid();
    while j < nf {
        // SAFETY: `j < nf`; both buffers fit (guarded).
        unsafe { cset(sh, d, nf, j, u(2 * j), u(2 * j + 1)) };
        j += threads();
    }
    sync_threads();
    let z = buf(fft(sh, ax, false, free), nf);
    let half = T::from_f64(0.5);
    let mut k = tid();
    while k < n {
        let kk = k + 1;
        // SAFETY: `1 <= kk <= n < nf` (DST-I: `nf = n + 1`), so `nf - kk <
        // nf` too; both buffers fit (guarded), `ax` checked.
        let ((pr, pi), (ar, ai), (br, bi)) =
            unsafe { (ax.post(kk), cget(sh, z, nf, kk), cget(sh, z, nf, nf - kk)) };
        let bi = T::ZERO - bi;
        // E = (A + B) / 2, O = (A - B) / 2i, with B = conj Z_{N-k}.
        let ei = half * (ai + bi);
        let (or, oi) = (half * (ai - bi), half * (br - ar));
        // Im(E + w O) with w = (pr, pi); X = -Im / 2.
        put(k, T::ZERO - half * (ei + pr * oi + pi * or));
        k += threads();
    }
}

/// The raw DCT-III (the inverse of the DCT-II without its `1 / n`) of the
/// pair of lines at `src` (in the buffer that is not `free`); the results
/// go to `put(i, x^a_i, x^b_i)`. The FFT input is built in buffer `free`,
/// after which both buffers are overwritten. Every thread of the block
/// must call it (it has barriers), after a barrier that completes the
/// lines.
#[inline(always)]
pub(super) fn dct3_pair<T: Complex>(
    sh: &SharedSlice<T>,
    ax: Axis<'_, T>,
    src: usize,
    free: usize,
    mut put: impl FnMut(usize, T, T),
) {
    let (n, nf) = (ax.n, ax.nf);
    // DCT-III: V_k = conj(w_k) (X_k - i X_{n-k}), X_n = 0, per line; the
    // FFT input is V^a + i V^b, whose inverse is v^a + i v^b.
    let d = buf(free, nf);
    guard(sh, (src + 2 * n).max(shared_len(nf)));
    let mut k = tid();
    while k < n {
        // SAFETY: `k < n = nf` (DCT), `ax` checked; the line reads `src + l n
        // + k` and `src + l n + n - k` (`k >= 1`) are below `src + 2 n`, the
        // buffer write at `k < nf`: all guarded above.
        unsafe {
            let (pr, pi) = ax.post(k);
            let v = |l: usize| {
                let xr = ld(sh, src + l * n + k);
                let xi = if k == 0 {
                    T::ZERO
                } else {
                    T::ZERO - ld(sh, src + l * n + n - k)
                };
                // (pr - i pi) (xr + i xi)
                (pr * xr + pi * xi, pr * xi - pi * xr)
            };
            let ((ar, ai), (br, bi)) = (v(0), v(1));
            cset(sh, d, nf, k, ar - bi, ai + br);
        }
        k += threads();
    }
    sync_threads();
    let res = fft(sh, ax, true, free);
    let v = buf(res, nf);
    let mut i = tid();
    while i < n {
        let j = if i.is_multiple_of(2) {
            i / 2
        } else {
            n - 1 - (i - 1) / 2
        };
        // SAFETY: `j < n = nf`; the buffer fits (guarded above).
        let (xa, xb) = unsafe { cget(sh, v, nf, j) };
        put(i, xa, xb);
        i += threads();
    }
}
