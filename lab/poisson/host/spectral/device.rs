//! The spectral solve on a device: the plans uploaded once, three launches
//! per solve (the only place the spectral kernels are named).

use super::{AxisPlan, Boundary, check_problem};
use crate::problem::Problem;
use crate::types::{Element, Grid};
use kernels_gpu::spectral as ks;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::{Buffer, Device, LaunchConfig, Timing};

/// An element type the spectral kernels are built for (f32, f64), with
/// the launch of one solve: the f64 kernels have a narrow build too
/// ([`ks::block`]), which [`SpectralDevice`] picks per pass.
pub trait SpectralElement: Element + kernels_gpu::fft::Complex + Kernels<false> {
    /// Whether the narrow build exists for this type.
    const HAS_NARROW: bool;
    /// Queues the three launches of one solve (pass `i` on the narrow
    /// build when `s.narrow[i]`, which is only set where it exists).
    fn launch_solve(s: &mut SpectralDevice<'_, Self>) -> Result<()>;
}

/// The three spectral kernels, built for this type with `NARROW`.
pub trait Kernels<const NARROW: bool>:
    ks::spectral_rows_forward::Built<NARROW>
    + ks::spectral_columns_solve::Built<NARROW>
    + ks::spectral_rows_inverse::Built<NARROW>
{
}
impl<const NARROW: bool, T> Kernels<NARROW> for T where
    T: ks::spectral_rows_forward::Built<NARROW>
        + ks::spectral_columns_solve::Built<NARROW>
        + ks::spectral_rows_inverse::Built<NARROW>
{
}

impl SpectralElement for f32 {
    const HAS_NARROW: bool = false;
    fn launch_solve(s: &mut SpectralDevice<'_, Self>) -> Result<()> {
        s.rows_forward::<false>()?;
        s.columns::<false>()?;
        s.rows_inverse::<false>()
    }
}
impl SpectralElement for f64 {
    const HAS_NARROW: bool = true;
    fn launch_solve(s: &mut SpectralDevice<'_, Self>) -> Result<()> {
        let [a, b, c] = s.narrow;
        if a {
            s.rows_forward::<true>()
        } else {
            s.rows_forward::<false>()
        }?;
        if b {
            s.columns::<true>()
        } else {
            s.columns::<false>()
        }?;
        if c {
            s.rows_inverse::<true>()
        } else {
            s.rows_inverse::<false>()
        }
    }
}

/// A problem on a device, ready to be solved any number of times.
pub struct SpectralDevice<'d, T> {
    dev: &'d Device,
    grid: Grid,
    boundary: Boundary,
    b: Buffer<T>,
    p0: Buffer<T>,
    work: Buffer<T>,
    /// The solution after [`SpectralDevice::launch`] (every cell written).
    pub p: Buffer<T>,
    plan_x: Buffer<T>,
    plan_y: Buffer<T>,
    fac_x: Buffer<u32>,
    fac_y: Buffer<u32>,
    cfg: [LaunchConfig; 3],
    /// Per pass (rows forward, columns, rows inverse): the narrow f64
    /// build ([`ks::narrow_fits`] of the axis its lines run along).
    narrow: [bool; 3],
    /// The largest dynamic shared memory of a block on `dev`.
    stash_max: usize,
    fold: T,
    scale: T,
    h: T,
}

/// The FFT length of the lines along an axis of `side` cells.
fn fft_len(boundary: Boundary, side: usize) -> usize {
    ks::fft_len(boundary.kind(), side - 2)
}

/// The launches of a solve: one block per pair of lines. A Dirichlet
/// inverse pass keeps a line aside in shared memory (its stash) when that
/// fits in `stash_max` bytes; the kernels fall back to global memory
/// without it.
fn configs<T: SpectralElement>(
    grid: Grid,
    boundary: Boundary,
    nfx: usize,
    nfy: usize,
    stash_max: usize,
    narrow: [bool; 3],
) -> Result<[LaunchConfig; 3]> {
    let (mx, my) = (grid.nx - 2, grid.ny - 2);
    let pairs = |lines: usize, nf: usize, stash: usize, narrow: bool| -> Result<LaunchConfig> {
        let threads = ks::block::<T>(narrow);
        let stashed = ks::stashed_bytes::<T>(nf, stash);
        let bytes = if boundary == Boundary::Dirichlet && stash > 0 && stashed <= stash_max {
            stashed
        } else {
            ks::shared_bytes::<T>(nf)
        };
        Ok(
            LaunchConfig::for_threads(lines.div_ceil(2) * threads as usize, threads)?
                .with_shared(bytes),
        )
    };
    Ok([
        pairs(my, nfx, 0, narrow[0])?,
        pairs(mx, nfy, my, narrow[1])?,
        pairs(grid.ny, nfx, mx, narrow[2])?,
    ])
}

fn to_t<T: Element>(v: &[f64]) -> Vec<T> {
    v.iter().map(|&x| T::from_f64(x)).collect()
}

