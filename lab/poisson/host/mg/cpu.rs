//! The same multigrid and PCG on the CPU (rayon over rows): the reference
//! the GPU and the simulator are compared with, and the CPU baseline. The
//! cycles are [`super::cycle`]'s, the point arithmetic the kernels' own
//! ([`kernels_gpu::multigrid::gs_point`], `coarse_pos`, `restrict_at`,
//! `residual_at`, `bilinear`), in the same order, so the fields agree with
//! the GPU's to rounding of the reductions.

use super::cycle::{Ops, Smoothing, cycle, visit};
use super::levels::{Hierarchy, Level, Method, MgOptions};
use super::report::MgReport;
use kernels_gpu::multigrid::{
    bilinear, coarse_pos, gs_point, inv_diag, residual_at, restrict_at, restrict_scale, sor,
};
use ptxlab_common::error::{Error, Result};
use ptxlab_device::math::Real;
use rayon::prelude::*;
use std::time::Instant;

/// A pointer shared by the threads of one half-sweep.
#[derive(Clone, Copy)]
struct Cells<T>(*mut T);
// SAFETY: used only by `smooth_rb`, whose threads write disjoint cells of
// one colour and read only cells of the other colour (see there).
unsafe impl<T: Send> Send for Cells<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Cells<T> {}

/// One colour of a red-black sweep of level `l`, in place, rows in parallel
/// (as `mg_smooth_rb`).
pub fn smooth_rb<T: Real + Send + Sync>(
    l: &Level,
    u: &mut [T],
    f: &[T],
    colour: u32,
    zero: bool,
    omega: f64,
) {
    let (nx, ny) = (l.nx, l.ny);
    assert!(
        u.len() >= nx * ny && f.len() >= nx * ny,
        "level buffers too short"
    );
    let (cx, cy) = (T::from_f64(l.cx), T::from_f64(l.cy));
    let w = inv_diag(cx, cy);
    let omega = T::from_f64(omega);
    let cells = Cells(u.as_mut_ptr());
    (1..ny - 1).into_par_iter().for_each(move |y| {
        let cells = cells;
        let x0 = 1 + ((1 + y + colour as usize) & 1);
        let mut x = x0;
        while x + 1 < nx {
            let i = y * nx + x;
            // SAFETY: i and its four neighbours are inside the nx * ny cells
            // of `u` (1 <= x <= nx - 2, 1 <= y <= ny - 2; length asserted).
            // This half-sweep writes only cells of colour `colour`, one
            // thread per row, and reads only cells of the other colour
            // (the neighbours): no cell is written by one thread while
            // another reads or writes it. `u` is borrowed mutably for the
            // whole call, so nothing else touches it.
            unsafe {
                let p = cells.0;
                let v = if zero {
                    sor(T::ZERO, gs_point(T::ZERO, T::ZERO, f[i], cx, cy, w), omega)
                } else {
                    let we = p.add(i - 1).read() + p.add(i + 1).read();
                    let sn = p.add(i - nx).read() + p.add(i + nx).read();
                    sor(p.add(i).read(), gs_point(we, sn, f[i], cx, cy, w), omega)
                };
                p.add(i).write(v);
            }
            x += 2;
        }
    });
}

/// Bilinear interpolation of `uc` (level `c`) at fine point `(x, y)` of level `l`.
fn interpolate<T: Real>(uc: &[T], l: &Level, c: &Level, x: usize, y: usize) -> T {
    let (i0, wx) = coarse_pos::<T>(x as u32, (c.nx - 1) as u32, (l.nx - 1) as u32);
    let (j0, wy) = coarse_pos::<T>(y as u32, (c.ny - 1) as u32, (l.ny - 1) as u32);
    let k = j0 as usize * c.nx + i0 as usize;
    bilinear([uc[k], uc[k + 1], uc[k + c.nx], uc[k + c.nx + 1]], wx, wy)
}

/// `u (+)= P uc` on the interior (as `mg_prolong`).
pub fn prolong<T: Real + Send + Sync>(l: &Level, c: &Level, uc: &[T], u: &mut [T], add: bool) {
    let nx = l.nx;
    u.par_chunks_mut(nx).enumerate().for_each(|(y, row)| {
        if y == 0 || y + 1 >= l.ny {
            return;
        }
        for (x, ux) in row.iter_mut().enumerate().take(nx - 1).skip(1) {
            let v = interpolate(uc, l, c, x, y);
            let old = if add { *ux } else { T::ZERO };
            *ux = old + v;
        }
    });
}

