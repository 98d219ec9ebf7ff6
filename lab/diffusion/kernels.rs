//! 2D diffusion, explicit 5-point scheme, as the material does it: every step
//! writes the Laplacian and the updated field,
//!
//! ```text
//! lap[y, x]   = u[y, x+1] + u[y, x-1] + u[y+1, x] + u[y-1, x] - 4 u[y, x]
//! u_new[y, x] = u[y, x] + alpha * lap[y, x]
//! ```
//!
//! on a row-major `ny x nx` grid (`x` = column, fastest-varying). Boundary
//! cells (first/last row and column) are fixed (Dirichlet): `u_new = u`,
//! `lap = 0`. The scheme is stable for `alpha <= 0.25`.
//!
//! Kernels, in ladder order:
//! 1. [`diffusion_inplace_f32`]: the material's kernel (8x8 tiles, updates
//!    `u` in place). Racy on purpose: kept as a lesson, never as a result.
//! 2. [`diffusion_pingpong_f32`]: race-free, one step per launch, reads `u`,
//!    writes `lap` and `u_new` (separate buffers, swapped by the host).
//! 3. [`diffusion_temporal_f32`]: several steps per launch (temporal
//!    blocking, the Poisson solver's body with this update); bitwise the
//!    same result as rung 2.

use crate::poisson::Stencil5;
use ptxlab_device::prelude::*;

/// Largest stable coefficient of the explicit 5-point scheme.
pub const ALPHA_MAX_STABLE: f32 = 0.25;

/// Tile edge of the material's in-place kernel (8x8 threads).
pub const INPLACE_TILE: u32 = 8;

/// Block of the ping-pong kernel: 32 columns x 8 rows.
pub const PINGPONG_BLOCK: (u32, u32) = (32, 8);

/// Default time steps fused in one launch of the temporally blocked kernel
/// (its depth; any of 1..=[`crate::poisson::MAX_DEPTH`] works).
pub const TEMPORAL_STEPS: usize = 8;

/// Dynamic shared memory of [`diffusion_inplace_f32`]: one 8x8 f32 tile.
pub const fn inplace_shared_bytes() -> usize {
    shared::shared_bytes::<f32>(0, (INPLACE_TILE * INPLACE_TILE) as usize)
}

/// Dynamic shared memory of [`diffusion_temporal_f32`]: the Poisson
/// temporal body's two 128 x 64 f32 regions (65,536 bytes).
pub const fn temporal_shared_bytes() -> usize {
    crate::poisson::temporal_shared_bytes::<f32>()
}

/// One explicit step at one cell: `(lap, u + alpha*lap)`. Every kernel (and
/// the CPU reference) uses this exact expression, so their results agree bit
/// for bit.
#[inline(always)]
pub fn step(c: f32, e: f32, w: f32, n: f32, s: f32, alpha: f32) -> (f32, f32) {
    step_sums(c, e + w, n + s, alpha)
}

/// [`step`] from the neighbour sums `we = west + east`, `ns = north + south`
/// (float addition is commutative, so `e + w` and `w + e` are the same bits).
#[inline(always)]
pub fn step_sums(c: f32, we: f32, ns: f32, alpha: f32) -> (f32, f32) {
    let lap = we + ns - 4.0 * c;
    (lap, c + alpha * lap)
}

/// The explicit diffusion step as a [`Stencil5`] update: the new value, and
/// the Laplacian as the auxiliary output.
#[derive(Clone, Copy)]
pub struct Diffuse(pub f32);

impl Stencil5<f32> for Diffuse {
    const USES_RHS: bool = false;
    #[inline(always)]
    fn update(self, centre: f32, we: f32, ns: f32, _rhs: f32) -> (f32, f32) {
        let (lap, v) = step_sums(centre, we, ns, self.0);
        (v, lap)
    }
}

/// Rung 1, the material's kernel: 8x8 tiles, the field updated **in place**.
///
/// Thread mapping: one thread per cell, `x` = column. The block copies its
/// 8x8 tile of `u` into shared memory, synchronises, computes the Laplacian
/// from the tile (and from global `u` for neighbours outside the tile: the
/// halo), then writes `lap` and overwrites `u`.
///
/// The race: inside the block the shared copy plus the barrier make the step
/// correct, but the halo belongs to neighbouring blocks, which may already
/// have overwritten it (new values) or not (old values), depending on which
/// block the hardware scheduled first. The result depends on block order and
/// differs from the sequentially consistent answer. Kept only as the lesson
/// (see `docs/book/src/workloads/diffusion.md`); [`diffusion_pingpong_f32`] is the fix.
#[kernel(launch_bounds(64))]
pub fn diffusion_inplace_f32(
    u: DeviceSliceMut<f32>,
    lap: DeviceSliceMut<f32>,
    nx: u32,
    ny: u32,
    alpha: f32,
) {
    let tile = shared::dynamic_shared::<f32>(0, (INPLACE_TILE * INPLACE_TILE) as usize);
    let (tx, ty) = (thread::thread_idx_x(), thread::thread_idx_y());
    let bdx = thread::block_dim_x();
    let (x, y) = thread::index_2d();
    let (nx, ny) = (nx as usize, ny as usize);
    let inside = x < nx && y < ny;
    let me = (ty * bdx + tx) as usize;
    if inside {
        tile.set(me, u.get(y * nx + x));
    }
    sync_threads();
    if !inside {
        return;
    }
    let i = y * nx + x;
    let c = tile.get(me);
    if x == 0 || y == 0 || x + 1 == nx || y + 1 == ny {
        lap.set(i, 0.0);
        return;
    }
    let bdy = thread::block_dim_y();
    // A neighbour inside the tile comes from shared memory (this step's
    // value); one outside it is read from global memory: the racy halo.
    let e = if tx + 1 < bdx {
        tile.get(me + 1)
    } else {
        u.get(i + 1)
    };
    let w = if tx > 0 {
        tile.get(me - 1)
    } else {
        u.get(i - 1)
    };
    let s = if ty + 1 < bdy {
        tile.get(me + bdx as usize)
    } else {
        u.get(i + nx)
    };
    let n = if ty > 0 {
        tile.get(me - bdx as usize)
    } else {
        u.get(i - nx)
    };
    let (l, v) = step(c, e, w, n, s, alpha);
    lap.set(i, l);
    u.set(i, v);
}

