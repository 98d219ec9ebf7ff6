//! The fine level, in f64: the outer step of multigrid ([`mg_defect`]), the
//! residual ([`mg_residual`]), the clearing of the reduction slots
//! ([`mg_clear`]) and the PCG iteration whose scalars stay on the device
//! ([`mg_cg_dir`], [`mg_cg_update`], [`mg_cg_dot`], [`mg_cg_shift`]).

use super::*;

// ---------------------------------------------------------------- fine level, f64

/// The fine level as its f64 kernels see it: its shape and `1 / h^2`.
#[derive(Debug, Clone, Copy, PartialEq, KernelParams)]
#[repr(C)]
pub struct Fine {
    /// Columns (boundary included).
    pub nx: u32,
    /// Rows (boundary included).
    pub ny: u32,
    /// `1 / h^2` of the 5-point Laplacian.
    pub inv_h2: f64,
}

/// One outer step of [`mg_defect`]: the fine level (on a slab,
/// [`FineRows`]: the rows of it one launch covers), the weight of the
/// correction it adds and the scale of the residual it writes.
#[derive(Debug, Clone, Copy, PartialEq, KernelParams)]
#[repr(C)]
pub struct DefectStep<G = Fine> {
    /// The fine level.
    pub fine: G,
    /// Weight of the correction `e` (0: no correction, `e` is not read).
    pub e_scale: f64,
    /// Scale of the cycle's right-hand side `r`.
    pub r_scale: f64,
}

/// Rows of the fine level split into row slabs over several devices, as one
/// launch of a slab kernel covers them: the whole level and the launch's
/// global rows (a slab's owned rows and one more on each side).
#[derive(Debug, Clone, Copy, PartialEq, KernelParams)]
#[repr(C)]
pub struct FineRows {
    /// The whole level.
    pub fine: Fine,
    /// The rows the launch covers (its buffers hold `nx` times as many
    /// cells).
    pub rows: Rows,
}

impl FineRows {
    /// The launch's own grid (the level's columns and `1 / h^2`, the rows
    /// covered), and the global row of its first row with the level's row
    /// count.
    #[inline(always)]
    pub fn launch(self) -> (Fine, (u32, u32)) {
        let grid = Fine {
            ny: self.rows.rows,
            ..self.fine
        };
        (grid, (self.rows.y0, self.fine.ny))
    }
}

/// Row `y` of a launch of `ny` rows as the level sees it: its global row
/// and the level's row count. `slab`: on a level split into slabs, the
/// global row of the launch's first row and the level's row count; `None`:
/// the launch is the whole level.
#[inline(always)]
fn global_row(y: u32, ny: u32, slab: Option<(u32, u32)>) -> (u32, u32) {
    match slab {
        Some((gy0, ny_g)) => (gy0 + y, ny_g),
        None => (y, ny),
    }
}

/// Whether cell `(x, y)` of a launch of `nx x ny` cells is interior to the
/// level (`slab` as in [`global_row`]).
#[inline(always)]
fn level_interior(x: u32, y: u32, nx: u32, ny: u32, slab: Option<(u32, u32)>) -> bool {
    match slab {
        None => x > 0 && y > 0 && x + 1 < nx && y + 1 < ny,
        Some((gy0, ny_g)) => {
            let gy = gy0 + y;
            x > 0 && gy > 0 && x + 1 < nx && gy + 1 < ny_g
        }
    }
}

/// The outputs of one defect pass: the corrected field and the unscaled
/// residual (each optional), the cycle's right-hand side and the
/// reduction slot.
pub(super) struct DefectOut<'a, T> {
    pub(super) p_out: Option<DeviceSliceMut<'a, f64>>,
    pub(super) rho: Option<DeviceSliceMut<'a, f64>>,
    pub(super) r: DeviceSliceMut<'a, T>,
    pub(super) acc: DeviceSliceMut<'a, f64>,
}

