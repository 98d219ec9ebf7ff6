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
//! Both go through complex FFTs of length `N` per pair of lines, `N = n +
//! 1` (DST-I) or `N = n` (DCT-II), never through an extension of the
//! data. A real line needs only a real FFT; two real sequences `y^a`, `y^b`
//! share one complex FFT as `z = y^a + i y^b` and come apart as
//! `Y^a_k = (Z_k + conj Z_{N-k}) / 2`, `Y^b_k = (Z_k - conj Z_{N-k}) / 2i`,
//! so every block transforms two lines at the cost of one complex FFT.
//!
//! * DST-I: the line folds into a real sequence of length `N`,
//!   `y_j = sin(pi j / N) (x_j + x_{N-j}) + (x_j - x_{N-j}) / 2`
//!   (`y_0 = 0`); its first part is symmetric about `N / 2` and its second
//!   antisymmetric, so with `Y_k = A_k - i B_k` the even outputs are
//!   `X_{2k} = B_k` and the odd ones follow from
//!   `X_{2k+1} - X_{2k-1} = A_k`, `X_1 = A_0 / 2`: a prefix sum over the
//!   block (`scan_odd`).
//! * DCT-II (Makhoul): `v_j = x_{2j}`, `v_{n-1-j} = x_{2j+1}`; `V = FFT(v)`;
//!   `X_k = Re(e^{-i pi k / 2n} V_k)`. The inverse builds
//!   `V_k = e^{i pi k / 2n} (X_k - i X_{n-k})` per line and takes one
//!   inverse FFT of `V^a + i V^b`, whose real and imaginary parts are the
//!   two lines.
//!
//! The FFT is a Stockham auto-sort in shared memory (two complex buffers of
//! `N`, ping-pong, the result in natural order; each buffer planar, the real
//! parts then the imaginary parts, so a warp's neighbouring points are
//! neighbouring words) with one pass per factor of
//! `N` (the host factors `N` into radices 8, 4, 2, 9 and the odd primes;
//! the factors arrive in `fac`). A pass of radix 2, 3, 4, 5, 7, 8, 9, 11 or 13
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
//! 1. [`spectral_rows_forward`]: one block per pair of interior rows: load
//!    the rows of `b`, fold the boundary in, transform, write the interior
//!    work array (`my x mx`).
//! 2. [`spectral_columns_solve`]: one block per pair of neighbouring
//!    columns of the work array: transform the columns, divide by
//!    `lambda_x + lambda_y` (times the inverse transforms' scale), transform
//!    back, write the columns in place. The columns are read and written
//!    with a stride; the two values of a row share a sector, and
//!    neighbouring blocks read neighbouring columns at the same time, so
//!    the rest of the sector comes from L2.
//! 3. [`spectral_rows_inverse`]: one block per pair of grid rows:
//!    inverse-transform the work rows and write the whole rows of `p`,
//!    boundary cells included.
//!
//! Three passes over the grid, each reading and writing it once: the floor
//! of a separable solve that cannot hold the grid on chip.

mod lines;
mod radix;

use lines::{build_pair, dct3_pair, dst_line, post_pair};

use crate::fft::Complex;
use ptxlab_device::prelude::*;

/// Threads per block of the spectral kernels of element `T`: 256 in f32,
/// 512 in f64. Both give an SM 16 warps: the f32 kernels fit in 128
/// registers and their shared memory is half of f64's, so two blocks share
/// an SM; an f64 block needs the shared memory of the whole SM, so it
/// brings all 16 warps itself, capped to 128 registers (a block of 8 warps
/// at 200-odd registers leaves the SM too few warps to hide the latency of
/// shared memory, the twiddles and the strided column loads).
///
/// `narrow` picks the f64 kernels' second build: blocks of
/// [`NARROW_THREADS`] at up to 168 registers, 12 warps per SM without
/// spills, for the passes [`narrow_fits`] names; f32 has no such build.
pub const fn block<T>(narrow: bool) -> u32 {
    if core::mem::size_of::<T>() != 8 {
        256
    } else if narrow {
        NARROW_THREADS
    } else {
        512
    }
}

