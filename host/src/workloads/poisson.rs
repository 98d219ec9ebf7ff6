//! 2D Poisson by Jacobi iteration: typed launchers for the stencil ladder and
//! the residual reduction, CPU baselines (one thread, rayon, ndarray), checks
//! against a CPU f64 reference, the solver, the benchmark and the CLI.
//!
//! Convention (the kernels' module docs have the details): `lap_h p = b` on
//! the interior, Dirichlet boundary; one sweep is
//! `p_new = 0.25 (pW + pE + pN + pS) - k b` with `k = h^2 / 4`; the residual
//! is `r = b - lap_h p` over interior cells; the solver stops when
//! `||r||_2 / ||b||_2` (interior cells; `||r||_2` alone when `b` is zero)
//! falls below the tolerance.

use super::BenchCtx;
use crate::error::{Error, Result};
use crate::launch;
use crate::report::{Row, Status, fmt_ms};
use crate::rng::{rel_err_norm, uniform_vec};
use crate::runtime::{Buffer, Device, LaunchConfig, Timing};
use cudarc::driver::DeviceRepr;
use kernels_gpu::poisson as kp;
use ndarray::{ArrayView2, ArrayViewMut2, Zip, s};
use ptxlab_device::math::Real;
use rayon::prelude::*;
use std::path::PathBuf;
use std::time::Instant;

/// Workload name in reports.
pub const NAME: &str = "poisson";
/// Default temporal depth (sweeps per pass of rung 4).
pub const DEFAULT_DEPTH: u32 = 8;
/// Largest grid accepted, in cells (indices are 32-bit in the kernels).
pub const MAX_CELLS: usize = i32::MAX as usize;
/// Odd size used by the checks on a GPU (not a multiple of any tile).
pub const CHECK_GRID_GPU: (usize, usize) = (1999, 1237);
/// Sweep counts after which every check compares with the reference.
pub const CHECK_SWEEPS: [usize; 3] = [1, 2, 37];
/// Grid spacing used by the checks: large enough that `k b` matters.
pub const CHECK_H: f64 = 0.5;

/// The rungs of the ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rung {
    /// 1: one thread per cell, global memory only.
    Naive,
    /// 2: the material's shared-memory tile with a halo.
    Tiled,
    /// 3: several rows per thread, vertical reuse in registers.
    Register,
    /// 4: temporal blocking, `depth` sweeps per pass.
    Temporal,
}

impl Rung {
    /// Every rung in ladder order.
    pub const ALL: [Rung; 4] = [Rung::Naive, Rung::Tiled, Rung::Register, Rung::Temporal];
    /// CLI name.
    pub fn name(&self) -> &'static str {
        match self {
            Rung::Naive => "naive",
            Rung::Tiled => "tiled",
            Rung::Register => "register",
            Rung::Temporal => "temporal",
        }
    }
    /// Label for reports.
    pub fn label(&self, depth: u32) -> String {
        match self {
            Rung::Naive => "1 naive (global memory)".into(),
            Rung::Tiled => format!("2 shared tile {}x{} + halo", kp::TILE_X, kp::TILE_Y),
            Rung::Register => format!("3 register strips ({} rows/thread)", kp::REG_RY),
            Rung::Temporal => format!("4 temporal blocking, depth {depth}"),
        }
    }
    /// Kernel name for element type `T` (for the resource report).
    pub fn kernel<T: Element>(&self) -> String {
        format!("poisson_{}_{}", self.name(), T::NAME)
    }
}

impl std::str::FromStr for Rung {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Rung::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| {
                Error::input(
                    "--variant",
                    format!("`{s}`; allowed: naive, tiled, register, temporal, all"),
                )
            })
    }
}

/// Element types of the Poisson kernels.
pub trait Element:
    Real
    + DeviceRepr
    + Send
    + Sync
    + std::fmt::Debug
    + ndarray_npy::WritableElement
    + ndarray_npy::ReadableElement
{
    /// `f32` / `f64`.
    const NAME: &'static str;
    /// Launches one sweep kernel (`depth` is used by the temporal rung only).
    fn launch_sweep(
        dev: &Device,
        cfg: LaunchConfig,
        rung: Rung,
        p: &Buffer<Self>,
        b: &Buffer<Self>,
        out: &mut Buffer<Self>,
        nx: u32,
        ny: u32,
        k: Self,
        depth: u32,
    ) -> Result<()>;
    /// Launches the residual kernel.
    fn launch_residual(
        dev: &Device,
        cfg: LaunchConfig,
        p: &Buffer<Self>,
        b: &Buffer<Self>,
        acc: &mut Buffer<f64>,
        nx: u32,
        ny: u32,
        inv_h2: f64,
    ) -> Result<()>;
}

/// `Element` for one type: its kernels, one per rung, and its residual.
macro_rules! element_impl {
    ($t:ty, $name:literal, $naive:ident, $tiled:ident, $register:ident, $temporal:ident, $residual:ident) => {
        impl Element for $t {
            const NAME: &'static str = $name;
            fn launch_sweep(
                dev: &Device,
                cfg: LaunchConfig,
                rung: Rung,
                p: &Buffer<$t>,
                b: &Buffer<$t>,
                out: &mut Buffer<$t>,
                nx: u32,
                ny: u32,
                k: $t,
                depth: u32,
            ) -> Result<()> {
                match rung {
                    Rung::Naive => launch!(dev, cfg, poisson::$naive(p, b, out, nx, ny, k)),
                    Rung::Tiled => launch!(dev, cfg, poisson::$tiled(p, b, out, nx, ny, k)),
                    Rung::Register => launch!(dev, cfg, poisson::$register(p, b, out, nx, ny, k)),
                    Rung::Temporal => {
                        launch!(dev, cfg, poisson::$temporal(p, b, out, nx, ny, k, depth))
                    }
                }
            }
            fn launch_residual(
                dev: &Device,
                cfg: LaunchConfig,
                p: &Buffer<$t>,
                b: &Buffer<$t>,
                acc: &mut Buffer<f64>,
                nx: u32,
                ny: u32,
                inv_h2: f64,
            ) -> Result<()> {
                launch!(dev, cfg, poisson::$residual(p, b, acc, nx, ny, inv_h2))
            }
        }
    };
}
element_impl!(
    f32,
    "f32",
    poisson_naive_f32,
    poisson_tiled_f32,
    poisson_register_f32,
    poisson_temporal_f32,
    poisson_residual_f32
);
element_impl!(
    f64,
    "f64",
    poisson_naive_f64,
    poisson_tiled_f64,
    poisson_register_f64,
    poisson_temporal_f64,
    poisson_residual_f64
);

/// A validated grid: `nx` columns (x, fastest) by `ny` rows, both >= 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    /// Columns.
    pub nx: usize,
    /// Rows.
    pub ny: usize,
}