/// The body of [`mg_defect`], [`mg_residual`] and [`mg_defect_slab`]: the
/// corrected field `p_in + s e` (`e`: `(e, s)`, or none) at every cell of
/// the launch (`grid`: its columns and rows, `1 / h^2`; `slab` as in
/// `global_row`), the residual at the cells interior to the launch and to
/// the level, `acc[0] += sum res^2`. Stops the kernel unless `grid` is at
/// least 3 x 3 and every buffer it reads or writes holds its `nx * ny`
/// cells, `acc` has a slot and the block is [`BLOCK`] x 1.
#[inline(always)]
pub(super) fn defect_body<T: Real>(
    p_in: DeviceSlice<f64>,
    e: Option<(DeviceSlice<T>, f64)>,
    b: DeviceSlice<f64>,
    out: DefectOut<'_, T>,
    Fine { nx, ny, inv_h2 }: Fine,
    slab: Option<(u32, u32)>,
    r_scale: f64,
) {
    let DefectOut { p_out, rho, r, acc } = out;
    let mut lens = [
        p_in.len(),
        b.len(),
        r.len(),
        usize::MAX,
        usize::MAX,
        usize::MAX,
    ];
    if let Some((ev, _)) = &e {
        lens[3] = ev.len();
    }
    if let Some(po) = &p_out {
        lens[4] = po.len();
    }
    if let Some(ro) = &rho {
        lens[5] = ro.len();
    }
    check_grid(&lens, nx, ny, "mg_defect: bad grid or buffer");
    if acc.is_empty() {
        ptxlab_device::trap("mg_defect: empty accumulator");
    }
    require_row_block();
    let x = thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
    let width = nx as usize;
    // The corrected field at (x, y): p_in + e_scale e on the level's
    // interior cells.
    let pv = |x: u32, y: u32| -> f64 {
        let i = y as usize * width + x as usize;
        // SAFETY: callers pass cells inside the launch's grid: i < nx * ny <= len.
        unsafe {
            let mut v = p_in.get_unchecked(i);
            if let Some((ev, s)) = &e
                && level_interior(x, y, nx, ny, slab)
            {
                v += s * ev.get_unchecked(i).to_f64();
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
            // Interior to the launch and to the level.
            let interior = match slab {
                None => level_interior(x, y, nx, ny, None),
                Some((gy0, ny_g)) => {
                    let gy = gy0 + y;
                    x > 0 && y > 0 && x + 1 < nx && y + 1 < ny && gy > 0 && gy + 1 < ny_g
                }
            };
            let res = if interior {
                let s = (pv(x - 1, y) + pv(x + 1, y)) + (pv(x, y - 1) + pv(x, y + 1));
                // SAFETY: i < nx * ny <= b.len().
                let bi = unsafe { b.get_unchecked(i) };
                bi - (s - 4.0 * c) * inv_h2
            } else {
                0.0
            };
            sum += res * res;
            // SAFETY: i < nx * ny <= each output's length (checked by the caller).
            unsafe {
                if let Some(po) = &p_out {
                    po.set_unchecked(i, c);
                }
                if let Some(ro) = &rho {
                    ro.set_unchecked(i, res);
                }
                r.set_unchecked(i, T::from_f64(res * r_scale));
            }
        }
        y += thread::grid_dim_y();
    }
    block_add(sum, &acc, 0);
}

/// The outer step of multigrid : `p_out = p_in + e_scale e`
/// on the interior (the boundary copied), `r = (b - lap_h p_out) r_scale` on
/// the interior and 0 on the boundary (the next cycle's right-hand side), and
/// `acc[0] += sum r^2` (unscaled; the host zeroes `acc` first).
/// `e_scale = 0` skips `e` (the first step, from `p0`).
///
/// Thread mapping: blocks of [`BLOCK`] x 1 over every cell of a row, rows by
/// a `gridDim.y` stride (the host sizes `gridDim.y` for about 8 blocks per
/// SM); each thread rebuilds the corrected field at its cell and its four
/// neighbours from `p_in` and `e` (L1 hits), so the update and the residual
/// are one pass and need no barrier, and a thread's `r^2` sums go through
/// [`crate::reduce::block_sum`] and one `atom.add.f64` per block.
///
/// Why out of place: an in-place `p += e` next to neighbour reads of `p`
/// would race between threads. Why f64: the residual of the fine equation is
/// what the tolerance is measured on; in the mixed-precision solve only the
/// cycles run in f32, and their correction is added here in f64, which is
/// what lets an f32 cycle reach a 1e-10 relative residual.
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn mg_defect<T: Real>(
    p_in: DeviceSlice<f64>,
    e: DeviceSlice<T>,
    b: DeviceSlice<f64>,
    p_out: DeviceSliceMut<f64>,
    r: DeviceSliceMut<T>,
    acc: DeviceSliceMut<f64>,
    step: DefectStep,
) {
    let DefectStep {
        fine,
        e_scale,
        r_scale,
    } = step;
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
    defect_body(p_in, e, b, out, fine, None, r_scale);
}

/// Residual of the fine equation: `rho = b - lap_h p` (0 on the
/// boundary), `r = rho r_scale` for the cycle, `acc[0] += sum rho^2`. The
/// start of PCG, and the final check of every solve. Mapping as
/// [`mg_defect`].
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn mg_residual<T: Real>(
    p: DeviceSlice<f64>,
    b: DeviceSlice<f64>,
    rho: DeviceSliceMut<f64>,
    r: DeviceSliceMut<T>,
    acc: DeviceSliceMut<f64>,
    fine: Fine,
    r_scale: f64,
) {
    let out = DefectOut {
        p_out: None,
        rho: Some(rho),
        r,
        acc,
    };
    defect_body::<T>(p, None, b, out, fine, None, r_scale);
}

/// Zeroes `acc` (grid-stride). Inside a captured graph the reduction slots
/// cannot be cleared by a host copy, so a kernel does it.
#[kernel(launch_bounds(256))]
pub fn mg_clear(acc: DeviceSliceMut<f64>) {
    for i in thread::grid_stride(acc.len()) {
        acc.set(i, 0.0);
    }
}

// ---------------------------------------------------------------- PCG

/// PCG direction: `d_out = z_scale z + beta d_in` with
/// `beta = s[GAMMA] / s[GAMMA_OLD]` (0 on the first iteration, when
/// `s[GAMMA_OLD]` is 0), `q = lap_h d_out`, `s[DQ] += <d_out, q>`.
///
/// The scalars live on the device ([`slot`]), so a whole PCG iteration
/// (shift, V-cycle, dot, direction, update) is a fixed sequence of launches
/// that a CUDA graph can capture; the host reads only `||rho||^2`.
/// Thread mapping as [`mg_defect`]: each thread rebuilds the new
/// direction at its cell and four neighbours from `z` and `d_in`, so the
/// update, the operator and the dot product are one pass (out of place:
/// `d_in` and `d_out` alternate).
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn mg_cg_dir<T: Real>(
    z: DeviceSlice<T>,
    d_in: DeviceSlice<f64>,
    d_out: DeviceSliceMut<f64>,
    q: DeviceSliceMut<f64>,
    s: DeviceSliceMut<f64>,
    fine: Fine,
    z_scale: f64,
) {
    check_grid(
        &[z.len(), d_in.len(), d_out.len(), q.len()],
        fine.nx,
        fine.ny,
        "mg_cg_dir: bad grid or buffer",
    );
    if s.len() < slot::COUNT {
        ptxlab_device::trap("mg_cg_dir: the scalar array is too short");
    }
    require_row_block();
    cg_dir_body((z, d_in), (d_out, q, s), (fine, None), z_scale);
}

/// The body of [`mg_cg_dir`] and [`mg_cg_dir_slab`]: the new direction at
/// every cell of the launch (0 on the level's boundary), `lap_h` of it at
/// the cells interior to the launch and to the level, `s[DQ] += <d, q>`;
/// `grid` and `slab` as in `defect_body`. The caller has checked the
/// lengths and the block shape.
#[inline(always)]
pub(super) fn cg_dir_body<T: Real>(
    (z, d_in): (DeviceSlice<T>, DeviceSlice<f64>),
    (d_out, q, s): (
        DeviceSliceMut<f64>,
        DeviceSliceMut<f64>,
        DeviceSliceMut<f64>,
    ),
    (Fine { nx, ny, inv_h2 }, slab): (Fine, Option<(u32, u32)>),
    z_scale: f64,
) {
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
        let (gy, ny_l) = global_row(y, ny, slab);
        if x == 0 || gy == 0 || x + 1 == nx || gy + 1 == ny_l {
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
            let (gy, ny_l) = global_row(y, ny, slab);
            let interior = x > 0
                && y > 0
                && x + 1 < nx
                && y + 1 < ny
                && (slab.is_none() || (gy > 0 && gy + 1 < ny_l));
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

/// PCG update: `alpha = s[GAMMA] / s[DQ]`, `p += alpha d`,
/// `rho -= alpha q`, `r = rho r_scale` (the next V-cycle's right-hand
/// side), `s[RHO2] += ||rho||^2`. Elementwise, grid-stride over every cell
/// (`d` and `q` are 0 on the boundary, so `p` keeps its Dirichlet values);
/// one atomic per block.
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn mg_cg_update<T: Real>(
    p: DeviceSliceMut<f64>,
    rho: DeviceSliceMut<f64>,
    r: DeviceSliceMut<T>,
    d: DeviceSlice<f64>,
    q: DeviceSlice<f64>,
    s: DeviceSliceMut<f64>,
    r_scale: f64,
) {
    let n = p.len();
    if rho.len() != n || r.len() != n || d.len() != n || q.len() != n || s.len() < slot::COUNT {
        ptxlab_device::trap("mg_cg_update: buffer lengths differ");
    }
    require_row_block();
    let sc = s.as_const();
    let dq = sc.get(slot::DQ);
    let alpha = if dq != 0.0 {
        sc.get(slot::GAMMA) / dq
    } else {
        0.0
    };
    let mut sum = 0.0f64;
    for i in thread::grid_stride(n) {
        // SAFETY: i < n, the length of all five buffers (checked above).
        unsafe {
            p.set_unchecked(
                i,
                p.as_const().get_unchecked(i) + alpha * d.get_unchecked(i),
            );
            let v = rho.as_const().get_unchecked(i) - alpha * q.get_unchecked(i);
            rho.set_unchecked(i, v);
            r.set_unchecked(i, T::from_f64(v * r_scale));
            sum += v * v;
        }
    }
    block_add(sum, &s, slot::RHO2);
}

/// PCG dot product: `s[GAMMA] += z_scale <rho, z>`, grid-stride,
/// one atomic per block.
#[kernel(launch_bounds(256), instances(f32, f64))]
pub fn mg_cg_dot<T: Real>(
    rho: DeviceSlice<f64>,
    z: DeviceSlice<T>,
    s: DeviceSliceMut<f64>,
    z_scale: f64,
) {
    if rho.len() != z.len() || s.len() < slot::COUNT {
        ptxlab_device::trap("mg_cg_dot: buffer lengths differ");
    }
    require_row_block();
    let mut sum = 0.0f64;
    for i in thread::grid_stride(rho.len()) {
        // SAFETY: i < rho.len() == z.len().
        sum += unsafe { rho.get_unchecked(i) * z.get_unchecked(i).to_f64() };
    }
    block_add(sum * z_scale, &s, slot::GAMMA);
}

/// The start of a PCG iteration, one thread: `s[GAMMA_OLD] = s[GAMMA]`,
/// then `s[GAMMA] = s[DQ] = s[RHO2] = 0` for this iteration's sums.
#[kernel(launch_bounds(32))]
pub fn mg_cg_shift(s: DeviceSliceMut<f64>) {
    if s.len() < slot::COUNT {
        ptxlab_device::trap("mg_cg_shift: the scalar array is too short");
    }
    if thread::index_1d() == 0 {
        s.set(slot::GAMMA_OLD, s.as_const().get(slot::GAMMA));
        s.set(slot::GAMMA, 0.0);
        s.set(slot::DQ, 0.0);
        s.set(slot::RHO2, 0.0);
    }
}
