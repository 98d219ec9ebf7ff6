//! The spectral Poisson solver: real-to-real transforms of grid lines
//! through a complex FFT in shared memory, and the eigenvalue division.
//!
//! # What is computed
//! The grid is the one of [`crate::poisson`]: `nx` columns by `ny` rows,
//! row-major, the first and last row and column are the boundary. The
//! interior is `mx = nx - 2` by `my = ny - 2` cells. The solver finds the
//! exact solution (up to rounding) of the 5-point equation `lap_h p = b` on
//! the interior by diagonalising `lap_h` with a separable transform:
//!
//! * Dirichlet (`kind` [`DIRICHLET`]): the DST-I of a line of `n` values,
//!   `X_k = sum_{j=1..n} x_j sin(pi j k / (n + 1))`, `k = 1..n`; it is its
//!   own inverse up to `2 / (n + 1)`; the eigenvalues of the 1-D operator
//!   are `(2 cos(pi k / (n + 1)) - 2) / h^2`.
//! * Neumann (`kind` [`NEUMANN`], the boundary cells are ghost cells half a
//!   cell outside the domain's edge): the DCT-II,
//!   `X_k = sum_{j=0..n-1} x_j cos(pi k (j + 1/2) / n)`, `k = 0..n-1`, whose
//!   inverse is the DCT-III over `n`; eigenvalues `(2 cos(pi k / n) - 2) / h^2`.
//!
//! Boundary values are folded into the right-hand side as the line is
//! loaded: `b' = b - g fold` at the interior cells next to the boundary,
//! where `g` is the boundary cell of `p0` and `fold` is `1 / h^2`
//! (Dirichlet: `g` is the value) or `1 / h` (Neumann: `g` is the outward
//! normal derivative, the ghost cell is `p_inner + h g`).
//!
//! # The transforms
//! Both go through one complex FFT of length `N` per line, `N = n + 1`
//! (DST-I) or `N = n` (DCT-II), never through an extension of the data:
//!
//! * DST-I: the odd extension `u` of the line (length `2N`: `0, x, 0, -x
//!   reversed`) is never stored; its even and odd samples are packed as one
//!   complex sequence `z_j = u_{2j} + i u_{2j+1}` of length `N` (the real
//!   FFT of length `2N` through a half-length complex FFT), and the
//!   post-processing `U_k = E_k + e^{-i pi k / N} O_k` with
//!   `E_k = (Z_k + conj Z_{N-k}) / 2`, `O_k = (Z_k - conj Z_{N-k}) / 2i`
//!   gives `X_k = -Im(U_k) / 2`.
//! * DCT-II (Makhoul): `v_j = x_{2j}`, `v_{n-1-j} = x_{2j+1}`; `V = FFT(v)`;
//!   `X_k = Re(e^{-i pi k / 2n} V_k)`. The inverse builds
//!   `V_k = e^{i pi k / 2n} (X_k - i X_{n-k})` and takes an inverse FFT.
//!
//! The FFT is a Stockham auto-sort in shared memory (two complex buffers of
//! `N`, ping-pong, the result in natural order) with one pass per factor of
//! `N` (the host factors `N` into radices 8, 4, 2 and the odd primes; the
//! factors arrive in `fac`). A pass of radix 2, 3, 4, 5, 7, 8, 11 or 13
//! runs whole butterflies in registers (module `radix`: one shared load, one
//! store and at most one twiddle per point); a larger prime factor takes
//! the direct pass, every output computed from its `R` inputs (`N R`
//! complex multiply-adds: correct for any `N`, but a length whose largest
//! prime factor is large, 8191 for a side of 8192, pays `N^2`). One
//! twiddle table `W_N^e = e^{-2 pi i e / N}` (computed by the host in f64)
//! serves every radix.
//!
//! # The plan of an axis
//! `plan` holds, in `T`: the twiddles `W_N^e` (`2N` values, re/im), the
//! post-processing factors (`2N` values: `e^{-i pi k / N}` for the DST-I,
//! `e^{-i pi k / 2n}` for the DCT-II) and the eigenvalues of the axis (`n`
//! values, in units of `1 / h^2` already). `fac` holds the number of
//! factors, then the factors.
//!
//! # The passes
//! 1. [`spectral_rows_forward`]: one block per interior row: load the row
//!    of `b`, fold the boundary in, transform, write the interior work array
//!    (`my x mx`).
//! 2. [`spectral_columns_solve`]: one block per column of the work array:
//!    transform the column, divide by `lambda_x + lambda_y` (times the
//!    inverse transforms' scale), transform back, write the column in
//!    place. The column is read and written with a stride; neighbouring
//!    blocks read neighbouring columns at the same time, so the sectors they
//!    share come from L2.
//! 3. [`spectral_rows_inverse`]: one block per grid row: inverse-transform
//!    the work row and write the whole row of `p`, boundary cells included.
//!
//! Three passes over the grid, each reading and writing it once: the floor
//! of a separable solve that cannot hold the grid on chip.