/// Threads per block of the narrow f64 kernels (`NARROW = true`).
pub const NARROW_THREADS: u32 = 384;

/// Longest FFT length for which the row passes take the narrow f64 build.
pub const NARROW_MAX_LEN: usize = 2048;

/// Whether the narrow f64 build suits a pass (`columns`: the column pass,
/// else a row pass) over lines of FFT length `nf` whose radices are
/// `radices`. Every pass must have a butterfly: a direct pass (a prime
/// factor above 13, `r` twiddled loads per point) needs the 16 warps of the
/// wide build. The column pass, which spills most at 128 registers, takes
/// the narrow build at any length; a row pass only for lines of at most
/// [`NARROW_MAX_LEN`] (longer rows have more butterflies per thread and
/// pass, and gain more from 16 warps than from the spills saved).
pub fn narrow_fits(columns: bool, nf: usize, radices: &[u32]) -> bool {
    (columns || nf <= NARROW_MAX_LEN) && radices.iter().all(|&r| radix::has_butterfly(r as usize))
}
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

/// Most warps of a block (the scan keeps two totals per warp).
pub const MAX_WARPS: usize = 32;

/// Values of `T` in a block's dynamic shared memory for FFT length `nf`:
/// two complex buffers of `nf`, then two scan totals per warp.
pub const fn shared_len(nf: usize) -> usize {
    4 * nf + 2 * MAX_WARPS
}

/// Dynamic shared memory of a block transforming pairs of lines of FFT
/// length `nf` ([`shared_len`] values).
pub const fn shared_bytes<T>(nf: usize) -> usize {
    shared::shared_bytes::<T>(0, shared_len(nf))
}

/// Dynamic shared memory of a block that also keeps one line of `n` values
/// aside (the stash, after [`shared_len`]`(nf)` values): the Dirichlet
/// inverse passes hold the second line of their pair there instead of
/// sending it through global memory. The host asks for it when the device
/// has the room; the kernels read the launch's size and fall back to
/// global memory otherwise.
pub const fn stashed_bytes<T>(nf: usize, n: usize) -> usize {
    shared::shared_bytes::<T>(0, shared_len(nf) + n)
}