impl Grid {
    /// Checks the shape: at least 3 x 3 (one interior cell inside the
    /// Dirichlet boundary) and at most [`MAX_CELLS`] cells.
    pub fn new(nx: usize, ny: usize) -> Result<Self> {
        if nx < 3 || ny < 3 {
            return Err(Error::input(
                "grid",
                format!(
                    "{nx}x{ny} (nx x ny) is smaller than 3x3; each of nx and ny must be at least 3 \
                     (a Dirichlet boundary around at least one interior cell)"
                ),
            ));
        }
        let cells = nx.saturating_mul(ny);
        if cells > MAX_CELLS || ny > 65535 * kp::NAIVE_BY as usize {
            return Err(Error::input(
                "grid",
                format!(
                    "{nx}x{ny} has {cells} cells; at most {MAX_CELLS} cells and {} rows \
                     (32-bit indices, launch grid y <= 65535): use a smaller grid",
                    65535 * kp::NAIVE_BY
                ),
            ));
        }
        Ok(Self { nx, ny })
    }
    /// Cells.
    pub fn cells(&self) -> usize {
        self.nx * self.ny
    }
    /// `"nx x ny"` for reports.
    pub fn label(&self) -> String {
        format!("{}x{}", self.nx, self.ny)
    }
    fn dims(&self) -> (u32, u32) {
        (self.nx as u32, self.ny as u32)
    }
    /// Checks a grid built without [`Grid::new`] (its fields are public).
    pub fn validate(&self) -> Result<()> {
        Grid::new(self.nx, self.ny).map(|_| ())
    }
}

/// `k = h^2 / 4` of the sweep formula.
pub fn k_of_h(h: f64) -> f64 {
    0.25 * h * h
}

/// Default grid spacing: the longer side spans `[0, 1]`.
pub fn default_h(grid: Grid) -> f64 {
    1.0 / (grid.nx.max(grid.ny) - 1) as f64
}

fn check_h(h: f64) -> Result<()> {
    if !(h.is_finite() && h > 0.0) {
        return Err(Error::input(
            "--h",
            format!("{h}; the grid spacing must be a positive finite number"),
        ));
    }
    Ok(())
}

/// The range of `h` for element type `T`: `k = h^2 / 4` must be a normal `T`
/// (the sweep multiplies `b` by it) and `1 / h^2` a finite f64 (the residual).
pub fn h_range<T: Element>() -> (f64, f64) {
    let (min_pos, max) = if std::mem::size_of::<T>() == 4 {
        (f32::MIN_POSITIVE as f64, f32::MAX as f64)
    } else {
        (f64::MIN_POSITIVE, f64::MAX)
    };
    let lo = (2.0 * min_pos.sqrt()).max(1.0 / f64::MAX.sqrt());
    let hi = 2.0 * max.sqrt();
    (lo, hi)
}

/// `check_h` and the range of [`h_range`] for `T`.
pub fn check_h_for<T: Element>(h: f64) -> Result<()> {
    check_h(h)?;
    let (lo, hi) = h_range::<T>();
    if !(lo..=hi).contains(&h) {
        return Err(Error::input(
            "--h",
            format!(
                "{h:e}; with {} allowed {lo:.1e} <= h <= {hi:.1e} (so that h^2/4 and 1/h^2 are normal \
                 numbers); rescale the problem so that h is nearer 1",
                T::NAME
            ),
        ));
    }
    Ok(())
}

fn check_depth(depth: u32) -> Result<()> {
    if depth == 0 || depth > kp::MAX_DEPTH {
        return Err(Error::input(
            "--depth",
            format!("{depth}; allowed 1..={}", kp::MAX_DEPTH),
        ));
    }
    Ok(())
}

/// The launch configuration of one sweep of `rung` (`depth` for rung 4).
pub fn sweep_config<T: Element>(rung: Rung, grid: Grid, depth: u32) -> Result<LaunchConfig> {
    let (nx, ny) = (grid.nx, grid.ny);
    match rung {
        Rung::Naive => LaunchConfig::for_2d(nx, ny, kp::NAIVE_BX, kp::NAIVE_BY),
        Rung::Tiled => Ok(LaunchConfig::for_2d(nx, ny, kp::TILE_X, kp::TILE_Y)?
            .with_shared(kp::tiled_shared_bytes::<T>())),
        Rung::Register => LaunchConfig::for_2d(nx, ny.div_ceil(kp::REG_RY), kp::REG_BX, kp::REG_BY),
        Rung::Temporal => {
            check_depth(depth)?;
            let (ow, oh) = kp::temporal_out_tile(depth);
            let (bx, by) = (nx.div_ceil(ow), ny.div_ceil(oh));
            Ok(LaunchConfig::for_2d(
                bx * kp::TB_X as usize,
                by * kp::TB_Y as usize,
                kp::TB_X,
                kp::TB_Y,
            )?
            .with_shared(kp::temporal_shared_bytes::<T>()))
        }
    }
}

fn check_len<T>(what: &str, buf: &Buffer<T>, grid: Grid) -> Result<()> {
    grid.validate()?;
    if buf.len() != grid.cells() {
        return Err(Error::input(
            what,
            format!(
                "{} elements, but the grid {} has {} cells",
                buf.len(),
                grid.label(),
                grid.cells()
            ),
        ));
    }
    Ok(())
}

/// One launch of `rung`: `out = J(p)` (one sweep), or `depth` sweeps for the
/// temporal rung. Every cell of `out` is written.
pub fn sweep<T: Element>(
    dev: &Device,
    rung: Rung,
    grid: Grid,
    p: &Buffer<T>,
    b: &Buffer<T>,
    out: &mut Buffer<T>,
    k: T,
    depth: u32,
) -> Result<()> {
    check_len("p", p, grid)?;
    check_len("b", b, grid)?;
    check_len("out", out, grid)?;
    let cfg = sweep_config::<T>(rung, grid, depth)?;
    let (nx, ny) = grid.dims();
    T::launch_sweep(dev, cfg, rung, p, b, out, nx, ny, k, depth)
}

/// Ping-pong pair of fields on a device: `cur` holds the current iterate.
pub struct Field<T> {
    /// The current iterate.
    pub cur: Buffer<T>,
    next: Buffer<T>,
}

impl<T: Element> Field<T> {
    /// Uploads `p0`; the second buffer starts poisoned (NaN), which every
    /// sweep overwrites completely.
    pub fn new(dev: &Device, p0: &[T]) -> Result<Self> {
        Ok(Self {
            cur: dev.upload(p0)?,
            next: dev.alloc_filled(p0.len(), T::from_f64(f64::NAN))?,
        })
    }

    /// `iters` Jacobi sweeps with `rung`; the temporal rung does them in
    /// `ceil(iters / depth)` passes, the last with the remainder as its depth.
    pub fn run(
        &mut self,
        dev: &Device,
        rung: Rung,
        grid: Grid,
        b: &Buffer<T>,
        k: T,
        iters: usize,
        depth: u32,
    ) -> Result<()> {
        let mut left = iters;
        while left > 0 {
            let d = if rung == Rung::Temporal {
                (depth as usize).min(left)
            } else {
                1
            };
            sweep(dev, rung, grid, &self.cur, b, &mut self.next, k, d as u32)?;
            std::mem::swap(&mut self.cur, &mut self.next);
            left -= d;
        }
        Ok(())
    }
}

