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
//! the launch constants, the `mode` bits, the shared-memory sizes and the
//! geometry of the coarse grids.

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
    (TILE_OX + 2 * tile_halo(mode), TILE_OY + 2 * tile_halo(mode))
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
