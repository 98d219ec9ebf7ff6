//! Typed launchers of the Jacobi ladder and the residual reduction: the
//! only place the kernels are named. [`launch_sweep`] and
//! [`launch_residual`] launch on any target (a device, one of its streams,
//! a graph capture) from whole buffers or views; [`sweep`] checks lengths
//! and computes the launch shape; [`Field`] is the ping-pong pair a solve
//! iterates on.

use super::types::{Element, Grid, Rung, check_depth};
use kernels_gpu::poisson as kp;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::{Buffer, Device, KernelArg, Launch, LaunchConfig};
use ptxlab_device::{DeviceSlice, DeviceSliceMut};

/// Launches one sweep of `rung` (`depth` sweeps for the temporal rung) on
/// `target` (a device, a stream or a graph capture), from `p` and `b` into
/// `out` (whole buffers or views of them); the caller checked the lengths
/// and computed `cfg` ([`sweep_config`]).
pub fn launch_sweep<'a, T: Element>(
    target: impl Launch,
    cfg: LaunchConfig,
    rung: Rung,
    (p, b, out): (
        impl KernelArg<DeviceSlice<'a, T>>,
        impl KernelArg<DeviceSlice<'a, T>>,
        impl KernelArg<DeviceSliceMut<'a, T>>,
    ),
    (nx, ny): (u32, u32),
    k: T,
    depth: u32,
) -> Result<()> {
    match rung {
        Rung::Naive => launch!(
            target,
            cfg,
            poisson::poisson_naive::<T>(p, b, out, nx, ny, k)
        ),
        Rung::Tiled => launch!(
            target,
            cfg,
            poisson::poisson_tiled::<T>(p, b, out, nx, ny, k)
        ),
        Rung::Register => {
            launch!(
                target,
                cfg,
                poisson::poisson_register::<T>(p, b, out, nx, ny, k)
            )
        }
        Rung::Temporal => launch!(
            target,
            cfg,
            poisson::poisson_temporal::<T>(p, b, out, nx, ny, k, depth)
        ),
    }
}

/// Launches the residual reduction (`r^2` summed into `acc`) on `target`.
pub fn launch_residual<'a, T: Element>(
    target: impl Launch,
    cfg: LaunchConfig,
    (p, b): (
        impl KernelArg<DeviceSlice<'a, T>>,
        impl KernelArg<DeviceSlice<'a, T>>,
    ),
    acc: impl KernelArg<DeviceSliceMut<'a, f64>>,
    (nx, ny): (u32, u32),
    inv_h2: f64,
) -> Result<()> {
    launch!(
        target,
        cfg,
        poisson::poisson_residual::<T>(p, b, acc, nx, ny, inv_h2)
    )
}

/// The launch configuration of the residual reduction over a `nx x ny`
/// grid: a block row per [`kp::RES_BLOCK`] interior columns, and as many
/// rows of blocks as fill the device (about 8 per SM; 4 on the simulator).
pub fn residual_config(grid: Grid, sms: Option<usize>) -> Result<LaunchConfig> {
    let gx = (grid.nx - 2).div_ceil(kp::RES_BLOCK as usize);
    let wanted = sms.map_or(4, |s| 8 * s);
    let gy = (grid.ny - 2).min(wanted.div_ceil(gx)).max(1);
    Ok(
        LaunchConfig::for_2d(gx * kp::RES_BLOCK as usize, gy, kp::RES_BLOCK, 1)?
            .with_shared(kp::residual_shared_bytes()),
    )
}

/// The launch configuration of one sweep of `rung` (`depth` for rung 4).
pub fn sweep_config<T: Element>(rung: Rung, grid: Grid, depth: u32) -> Result<LaunchConfig> {
    let (nx, ny) = (grid.nx, grid.ny);
    match rung {
        Rung::Naive => Ok(LaunchConfig::for_2d(nx, ny, kp::NAIVE_BX, kp::NAIVE_BY)?),
        Rung::Tiled => Ok(LaunchConfig::for_2d(nx, ny, kp::TILE_X, kp::TILE_Y)?
            .with_shared(kp::tiled_shared_bytes::<T>())),
        Rung::Register => Ok(LaunchConfig::for_2d(
            nx,
            ny.div_ceil(kp::REG_RY),
            kp::REG_BX,
            kp::REG_BY,
        )?),
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
    launch_sweep(dev, cfg, rung, (p, b, out), grid.dims(), k, depth)
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
    let sms = dev.as_gpu().map(|g| g.info().sm_count as usize);
    let cfg = residual_config(grid, sms)?;
    launch_residual(dev, cfg, (p, b), &mut *acc, grid.dims(), 1.0 / (h * h))?;
    Ok(dev.download(acc)?[0])
}