/// Sum over interior cells of `r^2`, `r = b - lap_h p`, by the GPU reduction
/// (one atomic per block into `acc`, which is zeroed first).
pub fn residual_sq<T: Element>(
    dev: &Device,
    grid: Grid,
    p: &Buffer<T>,
    b: &Buffer<T>,
    h: f64,
    acc: &mut Buffer<f64>,
) -> Result<f64> {
    check_len("p", p, grid)?;
    check_len("b", b, grid)?;
    if acc.len() != 1 {
        return Err(Error::input(
            "residual accumulator",
            format!("{} elements; it must have exactly 1", acc.len()),
        ));
    }
    dev.write(acc, &[0.0])?;
    let gx = (grid.nx - 2).div_ceil(kp::RES_BLOCK as usize);
    let blocks_wanted = match dev.as_gpu() {
        Some(g) => 8 * g.info().sm_count as usize,
        None => 4,
    };
    let gy = (grid.ny - 2).min(blocks_wanted.div_ceil(gx)).max(1);
    let cfg = LaunchConfig::for_2d(gx * kp::RES_BLOCK as usize, gy, kp::RES_BLOCK, 1)?
        .with_shared(kp::residual_shared_bytes());
    let (nx, ny) = grid.dims();
    T::launch_residual(dev, cfg, p, b, acc, nx, ny, 1.0 / (h * h))?;
    Ok(dev.download(acc)?[0])
}

// ---------------------------------------------------------------- CPU side

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

// ---------------------------------------------------------------- inputs and checks

/// Random `p0` (boundary included) and `b`, uniform in [-1, 1), never all zero.
pub fn random_inputs(grid: Grid, seed: u64) -> (Vec<f64>, Vec<f64>) {
    (
        uniform_vec(seed, grid.cells(), -1.0, 1.0),
        uniform_vec(seed ^ 0x05ee_db0b, grid.cells(), -1.0, 1.0),
    )
}

/// Cheap deterministic inputs for timing large grids (values in [-0.5, 0.5)).
pub fn bench_inputs<T: Real>(grid: Grid) -> (Vec<T>, Vec<T>) {
    let f =
        |i: usize, m: u64| T::from_f64(((i as u64).wrapping_mul(m) % 1000) as f64 / 1000.0 - 0.5);
    let n = grid.cells();
    (
        (0..n).map(|i| f(i, 2_654_435_761)).collect(),
        (0..n).map(|i| f(i, 40_503)).collect(),
    )
}

/// Relative error by norm each check allows: f32 1e-5, f64 1e-12.
pub fn tolerance<T>() -> f64 {
    if std::mem::size_of::<T>() == 4 {
        1e-5
    } else {
        1e-12
    }
}

/// A check problem with its references, built once and reused for every rung.
#[derive(Debug, Clone)]
pub struct CheckCase {
    /// The grid.
    pub grid: Grid,
    /// Initial field, already rounded to the element type under test.
    pub p0: Vec<f64>,
    /// Right-hand side, rounded likewise.
    pub b: Vec<f64>,
    /// Sweep coefficient.
    pub k: f64,
    /// `(sweeps, reference field)`, increasing sweeps.
    pub refs: Vec<(usize, Vec<f64>)>,
}

impl CheckCase {
    /// Random inputs rounded to `T`, and the f64 reference after each count of
    /// `sweeps` (increasing).
    pub fn new<T: Element>(grid: Grid, seed: u64, sweeps: &[usize]) -> Self {
        let (p0, b) = random_inputs(grid, seed);
        let round = |v: Vec<f64>| {
            v.into_iter()
                .map(|x| T::from_f64(x).to_f64())
                .collect::<Vec<_>>()
        };
        let (p0, b) = (round(p0), round(b));
        let k = T::from_f64(k_of_h(CHECK_H)).to_f64();
        let mut refs = Vec::new();
        let mut cur = p0.clone();
        let mut done = 0;
        for &s in sweeps {
            cur = reference(&cur, &b, grid, k, s - done);
            done = s;
            refs.push((s, cur.clone()));
        }
        Self {
            grid,
            p0,
            b,
            k,
            refs,
        }
    }
}

/// Runs `rung` on `case` with the spare buffer poisoned (NaN) and returns the
/// relative error by norm after each reference's sweep count.
pub fn check_case<T: Element>(
    dev: &Device,
    rung: Rung,
    depth: u32,
    case: &CheckCase,
) -> Result<Vec<(usize, f64)>> {
    let p0: Vec<T> = case.p0.iter().map(|&v| T::from_f64(v)).collect();
    let bh: Vec<T> = case.b.iter().map(|&v| T::from_f64(v)).collect();
    let b = dev.upload(&bh)?;
    let mut f = Field::new(dev, &p0)?;
    let k = T::from_f64(case.k);
    let mut done = 0;
    let mut out = Vec::new();
    for (s, want) in &case.refs {
        f.run(dev, rung, case.grid, &b, k, s - done, depth)?;
        done = *s;
        let got: Vec<f64> = dev
            .download(&f.cur)?
            .into_iter()
            .map(|v| v.to_f64())
            .collect();
        out.push((*s, rel_err_norm(&got, want)));
    }
    Ok(out)
}

/// [`check_case`] turned into an error when any error exceeds [`tolerance`].
pub fn verify<T: Element>(dev: &Device, rung: Rung, depth: u32, case: &CheckCase) -> Result<f64> {
    let errs = check_case::<T>(dev, rung, depth, case)?;
    let tol = tolerance::<T>();
    let mut worst: f64 = 0.0;
    for (s, e) in errs {
        if e.is_nan() || e > tol {
            return Err(Error::Verification {
                what: format!(
                    "poisson {} {} {} on {}",
                    rung.label(depth),
                    T::NAME,
                    case.grid.label(),
                    dev.name()
                ),
                detail: format!(
                    "relative error {e:.3e} after {s} sweeps against the CPU f64 reference; tolerance {tol:.0e}"
                ),
            });
        }
        worst = worst.max(e);
    }
    Ok(worst)
}

/// Checks the residual kernel against the CPU on `case`'s inputs (relative error).
pub fn check_residual<T: Element>(dev: &Device, case: &CheckCase) -> Result<f64> {
    let p: Vec<T> = case.p0.iter().map(|&v| T::from_f64(v)).collect();
    let bh: Vec<T> = case.b.iter().map(|&v| T::from_f64(v)).collect();
    let (pb, bb) = (dev.upload(&p)?, dev.upload(&bh)?);
    let mut acc = dev.alloc_filled(1, f64::NAN)?;
    let got = residual_sq(dev, case.grid, &pb, &bb, CHECK_H, &mut acc)?;
    let want = cpu_residual_sq(&case.p0, &case.b, case.grid, CHECK_H);
    let e = ((got - want) / want).abs();
    if e.is_nan() || e > 1e-12 {
        return Err(Error::Verification {
            what: format!(
                "poisson residual {} {} on {}",
                T::NAME,
                case.grid.label(),
                dev.name()
            ),
            detail: format!(
                "sum of r^2 {got:e}, CPU {want:e}: relative error {e:.2e}, tolerance 1e-12"
            ),
        });
    }
    Ok(e)
}