mod radix;

use ptxlab_device::prelude::*;

/// Threads per block of every spectral kernel.
pub const BLOCK: u32 = 256;
/// Loads in flight per thread while a block reads its line.
pub const LOAD_BATCH: usize = 8;
/// Dirichlet boundary: DST-I.
pub const DIRICHLET: u32 = 0;
/// Neumann boundary: DCT-II.
pub const NEUMANN: u32 = 1;
/// Most prime factors of an FFT length (`2^32` has 32).
pub const MAX_FACTORS: usize = 32;

/// The FFT length of a line of `n` values: `n + 1` for the DST-I, `n` for
/// the DCT-II.
pub const fn fft_len(kind: u32, n: usize) -> usize {
    if kind == DIRICHLET { n + 1 } else { n }
}

/// Dynamic shared memory of a block transforming lines of FFT length `nf`:
/// two complex buffers of `nf`.
pub const fn shared_bytes<T>(nf: usize) -> usize {
    shared::shared_bytes::<T>(0, 4 * nf)
}

/// Values of a plan of an axis with `n` values per line and FFT length `nf`.
pub const fn plan_len(n: usize, nf: usize) -> usize {
    4 * nf + n
}

/// The axis a block works on: line length, FFT length, kind and tables
/// (held by value: a view is a pointer and a length, and a reference to it
/// would put it in local memory).
#[derive(Clone, Copy)]
struct Axis<'a, T> {
    n: usize,
    nf: usize,
    kind: u32,
    plan: DeviceSlice<'a, T>,
    fac: DeviceSlice<'a, u32>,
}

impl<T: Real> Axis<'_, T> {
    fn check(&self) {
        if self.plan.len() < plan_len(self.n, self.nf)
            || self.fac.is_empty()
            || self.fac.get(0) as usize > MAX_FACTORS
            || self.fac.len() < 1 + self.fac.get(0) as usize
        {
            ptxlab_device::trap("spectral: a plan or factor list is too short");
        }
        let mut prod = 1usize;
        for s in 0..self.fac.get(0) as usize {
            prod *= self.fac.get(1 + s) as usize;
        }
        if prod != self.nf || (self.kind != DIRICHLET && self.kind != NEUMANN) {
            ptxlab_device::trap("spectral: the factors do not multiply to the FFT length");
        }
    }
    #[inline(always)]
    fn twiddle(&self, e: usize) -> (T, T) {
        (self.plan.get(2 * e), self.plan.get(2 * e + 1))
    }
    #[inline(always)]
    fn post(&self, k: usize) -> (T, T) {
        (
            self.plan.get(2 * self.nf + 2 * k),
            self.plan.get(2 * self.nf + 2 * k + 1),
        )
    }
    #[inline(always)]
    fn eig(&self, k: usize) -> T {
        self.plan.get(4 * self.nf + k)
    }
}

