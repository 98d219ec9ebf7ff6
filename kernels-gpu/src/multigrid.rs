//! Geometric multigrid for the 2D Poisson equation of [`crate::poisson`]:
//! the kernels of a V-cycle, W-cycle, full multigrid (FMG) and
//! multigrid-preconditioned conjugate gradients (PCG).
//!
//! # The equation on every level
//! The fine level is the Jacobi ladder's system: `lap_h p = b` on the
//! interior, Dirichlet values on the boundary ring, `lap_h` the 5-point
//! Laplacian with spacing `h` in x and y. A sweep of the smoother below on the
//! fine level, `u = (cx (uW + uE) + cy (uS + uN) - f) w` with
//! `cx = cy = 1 / h^2` and `w = 1 / (2 cx + 2 cy) = h^2 / 4`, is the Jacobi
//! update `0.25 (pW + pE + pN + pS) - k b` (`k = h^2 / 4`) applied in
//! Gauss-Seidel order: both solve the same linear system.
//!
//! The solver works on the *error equation*: given the current field `p`
//! (f64), the defect kernel forms `r = b - lap_h p`, and the cycle solves
//! `lap_h e = r` for the correction `e` with zero Dirichlet values, then
//! `p += e`. Every level `l` stores a full grid (interior plus a boundary
//! ring of zeros): the correction `u` and its right-hand side `f`, in the
//! cycle's precision `T` (f64, or f32 for the mixed-precision solve: f64
//! field and residual, f32 cycles, i.e. iterative refinement).
//!
//! # Coarse grids of any shape
//! A level with `n` interior points per axis and spacing `H = L / (n + 1)`
//! (`L` the domain's length, fixed) has a coarse level with `n / 2`
//! (rounded down) interior points and spacing `L / (n / 2 + 1)`. When `n`
//! is odd the coarse points are every other fine point (`2^k - 1` interior
//! points coarsen perfectly); when `n` is even the coarse grid is still
//! uniform but its points fall between fine points, at fine index
//! `i = I (n + 1) / (n / 2 + 1)`. Transfers are written for that general
//! position, with a fast path for the nested case:
//! * prolongation: bilinear interpolation of the coarse correction at each
//!   fine point (`i0 = floor(i num / den)`, weight `frac(i num / den)`, with
//!   `num = nc + 1`, `den = nf + 1` the two levels' interval counts);
//! * restriction: the transpose of that interpolation scaled by
//!   `(num_x num_y) / (den_x den_y)`, which in the nested case is full
//!   weighting (`[1 2 1] / 4` per axis).
//!
//! An axis whose interior has one point is not coarsened (`num = den`:
//! the transfers are the identity along it), so a 4097 x 3 grid coarsens in
//! x only. The coarsest level has one interior point, which one sweep solves
//! exactly. The coarse operator is the same 5-point Laplacian with the
//! level's own spacings `cx = 1 / Hx^2`, `cy = 1 / Hy^2` (anisotropic when
//! the axes coarsen differently).
//!
//! # The kernels
//! | kernel | does | memory per fine cell (f64 cycle) |
//! |---|---|---|
//! | [`mg_smooth_rb`] | one colour of a red-black Gauss-Seidel sweep, in place (rung 1) | ~24 B per colour |
//! | [`mg_smooth_tile`] | `s` whole sweeps in shared memory, optionally after the prolongation (rung 2) | 16-26 B per call |
//! | [`mg_restrict`] | residual `f - lap u` and its restriction in one pass; zeroes the coarse correction | ~20 B |
//! | [`mg_prolong`] | `u += P uc` (or `u = P uc` for FMG) | ~16 B |
//! | [`mg_defect`] | `p_out = p_in + e`, `r = b - lap p_out`, `sum r^2` (one pass, f64) | 40 B |
//! | [`mg_residual`] | `r = b - lap p`, `sum r^2` (the start of PCG, and the final check) | 32 B |
//! | [`mg_cg_dir`], [`mg_cg_update`], [`mg_cg_dot`], [`mg_cg_shift`] | the PCG iteration, its scalars kept on the device | |
//! | [`mg_clear`] | zeroes the reduction slots (inside a captured graph) | |
//! | [`mg_restrict_slab`], [`mg_prolong_slab`], [`mg_defect_slab`] | the transfers and the outer step on a row slab of a level split over several devices (global row positions) | as above |
//!
//! Each kernel is generic over the cycle's precision `T` and built for
//! `f32` and `f64` (entries `<kernel>_f32`, `<kernel>_f64`); the fine-level
//! field `p`, the right-hand side `b` and the residual are always f64.
//!
//! # Launch shapes
//! Row kernels use blocks of [`BLOCK`] x 1 threads: `blockIdx.x` covers the
//! columns, and `blockIdx.y` strides over the rows (`y += gridDim.y`), so the
//! host can cap the grid (reductions: about 8 blocks per SM, one atomic per
//! block). The tile smoother uses blocks of [`BLOCK`] threads over
//! [`TILE_OX`] x [`TILE_OY`] output tiles. Reductions reuse
//! [`crate::reduce::block_sum`] (warp shuffles, one shared slot per warp).

use crate::reduce::{block_sum, warp_slots_shared_bytes};
use ptxlab_device::prelude::*;

/// Threads per block of every multigrid kernel.
pub const BLOCK: u32 = 256;
/// Output tile width of the tile smoother (cells).
pub const TILE_OX: usize = 64;
/// Output tile height of the tile smoother (cells).
pub const TILE_OY: usize = 32;
/// Most sweeps per call of the tile smoother (its halo is `2 s` cells).
pub const MAX_TILE_SWEEPS: u32 = 4;

/// Slots of the PCG scalars in the device array they live in.
pub mod slot {
    /// `<rho, z>` of this iteration (`gamma`).
    pub const GAMMA: usize = 0;
    /// `<rho, z>` of the previous iteration.
    pub const GAMMA_OLD: usize = 1;
    /// `<d, lap d>`.
    pub const DQ: usize = 2;
    /// `||rho||^2` after the update.
    pub const RHO2: usize = 3;
    /// Slots in all.
    pub const COUNT: usize = 4;
}

/// `mode` bits of [`mg_smooth_tile`]: the first colour (0 red, 1 black).
pub const MODE_BLACK_FIRST: u32 = 1;
/// `mode` bit: start from a zero correction (do not read `u_in`).
pub const MODE_ZERO: u32 = 2;
/// `mode` bit: add the prolongation of `uc` to `u_in` while loading.
pub const MODE_PROLONG: u32 = 4;
/// `mode` bit: load the boundary ring from `u_in` and keep it (the fine
/// level of rung 5 holds the field, whose boundary carries the Dirichlet
/// values; without it the ring is zero, as a correction's is).
pub const MODE_DIRICHLET: u32 = 8;
/// `mode` bit: after the sweeps, add `sum r^2` over the output tile's
/// interior cells (`r = f - lap u`) to `acc[0]`: the residual of the last
/// sweep, with no pass of its own (rung 5).
pub const MODE_RESIDUAL: u32 = 16;
/// `mode` bits 8..: the number of sweeps (1..=[`MAX_TILE_SWEEPS`]).
pub const MODE_SWEEPS_SHIFT: u32 = 8;

/// The sweep count a tile-smoother `mode` asks for.
pub const fn mode_sweeps(mode: u32) -> u32 {
    mode >> MODE_SWEEPS_SHIFT
}

/// Dynamic shared memory of the reduction kernels: one f64 slot per warp.
pub const fn reduce_shared_bytes() -> usize {
    warp_slots_shared_bytes::<f64>(BLOCK)
}

/// Halo of the tile smoother for `mode`: each half-sweep of red-black
/// Gauss-Seidel invalidates one more ring of the tile (`2 s` for `s`
/// sweeps), and the residual of the output tile ([`MODE_RESIDUAL`]) needs
/// one ring more.
pub const fn tile_halo(mode: u32) -> usize {
    2 * mode_sweeps(mode) as usize + if mode & MODE_RESIDUAL != 0 { 1 } else { 0 }
}

/// Shared tile of the smoother: `(TILE_OX + 2 halo) x (TILE_OY + 2 halo)`.
pub const fn tile_dims(mode: u32) -> (usize, usize) {
    (
        TILE_OX + 2 * tile_halo(mode),
        TILE_OY + 2 * tile_halo(mode),
    )
}

/// Dynamic shared memory of the tile smoother: the correction and the
/// right-hand side over the tile with its halo, then one f64 slot per warp
/// for the residual's block sum.
pub const fn tile_shared_bytes<T>(mode: u32) -> usize {
    let (w, h) = tile_dims(mode);
    let uf = shared::shared_bytes::<T>(shared::shared_bytes::<T>(0, w * h), w * h);
    shared::shared_bytes::<f64>(uf, (BLOCK / WARP_SIZE) as usize)
}

/// One point of an over-relaxed (SOR) red-black sweep: `old + omega (gs -
/// old)`, `gs` the Gauss-Seidel value ([`gs_point`]). `omega = 1` is plain
/// Gauss-Seidel (the host and the CPU solver use the same expression).
#[inline(always)]
pub fn sor<T: Real>(old: T, gs: T, omega: T) -> T {
    old + omega * (gs - old)
}

/// Stops the kernel unless the grid is at least 3 x 3 and every buffer in
/// `lens` holds `nx * ny` cells.
#[inline(always)]
fn check_grid(lens: &[usize], nx: u32, ny: u32, what: &'static str) {
    let n = nx as usize * ny as usize;
    let mut ok = nx >= 3 && ny >= 3;
    for &l in lens {
        ok &= l >= n;
    }
    if !ok {
        ptxlab_device::trap(what);
    }
}

