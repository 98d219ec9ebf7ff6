//! 2D Poisson equation by Jacobi iteration: the stencil ladder.
//!
//! # What is computed
//! The grid has `nx` columns (x, fastest-varying) and `ny` rows (y), row-major:
//! cell `(x, y)` is element `y * nx + x`. The grid spacing is `h` in both
//! directions. The discrete equation, at every interior cell, is
//!
//! ```text
//! lap_h p = b,   lap_h p = (p[x-1,y] + p[x+1,y] + p[x,y-1] + p[x,y+1] - 4 p[x,y]) / h^2
//! ```
//!
//! (the material's sign convention: `lap p = b`, not `-lap p = b`). One Jacobi
//! sweep is the material's formula
//!
//! ```text
//! p_new[x,y] = 0.25 (pW + pE + pN + pS) - k b[x,y],   k = h^2 / 4
//! ```
//!
//! whose fixed point is exactly `lap_h p = b`. The kernels take `k` (the host
//! computes it from `h`); the residual kernel takes `inv_h2 = 1 / h^2` and
//! sums `r^2` with `r = b - lap_h p`.
//!
//! Boundaries are Dirichlet: the cells of the first and last row and column
//! keep their values. Every sweep kernel writes *every* cell of its output
//! (the boundary cells are copied), so ping-pong buffers need no set-up and an
//! output poisoned with NaN comes back complete.
//!
//! # Slabs (multi-GPU)
//! Nothing in the kernels assumes the buffer is the whole domain: a slab of
//! rows with one halo row above and below is itself a grid whose first and
//! last rows are "boundary" (copied, not updated), so the same launchers run
//! on a slab after a halo exchange. The temporal kernel works on a slab with
//! `depth` halo rows per side: after `depth` steps the rows at distance
//! `>= depth` from the slab's edges are exact.
//!
//! # The ladder
//! 1. [`poisson_naive`]: one thread per cell, global memory only.
//! 2. [`poisson_tiled`]: the material's shared-memory tile with a halo
//!    (the teaching rung: slower than rung 1 on Hopper).
//! 3. [`poisson_register`]: several rows per thread, vertical reuse in
//!    registers, all loads of a thread in flight at once.
//! 4. [`poisson_temporal`]: temporal blocking, `depth` sweeps per pass
//!    over memory inside shared memory.
//!
//! plus [`poisson_residual`], the residual norm by a block reduction.

use ptxlab_device::prelude::*;