/// The block's shared memory: [`shared_len`]`(nf)` values, and the stash of
/// `n` more (its offset) when the launch gave room for it
/// ([`stashed_bytes`]).
#[inline(always)]
fn shared_with_stash<T: Real>(nf: usize, n: usize) -> (SharedSlice<T>, Option<usize>) {
    if shared::dynamic_shared_bytes() >= stashed_bytes::<T>(nf, n) {
        (
            shared::dynamic_shared::<T>(0, shared_len(nf) + n),
            Some(shared_len(nf)),
        )
    } else {
        (shared::dynamic_shared::<T>(0, shared_len(nf)), None)
    }
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

impl<T: Complex> Axis<'_, T> {
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
    // The tables are read unchecked on the GPU (the simulator checks):
    // `check` made sure the plan holds `plan_len(n, nf)` values, so each
    // accessor needs only its index in range.

    /// `W_N^e`.
    ///
    /// # Safety
    /// `e < nf`, and [`Axis::check`] passed.
    #[inline(always)]
    unsafe fn twiddle(&self, e: usize) -> (T, T) {
        // SAFETY: `2 e + 1 < 2 nf <= plan.len()` (the caller's contract);
        // the plan is a device allocation (aligned to 256 bytes), so pair
        // `e` is aligned to its size.
        let w = T::unpair(unsafe { self.plan.get_vec_unchecked::<T::Pair>(e) });
        (w.re, w.im)
    }
    /// Post-processing factor `k`.
    ///
    /// # Safety
    /// `k < nf`, and [`Axis::check`] passed.
    #[inline(always)]
    unsafe fn post(&self, k: usize) -> (T, T) {
        // SAFETY: pair `nf + k` is values `2 nf + 2 k` and the one after,
        // below `4 nf <= plan.len()` (the caller's contract), and aligned to
        // its size as in `twiddle`.
        let w = T::unpair(unsafe { self.plan.get_vec_unchecked::<T::Pair>(self.nf + k) });
        (w.re, w.im)
    }
    /// Eigenvalue `k` of the axis.
    ///
    /// # Safety
    /// `k < n`, and [`Axis::check`] passed.
    #[inline(always)]
    unsafe fn eig(&self, k: usize) -> T {
        // SAFETY: `4 nf + k < plan_len(n, nf) <= plan.len()` (the caller's contract).
        unsafe { self.plan.get_unchecked(4 * self.nf + k) }
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

/// Stops the kernel unless the shared-memory region that ends at `end` fits
/// in `sh`. The helpers below check their largest index once with it and
/// then read and write unchecked on the GPU (the simulator checks every
/// access): a bounds check per value was a third of their instructions.
#[inline(always)]
fn guard<T: Real>(sh: &SharedSlice<T>, end: usize) {
    if end > sh.len() {
        ptxlab_device::trap("spectral: a shared-memory region is past the block's buffer");
    }
}

/// Shared value `i`, unchecked on the GPU.
///
/// # Safety
/// `i < sh.len()`.
#[inline(always)]
unsafe fn ld<T: Real>(sh: &SharedSlice<T>, i: usize) -> T {
    // SAFETY: forwarded from the caller.
    unsafe { sh.get_unchecked(i) }
}

/// Writes shared value `i`, unchecked on the GPU.
///
/// # Safety
/// `i < sh.len()`.
#[inline(always)]
unsafe fn st<T: Real>(sh: &SharedSlice<T>, i: usize, v: T) {
    // SAFETY: forwarded from the caller.
    unsafe { sh.set_unchecked(i, v) }
}

/// Complex value `k` of the complex buffer at `base` (length `nf`). A
/// buffer is planar: the `nf` real parts, then the `nf` imaginary parts, so
/// the threads of a warp that read neighbouring points read neighbouring
/// words (interleaved pairs would put two threads on every bank and double
/// the shared-memory wavefronts of each pass).
///
/// # Safety
/// `k < nf` and `base + 2 nf <= sh.len()`.
#[inline(always)]
unsafe fn cget<T: Real>(sh: &SharedSlice<T>, base: usize, nf: usize, k: usize) -> (T, T) {
    // SAFETY: `base + nf + k < base + 2 nf <= len` (the caller's contract).
    unsafe { (ld(sh, base + k), ld(sh, base + nf + k)) }
}

/// Writes complex value `k` of the planar buffer at `base` ([`cget`]).
///
/// # Safety
/// `k < nf` and `base + 2 nf <= sh.len()`.
#[inline(always)]
unsafe fn cset<T: Real>(sh: &SharedSlice<T>, base: usize, nf: usize, k: usize, re: T, im: T) {
    // SAFETY: `base + nf + k < base + 2 nf <= len` (the caller's contract).
    unsafe {
        st(sh, base + k, re);
        st(sh, base + nf + k, im);
    }
}

/// The complex FFT of the `nf` values in buffer `cur`, forward
/// (`W_N^e = e^{-2 pi i e / N}`) or inverse (conjugate twiddles, no
/// scaling); returns the buffer holding the result. Every thread of the
/// block must call it (it has barriers); the input must be complete (a
/// barrier after it was written).
#[inline(always)]
fn fft<T: Complex>(sh: &SharedSlice<T>, ax: Axis<'_, T>, inverse: bool, mut cur: usize) -> usize {
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
fn direct_pass<T: Complex>(sh: &SharedSlice<T>, ax: Axis<'_, T>, r: usize, p: radix::Pass) {
    let nf = p.nf;
    let m = nf / r;
    let step = nf / (p.ns * r);
    guard(sh, p.src.max(p.dst) + 2 * nf);
    let mut o = tid();
    while o < nf {
        let (j, rr) = (o % m, o / m);
        let jm = j % p.ns;
        let t = jm * step + rr * m;
        let (mut re, mut im) = (T::ZERO, T::ZERO);
        let mut e = 0usize;
        for q in 0..r {
            // SAFETY: `j + q m < r m = nf` and `e < nf` (reduced below);
            // both buffers fit (guarded above) and `ax` was checked.
            let ((xr, xi), (wr, mut wi)) = unsafe { (cget(sh, p.src, nf, j + q * m), ax.twiddle(e)) };
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
        // SAFETY: `d < nf` (Stockham's output positions are a permutation
        // of `0..nf`); the buffer fits (guarded above).
        unsafe { cset(sh, p.dst, nf, d, re, im) };
        o += threads();
    }
}


/// Copies the `n` values `get(i)` into shared memory at `dst`, with
/// [`LOAD_BATCH`] loads in flight per thread before its first store.
#[inline(always)]
fn load_line<T: Real>(sh: &SharedSlice<T>, dst: usize, n: usize, get: impl Fn(usize) -> T) {
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
                sh.set(dst + i, v[u]);
            }
        });
        i0 += LOAD_BATCH * t;
    }
}