/// Whether the integer products of [`coarse_pos`], [`fine_range`] and
/// [`weight`] (at most `den (num + 1)`) fit in 32 bits: then they use 32-bit
/// division, several times cheaper on a GPU than 64-bit. Both paths give the
/// same integers.
#[inline(always)]
fn fits_u32(num: u32, den: u32) -> bool {
    den as u64 * (num as u64 + 1) <= u32::MAX as u64
}

/// Position of fine point `i` on the coarse axis (shared with the host's
/// CPU reference, so both place the points identically), as `(i0, frac)`: the
/// point lies between coarse points `i0` and `i0 + 1` at fraction `frac`.
/// `num = nc - 1`, `den = nf - 1` (interval counts, `num <= den`).
#[inline(always)]
pub fn coarse_pos<T: Real>(i: u32, num: u32, den: u32) -> (u32, T) {
    if 2 * num == den {
        (i / 2, T::from_f64(0.5 * (i & 1) as f64))
    } else if num == den {
        (i, T::ZERO)
    } else {
        let (i0, rem) = if fits_u32(num, den) {
            let t = i * num;
            (t / den, t % den)
        } else {
            let t = i as u64 * num as u64;
            ((t / den as u64) as u32, (t % den as u64) as u32)
        };
        (i0, T::from_f64(rem as f64 / den as f64))
    }
}

/// The fine points whose interpolation weight to coarse point `c` is
/// positive: `(c - 1) den < i num < (c + 1) den`, as an inclusive range.
#[inline(always)]
pub fn fine_range(c: u32, num: u32, den: u32) -> (u32, u32) {
    if num == den {
        (c, c)
    } else if 2 * num == den {
        (2 * c - 1, 2 * c + 1)
    } else if fits_u32(num, den) {
        ((c - 1) * den / num + 1, ((c + 1) * den - 1) / num)
    } else {
        let (c, num, den) = (c as u64, num as u64, den as u64);
        let lo = (c - 1) * den / num + 1;
        let hi = ((c + 1) * den - 1) / num;
        (lo as u32, hi as u32)
    }
}

/// Interpolation weight of fine point `i` to coarse point `c`:
/// `1 - |i num - c den| / den`.
#[inline(always)]
pub fn weight<T: Real>(i: u32, c: u32, num: u32, den: u32) -> T {
    let d = if fits_u32(num, den) {
        (i * num).abs_diff(c * den) as u64
    } else {
        (i as u64 * num as u64).abs_diff(c as u64 * den as u64)
    };
    T::ONE - T::from_f64(d as f64 / den as f64)
}

/// The smoother's point update: `(cx (W + E) + cy (S + N) - f) w`.
#[inline(always)]
pub fn gs_point<T: Real>(we: T, sn: T, f: T, cx: T, cy: T, w: T) -> T {
    (cx * we + cy * sn - f) * w
}

/// `1 / (2 cx + 2 cy)`, the inverse diagonal of the level's operator.
#[inline(always)]
pub fn inv_diag<T: Real>(cx: T, cy: T) -> T {
    T::ONE / (T::from_f64(2.0) * cx + T::from_f64(2.0) * cy)
}

// ---------------------------------------------------------------- rung 1: smoother

/// Rung 1: one colour of a red-black Gauss-Seidel sweep of
/// `lap u = f` on a level, in place.
///
/// Thread mapping: blocks of [`BLOCK`] x 1; thread `t` of the row grid
/// updates the `t`-th cell of colour `colour` (`(x + y) & 1`: 0 red, 1 black)
/// of each row `y` it visits (`y = 1 + blockIdx.y, += gridDim.y`). A cell's
/// four neighbours have the other colour, so updating one colour in place is
/// race-free and is exactly Gauss-Seidel in red-black order. `zero = 1`
/// treats `u` as zero (the first half-sweep from a zero start: no neighbour
/// loads). Boundary cells are never written. No shared memory.
///
/// Why red-black Gauss-Seidel: it damps the high-frequency half of the error
/// by about 4x per sweep (Jacobi: about 3x with the best weight), in place,
/// and in parallel. What it costs: two launches per sweep, each reading the
/// whole row (the colours interleave in every cache line) and writing half
/// of it, about 48 bytes per cell and sweep in f64.
#[kernel(launch_bounds(256), instances(f32, f64))]
#[allow(clippy::too_many_arguments)]
pub fn mg_smooth_rb<T: Real>(
    u: DeviceSliceMut<T>,
    f: DeviceSlice<T>,
    nx: u32,
    ny: u32,
    cx: T,
    cy: T,
    omega: T,
    colour: u32,
    zero: u32,
) {
    check_grid(
        &[u.len(), f.len()],
        nx,
        ny,
        "mg_smooth_rb: bad grid or buffer",
    );
    let xh = thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
    let w = inv_diag(cx, cy);
    let width = nx as usize;
    let mut y = 1 + thread::block_idx_y();
    while y + 1 < ny {
        // The cells of colour `colour` ((x + y) & 1) in row y, in order.
        let x = 1 + 2 * xh + ((1 + y + colour) & 1);
        let xo = 1 + 2 * xh + ((y + colour) & 1);
        if zero != 0 && xo + 1 < nx {
            // From zero, the other colour's cell of this pair becomes 0 too
            // (the next half-sweep reads it as its old value). No thread
            // reads a neighbour in a launch from zero: no race.
            // SAFETY: 1 <= xo <= nx - 2 and 1 <= y <= ny - 2: inside `u`.
            unsafe { u.set_unchecked(y as usize * width + xo as usize, T::ZERO) };
        }
        if x + 1 < nx {
            let i = y as usize * width + x as usize;
            // SAFETY: 1 <= x <= nx - 2 and 1 <= y <= ny - 2, so the cell and
            // its four neighbours lie inside the nx * ny cells both buffers
            // hold (checked at entry). The neighbours have the other colour:
            // no thread of this launch writes them.
            unsafe {
                let v = if zero != 0 {
                    sor(
                        T::ZERO,
                        gs_point(T::ZERO, T::ZERO, f.get_unchecked(i), cx, cy, w),
                        omega,
                    )
                } else {
                    let we = u.as_const().get_unchecked(i - 1) + u.as_const().get_unchecked(i + 1);
                    let sn = u.as_const().get_unchecked(i - width)
                        + u.as_const().get_unchecked(i + width);
                    let gs = gs_point(we, sn, f.get_unchecked(i), cx, cy, w);
                    sor(u.as_const().get_unchecked(i), gs, omega)
                };
                u.set_unchecked(i, v);
            }
        }
        y += thread::grid_dim_y();
    }
}

// ---------------------------------------------------------------- rung 2: tile smoother

/// Bilinear interpolation of the coarse correction `uc` (`ncx` x `ncy`) at
/// fine point `(x, y)` of an `nx` x `ny` level.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn interpolate<T: Real>(
    uc: &DeviceSlice<T>,
    x: u32,
    y: u32,
    nx: u32,
    ny: u32,
    ncx: u32,
    ncy: u32,
) -> T {
    let (i0, wx) = coarse_pos::<T>(x, ncx - 1, nx - 1);
    let (j0, wy) = coarse_pos::<T>(y, ncy - 1, ny - 1);
    let w = ncx as usize;
    let c = j0 as usize * w + i0 as usize;
    // SAFETY: for an interior fine point (1 <= x <= nx - 2), x (ncx - 1) <
    // (nx - 1)(ncx - 1), so i0 <= ncx - 2 and i0 + 1 <= ncx - 1; likewise
    // j0 + 1 <= ncy - 1: all four corners lie in the ncx * ncy cells of `uc`
    // (checked by the caller).
    let (c00, c10, c01, c11) = unsafe {
        (
            uc.get_unchecked(c),
            uc.get_unchecked(c + 1),
            uc.get_unchecked(c + w),
            uc.get_unchecked(c + w + 1),
        )
    };
    let one = T::ONE;
    (one - wy) * ((one - wx) * c00 + wx * c10) + wy * ((one - wx) * c01 + wx * c11)
}

/// Columns of the tile smoother's block (a warp); rows are `BLOCK / TILE_TX`.
pub const TILE_TX: u32 = 32;
/// Rows of the tile smoother's block.
pub const TILE_TY: u32 = BLOCK / TILE_TX;
/// Most tile columns one thread loads: `(TILE_OX + 4 MAX_TILE_SWEEPS + 2) / 32`, rounded up.
const TILE_COLS: usize = (TILE_OX + 4 * MAX_TILE_SWEEPS as usize + 2).div_ceil(TILE_TX as usize);

/// Shared index of tile cell `(lx, ly)` in the colour-split layout of
/// [`mg_smooth_tile`]: the cells whose local parity `(lx + ly) & 1` is 0
/// come first (`plane` of them, `hw = sw / 2` a row), then those of parity
/// 1, each half row-major with `lx / 2` as its column.
#[inline(always)]
fn split_index(lx: i32, ly: i32, hw: i32, plane: i32) -> usize {
    (((lx + ly) & 1) * plane + ly * hw + (lx >> 1)) as usize
}

