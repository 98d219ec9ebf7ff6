//! The grid transfers of a cycle: the residual and its restriction in one
//! pass ([`mg_restrict`]) and the prolongation of a coarse correction
//! ([`mg_prolong`]), for coarse grids of any shape; each written once, as
//! a body the row-slab kernels of `slab.rs` share.

use super::*;

// ---------------------------------------------------------------- transfers

/// One restriction: the fine level it reads (shape and operator), the
/// coarse level it writes, and whether the residual includes `u`.
#[derive(Debug, Clone, Copy, PartialEq, KernelParams)]
#[repr(C)]
pub struct Restrict<T: Real> {
    /// The fine level.
    pub fine: Stencil<T>,
    /// The coarse level's shape.
    pub coarse: Dims,
    /// Restrict the residual `f - lap u` (false: `f` alone, FMG's first
    /// descent, where `u` is zero and is not read).
    pub with_u: bool,
}

/// One prolongation: the fine and coarse levels' shapes, and whether it
/// adds to the fine correction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, KernelParams)]
#[repr(C)]
pub struct Prolong {
    /// The fine level's shape.
    pub fine: Dims,
    /// The coarse level's shape.
    pub coarse: Dims,
    /// `u += P uc` (false: `u = P uc`, FMG's interpolation of a coarse
    /// solution).
    pub add: bool,
}

/// The rows of a restriction's buffers on a slab: the fine buffer's stored
/// rows and the coarse rows computed (the coarse buffers start at the
/// first of them).
#[derive(Clone, Copy)]
pub(super) struct RestrictRows {
    pub(super) fine: Rows,
    pub(super) coarse: Rows,
}

/// The body of [`mg_restrict`] and [`mg_restrict_slab`]: one thread per
/// coarse cell of the coarse rows (`rows`: on a slab, global rows
/// `rows.coarse` from fine buffers holding `rows.fine`; `None`: the whole
/// level), rows by a `gridDim.y` stride. The caller has checked the shapes
/// and lengths.
#[inline(always)]
pub(super) fn restrict_body<T: Real>(
    (u, f): (DeviceSlice<T>, DeviceSlice<T>),
    (fc, uc): (DeviceSliceMut<T>, DeviceSliceMut<T>),
    r: Restrict<T>,
    rows: Option<RestrictRows>,
) {
    let Restrict {
        fine: Stencil {
            dims: Dims { nx, ny },
            cx,
            cy,
        },
        coarse: Dims { nx: ncx, ny: ncy },
        with_u,
    } = r;
    let (xs, ys) = ((ncx - 1, nx - 1), (ncy - 1, ny - 1));
    let scale = restrict_scale::<T>(xs, ys);
    let ci = thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
    let (width, cw) = (nx as usize, ncx as usize);
    let (fy0, cy0, cny) = match rows {
        Some(s) => (s.fine.y0, s.coarse.y0, s.coarse.rows),
        None => (0, 0, ncy),
    };
    let mut cl = thread::block_idx_y();
    while ci < ncx && cl < cny {
        let cj = cy0 + cl;
        let c = cl as usize * cw + ci as usize;
        let mut sum = T::ZERO;
        if ci > 0 && cj > 0 && ci + 1 < ncx && cj + 1 < ncy {
            // On a slab, the rows the stencil reads (with the residual's
            // neighbours) must be stored.
            let held = |j_lo: u32, j_hi: u32| {
                if let Some(s) = rows {
                    let need = if with_u { 1 } else { 0 };
                    if j_lo < s.fine.y0 + need || j_hi + need >= s.fine.end() {
                        ptxlab_device::trap("mg_restrict_slab: a fine row outside the slab");
                    }
                }
            };
            sum = restrict_at((ci, cj), xs, ys, held, |i, j| {
                let g = (j - fy0) as usize * width + i as usize;
                // SAFETY: fine_range keeps 1 <= i <= nx - 2 and
                // 1 <= j <= ny - 2 for an interior coarse point, and on
                // a slab the rows j - 1 ..= j + 1 (j alone without
                // `with_u`) are stored (checked by `held`), so the cell
                // and its neighbours are inside both fine buffers.
                unsafe {
                    let fv = f.get_unchecked(g);
                    if with_u {
                        let c0 = u.get_unchecked(g);
                        let we = u.get_unchecked(g - 1) + u.get_unchecked(g + 1);
                        let sn = u.get_unchecked(g - width) + u.get_unchecked(g + width);
                        residual_at(fv, c0, we, sn, cx, cy)
                    } else {
                        fv
                    }
                }
            });
            sum *= scale;
        }
        // SAFETY: ci < ncx and cl < cny: c < ncx * cny <= both lengths
        // (checked by the caller).
        unsafe {
            fc.set_unchecked(c, sum);
            uc.set_unchecked(c, T::ZERO);
        }
        cl += thread::grid_dim_y();
    }
}

