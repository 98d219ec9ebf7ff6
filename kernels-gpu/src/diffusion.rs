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
//! 3. [`diffusion_temporal_f32`]: [`TEMPORAL_STEPS`] steps per launch in
//!    shared memory (temporal blocking); bitwise the same result as rung 2.

use ptxlab_device::prelude::*;

/// Largest stable coefficient of the explicit 5-point scheme.
pub const ALPHA_MAX_STABLE: f32 = 0.25;

/// Tile edge of the material's in-place kernel (8x8 threads).
pub const INPLACE_TILE: u32 = 8;

/// Block of the ping-pong kernel: 32 columns x 8 rows.
pub const PINGPONG_BLOCK: (u32, u32) = (32, 8);

/// Time steps fused in one launch of the temporally blocked kernel.
pub const TEMPORAL_STEPS: usize = 4;
/// Output tile columns of the temporally blocked kernel.
pub const TEMPORAL_TX: usize = 64;
/// Output tile rows of the temporally blocked kernel.
pub const TEMPORAL_TY: usize = 32;
/// Threads of the temporally blocked kernel: 32 x 8.
pub const TEMPORAL_BLOCK: (u32, u32) = (32, 8);
const RX: usize = TEMPORAL_TX + 2 * TEMPORAL_STEPS;
const RY: usize = TEMPORAL_TY + 2 * TEMPORAL_STEPS;

/// Dynamic shared memory of [`diffusion_inplace_f32`]: one 8x8 f32 tile.
pub const fn inplace_shared_bytes() -> usize {
    shared::shared_bytes::<f32>(0, (INPLACE_TILE * INPLACE_TILE) as usize)
}

/// Dynamic shared memory of [`diffusion_temporal_f32`]: two
/// `(TY + 2K) x (TX + 2K)` f32 planes (72 x 40 x 2 x 4 = 23,040 bytes).
pub const fn temporal_shared_bytes() -> usize {
    shared::shared_bytes::<f32>(0, 2 * RX * RY)
}