/// Repeats `$body` with `$r` bound to each literal in turn: a guaranteed full
/// unroll, so per-thread arrays indexed by `$r` stay in registers (LLVM's own
/// unroller gives up on the larger temporal-blocking loops and the arrays
/// then live in local memory).
macro_rules! unroll {
    ($r:ident in [$($i:literal),* $(,)?] $body:block) => {
        $( { #[allow(clippy::identity_op, clippy::erasing_op)] let $r: usize = $i; $body } )*
    };
}

/// The grid of a sweep as the sweep bodies ([`temporal_body`] and the
/// per-cell path of [`poisson_register`]) take it: `nx` columns (x,
/// fastest-varying) and `ny` rows, row-major (cell `(x, y)` is element
/// `y nx + x`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    /// Columns (boundary included).
    pub nx: u32,
    /// Rows (boundary included).
    pub ny: u32,
}

/// Rung 1 block: 32 x 8 threads (a warp covers 32 consecutive cells of a row).
pub const NAIVE_BX: u32 = 32;
/// Rung 1 block height.
pub const NAIVE_BY: u32 = 8;

/// Rung 2 tile (= block) width.
pub const TILE_X: u32 = 32;
/// Rung 2 tile (= block) height.
pub const TILE_Y: u32 = 8;
/// Rung 2 shared tile row length: the tile plus a one-cell halo on each side.
pub const TILE_SW: usize = TILE_X as usize + 2;
/// Rung 2 shared tile rows.
pub const TILE_SH: usize = TILE_Y as usize + 2;

/// Rung 3 block width (threads, one column each).
pub const REG_BX: u32 = 32;
/// Rung 3 block height (threads).
pub const REG_BY: u32 = 4;
/// Rung 3 rows per thread.
pub const REG_RY: usize = 8;

/// Rung 4 block width (threads, one column each) = width of the shared region.
pub const TB_X: u32 = 128;
/// Rung 4 block height (threads).
pub const TB_Y: u32 = 4;
/// Rung 4 rows per thread (the kernel's loops are unrolled by hand for 16).
pub const TB_RY: usize = 16;
const _: () = assert!(
    TB_RY == 16,
    "the unroll! lists of temporal_body assume TB_RY == 16"
);
/// Rung 4 shared region width (cells).
pub const TB_W: usize = TB_X as usize;
/// Rung 4 shared region height (cells).
pub const TB_H: usize = TB_Y as usize * TB_RY;
/// Largest temporal depth (sweeps per pass). The output tile of a block is
/// `(TB_W - 2 depth) x (TB_H - 2 depth)` cells.
pub const MAX_DEPTH: u32 = 16;

/// Residual kernel block size (threads, a multiple of 32).
pub const RES_BLOCK: u32 = 256;

/// Dynamic shared memory of rung 2: one `(TILE_X + 2) x (TILE_Y + 2)` tile.
pub const fn tiled_shared_bytes<T>() -> usize {
    shared::shared_bytes::<T>(0, TILE_SW * TILE_SH)
}

/// Dynamic shared memory of rung 4: two `TB_W x TB_H` regions (double
/// buffering, so one barrier per sweep). Independent of the depth.
pub const fn temporal_shared_bytes<T>() -> usize {
    shared::shared_bytes::<T>(0, 2 * TB_W * TB_H)
}

/// Output tile of one rung-4 block at `depth`: `(width, height)` in cells.
pub const fn temporal_out_tile(depth: u32) -> (usize, usize) {
    (TB_W - 2 * depth as usize, TB_H - 2 * depth as usize)
}

/// Dynamic shared memory of the residual kernel: one f64 per warp.
pub const fn residual_shared_bytes() -> usize {
    shared::shared_bytes::<f64>(0, (RES_BLOCK / 32) as usize)
}

/// Stops the kernel unless `p`, `b` and `out` hold at least `nx * ny` cells;
/// after it, every index `< nx * ny` is in bounds for all three.
#[inline(always)]
fn check_lengths<T: Real>(
    p: &DeviceSlice<T>,
    b: &DeviceSlice<T>,
    out_len: usize,
    nx: u32,
    ny: u32,
) {
    let n = nx as usize * ny as usize;
    if p.len() < n || b.len() < n || out_len < n {
        ptxlab_device::trap("poisson: a buffer is shorter than nx * ny");
    }
}

/// One Jacobi update from the sum of the four neighbours.
#[inline(always)]
fn jacobi<T: Real>(sum: T, b: T, k: T) -> T {
    T::from_f64(0.25) * sum - k * b
}

#[inline(always)]
fn at(x: u32, y: u32, nx: u32) -> usize {
    y as usize * nx as usize + x as usize
}

/// Rung 1: naive 5-point Jacobi sweep, global memory only.
///
/// Thread mapping: a 2D grid of [`NAIVE_BX`] x [`NAIVE_BY`] blocks, one thread
/// per cell `(x, y)`; a warp reads 32 consecutive cells of a row (128 bytes,
/// coalesced) for the centre and the north and south rows, and the same lines
/// shifted by one cell for west and east. No shared memory.
///
/// What it costs: five loads and one store per cell, but only one of the four
/// neighbour loads misses: the west/east loads hit the lines the warp just
/// read (L1), and the north/south rows were read by the blocks above and
/// below a moment earlier (L1/L2). So DRAM traffic is close to the floor of
/// 12 bytes per cell (f32: read p and b, write p_new) and the kernel runs
/// close to the copy bandwidth (measured: `docs/book/src/workloads/poisson.md`). It is
/// the baseline every other rung must beat. Boundary cells are copied from `p` to `out`.
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn poisson_naive<T: Real>(
    p: DeviceSlice<T>,
    b: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    nx: u32,
    ny: u32,
    k: T,
) {
    check_lengths(&p, &b, out.len(), nx, ny);
    let x = thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
    let y = thread::block_idx_y() * thread::block_dim_y() + thread::thread_idx_y();
    if x >= nx || y >= ny {
        return;
    }
    let i = at(x, y, nx);
    let w = nx as usize;
    // SAFETY: x < nx and y < ny, so i < nx * ny <= every length (checked at
    // entry); an interior cell's four neighbours are inside the grid too.
    unsafe {
        if x == 0 || y == 0 || x == nx - 1 || y == ny - 1 {
            out.set_unchecked(i, p.get_unchecked(i));
        } else {
            let s = (p.get_unchecked(i - 1) + p.get_unchecked(i + 1))
                + (p.get_unchecked(i - w) + p.get_unchecked(i + w));
            out.set_unchecked(i, jacobi(s, b.get_unchecked(i), k));
        }
    }
}

/// Rung 2: the material's shared-memory tile with a one-cell halo.
///
/// Thread mapping: blocks of [`TILE_X`] x [`TILE_Y`] threads, one cell each.
/// Shared layout: a row-major `(TILE_X + 2) x (TILE_Y + 2)` tile of `p`
/// ([`tiled_shared_bytes`]); thread `(tx, ty)` stores its cell at
/// `(tx + 1, ty + 1)`, and the threads on the tile's edges also store the
/// neighbour across the edge (the halo; corners are not needed by a 5-point
/// stencil). After one `sync_threads` every thread reads its four neighbours
/// from shared memory.
///
/// What changed from rung 1: each `p` value is read from global memory once
/// per block instead of up to five times. What it buys on Hopper: nothing,
/// it *loses* to rung 1, and so does the CUDA C++ peer of each
/// (`docs/book/src/workloads/poisson.md`).
/// The reuse it captures by hand was already caught by L1 and L2, which are
/// large and fast on sm_90; what it adds is real work: the halo loads are
/// divergent, mostly-wasted partial warps (the west/east halo is one lane per
/// row), every cell goes through a shared store, a barrier and four shared
/// loads, and the barrier stops a warp from overlapping its loads with the
/// arithmetic of the previous cell. The rung stays as the lesson.
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn poisson_tiled<T: Real>(
    p: DeviceSlice<T>,
    b: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    nx: u32,
    ny: u32,
    k: T,
) {
    check_lengths(&p, &b, out.len(), nx, ny);
    if thread::block_dim_x() != TILE_X || thread::block_dim_y() != TILE_Y {
        ptxlab_device::trap("poisson_tiled: the block must be TILE_X x TILE_Y");
    }
    let sh = shared::dynamic_shared::<T>(0, TILE_SW * TILE_SH);
    let (tx, ty) = (thread::thread_idx_x(), thread::thread_idx_y());
    let x = thread::block_idx_x() * TILE_X + tx;
    let y = thread::block_idx_y() * TILE_Y + ty;
    let inside = x < nx && y < ny;
    let s = (ty as usize + 1) * TILE_SW + tx as usize + 1;
    let w = nx as usize;
    if inside {
        let i = at(x, y, nx);
        // SAFETY: (x, y) is in the grid, and each halo load is guarded so that
        // its neighbour is in the grid too: every global index is < nx * ny
        // (checked at entry). Shared indices: tx < TILE_X and ty < TILE_Y
        // (block shape checked), so s - 1, s + 1, s - TILE_SW and s + TILE_SW
        // all lie in the TILE_SW x TILE_SH tile.
        unsafe {
            sh.set_unchecked(s, p.get_unchecked(i));
            if tx == 0 && x > 0 {
                sh.set_unchecked(s - 1, p.get_unchecked(i - 1));
            }
            if tx == TILE_X - 1 && x + 1 < nx {
                sh.set_unchecked(s + 1, p.get_unchecked(i + 1));
            }
            if ty == 0 && y > 0 {
                sh.set_unchecked(s - TILE_SW, p.get_unchecked(i - w));
            }
            if ty == TILE_Y - 1 && y + 1 < ny {
                sh.set_unchecked(s + TILE_SW, p.get_unchecked(i + w));
            }
        }
    }
    sync_threads();
    if inside {
        let i = at(x, y, nx);
        // SAFETY: as above. An interior cell's four neighbours are in the grid,
        // so each was written to the tile, either as the centre of the thread
        // that owns it or as a halo cell, before the barrier.
        unsafe {
            if x == 0 || y == 0 || x == nx - 1 || y == ny - 1 {
                out.set_unchecked(i, sh.get_unchecked(s));
            } else {
                let sum = (sh.get_unchecked(s - 1) + sh.get_unchecked(s + 1))
                    + (sh.get_unchecked(s - TILE_SW) + sh.get_unchecked(s + TILE_SW));
                out.set_unchecked(i, jacobi(sum, b.get_unchecked(i), k));
            }
        }
    }
}

/// One cell `(x, y)` of the grid (inside it): copied on the boundary,
/// updated by Jacobi inside.
#[inline(always)]
fn cell_generic<T: Real>(
    p: &DeviceSlice<T>,
    b: &DeviceSlice<T>,
    out: &DeviceSliceMut<T>,
    x: u32,
    y: u32,
    grid: Grid,
    k: T,
) {
    let Grid { nx, ny } = grid;
    let i = at(x, y, nx);
    let w = nx as usize;
    // SAFETY: the caller passes x < nx and y < ny, so i < nx * ny (lengths
    // checked at kernel entry); neighbours are read only for interior cells.
    unsafe {
        if x == 0 || y == 0 || x == nx - 1 || y == ny - 1 {
            out.set_unchecked(i, p.get_unchecked(i));
        } else {
            let s = (p.get_unchecked(i - 1) + p.get_unchecked(i + 1))
                + (p.get_unchecked(i - w) + p.get_unchecked(i + w));
            out.set_unchecked(i, jacobi(s, b.get_unchecked(i), k));
        }
    }
}

/// Rung 3: a better-designed tile: [`REG_RY`] rows per thread, vertical
/// reuse in registers, every load of the thread issued before the first use.
///
/// Thread mapping: blocks of [`REG_BX`] x [`REG_BY`] threads; thread `(x, t)`
/// owns the column strip `x`, rows `REG_RY t .. REG_RY (t + 1)`. It loads the
/// strip plus one row above and below (`REG_RY + 2` values) into registers,
/// so the north and south neighbours of each cell come from registers (the
/// "sliding window" north/centre/south, fully unrolled), and the west/east
/// neighbours come from the lines its own warp just loaded (L1 hits). A warp
/// still reads 128 consecutive bytes per row: every access is coalesced. No
/// shared memory and no barrier.
///
/// What changed from rung 2: reuse along y is in registers instead of shared
/// memory, reuse along x is left to L1, and each thread has 34 independent
/// loads in flight (f32, `REG_RY = 8`) instead of 5. What it buys: about a
/// third fewer load instructions per cell than rung 1 and enough bytes in
/// flight per SM to keep HBM busy, so the sweep runs at the 12-byte floor
/// (target: 90% or more of the copy bandwidth). Wide (16-byte) vector loads
/// are not used: they need rows aligned to 16 bytes (`nx` a multiple of 4),
/// and the scalar version already has enough loads in flight. Cells of a strip
/// that touch the boundary or the grid's end take a per-cell path.
#[kernel(launch_bounds(128), instances(f32, f64))]
pub fn poisson_register<T: Real>(
    p: DeviceSlice<T>,
    b: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    nx: u32,
    ny: u32,
    k: T,
) {
    check_lengths(&p, &b, out.len(), nx, ny);
    let x = thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
    let y0 =
        (thread::block_idx_y() * thread::block_dim_y() + thread::thread_idx_y()) * REG_RY as u32;
    if x >= nx || y0 >= ny {
        return;
    }
    let w = nx as usize;
    // Fast path: the column is interior and so are all REG_RY rows, so the
    // column strip with one row above and below lies inside the grid.
    if x >= 1 && x + 1 < nx && y0 >= 1 && y0 + (REG_RY as u32) < ny {
        let base = at(x, y0, nx);
        let mut col = [T::ZERO; REG_RY + 2];
        let mut bb = [T::ZERO; REG_RY];
        let mut we = [T::ZERO; REG_RY];
        // SAFETY: rows y0 - 1 ..= y0 + REG_RY are in 0..ny and columns
        // x - 1 ..= x + 1 in 0..nx (fast-path condition), so every index is
        // < nx * ny, which every length covers (checked at entry).
        unsafe {
            let mut r = 0;
            while r < REG_RY + 2 {
                col[r] = p.get_unchecked(base + r * w - w);
                r += 1;
            }
            let mut r = 0;
            while r < REG_RY {
                let i = base + r * w;
                bb[r] = b.get_unchecked(i);
                we[r] = p.get_unchecked(i - 1) + p.get_unchecked(i + 1);
                r += 1;
            }
            let mut r = 0;
            while r < REG_RY {
                out.set_unchecked(
                    base + r * w,
                    jacobi(we[r] + (col[r] + col[r + 2]), bb[r], k),
                );
                r += 1;
            }
        }
    } else {
        let mut r = 0;
        while r < (REG_RY as u32) && y0 + r < ny {
            cell_generic(&p, &b, &out, x, y0 + r, Grid { nx, ny }, k);
            r += 1;
        }
    }
}

/// The point update of a temporally blocked 5-point sweep
/// ([`temporal_body`]): Jacobi for Poisson, an explicit step for diffusion.
/// One body serves both, so both get the same register strips, double
/// buffering and halo handling.
pub trait Stencil5<T: Real>: Copy {
    /// The update reads a per-cell right-hand side (`b`), kept in registers.
    const USES_RHS: bool;
    /// New value of an updating cell from its centre, `west + east`,
    /// `north + south` and right-hand side, and an auxiliary value that the
    /// last sweep writes to the optional second output (zero on cells that
    /// do not update). Used only when `USES_RHS` is false.
    fn update(self, centre: T, we: T, ns: T, rhs: T) -> (T, T);
}

/// Jacobi for `lap p = b`: `p = (sum of neighbours) / 4 - k b`, `k = h^2 / 4`.
#[derive(Clone, Copy)]
pub struct Jacobi<T>(pub T);

impl<T: Real> Stencil5<T> for Jacobi<T> {
    const USES_RHS: bool = true;
    #[inline(always)]
    fn update(self, _centre: T, we: T, ns: T, rhs: T) -> (T, T) {
        (jacobi(we + ns, rhs, self.0), T::ZERO)
    }
}

/// Temporal blocking, generic over the point update: `depth` sweeps of
/// `op` per pass (see [`poisson_temporal`] for the mapping and layout).
/// Reads `p` (and `b` when the update uses it), writes `out` and, when given,
/// `aux` (the update's auxiliary value of the last sweep).
#[inline(always)]
#[allow(unused_assignments)] // the last unrolled row's `north = centre` is dead
pub fn temporal_body<T: Real, S: Stencil5<T>>(
    p: DeviceSlice<T>,
    b: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    aux: Option<DeviceSliceMut<T>>,
    grid: Grid,
    op: S,
    depth: u32,
) {
    let Grid { nx, ny } = grid;
    check_lengths(&p, &b, out.len(), nx, ny);
    if let Some(a) = &aux
        && a.len() < nx as usize * ny as usize
    {
        ptxlab_device::trap("temporal: the auxiliary output is shorter than nx * ny");
    }
    if thread::block_dim_x() != TB_X || thread::block_dim_y() != TB_Y {
        ptxlab_device::trap("poisson_temporal: the block must be TB_X x TB_Y");
    }
    if depth == 0 || depth > MAX_DEPTH || nx > i32::MAX as u32 || ny > i32::MAX as u32 {
        ptxlab_device::trap("poisson_temporal: depth must be in 1..=MAX_DEPTH");
    }
    const W: i32 = TB_W as i32;
    const H: i32 = TB_H as i32;
    let d = depth as i32;
    let (ow, oh) = (W - 2 * d, H - 2 * d);
    let (nxi, nyi) = (nx as i32, ny as i32);
    let tx = thread::thread_idx_x() as i32;
    let ly0 = thread::thread_idx_y() as i32 * TB_RY as i32;
    let gx = thread::block_idx_x() as i32 * ow - d + tx;
    let gy0 = thread::block_idx_y() as i32 * oh - d + ly0;
    let col_in = gx >= 0 && gx < nxi;
    let col_upd = gx >= 1 && gx < nxi - 1 && (1..W - 1).contains(&tx);

    // Load the strip (zero outside the grid) and mark the cells that update:
    // interior of the grid and not on the edge of the shared region.
    let mut v = [T::ZERO; TB_RY];
    let mut bb = [T::ZERO; TB_RY];
    let mut upd = 0u32;
    unroll!(r in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
        let gy = gy0 + r as i32;
        let ly = ly0 + r as i32;
        if col_in && gy >= 0 && gy < nyi {
            let i = gy as usize * nx as usize + gx as usize;
            // SAFETY: 0 <= gx < nx and 0 <= gy < ny, so i < nx * ny (checked at entry).
            unsafe {
                v[r] = p.get_unchecked(i);
                if S::USES_RHS {
                    bb[r] = b.get_unchecked(i);
                }
            }
        }
        if col_upd && gy >= 1 && gy < nyi - 1 && (1..H - 1).contains(&ly) {
            upd |= 1 << r;
        }
    });

    let sh = shared::dynamic_shared::<T>(0, 2 * TB_W * TB_H);
    let txu = tx as usize;
    let ly0u = ly0 as usize;
    let mut step = 0;
    while step < depth {
        let buf = (step & 1) as usize * TB_W * TB_H;
        unroll!(r in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            // SAFETY: tx < TB_W and ly0 + r < TB_H (block shape checked), so
            // the index is inside region `buf` of the 2 * TB_W * TB_H view.
            unsafe { sh.set_unchecked(buf + (ly0u + r) * TB_W + txu, v[r]) };
        });
        sync_threads();
        // The rows just outside the strip: read only where they exist (they
        // are used only by updating cells, which are never on the region edge).
        let mut north = T::ZERO;
        if ly0u > 0 {
            // SAFETY: 0 <= ly0 - 1 < TB_H and tx < TB_W: inside region `buf`.
            north = unsafe { sh.get_unchecked(buf + (ly0u - 1) * TB_W + txu) };
        }
        let mut below = T::ZERO;
        if ly0u + TB_RY < TB_H {
            // SAFETY: ly0 + TB_RY < TB_H and tx < TB_W: inside region `buf`.
            below = unsafe { sh.get_unchecked(buf + (ly0u + TB_RY) * TB_W + txu) };
        }
        unroll!(r in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            let centre = v[r];
            let south = if r + 1 < TB_RY { v[r + 1] } else { below };
            if upd & (1 << r) != 0 {
                let row = buf + (ly0u + r) * TB_W + txu;
                // SAFETY: an updating cell has 1 <= tx < TB_W - 1, so row - 1 and
                // row + 1 are in the same row of region `buf`.
                let we = unsafe { sh.get_unchecked(row - 1) + sh.get_unchecked(row + 1) };
                let (nv, a) = op.update(centre, we, north + south, bb[r]);
                v[r] = nv;
                if !S::USES_RHS {
                    // Without a right-hand side, `bb` holds the auxiliary value.
                    bb[r] = a;
                }
            }
            north = centre;
        });
        step += 1;
    }

    // Write the output window: cells at distance >= depth from the region's
    // edges, which are exact after `depth` sweeps.
    if col_in && tx >= d && tx < W - d {
        unroll!(r in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            let ly = ly0 + r as i32;
            let gy = gy0 + r as i32;
            if ly >= d && ly < H - d && gy < nyi {
                let i = gy as usize * nx as usize + gx as usize;
                // SAFETY: 0 <= gx < nx, and gy = block_y * oh + (ly - d) >= 0
                // with gy < ny, so i < nx * ny, within `out` and `aux`
                // (both checked at entry).
                unsafe {
                    out.set_unchecked(i, v[r]);
                    if let Some(a) = &aux {
                        a.set_unchecked(i, bb[r]);
                    }
                }
            }
        });
    }
}