/// Rung 2: `s` whole red-black sweeps (Gauss-Seidel over-relaxed by
/// `omega`, [`sor`]) in shared memory, out of place (`u_in` -> `u_out`),
/// optionally after adding the prolongation of the coarse correction.
///
/// `mode`: bit 0 the first colour ([`MODE_BLACK_FIRST`]: black-red, the
/// reverse of pre-smoothing, which keeps the V-cycle symmetric for PCG),
/// [`MODE_ZERO`] (start from zero: `u_in`'s interior is not read),
/// [`MODE_PROLONG`] (`u_in + P uc`, bilinear, `interpolate`),
/// [`MODE_DIRICHLET`] (the level holds a field: its boundary ring is loaded
/// from `u_in` and written back unchanged, instead of zero),
/// [`MODE_RESIDUAL`] (add the output tile's `sum r^2` to `acc[0]`), and the
/// sweep count `s` in bits 8.. (`1..=`[`MAX_TILE_SWEEPS`]).
///
/// Thread mapping: one block of [`TILE_TX`] x [`TILE_TY`] threads per
/// [`TILE_OX`] x [`TILE_OY`] output tile. Loading and storing, thread
/// `(tx, ty)` takes tile columns `tx, tx + 32, ...` and rows `ty, ty + 8,
/// ...`, so a column's place on the coarse grid is computed once. In a
/// half-sweep the block's 256 threads stride over the colour's cells as one
/// flat range (see below), so that every lane has a cell: with one warp per
/// row, a row's 37 cells of a colour took two passes, the second with 5
/// lanes of 32 busy, and the kernel is limited by issued instructions, not
/// by memory.
///
/// Shared layout ([`tile_shared_bytes`]): the correction and the
/// right-hand side over the tile plus a halo of `2 s` cells on each side
/// (`2 s + 1` with [`MODE_RESIDUAL`]), one after the other, then one f64
/// slot per warp (the residual's block sum). Each array is split by
/// colour (`split_index`): the cells of one parity first, row-major with
/// `lx / 2` as the column, then the other parity. All the cells a
/// half-sweep updates are then one contiguous plane and their neighbours
/// the other, and consecutive threads read consecutive words; in a plain
/// row-major tile they are every other word, which spreads a warp's f64
/// access over twice as many shared-memory wavefronts (bank conflicts).
/// The kernel is limited by issued instructions more than by shared memory,
/// so the wavefronts the split saves weigh against the index arithmetic it
/// adds, which matters most where a row-major access cost least (f32;
/// figures in `docs/workloads/poisson.md`).
///
/// The block loads both arrays (clipped to the grid), then runs `2 s`
/// half-sweeps, each over the cells of one colour, with one barrier per
/// half-sweep; a half-sweep can update only cells whose four neighbours are
/// in the tile, so each one leaves one more ring stale, and after `2 s` the
/// cells at distance `>= 2 s` from the tile's edge (the output tile) are
/// exactly what `s` global sweeps give. Domain boundary cells are never
/// updated (Dirichlet).
///
/// What changed from rung 1: one launch and one pass over memory for `s`
/// sweeps (and the prolongation) instead of `2 s` launches, `2 s` passes
/// and a separate correction pass: about 26 bytes per cell for prolongation
/// plus two sweeps in f64, against about 112. What it costs: the halo is
/// loaded and updated redundantly ((64 + 8)(32 + 8) / (64 x 32) = 1.4x the
/// cells for `s = 2`; the extra loads are L2 hits), and the output must go
/// to a second buffer (neighbouring blocks read the halo from `u_in`).
///
/// What [`MODE_DIRICHLET`] and [`MODE_RESIDUAL`] add (rung 5, the finest
/// level holding the field): the residual of the last sweep comes out of
/// the tile already in shared memory (each output cell's neighbours are
/// exact with the extra ring), reduced per warp and added with one atomic
/// per block, so the cycle needs no separate pass over the field to
/// measure its residual or to add its correction.
#[kernel(launch_bounds(256), instances(f32, f64))]
#[allow(clippy::too_many_arguments)]
pub fn mg_smooth_tile<T: Real>(
    u_in: DeviceSlice<T>,
    f: DeviceSlice<T>,
    uc: DeviceSlice<T>,
    u_out: DeviceSliceMut<T>,
    acc: DeviceSliceMut<f64>,
    nx: u32,
    ny: u32,
    ncx: u32,
    ncy: u32,
    cx: T,
    cy: T,
    omega: T,
    mode: u32,
) {
    check_grid(
        &[u_in.len(), f.len(), u_out.len()],
        nx,
        ny,
        "mg_smooth_tile: bad grid or buffer",
    );
    let sweeps = mode_sweeps(mode);
    let prolong = mode & MODE_PROLONG != 0;
    let zero = mode & MODE_ZERO != 0;
    let dirichlet = mode & MODE_DIRICHLET != 0;
    let residual = mode & MODE_RESIDUAL != 0;
    if sweeps == 0
        || sweeps > MAX_TILE_SWEEPS
        || thread::block_dim_x() != TILE_TX
        || thread::block_dim_y() != TILE_TY
        || nx > i32::MAX as u32 / 2
        || ny > i32::MAX as u32 / 2
        || (prolong && (ncx < 3 || ncy < 3 || ncx > nx || ncy > ny))
        || (prolong && uc.len() < ncx as usize * ncy as usize)
        || (residual && acc.is_empty())
    {
        ptxlab_device::trap("mg_smooth_tile: bad mode, block or coarse grid");
    }
    let halo = tile_halo(mode) as i32;
    let (sw, sh) = tile_dims(mode);
    let (sw, sh) = (sw as i32, sh as i32);
    let cells = (sw * sh) as usize;
    // sw is even (TILE_OX + 2 halo), so each parity has hw cells a row.
    let (hw, plane) = (sw / 2, sw / 2 * sh);
    let su = shared::dynamic_shared::<T>(0, cells);
    let sf = shared::dynamic_shared::<T>(shared::shared_bytes::<T>(0, cells), cells);
    // 32-bit signed coordinates: the tile's origin may be -halo.
    let gx0 = (thread::block_idx_x() * TILE_OX as u32) as i32 - halo;
    let gy0 = (thread::block_idx_y() * TILE_OY as u32) as i32 - halo;
    let (nxi, nyi) = (nx as i32, ny as i32);
    let (tx, ty) = (thread::thread_idx_x() as i32, thread::thread_idx_y() as i32);
    let (ctx, cty) = (TILE_TX as i32, TILE_TY as i32);
    let width = nx as usize;
    // This thread's tile columns (tx, tx + 32, ...): where each falls on the
    // coarse grid, computed once for all its rows.
    let mut cpos = [(0u32, T::ZERO); TILE_COLS];
    if prolong {
        let mut c = 0;
        let mut lx = tx;
        while lx < sw && c < TILE_COLS {
            let gx = gx0 + lx;
            if gx > 0 && gx + 1 < nxi {
                cpos[c] = coarse_pos::<T>(gx as u32, ncx - 1, nx - 1);
            }
            lx += ctx;
            c += 1;
        }
    }
    // Load the tile: correction (zero, or u_in, plus the prolongation) and
    // right-hand side; cells outside the grid are never read again.
    let mut ly = ty;
    while ly < sh {
        let gy = gy0 + ly;
        if gy >= 0 && gy < nyi {
            let row_interior = gy > 0 && gy + 1 < nyi;
            let (j0, wy) = if prolong && row_interior {
                coarse_pos::<T>(gy as u32, ncy - 1, ny - 1)
            } else {
                (0, T::ZERO)
            };
            let mut lx = tx;
            let mut c = 0;
            while lx < sw {
                let gx = gx0 + lx;
                if gx >= 0 && gx < nxi {
                    let g = gy as usize * width + gx as usize;
                    let l = split_index(lx, ly, hw, plane);
                    let interior = row_interior && gx > 0 && gx + 1 < nxi;
                    // SAFETY: (gx, gy) is inside the grid, so g < nx * ny <=
                    // each length (checked at entry); l < 2 plane = cells.
                    // With the prolongation, an interior fine point's coarse
                    // cell (i0, j0) has i0 + 1 <= ncx - 1 and j0 + 1 <= ncy - 1
                    // (see `interpolate`), inside `uc` (length checked).
                    unsafe {
                        let mut v = if (zero && interior) || !(interior || dirichlet) {
                            T::ZERO
                        } else {
                            u_in.get_unchecked(g)
                        };
                        if prolong && interior {
                            let (i0, wx) = cpos[c];
                            let w = ncx as usize;
                            let k = j0 as usize * w + i0 as usize;
                            let one = T::ONE;
                            let (c00, c10) = (uc.get_unchecked(k), uc.get_unchecked(k + 1));
                            let (c01, c11) = (uc.get_unchecked(k + w), uc.get_unchecked(k + w + 1));
                            v += (one - wy) * ((one - wx) * c00 + wx * c10)
                                + wy * ((one - wx) * c01 + wx * c11);
                        }
                        su.set_unchecked(l, v);
                        sf.set_unchecked(l, f.get_unchecked(g));
                    }
                }
                lx += ctx;
                c += 1;
            }
        }
        ly += cty;
    }
    sync_threads();
    let w = inv_diag(cx, cy);
    let first = (mode & MODE_BLACK_FIRST) as i32;
    // Updatable cells: in the tile's inner part and inside the domain.
    let (x_lo, x_hi) = (1.max(1 - gx0), (sw - 2).min(nxi - 2 - gx0));
    let (y_lo, y_hi) = (1.max(1 - gy0), (sh - 2).min(nyi - 2 - gy0));
    // A half-sweep updates the cells of one colour, which all lie in one
    // plane of the split layout (the plane of local parity (colour + gx0 +
    // gy0) & 1), the other plane holding their neighbours. The block's
    // threads stride over that plane's rows y_lo..=y_hi as one flat range
    // (k = ly hw + m, k += BLOCK), so every lane has a cell in every pass
    // but the last; (ly, m) advance by (BLOCK / hw, BLOCK % hw) with a carry
    // instead of a division per cell.
    let rank = thread::thread_rank() as i32;
    let (ly0, m0) = (y_lo + rank / hw, rank % hw);
    let (dly, dm) = (BLOCK as i32 / hw, BLOCK as i32 % hw);
    let hwu = hw as usize;
    for k in 0..2 * sweeps as i32 {
        let colour = (first + k) & 1;
        let q = (colour + gx0 + gy0) & 1;
        let (own, other) = ((q * plane) as usize, ((1 - q) * plane) as usize);
        let (mut ly, mut m) = (ly0, m0);
        while ly <= y_hi {
            // This row's cells of the colour sit at lx = 2 m + par; their
            // west and east neighbours at columns m - 1 + par and m + par
            // of the other plane's row, north and south at column m of its
            // rows above and below.
            let par = (colour + gx0 + gy0 + ly) & 1;
            let lx = 2 * m + par;
            if lx >= x_lo && lx <= x_hi {
                let (r, paru) = ((ly * hw + m) as usize, par as usize);
                // SAFETY: 1 <= lx <= sw - 2 and 1 <= ly <= sh - 2: the cell
                // and its four neighbours lie in the tile (for lx = 2 m + par
                // >= 1, m - 1 + par >= 0; for lx <= sw - 2, m + par < hw);
                // they have the other colour, which no thread writes in this
                // half-sweep.
                unsafe {
                    let o = other + r;
                    let we = su.get_unchecked(o + paru - 1) + su.get_unchecked(o + paru);
                    let sn = su.get_unchecked(o - hwu) + su.get_unchecked(o + hwu);
                    let s = own + r;
                    let gs = gs_point(we, sn, sf.get_unchecked(s), cx, cy, w);
                    su.set_unchecked(s, sor(su.get_unchecked(s), gs, omega));
                }
            }
            m += dm;
            ly += dly;
            if m >= hw {
                m -= hw;
                ly += 1;
            }
        }
        sync_threads();
    }
    // Write the output tile (cells at distance >= 2 s from the tile's edge
    // are exact after the 2 s half-sweeps).
    let mut ly = halo + ty;
    while ly < halo + TILE_OY as i32 {
        let gy = gy0 + ly;
        let mut lx = halo + tx;
        while lx < halo + TILE_OX as i32 {
            let gx = gx0 + lx;
            if gx < nxi && gy < nyi {
                let g = gy as usize * width + gx as usize;
                // SAFETY: gx, gy >= 0 (lx, ly >= halo) and inside the grid:
                // g is in bounds; (lx, ly) is in the tile, its index < cells.
                unsafe { u_out.set_unchecked(g, su.get_unchecked(split_index(lx, ly, hw, plane))) };
            }
            lx += ctx;
        }
        ly += cty;
    }
    if residual {
        // The residual of the output tile's interior cells: their
        // neighbours are at distance >= 2 s from the tile's edge, exact.
        let two = T::from_f64(2.0);
        let mut sum = 0.0f64;
        let mut ly = halo + ty;
        while ly < halo + TILE_OY as i32 {
            let gy = gy0 + ly;
            let mut lx = halo + tx;
            while lx < halo + TILE_OX as i32 {
                let gx = gx0 + lx;
                if gx > 0 && gy > 0 && gx + 1 < nxi && gy + 1 < nyi {
                    let s = split_index(lx, ly, hw, plane);
                    // The neighbours, of the other parity: one plane over,
                    // west at o = index(lx - 1, ly), east at o + 1, north
                    // and south at column lx / 2 of the rows above and
                    // below (o + even -+ hw, `even` = 1 when lx is even).
                    let o = split_index(lx - 1, ly, hw, plane);
                    let (hwu, even) = (hw as usize, (1 - (lx & 1)) as usize);
                    // SAFETY: an output cell is at distance >= halo >= 1
                    // from the tile's edge: it and its four neighbours are
                    // in the tile, and o, o + 1, o + even -+ hw index them
                    // (< cells).
                    let r = unsafe {
                        let c0 = su.get_unchecked(s);
                        let we = su.get_unchecked(o) + su.get_unchecked(o + 1);
                        let sn = su.get_unchecked(o + even - hwu) + su.get_unchecked(o + even + hwu);
                        sf.get_unchecked(s) - (cx * (we - two * c0) + cy * (sn - two * c0))
                    };
                    let r = r.to_f64();
                    sum += r * r;
                }
                lx += ctx;
            }
            ly += cty;
        }
        let slots = shared::dynamic_shared::<f64>(
            shared::shared_bytes::<T>(shared::shared_bytes::<T>(0, cells), cells),
            (BLOCK / WARP_SIZE) as usize,
        );
        let s = warp::reduce_sum(sum);
        if warp::lane_id() == 0 {
            slots.set(warp::warp_id() as usize, s);
        }
        sync_threads();
        if thread::thread_rank() == 0 {
            let mut total = 0.0f64;
            let mut k = 0;
            while k < (BLOCK / WARP_SIZE) as usize {
                total += slots.get(k);
                k += 1;
            }
            acc.atomic_add(0, total);
        }
    }
}