// ---------------------------------------------------------------- solver

/// A validated problem: grid, spacing, right-hand side and initial field
/// (whose boundary cells are the Dirichlet values).
#[derive(Debug, Clone)]
pub struct Problem<T> {
    /// The grid.
    pub grid: Grid,
    /// Grid spacing.
    pub h: f64,
    /// Right-hand side (row-major, `ny x nx`).
    pub b: Vec<T>,
    /// Initial field.
    pub p0: Vec<T>,
}

fn first_non_finite<T: Real>(v: &[T]) -> Option<(usize, T)> {
    v.iter().position(|x| !x.is_finite()).map(|i| (i, v[i]))
}

impl<T: Element> Problem<T> {
    /// Checks lengths, the spacing and that `b` and `p0` are finite.
    pub fn new(grid: Grid, h: f64, b: Vec<T>, p0: Vec<T>) -> Result<Self> {
        let p = Self { grid, h, b, p0 };
        p.validate()?;
        Ok(p)
    }

    /// The checks of [`Problem::new`], for a problem built from its public
    /// fields: the grid, `h` (see [`h_range`]), the lengths, finite values,
    /// and a sum of `b^2` that f64 can hold.
    pub fn validate(&self) -> Result<()> {
        let (grid, h, b, p0) = (self.grid, self.h, &self.b, &self.p0);
        grid.validate()?;
        check_h_for::<T>(h)?;
        for (name, v) in [("b", b), ("p0", p0)] {
            if v.len() != grid.cells() {
                return Err(Error::input(
                    name,
                    format!(
                        "{} values, but the grid {} needs {}",
                        v.len(),
                        grid.label(),
                        grid.cells()
                    ),
                ));
            }
            if let Some((i, x)) = first_non_finite(v) {
                return Err(Error::input(
                    name,
                    format!(
                        "the value at row {}, column {} is {x:?}; every value must be finite",
                        i / grid.nx,
                        i % grid.nx
                    ),
                ));
            }
        }
        let b_sq = interior_norm_sq(b, grid);
        if !b_sq.is_finite() {
            let big = b.iter().fold(0.0f64, |m, v| m.max(v.to_f64().abs()));
            return Err(Error::input(
                "b",
                format!(
                    "the sum of b^2 over the interior overflows f64 (|b| up to {big:e}); the \
                     relative residual cannot be measured: scale b (and p0) down"
                ),
            ));
        }
        Ok(())
    }
}

/// The error of a solve whose residual became inf or NaN: the iteration
/// overflowed (or the inputs were too large for `T`).
fn overflowed<T: Element>(prob: &Problem<T>, res_sq: f64, sweeps: usize) -> Error {
    Error::input(
        "poisson problem",
        format!(
            "the residual became {} after {sweeps} sweeps: b, p0 and 1/h^2 = {:e} are too large \
             for {} arithmetic; scale b and p0 down, choose h nearer 1{}",
            res_sq.sqrt(),
            1.0 / (prob.h * prob.h),
            T::NAME,
            if std::mem::size_of::<T>() == 4 {
                ", or use --precision f64"
            } else {
                ""
            }
        ),
    )
}

/// Manufactured problem on a square-celled grid over `[0, (nx-1) h] x [0, (ny-1) h]`,
/// `h = 1 / (max(nx, ny) - 1)`: `p* = sin(pi x) sin(pi y)`, `b = lap p* =
/// -2 pi^2 p*` (the continuous Laplacian), `p0` = `p*` on the boundary and 0
/// inside. Returns the problem (in f64) and `p*`. On a square grid the
/// discrete solution is `p* 2 pi^2 / lambda_h` with `lambda_h = 8 sin^2(pi h / 2) / h^2`,
/// so the discretisation error is about `pi^2 h^2 / 12 max|p*|` (0.82 h^2).
pub fn manufactured(grid: Grid) -> (Problem<f64>, Vec<f64>) {
    let h = default_h(grid);
    let pi = std::f64::consts::PI;
    let mut exact = vec![0.0; grid.cells()];
    let mut b = vec![0.0; grid.cells()];
    let mut p0 = vec![0.0; grid.cells()];
    for y in 0..grid.ny {
        for x in 0..grid.nx {
            let i = y * grid.nx + x;
            let v = (pi * x as f64 * h).sin() * (pi * y as f64 * h).sin();
            exact[i] = v;
            b[i] = -2.0 * pi * pi * v;
            if x == 0 || y == 0 || x == grid.nx - 1 || y == grid.ny - 1 {
                p0[i] = v;
            }
        }
    }
    (Problem { grid, h, b, p0 }, exact)
}

/// Solver settings.
#[derive(Debug, Clone, Copy)]
pub struct SolveOptions {
    /// Kernel of the sweeps (ignored by the CPU solver).
    pub rung: Rung,
    /// Temporal depth (rung 4).
    pub depth: u32,
    /// Stop when the relative residual is below this; `None`: run `max_iters`.
    pub tol: Option<f64>,
    /// Most sweeps.
    pub max_iters: usize,
    /// Sweeps between residual checks.
    pub check_every: usize,
}

impl SolveOptions {
    /// Rejects a tolerance that is not a positive finite number, a zero check
    /// interval and a depth out of range.
    pub fn validate(&self) -> Result<()> {
        if let Some(t) = self.tol
            && !(t.is_finite() && t > 0.0)
        {
            return Err(Error::input(
                "--tol",
                format!("{t}; the tolerance must be a positive finite number"),
            ));
        }
        if self.check_every == 0 {
            return Err(Error::input(
                "--check-every",
                "0; the residual check interval must be at least 1 sweep",
            ));
        }
        check_depth(self.depth)
    }
}

/// What a solve did.
#[derive(Debug, Clone)]
pub struct SolveReport {
    /// Sweeps done.
    pub iterations: usize,
    /// Final `||r||_2 / ||b||_2` (or `||r||_2` when `b` is zero).
    pub rel_residual: f64,
    /// Final `||r||_2`.
    pub residual_norm: f64,
    /// The tolerance was reached.
    pub converged: bool,
    /// Wall time of the whole solve (sweeps and residual checks), ms.
    pub ms: f64,
    /// Residual evaluations.
    pub residual_checks: usize,
}

fn rel(res_sq: f64, b_sq: f64) -> f64 {
    if b_sq > 0.0 {
        (res_sq / b_sq).sqrt()
    } else {
        res_sq.sqrt()
    }
}