/// Copies the two lines `get(0, i)` and `get(1, i)` (`n` values each) into
/// shared memory at `dst` and `dst + n` ([`load_two`]).
#[inline(always)]
fn load_pair<T: Real>(sh: &SharedSlice<T>, dst: usize, n: usize, get: impl Fn(usize, usize) -> T) {
    load_two(sh, dst, dst + n, n, get);
}

/// Copies the two lines `get(0, i)` and `get(1, i)` (`n` values each) into
/// shared memory at `dst_a` and `dst_b`, with [`LOAD_BATCH`] loads in
/// flight per thread before its first store (half from each line): a block
/// is alone on its SM in f64, so the loads' latency is hidden only by
/// issuing many at once.
#[inline(always)]
fn load_two<T: Real>(
    sh: &SharedSlice<T>,
    dst_a: usize,
    dst_b: usize,
    n: usize,
    get: impl Fn(usize, usize) -> T,
) {
    load_both(sh, dst_a, dst_b, n, |i| (get(0, i), get(1, i)));
}

/// [`load_two`] with one getter for both lines' value `i`, so that a caller
/// whose two values are neighbours in memory can read them in one load.
#[inline(always)]
fn load_both<T: Real>(
    sh: &SharedSlice<T>,
    dst_a: usize,
    dst_b: usize,
    n: usize,
    get: impl Fn(usize) -> (T, T),
) {
    const H: usize = LOAD_BATCH / 2;
    let t = threads();
    let mut i0 = tid();
    while i0 < n {
        let mut v = [T::ZERO; LOAD_BATCH];
        ptxlab_device::unroll!(u in [0, 1, 2, 3] {
            let i = i0 + u * t;
            if i < n {
                (v[u], v[H + u]) = get(i);
            }
        });
        ptxlab_device::unroll!(u in [0, 1, 2, 3] {
            let i = i0 + u * t;
            if i < n {
                sh.set(dst_a + i, v[u]);
                sh.set(dst_b + i, v[H + u]);
            }
        });
        i0 += H * t;
    }
}

fn check_block() {
    if thread::block_dim_y() != 1
        || thread::block_dim_z() != 1
        || !(thread::block_dim_x() as usize).is_multiple_of(32)
        || thread::block_dim_x() as usize > 32 * MAX_WARPS
    {
        ptxlab_device::trap("spectral: the block must be one-dimensional, whole warps");
    }
}

/// The grid of a spectral solve: its shape (boundary ring included) and
/// the boundary condition ([`DIRICHLET`] or [`NEUMANN`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, KernelParams)]
#[repr(C)]
pub struct SpectralGrid {
    /// Columns (boundary included).
    pub nx: u32,
    /// Rows (boundary included).
    pub ny: u32,
    /// [`DIRICHLET`] or [`NEUMANN`].
    pub kind: u32,
}

impl SpectralGrid {
    fn axis<'a, T: Complex>(
        self,
        n: usize,
        plan: DeviceSlice<'a, T>,
        fac: DeviceSlice<'a, u32>,
    ) -> Axis<'a, T> {
        let ax = Axis {
            n,
            nf: fft_len(self.kind, n),
            kind: self.kind,
            plan,
            fac,
        };
        ax.check();
        ax
    }
}