// ---------------------------------------------------------------- transfers

/// Residual and restriction in one pass: `fc = R (f - lap u)`
/// on the coarse interior, `fc = 0` on its boundary, `uc = 0` everywhere
/// (the coarse level starts from a zero correction). `with_u = 0` restricts
/// `f` alone (FMG's first descent, where `u` is zero).
///
/// Thread mapping: blocks of [`BLOCK`] x 1; one thread per coarse cell
/// (`x` by `blockIdx.x`, rows by a `gridDim.y` stride). The thread gathers
/// the fine points of its restriction stencil (3 x 3 in the nested case, at
/// most 4 x 4 otherwise), computes each one's residual from five loads of `u`
/// and one of `f`, and sums them with the weights of [`weight`]. No shared
/// memory: a fine residual is recomputed by up to four coarse threads, whose
/// loads hit L1.
///
/// Why fused: a separate residual kernel would write a full fine-grid array
/// and the restriction would read it back, 16 bytes per cell more in f64.
#[kernel(launch_bounds(256), instances(f32, f64))]
#[allow(clippy::too_many_arguments)]
pub fn mg_restrict<T: Real>(
    u: DeviceSlice<T>,
    f: DeviceSlice<T>,
    fc: DeviceSliceMut<T>,
    uc: DeviceSliceMut<T>,
    nx: u32,
    ny: u32,
    ncx: u32,
    ncy: u32,
    cx: T,
    cy: T,
    with_u: u32,
) {
    check_grid(
        &[u.len(), f.len()],
        nx,
        ny,
        "mg_restrict: bad fine grid or buffer",
    );
    check_grid(
        &[fc.len(), uc.len()],
        ncx,
        ncy,
        "mg_restrict: bad coarse grid or buffer",
    );
    if ncx > nx || ncy > ny {
        ptxlab_device::trap("mg_restrict: the coarse grid is larger than the fine one");
    }
    let (numx, denx, numy, deny) = (ncx - 1, nx - 1, ncy - 1, ny - 1);
    let scale = T::from_f64((numx as f64 * numy as f64) / (denx as f64 * deny as f64));
    let ci = thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
    let (width, cw) = (nx as usize, ncx as usize);
    let two = T::from_f64(2.0);
    let mut cj = thread::block_idx_y();
    while ci < ncx && cj < ncy {
        let c = cj as usize * cw + ci as usize;
        let mut sum = T::ZERO;
        if ci > 0 && cj > 0 && ci + 1 < ncx && cj + 1 < ncy {
            let (i_lo, i_hi) = fine_range(ci, numx, denx);
            let (j_lo, j_hi) = fine_range(cj, numy, deny);
            // At most 4 fine points per axis (the spacing ratio is >= 1/2):
            // their weights once, not once per point of the stencil.
            let mut wxs = [T::ZERO; 4];
            let mut i = i_lo;
            while i <= i_hi && i - i_lo < 4 {
                wxs[(i - i_lo) as usize] = weight::<T>(i, ci, numx, denx);
                i += 1;
            }
            let mut j = j_lo;
            while j <= j_hi {
                let wy = weight::<T>(j, cj, numy, deny);
                let mut i = i_lo;
                while i <= i_hi && i - i_lo < 4 {
                    let g = j as usize * width + i as usize;
                    // SAFETY: fine_range keeps 1 <= i <= nx - 2 and
                    // 1 <= j <= ny - 2 for an interior coarse point, so the
                    // cell and its neighbours are inside both fine buffers.
                    let r = unsafe {
                        let fv = f.get_unchecked(g);
                        if with_u != 0 {
                            let c0 = u.get_unchecked(g);
                            let we = u.get_unchecked(g - 1) + u.get_unchecked(g + 1);
                            let sn = u.get_unchecked(g - width) + u.get_unchecked(g + width);
                            fv - (cx * (we - two * c0) + cy * (sn - two * c0))
                        } else {
                            fv
                        }
                    };
                    sum += wxs[(i - i_lo) as usize] * wy * r;
                    i += 1;
                }
                j += 1;
            }
            sum *= scale;
        }
        // SAFETY: ci < ncx and cj < ncy: c < ncx * ncy <= both lengths.
        unsafe {
            fc.set_unchecked(c, sum);
            uc.set_unchecked(c, T::ZERO);
        }
        cj += thread::grid_dim_y();
    }
}

/// Prolongation with correction: `u += P uc` on the fine
/// interior (`add = 0`: `u = P uc`, FMG's interpolation of a coarse
/// solution). `P` is bilinear interpolation at each fine point's position on
/// the coarse grid (`interpolate`).
///
/// Thread mapping: blocks of [`BLOCK`] x 1, one thread per fine interior
/// cell, rows by a `gridDim.y` stride; the four coarse values a warp needs
/// are a few cache lines. Used with the rung-1 smoother; rung 2 fuses it
/// into the first post-smoothing pass.
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn mg_prolong<T: Real>(
    uc: DeviceSlice<T>,
    u: DeviceSliceMut<T>,
    nx: u32,
    ny: u32,
    ncx: u32,
    ncy: u32,
    add: u32,
) {
    check_grid(&[u.len()], nx, ny, "mg_prolong: bad fine grid or buffer");
    check_grid(
        &[uc.len()],
        ncx,
        ncy,
        "mg_prolong: bad coarse grid or buffer",
    );
    if ncx > nx || ncy > ny {
        ptxlab_device::trap("mg_prolong: the coarse grid is larger than the fine one");
    }
    let x = 1 + thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
    let width = nx as usize;
    let mut y = 1 + thread::block_idx_y();
    while x + 1 < nx && y + 1 < ny {
        let i = y as usize * width + x as usize;
        let v = interpolate(&uc, x, y, nx, ny, ncx, ncy);
        // SAFETY: 1 <= x <= nx - 2, 1 <= y <= ny - 2: i < nx * ny <= len.
        unsafe {
            let old = if add != 0 {
                u.as_const().get_unchecked(i)
            } else {
                T::ZERO
            };
            u.set_unchecked(i, old + v);
        }
        y += thread::grid_dim_y();
    }
}