/// Rung 2: race-free ping-pong, one step per launch.
///
/// What changed: the step reads `u` and writes `u_new`, a different buffer,
/// so no thread can see a value of this step's output; the host swaps the two
/// buffers between launches. One thread per cell, 32x8 blocks (a warp reads
/// 128 contiguous bytes of a row; the north/south rows come from L1/L2).
/// Traffic per step: read `u`, write `lap` and `u_new`: 12 bytes per cell,
/// 48 MB at 2000^2, which the 50 MB L2 of an H100 almost holds.
#[kernel(launch_bounds(256))]
pub fn diffusion_pingpong_f32(
    u: DeviceSlice<f32>,
    lap: DeviceSliceMut<f32>,
    u_new: DeviceSliceMut<f32>,
    nx: u32,
    ny: u32,
    alpha: f32,
) {
    let (x, y) = thread::index_2d();
    let (nx, ny) = (nx as usize, ny as usize);
    if x >= nx || y >= ny {
        return;
    }
    let i = y * nx + x;
    if x == 0 || y == 0 || x + 1 == nx || y + 1 == ny {
        lap.set(i, 0.0);
        u_new.set(i, u.get(i));
        return;
    }
    // SAFETY: 1 <= x < nx-1 and 1 <= y < ny-1, so i-nx, i-1, i+1, i+nx are
    // all inside the nx*ny grid (the launcher checks the buffer lengths).
    let (c, e, w, n, s) = unsafe {
        (
            u.get_unchecked(i),
            u.get_unchecked(i + 1),
            u.get_unchecked(i - 1),
            u.get_unchecked(i - nx),
            u.get_unchecked(i + nx),
        )
    };
    let (l, v) = step(c, e, w, n, s, alpha);
    // SAFETY: `i < nx*ny` = the lengths of `lap` and `u_new` (launcher check).
    unsafe {
        lap.set_unchecked(i, l);
        u_new.set_unchecked(i, v);
    }
}

/// Rung 3: temporal blocking, [`TEMPORAL_STEPS`] (K = 4) steps per launch.
///
/// Rung 3: temporal blocking, `depth` steps per launch (1..=16, default
/// [`TEMPORAL_STEPS`]), through the same body as the Poisson solver's
/// temporally blocked rung ([`crate::poisson::temporal_body`]) with the
/// diffusion update ([`Diffuse`]) in place of Jacobi.
///
/// Thread mapping and shared layout: those of
/// [`crate::poisson::poisson_temporal`]. Blocks of 128 x 4 threads cover
/// a 128 x 64 region; thread `(tx, t)` keeps the column strip `tx`, rows
/// `16 t .. 16 t + 16`, in registers; each step stores the strips into one of
/// two shared regions, one `sync_threads`, then updates from registers
/// (north/south) and shared memory (west/east). A block writes its output
/// tile of `(128 - 2 depth) x (64 - 2 depth)` cells; the halo of width
/// `depth` is recomputed by the neighbours.
///
/// What changed from rung 2: a launch reads `u` and writes `lap` and `u_new`
/// once for `depth` steps (12 bytes per cell per launch, plus halo re-reads
/// that mostly hit L2), so the HBM floor of one step per launch no longer
/// applies. Strips kept in registers (rather than every value going
/// through shared memory with index arithmetic per cell) keep the step's
/// overhead low; the earlier version of this rung and its time are in
/// `docs/book/src/workloads/diffusion.md`. `lap` is the Laplacian of the last step, and the fields are
/// bitwise equal to `depth` launches of rung 2 (same [`step_sums`]).
#[kernel(launch_bounds(512, 2))]
pub fn diffusion_temporal_f32(
    u: DeviceSlice<f32>,
    lap: DeviceSliceMut<f32>,
    u_new: DeviceSliceMut<f32>,
    nx: u32,
    ny: u32,
    alpha: f32,
    depth: u32,
) {
    // `u` doubles as the (unread) right-hand side: `Diffuse` uses none.
    let grid = crate::poisson::Grid { nx, ny };
    crate::poisson::temporal_body(u, u, u_new, Some(lap), grid, Diffuse(alpha), depth);
}