/// `fc = R (f - lap u)` (or `R f`), `uc = 0` (as `mg_restrict`).
#[allow(clippy::too_many_arguments)]
pub fn restrict<T: Real + Send + Sync>(
    l: &Level,
    c: &Level,
    u: &[T],
    f: &[T],
    fc: &mut [T],
    uc: &mut [T],
    with_u: bool,
) {
    let (nx, ny, ncx, ncy) = (l.nx as u32, l.ny as u32, c.nx as u32, c.ny as u32);
    let (xs, ys) = ((ncx - 1, nx - 1), (ncy - 1, ny - 1));
    let scale = restrict_scale::<T>(xs, ys);
    let (cx, cy) = (T::from_f64(l.cx), T::from_f64(l.cy));
    let w = l.nx;
    fc.par_chunks_mut(c.nx)
        .zip(uc.par_chunks_mut(c.nx))
        .enumerate()
        .for_each(|(cj, (frow, urow))| {
            let cj = cj as u32;
            for ci in 0..ncx {
                let mut sum = T::ZERO;
                if ci > 0 && cj > 0 && ci + 1 < ncx && cj + 1 < ncy {
                    sum = restrict_at(
                        (ci, cj),
                        xs,
                        ys,
                        |_, _| {},
                        |i, j| {
                            let g = j as usize * w + i as usize;
                            if with_u {
                                let we = u[g - 1] + u[g + 1];
                                residual_at(f[g], u[g], we, u[g - w] + u[g + w], cx, cy)
                            } else {
                                f[g]
                            }
                        },
                    );
                    sum *= scale;
                }
                frow[ci as usize] = sum;
                urow[ci as usize] = T::ZERO;
            }
        });
}

/// [`Ops`] on host arrays (one correction buffer per level: the CPU
/// smooths in place, which gives what the out-of-place tile kernel gives).
pub struct CpuOps<T> {
    levels: Vec<Level>,
    /// Correction of each level (rung 5: level 0 holds the field).
    pub u: Vec<Vec<T>>,
    /// Right-hand side of each level (rung 5: level 0's is `b`).
    pub f: Vec<Vec<T>>,
    /// Rung 5: the field on level 0, the residual out of its last sweep.
    field: bool,
    /// Rung 5: `sum r^2` after level 0's post-smoothing.
    pub res: f64,
}

impl<T: Real + Send + Sync> CpuOps<T> {
    /// Zeroed levels of `hier` (`field`: level 0 will hold the field).
    pub fn new(hier: &Hierarchy, field: bool) -> Self {
        Self {
            field,
            res: 0.0,
            levels: hier.levels.clone(),
            u: hier
                .levels
                .iter()
                .map(|l| vec![T::ZERO; l.cells()])
                .collect(),
            f: hier
                .levels
                .iter()
                .map(|l| vec![T::ZERO; l.cells()])
                .collect(),
        }
    }
}

fn pair<X>(v: &mut [X], l: usize) -> (&mut X, &mut X) {
    let (a, b) = v.split_at_mut(l + 1);
    (&mut a[l], &mut b[0])
}

impl<T: Real + Send + Sync> Ops for CpuOps<T> {
    fn depth(&self) -> usize {
        self.levels.len()
    }
    fn smooth(&mut self, l: usize, step: Smoothing) -> Result<()> {
        let Smoothing {
            sweeps,
            black_first,
            zero,
            prolong,
            omega,
        } = step;
        if prolong {
            self.prolong(l, true)?;
        }
        let first = u32::from(black_first);
        let lvl = self.levels[l];
        if zero {
            // From a zero correction (the first half-sweep reads no
            // neighbour; the next reads each cell's old value: 0).
            self.u[l].fill(T::ZERO);
        }
        for s in 0..sweeps {
            smooth_rb(
                &lvl,
                &mut self.u[l],
                &self.f[l],
                first,
                zero && s == 0,
                omega,
            );
            smooth_rb(&lvl, &mut self.u[l], &self.f[l], 1 - first, false, omega);
        }
        if self.field && l == 0 && prolong {
            self.res = level_residual_sq(&lvl, &self.u[0], &self.f[0]);
        }
        Ok(())
    }
    fn field_on_fine(&self) -> bool {
        self.field
    }
    fn restrict(&mut self, l: usize, with_u: bool) -> Result<()> {
        let (lvl, cl) = (self.levels[l], self.levels[l + 1]);
        let (ul, uc) = pair(&mut self.u, l);
        let (fl, fc) = pair(&mut self.f, l);
        restrict(&lvl, &cl, ul, fl, fc, uc, with_u);
        Ok(())
    }
    fn prolong(&mut self, l: usize, add: bool) -> Result<()> {
        let (lvl, cl) = (self.levels[l], self.levels[l + 1]);
        let (ul, uc) = pair(&mut self.u, l);
        prolong(&lvl, &cl, uc, ul, add);
        Ok(())
    }
}

