//! The transfers and the fine-level steps on a row slab of a level split
//! over several devices ([`mg_restrict_slab`], [`mg_prolong_slab`],
//! [`mg_defect_slab`], [`mg_cg_dir_slab`]): global row positions, and the
//! bodies of the single-device kernels (`restrict_body`, `prolong_body`,
//! `defect_body`, `cg_dir_body`), so a cell gets the same bits as on one
//! device.

use super::fine::{DefectOut, cg_dir_body, defect_body};
use super::transfer::{ProlongRows, RestrictRows, prolong_body, restrict_body};
use super::*;

// ---------------------------------------------------------------- row slabs (several devices)

/// A restriction on a row slab: the levels' global shapes and the fine
/// operator ([`Restrict`]), the fine buffer's stored rows, and the coarse
/// rows computed (the coarse buffers start at the first of them).
#[derive(Debug, Clone, Copy, PartialEq, KernelParams)]
#[repr(C)]
pub struct RestrictSlab<T: Real> {
    /// The whole levels.
    pub restrict: Restrict<T>,
    /// The rows the fine buffers hold.
    pub fine: Rows,
    /// The coarse rows computed (the rows the coarse buffers hold).
    pub coarse: Rows,
}

/// Restriction on a row slab: [`mg_restrict`] for every row of a coarse
/// slab, reading a fine slab, both parts of levels split into row slabs
/// over several devices.
///
/// A slab stores global rows `y0 .. y0 + rows` of its level ([`Rows`]);
/// the columns are not split. Positions on the coarse grid depend on the
/// global row (and on the global row counts: when a level's interior row
/// count is even, the coarse rows fall between fine rows, [`coarse_pos`]),
/// so the kernel works in global rows and subtracts the slab offsets to
/// address memory; the body is [`mg_restrict`]'s, so a coarse cell gets
/// the same bits as on one device. The host stores enough halo rows for
/// every fine row the stencil reads (plus one for the residual's
/// neighbours); a row outside the slab stops the kernel.
///
/// Thread mapping as [`mg_restrict`]: one thread per coarse cell, rows by
/// a `gridDim.y` stride. (The host passes the rows a rank owns as the
/// coarse slab: a view that starts at the first of them.)
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn mg_restrict_slab<T: Real>(
    u: DeviceSlice<T>,
    f: DeviceSlice<T>,
    fc: DeviceSliceMut<T>,
    uc: DeviceSliceMut<T>,
    s: RestrictSlab<T>,
) {
    let (Dims { nx, ny }, Dims { nx: ncx, ny: ncy }) = (s.restrict.fine.dims, s.restrict.coarse);
    let fn_ = nx as usize * s.fine.rows as usize;
    let cn = ncx as usize * s.coarse.rows as usize;
    if nx < 3
        || ncx < 3
        || ncx > nx
        || ncy > ny
        || ncy < 3
        || u.len() < fn_
        || f.len() < fn_
        || fc.len() < cn
        || uc.len() < cn
    {
        ptxlab_device::trap("mg_restrict_slab: bad slab, grid or buffer");
    }
    let rows = RestrictRows {
        fine: s.fine,
        coarse: s.coarse,
    };
    restrict_body((u, f), (fc, uc), s.restrict, Some(rows));
}

/// A prolongation on a row slab: the levels' global shapes ([`Prolong`]),
/// the fine and coarse buffers' stored rows, and the fine rows updated
/// (inside the fine buffer's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, KernelParams)]
#[repr(C)]
pub struct ProlongSlab {
    /// The whole levels.
    pub prolong: Prolong,
    /// The rows the fine buffer holds.
    pub fine: Rows,
    /// The rows the coarse buffer holds.
    pub coarse: Rows,
    /// The fine rows updated.
    pub update: Rows,
}

