//! Rung 3: a whole V-cycle over the coarse levels in one block, in shared
//! memory ([`mg_coarse_cycle`]).

use super::*;

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

/// One level of the coarse-levels kernel: its stencil and where its cells
/// start in the shared arrays.
#[derive(Clone, Copy)]
struct CoarseLevel<T: Real> {
    stencil: Stencil<T>,
    off: usize,
}

/// Level `l` of the coarse-levels kernel's geometry (`nx, ny, cx, cy` per
/// level), its cells placed after those of the levels above it.
#[inline(always)]
fn coarse_level<T: Real>(geom: &DeviceSlice<f64>, l: u32) -> CoarseLevel<T> {
    let mut off = 0usize;
    let mut k = 0;
    while k < l {
        off += geom.get(4 * k as usize) as usize * geom.get(4 * k as usize + 1) as usize;
        k += 1;
    }
    let b = 4 * l as usize;
    let dims = Dims {
        nx: geom.get(b) as u32,
        ny: geom.get(b + 1) as u32,
    };
    let (cx, cy) = (T::from_f64(geom.get(b + 2)), T::from_f64(geom.get(b + 3)));
    CoarseLevel {
        stencil: Stencil { dims, cx, cy },
        off,
    }
}

/// `sweeps` red-black sweeps of one level held in shared memory (the whole
/// block; ends with a barrier), the first colour `first`.
#[inline(always)]
fn block_smooth<T: Real>(
    (su, sf): (&SharedSlice<T>, &SharedSlice<T>),
    level: CoarseLevel<T>,
    sweeps: u32,
    first: u32,
    omega: T,
) {
    let CoarseLevel {
        stencil:
            Stencil {
                dims: Dims { nx, ny },
                cx,
                cy,
            },
        off,
    } = level;
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

/// One call of [`mg_coarse_cycle`]: how many levels the geometry
/// describes, the smoothing and the relaxation weight.
#[derive(Debug, Clone, Copy, KernelParams)]
#[repr(C)]
pub struct CoarseCycle<T: Real> {
    /// Levels (`1..=`[`MAX_COARSE_LEVELS`]).
    pub levels: u32,
    /// Pre-smoothing sweeps (`1..=`[`MAX_TILE_SWEEPS`]).
    pub pre: u32,
    /// Post-smoothing sweeps (`0..=`[`MAX_TILE_SWEEPS`]).
    pub post: u32,
    /// The first colour of each post-smoothing sweep (pre-smoothing starts
    /// red).
    pub post_first: Colour,
    /// Over-relaxation weight (1: plain Gauss-Seidel).
    pub omega: T,
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
/// `coarse_pos`, `restrict_at`, `residual_at`, `bilinear`), so the result
/// equals rung 2's.
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
pub fn mg_coarse_cycle<T: Real>(
    f_top: DeviceSlice<T>,
    u_top: DeviceSliceMut<T>,
    geom: DeviceSlice<f64>,
    c: CoarseCycle<T>,
) {
    let CoarseCycle {
        levels,
        pre,
        post,
        post_first,
        omega,
    } = c;
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
    let cells = |l: CoarseLevel<T>| l.stencil.dims.nx as usize * l.stencil.dims.ny as usize;
    let last = coarse_level::<T>(&geom, levels - 1);
    let total = last.off + cells(last);
    let top_cells = cells(coarse_level::<T>(&geom, 0));
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
    // Down: pre-smoothing, then residual and restriction into the level below.
    let mut l = 0;
    while l + 1 < levels {
        let fine = coarse_level::<T>(&geom, l);
        block_smooth((&su, &sf), fine, pre, 0, omega);
        let CoarseLevel {
            stencil:
                Stencil {
                    dims: Dims { nx, ny },
                    cx,
                    cy,
                },
            off,
        } = fine;
        let coarse = coarse_level::<T>(&geom, l + 1);
        let (Dims { nx: ncx, ny: ncy }, coff) = (coarse.stencil.dims, coarse.off);
        let (numx, denx, numy, deny) = (ncx - 1, nx - 1, ncy - 1, ny - 1);
        let scale = restrict_scale::<T>((numx, denx), (numy, deny));
        let (ciw, cih) = (ncx - 2, ncy - 2);
        let n = nx as usize;
        let mut m = tid as u32;
        while m < ciw * cih {
            let (ci, cj) = (1 + m % ciw, 1 + m / ciw);
            let sum = restrict_at(
                (ci, cj),
                (numx, denx),
                (numy, deny),
                |_, _| {},
                |i, j| {
                    let g = off + (j * nx + i) as usize;
                    // SAFETY: fine_range keeps the fine point interior, so it
                    // and its neighbours are inside level l's cells.
                    unsafe {
                        let c0 = su.get_unchecked(g);
                        let we = su.get_unchecked(g - 1) + su.get_unchecked(g + 1);
                        let sn = su.get_unchecked(g - n) + su.get_unchecked(g + n);
                        residual_at(sf.get_unchecked(g), c0, we, sn, cx, cy)
                    }
                },
            );
            // SAFETY: (ci, cj) is interior to level l + 1, inside its cells.
            unsafe { sf.set_unchecked(coff + (cj * ncx + ci) as usize, sum * scale) };
            m += bd as u32;
        }
        sync_threads();
        l += 1;
    }
    // The coarsest level: one interior point, one sweep solves it.
    block_smooth((&su, &sf), last, 1, 0, T::ONE);
    // Up: prolongation with correction, then post-smoothing (black first).
    let mut l = levels - 1;
    while l > 0 {
        l -= 1;
        let fine = coarse_level::<T>(&geom, l);
        let coarse = coarse_level::<T>(&geom, l + 1);
        let (Dims { nx, ny }, off) = (fine.stencil.dims, fine.off);
        let (Dims { nx: ncx, ny: ncy }, coff) = (coarse.stencil.dims, coarse.off);
        let (iw, ih) = (nx - 2, ny - 2);
        let mut m = tid as u32;
        while m < iw * ih {
            let (x, y) = (1 + m % iw, 1 + m / iw);
            let (i0, wx) = coarse_pos::<T>(x, ncx - 1, nx - 1);
            let (j0, wy) = coarse_pos::<T>(y, ncy - 1, ny - 1);
            let k = coff + (j0 * ncx + i0) as usize;
            let w = ncx as usize;
            // SAFETY: an interior fine point's coarse cell has i0 + 1 <= ncx - 1
            // and j0 + 1 <= ncy - 1 (see `prolong_body`): inside level l + 1.
            unsafe {
                let corners = [
                    su.get_unchecked(k),
                    su.get_unchecked(k + 1),
                    su.get_unchecked(k + w),
                    su.get_unchecked(k + w + 1),
                ];
                let v = bilinear(corners, wx, wy);
                let s = off + (y * nx + x) as usize;
                su.set_unchecked(s, su.get_unchecked(s) + v);
            }
            m += bd as u32;
        }
        sync_threads();
        if post > 0 {
            block_smooth((&su, &sf), fine, post, post_first as u32, omega);
        }
    }
    let mut i = tid;
    while i < top_cells {
        // SAFETY: i < top_cells <= u_top.len() and < total.
        unsafe { u_top.set_unchecked(i, su.get_unchecked(i)) };
        i += bd;
    }
}