#[inline(always)]
fn tid() -> usize {
    thread::thread_idx_x() as usize
}

#[inline(always)]
fn threads() -> usize {
    thread::block_dim_x() as usize
}

/// Offset of complex buffer `c` (0 or 1) in shared memory.
#[inline(always)]
fn buf(c: usize, nf: usize) -> usize {
    2 * c * nf
}

/// The complex FFT of the `nf` values in buffer `cur`, forward
/// (`W_N^e = e^{-2 pi i e / N}`) or inverse (conjugate twiddles, no
/// scaling); returns the buffer holding the result. Every thread of the
/// block must call it (it has barriers); the input must be complete (a
/// barrier after it was written).
#[inline(always)]
fn fft<T: Real>(sh: &SharedSlice<T>, ax: &Axis<'_, T>, inverse: bool, mut cur: usize) -> usize {
    let nf = ax.nf;
    let mut ns = 1usize;
    for s in 0..ax.fac.get(0) as usize {
        let r = ax.fac.get(1 + s) as usize;
        let p = radix::Pass {
            nf,
            ns,
            src: buf(cur, nf),
            dst: buf(1 - cur, nf),
            inverse,
        };
        if radix::has_butterfly(r) {
            radix::pass(sh, &ax.plan, r, p);
        } else {
            direct_pass(sh, ax, r, p);
        }
        sync_threads();
        ns *= r;
        cur = 1 - cur;
    }
    cur
}

/// A pass of a radix without a butterfly (a prime above 13): every output
/// computed directly from its `r` inputs, `y = sum_q x_q W_N^{(q t) mod
/// N}`, `r` shared loads and twiddles per point.
#[inline(always)]
fn direct_pass<T: Real>(sh: &SharedSlice<T>, ax: &Axis<'_, T>, r: usize, p: radix::Pass) {
    let nf = p.nf;
    let m = nf / r;
    let step = nf / (p.ns * r);
    let mut o = tid();
    while o < nf {
        let (j, rr) = (o % m, o / m);
        let jm = j % p.ns;
        let t = jm * step + rr * m;
        let (mut re, mut im) = (T::ZERO, T::ZERO);
        let mut e = 0usize;
        for q in 0..r {
            let xr = sh.get(p.src + 2 * (j + q * m));
            let xi = sh.get(p.src + 2 * (j + q * m) + 1);
            let (wr, mut wi) = ax.twiddle(e);
            if p.inverse {
                wi = T::ZERO - wi;
            }
            re = xr.mul_add(wr, re) - xi * wi;
            im = xr.mul_add(wi, im) + xi * wr;
            e += t;
            if e >= nf {
                e -= nf;
            }
        }
        let d = (j / p.ns) * p.ns * r + jm + rr * p.ns;
        sh.set(p.dst + 2 * d, re);
        sh.set(p.dst + 2 * d + 1, im);
        o += threads();
    }
}

/// Writes the FFT input of the forward transform of the real line at
/// `line` (`n` values in shared memory) into complex buffer `dst`.
#[inline(always)]
fn build_forward<T: Real>(sh: &SharedSlice<T>, ax: &Axis<'_, T>, line: usize, dst: usize) {
    let (n, nf) = (ax.n, ax.nf);
    let d = buf(dst, nf);
    let mut j = tid();
    while j < nf {
        let (re, im) = if ax.kind == DIRICHLET {
            // u_m of the odd extension of length 2N.
            let u = |m: usize| -> T {
                if m == 0 || m == nf {
                    T::ZERO
                } else if m < nf {
                    sh.get(line + m - 1)
                } else {
                    T::ZERO - sh.get(line + 2 * nf - m - 1)
                }
            };
            (u(2 * j), u(2 * j + 1))
        } else {
            let i = if 2 * j < n {
                2 * j
            } else {
                2 * (n - 1 - j) + 1
            };
            (sh.get(line + i), T::ZERO)
        };
        sh.set(d + 2 * j, re);
        sh.set(d + 2 * j + 1, im);
        j += threads();
    }
}