/// Rung 4: temporal blocking, `depth` Jacobi sweeps per pass over memory.
///
/// Thread mapping: blocks of [`TB_X`] x [`TB_Y`] threads cover a shared region
/// of [`TB_W`] x [`TB_H`] cells (128 x 64); thread `(tx, t)` owns the column
/// strip `tx`, rows `TB_RY t .. TB_RY (t + 1)`, and keeps its 16 values of
/// `p` and of `b` in registers for the whole pass. Regions overlap: block
/// `(i, j)` writes only its output tile of `(TB_W - 2 depth) x (TB_H - 2
/// depth)` cells ([`temporal_out_tile`]) and reads a halo of width `depth`
/// around it (zeros outside the grid; those cells sit next to boundary cells
/// only, which never update, so they never reach the result).
///
/// Shared layout: two `TB_W x TB_H` row-major regions ([`temporal_shared_bytes`]).
/// Each sweep: every thread stores its strip into region `step % 2`, one
/// `sync_threads`, then updates its cells from registers (north/south inside
/// the strip) and shared memory (west/east, and the rows just outside its
/// strip). Double buffering makes one barrier per sweep enough: a region is
/// rewritten two sweeps later, after every thread has passed the barrier that
/// follows the reads of it. Cells on the region's edge do not update; the
/// error this leaves moves inward one cell per sweep, so after `depth` sweeps
/// exactly the output tile is exact. The host launches it `ceil(iters /
/// depth)` times (the last pass with the remainder as its depth).
///
/// What changed from rung 3: the sweep no longer pays for its own trip to
/// memory. A pass reads `p` and `b` and writes `p` once (about 12 bytes per
/// output cell, plus the halo re-reads, which mostly hit L2) and performs
/// `depth` updates per cell. What it buys: the HBM floor of a single sweep
/// (12 bytes per cell at the memory bandwidth) no longer applies; the limit
/// becomes shared memory bandwidth and the redundant work on the halo (18%
/// of the region at depth 4, 34% at 8). Target: 2x the single-sweep floor or more.
#[kernel(launch_bounds(512, 2), instances(f32, f64 => (launch_bounds(512, 1))))]
pub fn poisson_temporal<T: Real>(
    p: DeviceSlice<T>,
    b: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    nx: u32,
    ny: u32,
    k: T,
    depth: u32,
) {
    temporal_body(p, b, out, None, Grid { nx, ny }, Jacobi(k), depth);
}