impl<'d, T: SpectralElement> SpectralDevice<'d, T> {
    /// Checks the problem (and, for Neumann, its compatibility), the
    /// shared memory a line needs, and uploads everything; the work array
    /// and `p` start poisoned (NaN).
    pub fn new(dev: &'d Device, prob: &Problem<T>, boundary: Boundary) -> Result<Self> {
        check_problem(prob, boundary)?;
        let grid = prob.grid;
        let (mx, my) = (grid.nx - 2, grid.ny - 2);
        let (px, py) = (
            AxisPlan::new(boundary, mx, prob.h),
            AxisPlan::new(boundary, my, prob.h),
        );
        let max = dev.limits().max_shared_optin;
        let t = T::NAME;
        for (axis, plan) in [("nx", &px), ("ny", &py)] {
            let need = ks::shared_bytes::<T>(plan.nf);
            if need > max {
                return Err(Error::input(
                    "grid (--size)",
                    format!(
                        "{}: the spectral solver transforms each line in one block's shared \
                         memory, {need} bytes for {axis} = {} in {t}; this device allows \
                         {max}: at most {} cells per side in {t}",
                        grid.label(),
                        plan.n + 2,
                        (max / std::mem::size_of::<T>()).saturating_sub(2 * ks::MAX_WARPS) / 4
                            + 1
                            + usize::from(boundary == Boundary::Neumann)
                    ),
                ));
            }
        }
        let fits = |columns: bool, p: &AxisPlan| {
            T::HAS_NARROW && ks::narrow_fits(columns, p.nf, &p.fac[1..])
        };
        let narrow = [fits(false, &px), fits(true, &py), fits(false, &px)];
        let cfg = configs::<T>(grid, boundary, px.nf, py.nf, max, narrow)?;
        let nan = T::from_f64(f64::NAN);
        Ok(Self {
            dev,
            grid,
            boundary,
            b: dev.upload(&prob.b)?,
            p0: dev.upload(&prob.p0)?,
            work: dev.alloc_filled(mx * my, nan)?,
            p: dev.alloc_filled(grid.cells(), nan)?,
            plan_x: dev.upload(&to_t::<T>(&px.table))?,
            plan_y: dev.upload(&to_t::<T>(&py.table))?,
            fac_x: dev.upload(&px.fac)?,
            fac_y: dev.upload(&py.fac)?,
            cfg,
            narrow,
            stash_max: max,
            fold: T::from_f64(boundary.fold(prob.h)),
            scale: T::from_f64(px.inverse_scale(boundary) * py.inverse_scale(boundary)),
            h: T::from_f64(prob.h),
        })
    }

    /// The same solver without the stash: the Dirichlet inverse passes
    /// send the second line of a pair through global memory, as on a device
    /// whose shared memory has no room for it (the tests compare both).
    pub fn without_stash(mut self) -> Result<Self> {
        self.stash_max = 0;
        self.reconfigure()?;
        Ok(self)
    }

    /// The same solver with the narrow f64 kernels (`true`) or the wide
    /// ones, whatever the grid (the tests compare both); an error for an
    /// element type without a narrow build (f32).
    pub fn with_narrow(mut self, narrow: bool) -> Result<Self> {
        if narrow && !T::HAS_NARROW {
            return Err(Error::input(
                "precision",
                format!(
                    "the spectral kernels have no narrow build in {}: only in f64",
                    T::NAME
                ),
            ));
        }
        self.narrow = [narrow; 3];
        self.reconfigure()?;
        Ok(self)
    }

    /// Per pass (rows forward, columns, rows inverse): whether it runs
    /// the narrow f64 build.
    pub fn narrow_passes(&self) -> [bool; 3] {
        self.narrow
    }

    /// Threads per block of the three launches.
    pub fn threads(&self) -> [u32; 3] {
        self.narrow.map(ks::block::<T>)
    }

    fn reconfigure(&mut self) -> Result<()> {
        let (px, py) = (
            fft_len(self.boundary, self.grid.nx),
            fft_len(self.boundary, self.grid.ny),
        );
        self.cfg = configs::<T>(
            self.grid,
            self.boundary,
            px,
            py,
            self.stash_max,
            self.narrow,
        )?;
        Ok(())
    }

    /// Queues one solve: rows forward, columns solved, rows inverse.
    pub fn launch(&mut self) -> Result<()> {
        T::launch_solve(self)
    }

    fn spectral_grid(&self) -> ks::SpectralGrid {
        let (nx, ny) = self.grid.dims();
        ks::SpectralGrid {
            nx,
            ny,
            kind: self.boundary.kind(),
        }
    }

    /// Pass 1 on the build `NARROW`: rows forward.
    fn rows_forward<const NARROW: bool>(&mut self) -> Result<()>
    where
        T: Kernels<NARROW>,
    {
        let grid = self.spectral_grid();
        launch!(
            self.dev,
            self.cfg[0],
            spectral::spectral_rows_forward::<T, NARROW>(
                &self.b,
                &self.p0,
                &mut self.work,
                &self.plan_x,
                &self.fac_x,
                grid,
                self.fold
            )
        )
    }

    /// Pass 2 on the build `NARROW`: columns forward, divided, back.
    fn columns<const NARROW: bool>(&mut self) -> Result<()>
    where
        T: Kernels<NARROW>,
    {
        let grid = self.spectral_grid();
        launch!(
            self.dev,
            self.cfg[1],
            spectral::spectral_columns_solve::<T, NARROW>(
                &mut self.work,
                &self.plan_x,
                &self.plan_y,
                &self.fac_y,
                grid,
                self.scale
            )
        )
    }

    /// Pass 3 on the build `NARROW`: rows inverse and the boundary.
    fn rows_inverse<const NARROW: bool>(&mut self) -> Result<()>
    where
        T: Kernels<NARROW>,
    {
        let grid = self.spectral_grid();
        launch!(
            self.dev,
            self.cfg[2],
            spectral::spectral_rows_inverse::<T, NARROW>(
                &self.work,
                &self.p0,
                &mut self.p,
                &self.plan_x,
                &self.fac_x,
                grid,
                self.h
            )
        )
    }

    /// One solve, the field downloaded.
    pub fn solve(&mut self) -> Result<Vec<T>> {
        self.launch()?;
        Ok(self.dev.download(&self.p)?)
    }

    /// Times `reps` solves after `warmup` (device events on a GPU).
    pub fn time(&mut self, warmup: usize, reps: usize) -> Result<Timing> {
        let dev = self.dev;
        dev.time(warmup, reps, |_| self.launch())
    }
}
