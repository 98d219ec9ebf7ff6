//! The cycle's operations ([`Ops`]) over a team's slabs: smoothing (the
//! tile smoother on a whole stored slab, or red-black half-sweeps), the
//! transfers between levels, and the halo exchanges and all-gathers that
//! keep every rank's rows as one device's would be.

use super::super::super::mg::cycle::{Ops, Smoothing};
use super::super::super::mg::device::DevOps;
use super::super::super::mg::launch::{Exec, MgElement, SlabRows, holds, tile_cfg};
use super::super::super::mg::levels::{MgOptions, Smoother};
use super::super::gather::dtype_of;
use super::super::span::{Lane, stream_of};
use super::super::team::{Member, Team};
use super::super::transport::{Dtype, HaloOp, Rows};
use super::{MgSplit, PlacedMg, SplitLevel};
use kernels_gpu::multigrid::{self as km, Colour};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::Buffer;
use ptxlab_device::mem::DeviceCopy;
use std::ops::Range;

/// The rows of level 0 that rank `r` owns, with the boundary row beside
/// them for the first and the last rank: every row of the field exactly
/// once over the ranks.
pub(super) fn owned_with_boundary(sl: &SplitLevel, r: usize) -> Range<usize> {
    let mut rows = sl.owned(r);
    if rows.start == 1 {
        rows.start = 0;
    }
    if rows.end + 1 == sl.level.ny {
        rows.end = sl.level.ny;
    }
    rows
}

/// The launch target of a member: its stream A (where the transport
/// queues its transfers) on a GPU, the simulator as it is.
pub(super) fn exec(mem: &Member) -> Exec<'_, 'static> {
    Exec::Stream(&mem.dev, stream_of(mem, Lane::A))
}

/// Rows of `buf` (a slab storing global rows from `y0`, `nx` wide) that
/// hold global rows `g`.
pub(super) fn rows_of<'a, E: DeviceCopy>(
    buf: &'a Buffer<E>,
    nx: usize,
    y0: usize,
    g: &Range<usize>,
    dtype: Dtype,
) -> Result<Rows<'a>> {
    Ok(Rows::of(buf, (g.start - y0) * nx, g.len() * nx, dtype)?)
}

pub(super) fn meet(a: &Range<usize>, b: &Range<usize>) -> Range<usize> {
    a.start.max(b.start)..a.end.min(b.end).max(a.start.max(b.start))
}

/// The halo exchange of one split level: every rank receives, from each
/// rank that owns them, the rows within `width` of its own that it stores.
pub(super) fn exchange<E: DeviceCopy>(
    team: &mut Team,
    sl: &SplitLevel,
    bufs: &[(usize, &Buffer<E>)],
    width: usize,
) -> Result<()> {
    let world = sl.starts.len() - 1;
    if world == 1 {
        return Ok(());
    }
    let nx = sl.level.nx;
    let dt = dtype_of::<E>();
    let wanted = |r: usize| {
        let o = sl.owned(r);
        meet(
            &(o.start.saturating_sub(width)..o.end + width),
            &sl.stored(r),
        )
    };
    let mut ops = Vec::new();
    for (i, &(r, buf)) in bufs.iter().enumerate() {
        let y0 = sl.stored(r).start;
        for q in (0..world).filter(|&q| q != r) {
            let get = meet(&sl.owned(q), &wanted(r));
            if !get.is_empty() {
                let rows = rows_of(buf, nx, y0, &get, dt)?;
                ops.push(HaloOp::Recv {
                    local: i,
                    peer: q,
                    rows,
                });
            }
            let give = meet(&sl.owned(r), &wanted(q));
            if !give.is_empty() {
                let rows = rows_of(buf, nx, y0, &give, dt)?;
                ops.push(HaloOp::Send {
                    local: i,
                    peer: q,
                    rows,
                });
            }
        }
    }
    team.transport.exchange(&ops)
}

