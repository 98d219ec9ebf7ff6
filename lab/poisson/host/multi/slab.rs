//! One rank's slab on its device: the sweep (overlapped or whole), the halo
//! operations, the edge fix-up and the local residual.

use super::super::launch::{launch_residual, launch_sweep, residual_config, sweep_config};
use super::super::types::{Grid, Rung};
use super::element::SlabElement;
use super::span::{Lane, stream_of};
use super::team::Member;
use super::transport::{HaloOp, Rows};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::runtime::{Buffer, View, ViewMut};

/// One rank's slab on its device.
pub(super) struct Slab<T> {
    pub(super) rank: usize,
    pub(super) m: usize,
    pub(super) nx: usize,
    pub(super) field: [Buffer<T>; 2],
    pub(super) cur: usize,
    pub(super) b: Buffer<T>,
    pub(super) top: Buffer<T>,
    pub(super) bot: Buffer<T>,
    pub(super) acc: Buffer<f64>,
    pub(super) sms: Option<usize>,
}

/// Rows `r0 .. r1` of a row-major buffer of width `nx`, as a kernel argument.
fn rows<T>(buf: &Buffer<T>, nx: usize, r0: usize, r1: usize) -> Result<View<'_, T>> {
    Ok(buf.view(r0 * nx..r1 * nx)?)
}

/// Rows `r0 .. r1` of a row-major buffer of width `nx`, writable.
fn rows_mut<T>(buf: &mut Buffer<T>, nx: usize, r0: usize, r1: usize) -> Result<ViewMut<'_, T>> {
    Ok(buf.view_mut(r0 * nx..r1 * nx)?)
}

/// One sweep of the `ny`-row grid `p` into `out` (views of `nx * ny` cells)
/// on `lane` of `mem`'s device.
#[allow(clippy::too_many_arguments)]
fn sweep_on<T: SlabElement>(
    mem: &Member,
    lane: Lane,
    rung: Rung,
    (nx, ny): (usize, usize),
    p: View<'_, T>,
    b: View<'_, T>,
    out: ViewMut<'_, T>,
    k: T,
) -> Result<()> {
    let grid = Grid::new(nx, ny)?;
    if p.len() != grid.cells() || b.len() != grid.cells() || out.len() != grid.cells() {
        return Err(Error::input(
            "slab sweep",
            format!(
                "views of {} / {} / {} cells for {}",
                p.len(),
                b.len(),
                out.len(),
                grid.label()
            ),
        ));
    }
    let cfg = sweep_config::<T>(rung, grid, 1)?;
    let target = mem.dev.on_stream(stream_of(mem, lane));
    launch_sweep(target, cfg, rung, (p, b, out), grid.dims(), k, 1)
}

impl<T: SlabElement> Slab<T> {
    /// Overlapped sweep, first half: edges on A into the scratch grids,
    /// interior on B into the output.
    pub(super) fn launch_overlap(&mut self, mem: &Member, rung: Rung, k: T) -> Result<()> {
        let (nx, m) = (self.nx, self.m);
        let [f0, f1] = &mut self.field;
        let (p, out) = if self.cur == 0 {
            (&*f0, f1)
        } else {
            (&*f1, f0)
        };
        let b = &self.b;
        let top = rows_mut(&mut self.top, nx, 0, 3)?;
        sweep_on(
            mem,
            Lane::A,
            rung,
            (nx, 3),
            rows(p, nx, 0, 3)?,
            rows(b, nx, 0, 3)?,
            top,
            k,
        )?;
        if m >= 2 {
            let (pb, bb) = (rows(p, nx, m - 1, m + 2)?, rows(b, nx, m - 1, m + 2)?);
            let bot = rows_mut(&mut self.bot, nx, 0, 3)?;
            sweep_on(mem, Lane::A, rung, (nx, 3), pb, bb, bot, k)?;
        }
        if let Some(s) = &mem.streams {
            s.b.wait(&s.a_done)?;
        }
        if m >= 3 {
            let (pi, bi) = (rows(p, nx, 1, m + 1)?, rows(b, nx, 1, m + 1)?);
            let oi = rows_mut(out, nx, 1, m + 1)?;
            sweep_on(mem, Lane::B, rung, (nx, m), pi, bi, oi, k)?;
        }
        if let Some(s) = &mem.streams {
            s.b_done.record(&s.b)?;
        }
        Ok(())
    }