/// Pass 1: one block per pair of interior rows `y = 1 + 2 block` and
/// `y + 1` (the second absent past the last); `work` (`my x mx`) gets the
/// rows' forward transforms of `b` with the boundary folded in (`fold`:
/// `1 / h^2` Dirichlet, `1 / h` Neumann).
///
/// Thread mapping: the block loads both rows (coalesced, thread `t` takes
/// columns `t, t + threads, ...` of each), builds one complex FFT input
/// from the two real lines, and every pass of the FFT spreads its
/// butterflies over all threads. Shared layout: two complex buffers of `N`
/// and the scan's per-warp totals ([`shared_bytes`]); the rows are loaded
/// as reals into the second buffer, the FFT input built in the first.
/// Two real lines per complex FFT halve the FFT work of a line against
/// one line per FFT, whose imaginary half carried no information.
#[kernel(
    launch_bounds(256),
    instances(
        <f32, false> => (max_registers = 128, name = "spectral_rows_forward_f32"),
        <f64, false> => (launch_bounds(512), max_registers = 128, name = "spectral_rows_forward_f64"),
        <f64, true> => (launch_bounds(384), max_registers = 168, name = "spectral_rows_forward_f64_narrow"),
    )
)]
pub fn spectral_rows_forward<T: Complex, const NARROW: bool>(
    b: DeviceSlice<T>,
    p0: DeviceSlice<T>,
    work: DeviceSliceMut<T>,
    plan: DeviceSlice<T>,
    fac: DeviceSlice<u32>,
    grid: SpectralGrid,
    fold: T,
) {
    check_block();
    let (nx, ny) = (grid.nx as usize, grid.ny as usize);
    let n = nx - 2;
    let ax = grid.axis(n, plan, fac);
    let sh = shared::dynamic_shared::<T>(0, shared_len(ax.nf));
    let ya = 2 * thread::block_idx_x() as usize + 1;
    if ya > ny - 2 {
        return;
    }
    let has_b = ya < ny - 2;
    let line = buf(1, ax.nf);
    load_pair(&sh, line, n, |l, i| {
        let y = ya + l;
        if l == 1 && !has_b {
            return T::ZERO;
        }
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
    build_pair(&sh, ax, line, 0);
    sync_threads();
    let res = fft(&sh, ax, false, 0);
    let out = post_pair(&sh, ax, res);
    let row = (ya - 1) * n;
    let mut k = tid();
    while k < n {
        work.set(row + k, sh.get(out + k));
        if has_b {
            work.set(row + n + k, sh.get(out + n + k));
        }
        k += threads();
    }
}

/// Pass 2: one block per pair of neighbouring columns `c = 2 block` and
/// `c + 1` of `work` (`my x mx`): the columns' forward transforms, the
/// division by `lambda_x(c) + lambda_y(k)` times `scale` (the inverse
/// transforms' normalisation; a zero eigenvalue, the constant mode of the
/// Neumann problem, gives 0: the zero-mean gauge), and the raw inverses,
/// written back in place.
///
/// Thread mapping: thread `t` reads and writes rows `t, t + threads, ...`
/// of both columns, which share their sectors, so a pair of columns costs
/// the memory transactions of one. Shared layout: as
/// [`spectral_rows_forward`]; the divided spectra stay where the forward
/// transform left them, as two real lines. Dirichlet transforms back one
/// line at a time, so the second line's spectrum waits in the stash
/// ([`stashed_bytes`]) while the first is transformed: a shared-memory
/// copy instead of a strided write and read of its column in `work`.
#[kernel(
    launch_bounds(256),
    instances(
        <f32, false> => (max_registers = 128, name = "spectral_columns_solve_f32"),
        <f64, false> => (launch_bounds(512), max_registers = 128, name = "spectral_columns_solve_f64"),
        <f64, true> => (launch_bounds(384), max_registers = 168, name = "spectral_columns_solve_f64_narrow"),
    )
)]
pub fn spectral_columns_solve<T: Complex, const NARROW: bool>(
    work: DeviceSliceMut<T>,
    plan_x: DeviceSlice<T>,
    plan_y: DeviceSlice<T>,
    fac_y: DeviceSlice<u32>,
    grid: SpectralGrid,
    scale: T,
) {
    check_block();
    let (mx, my) = (grid.nx as usize - 2, grid.ny as usize - 2);
    let ax = grid.axis(my, plan_y, fac_y);
    if plan_x.len() < mx || work.len() < mx * my {
        ptxlab_device::trap("spectral: the x plan or the work array is too short");
    }
    let (sh, stash) = shared_with_stash::<T>(ax.nf, my);
    let c = 2 * thread::block_idx_x() as usize;
    if c >= mx {
        return;
    }
    let has_b = c + 1 < mx;
    let nfx = fft_len(grid.kind, mx);
    let lx = |l: usize| {
        if l == 0 || has_b {
            plan_x.get(4 * nfx + c + l)
        } else {
            T::ZERO
        }
    };
    let (lxa, lxb) = (lx(0), lx(1));
    let line = buf(1, ax.nf);
    load_both(&sh, line, line + my, my, |i| {
        let at = i * mx + c;
        // SAFETY: `i < my` and `c + 1 < mx` where read, so both indices are
        // below `mx my <= work.len()` (checked above).
        unsafe {
            let a = work.get_unchecked(at);
            (a, if has_b { work.get_unchecked(at + 1) } else { T::ZERO })
        }
    });
    sync_threads();
    build_pair(&sh, ax, line, 0);
    sync_threads();
    let res = fft(&sh, ax, false, 0);
    let out = post_pair(&sh, ax, res);
    let div = |x: T, d: T| if d == T::ZERO { T::ZERO } else { x * scale / d };
    let mut k = tid();
    guard(&sh, out + 2 * my);
    while k < my {
        // SAFETY: `k < my = n` of the axis (checked); `out + my + k < out + 2
        // my` (guarded above).
        unsafe {
            let ly = ax.eig(k);
            st(&sh, out + k, div(ld(&sh, out + k), lxa + ly));
            st(&sh, out + my + k, div(ld(&sh, out + my + k), lxb + ly));
        }
        k += threads();
    }
    sync_threads();
    // Value `i` of column `c + l`; `dst_line` and `dct3_pair` pass `i < n =
    // my`, and `l = 1` only with `has_b` (`c + 1 < mx`).
    let put = |i: usize, l: usize, x: T| {
        // SAFETY: `i mx + c + l < my mx <= work.len()` (checked above) under
        // the callers' contract stated above.
        unsafe { work.set_unchecked(i * mx + c + l, x) }
    };
    if grid.kind != DIRICHLET {
        dct3_pair(&sh, ax, out, res, |i, xa, xb| {
            put(i, 0, xa);
            if has_b {
                put(i, 1, xb);
            }
        });
        return;
    }
    // The DST-I back, one line at a time (see `dst_line`): line b's
    // spectrum waits in the stash meanwhile, or in its own column of
    // `work` when the launch gave no room for the stash.
    if let Some(s) = stash {
        if has_b {
            let mut k = tid();
            while k < my {
                sh.set(s + k, sh.get(out + my + k));
                k += threads();
            }
        }
        dst_line(&sh, ax, out, res, |i, x| put(i, 0, x));
        if has_b {
            sync_threads();
            dst_line(&sh, ax, s, 0, |i, x| put(i, 1, x));
        }
        return;
    }
    if has_b {
        let mut k = tid();
        while k < my {
            work.set(k * mx + c + 1, sh.get(out + my + k));
            k += threads();
        }
    }
    dst_line(&sh, ax, out, res, |i, x| put(i, 0, x));
    if has_b {
        sync_threads();
        load_line(&sh, line, my, |i| work.get(i * mx + c + 1));
        sync_threads();
        dst_line(&sh, ax, line, 0, |i, x| put(i, 1, x));
    }
}