// ---------------------------------------------------------------- fine level, f64

/// Adds this block's sum to `acc[slot]` (every thread of the block calls it).
#[inline(always)]
fn block_add(v: f64, acc: &DeviceSliceMut<f64>, slot: usize) {
    let slots = shared::dynamic_shared::<f64>(0, (BLOCK / WARP_SIZE) as usize);
    let s = block_sum(v, slots);
    if thread::thread_idx_x() == 0 {
        acc.atomic_add(slot, s);
    }
}

/// Stops the kernel unless the block is [`BLOCK`] x 1 (the reductions).
#[inline(always)]
fn require_row_block() {
    if thread::block_dim_x() != BLOCK || thread::block_dim_y() != 1 {
        ptxlab_device::trap("multigrid reductions need blocks of BLOCK x 1 threads");
    }
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn defect_body<T: Real>(
    p_in: DeviceSlice<f64>,
    e: Option<(DeviceSlice<T>, f64)>,
    b: DeviceSlice<f64>,
    p_out: Option<DeviceSliceMut<f64>>,
    rho: Option<DeviceSliceMut<f64>>,
    r: DeviceSliceMut<T>,
    acc: DeviceSliceMut<f64>,
    nx: u32,
    ny: u32,
    inv_h2: f64,
    r_scale: f64,
) {
    let mut lens = [
        p_in.len(),
        b.len(),
        r.len(),
        usize::MAX,
        usize::MAX,
        usize::MAX,
    ];
    if let Some((ev, _)) = &e {
        lens[3] = ev.len();
    }
    if let Some(po) = &p_out {
        lens[4] = po.len();
    }
    if let Some(ro) = &rho {
        lens[5] = ro.len();
    }
    check_grid(&lens, nx, ny, "mg_defect: bad grid or buffer");
    if acc.is_empty() {
        ptxlab_device::trap("mg_defect: empty accumulator");
    }
    require_row_block();
    let x = thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
    let width = nx as usize;
    // The corrected field at (x, y): p_in + e_scale e on interior cells.
    let pv = |x: u32, y: u32| -> f64 {
        let i = y as usize * width + x as usize;
        // SAFETY: callers pass cells inside the grid: i < nx * ny <= len.
        unsafe {
            let mut v = p_in.get_unchecked(i);
            if let Some((ev, s)) = &e
                && x > 0
                && y > 0
                && x + 1 < nx
                && y + 1 < ny
            {
                v += s * ev.get_unchecked(i).to_f64();
            }
            v
        }
    };
    let mut sum = 0.0f64;
    let mut y = thread::block_idx_y();
    while y < ny {
        if x < nx {
            let i = y as usize * width + x as usize;
            let c = pv(x, y);
            let interior = x > 0 && y > 0 && x + 1 < nx && y + 1 < ny;
            let res = if interior {
                let s = (pv(x - 1, y) + pv(x + 1, y)) + (pv(x, y - 1) + pv(x, y + 1));
                // SAFETY: i < nx * ny <= b.len().
                let bi = unsafe { b.get_unchecked(i) };
                bi - (s - 4.0 * c) * inv_h2
            } else {
                0.0
            };
            sum += res * res;
            // SAFETY: i < nx * ny <= each output's length (checked at entry).
            unsafe {
                if let Some(po) = &p_out {
                    po.set_unchecked(i, c);
                }
                if let Some(ro) = &rho {
                    ro.set_unchecked(i, res);
                }
                r.set_unchecked(i, T::from_f64(res * r_scale));
            }
        }
        y += thread::grid_dim_y();
    }
    block_add(sum, &acc, 0);
}

/// The outer step of multigrid : `p_out = p_in + e_scale e`
/// on the interior (the boundary copied), `r = (b - lap_h p_out) r_scale` on
/// the interior and 0 on the boundary (the next cycle's right-hand side), and
/// `acc[0] += sum r^2` (unscaled; the host zeroes `acc` first).
/// `e_scale = 0` skips `e` (the first step, from `p0`).
///
/// Thread mapping: blocks of [`BLOCK`] x 1 over every cell of a row, rows by
/// a `gridDim.y` stride (the host sizes `gridDim.y` for about 8 blocks per
/// SM); each thread rebuilds the corrected field at its cell and its four
/// neighbours from `p_in` and `e` (L1 hits), so the update and the residual
/// are one pass and need no barrier, and a thread's `r^2` sums go through
/// [`crate::reduce::block_sum`] and one `atom.add.f64` per block.
///
/// Why out of place: an in-place `p += e` next to neighbour reads of `p`
/// would race between threads. Why f64: the residual of the fine equation is
/// what the tolerance is measured on; in the mixed-precision solve only the
/// cycles run in f32, and their correction is added here in f64, which is
/// what lets an f32 cycle reach a 1e-10 relative residual.
#[kernel(launch_bounds(256), instances(f32, f64))]
#[allow(clippy::too_many_arguments)]
pub fn mg_defect<T: Real>(
    p_in: DeviceSlice<f64>,
    e: DeviceSlice<T>,
    b: DeviceSlice<f64>,
    p_out: DeviceSliceMut<f64>,
    r: DeviceSliceMut<T>,
    acc: DeviceSliceMut<f64>,
    nx: u32,
    ny: u32,
    inv_h2: f64,
    e_scale: f64,
    r_scale: f64,
) {
    let e = if e_scale != 0.0 {
        Some((e, e_scale))
    } else {
        None
    };
    defect_body(
        p_in,
        e,
        b,
        Some(p_out),
        None,
        r,
        acc,
        nx,
        ny,
        inv_h2,
        r_scale,
    );
}

/// Residual of the fine equation: `rho = b - lap_h p` (0 on the
/// boundary), `r = rho r_scale` for the cycle, `acc[0] += sum rho^2`. The
/// start of PCG, and the final check of every solve. Mapping as
/// [`mg_defect`].
#[kernel(launch_bounds(256), instances(f32, f64))]
#[allow(clippy::too_many_arguments)]
pub fn mg_residual<T: Real>(
    p: DeviceSlice<f64>,
    b: DeviceSlice<f64>,
    rho: DeviceSliceMut<f64>,
    r: DeviceSliceMut<T>,
    acc: DeviceSliceMut<f64>,
    nx: u32,
    ny: u32,
    inv_h2: f64,
    r_scale: f64,
) {
    defect_body::<T>(p, None, b, None, Some(rho), r, acc, nx, ny, inv_h2, r_scale);
}

/// Zeroes `acc` (grid-stride). Inside a captured graph the reduction slots
/// cannot be cleared by a host copy, so a kernel does it.
#[kernel(launch_bounds(256))]
pub fn mg_clear(acc: DeviceSliceMut<f64>) {
    for i in thread::grid_stride(acc.len()) {
        acc.set(i, 0.0);
    }
}

// ---------------------------------------------------------------- PCG

/// PCG direction: `d_out = z_scale z + beta d_in` with
/// `beta = s[GAMMA] / s[GAMMA_OLD]` (0 on the first iteration, when
/// `s[GAMMA_OLD]` is 0), `q = lap_h d_out`, `s[DQ] += <d_out, q>`.
///
/// The scalars live on the device ([`slot`]), so a whole PCG iteration
/// (shift, V-cycle, dot, direction, update) is a fixed sequence of launches
/// that a CUDA graph can capture; the host reads only `||rho||^2`.
/// Thread mapping as [`mg_defect`]: each thread rebuilds the new
/// direction at its cell and four neighbours from `z` and `d_in`, so the
/// update, the operator and the dot product are one pass (out of place:
/// `d_in` and `d_out` alternate).
#[kernel(launch_bounds(256), instances(f32, f64))]
#[allow(clippy::too_many_arguments)]
pub fn mg_cg_dir<T: Real>(
    z: DeviceSlice<T>,
    d_in: DeviceSlice<f64>,
    d_out: DeviceSliceMut<f64>,
    q: DeviceSliceMut<f64>,
    s: DeviceSliceMut<f64>,
    nx: u32,
    ny: u32,
    inv_h2: f64,
    z_scale: f64,
) {
    check_grid(
        &[z.len(), d_in.len(), d_out.len(), q.len()],
        nx,
        ny,
        "mg_cg_dir: bad grid or buffer",
    );
    if s.len() < slot::COUNT {
        ptxlab_device::trap("mg_cg_dir: the scalar array is too short");
    }
    require_row_block();
    let sc = s.as_const();
    let (gamma, gamma_old) = (sc.get(slot::GAMMA), sc.get(slot::GAMMA_OLD));
    let beta = if gamma_old != 0.0 {
        gamma / gamma_old
    } else {
        0.0
    };
    let x = thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
    let width = nx as usize;
    // The new direction at an interior cell (0 on the boundary).
    let dv = |x: u32, y: u32| -> f64 {
        if x == 0 || y == 0 || x + 1 == nx || y + 1 == ny {
            return 0.0;
        }
        let i = y as usize * width + x as usize;
        // SAFETY: (x, y) is inside the grid: i < nx * ny <= both lengths.
        unsafe {
            let mut v = z_scale * z.get_unchecked(i).to_f64();
            if beta != 0.0 {
                v += beta * d_in.get_unchecked(i);
            }
            v
        }
    };
    let mut sum = 0.0f64;
    let mut y = thread::block_idx_y();
    while y < ny {
        if x < nx {
            let i = y as usize * width + x as usize;
            let c = dv(x, y);
            let interior = x > 0 && y > 0 && x + 1 < nx && y + 1 < ny;
            let lap = if interior {
                ((dv(x - 1, y) + dv(x + 1, y)) + (dv(x, y - 1) + dv(x, y + 1)) - 4.0 * c) * inv_h2
            } else {
                0.0
            };
            sum += c * lap;
            // SAFETY: i < nx * ny <= both lengths.
            unsafe {
                d_out.set_unchecked(i, c);
                q.set_unchecked(i, lap);
            }
        }
        y += thread::grid_dim_y();
    }
    block_add(sum, &s, slot::DQ);
}

/// PCG update: `alpha = s[GAMMA] / s[DQ]`, `p += alpha d`,
/// `rho -= alpha q`, `r = rho r_scale` (the next V-cycle's right-hand
/// side), `s[RHO2] += ||rho||^2`. Elementwise, grid-stride over every cell
/// (`d` and `q` are 0 on the boundary, so `p` keeps its Dirichlet values);
/// one atomic per block.
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn mg_cg_update<T: Real>(
    p: DeviceSliceMut<f64>,
    rho: DeviceSliceMut<f64>,
    r: DeviceSliceMut<T>,
    d: DeviceSlice<f64>,
    q: DeviceSlice<f64>,
    s: DeviceSliceMut<f64>,
    r_scale: f64,
) {
    let n = p.len();
    if rho.len() != n || r.len() != n || d.len() != n || q.len() != n || s.len() < slot::COUNT {
        ptxlab_device::trap("mg_cg_update: buffer lengths differ");
    }
    require_row_block();
    let sc = s.as_const();
    let dq = sc.get(slot::DQ);
    let alpha = if dq != 0.0 {
        sc.get(slot::GAMMA) / dq
    } else {
        0.0
    };
    let mut sum = 0.0f64;
    for i in thread::grid_stride(n) {
        // SAFETY: i < n, the length of all five buffers (checked above).
        unsafe {
            p.set_unchecked(
                i,
                p.as_const().get_unchecked(i) + alpha * d.get_unchecked(i),
            );
            let v = rho.as_const().get_unchecked(i) - alpha * q.get_unchecked(i);
            rho.set_unchecked(i, v);
            r.set_unchecked(i, T::from_f64(v * r_scale));
            sum += v * v;
        }
    }
    block_add(sum, &s, slot::RHO2);
}

/// PCG dot product: `s[GAMMA] += z_scale <rho, z>`, grid-stride,
/// one atomic per block.
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn mg_cg_dot<T: Real>(
    rho: DeviceSlice<f64>,
    z: DeviceSlice<T>,
    s: DeviceSliceMut<f64>,
    z_scale: f64,
) {
    if rho.len() != z.len() || s.len() < slot::COUNT {
        ptxlab_device::trap("mg_cg_dot: buffer lengths differ");
    }
    require_row_block();
    let mut sum = 0.0f64;
    for i in thread::grid_stride(rho.len()) {
        // SAFETY: i < rho.len() == z.len().
        sum += unsafe { rho.get_unchecked(i) * z.get_unchecked(i).to_f64() };
    }
    block_add(sum * z_scale, &s, slot::GAMMA);
}

/// The start of a PCG iteration, one thread: `s[GAMMA_OLD] = s[GAMMA]`,
/// then `s[GAMMA] = s[DQ] = s[RHO2] = 0` for this iteration's sums.
#[kernel(launch_bounds(32))]
pub fn mg_cg_shift(s: DeviceSliceMut<f64>) {
    if s.len() < slot::COUNT {
        ptxlab_device::trap("mg_cg_shift: the scalar array is too short");
    }
    if thread::index_1d() == 0 {
        s.set(slot::GAMMA_OLD, s.as_const().get(slot::GAMMA));
        s.set(slot::GAMMA, 0.0);
        s.set(slot::DQ, 0.0);
        s.set(slot::RHO2, 0.0);
    }
}

// ---------------------------------------------------------------- rung 3: the coarse levels in one block

/// Threads of the coarse-levels kernel (one block).
pub const COARSE_BLOCK: u32 = 512;
/// Most levels the coarse-levels kernel takes.
pub const MAX_COARSE_LEVELS: u32 = 16;
/// Most dynamic shared memory the host gives the coarse-levels kernel: the
/// levels it takes must fit (their corrections and right-hand sides).
pub const COARSE_SHARED_MAX: usize = 96 * 1024;

/// Dynamic shared memory of the coarse-levels kernel for levels of `cells`
/// cells in all: a correction and a right-hand side per cell.
pub const fn coarse_shared_bytes<T>(cells: usize) -> usize {
    // The right-hand sides start at the next 16-byte boundary after the
    // corrections (where the kernel puts its second view).
    shared::shared_bytes::<T>(shared::shared_bytes::<T>(0, cells), cells)
}

/// Level `l` of the coarse-levels kernel's geometry: `(nx, ny, cx, cy, offset)`.
#[inline(always)]
fn coarse_level<T: Real>(geom: &DeviceSlice<f64>, l: u32) -> (u32, u32, T, T, usize) {
    let mut off = 0usize;
    let mut k = 0;
    while k < l {
        off += geom.get(4 * k as usize) as usize * geom.get(4 * k as usize + 1) as usize;
        k += 1;
    }
    let b = 4 * l as usize;
    (
        geom.get(b) as u32,
        geom.get(b + 1) as u32,
        T::from_f64(geom.get(b + 2)),
        T::from_f64(geom.get(b + 3)),
        off,
    )
}

/// `sweeps` red-black sweeps of one level held in shared memory (the whole
/// block; ends with a barrier).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn block_smooth<T: Real>(
    su: &SharedSlice<T>,
    sf: &SharedSlice<T>,
    (nx, ny, cx, cy, off): (u32, u32, T, T, usize),
    sweeps: u32,
    first: u32,
    omega: T,
) {
    let w = inv_diag(cx, cy);
    let (iw, ih) = (nx - 2, ny - 2);
    let tid = thread::thread_idx_x();
    for k in 0..2 * sweeps {
        let colour = (first + k) & 1;
        let mut m = tid;
        while m < iw * ih {
            let (x, y) = (1 + m % iw, 1 + m / iw);
            if (x + y) & 1 == colour {
                let s = off + (y * nx + x) as usize;
                let n = nx as usize;
                // SAFETY: 1 <= x <= nx - 2, 1 <= y <= ny - 2: the cell and its
                // neighbours are inside this level's nx * ny cells at `off`,
                // which the caller's layout keeps inside the views; the
                // neighbours have the other colour, not written now.
                unsafe {
                    let we = su.get_unchecked(s - 1) + su.get_unchecked(s + 1);
                    let sn = su.get_unchecked(s - n) + su.get_unchecked(s + n);
                    let gs = gs_point(we, sn, sf.get_unchecked(s), cx, cy, w);
                    su.set_unchecked(s, sor(su.get_unchecked(s), gs, omega));
                }
            }
            m += thread::block_dim_x();
        }
        sync_threads();
    }
}

