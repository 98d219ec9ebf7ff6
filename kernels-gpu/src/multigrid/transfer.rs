//! The grid transfers of a cycle: the residual and its restriction in one
//! pass ([`mg_restrict`]) and the prolongation of a coarse correction
//! ([`mg_prolong`]), for coarse grids of any shape.

use super::*;

// ---------------------------------------------------------------- transfers

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