/// Solves on a device (GPU or simulator) with the GPU residual reduction
/// every `check_every` sweeps.
pub fn solve_device<T: Element>(
    dev: &Device,
    prob: &Problem<T>,
    opts: &SolveOptions,
) -> Result<(Vec<T>, SolveReport)> {
    opts.validate()?;
    prob.validate()?;
    let grid = prob.grid;
    let b_sq = interior_norm_sq(&prob.b, grid);
    let b = dev.upload(&prob.b)?;
    let mut f = Field::new(dev, &prob.p0)?;
    let mut acc = dev.alloc_filled(1, 0.0f64)?;
    let k = T::from_f64(k_of_h(prob.h));
    let t0 = Instant::now();
    let mut done = 0;
    let mut checks = 0;
    let mut res = f64::NAN;
    let mut converged = false;
    loop {
        if let Some(tol) = opts.tol {
            res = residual_sq(dev, grid, &f.cur, &b, prob.h, &mut acc)?;
            checks += 1;
            if !res.is_finite() {
                return Err(overflowed(prob, res, done));
            }
            if rel(res, b_sq) < tol {
                converged = true;
                break;
            }
        }
        if done >= opts.max_iters {
            break;
        }
        let n = if opts.tol.is_some() {
            opts.check_every.min(opts.max_iters - done)
        } else {
            opts.max_iters
        };
        f.run(dev, opts.rung, grid, &b, k, n, opts.depth)?;
        done += n;
    }
    if opts.tol.is_none() {
        res = residual_sq(dev, grid, &f.cur, &b, prob.h, &mut acc)?;
        checks += 1;
        if !res.is_finite() {
            return Err(overflowed(prob, res, done));
        }
    }
    dev.synchronize()?;
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    let p = dev.download(&f.cur)?;
    Ok((
        p,
        SolveReport {
            iterations: done,
            rel_residual: rel(res, b_sq),
            residual_norm: res.sqrt(),
            converged,
            ms,
            residual_checks: checks,
        },
    ))
}

/// The same solver on the CPU (rayon on the current pool).
pub fn solve_cpu<T: Element>(
    prob: &Problem<T>,
    opts: &SolveOptions,
) -> Result<(Vec<T>, SolveReport)> {
    opts.validate()?;
    prob.validate()?;
    let grid = prob.grid;
    let b_sq = interior_norm_sq(&prob.b, grid);
    let k = T::from_f64(k_of_h(prob.h));
    let mut cur = prob.p0.clone();
    let mut next = vec![T::ZERO; cur.len()];
    let t0 = Instant::now();
    let (mut done, mut checks, mut res, mut converged) = (0, 0, f64::NAN, false);
    loop {
        if let Some(tol) = opts.tol {
            res = cpu_residual_sq(&cur, &prob.b, grid, prob.h);
            checks += 1;
            if !res.is_finite() {
                return Err(overflowed(prob, res, done));
            }
            if rel(res, b_sq) < tol {
                converged = true;
                break;
            }
        }
        if done >= opts.max_iters {
            break;
        }
        let n = if opts.tol.is_some() {
            opts.check_every.min(opts.max_iters - done)
        } else {
            opts.max_iters
        };
        for _ in 0..n {
            cpu_sweep_rayon(&cur, &prob.b, &mut next, grid, k);
            std::mem::swap(&mut cur, &mut next);
        }
        done += n;
    }
    if opts.tol.is_none() {
        res = cpu_residual_sq(&cur, &prob.b, grid, prob.h);
        checks += 1;
        if !res.is_finite() {
            return Err(overflowed(prob, res, done));
        }
    }
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    Ok((
        cur,
        SolveReport {
            iterations: done,
            rel_residual: rel(res, b_sq),
            residual_norm: res.sqrt(),
            converged,
            ms,
            residual_checks: checks,
        },
    ))
}

// ---------------------------------------------------------------- simulator check

/// Cases of the simulator check: grid, sweep counts for f32 and for f64,
/// rungs, temporal depth. Odd sizes, not multiples of any tile, the smallest
/// legal grid, and a grid of several register and temporal blocks (the rungs
/// with few simulated threads per cell). The simulator runs one OS thread per
/// GPU thread, so the one-thread-per-cell rungs are kept to small counts.
#[allow(clippy::type_complexity)]
const SIM_CASES: [((usize, usize), &[usize], &[usize], &[Rung], u32); 3] = [
    ((37, 29), &CHECK_SWEEPS, &[1, 2], &Rung::ALL, 4),
    ((3, 3), &[1, 3], &[1, 3], &Rung::ALL, 1),
    (
        (131, 67),
        &[1, 3],
        &[2],
        &[Rung::Register, Rung::Temporal],
        2,
    ),
];

/// Every kernel of the workload on the simulator against the CPU f64
/// reference (f32: 1, 2 and 37 sweeps at 37x29), and the residual kernel.
pub fn sim_check() -> Result<()> {
    let dev = Device::sim();
    fn typed<T: Element>(dev: &Device) -> Result<()> {
        for (i, &((nx, ny), s32, s64, rungs, depth)) in SIM_CASES.iter().enumerate() {
            let sweeps = if std::mem::size_of::<T>() == 4 {
                s32
            } else {
                s64
            };
            let case = CheckCase::new::<T>(Grid::new(nx, ny)?, 11 + i as u64, sweeps);
            for &rung in rungs {
                verify::<T>(dev, rung, depth, &case)?;
            }
            check_residual::<T>(dev, &case)?;
        }
        Ok(())
    }
    typed::<f32>(&dev)?;
    typed::<f64>(&dev)
}

// ---------------------------------------------------------------- benchmark

/// Sizes of the full benchmark (square) and the odd one.
pub const BENCH_SIZES: [(usize, usize); 5] = [
    (800, 800),
    (2000, 2000),
    (4096, 4096),
    (8192, 8192),
    (1999, 1237),
];
/// Temporal depths timed by the benchmark.
pub const BENCH_DEPTHS: [u32; 3] = [4, 8, 12];

fn bytes_per_cell<T>() -> f64 {
    3.0 * std::mem::size_of::<T>() as f64
}

/// Sweeps per timed call for a grid: enough that launch gaps and event
/// resolution do not dominate.
fn sweeps_per_call(cells: usize) -> usize {
    match cells {
        0..=1_000_000 => 100,
        1_000_001..=5_000_000 => 60,
        5_000_001..=20_000_000 => 40,
        _ => 20,
    }
}

fn cpu_row<T: Element>(variant: &str, grid: Grid, t: &Timing, t1_ms: f64) -> Row {
    let mut r = Row::new(NAME, variant, "cpu", &grid.label(), T::NAME);
    r.throughput = Some(grid.cells() as f64 / (t.median_ms * 1e-3) / 1e9);
    r.unit = "GCells/s".into();
    r.speedup = Some(t1_ms / t.median_ms);
    r.timing = Some(t.clone());
    r
}