/// Rung 3: a whole V-cycle over the coarse levels in one block,
/// in shared memory, from a zero correction: `u_top` = V-cycle of
/// `lap u = f_top` over the `levels` levels described by `geom` (4 f64 per
/// level, top first: `nx, ny, cx, cy`).
///
/// Thread mapping: one block of [`COARSE_BLOCK`] threads; every step
/// (a half-sweep, a restriction, a prolongation) is a loop of the block over
/// that level's cells with a barrier after it, in the order of the
/// per-level kernels, with their arithmetic (the same `gs_point`,
/// `coarse_pos`, `fine_range`, `weight`), so the result equals rung 2's.
/// Shared layout ([`coarse_shared_bytes`]): the corrections of all levels,
/// one after the other, then their right-hand sides; the host takes the
/// levels whose sum fits in [`COARSE_SHARED_MAX`] (from 65 x 65 down, in f64).
///
/// Why: below about 129 x 129 a level is too small to fill the GPU, and a
/// V-cycle spends its time launching kernels (three per level, a few
/// microseconds each even from a CUDA graph) rather than moving bytes. One
/// launch for all of them turns some 18 launches per cycle into one, and
/// their data never leaves the SM.
#[kernel(launch_bounds(512), instances(f32, f64))]
#[allow(clippy::too_many_arguments)]
pub fn mg_coarse_cycle<T: Real>(
    f_top: DeviceSlice<T>,
    u_top: DeviceSliceMut<T>,
    geom: DeviceSlice<f64>,
    levels: u32,
    pre: u32,
    post: u32,
    post_first: u32,
    omega: T,
) {
    if levels == 0
        || levels > MAX_COARSE_LEVELS
        || geom.len() < 4 * levels as usize
        || pre == 0
        || pre > MAX_TILE_SWEEPS
        || post > MAX_TILE_SWEEPS
        || thread::block_dim_y() != 1
        || thread::grid_dim_x() * thread::grid_dim_y() != 1
    {
        ptxlab_device::trap("mg_coarse_cycle: bad levels, sweeps or launch shape");
    }
    let top = coarse_level::<T>(&geom, 0);
    let (last_nx, last_ny, _, _, last_off) = coarse_level::<T>(&geom, levels - 1);
    let total = last_off + last_nx as usize * last_ny as usize;
    let top_cells = top.0 as usize * top.1 as usize;
    if f_top.len() < top_cells || u_top.len() < top_cells {
        ptxlab_device::trap("mg_coarse_cycle: the top level's buffers are too short");
    }
    let su = shared::dynamic_shared::<T>(0, total);
    let sf = shared::dynamic_shared::<T>(shared::shared_bytes::<T>(0, total), total);
    let tid = thread::thread_idx_x() as usize;
    let bd = thread::block_dim_x() as usize;
    // Every correction starts at zero (boundary rings included); the top
    // right-hand side comes from global memory.
    let mut i = tid;
    while i < total {
        // SAFETY: i < total, the length of both views.
        unsafe {
            su.set_unchecked(i, T::ZERO);
            if i < top_cells {
                sf.set_unchecked(i, f_top.get_unchecked(i));
            }
        }
        i += bd;
    }
    sync_threads();
    let two = T::from_f64(2.0);
    // Down: pre-smoothing, then residual and restriction into the level below.
    let mut l = 0;
    while l + 1 < levels {
        let (nx, ny, cx, cy, off) = coarse_level::<T>(&geom, l);
        block_smooth(&su, &sf, (nx, ny, cx, cy, off), pre, 0, omega);
        let (ncx, ncy, _, _, coff) = coarse_level::<T>(&geom, l + 1);
        let (numx, denx, numy, deny) = (ncx - 1, nx - 1, ncy - 1, ny - 1);
        let scale = T::from_f64((numx as f64 * numy as f64) / (denx as f64 * deny as f64));
        let (ciw, cih) = (ncx - 2, ncy - 2);
        let mut m = tid as u32;
        while m < ciw * cih {
            let (ci, cj) = (1 + m % ciw, 1 + m / ciw);
            let (i_lo, i_hi) = fine_range(ci, numx, denx);
            let (j_lo, j_hi) = fine_range(cj, numy, deny);
            let mut sum = T::ZERO;
            let mut j = j_lo;
            while j <= j_hi {
                let wy = weight::<T>(j, cj, numy, deny);
                let mut i = i_lo;
                while i <= i_hi {
                    let g = off + (j * nx + i) as usize;
                    let n = nx as usize;
                    // SAFETY: fine_range keeps the fine point interior, so it
                    // and its neighbours are inside level l's cells.
                    let r = unsafe {
                        let c0 = su.get_unchecked(g);
                        let we = su.get_unchecked(g - 1) + su.get_unchecked(g + 1);
                        let sn = su.get_unchecked(g - n) + su.get_unchecked(g + n);
                        sf.get_unchecked(g) - (cx * (we - two * c0) + cy * (sn - two * c0))
                    };
                    sum += weight::<T>(i, ci, numx, denx) * wy * r;
                    i += 1;
                }
                j += 1;
            }
            // SAFETY: (ci, cj) is interior to level l + 1, inside its cells.
            unsafe { sf.set_unchecked(coff + (cj * ncx + ci) as usize, sum * scale) };
            m += bd as u32;
        }
        sync_threads();
        l += 1;
    }
    // The coarsest level: one interior point, one sweep solves it.
    block_smooth(&su, &sf, coarse_level::<T>(&geom, levels - 1), 1, 0, T::ONE);
    // Up: prolongation with correction, then post-smoothing (black first).
    let mut l = levels - 1;
    while l > 0 {
        l -= 1;
        let (nx, ny, cx, cy, off) = coarse_level::<T>(&geom, l);
        let (ncx, ncy, _, _, coff) = coarse_level::<T>(&geom, l + 1);
        let (iw, ih) = (nx - 2, ny - 2);
        let mut m = tid as u32;
        while m < iw * ih {
            let (x, y) = (1 + m % iw, 1 + m / iw);
            let (i0, wx) = coarse_pos::<T>(x, ncx - 1, nx - 1);
            let (j0, wy) = coarse_pos::<T>(y, ncy - 1, ny - 1);
            let k = coff + (j0 * ncx + i0) as usize;
            let w = ncx as usize;
            let one = T::ONE;
            // SAFETY: an interior fine point's coarse cell has i0 + 1 <= ncx - 1
            // and j0 + 1 <= ncy - 1 (see `interpolate`): inside level l + 1.
            unsafe {
                let (c00, c10) = (su.get_unchecked(k), su.get_unchecked(k + 1));
                let (c01, c11) = (su.get_unchecked(k + w), su.get_unchecked(k + w + 1));
                let v =
                    (one - wy) * ((one - wx) * c00 + wx * c10) + wy * ((one - wx) * c01 + wx * c11);
                let s = off + (y * nx + x) as usize;
                su.set_unchecked(s, su.get_unchecked(s) + v);
            }
            m += bd as u32;
        }
        sync_threads();
        if post > 0 {
            block_smooth(&su, &sf, (nx, ny, cx, cy, off), post, post_first & 1, omega);
        }
    }
    let mut i = tid;
    while i < top_cells {
        // SAFETY: i < top_cells <= u_top.len() and < total.
        unsafe { u_top.set_unchecked(i, su.get_unchecked(i)) };
        i += bd;
    }
}

