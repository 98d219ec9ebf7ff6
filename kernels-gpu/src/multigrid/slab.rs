//! The transfers and the fine-level steps on a row slab of a level split
//! over several devices ([`mg_restrict_slab`], [`mg_prolong_slab`],
//! [`mg_defect_slab`], [`mg_cg_dir_slab`]): global row positions, the
//! single-device kernels' arithmetic in their order.

use super::*;

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
            let interior = x > 0 && y > 0 && x + 1 < nx && y + 1 < ny && gy > 0 && gy + 1 < ny_g;
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
            let interior = x > 0 && y > 0 && x + 1 < nx && y + 1 < ny && gy > 0 && gy + 1 < ny_g;
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