    /// Sweep without overlap: the whole slab (halo rows copied) on A.
    pub(super) fn launch_full(&mut self, mem: &Member, rung: Rung, k: T) -> Result<()> {
        let (nx, ny) = (self.nx, self.m + 2);
        let [f0, f1] = &mut self.field;
        let (p, out) = if self.cur == 0 {
            (&*f0, f1)
        } else {
            (&*f1, f0)
        };
        let (pv, bv) = (rows(p, nx, 0, ny)?, rows(&self.b, nx, 0, ny)?);
        sweep_on(
            mem,
            Lane::A,
            rung,
            (nx, ny),
            pv,
            bv,
            rows_mut(out, nx, 0, ny)?,
            k,
        )
    }

    /// The sends and receives of this slab (local index `i`) for this sweep.
    pub(super) fn halo_ops<'a>(
        &'a self,
        i: usize,
        world: usize,
        overlap: bool,
        ops: &mut Vec<HaloOp<'a>>,
    ) -> Result<()> {
        let (nx, m, r) = (self.nx, self.m, self.rank);
        let out = &self.field[1 - self.cur];
        let row = |buf: &'a Buffer<T>, y: usize| Rows::of(buf, y * nx, nx, T::DTYPE);
        let (up, down) = if overlap {
            let edge_bot = if m >= 2 { &self.bot } else { &self.top };
            (row(&self.top, 1)?, row(edge_bot, 1)?)
        } else {
            (row(out, 1)?, row(out, m)?)
        };
        if r > 0 {
            ops.push(HaloOp::Send {
                local: i,
                peer: r - 1,
                rows: up,
            });
            ops.push(HaloOp::Recv {
                local: i,
                peer: r - 1,
                rows: row(out, 0)?,
            });
        }
        if r + 1 < world {
            ops.push(HaloOp::Send {
                local: i,
                peer: r + 1,
                rows: down,
            });
            ops.push(HaloOp::Recv {
                local: i,
                peer: r + 1,
                rows: row(out, m + 1)?,
            });
        }
        Ok(())
    }

    /// Overlapped sweep, second half: after B, the edge rows go into place
    /// (copies on A). Both modes: mark the end of the sweep on A and swap
    /// the buffers.
    pub(super) fn finish(&mut self, mem: &Member, overlap: bool) -> Result<()> {
        if overlap {
            if let Some(s) = &mem.streams {
                s.a.wait(&s.b_done)?;
            }
            let (nx, m) = (self.nx, self.m);
            let target = mem.dev.on_stream(stream_of(mem, Lane::A));
            let out = &mut self.field[1 - self.cur];
            target.copy(rows(&self.top, nx, 1, 2)?, rows_mut(out, nx, 1, 2)?)?;
            if m >= 2 {
                target.copy(rows(&self.bot, nx, 1, 2)?, rows_mut(out, nx, m, m + 1)?)?;
            }
        }
        if let Some(s) = &mem.streams {
            s.a_done.record(&s.a)?;
        }
        self.cur = 1 - self.cur;
        Ok(())
    }

    /// Queues the local residual sum into `acc` (zeroed first) on A.
    pub(super) fn residual(&mut self, mem: &Member, h: f64) -> Result<()> {
        let grid = Grid::new(self.nx, self.m + 2)?;
        let cfg = residual_config(grid, self.sms)?;
        self.set_acc(mem, 0.0)?;
        let target = mem.dev.on_stream(stream_of(mem, Lane::A));
        let p = &self.field[self.cur];
        launch_residual(
            target,
            cfg,
            (p, &self.b),
            &mut self.acc,
            grid.dims(),
            1.0 / (h * h),
        )
    }

    /// Writes the accumulator (queued on A for a GPU).
    pub(super) fn set_acc(&mut self, mem: &Member, v: f64) -> Result<()> {
        let target = mem.dev.on_stream(stream_of(mem, Lane::A));
        Ok(target.write(&[v], self.acc.view_mut(0..1)?)?)
    }

    /// Reads the accumulator (waits for A on a GPU).
    pub(super) fn get_acc(&self, mem: &Member) -> Result<f64> {
        let mut v = [0.0f64];
        let target = mem.dev.on_stream(stream_of(mem, Lane::A));
        target.read(self.acc.view(0..1)?, &mut v)?;
        Ok(v[0])
    }
}
