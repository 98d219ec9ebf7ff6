//! One rank's slab on its device: the sweep (overlapped or whole), the halo
//! operations, the edge fix-up and the local residual.

use super::super::launch::{launch_residual, launch_sweep, residual_config, sweep_config};
use super::super::types::{Grid, Rung};
use super::element::SlabElement;
use super::span::{Lane, Span, stream_of};
use super::team::{Member, bind, drv};
use super::transport::{HaloOp, Rows};
use crate::error::{Error, Result};
use crate::runtime::{Buffer, View, ViewMut};

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
            s.b.wait(&s.a_done).map_err(drv("cuStreamWaitEvent"))?;
        }
        if m >= 3 {
            let (pi, bi) = (rows(p, nx, 1, m + 1)?, rows(b, nx, 1, m + 1)?);
            let oi = rows_mut(out, nx, 1, m + 1)?;
            sweep_on(mem, Lane::B, rung, (nx, m), pi, bi, oi, k)?;
        }
        if let Some(s) = &mem.streams {
            s.b_done.record(&s.b).map_err(drv("cuEventRecord"))?;
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

    /// Copies `src` over `dst` (same length) on stream A.
    fn copy(&self, mem: &Member, dst: Span<T>, src: Span<T>) -> Result<()> {
        if dst.len != src.len || dst.overlaps(&src) {
            return Err(Error::input(
                "slab copy",
                "lengths differ or the runs overlap",
            ));
        }
        match &mem.streams {
            Some(s) => {
                bind(&s.a)?;
                // SAFETY: both runs lie in live device buffers of this GPU
                // (`Span::rows` checks) and do not overlap; the copy is queued
                // on A, which the slab runner orders against B with events.
                unsafe {
                    cudarc::driver::result::memcpy_dtod_async(
                        dst.addr,
                        src.addr,
                        src.len * std::mem::size_of::<T>(),
                        s.a.cu_stream(),
                    )
                }
                .map_err(drv("cuMemcpyDtoDAsync"))
            }
            None => {
                // SAFETY: both runs lie in live simulator buffers (host memory
                // of `UnsafeCell` elements) and do not overlap (checked); no
                // simulated launch runs (they are synchronous) and no reference
                // to those cells exists.
                unsafe {
                    std::ptr::copy_nonoverlapping(src.addr as *const T, dst.addr as *mut T, src.len)
                };
                Ok(())
            }
        }
    }

    /// Overlapped sweep, second half: after B, the edge rows go into place.
    /// Both modes: mark the end of the sweep on A and swap the buffers.
    pub(super) fn finish(&mut self, mem: &Member, overlap: bool) -> Result<()> {
        if overlap {
            if let Some(s) = &mem.streams {
                s.a.wait(&s.b_done).map_err(drv("cuStreamWaitEvent"))?;
            }
            let (nx, m) = (self.nx, self.m);
            let out = Span::of(&self.field[1 - self.cur]);
            self.copy(
                mem,
                out.rows(nx, 1, 2)?,
                Span::of(&self.top).rows(nx, 1, 2)?,
            )?;
            if m >= 2 {
                self.copy(
                    mem,
                    out.rows(nx, m, m + 1)?,
                    Span::of(&self.bot).rows(nx, 1, 2)?,
                )?;
            }
        }
        if let Some(s) = &mem.streams {
            s.a_done.record(&s.a).map_err(drv("cuEventRecord"))?;
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
    pub(super) fn set_acc(&self, mem: &Member, v: f64) -> Result<()> {
        let acc = Span::of(&self.acc);
        match &mem.streams {
            Some(s) => {
                bind(&s.a)?;
                // SAFETY: `acc` is the slab's live one-f64 device buffer; the
                // host value is read before the call returns (a pageable
                // source is staged by the driver), and the copy is ordered on A.
                unsafe {
                    cudarc::driver::result::memcpy_htod_async(acc.addr, &[v], s.a.cu_stream())
                }
                .map_err(drv("cuMemcpyHtoDAsync"))
            }
            None => {
                // SAFETY: `acc` is the slab's live one-f64 simulator buffer; no
                // launch runs and no reference to it exists.
                unsafe { (acc.addr as *mut f64).write(v) };
                Ok(())
            }
        }
    }

    /// Reads the accumulator (waits for A on a GPU).
    pub(super) fn get_acc(&self, mem: &Member) -> Result<f64> {
        let acc = Span::of(&self.acc);
        match &mem.streams {
            Some(s) => {
                bind(&s.a)?;
                let mut v = [0.0f64];
                // SAFETY: `acc` is the slab's live one-f64 device buffer and `v`
                // a host array of one f64 that lives until the stream is
                // synchronised just below.
                unsafe {
                    cudarc::driver::result::memcpy_dtoh_async(&mut v, acc.addr, s.a.cu_stream())
                }
                .map_err(drv("cuMemcpyDtoHAsync"))?;
                s.a.synchronize().map_err(drv("cuStreamSynchronize"))?;
                Ok(v[0])
            }
            // SAFETY: as in `set_acc`, for a read.
            None => Ok(unsafe { (acc.addr as *const f64).read() }),
        }
    }
}