/// The all-gather of the first replicated level: rank `r` sends the rows
/// `split.gathered(r)` of its copy to every other rank.
pub(super) fn all_gather<E: DeviceCopy>(
    team: &mut Team,
    split: &MgSplit,
    bufs: &[(usize, &Buffer<E>)],
) -> Result<()> {
    let world = split.world();
    if world == 1 {
        return Ok(());
    }
    let nx = split.hier.levels[split.split()].nx;
    let dt = dtype_of::<E>();
    let mut ops = Vec::new();
    for (i, &(r, buf)) in bufs.iter().enumerate() {
        for q in (0..world).filter(|&q| q != r) {
            let get = split.gathered(q);
            if !get.is_empty() {
                let rows = rows_of(buf, nx, 0, &get, dt)?;
                ops.push(HaloOp::Recv {
                    local: i,
                    peer: q,
                    rows,
                });
            }
            let give = split.gathered(r);
            if !give.is_empty() {
                let rows = rows_of(buf, nx, 0, &give, dt)?;
                ops.push(HaloOp::Send {
                    local: i,
                    peer: q,
                    rows,
                });
            }
        }
    }
    team.transport.exchange(&ops)
}

/// [`Ops`] over the team: split levels launch on every slab and exchange
/// halos; replicated levels run the single-device code on every rank.
pub(super) struct TeamOps<'x, 't, T: MgElement> {
    pub(super) placed: &'x mut PlacedMg<'t, T>,
}

