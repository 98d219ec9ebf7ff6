//! One rank's slab on its device: the sweep (overlapped or whole), the halo
//! operations, the edge fix-up and the local residual.

use super::super::launch::sweep_config;
use super::super::types::{Grid, Rung};
use super::element::SlabElement;
use super::span::{Kern, KernR, Lane, Span, gpu_launch, span_params, stream_of};
use super::team::{Member, bind, drv};
use super::transport::{HaloOp, Rows};
use crate::error::{Error, Result};
use crate::runtime::{Buffer, DeviceKind, LaunchConfig, Param, sim_launch};
use kernels_gpu::poisson as kp;

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
    pub(super) sweep: Kern<T>,
    pub(super) resid: KernR<T>,
    pub(super) sms: Option<usize>,
}

impl<T: SlabElement> Slab<T> {
    /// One sweep of the `ny`-row grid `p` into `out` (same shape) on `lane`.
    fn sweep_on(
        &self,
        mem: &Member,
        lane: Lane,
        rung: Rung,
        ny: usize,
        (p, b, out): (Span<T>, Span<T>, Span<T>),
        k: T,
    ) -> Result<()> {
        let nx = self.nx;
        let grid = Grid::new(nx, ny)?;
        if p.len != grid.cells() || b.len != grid.cells() || out.len != grid.cells() {
            return Err(Error::input(
                "slab sweep",
                format!(
                    "views of {} / {} / {} cells for {}",
                    p.len,
                    b.len,
                    out.len,
                    grid.label()
                ),
            ));
        }
        if out.overlaps(&p) || out.overlaps(&b) {
            return Err(Error::input("slab sweep", "the output overlaps an input"));
        }
        let cfg = sweep_config::<T>(rung, grid, 1)?;
        let (nxu, nyu) = (nx as u32, ny as u32);
        match mem.dev.kind() {
            DeviceKind::Sim => {
                let f = self.sweep.sim;
                // SAFETY: the three spans lie in live simulator buffers of this
                // slab (made by `Span::of` and `Span::rows`, which checks the
                // bounds), which outlive this synchronous launch; the output
                // does not overlap the inputs (checked above), and nothing else
                // runs on the slab's buffers during the launch.
                let (pv, bv, ov) = unsafe { (p.sim_ro(), b.sim_ro(), out.sim_rw()) };
                sim_launch(self.sweep.name, &cfg, move || f(pv, bv, ov, nxu, nyu, k))
            }
            DeviceKind::Gpu(g) => {
                let f = self
                    .sweep
                    .gpu
                    .as_ref()
                    .ok_or_else(|| Error::input("slab sweep", "kernel not loaded"))?;
                let mut prm = Vec::with_capacity(9);
                span_params(&p, &mut prm);
                span_params(&b, &mut prm);
                span_params(&out, &mut prm);
                prm.extend([Param::U32(nxu), Param::U32(nyu), k.param()]);
                gpu_launch(g, stream_of(mem, lane)?, f, self.sweep.name, &cfg, &prm)
            }
        }
    }

    fn spans(&self) -> (Span<T>, Span<T>, Span<T>) {
        (
            Span::of(&self.field[self.cur]),
            Span::of(&self.b),
            Span::of(&self.field[1 - self.cur]),
        )
    }

    /// Overlapped sweep, first half: edges on A into the scratch grids,
    /// interior on B into the output.
    pub(super) fn launch_overlap(&self, mem: &Member, rung: Rung, k: T) -> Result<()> {
        let (nx, m) = (self.nx, self.m);
        let (p, b, out) = self.spans();
        let rows = |r0, r1| -> Result<(Span<T>, Span<T>)> {
            Ok((p.rows(nx, r0, r1)?, b.rows(nx, r0, r1)?))
        };
        let (pt, bt) = rows(0, 3)?;
        self.sweep_on(mem, Lane::A, rung, 3, (pt, bt, Span::of(&self.top)), k)?;
        if m >= 2 {
            let (pb, bb) = rows(m - 1, m + 2)?;
            self.sweep_on(mem, Lane::A, rung, 3, (pb, bb, Span::of(&self.bot)), k)?;
        }
        if let Some(s) = &mem.streams {
            s.b.wait(&s.a_done).map_err(drv("cuStreamWaitEvent"))?;
        }
        if m >= 3 {
            let (pi, bi) = rows(1, m + 1)?;
            self.sweep_on(mem, Lane::B, rung, m, (pi, bi, out.rows(nx, 1, m + 1)?), k)?;
        }
        if let Some(s) = &mem.streams {
            s.b_done.record(&s.b).map_err(drv("cuEventRecord"))?;
        }
        Ok(())
    }

    /// Sweep without overlap: the whole slab (halo rows copied) on A.
    pub(super) fn launch_full(&self, mem: &Member, rung: Rung, k: T) -> Result<()> {
        self.sweep_on(mem, Lane::A, rung, self.m + 2, self.spans(), k)
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
    pub(super) fn residual(&self, mem: &Member, h: f64) -> Result<()> {
        let (nx, rows) = (self.nx, self.m + 2);
        let gx = (nx - 2).div_ceil(kp::RES_BLOCK as usize);
        let wanted = self.sms.map_or(4, |s| 8 * s);
        let gy = (rows - 2).min(wanted.div_ceil(gx)).max(1);
        let cfg = LaunchConfig::for_2d(gx * kp::RES_BLOCK as usize, gy, kp::RES_BLOCK, 1)?
            .with_shared(kp::residual_shared_bytes());
        self.set_acc(mem, 0.0)?;
        let (p, b) = (Span::of(&self.field[self.cur]), Span::of(&self.b));
        let acc = Span::of(&self.acc);
        let (nxu, nyu, inv_h2) = (nx as u32, rows as u32, 1.0 / (h * h));
        match mem.dev.kind() {
            DeviceKind::Sim => {
                let f = self.resid.sim;
                // SAFETY: as in `sweep_on`: live simulator buffers of this slab,
                // bounds from `Span::of`; `acc` is a separate buffer.
                let (pv, bv, av) = unsafe { (p.sim_ro(), b.sim_ro(), acc.sim_rw()) };
                sim_launch(self.resid.name, &cfg, move || {
                    f(pv, bv, av, nxu, nyu, inv_h2)
                })
            }
            DeviceKind::Gpu(g) => {
                let f = self
                    .resid
                    .gpu
                    .as_ref()
                    .ok_or_else(|| Error::input("slab residual", "kernel not loaded"))?;
                let mut prm = Vec::with_capacity(9);
                span_params(&p, &mut prm);
                span_params(&b, &mut prm);
                span_params(&acc, &mut prm);
                prm.extend([Param::U32(nxu), Param::U32(nyu), Param::F64(inv_h2)]);
                gpu_launch(g, stream_of(mem, Lane::A)?, f, self.resid.name, &cfg, &prm)
            }
        }
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