/// CPU rows at one size: one thread, ndarray, rayon on all threads, and the
/// thread-count sweep (1, 2, 4, ... up to all cores, each its own pool).
/// Times are per sweep. Returns the rows and the one-thread time.
pub fn cpu_rows<T: Element>(
    grid: Grid,
    reps: usize,
    sweep_threads: bool,
) -> Result<(Vec<Row>, f64)> {
    let (p, b) = bench_inputs::<T>(grid);
    let k = T::from_f64(k_of_h(default_h(grid)));
    let mut out = vec![T::ZERO; grid.cells()];
    let t1 = Timing::host(1, reps, || cpu_sweep(&p, &b, &mut out, grid, k));
    let mut rows = vec![cpu_row::<T>("CPU 1 thread", grid, &t1, t1.median_ms)];
    cpu_sweep_nd(&p, &b, &mut out, grid, k)?;
    let tn = Timing::host(0, reps, || {
        let _ = cpu_sweep_nd(&p, &b, &mut out, grid, k);
    });
    rows.push(cpu_row::<T>(
        "CPU ndarray slicing (1 thread)",
        grid,
        &tn,
        t1.median_ms,
    ));
    let all = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let tr = Timing::host(2, reps, || cpu_sweep_rayon(&p, &b, &mut out, grid, k));
    rows.push(cpu_row::<T>(
        &format!("CPU rayon all threads ({all})"),
        grid,
        &tr,
        t1.median_ms,
    ));
    if sweep_threads {
        let mut counts: Vec<usize> = std::iter::successors(Some(1usize), |n| Some(n * 2))
            .take_while(|&n| n < all)
            .collect();
        counts.push(all);
        for n in counts {
            let t = with_threads(n, || {
                Timing::host(2, reps, || cpu_sweep_rayon(&p, &b, &mut out, grid, k))
            })?;
            let mut r = cpu_row::<T>(&format!("CPU rayon {n} threads"), grid, &t, t1.median_ms);
            // Bytes per second of the sweep, to show where bandwidth saturates.
            r.pct_of_ceiling = None;
            rows.push(r);
        }
    }
    Ok((rows, t1.median_ms))
}

struct GpuBench<'a> {
    dev: &'a Device,
    reps: usize,
    copy_gbs: Option<f64>,
}

impl GpuBench<'_> {
    fn rows_for<T: Element>(
        &self,
        grid: Grid,
        cpu1_ms: Option<f64>,
        checks: &[(Rung, u32, Result<f64, String>)],
    ) -> Result<Vec<Row>> {
        let dev = self.dev;
        let mut rows = Vec::new();
        let (p0, bh) = bench_inputs::<T>(grid);
        let b = dev.upload(&bh)?;
        let mut f = Field::new(dev, &p0)?;
        let k = T::from_f64(k_of_h(default_h(grid)));
        let sweeps = sweeps_per_call(grid.cells());
        let arch = dev.as_gpu().map(|g| g.info().arch());
        for (rung, depth, check) in checks {
            let (rung, depth) = (*rung, *depth);
            let mut row = Row::new(
                NAME,
                &rung.label(depth),
                if dev.is_sim() { "sim" } else { "gpu" },
                &grid.label(),
                T::NAME,
            );
            if let Some(a) = &arch
                && let Some(res) = crate::modules::resource(&rung.kernel::<T>(), a, false)
            {
                row.registers = Some(res.registers);
                row.spills = Some(res.spill_stores + res.spill_loads);
            }
            match check {
                Ok(e) => row.rel_err = Some(*e),
                Err(e) => {
                    row.status = Status::Failed(e.clone());
                    rows.push(row);
                    continue;
                }
            }
            let t0 = Instant::now();
            f.run(
                dev,
                rung,
                grid,
                &b,
                k,
                if rung == Rung::Temporal {
                    depth as usize
                } else {
                    1
                },
                depth,
            )?;
            dev.synchronize()?;
            row.first_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
            let t = dev.time(2, self.reps, |_| {
                f.run(dev, rung, grid, &b, k, sweeps, depth)
            })?;
            let per = |ms: f64| ms / sweeps as f64;
            let t_iter = Timing {
                median_ms: per(t.median_ms),
                min_ms: per(t.min_ms),
                max_ms: per(t.max_ms),
                reps: t.reps,
            };
            let gcells = grid.cells() as f64 / (t_iter.median_ms * 1e-3) / 1e9;
            row.throughput = Some(gcells);
            row.unit = "GCells/s".into();
            row.pct_of_ceiling = self
                .copy_gbs
                .map(|c| 100.0 * gcells * bytes_per_cell::<T>() / c);
            row.speedup = cpu1_ms.map(|c| c / t_iter.median_ms);
            row.timing = Some(t_iter);
            rows.push(row);
        }
        // The residual reduction: reads p and b once (8 or 16 bytes per cell).
        let mut acc = dev.alloc_filled(1, 0.0f64)?;
        let h = default_h(grid);
        let mut row = Row::new(
            NAME,
            "residual (GPU reduction, 1 atomic/block)",
            "gpu",
            &grid.label(),
            T::NAME,
        );
        let t = dev.time(2, self.reps, |_| {
            residual_sq(dev, grid, &f.cur, &b, h, &mut acc).map(|_| ())
        })?;
        let gbs = grid.cells() as f64 * 2.0 * std::mem::size_of::<T>() as f64
            / (t.median_ms * 1e-3)
            / 1e9;
        row.throughput = Some(gbs);
        row.unit = "GB/s (incl. zero + read-back)".into();
        row.pct_of_ceiling = self.copy_gbs.map(|c| 100.0 * gbs / c);
        row.timing = Some(t);
        rows.push(row);
        Ok(rows)
    }

    fn precision<T: Element>(&self, sizes: &[(usize, usize)], cpu: bool) -> Result<Vec<Row>> {
        let (cx, cy) = CHECK_GRID_GPU;
        let case = CheckCase::new::<T>(Grid::new(cx, cy)?, 5, &CHECK_SWEEPS);
        let mut variants: Vec<(Rung, u32)> =
            vec![(Rung::Naive, 1), (Rung::Tiled, 1), (Rung::Register, 1)];
        variants.extend(BENCH_DEPTHS.iter().map(|&d| (Rung::Temporal, d)));
        let checks: Vec<(Rung, u32, Result<f64, String>)> = variants
            .into_iter()
            .map(|(r, d)| {
                (
                    r,
                    d,
                    verify::<T>(self.dev, r, d, &case).map_err(|e| e.to_string()),
                )
            })
            .collect();
        let mut rows = Vec::new();
        if let Err(e) = check_residual::<T>(self.dev, &case) {
            let mut r = Row::new(
                NAME,
                "residual (GPU reduction, 1 atomic/block)",
                "gpu",
                &case.grid.label(),
                T::NAME,
            );
            r.status = Status::Failed(e.to_string());
            rows.push(r);
        }
        for &(nx, ny) in sizes {
            let grid = Grid::new(nx, ny)?;
            let cpu1 = if cpu {
                let (p, b) = bench_inputs::<T>(grid);
                let k = T::from_f64(k_of_h(default_h(grid)));
                let mut out = vec![T::ZERO; grid.cells()];
                let t1 = Timing::host(1, 3, || cpu_sweep(&p, &b, &mut out, grid, k));
                rows.push(cpu_row::<T>("CPU 1 thread", grid, &t1, t1.median_ms));
                Some(t1.median_ms)
            } else {
                None
            };
            rows.extend(self.rows_for::<T>(grid, cpu1, &checks)?);
        }
        Ok(rows)
    }
}