// ---------------------------------------------------------------- row slabs (several devices)

/// Restriction on a row slab: [`mg_restrict`] for every row of a coarse
/// slab, reading a fine slab, both parts of levels split into row slabs
/// over several devices.
///
/// A slab stores global rows `y0 .. y0 + rows` of its level (`fy0`, `fny`
/// for the fine slab, `cy0`, `cny` for the coarse one); the columns are not
/// split. Positions on the coarse grid depend on the global row (and on the
/// global row counts `ny_g`, `ncy_g`: when a level's interior row count is
/// even, the coarse rows fall between fine rows, [`coarse_pos`]), so the
/// kernel works in global rows and subtracts the slab offsets to address
/// memory; the stencil, the weights and their order are [`mg_restrict`]'s,
/// so a coarse cell gets the same bits as on one device. The host stores
/// enough halo rows for every fine row the stencil reads (plus one for the
/// residual's neighbours); a row outside the slab stops the kernel.
///
/// Thread mapping as [`mg_restrict`]: one thread per coarse cell, rows by
/// a `gridDim.y` stride. (The host passes the rows a rank owns as the
/// coarse slab: a view that starts at the first of them.)
#[kernel(launch_bounds(256), instances(f32, f64))]
#[allow(clippy::too_many_arguments)]
pub fn mg_restrict_slab<T: Real>(
    u: DeviceSlice<T>,
    f: DeviceSlice<T>,
    fc: DeviceSliceMut<T>,
    uc: DeviceSliceMut<T>,
    nx: u32,
    fny: u32,
    ncx: u32,
    cny: u32,
    ny_g: u32,
    ncy_g: u32,
    fy0: u32,
    cy0: u32,
    cx: T,
    cy: T,
    with_u: u32,
) {
    let (fn_, cn) = (nx as usize * fny as usize, ncx as usize * cny as usize);
    if nx < 3
        || ncx < 3
        || ncx > nx
        || ncy_g > ny_g
        || ncy_g < 3
        || u.len() < fn_
        || f.len() < fn_
        || fc.len() < cn
        || uc.len() < cn
    {
        ptxlab_device::trap("mg_restrict_slab: bad slab, grid or buffer");
    }
    let (numx, denx, numy, deny) = (ncx - 1, nx - 1, ncy_g - 1, ny_g - 1);
    let scale = T::from_f64((numx as f64 * numy as f64) / (denx as f64 * deny as f64));
    let ci = thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
    let (width, cw) = (nx as usize, ncx as usize);
    let two = T::from_f64(2.0);
    let mut cl = thread::block_idx_y();
    while ci < ncx && cl < cny {
        let cj = cy0 + cl;
        let c = cl as usize * cw + ci as usize;
        let mut sum = T::ZERO;
        if ci > 0 && cj > 0 && ci + 1 < ncx && cj + 1 < ncy_g {
            let (i_lo, i_hi) = fine_range(ci, numx, denx);
            let (j_lo, j_hi) = fine_range(cj, numy, deny);
            // The rows the stencil reads (with the residual's neighbours).
            let need = if with_u != 0 { 1 } else { 0 };
            if j_lo < fy0 + need || j_hi + need >= fy0 + fny {
                ptxlab_device::trap("mg_restrict_slab: a fine row outside the slab");
            }
            let mut wxs = [T::ZERO; 4];
            let mut i = i_lo;
            while i <= i_hi && i - i_lo < 4 {
                wxs[(i - i_lo) as usize] = weight::<T>(i, ci, numx, denx);
                i += 1;
            }
            let mut j = j_lo;
            while j <= j_hi {
                let wy = weight::<T>(j, cj, numy, deny);
                let jl = (j - fy0) as usize;
                let mut i = i_lo;
                while i <= i_hi && i - i_lo < 4 {
                    let g = jl * width + i as usize;
                    // SAFETY: 1 <= i <= nx - 2 (fine_range of an interior
                    // coarse column) and the rows jl - 1 ..= jl + 1 (jl alone
                    // without `with_u`) lie in the slab's fny rows (checked
                    // just above): every load is inside both fine buffers.
                    let r = unsafe {
                        let fv = f.get_unchecked(g);
                        if with_u != 0 {
                            let c0 = u.get_unchecked(g);
                            let we = u.get_unchecked(g - 1) + u.get_unchecked(g + 1);
                            let sn = u.get_unchecked(g - width) + u.get_unchecked(g + width);
                            fv - (cx * (we - two * c0) + cy * (sn - two * c0))
                        } else {
                            fv
                        }
                    };
                    sum += wxs[(i - i_lo) as usize] * wy * r;
                    i += 1;
                }
                j += 1;
            }
            sum *= scale;
        }
        // SAFETY: ci < ncx and cl < cny: c < ncx * cny <= both lengths.
        unsafe {
            fc.set_unchecked(c, sum);
            uc.set_unchecked(c, T::ZERO);
        }
        cl += thread::grid_dim_y();
    }
}

