//! CPU side of the Jacobi ladder: the sweep on one thread, with rayon and in
//! the NumPy formulation (ndarray), the f64 reference, and the residual.

use super::types::Grid;
use ndarray::{ArrayView2, ArrayViewMut2, Zip, s};
use ptxlab_common::error::{Error, Result};
use ptxlab_device::math::Real;
use rayon::prelude::*;

#[inline]
fn sweep_row<T: Real>(p: &[T], b: &[T], out_row: &mut [T], y: usize, nx: usize, ny: usize, k: T) {
    let o = y * nx;
    if y == 0 || y == ny - 1 {
        out_row.copy_from_slice(&p[o..o + nx]);
        return;
    }
    let (n, c, s) = (&p[o - nx..o], &p[o..o + nx], &p[o + nx..o + 2 * nx]);
    let br = &b[o..o + nx];
    out_row[0] = c[0];
    out_row[nx - 1] = c[nx - 1];
    let q = T::from_f64(0.25);
    for x in 1..nx - 1 {
        out_row[x] = q * ((c[x - 1] + c[x + 1]) + (n[x] + s[x])) - k * br[x];
    }
}

/// CPU baseline, one thread: one sweep `out = J(p)`.
pub fn cpu_sweep<T: Real>(p: &[T], b: &[T], out: &mut [T], grid: Grid, k: T) {
    for (y, row) in out.chunks_mut(grid.nx).enumerate() {
        sweep_row(p, b, row, y, grid.nx, grid.ny, k);
    }
}

/// CPU baseline, rayon: rows in parallel on the current pool.
pub fn cpu_sweep_rayon<T: Real>(p: &[T], b: &[T], out: &mut [T], grid: Grid, k: T) {
    out.par_chunks_mut(grid.nx)
        .enumerate()
        .for_each(|(y, row)| sweep_row(p, b, row, y, grid.nx, grid.ny, k));
}

/// CPU baseline in the NumPy formulation, with ndarray slices:
/// `out[1:-1, 1:-1] = 0.25 * (p[1:-1, :-2] + p[1:-1, 2:] + p[:-2, 1:-1] + p[2:, 1:-1]) - k * b[1:-1, 1:-1]`
/// (one fused pass through `Zip` instead of NumPy's temporaries), plus the
/// boundary copy.
pub fn cpu_sweep_ndarray<T: Real>(
    p: ArrayView2<T>,
    b: ArrayView2<T>,
    mut out: ArrayViewMut2<T>,
    k: T,
) {
    let q = T::from_f64(0.25);
    let (ny, nx) = p.dim();
    out.row_mut(0).assign(&p.row(0));
    out.row_mut(ny - 1).assign(&p.row(ny - 1));
    out.column_mut(0).assign(&p.column(0));
    out.column_mut(nx - 1).assign(&p.column(nx - 1));
    let (ym, xm) = (ny - 1, nx - 1);
    Zip::from(out.slice_mut(s![1..ym, 1..xm]))
        .and(p.slice(s![1..ym, 0..xm - 1]))
        .and(p.slice(s![1..ym, 2..nx]))
        .and(p.slice(s![0..ym - 1, 1..xm]))
        .and(p.slice(s![2..ny, 1..xm]))
        .and(b.slice(s![1..ym, 1..xm]))
        .for_each(|o, &w, &e, &n, &s, &bb| *o = q * ((w + e) + (n + s)) - k * bb);
}

/// [`cpu_sweep_ndarray`] on row-major slices (`ny x nx`).
pub fn cpu_sweep_nd<T: Real>(p: &[T], b: &[T], out: &mut [T], grid: Grid, k: T) -> Result<()> {
    let shape = (grid.ny, grid.nx);
    let bad = |e: ndarray::ShapeError| {
        Error::input(
            "ndarray view",
            format!("{e}: the slices must hold {} cells", grid.cells()),
        )
    };
    let pv = ArrayView2::from_shape(shape, p).map_err(bad)?;
    let bv = ArrayView2::from_shape(shape, b).map_err(bad)?;
    let ov = ArrayViewMut2::from_shape(shape, out).map_err(bad)?;
    cpu_sweep_ndarray(pv, bv, ov, k);
    Ok(())
}

/// `iters` sweeps in f64 on one thread: the reference every check compares with.
pub fn reference(p0: &[f64], b: &[f64], grid: Grid, k: f64, iters: usize) -> Vec<f64> {
    let mut cur = p0.to_vec();
    let mut next = vec![0.0; cur.len()];
    for _ in 0..iters {
        cpu_sweep(&cur, b, &mut next, grid, k);
        std::mem::swap(&mut cur, &mut next);
    }
    cur
}

/// Sum over interior cells of `r^2`, `r = b - lap_h p`, in f64 (rayon).
pub fn cpu_residual_sq<T: Real>(p: &[T], b: &[T], grid: Grid, h: f64) -> f64 {
    let (nx, ny) = (grid.nx, grid.ny);
    let inv_h2 = 1.0 / (h * h);
    (1..ny - 1)
        .into_par_iter()
        .map(|y| {
            let mut s = 0.0f64;
            for x in 1..nx - 1 {
                let i = y * nx + x;
                let sum = (p[i - 1].to_f64() + p[i + 1].to_f64())
                    + (p[i - nx].to_f64() + p[i + nx].to_f64());
                let r = b[i].to_f64() - (sum - 4.0 * p[i].to_f64()) * inv_h2;
                s += r * r;
            }
            s
        })
        .sum()
}

/// Sum of `b^2` over interior cells (the reference of the relative residual).
pub fn interior_norm_sq<T: Real>(b: &[T], grid: Grid) -> f64 {
    let mut s = 0.0;
    for y in 1..grid.ny - 1 {
        for x in 1..grid.nx - 1 {
            let v = b[y * grid.nx + x].to_f64();
            s += v * v;
        }
    }
    s
}

/// Runs `f` on a rayon pool of exactly `threads` threads.
pub fn with_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> Result<R> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| Error::input("rayon pool", format!("{threads} threads: {e}")))?;
    Ok(pool.install(f))
}