/// The benchmark: CPU rows at 2000^2 f32 (one thread, ndarray, all threads,
/// and the thread sweep); on a GPU every rung (and three temporal depths) at
/// 800^2, 2000^2, 4096^2, 8192^2 and 1999x1237, f32 and f64, after checking
/// each against the CPU f64 reference (quick: 2000^2 f32 only). On the
/// simulator, the rungs at a small odd size.
pub fn bench(ctx: &BenchCtx) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let g2000 = Grid::new(2000, 2000)?;
    let (cpu, cpu1_2000) = cpu_rows::<f32>(g2000, if ctx.quick { 3 } else { 5 }, true)?;
    rows.extend(cpu);
    match ctx.dev {
        Some(dev) if !dev.is_sim() => {
            let gb = GpuBench {
                dev,
                reps: ctx.reps(),
                copy_gbs: ctx.ceilings.copy_gbs,
            };
            if ctx.quick {
                let g = gb.precision::<f32>(&[(2000, 2000)], false)?;
                for mut r in g {
                    if r.size == g2000.label()
                        && r.backend == "gpu"
                        && r.timing.is_some()
                        && !r.variant.starts_with("residual")
                    {
                        r.speedup = r.timing.as_ref().map(|t| cpu1_2000 / t.median_ms);
                    }
                    rows.push(r);
                }
            } else {
                rows.extend(gb.precision::<f32>(&BENCH_SIZES, true)?);
                rows.extend(gb.precision::<f64>(&BENCH_SIZES[..4], true)?);
            }
        }
        Some(dev) => {
            rows.push(super::skipped_gpu(NAME, ctx));
            let grid = Grid::new(67, 45)?;
            let case = CheckCase::new::<f32>(grid, 3, &[1, 2]);
            for rung in Rung::ALL {
                let d = if rung == Rung::Temporal { 2 } else { 1 };
                let mut row = Row::new(NAME, &rung.label(d), "sim", &grid.label(), "f32");
                match verify::<f32>(dev, rung, d, &case) {
                    Ok(e) => row.rel_err = Some(e),
                    Err(e) => row.status = Status::Failed(e.to_string()),
                }
                rows.push(row);
            }
        }
        None => rows.push(super::skipped_gpu(NAME, ctx)),
    }
    Ok(rows)
}

// ---------------------------------------------------------------- CLI

/// `ptxlab poisson` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Columns (x, fastest-varying). Default 2000, or the shape of --b.
    #[arg(long, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub nx: Option<usize>,
    /// Rows (y). Default 2000, or the shape of --b.
    #[arg(long, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub ny: Option<usize>,
    /// Square grid N x N (instead of --nx/--ny).
    #[arg(long, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub size: Option<usize>,
    /// f32 or f64.
    #[arg(long, default_value = "f32")]
    pub precision: String,
    /// naive, tiled, register, temporal, or all.
    #[arg(long, default_value = "all")]
    pub variant: String,
    /// Sweeps per pass of the temporal variant (1..=16).
    #[arg(long, default_value_t = DEFAULT_DEPTH, value_parser = crate::cli::parse_whole::<u32>, allow_negative_numbers = true)]
    pub depth: u32,
    /// gpu, sim or cpu.
    #[arg(long, default_value = "gpu")]
    pub backend: String,
    /// Sweeps to run (without --tol, default 100), or the most sweeps (with
    /// --tol, default 100000; 5000 on the simulator). f32 cannot reach a
    /// relative residual much below 1e-7 * 4 / (h^2 |b|); past that the solve
    /// stops at this count and reports "NOT converged".
    #[arg(long, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub iters: Option<usize>,
    /// Stop when ||b - lap_h p|| / ||b|| falls below this (positive).
    #[arg(long, allow_negative_numbers = true)]
    pub tol: Option<f64>,
    /// Sweeps between residual checks (with --tol).
    #[arg(long, default_value_t = 100, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub check_every: usize,
    /// Grid spacing h (default 1 / (max(nx, ny) - 1)).
    #[arg(long, allow_negative_numbers = true)]
    pub h: Option<f64>,
    /// Right-hand side b (.npy, 2-D C-order, shape (ny, nx), float32/float64
    /// matching --precision). Default: the manufactured problem
    /// b = -2 pi^2 sin(pi x) sin(pi y).
    #[arg(long)]
    pub b: Option<PathBuf>,
    /// Initial field, boundary values included (.npy, same shape and dtype as b).
    #[arg(long)]
    pub p0: Option<PathBuf>,
    /// Write the result p here (.npy).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Several devices: `--gpus N`, `--no-overlap` (see `poisson_multi`).
    #[command(flatten)]
    pub gpus: super::poisson_multi::GpuArgs,
}

impl Default for Args {
    fn default() -> Self {
        Self {
            nx: None,
            ny: None,
            size: None,
            precision: "f32".into(),
            variant: "all".into(),
            depth: DEFAULT_DEPTH,
            backend: "gpu".into(),
            iters: None,
            tol: None,
            check_every: 100,
            h: None,
            b: None,
            p0: None,
            out: None,
            gpus: Default::default(),
        }
    }
}

/// `ptxlab poisson`.
pub fn cli(args: &Args) -> Result<()> {
    if args.gpus.requested() {
        return super::poisson_multi::cli(args);
    }
    let backend: crate::Backend = args.backend.parse()?;
    match args.precision.as_str() {
        "f32" => cli_typed::<f32>(args, backend),
        "f64" => cli_typed::<f64>(args, backend),
        p => Err(Error::input(
            "--precision",
            format!("`{p}`; allowed: f32, f64"),
        )),
    }
}

fn cli_grid(args: &Args, from_file: Option<(usize, usize)>) -> Result<Grid> {
    let asked = match (args.size, args.nx, args.ny) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(Error::input(
                "--size",
                "give --size N or --nx/--ny, not both",
            ));
        }
        (Some(n), None, None) => Some((n, n)),
        (None, None, None) => None,
        (None, nx, ny) => Some((
            nx.or(from_file.map(|f| f.1)).unwrap_or(2000),
            ny.or(from_file.map(|f| f.0)).unwrap_or(2000),
        )),
    };
    match (asked, from_file) {
        (Some((nx, ny)), Some((rows, cols))) if (nx, ny) != (cols, rows) => Err(Error::input(
            "--b",
            format!(
                "the file has shape ({rows}, {cols}) = (ny, nx), but the grid asked for is {nx}x{ny} (nx x ny)"
            ),
        )),
        (Some((nx, ny)), _) => Grid::new(nx, ny),
        (None, Some((rows, cols))) => Grid::new(cols, rows),
        (None, None) => Grid::new(2000, 2000),
    }
}