/// Prolongation on a row slab: [`mg_prolong`] for the fine rows
/// `y_lo .. y_hi` of a fine slab (global rows `fy0 ..`, `fny` stored),
/// reading a coarse slab (global rows `cy0 ..`, `cny` stored) of levels
/// with `ny_g` and `ncy_g` rows in all. The coarse position of a fine row
/// comes from its global row ([`mg_restrict_slab`] says why); the
/// interpolation is [`mg_prolong`]'s expression, so the result is the same
/// bits as on one device. A coarse row outside the slab stops the kernel.
///
/// Thread mapping as [`mg_prolong`]: one thread per fine interior column,
/// rows by a `gridDim.y` stride from `y_lo`.
#[kernel(launch_bounds(256), instances(f32, f64))]
#[allow(clippy::too_many_arguments)]
pub fn mg_prolong_slab<T: Real>(
    uc: DeviceSlice<T>,
    u: DeviceSliceMut<T>,
    nx: u32,
    fny: u32,
    ncx: u32,
    cny: u32,
    ny_g: u32,
    ncy_g: u32,
    fy0: u32,
    cy0: u32,
    y_lo: u32,
    y_hi: u32,
    add: u32,
) {
    let (fn_, cn) = (nx as usize * fny as usize, ncx as usize * cny as usize);
    if nx < 3
        || ncx < 3
        || ncx > nx
        || ncy_g > ny_g
        || ncy_g < 3
        || u.len() < fn_
        || uc.len() < cn
        || y_hi > fny
    {
        ptxlab_device::trap("mg_prolong_slab: bad slab, grid or buffer");
    }
    let x = 1 + thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
    let (width, w) = (nx as usize, ncx as usize);
    let mut yl = y_lo + thread::block_idx_y();
    while x + 1 < nx && yl < y_hi {
        let gy = fy0 + yl;
        if gy > 0 && gy + 1 < ny_g {
            let (i0, wx) = coarse_pos::<T>(x, ncx - 1, nx - 1);
            let (j0, wy) = coarse_pos::<T>(gy, ncy_g - 1, ny_g - 1);
            if j0 < cy0 || j0 + 1 >= cy0 + cny {
                ptxlab_device::trap("mg_prolong_slab: a coarse row outside the slab");
            }
            let k = (j0 - cy0) as usize * w + i0 as usize;
            let one = T::ONE;
            let i = yl as usize * width + x as usize;
            // SAFETY: i0 + 1 <= ncx - 1 for an interior column (see
            // `interpolate`) and the coarse rows j0, j0 + 1 are in the slab
            // (checked above): the four corners are inside `uc`; the fine
            // cell has x <= nx - 2 and yl < y_hi <= fny: inside `u`.
            unsafe {
                let (c00, c10) = (uc.get_unchecked(k), uc.get_unchecked(k + 1));
                let (c01, c11) = (uc.get_unchecked(k + w), uc.get_unchecked(k + w + 1));
                let v =
                    (one - wy) * ((one - wx) * c00 + wx * c10) + wy * ((one - wx) * c01 + wx * c11);
                let old = if add != 0 {
                    u.as_const().get_unchecked(i)
                } else {
                    T::ZERO
                };
                u.set_unchecked(i, old + v);
            }
        }
        yl += thread::grid_dim_y();
    }
}

/// The outer step ([`mg_defect`]) on a row slab of the finest level: the
/// launch covers a slab's owned rows and one row on each side (global rows
/// `gy0 ..`, `ny` of them, of a level of `ny_g` rows). The side rows are
/// read, and written to `p_out` corrected like the owned ones (`p_in +
/// e_scale e` wherever the cell is interior to the whole level, which a
/// side row between two slabs is), so the next step finds its neighbours'
/// corrected rows in place without an exchange of the field; `r` and the
/// sum cover the owned rows only (`r` is 0 on the side rows). The owned
/// cells get [`mg_defect`]'s arithmetic, in its order: the same bits as on
/// one device, given the side rows of `e` (the correction's halo).
///
/// Thread mapping as [`mg_defect`].
#[kernel(launch_bounds(256), instances(f32, f64))]
#[allow(clippy::too_many_arguments)]
pub fn mg_defect_slab<T: Real>(
    p_in: DeviceSlice<f64>,
    e: DeviceSlice<T>,
    b: DeviceSlice<f64>,
    p_out: DeviceSliceMut<f64>,
    r: DeviceSliceMut<T>,
    acc: DeviceSliceMut<f64>,
    nx: u32,
    ny: u32,
    gy0: u32,
    ny_g: u32,
    inv_h2: f64,
    e_scale: f64,
    r_scale: f64,
) {
    check_grid(
        &[p_in.len(), e.len(), b.len(), p_out.len(), r.len()],
        nx,
        ny,
        "mg_defect_slab: bad grid or buffer",
    );
    if acc.is_empty() || gy0 + ny > ny_g {
        ptxlab_device::trap("mg_defect_slab: empty accumulator or rows outside the level");
    }
    require_row_block();
    let x = thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
    let width = nx as usize;
    let pv = |x: u32, y: u32| -> f64 {
        let i = y as usize * width + x as usize;
        let gy = gy0 + y;
        // SAFETY: callers pass cells inside the launch's grid: i < nx * ny <= len.
        unsafe {
            let mut v = p_in.get_unchecked(i);
            if e_scale != 0.0 && x > 0 && gy > 0 && x + 1 < nx && gy + 1 < ny_g {
                v += e_scale * e.get_unchecked(i).to_f64();
            }
            v
        }
    };
    let mut sum = 0.0f64;
    let mut y = thread::block_idx_y();
    while y < ny {
        if x < nx {
            let i = y as usize * width + x as usize;
            let c = pv(x, y);
            let gy = gy0 + y;
            let interior =
                x > 0 && y > 0 && x + 1 < nx && y + 1 < ny && gy > 0 && gy + 1 < ny_g;
            let res = if interior {
                let s = (pv(x - 1, y) + pv(x + 1, y)) + (pv(x, y - 1) + pv(x, y + 1));
                // SAFETY: i < nx * ny <= b.len().
                let bi = unsafe { b.get_unchecked(i) };
                bi - (s - 4.0 * c) * inv_h2
            } else {
                0.0
            };
            sum += res * res;
            // SAFETY: i < nx * ny <= each output's length (checked at entry).
            unsafe {
                p_out.set_unchecked(i, c);
                r.set_unchecked(i, T::from_f64(res * r_scale));
            }
        }
        y += thread::grid_dim_y();
    }
    block_add(sum, &acc, 0);
}

/// The PCG direction ([`mg_cg_dir`]) on a row slab of the finest level: the
/// launch covers a slab's owned rows and one row on each side (global rows
/// `gy0 ..`, `ny` of them, of a level of `ny_g` rows). `d_out = z_scale z +
/// beta d_in` is written on every row of the launch (0 on the cells of the
/// whole level's boundary), the side rows included, so the next
/// iteration's `d_in` has its side rows without an exchange; `q = lap_h
/// d_out` and the sum `s[DQ] += <d_out, q>` cover the owned rows only (`q`
/// is 0 on the side rows). `z` must hold its side rows (the correction's
/// halo, which the V-cycle's last exchange fills). The owned cells get
/// [`mg_cg_dir`]'s arithmetic, in its order.
///
/// Thread mapping as [`mg_cg_dir`].
#[kernel(launch_bounds(256), instances(f32, f64))]
#[allow(clippy::too_many_arguments)]
pub fn mg_cg_dir_slab<T: Real>(
    z: DeviceSlice<T>,
    d_in: DeviceSlice<f64>,
    d_out: DeviceSliceMut<f64>,
    q: DeviceSliceMut<f64>,
    s: DeviceSliceMut<f64>,
    nx: u32,
    ny: u32,
    gy0: u32,
    ny_g: u32,
    inv_h2: f64,
    z_scale: f64,
) {
    check_grid(
        &[z.len(), d_in.len(), d_out.len(), q.len()],
        nx,
        ny,
        "mg_cg_dir_slab: bad grid or buffer",
    );
    if s.len() < slot::COUNT || gy0 + ny > ny_g {
        ptxlab_device::trap("mg_cg_dir_slab: short scalar array or rows outside the level");
    }
    require_row_block();
    let sc = s.as_const();
    let (gamma, gamma_old) = (sc.get(slot::GAMMA), sc.get(slot::GAMMA_OLD));
    let beta = if gamma_old != 0.0 {
        gamma / gamma_old
    } else {
        0.0
    };
    let x = thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
    let width = nx as usize;
    // The new direction at a cell of the launch (0 on the level's boundary).
    let dv = |x: u32, y: u32| -> f64 {
        let gy = gy0 + y;
        if x == 0 || gy == 0 || x + 1 == nx || gy + 1 == ny_g {
            return 0.0;
        }
        let i = y as usize * width + x as usize;
        // SAFETY: (x, y) is inside the launch's grid: i < nx * ny <= both lengths.
        unsafe {
            let mut v = z_scale * z.get_unchecked(i).to_f64();
            if beta != 0.0 {
                v += beta * d_in.get_unchecked(i);
            }
            v
        }
    };
    let mut sum = 0.0f64;
    let mut y = thread::block_idx_y();
    while y < ny {
        if x < nx {
            let i = y as usize * width + x as usize;
            let c = dv(x, y);
            let gy = gy0 + y;
            let interior =
                x > 0 && y > 0 && x + 1 < nx && y + 1 < ny && gy > 0 && gy + 1 < ny_g;
            let lap = if interior {
                ((dv(x - 1, y) + dv(x + 1, y)) + (dv(x, y - 1) + dv(x, y + 1)) - 4.0 * c) * inv_h2
            } else {
                0.0
            };
            sum += c * lap;
            // SAFETY: i < nx * ny <= both lengths.
            unsafe {
                d_out.set_unchecked(i, c);
                q.set_unchecked(i, lap);
            }
        }
        y += thread::grid_dim_y();
    }
    block_add(sum, &s, slot::DQ);
}