/// One explicit step at one cell: `(lap, u + alpha*lap)`. Every kernel (and
/// the CPU reference) uses this exact expression, so their results agree bit
/// for bit.
#[inline(always)]
pub fn step(c: f32, e: f32, w: f32, n: f32, s: f32, alpha: f32) -> (f32, f32) {
    let lap = (e + w) + (n + s) - 4.0 * c;
    (lap, c + alpha * lap)
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
/// (see `docs/workloads/diffusion.md`); [`diffusion_pingpong_f32`] is the fix.
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
/// What changed: a block loads a `(32+2K) x (64+2K)` region of `u` (its
/// 64x32 output tile plus a halo of K cells) into shared memory, advances it
/// K-1 steps between two shared planes (the valid region shrinks by one cell
/// per side and step), and the K-th step writes `lap` and `u_new` for the
/// output tile. What it buys: global traffic per step drops about K-fold
/// (12 bytes per cell per launch, plus the halo re-read), at the price of
/// recomputing the halo (about 15% more stencil work for K = 4). Cells on the
/// domain boundary stay fixed at every step; cells outside the domain are
/// never used by an interior cell. `lap` ends as the Laplacian of the last
/// step, as in rung 2, and the fields are bitwise equal to K launches of rung 2.
///
/// Thread mapping: 32x8 threads sweep each region with strides 32 (columns)
/// and 8 (rows): every warp touches 32 consecutive words of one row (no bank
/// conflicts, coalesced global loads). Shared layout: plane `p` (0 or 1),
/// cell `(ly, lx)` at `p*RX*RY + ly*RX + lx`, `RX = 72`, `RY = 40`.
#[kernel(launch_bounds(256))]
pub fn diffusion_temporal_f32(
    u: DeviceSlice<f32>,
    lap: DeviceSliceMut<f32>,
    u_new: DeviceSliceMut<f32>,
    nx: u32,
    ny: u32,
    alpha: f32,
) {
    const K: usize = TEMPORAL_STEPS;
    const PLANE: usize = RX * RY;
    let s = shared::dynamic_shared::<f32>(0, 2 * PLANE);
    let (nx, ny) = (nx as usize, ny as usize);
    let (tx, ty) = (
        thread::thread_idx_x() as usize,
        thread::thread_idx_y() as usize,
    );
    let (bx, by) = (TEMPORAL_BLOCK.0 as usize, TEMPORAL_BLOCK.1 as usize);
    // Global coordinates of local (0, 0); may be "negative" (wrapping), which
    // the `< nx` / `< ny` tests below treat as outside.
    let ox = (thread::block_idx_x() as usize * TEMPORAL_TX).wrapping_sub(K);
    let oy = (thread::block_idx_y() as usize * TEMPORAL_TY).wrapping_sub(K);

    // Load the region (zero outside the domain).
    let mut ly = ty;
    while ly < RY {
        let gy = oy.wrapping_add(ly);
        let mut lx = tx;
        while lx < RX {
            let gx = ox.wrapping_add(lx);
            let v = if gx < nx && gy < ny {
                // SAFETY: gx < nx and gy < ny, so the index is inside `u`.
                unsafe { u.get_unchecked(gy * nx + gx) }
            } else {
                0.0
            };
            // SAFETY: ly < RY and lx < RX: inside plane 0.
            unsafe { s.set_unchecked(ly * RX + lx, v) };
            lx += bx;
        }
        ly += by;
    }
    sync_threads();

    // K - 1 steps in shared memory, on shrinking regions [st, R - st).
    let mut src = 0;
    let mut st = 1;
    while st < K {
        let dst = PLANE - src;
        let mut ly = st + ty;
        while ly < RY - st {
            let gy = oy.wrapping_add(ly);
            let mut lx = st + tx;
            while lx < RX - st {
                let gx = ox.wrapping_add(lx);
                let j = ly * RX + lx;
                // SAFETY: 1 <= st <= ly < RY - 1 and the same for lx, so the
                // five cells are inside the source plane; `dst + j` inside the other.
                unsafe {
                    let c = s.get_unchecked(src + j);
                    let interior = gx >= 1 && gy >= 1 && gx < nx - 1 && gy < ny - 1;
                    let v = if interior {
                        step(
                            c,
                            s.get_unchecked(src + j + 1),
                            s.get_unchecked(src + j - 1),
                            s.get_unchecked(src + j - RX),
                            s.get_unchecked(src + j + RX),
                            alpha,
                        )
                        .1
                    } else {
                        c
                    };
                    s.set_unchecked(dst + j, v);
                }
                lx += bx;
            }
            ly += by;
        }
        sync_threads();
        src = dst;
        st += 1;
    }

    // Step K: the output tile, written to global memory.
    let mut ly = K + ty;
    while ly < K + TEMPORAL_TY {
        let gy = oy.wrapping_add(ly);
        let mut lx = K + tx;
        while lx < K + TEMPORAL_TX {
            let gx = ox.wrapping_add(lx);
            if gx < nx && gy < ny {
                let j = ly * RX + lx;
                let i = gy * nx + gx;
                // SAFETY: K <= ly < RY - K and K <= lx < RX - K: the five
                // cells are in the plane; `i < nx*ny` = the output lengths.
                unsafe {
                    let c = s.get_unchecked(src + j);
                    if gx >= 1 && gy >= 1 && gx < nx - 1 && gy < ny - 1 {
                        let (l, v) = step(
                            c,
                            s.get_unchecked(src + j + 1),
                            s.get_unchecked(src + j - 1),
                            s.get_unchecked(src + j - RX),
                            s.get_unchecked(src + j + RX),
                            alpha,
                        );
                        lap.set_unchecked(i, l);
                        u_new.set_unchecked(i, v);
                    } else {
                        lap.set_unchecked(i, 0.0);
                        u_new.set_unchecked(i, c);
                    }
                }
            }
            lx += bx;
        }
        ly += by;
    }
}