/// `sum r^2` over the interior of level `l`, `r = f - lap u` with the
/// level's own operator and the tile smoother's arithmetic (rung 5's
/// residual out of the last sweep).
fn level_residual_sq<T: Real + Send + Sync>(l: &Level, u: &[T], f: &[T]) -> f64 {
    let (nx, ny) = (l.nx, l.ny);
    let (cx, cy) = (T::from_f64(l.cx), T::from_f64(l.cy));
    (1..ny - 1)
        .into_par_iter()
        .map(|y| {
            let mut s = 0.0;
            for x in 1..nx - 1 {
                let g = y * nx + x;
                let (we, sn) = (u[g - 1] + u[g + 1], u[g - nx] + u[g + nx]);
                let r = residual_at(f[g], u[g], we, sn, cx, cy).to_f64();
                s += r * r;
            }
            s
        })
        .sum()
}

/// Interior-or-zero view of a fine-level array: `v[i]` on the interior, 0 on
/// the boundary ring.
fn inside(l: &Level, x: usize, y: usize) -> bool {
    x > 0 && y > 0 && x + 1 < l.nx && y + 1 < l.ny
}

/// What the f64 output of [`defect`] receives.
#[derive(Clone, Copy, PartialEq)]
enum Out {
    /// The corrected field (`mg_defect`).
    Field,
    /// The residual (`mg_residual`).
    Residual,
}

/// `c = p_in + es e` (interior), `res = b - lap c`; writes `c` or `res` to
/// `out` (as `mg_defect` / `mg_residual`) and `res rs` to `r`; returns
/// `sum res^2`.
#[allow(clippy::too_many_arguments)]
fn defect<T: Real + Send + Sync>(
    l: &Level,
    h: f64,
    p_in: &[f64],
    e: Option<(&[T], f64)>,
    b: &[f64],
    what: Out,
    out: &mut [f64],
    r: &mut [T],
    rs: f64,
) -> f64 {
    let nx = l.nx;
    let inv_h2 = 1.0 / (h * h);
    let pv = |x: usize, y: usize| -> f64 {
        let i = y * nx + x;
        let mut v = p_in[i];
        if let Some((ev, s)) = e
            && inside(l, x, y)
        {
            v += s * ev[i].to_f64();
        }
        v
    };
    out.par_chunks_mut(nx)
        .zip(r.par_chunks_mut(nx))
        .enumerate()
        .map(|(y, (o, rr))| {
            let mut sum = 0.0;
            for x in 0..nx {
                let c = pv(x, y);
                let res = if inside(l, x, y) {
                    let s = (pv(x - 1, y) + pv(x + 1, y)) + (pv(x, y - 1) + pv(x, y + 1));
                    b[y * nx + x] - (s - 4.0 * c) * inv_h2
                } else {
                    0.0
                };
                sum += res * res;
                o[x] = if what == Out::Field { c } else { res };
                rr[x] = T::from_f64(res * rs);
            }
            sum
        })
        .sum()
}

/// `||b - lap_h p||^2` over the interior, in f64 (rayon).
pub fn residual_sq(l: &Level, h: f64, p: &[f64], b: &[f64]) -> f64 {
    let mut rho = vec![0.0; l.cells()];
    let mut r = vec![0.0f64; l.cells()];
    defect::<f64>(l, h, p, None, b, Out::Residual, &mut rho, &mut r, 1.0)
}