/// Pass 3: one block per pair of grid rows `y = 2 block` and `y + 1`: the
/// raw inverse of work row `y - 1`, written to the interior of row `y` of
/// `p`, and the boundary cells of the row. Dirichlet: the boundary is
/// `p0`'s (the first and last rows are copied and not transformed).
/// Neumann: a ghost cell is `p_inner + h g` (`g` the boundary cell of
/// `p0`); the first and last rows transform the rows next to them; a
/// corner takes the value of its diagonal interior neighbour.
///
/// Thread mapping and shared layout: as [`spectral_rows_forward`], and
/// with the stash ([`stashed_bytes`]) a Dirichlet block loads both of its
/// work rows at once (the second into the stash), so one load phase waits
/// on memory instead of two.
#[kernel(
    launch_bounds(256),
    instances(
        <f32, false> => (max_registers = 128, name = "spectral_rows_inverse_f32"),
        <f64, false> => (launch_bounds(512), max_registers = 128, name = "spectral_rows_inverse_f64"),
        <f64, true> => (launch_bounds(384), max_registers = 168, name = "spectral_rows_inverse_f64_narrow"),
    )
)]
pub fn spectral_rows_inverse<T: Complex, const NARROW: bool>(
    work: DeviceSlice<T>,
    p0: DeviceSlice<T>,
    p: DeviceSliceMut<T>,
    plan: DeviceSlice<T>,
    fac: DeviceSlice<u32>,
    grid: SpectralGrid,
    h: T,
) {
    check_block();
    let (nx, ny, kind) = (grid.nx as usize, grid.ny as usize, grid.kind);
    let n = nx - 2;
    let ax = grid.axis(n, plan, fac);
    let (sh, stash) = shared_with_stash::<T>(ax.nf, n);
    let ya = 2 * thread::block_idx_x() as usize;
    if ya >= ny {
        return;
    }
    // Row `ya + l`, and whether it is transformed (present, and not a
    // Dirichlet boundary row, which is copied from `p0`).
    let slot = |l: usize| {
        let y = ya + l;
        let edge = y == 0 || y == ny - 1;
        (y, edge, y < ny && !(edge && kind == DIRICHLET))
    };
    ptxlab_device::unroll!(l in [0, 1] {
        let (y, edge, live) = slot(l);
        if y < ny && edge && !live {
            let mut x = tid();
            while x < nx {
                p.set(y * nx + x, p0.get(y * nx + x));
                x += threads();
            }
        }
    });
    if !slot(0).2 && !slot(1).2 {
        return;
    }
    let line = buf(1, ax.nf);
    let store = |l: usize, i: usize, x: T| {
        let (y, edge, live) = slot(l);
        if !live {
            return;
        }
        let row = y * nx;
        let cell = row + 1 + i;
        if edge {
            // Neumann ghost row.
            p.set(cell, x + h * p0.get(cell));
        } else {
            p.set(cell, x);
        }
        // The boundary cell beside the first and the last interior cell.
        let wall = |w: usize| {
            let v = if kind == DIRICHLET && !edge {
                p0.get(w)
            } else if edge {
                x
            } else {
                x + h * p0.get(w)
            };
            p.set(w, v);
        };
        if i == 0 {
            wall(row);
        }
        if i == n - 1 {
            wall(row + nx - 1);
        }
    };
    if let (DIRICHLET, Some(s)) = (kind, stash) {
        // Both rows loaded at once (the second into the stash), then the
        // DST-I back one row at a time (see `dst_line`).
        load_two(&sh, line, s, n, |l, i| {
            let (y, _, live) = slot(l);
            if live { work.get((y - 1) * n + i) } else { T::ZERO }
        });
        sync_threads();
        ptxlab_device::unroll!(l in [0, 1] {
            if slot(l).2 {
                dst_line(&sh, ax, if l == 0 { line } else { s }, 0, |i, x| store(l, i, x));
                sync_threads();
            }
        });
        return;
    }
    if kind == DIRICHLET {
        // The DST-I back one row at a time (see `dst_line`).
        ptxlab_device::unroll!(l in [0, 1] {
            let (y, _, live) = slot(l);
            if live {
                load_line(&sh, line, n, |i| work.get((y - 1) * n + i));
                sync_threads();
                dst_line(&sh, ax, line, 0, |i, x| store(l, i, x));
                sync_threads();
            }
        });
        return;
    }
    load_pair(&sh, line, n, |l, i| {
        let (y, _, live) = slot(l);
        if live {
            work.get((y.clamp(1, ny - 2) - 1) * n + i)
        } else {
            T::ZERO
        }
    });
    sync_threads();
    dct3_pair(&sh, ax, line, 0, |i, xa, xb| {
        store(0, i, xa);
        store(1, i, xb);
    });
}