/// Prolongation on a row slab: [`mg_prolong`] for the fine rows `update`
/// of a fine slab, reading a coarse slab, of levels split into row slabs.
/// The coarse position of a fine row comes from its global row
/// ([`mg_restrict_slab`] says why); the body is [`mg_prolong`]'s, so the
/// result is the same bits as on one device. A coarse row outside the slab
/// stops the kernel.
///
/// Thread mapping as [`mg_prolong`]: one thread per fine interior column,
/// rows of `update` by a `gridDim.y` stride.
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn mg_prolong_slab<T: Real>(uc: DeviceSlice<T>, u: DeviceSliceMut<T>, s: ProlongSlab) {
    let (Dims { nx, ny }, Dims { nx: ncx, ny: ncy }) = (s.prolong.fine, s.prolong.coarse);
    let fn_ = nx as usize * s.fine.rows as usize;
    let cn = ncx as usize * s.coarse.rows as usize;
    if nx < 3
        || ncx < 3
        || ncx > nx
        || ncy > ny
        || ncy < 3
        || u.len() < fn_
        || uc.len() < cn
        || s.update.y0 < s.fine.y0
        || s.update.end() > s.fine.end()
    {
        ptxlab_device::trap("mg_prolong_slab: bad slab, grid or buffer");
    }
    let lo = s.update.y0 - s.fine.y0;
    let rows = ProlongRows {
        fine: s.fine,
        coarse: s.coarse,
        lo,
        hi: lo + s.update.rows,
    };
    prolong_body(uc, u, s.prolong, Some(rows));
}

/// The outer step ([`mg_defect`]) on a row slab of the finest level: the
/// launch covers a slab's owned rows and one row on each side
/// (`step.fine.rows` of the level `step.fine.fine`). The side rows are
/// read, and written to `p_out` corrected like the owned ones (`p_in +
/// e_scale e` wherever the cell is interior to the whole level, which a
/// side row between two slabs is), so the next step finds its neighbours'
/// corrected rows in place without an exchange of the field; `r` and the
/// sum cover the owned rows only (`r` is 0 on the side rows). The body is
/// [`mg_defect`]'s: the owned cells get the same bits as on one device,
/// given the side rows of `e` (the correction's halo).
///
/// Thread mapping as [`mg_defect`].
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn mg_defect_slab<T: Real>(
    p_in: DeviceSlice<f64>,
    e: DeviceSlice<T>,
    b: DeviceSlice<f64>,
    p_out: DeviceSliceMut<f64>,
    r: DeviceSliceMut<T>,
    acc: DeviceSliceMut<f64>,
    step: DefectStep<FineRows>,
) {
    let DefectStep {
        fine: at,
        e_scale,
        r_scale,
    } = step;
    let (grid, slab) = at.launch();
    if e.len() < grid.nx as usize * grid.ny as usize || at.rows.end() > at.fine.ny {
        ptxlab_device::trap("mg_defect_slab: a short correction or rows outside the level");
    }
    let e = if e_scale != 0.0 {
        Some((e, e_scale))
    } else {
        None
    };
    let out = DefectOut {
        p_out: Some(p_out),
        rho: None,
        r,
        acc,
    };
    defect_body(p_in, e, b, out, grid, Some(slab), r_scale);
}

/// The PCG direction ([`mg_cg_dir`]) on a row slab of the finest level: the
/// launch covers a slab's owned rows and one row on each side (`at.rows` of
/// the level `at.fine`). `d_out = z_scale z + beta d_in` is written on
/// every row of the launch (0 on the cells of the whole level's boundary),
/// the side rows included, so the next iteration's `d_in` has its side rows
/// without an exchange; `q = lap_h d_out` and the sum `s[DQ] += <d_out, q>`
/// cover the owned rows only (`q` is 0 on the side rows). `z` must hold its
/// side rows (the correction's halo, which the V-cycle's last exchange
/// fills). The body is [`mg_cg_dir`]'s: the owned cells get its bits.
///
/// Thread mapping as [`mg_cg_dir`].
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn mg_cg_dir_slab<T: Real>(
    z: DeviceSlice<T>,
    d_in: DeviceSlice<f64>,
    d_out: DeviceSliceMut<f64>,
    q: DeviceSliceMut<f64>,
    s: DeviceSliceMut<f64>,
    at: FineRows,
    z_scale: f64,
) {
    let (grid, slab) = at.launch();
    check_grid(
        &[z.len(), d_in.len(), d_out.len(), q.len()],
        grid.nx,
        grid.ny,
        "mg_cg_dir_slab: bad grid or buffer",
    );
    if s.len() < slot::COUNT || at.rows.end() > at.fine.ny {
        ptxlab_device::trap("mg_cg_dir_slab: short scalar array or rows outside the level");
    }
    require_row_block();
    cg_dir_body((z, d_in), (d_out, q, s), (grid, Some(slab)), z_scale);
}