/// Residual (f32 field): adds the sum over interior cells of `r^2`,
/// `r = b - lap_h p` (computed in f64), to `acc[0]`.
///
/// Thread mapping: blocks of [`RES_BLOCK`] x 1 threads; the grid is 2D and
/// grid-strides over the interior (x by `gridDim.x * blockDim.x`, y by
/// `gridDim.y`), so the host can size it to the GPU. Reduction: each thread
/// sums in f64, each warp reduces by five `shfl.bfly` steps, the warp sums go
/// to shared memory (one f64 per warp, [`residual_shared_bytes`]), the first
/// warp reduces them and one thread per block does one `atom.add.f64`.
/// The host zeroes `acc` first.
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn poisson_residual<T: Real>(
    p: DeviceSlice<T>,
    b: DeviceSlice<T>,
    acc: DeviceSliceMut<f64>,
    nx: u32,
    ny: u32,
    inv_h2: f64,
) {
    check_lengths(&p, &b, p.len(), nx, ny);
    if acc.is_empty() || !thread::block_dim_x().is_multiple_of(32) || thread::block_dim_y() != 1 {
        ptxlab_device::trap("poisson_residual: acc is empty or the block is not (32 m, 1)");
    }
    let w = nx as usize;
    let mut sum = 0.0f64;
    let mut y = 1 + thread::block_idx_y();
    while y + 1 < ny {
        let mut x = 1 + thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
        while x + 1 < nx {
            let i = at(x, y, nx);
            // SAFETY: 1 <= x < nx - 1 and 1 <= y < ny - 1: the cell and its four
            // neighbours are in the grid, so every index is < nx * ny.
            let (c, s, bi) = unsafe {
                let s = (p.get_unchecked(i - 1).to_f64() + p.get_unchecked(i + 1).to_f64())
                    + (p.get_unchecked(i - w).to_f64() + p.get_unchecked(i + w).to_f64());
                (p.get_unchecked(i).to_f64(), s, b.get_unchecked(i).to_f64())
            };
            let r = bi - (s - 4.0 * c) * inv_h2;
            sum += r * r;
            x += thread::grid_dim_x() * thread::block_dim_x();
        }
        y += thread::grid_dim_y();
    }
    let s = warp::reduce_sum(sum);
    let nwarps = thread::block_dim_x() / 32;
    let sh = shared::dynamic_shared::<f64>(0, nwarps as usize);
    let lane = warp::lane_id();
    if lane == 0 {
        sh.set(warp::warp_id() as usize, s);
    }
    sync_threads();
    if warp::warp_id() == 0 {
        let v = if lane < nwarps {
            sh.get(lane as usize)
        } else {
            0.0
        };
        let t = warp::reduce_sum(v);
        if lane == 0 {
            acc.atomic_add(0, t);
        }
    }
}