/// Reads and validates the problem the CLI arguments describe; returns it and
/// the exact solution when it is the manufactured one.
pub fn cli_problem<T: Element>(args: &Args) -> Result<(Problem<T>, Option<Vec<f64>>)> {
    let read = |p: &PathBuf, what: &str| -> Result<(usize, usize, Vec<T>)> {
        crate::npy::read_2d::<T>(p, T::NAME).map_err(|e| {
            Error::input(
                what,
                format!(
                    "{e} (a 2-D C-order array of {} with shape (ny, nx) is required)",
                    T::NAME
                ),
            )
        })
    };
    let b_file = args.b.as_ref().map(|p| read(p, "--b")).transpose()?;
    let grid = cli_grid(args, b_file.as_ref().map(|(r, c, _)| (*r, *c)))?;
    // The manufactured problem (3 f64 arrays), b and p0 in T, the solver's
    // two fields and the device's three: about 8 f64 arrays at once.
    crate::cli::check_host_arrays("grid (--size/--nx/--ny)", grid.cells(), 8, 8)?;
    let h = args.h.unwrap_or_else(|| default_h(grid));
    check_h_for::<T>(h)?;
    let (b, exact, p0_default) = match b_file {
        Some((_, _, b)) => (b, None, vec![T::ZERO; grid.cells()]),
        None => {
            if args.h.is_some() {
                return Err(Error::input(
                    "--h",
                    "the manufactured problem (no --b) fixes h = 1 / (max(nx, ny) - 1); give --b to choose h",
                ));
            }
            let (m, exact) = manufactured(grid);
            let conv = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
            (conv(&m.b), Some(exact), conv(&m.p0))
        }
    };
    let p0 = match &args.p0 {
        Some(path) => {
            let (r, c, v) = read(path, "--p0")?;
            if (c, r) != (grid.nx, grid.ny) {
                return Err(Error::input(
                    "--p0",
                    format!(
                        "shape ({r}, {c}), but the grid is {} (nx x ny): shape ({}, {}) is required",
                        grid.label(),
                        grid.ny,
                        grid.nx
                    ),
                ));
            }
            v
        }
        None => p0_default,
    };
    Ok((Problem::new(grid, h, b, p0)?, exact))
}

/// Most cells of a grid on the simulator (one OS thread per GPU thread).
pub const SIM_MAX_CELLS: usize = 1 << 16;
/// Most simulated cell updates of one `ptxlab poisson --backend sim` run:
/// cells x (sweeps + 3) x variants (about 4 minutes on two cores).
pub const SIM_MAX_WORK: usize = 1 << 22;

fn cli_typed<T: Element>(args: &Args, backend: crate::Backend) -> Result<()> {
    if let Some(i) = args.iters {
        crate::cli::check_iters("--iters", i, 0)?;
    }
    crate::cli::check_iters("--check-every", args.check_every, 1)?;
    let rungs: Vec<Rung> = if args.variant == "all" {
        Rung::ALL.to_vec()
    } else {
        vec![args.variant.parse()?]
    };
    let opts = SolveOptions {
        rung: rungs[0],
        depth: args.depth,
        tol: args.tol,
        max_iters: args.iters.unwrap_or(match (args.tol, backend) {
            (None, _) => 100,
            (Some(_), crate::Backend::Sim) => 5_000,
            (Some(_), _) => 100_000,
        }),
        check_every: args.check_every,
    };
    opts.validate()?;
    let dev = crate::cli::open_device(backend)?;
    let (prob, exact) = cli_problem::<T>(args)?;
    let grid = prob.grid;
    if backend == crate::Backend::Sim {
        crate::cli::check_sim_limit(
            "grid (--size/--nx/--ny)",
            grid.cells(),
            SIM_MAX_CELLS,
            &format!("cells ({})", grid.label()),
        )?;
        let work = grid
            .cells()
            .saturating_mul(opts.max_iters.saturating_add(3))
            .saturating_mul(rungs.len());
        if work > SIM_MAX_WORK {
            return Err(Error::input(
                "--iters",
                format!(
                    "{} cells x {} sweeps x {} variant(s) = {work} cell updates on the simulator; at \
                     most {SIM_MAX_WORK} (it runs one OS thread per GPU thread): give fewer --iters, \
                     a smaller grid or one --variant",
                    grid.cells(),
                    opts.max_iters + 3,
                    rungs.len()
                ),
            ));
        }
    }
    println!(
        "poisson {} {} h={:e}, {}",
        grid.label(),
        T::NAME,
        prob.h,
        match opts.tol {
            Some(t) => format!(
                "until ||r||/||b|| < {t:e} (at most {} sweeps, checked every {})",
                opts.max_iters, opts.check_every
            ),
            None => format!("{} sweeps", opts.max_iters),
        }
    );
    let report = |who: &str, p: &[T], r: &SolveReport| {
        let per_us = if r.iterations > 0 {
            1e3 * r.ms / r.iterations as f64
        } else {
            f64::NAN
        };
        println!(
            "{who}: {} sweeps, ||r||/||b|| = {:.3e} (||r|| = {:.3e}), {} ms{}{}",
            r.iterations,
            r.rel_residual,
            r.residual_norm,
            fmt_ms(r.ms),
            if per_us.is_finite() {
                format!(
                    ", {per_us:.2} us/sweep, {:.2} GCells/s",
                    grid.cells() as f64 / per_us / 1e3
                )
            } else {
                String::new()
            },
            match (opts.tol, r.converged) {
                (Some(_), true) => ", converged".to_string(),
                (Some(_), false) => format!(", NOT converged within {} sweeps", opts.max_iters),
                (None, _) => String::new(),
            }
        );
        if let Some(e) = &exact {
            let err = p
                .iter()
                .zip(e)
                .map(|(a, b)| (a.to_f64() - b).abs())
                .fold(0.0, f64::max);
            println!(
                "  max |p - p*| = {err:.3e} (discretisation error of the manufactured problem is about {:.3e})",
                0.822 * prob.h * prob.h
            );
        }
    };
    let result = match dev {
        None => {
            let (p, r) = solve_cpu(&prob, &opts)?;
            report(
                &format!("CPU rayon ({} threads)", rayon::current_num_threads()),
                &p,
                &r,
            );
            p
        }
        Some(dev) => {
            let mut last = None;
            for rung in rungs {
                // Check the kernel on this problem first: 2 sweeps against the CPU f64 reference.
                let case = CheckCase {
                    grid,
                    p0: prob.p0.iter().map(|v| v.to_f64()).collect(),
                    b: prob.b.iter().map(|v| v.to_f64()).collect(),
                    k: T::from_f64(k_of_h(prob.h)).to_f64(),
                    refs: Vec::new(),
                };
                let k = case.k;
                let case = CheckCase {
                    refs: vec![(2, reference(&case.p0, &case.b, grid, k, 2))],
                    ..case
                };
                let e = verify::<T>(&dev, rung, args.depth.min(2), &case)?;
                println!(
                    "PASS {} {}: 2 sweeps match the CPU f64 reference (relative error {e:.1e})",
                    rung.label(args.depth),
                    T::NAME
                );
                let (p, r) = solve_device(&dev, &prob, &SolveOptions { rung, ..opts })?;
                report(
                    &format!("{} on {}", rung.label(args.depth), dev.name()),
                    &p,
                    &r,
                );
                last = Some(p);
            }
            last.unwrap_or_default()
        }
    };
    if let Some(out) = &args.out {
        crate::npy::write_2d(out, grid.ny, grid.nx, &result)?;
        println!(
            "wrote {} ({}x{} {}, shape (ny, nx))",
            out.display(),
            grid.ny,
            grid.nx,
            T::NAME
        );
    }
    Ok(())
}