/// Multigrid or PCG on the CPU from `p0` (f64 field, cycles in `T`): the
/// same iteration as the device solver. Returns the field and the report.
pub fn solve<T: Real + Send + Sync>(
    hier: &Hierarchy,
    opts: &MgOptions,
    b: &[f64],
    p0: &[f64],
    b_sq: f64,
) -> Result<(Vec<f64>, MgReport)> {
    opts.validate()?;
    let fine = hier.fine();
    if b.len() != fine.cells() || p0.len() != fine.cells() {
        return Err(Error::input(
            "b/p0",
            format!(
                "lengths {} and {} for {} cells",
                b.len(),
                p0.len(),
                fine.cells()
            ),
        ));
    }
    let interior = ((fine.nx - 2) * (fine.ny - 2)) as f64;
    let rms = (b_sq / interior).sqrt();
    let rs = if std::mem::size_of::<T>() == 4 && rms > 0.0 && rms.is_finite() {
        1.0 / rms
    } else {
        1.0
    };
    let zs = 1.0 / rs;
    let rel = |sq: f64| {
        if b_sq > 0.0 {
            (sq / b_sq).sqrt()
        } else {
            sq.sqrt()
        }
    };
    let h = hier.h;
    let field = opts.fused_fine(std::mem::size_of::<T>()) && hier.depth() >= 2;
    let mut ops = CpuOps::<T>::new(hier, field);
    let t0 = Instant::now();
    let mut p = p0.to_vec();
    let mut p_next = vec![0.0; p.len()];
    let mut k = 0;
    let mut history;
    let mut res;
    match opts.method {
        Method::Multigrid if field => {
            // Rung 5: level 0 holds the field and b; the residual comes out
            // of each cycle's last sweep.
            let mut scratch = vec![T::ZERO; p.len()];
            res = defect::<T>(
                &fine,
                h,
                &p,
                None,
                b,
                Out::Field,
                &mut p_next,
                &mut scratch,
                1.0,
            );
            ops.u[0] = p.iter().map(|&v| T::from_f64(v)).collect();
            ops.f[0] = b.iter().map(|&v| T::from_f64(v)).collect();
            history = vec![(t0.elapsed().as_secs_f64() * 1e3, rel(res))];
            while rel(res) >= opts.tol && k < opts.max_cycles {
                cycle(&mut ops, opts, k)?;
                res = ops.res;
                k += 1;
                history.push((t0.elapsed().as_secs_f64() * 1e3, rel(res)));
            }
            p = ops.u[0].iter().map(|v| v.to_f64()).collect();
        }
        Method::Multigrid => {
            res = defect::<T>(
                &fine,
                h,
                &p,
                None,
                b,
                Out::Field,
                &mut p_next,
                &mut ops.f[0],
                rs,
            );
            std::mem::swap(&mut p, &mut p_next);
            history = vec![(t0.elapsed().as_secs_f64() * 1e3, rel(res))];
            while rel(res) >= opts.tol && k < opts.max_cycles {
                cycle(&mut ops, opts, k)?;
                let e = Some((ops.u[0].as_slice(), zs));
                res = defect::<T>(
                    &fine,
                    h,
                    &p,
                    e,
                    b,
                    Out::Field,
                    &mut p_next,
                    &mut ops.f[0],
                    rs,
                );
                std::mem::swap(&mut p, &mut p_next);
                k += 1;
                history.push((t0.elapsed().as_secs_f64() * 1e3, rel(res)));
            }
        }
        Method::Pcg => {
            let n = p.len();
            let mut rho = vec![0.0; n];
            let (mut d, mut q) = (vec![0.0; n], vec![0.0; n]);
            res = defect::<T>(
                &fine,
                h,
                &p,
                None,
                b,
                Out::Residual,
                &mut rho,
                &mut ops.f[0],
                rs,
            );
            history = vec![(t0.elapsed().as_secs_f64() * 1e3, rel(res))];
            let mut gamma_old = 0.0;
            while rel(res) >= opts.tol && k < opts.max_cycles {
                visit(&mut ops, opts, 0, true)?;
                let z = &ops.u[0];
                let gamma: f64 = rho
                    .par_iter()
                    .zip(z.par_iter())
                    .map(|(a, b)| a * b.to_f64())
                    .sum::<f64>()
                    * zs;
                let beta = if gamma_old != 0.0 {
                    gamma / gamma_old
                } else {
                    0.0
                };
                gamma_old = gamma;
                // d = zs z + beta d on the interior; q = lap d; <d, q>.
                d.par_chunks_mut(fine.nx).enumerate().for_each(|(y, row)| {
                    for (x, di) in row.iter_mut().enumerate() {
                        let i = y * fine.nx + x;
                        *di = if inside(&fine, x, y) {
                            zs * z[i].to_f64() + beta * *di
                        } else {
                            0.0
                        };
                    }
                });
                let inv_h2 = 1.0 / (h * h);
                let dq: f64 = q
                    .par_chunks_mut(fine.nx)
                    .enumerate()
                    .map(|(y, row)| {
                        let mut s = 0.0;
                        for (x, qx) in row.iter_mut().enumerate() {
                            let i = y * fine.nx + x;
                            *qx = if inside(&fine, x, y) {
                                ((d[i - 1] + d[i + 1]) + (d[i - fine.nx] + d[i + fine.nx])
                                    - 4.0 * d[i])
                                    * inv_h2
                            } else {
                                0.0
                            };
                            s += d[i] * *qx;
                        }
                        s
                    })
                    .sum();
                let alpha = if dq != 0.0 { gamma / dq } else { 0.0 };
                res = p
                    .par_iter_mut()
                    .zip(rho.par_iter_mut())
                    .zip(ops.f[0].par_iter_mut())
                    .zip(d.par_iter().zip(q.par_iter()))
                    .map(|(((pi, ri), fi), (di, qi))| {
                        *pi += alpha * di;
                        *ri -= alpha * qi;
                        *fi = T::from_f64(*ri * rs);
                        *ri * *ri
                    })
                    .sum();
                k += 1;
                history.push((t0.elapsed().as_secs_f64() * 1e3, rel(res)));
            }
        }
    }
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    if !res.is_finite() {
        return Err(Error::input(
            "poisson problem",
            format!("the residual became {} after {k} cycles", res.sqrt()),
        ));
    }
    let report = MgReport::new(k, res, rel(res), rel(res) < opts.tol, ms, history);
    Ok((p, report))
}