/// The forward transform's output `X_k` (`k` from 0, `n` of them) from the
/// FFT result in buffer `res`, handed to `put(k, X_k)` (one thread each).
#[inline(always)]
fn post_forward<T: Real>(
    sh: &SharedSlice<T>,
    ax: &Axis<'_, T>,
    res: usize,
    mut put: impl FnMut(usize, T),
) {
    let (n, nf) = (ax.n, ax.nf);
    let z = buf(res, nf);
    let half = T::from_f64(0.5);
    let mut k = tid();
    while k < n {
        let (pr, pi) = ax.post(if ax.kind == DIRICHLET { k + 1 } else { k });
        let x = if ax.kind == DIRICHLET {
            let kk = k + 1;
            let (ar, ai) = (sh.get(z + 2 * kk), sh.get(z + 2 * kk + 1));
            let (br, bi) = (
                sh.get(z + 2 * (nf - kk)),
                T::ZERO - sh.get(z + 2 * (nf - kk) + 1),
            );
            // E = (A + B) / 2, O = (A - B) / 2i, with B = conj Z_{N-k}.
            let ei = half * (ai + bi);
            let (or, oi) = (half * (ai - bi), half * (br - ar));
            // Im(E + w O) with w = (pr, pi); X = -Im / 2.
            let u_im = ei + pr * oi + pi * or;
            T::ZERO - half * u_im
        } else {
            let (vr, vi) = (sh.get(z + 2 * k), sh.get(z + 2 * k + 1));
            pr * vr - pi * vi
        };
        put(k, x);
        k += threads();
    }
}

/// The raw inverse of the forward transform of the real line at `line`:
/// the DST-I again (the inverse up to `2 / N`), or the DCT-III without its
/// `1 / n`; the result goes to `put(i, x_i)`. The line lies in the region
/// of complex buffer `1 - free`; the FFT input is built in buffer `free`,
/// after which both buffers are overwritten. Every thread of the block must
/// call it (it has barriers), after a barrier that completes the line.
#[inline(always)]
fn inverse<T: Real>(
    sh: &SharedSlice<T>,
    ax: &Axis<'_, T>,
    line: usize,
    free: usize,
    put: impl FnMut(usize, T),
) {
    let (n, nf) = (ax.n, ax.nf);
    if ax.kind == DIRICHLET {
        build_forward(sh, ax, line, free);
        sync_threads();
        let res = fft(sh, ax, false, free);
        post_forward(sh, ax, res, put);
        return;
    }
    // DCT-III: V_k = conj(w_k) (X_k - i X_{n-k}), X_n = 0.
    let d = buf(free, nf);
    let mut k = tid();
    while k < n {
        let (pr, pi) = ax.post(k);
        let xr = sh.get(line + k);
        let xi = if k == 0 {
            T::ZERO
        } else {
            T::ZERO - sh.get(line + n - k)
        };
        // (pr - i pi) (xr + i xi)
        sh.set(d + 2 * k, pr * xr + pi * xi);
        sh.set(d + 2 * k + 1, pr * xi - pi * xr);
        k += threads();
    }
    sync_threads();
    let res = fft(sh, ax, true, free);
    let v = buf(res, nf);
    let mut put = put;
    let mut i = tid();
    while i < n {
        let j = if i.is_multiple_of(2) {
            i / 2
        } else {
            n - 1 - (i - 1) / 2
        };
        put(i, sh.get(v + 2 * j));
        i += threads();
    }
}