impl<T: MgElement> TeamOps<'_, '_, T> {
    fn exchange_u(&mut self, l: usize, width: usize) -> Result<()> {
        let p = &mut *self.placed;
        let bufs: Vec<_> = p.slabs.iter().map(|s| (s.rank, &s.u[l])).collect();
        exchange(p.team, &p.split.levels[l], &bufs, width)
    }
    /// The tile smoother on split level `l`: each rank runs the
    /// single-device kernel ([`km::mg_smooth_tile`], out of place) over its
    /// whole stored slab as a grid of its own, then the halos are exchanged
    /// once. To the launch, the slab's first and last rows are boundary
    /// rows that keep their values from the start of the call, so the rows
    /// within `2 s - 1` of them come out wrong; the halo is at least `2 s`
    /// deep ([`smooth_halo`]), so every
    /// owned row is exact (what `s` sweeps of the whole level give) and the
    /// exchange replaces every wrong row by its owner's. The colours are
    /// the launch's `(x + y) & 1`: flipped when the slab's first row has an
    /// odd global row. The prolongation was added before (a separate
    /// launch: the fused one would place coarse points by local rows).
    fn smooth_tile(
        &mut self,
        l: usize,
        sweeps: u32,
        first: Colour,
        zero: bool,
        omega: f64,
    ) -> Result<()> {
        let p = &mut *self.placed;
        let sl = &p.split.levels[l];
        if sl.halo < 2 * sweeps as usize {
            return Err(Error::input(
                "slab tile smoothing",
                format!(
                    "{sweeps} sweeps need a halo of {} rows; the level stores {}",
                    2 * sweeps,
                    sl.halo
                ),
            ));
        }
        for (slab, mem) in p.slabs.iter_mut().zip(&p.team.members) {
            let sr = sl.slab(slab.rank);
            let part = sr.part(0..sr.rows, 3, "slab tile smoothing")?;
            let grid = part.grid();
            // The slab's edge rows must hold their values at the start of
            // the call: with `dirichlet` the launch loads them from `u_in`
            // (the exchanged halo); from a zero start, they are zero, which
            // is what the launch loads without it.
            let mode = km::TileMode {
                sweeps,
                first: if part.odd() { first.other() } else { first },
                zero,
                prolong: false,
                dirichlet: !zero,
                residual: false,
            };
            let sweep = km::TileSweep {
                level: grid.stencil::<T>(),
                coarse: km::Dims { nx: 0, ny: 0 },
                omega: T::from_f64(omega),
                mode,
            };
            let cfg = tile_cfg::<T>(&grid, mode)?;
            let Some(u_out) = slab.u_tmp.get_mut(l) else {
                return Err(Error::input(
                    "slab tile smoothing",
                    "the slabs were placed for the red-black smoother",
                ));
            };
            let (u_in, f) = (&slab.u[l], &slab.f[l]);
            holds(
                &sr,
                &[("u_in", u_in.len()), ("f", f.len()), ("u_out", u_out.len())],
            )?;
            let mut ex = exec(mem);
            // `uc` is not read without the prolongation: `f` stands in.
            launch!(
                &mut ex,
                cfg,
                multigrid::mg_smooth_tile::<T>(u_in, f, f, &mut *u_out, &mut slab.acc, sweep)
            )?;
            std::mem::swap(&mut slab.u[l], u_out);
        }
        let halo = sl.halo;
        self.exchange_u(l, halo)
    }
    /// Runs `f` on each rank's single-device ops over the replicated levels;
    /// returns the last rank's result (every rank runs the same code on the
    /// same replicated levels).
    fn coarse<R: Default>(
        &mut self,
        mut f: impl FnMut(&mut DevOps<'_, '_, '_, T>) -> Result<R>,
    ) -> Result<R> {
        let p = &mut *self.placed;
        let mut out = R::default();
        for (s, mem) in p.slabs.iter_mut().zip(&p.team.members) {
            let mut ex = exec(mem);
            let mut ops = DevOps {
                ex: &mut ex,
                lv: &mut s.coarse,
                acc: &mut s.acc,
            };
            out = f(&mut ops)?;
        }
        Ok(out)
    }
}

impl<T: MgElement> Ops for TeamOps<'_, '_, T> {
    fn depth(&self) -> usize {
        self.placed.split.hier.depth()
    }
    fn smooth(&mut self, l: usize, step: Smoothing) -> Result<()> {
        let Smoothing {
            sweeps,
            black_first,
            zero,
            prolong,
            omega,
        } = step;
        let d = self.placed.split.split();
        if l >= d {
            return self.coarse(|o| o.smooth(l - d, step));
        }
        if prolong {
            self.prolong(l, true)?;
        }
        let first = Colour::black_if(black_first);
        if self.placed.opts.smoother == Smoother::Tile {
            return self.smooth_tile(l, sweeps, first, zero, omega);
        }
        let halo = self.placed.split.levels[l].halo;
        for s in 0..sweeps {
            for (half, colour) in [first, first.other()].into_iter().enumerate() {
                let p = &mut *self.placed;
                let sl = &p.split.levels[l];
                for (slab, mem) in p.slabs.iter_mut().zip(&p.team.members) {
                    let sr = sl.slab(slab.rank);
                    // The owned rows and one more on each side (read, not
                    // written): at least one row to update between them.
                    let rows = sl.owned_in_slab(slab.rank);
                    let part = sr.part(rows, 3, "slab smoothing")?;
                    let (u, f) = (&mut slab.u[l], &slab.f[l]);
                    // The kernel's colour is (x + y) & 1 in the launch's own
                    // rows: flipped when the first of them has an odd global
                    // row, which keeps the colours those of the whole level.
                    let sweep = km::RbSweep {
                        level: part.grid().stencil::<T>(),
                        omega: T::from_f64(omega),
                        colour: if part.odd() { colour.other() } else { colour },
                        zero: zero && s == 0 && half == 0,
                    };
                    let mut ex = exec(mem);
                    let cfg = ex.rows((sr.level.nx - 1) / 2, part.len() - 2)?;
                    let (uv, fv) = (part.view_mut(u)?, part.view(f)?);
                    launch!(&mut ex, cfg, multigrid::mg_smooth_rb::<T>(uv, fv, sweep))?;
                }
                // The next half-sweep reads one row past each edge; whatever
                // comes after the last (restriction, prolongation, the outer
                // step) reads up to the whole halo.
                let last = s + 1 == sweeps && half == 1;
                self.exchange_u(l, if last { halo } else { 1 })?;
            }
        }
        Ok(())
    }
    fn restrict(&mut self, l: usize, with_u: bool) -> Result<()> {
        let d = self.placed.split.split();
        if l >= d {
            return self.coarse(|o| o.restrict(l - d, with_u));
        }
        let p = &mut *self.placed;
        let fine = &p.split.levels[l];
        for (slab, mem) in p.slabs.iter_mut().zip(&p.team.members) {
            let r = slab.rank;
            let fs = fine.slab(r);
            // The coarse rows this rank restricts, in the coarse slab, or
            // in its copy of the first replicated level.
            let (cs, rows, u, f, fc, uc) = if l + 1 < d {
                let cl = &p.split.levels[l + 1];
                let (cs, o) = (cl.slab(r), cl.owned(r));
                let (uf, uc) = slab.u.split_at_mut(l + 1);
                let (ff, fc) = slab.f.split_at_mut(l + 1);
                let rows = o.start - cs.y0..o.end - cs.y0;
                (cs, rows, &uf[l], &ff[l], &mut fc[0], &mut uc[0])
            } else {
                let cs = SlabRows::whole(p.split.hier.levels[d]);
                let c = slab.coarse.cur[0];
                let (fc, uc) = (&mut slab.coarse.f[0], &mut slab.coarse.u[0][c]);
                (cs, p.split.gathered(r), &slab.u[l], &slab.f[l], fc, uc)
            };
            let part = cs.part(rows, 0, "slab restriction")?;
            if part.is_empty() {
                continue;
            }
            holds(&fs, &[("u", u.len()), ("f", f.len())])?;
            holds(&cs, &[("fc", fc.len()), ("uc", uc.len())])?;
            let restrict = km::Restrict {
                fine: fs.level.stencil::<T>(),
                coarse: cs.level.dims(),
                with_u,
            };
            let s = km::RestrictSlab {
                restrict,
                fine: fs.stored(),
                coarse: part.global(),
            };
            let mut ex = exec(mem);
            let cfg = ex.rows(cs.level.nx, part.len())?;
            let (fcv, ucv) = (part.view_mut(fc)?, part.view_mut(uc)?);
            launch!(
                &mut ex,
                cfg,
                multigrid::mg_restrict_slab::<T>(u, f, fcv, ucv, s)
            )?;
        }
        if l + 1 < d {
            let bufs: Vec<_> = p.slabs.iter().map(|s| (s.rank, &s.f[l + 1])).collect();
            let halo = p.split.levels[l + 1].halo;
            exchange(p.team, &p.split.levels[l + 1], &bufs, halo)
        } else {
            let bufs: Vec<_> = p.slabs.iter().map(|s| (s.rank, &s.coarse.f[0])).collect();
            all_gather(p.team, &p.split, &bufs)?;
            let bufs: Vec<_> = p
                .slabs
                .iter()
                .map(|s| (s.rank, &s.coarse.u[0][s.coarse.cur[0]]))
                .collect();
            all_gather(p.team, &p.split, &bufs)
        }
    }
    fn prolong(&mut self, l: usize, add: bool) -> Result<()> {
        let d = self.placed.split.split();
        if l >= d {
            return self.coarse(|o| o.prolong(l - d, add));
        }
        {
            let p = &mut *self.placed;
            let fine = &p.split.levels[l];
            for (slab, mem) in p.slabs.iter_mut().zip(&p.team.members) {
                let r = slab.rank;
                let fs = fine.slab(r);
                let o = fine.owned(r);
                let part = fs.part(o.start - fs.y0..o.end - fs.y0, 0, "slab prolongation")?;
                // The coarse slab below, or this rank's copy of the first
                // replicated level.
                let (cs, uc, u) = if l + 1 < d {
                    let (uf, uc) = slab.u.split_at_mut(l + 1);
                    (p.split.levels[l + 1].slab(r), &uc[0], &mut uf[l])
                } else {
                    let cs = SlabRows::whole(p.split.hier.levels[d]);
                    (cs, &slab.coarse.u[0][slab.coarse.cur[0]], &mut slab.u[l])
                };
                if part.is_empty() {
                    continue;
                }
                holds(&fs, &[("u", u.len())])?;
                holds(&cs, &[("uc", uc.len())])?;
                let prolong = km::Prolong {
                    fine: fs.level.dims(),
                    coarse: cs.level.dims(),
                    add,
                };
                let s = km::ProlongSlab {
                    prolong,
                    fine: fs.stored(),
                    coarse: cs.stored(),
                    update: part.global(),
                };
                let mut ex = exec(mem);
                let cfg = ex.rows(fs.level.nx - 2, part.len())?;
                launch!(&mut ex, cfg, multigrid::mg_prolong_slab::<T>(uc, u, s))?;
            }
        }
        let halo = self.placed.split.levels[l].halo;
        self.exchange_u(l, halo)
    }
    fn coarse_cycle(&mut self, l: usize, opts: &MgOptions) -> Result<bool> {
        let d = self.placed.split.split();
        if l < d {
            return Ok(false);
        }
        self.coarse(|o| o.coarse_cycle(l - d, opts))
    }
}