/// Residual and restriction in one pass: `fc = R (f - lap u)`
/// on the coarse interior, `fc = 0` on its boundary, `uc = 0` everywhere
/// (the coarse level starts from a zero correction). Without `with_u` it
/// restricts `f` alone (FMG's first descent, where `u` is zero).
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
pub fn mg_restrict<T: Real>(
    u: DeviceSlice<T>,
    f: DeviceSlice<T>,
    fc: DeviceSliceMut<T>,
    uc: DeviceSliceMut<T>,
    r: Restrict<T>,
) {
    let (Dims { nx, ny }, Dims { nx: ncx, ny: ncy }) = (r.fine.dims, r.coarse);
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
    restrict_body((u, f), (fc, uc), r, None);
}

/// The rows of a prolongation's buffers on a slab: the fine buffer's and
/// the coarse buffer's stored rows, and the fine rows updated (local to the
/// fine buffer: `lo .. hi`).
#[derive(Clone, Copy)]
pub(super) struct ProlongRows {
    pub(super) fine: Rows,
    pub(super) coarse: Rows,
    pub(super) lo: u32,
    pub(super) hi: u32,
}

/// The body of [`mg_prolong`] and [`mg_prolong_slab`]: one thread per fine
/// interior column, rows by a `gridDim.y` stride over the fine interior
/// (`None`) or over a slab's rows `lo .. hi`. The caller has checked the
/// shapes and lengths.
#[inline(always)]
pub(super) fn prolong_body<T: Real>(
    uc: DeviceSlice<T>,
    u: DeviceSliceMut<T>,
    p: Prolong,
    rows: Option<ProlongRows>,
) {
    let Prolong {
        fine: Dims { nx, ny },
        coarse: Dims { nx: ncx, ny: ncy },
        add,
    } = p;
    let x = 1 + thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
    let (width, w) = (nx as usize, ncx as usize);
    let (lo, fy0) = match rows {
        Some(s) => (s.lo, s.fine.y0),
        None => (1, 0),
    };
    // Whether the launch's row `yl` of the fine buffer is one it updates.
    let updated = |yl: u32| match rows {
        Some(s) => yl < s.hi,
        None => yl + 1 < ny,
    };
    let mut yl = lo + thread::block_idx_y();
    while x + 1 < nx && updated(yl) {
        let gy = fy0 + yl;
        if rows.is_none() || (gy > 0 && gy + 1 < ny) {
            let (i0, wx) = coarse_pos::<T>(x, ncx - 1, nx - 1);
            let (j0, wy) = coarse_pos::<T>(gy, ncy - 1, ny - 1);
            let cy0 = match rows {
                Some(s) => {
                    if j0 < s.coarse.y0 || j0 + 1 >= s.coarse.end() {
                        ptxlab_device::trap("mg_prolong_slab: a coarse row outside the slab");
                    }
                    s.coarse.y0
                }
                None => 0,
            };
            let k = (j0 - cy0) as usize * w + i0 as usize;
            let i = yl as usize * width + x as usize;
            // SAFETY: for an interior fine point (1 <= x <= nx - 2),
            // x (ncx - 1) < (nx - 1)(ncx - 1), so i0 <= ncx - 2 and
            // i0 + 1 <= ncx - 1; likewise j0 + 1 <= ncy - 1, and on a slab
            // the coarse rows j0, j0 + 1 are stored (checked above): the
            // four corners are inside `uc`. The fine cell has x <= nx - 2
            // and a row inside the fine buffer (1 <= yl <= ny - 2, or
            // yl < hi <= the slab's rows): inside `u` (lengths checked by
            // the caller).
            unsafe {
                let v = bilinear(
                    [
                        uc.get_unchecked(k),
                        uc.get_unchecked(k + 1),
                        uc.get_unchecked(k + w),
                        uc.get_unchecked(k + w + 1),
                    ],
                    wx,
                    wy,
                );
                let old = if add {
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

/// Prolongation with correction: `u += P uc` on the fine interior (without
/// `add`: `u = P uc`, FMG's interpolation of a coarse solution). `P` is
/// bilinear interpolation ([`bilinear`]) at each fine point's position on
/// the coarse grid ([`coarse_pos`]).
///
/// Thread mapping: blocks of [`BLOCK`] x 1, one thread per fine interior
/// cell, rows by a `gridDim.y` stride; the four coarse values a warp needs
/// are a few cache lines. Used with the rung-1 smoother; rung 2 fuses it
/// into the first post-smoothing pass.
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn mg_prolong<T: Real>(uc: DeviceSlice<T>, u: DeviceSliceMut<T>, p: Prolong) {
    let (Dims { nx, ny }, Dims { nx: ncx, ny: ncy }) = (p.fine, p.coarse);
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
    prolong_body(uc, u, p, None);
}