/// Copies the `n` values `get(i)` into shared memory at `line`, with
/// [`LOAD_BATCH`] loads in flight per thread before its first store: a
/// block holds one line (one block per SM in f64), so the loads' latency
/// is hidden only by issuing many at once.
#[inline(always)]
fn load_line<T: Real>(sh: &SharedSlice<T>, line: usize, n: usize, get: impl Fn(usize) -> T) {
    let t = threads();
    let mut i0 = tid();
    while i0 < n {
        let mut v = [T::ZERO; LOAD_BATCH];
        ptxlab_device::unroll!(u in [0, 1, 2, 3, 4, 5, 6, 7] {
            let i = i0 + u * t;
            if i < n {
                v[u] = get(i);
            }
        });
        ptxlab_device::unroll!(u in [0, 1, 2, 3, 4, 5, 6, 7] {
            let i = i0 + u * t;
            if i < n {
                sh.set(line + i, v[u]);
            }
        });
        i0 += LOAD_BATCH * t;
    }
}

fn check_block() {
    if thread::block_dim_y() != 1 || thread::block_dim_z() != 1 {
        ptxlab_device::trap("spectral: the block must be one-dimensional");
    }
}

/// Pass 1: one block of [`BLOCK`] threads per interior row `y = 1 + block`;
/// `work` (`my x mx`) gets the row's forward transform of `b` with the
/// boundary folded in (`fold`: `1 / h^2` Dirichlet, `1 / h` Neumann).
///
/// Shared layout: two complex buffers of `N` ([`shared_bytes`]); the row is
/// loaded as reals into the second, the FFT input built in the first.
#[kernel(launch_bounds(256), instances(f32 => (max_registers = 128), f64 => (max_registers = 255)))]
#[allow(clippy::too_many_arguments)]
pub fn spectral_rows_forward<T: Real>(
    b: DeviceSlice<T>,
    p0: DeviceSlice<T>,
    work: DeviceSliceMut<T>,
    plan: DeviceSlice<T>,
    fac: DeviceSlice<u32>,
    nx: u32,
    ny: u32,
    kind: u32,
    fold: T,
) {
    check_block();
    let (nx, ny) = (nx as usize, ny as usize);
    let n = nx - 2;
    let ax = Axis {
        n,
        nf: fft_len(kind, n),
        kind,
        plan,
        fac,
    };
    ax.check();
    let sh = shared::dynamic_shared::<T>(0, 4 * ax.nf);
    let y = thread::block_idx_x() as usize + 1;
    if y > ny - 2 {
        return;
    }
    let line = buf(1, ax.nf);
    load_line(&sh, line, n, |i| {
        let x = i + 1;
        let mut v = b.get(y * nx + x);
        if x == 1 {
            v -= p0.get(y * nx) * fold;
        }
        if x == nx - 2 {
            v -= p0.get(y * nx + nx - 1) * fold;
        }
        if y == 1 {
            v -= p0.get(x) * fold;
        }
        if y == ny - 2 {
            v -= p0.get((ny - 1) * nx + x) * fold;
        }
        v
    });
    sync_threads();
    build_forward(&sh, &ax, line, 0);
    sync_threads();
    let res = fft(&sh, &ax, false, 0);
    let row = (y - 1) * n;
    post_forward(&sh, &ax, res, |k, x| work.set(row + k, x));
}

