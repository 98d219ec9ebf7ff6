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
//!
//! # Files
//! One file per rung family, all re-exported here: `smooth.rs` (rungs 1
//! and 2, the smoothers), `transfer.rs` (restriction and prolongation),
//! `fine.rs` (the fine level in f64: the outer step, the residual and the
//! PCG iteration), `coarse.rs` (rung 3, the coarse levels in one block) and
//! `slab.rs` (the transfers and the fine-level steps on a row slab of a
//! level split over several devices). This file holds what they share:
//! the launch constants, the parameter structs of a level's shape
//! ([`Dims`], [`Stencil`], [`Rows`]), and the arithmetic of the coarse
//! grids (positions, weights, the restriction at a point, the bilinear
//! interpolation), which the single-device, slab and one-block kernels all
//! call, so they agree to the bit.

use crate::reduce::{block_sum, warp_slots_shared_bytes};
use ptxlab_device::prelude::*;

mod coarse;
mod fine;
mod slab;
mod smooth;
mod transfer;

pub use coarse::*;
pub use fine::*;
pub use slab::*;
pub use smooth::*;
pub use transfer::*;

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

/// The shape of a level: columns and rows, boundary ring included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, KernelParams)]
#[repr(C)]
pub struct Dims {
    /// Columns (boundary included).
    pub nx: u32,
    /// Rows (boundary included).
    pub ny: u32,
}

/// A level as the smoothers and the restriction see it: its shape and the
/// coefficients of its 5-point operator, `cx = 1 / hx^2` and
/// `cy = 1 / hy^2`, in the cycle's precision.
#[derive(Debug, Clone, Copy, PartialEq, KernelParams)]
#[repr(C)]
pub struct Stencil<T: Real> {
    /// The level's shape.
    pub dims: Dims,
    /// `1 / hx^2`.
    pub cx: T,
    /// `1 / hy^2`.
    pub cy: T,
}

/// Global rows `y0 .. y0 + rows` of a level split into row slabs over
/// several devices: the rows one buffer holds, or one launch covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, KernelParams)]
#[repr(C)]
pub struct Rows {
    /// Global row of the first.
    pub y0: u32,
    /// How many.
    pub rows: u32,
}

impl Rows {
    /// One past the last global row.
    #[inline(always)]
    pub const fn end(self) -> u32 {
        self.y0 + self.rows
    }
}

/// Dynamic shared memory of the reduction kernels: one f64 slot per warp.
pub const fn reduce_shared_bytes() -> usize {
    warp_slots_shared_bytes::<f64>(BLOCK)
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

/// The residual `f - lap u` at a cell of a level: `c` its correction,
/// `we` and `sn` the sums of its west and east, south and north
/// neighbours (the CPU reference uses the same expression).
#[inline(always)]
pub fn residual_at<T: Real>(f: T, c: T, we: T, sn: T, cx: T, cy: T) -> T {
    let two = T::from_f64(2.0);
    f - (cx * (we - two * c) + cy * (sn - two * c))
}

/// Bilinear interpolation between the coarse corners `[c00, c10, c01,
/// c11]` (`cij` at coarse column `i0 + i`, row `j0 + j`) at fractions `wx`,
/// `wy` ([`coarse_pos`]): the prolongation at one fine point.
#[inline(always)]
pub fn bilinear<T: Real>([c00, c10, c01, c11]: [T; 4], wx: T, wy: T) -> T {
    let one = T::ONE;
    (one - wy) * ((one - wx) * c00 + wx * c10) + wy * ((one - wx) * c01 + wx * c11)
}

/// The restriction at interior coarse point `(ci, cj)` before its scale:
/// `sum w_x(i) w_y(j) r(i, j)` over the fine points of its stencil
/// ([`fine_range`], at most 4 per axis as the spacing ratio is at least
/// 1/2; the weights of a row once, not once per point), in rows `j` then
/// columns `i`. `x` and `y` are each axis's `(num, den)`; `rows(j_lo,
/// j_hi)` runs first, on the fine rows the stencil reads (a slab checks
/// it holds them); `r(i, j)` is the fine residual (or right-hand side) at
/// global fine point `(i, j)`. Every restriction calls it, so a coarse
/// point gets the same bits from each.
#[inline(always)]
pub fn restrict_at<T: Real>(
    (ci, cj): (u32, u32),
    (numx, denx): (u32, u32),
    (numy, deny): (u32, u32),
    rows: impl FnOnce(u32, u32),
    r: impl Fn(u32, u32) -> T,
) -> T {
    let (i_lo, i_hi) = fine_range(ci, numx, denx);
    let (j_lo, j_hi) = fine_range(cj, numy, deny);
    rows(j_lo, j_hi);
    let mut wxs = [T::ZERO; 4];
    let mut i = i_lo;
    while i <= i_hi && i - i_lo < 4 {
        wxs[(i - i_lo) as usize] = weight::<T>(i, ci, numx, denx);
        i += 1;
    }
    let mut sum = T::ZERO;
    let mut j = j_lo;
    while j <= j_hi {
        let wy = weight::<T>(j, cj, numy, deny);
        let mut i = i_lo;
        while i <= i_hi && i - i_lo < 4 {
            sum += wxs[(i - i_lo) as usize] * wy * r(i, j);
            i += 1;
        }
        j += 1;
    }
    sum
}

/// The scale of the restriction from a level with `den` intervals per axis
/// to one with `num`: `(num_x num_y) / (den_x den_y)` (1/4 when both axes
/// coarsen by two).
#[inline(always)]
pub fn restrict_scale<T: Real>((numx, denx): (u32, u32), (numy, deny): (u32, u32)) -> T {
    T::from_f64((numx as f64 * numy as f64) / (denx as f64 * deny as f64))
}

/// `1 / (2 cx + 2 cy)`, the inverse diagonal of the level's operator.
#[inline(always)]
pub fn inv_diag<T: Real>(cx: T, cy: T) -> T {
    T::ONE / (T::from_f64(2.0) * cx + T::from_f64(2.0) * cy)
}

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