/// Pass 2: one block of [`BLOCK`] threads per column `c` of `work`
/// (`my x mx`): the column's forward transform, the division by
/// `lambda_x(c) + lambda_y(k)` times `scale` (the inverse transforms'
/// normalisation; a zero eigenvalue, the constant mode of the Neumann
/// problem, gives 0: the zero-mean gauge), and the raw inverse, written
/// back in place.
///
/// Shared layout: as [`spectral_rows_forward`]; the divided spectrum is
/// kept as reals in the buffer the FFT did not end in.
#[kernel(launch_bounds(256), instances(f32 => (max_registers = 128), f64 => (max_registers = 255)))]
#[allow(clippy::too_many_arguments)]
pub fn spectral_columns_solve<T: Real>(
    work: DeviceSliceMut<T>,
    plan_x: DeviceSlice<T>,
    plan_y: DeviceSlice<T>,
    fac_y: DeviceSlice<u32>,
    nx: u32,
    ny: u32,
    kind: u32,
    scale: T,
) {
    check_block();
    let (mx, my) = (nx as usize - 2, ny as usize - 2);
    let ax = Axis {
        n: my,
        nf: fft_len(kind, my),
        kind,
        plan: plan_y,
        fac: fac_y,
    };
    ax.check();
    if plan_x.len() < mx || work.len() < mx * my {
        ptxlab_device::trap("spectral: the x plan or the work array is too short");
    }
    let sh = shared::dynamic_shared::<T>(0, 4 * ax.nf);
    let c = thread::block_idx_x() as usize;
    if c >= mx {
        return;
    }
    let nfx = fft_len(kind, mx);
    let lx = plan_x.get(4 * nfx + c);
    let line = buf(1, ax.nf);
    load_line(&sh, line, my, |i| work.get(i * mx + c));
    sync_threads();
    build_forward(&sh, &ax, line, 0);
    sync_threads();
    let res = fft(&sh, &ax, false, 0);
    let out = buf(1 - res, ax.nf);
    post_forward(&sh, &ax, res, |k, x| {
        let d = lx + ax.eig(k);
        let v = if d == T::ZERO { T::ZERO } else { x * scale / d };
        sh.set(out + k, v);
    });
    sync_threads();
    inverse(&sh, &ax, out, res, |i, x| work.set(i * mx + c, x));
}

/// Pass 3: one block of [`BLOCK`] threads per grid row `y`: the raw inverse
/// of work row `y - 1`, written to the interior of row `y` of `p`, and the
/// boundary cells of the row. Dirichlet: the boundary is `p0`'s. Neumann:
/// a ghost cell is `p_inner + h g` (`g` the boundary cell of `p0`); the
/// first and last rows transform the rows next to them; a corner takes the
/// value of its diagonal interior neighbour.
#[kernel(launch_bounds(256), instances(f32 => (max_registers = 128), f64 => (max_registers = 255)))]
#[allow(clippy::too_many_arguments)]
pub fn spectral_rows_inverse<T: Real>(
    work: DeviceSlice<T>,
    p0: DeviceSlice<T>,
    p: DeviceSliceMut<T>,
    plan: DeviceSlice<T>,
    fac: DeviceSlice<u32>,
    nx: u32,
    ny: u32,
    kind: u32,
    h: T,
) {
    check_block();
    let (nx, ny) = (nx as usize, ny as usize);
    let n = nx - 2;
    let ax = Axis {
        n,
        nf: fft_len(kind, n),
        kind,
        plan,
        fac,
    };
    ax.check();
    let sh = shared::dynamic_shared::<T>(0, 4 * ax.nf);
    let y = thread::block_idx_x() as usize;
    if y >= ny {
        return;
    }
    let edge = y == 0 || y == ny - 1;
    let row = y * nx;
    if edge && kind == DIRICHLET {
        let mut x = tid();
        while x < nx {
            p.set(row + x, p0.get(row + x));
            x += threads();
        }
        return;
    }
    let src = y.clamp(1, ny - 2) - 1;
    let line = buf(1, ax.nf);
    load_line(&sh, line, n, |i| work.get(src * n + i));
    sync_threads();
    let put = |i: usize, x: T| {
        let cell = row + 1 + i;
        if edge {
            // Neumann ghost row.
            p.set(cell, x + h * p0.get(cell));
        } else {
            p.set(cell, x);
        }
        if i == 0 {
            let g = if edge { x } else { x + h * p0.get(row) };
            p.set(
                row,
                if kind == DIRICHLET && !edge {
                    p0.get(row)
                } else {
                    g
                },
            );
        }
        if i == n - 1 {
            let g = if edge {
                x
            } else {
                x + h * p0.get(row + nx - 1)
            };
            p.set(
                row + nx - 1,
                if kind == DIRICHLET && !edge {
                    p0.get(row + nx - 1)
                } else {
                    g
                },
            );
        }
    };
    inverse(&sh, &ax, line, 0, put);
}
