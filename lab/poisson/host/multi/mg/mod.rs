//! Multigrid and PCG on a [`Team`]: the finest levels split into row slabs
//! (one per rank, with halo rows), the coarse levels replicated on every
//! rank. The cycle is [`crate::mg::cycle`]'s, driven
//! through its [`Ops`](crate::mg::cycle::Ops) over the
//! team (`ops.rs`), so it does what one device does, in the same order;
//! PCG wraps one V-cycle of it in one device's CG iteration;
//! see the module docs of [`super`] for the schedule.

use super::super::mg::cycle::{cycle, visit};
use super::super::mg::device::LevelBufs;
use super::super::mg::launch::{MgElement, SlabRows, check_scalars, clear, slots_cfg};
use super::super::mg::levels::{Hierarchy, Level, Method, MgOptions, Smoother};
use super::super::mg::outer::cycles_to_tolerance;
use super::super::mg::report::MgReport;
use super::super::types::Grid;
use super::decomp::Decomp;
use super::gather::Share;
use super::team::Team;
use super::transport::{Dtype, Rows};
use kernels_gpu::multigrid::{self as km, coarse_pos, fine_range, slot};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::Buffer;
use std::ops::Range;

mod ops;

use ops::{TeamOps, exchange, exec, owned_with_boundary};

/// Rows per rank below which a level is no longer split on GPUs: from there
/// down every rank runs the coarse levels on its own copy (their halo
/// exchanges would cost more than the work they split).
pub const MIN_ROWS_GPU: usize = 256;

/// One split level: the rows each rank owns and the halo rows it stores
/// beyond them on each side (clipped to the level).
#[derive(Debug, Clone, PartialEq)]
pub struct SplitLevel {
    /// The whole level.
    pub level: Level,
    starts: Vec<usize>,
    halo: usize,
}

impl SplitLevel {
    /// Global rows rank `r` owns (updates).
    pub fn owned(&self, r: usize) -> Range<usize> {
        self.starts[r]..self.starts[r + 1]
    }
    /// Rank `r`'s owned rows and one more on each side (read, not
    /// written), as rows of its slab (`slab(r)`, counted from its `y0`).
    pub(super) fn owned_in_slab(&self, r: usize) -> Range<usize> {
        let (o, y0) = (self.owned(r), self.stored(r).start);
        o.start - 1 - y0..o.end + 1 - y0
    }
    /// Global rows rank `r` stores: its own and up to `halo` more per side.
    pub fn stored(&self, r: usize) -> Range<usize> {
        let o = self.owned(r);
        o.start.saturating_sub(self.halo)..(o.end + self.halo).min(self.level.ny)
    }
    /// Halo rows per side.
    pub fn halo(&self) -> usize {
        self.halo
    }
    fn slab(&self, r: usize) -> SlabRows {
        let s = self.stored(r);
        SlabRows {
            level: self.level,
            y0: s.start,
            rows: s.end - s.start,
        }
    }
}

/// The coarse level's rows a rank owns, from the fine level's: coarse row
/// `J` belongs to the rank whose fine rows contain its position
/// `J (nf - 1) / (nc - 1)` (rounded up), so its restriction stencil lies
/// around rows the rank has.
fn coarse_starts(fine: &Level, coarse: &Level, starts: &[usize]) -> Vec<usize> {
    let (num, den) = (coarse.ny - 1, fine.ny - 1);
    let world = starts.len() - 1;
    let mut out = vec![1];
    for &s in &starts[1..world] {
        let c = (s * num).div_ceil(den).clamp(1, coarse.ny - 1);
        out.push(c.max(*out.last().unwrap_or(&1)));
    }
    out.push(coarse.ny - 1);
    out
}

/// How the hierarchy of a grid is spread over a team: levels `0..split`
/// in row slabs, levels `split..` replicated on every rank (filled by an
/// all-gather of the restriction's rows; `gather` says which rows of level
/// `split` each rank restricts).
#[derive(Debug, Clone, PartialEq)]
pub struct MgSplit {
    /// The global hierarchy.
    pub hier: Hierarchy,
    /// The split levels, finest first.
    pub levels: Vec<SplitLevel>,
    gather: Vec<usize>,
}

impl MgSplit {
    /// Splits the hierarchy of `grid` (spacing `h`) over `world` ranks: the
    /// finest level as [`Decomp`] deals it (each rank needs a row), each
    /// coarser one while every rank keeps at least `min_rows` rows of it;
    /// the coarsest level is always replicated. Halos are as wide as the
    /// restriction and the prolongation read, and at least `smooth_halo`
    /// rows (what one smoothing call reads past the owned rows:
    /// [`smooth_halo`]).
    pub fn new(
        grid: Grid,
        h: f64,
        world: usize,
        min_rows: usize,
        smooth_halo: usize,
    ) -> Result<Self> {
        let hier = Hierarchy::new(grid, h)?;
        if hier.depth() < 2 {
            return Err(Error::input(
                "grid",
                format!(
                    "{}: one interior point is one level, nothing to split; use one device",
                    grid.label()
                ),
            ));
        }
        let d = Decomp::new(grid, world)?;
        let mut starts: Vec<Vec<usize>> = vec![(0..world).map(|r| d.owned(r).start).collect()];
        starts[0].push(grid.ny - 1);
        let mut split = 1;
        loop {
            let l = split - 1;
            let next = coarse_starts(&hier.levels[l], &hier.levels[l + 1], &starts[l]);
            let min = next.windows(2).map(|w| w[1] - w[0]).min().unwrap_or(0);
            let keep = split + 1 < hier.depth() && min >= min_rows.max(1);
            starts.push(next);
            if !keep {
                break;
            }
            split += 1;
        }
        let gather = starts.pop().unwrap_or_default();
        // Halos: every row each rank's own work reads, on its level.
        let mut halo = vec![smooth_halo.max(1); split];
        let need = |l: usize, r: usize, lo: usize, hi: usize, halo: &mut Vec<usize>| {
            if l < split {
                let (s, e) = (starts[l][r], starts[l][r + 1]);
                halo[l] = halo[l].max(s.saturating_sub(lo)).max(hi.saturating_sub(e));
            }
        };
        for l in 0..split {
            let (f, c) = (hier.levels[l], hier.levels[l + 1]);
            let (num, den) = ((c.ny - 1) as u32, (f.ny - 1) as u32);
            let cs = if l + 1 < split {
                &starts[l + 1]
            } else {
                &gather
            };
            for r in 0..world {
                // Restriction: the fine rows of each owned coarse row's
                // stencil, and their neighbours.
                for cj in cs[r]..cs[r + 1] {
                    if cj == 0 || cj + 1 >= c.ny {
                        continue;
                    }
                    let (lo, hi) = fine_range(cj as u32, num, den);
                    need(l, r, lo as usize - 1, hi as usize + 2, &mut halo);
                }
                // Prolongation: the coarse rows around each owned fine row.
                for y in starts[l][r]..starts[l][r + 1] {
                    let (j0, _) = coarse_pos::<f64>(y as u32, num, den);
                    need(l + 1, r, j0 as usize, j0 as usize + 2, &mut halo);
                }
            }
        }
        let levels = (0..split)
            .map(|l| SplitLevel {
                level: hier.levels[l],
                starts: starts[l].clone(),
                halo: halo[l],
            })
            .collect();
        Ok(Self {
            hier,
            levels,
            gather,
        })
    }
    /// Levels split into slabs (the rest are replicated).
    pub fn split(&self) -> usize {
        self.levels.len()
    }
    /// Ranks.
    pub fn world(&self) -> usize {
        self.gather.len() - 1
    }
    /// Rows of the first replicated level that rank `r` restricts (and
    /// sends to every other rank).
    pub fn gathered(&self, r: usize) -> Range<usize> {
        self.gather[r]..self.gather[r + 1]
    }
    /// The levels below the split, as a hierarchy of their own.
    fn coarse_hier(&self) -> Hierarchy {
        Hierarchy {
            levels: self.hier.levels[self.split()..].to_vec(),
            h: self.hier.h,
        }
    }
    /// One line per split level: rows per rank and halo, then where the
    /// levels are replicated.
    pub fn describe(&self) -> String {
        let mut s: Vec<String> = self
            .levels
            .iter()
            .enumerate()
            .map(|(l, sl)| {
                format!(
                    "level {l} {}x{}: rows per rank {} (halo {})",
                    sl.level.nx,
                    sl.level.ny,
                    (0..self.world())
                        .map(|r| sl.owned(r).len().to_string())
                        .collect::<Vec<_>>()
                        .join("/"),
                    sl.halo
                )
            })
            .collect();
        let c = &self.hier.levels[self.split()..];
        s.push(format!(
            "levels {}..{} ({} and coarser) replicated on every rank",
            self.split(),
            self.hier.depth(),
            c.first()
                .map(|l| format!("{}x{}", l.nx, l.ny))
                .unwrap_or_default()
        ));
        s.join("; ")
    }
}

/// One rank's part of a multigrid solve on its device.
struct MgSlab<T> {
    rank: usize,
    /// Correction and right-hand side of each split level (slabs).
    u: Vec<Buffer<T>>,
    f: Vec<Buffer<T>>,
    /// The tile smoother's output slab of each split level (swapped with
    /// `u` after each launch; empty with the red-black smoother).
    u_tmp: Vec<Buffer<T>>,
    /// The replicated levels.
    coarse: LevelBufs<T>,
    /// The field (ping-pong), `b` and the residual's sum, on level 0's slab.
    p: [Buffer<f64>; 2],
    b: Buffer<f64>,
    acc: Buffer<f64>,
    /// The field's initial rows, for a new solve.
    p0: Vec<f64>,
    /// PCG's arrays (level 0's slab), or `None` for multigrid.
    cg: Option<CgSlab>,
}

/// One rank's PCG arrays on level 0's slab (f64): the residual `rho`, the
/// directions (ping-pong, like one device's), `q = lap d`, and the scalars
/// ([`slot`]), whose sums are all-reduced slot by slot.
struct CgSlab {
    rho: Buffer<f64>,
    d: [Buffer<f64>; 2],
    q: Buffer<f64>,
    s: Buffer<f64>,
}

/// A multigrid solve placed on a team.
pub struct PlacedMg<'t, T: MgElement> {
    team: &'t mut Team,
    split: MgSplit,
    slabs: Vec<MgSlab<T>>,
    opts: MgOptions,
    b_sq: f64,
    r_scale: f64,
    pc: usize,
}

impl<T: MgElement> std::fmt::Debug for PlacedMg<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlacedMg")
            .field("split", &self.split)
            .field("opts", &self.opts)
            .finish()
    }
}

impl<T: MgElement> Drop for PlacedMg<'_, T> {
    fn drop(&mut self) {
        // Frees go through the default stream, which does not wait for A.
        let _ = self.synchronize();
    }
}

/// Refuses what the slabs cannot run, naming what they can: the slabs run
/// every option one device runs (the sweep counts [`MgOptions::validate`]
/// bounds are the tile smoother's too).
pub fn check_options(opts: &MgOptions) -> Result<()> {
    opts.validate()
}

/// The options a team runs for `opts`: the same cycle, with the outer step
/// on the finest level (the slabs hold a correction there, never the field:
/// [`MgOptions::field_on_fine`] is off). A single-device solve with these
/// options does the team's arithmetic in the team's order.
pub fn team_options(opts: &MgOptions) -> MgOptions {
    MgOptions {
        field_on_fine: false,
        ..*opts
    }
}

/// Rows past its owned ones that one smoothing call of a split level reads
/// and makes stale, per side: one for a red-black half-sweep (each is
/// followed by an exchange); `2 s` for the tile smoother's `s` sweeps in
/// one launch, since each half-sweep carries the error of the slab's edge
/// (a boundary row to the launch, never updated) one row further in.
pub fn smooth_halo(opts: &MgOptions) -> usize {
    match opts.smoother {
        Smoother::RedBlack => 1,
        Smoother::Tile => 2 * opts.pre.max(opts.post).max(1) as usize,
    }
}

impl Team {
    /// Puts a multigrid solve on the team: `b` and `p0` (f64, the whole
    /// grid, row-major) are cut into level 0's slabs, the split levels get
    /// their slabs and every rank the replicated levels. `min_rows`: the
    /// fewest rows per rank a level below the finest is still split with
    /// ([`MIN_ROWS_GPU`] on GPUs).
    pub fn place_mg<T: MgElement>(
        &mut self,
        grid: Grid,
        h: f64,
        b: &[f64],
        p0: &[f64],
        opts: &MgOptions,
        min_rows: usize,
    ) -> Result<PlacedMg<'_, T>> {
        check_options(opts)?;
        let opts = &team_options(opts);
        for (n, v) in [("b", b), ("p0", p0)] {
            if v.len() != grid.cells() {
                return Err(Error::input(
                    n,
                    format!("{} values for the grid {}", v.len(), grid.label()),
                ));
            }
        }
        let split = MgSplit::new(grid, h, self.world_size(), min_rows, smooth_halo(opts))?;
        let b_sq = super::super::cpu::interior_norm_sq(b, grid);
        let interior = ((grid.nx - 2) * (grid.ny - 2)) as f64;
        let rms = (b_sq / interior).sqrt();
        let r_scale = if std::mem::size_of::<T>() == 4 && rms > 0.0 && rms.is_finite() {
            1.0 / rms
        } else {
            1.0
        };
        let coarse_hier = split.coarse_hier();
        let nx = grid.nx;
        let mut slabs = Vec::with_capacity(self.members.len());
        for mem in &self.members {
            let r = mem.rank;
            let dev = &mem.dev;
            let mut u = Vec::new();
            let mut f = Vec::new();
            let mut u_tmp = Vec::new();
            for sl in &split.levels {
                let cells = sl.slab(r).cells_count();
                u.push(dev.alloc_filled(cells, T::ZERO)?);
                f.push(dev.alloc_filled(cells, T::ZERO)?);
                if opts.smoother == Smoother::Tile {
                    u_tmp.push(dev.alloc_filled(cells, T::ZERO)?);
                }
            }
            let s0 = split.levels[0].stored(r);
            let span = s0.start * nx..s0.end * nx;
            let p0s = p0[span.clone()].to_vec();
            let n = p0s.len();
            let cg = if opts.method == Method::Pcg {
                Some(CgSlab {
                    rho: dev.alloc_filled(n, f64::NAN)?,
                    d: [dev.alloc_filled(n, 0.0)?, dev.alloc_filled(n, f64::NAN)?],
                    q: dev.alloc_filled(n, f64::NAN)?,
                    s: dev.alloc_filled(slot::COUNT, 0.0)?,
                })
            } else {
                None
            };
            slabs.push(MgSlab {
                rank: r,
                u,
                f,
                u_tmp,
                coarse: LevelBufs::new(dev, &coarse_hier, opts.smoother, false)?,
                p: [dev.upload(&p0s)?, dev.upload(&p0s)?],
                b: dev.upload(&b[span])?,
                acc: dev.alloc_filled(1, 0.0f64)?,
                p0: p0s,
                cg,
            });
            // The uploads went through the default stream: finish them
            // before stream A uses the buffers.
            dev.synchronize()?;
        }
        Ok(PlacedMg {
            team: self,
            split,
            slabs,
            opts: *opts,
            b_sq,
            r_scale,
            pc: 0,
        })
    }
}

impl SlabRows {
    fn cells_count(&self) -> usize {
        self.level.nx * self.rows
    }
}

impl<'t, T: MgElement> PlacedMg<'t, T> {
    /// How the levels are spread.
    pub fn split(&self) -> &MgSplit {
        &self.split
    }
    /// The team.
    pub fn team(&self) -> &Team {
        self.team
    }
    /// Waits for all queued work of this process's devices.
    pub fn synchronize(&self) -> Result<()> {
        self.team.synchronize()
    }

    /// The outer step on every slab: `p_out = p_in + e_scale u0`, level 0's
    /// right-hand side `r = b - lap p_out`, and `||r||^2` summed over ranks.
    fn defect(&mut self, e_scale: f64) -> Result<f64> {
        let (pc, h, rs) = (self.pc, self.split.hier.h, self.r_scale);
        let sl = &self.split.levels[0];
        for (s, mem) in self.slabs.iter_mut().zip(&self.team.members) {
            let mut ex = exec(mem);
            clear(&mut ex, &mut s.acc)?;
            let sr = sl.slab(s.rank);
            let rows = sl.owned_in_slab(s.rank);
            let (a, b) = s.p.split_at_mut(1);
            let (p_in, p_out) = if pc == 0 {
                (&a[0], &mut b[0])
            } else {
                (&b[0], &mut a[0])
            };
            let part = sr.part(rows, 3, "slab defect")?;
            let (e, b, f0) = (&s.u[0], &s.b, &mut s.f[0]);
            let step = km::DefectStep {
                fine: part.fine(h),
                e_scale,
                r_scale: rs,
            };
            let cfg = ex.reduce_rows(sr.level.nx, part.len())?;
            let (pi, ev, bv) = (part.view(p_in)?, part.view(e)?, part.view(b)?);
            let (po, rv) = (part.view_mut(p_out)?, part.view_mut(f0)?);
            launch!(
                &mut ex,
                cfg,
                multigrid::mg_defect_slab::<T>(pi, ev, bv, po, rv, &mut s.acc, step)
            )?;
        }
        self.pc = 1 - pc;
        let halo = sl.halo;
        let bufs: Vec<_> = self.slabs.iter().map(|s| (s.rank, &s.f[0])).collect();
        exchange(self.team, sl, &bufs, halo)?;
        self.sum_accs()
    }

    fn sum_accs(&mut self) -> Result<f64> {
        {
            let accs = self
                .slabs
                .iter()
                .map(|s| Rows::of(&s.acc, 0, 1, Dtype::F64))
                .collect::<ptxlab_common::runtime::Result<Vec<_>>>()?;
            self.team.transport.all_reduce_sum(&accs)?;
        }
        let (Some(s), Some(m)) = (self.slabs.first(), self.team.members.first()) else {
            return Err(Error::input("team", "no device"));
        };
        m.synchronize()?;
        let v = m.dev.download(&s.acc)?;
        v.first()
            .copied()
            .ok_or_else(|| Error::input("residual", "an empty device buffer"))
    }

    /// Sums slot `i` of every rank's PCG scalars over the ranks (each gets
    /// the total).
    fn all_reduce_slot(&mut self, i: usize) -> Result<()> {
        let rows = self
            .slabs
            .iter()
            .map(|s| match &s.cg {
                Some(cg) => Ok(Rows::of(&cg.s, i, 1, Dtype::F64)?),
                None => Err(Error::input("PCG", "the slabs were not set up for PCG")),
            })
            .collect::<Result<Vec<_>>>()?;
        self.team.transport.all_reduce_sum(&rows)
    }

    /// The halo of level 0's right-hand side (the residual the next
    /// V-cycle starts from), as wide as the cycle reads.
    fn exchange_f0(&mut self) -> Result<()> {
        let sl = &self.split.levels[0];
        let bufs: Vec<_> = self.slabs.iter().map(|s| (s.rank, &s.f[0])).collect();
        exchange(self.team, sl, &bufs, sl.halo)
    }

    /// PCG's start on every slab: `rho = b - lap p0` and level 0's
    /// right-hand side `r = rho r_scale` on the owned rows (one device's
    /// [`super::super::mg::MgDevice`] start, slab by slab), the halo of `r`
    /// exchanged, `||rho||^2` summed over ranks.
    fn pcg_start(&mut self) -> Result<f64> {
        let (h, rs) = (self.split.hier.h, self.r_scale);
        let sl = &self.split.levels[0];
        for (s, mem) in self.slabs.iter_mut().zip(&self.team.members) {
            let mut ex = exec(mem);
            clear(&mut ex, &mut s.acc)?;
            let sr = sl.slab(s.rank);
            let rows = sl.owned_in_slab(s.rank);
            let cg =
                s.cg.as_mut()
                    .ok_or_else(|| Error::input("PCG", "no residual buffer"))?;
            // The owned rows and one more on each side, which are read
            // (their rho and r are set to 0, as the kernel does on its
            // launch's edge rows); the owned rows get the single-device
            // arithmetic, in its order.
            let part = sr.part(rows, 3, "slab residual")?;
            let (p, b, r) = (&s.p[0], &s.b, &mut s.f[0]);
            let cfg = ex.reduce_rows(sr.level.nx, part.len())?;
            let (pv, bv) = (part.view(p)?, part.view(b)?);
            let (rhov, rv) = (part.view_mut(&mut cg.rho)?, part.view_mut(r)?);
            let fine = part.grid().fine(h);
            launch!(
                &mut ex,
                cfg,
                multigrid::mg_residual::<T>(pv, bv, rhov, rv, &mut s.acc, fine, rs)
            )?;
        }
        self.exchange_f0()?;
        self.sum_accs()
    }

    /// PCG iteration `k` on every slab, in one device's order: shift the
    /// scalars; `z` = one V-cycle of the team from a zero correction on `r`;
    /// `gamma = <rho, z>` (each rank's owned rows, then all-reduced); the
    /// direction `d = z + beta d` on the owned rows and one per side, `q =
    /// lap d` and `<d, q>` on the owned rows (all-reduced); the update of
    /// `p`, `rho` and `r` on the owned rows and `||rho||^2` (all-reduced);
    /// the halo of `r` for the next cycle. Returns `||rho||^2`.
    fn pcg_step(&mut self, k: usize) -> Result<f64> {
        let (h, rs) = (self.split.hier.h, self.r_scale);
        let zs = 1.0 / rs;
        for (s, mem) in self.slabs.iter_mut().zip(&self.team.members) {
            s.coarse.cur.iter_mut().for_each(|c| *c = 0);
            let cg =
                s.cg.as_mut()
                    .ok_or_else(|| Error::input("PCG", "the slabs were not set up for PCG"))?;
            check_scalars(&cg.s)?;
            launch!(
                &mut exec(mem),
                slots_cfg(1)?,
                multigrid::mg_cg_shift(&mut cg.s)
            )?;
        }
        let opts = self.opts;
        visit(&mut TeamOps { placed: self }, &opts, 0, true)?;
        let sl = self.split.levels[0].clone();
        let nx = sl.level.nx;
        let no_cg = || Error::input("PCG", "the slabs were not set up for PCG");
        for (s, mem) in self.slabs.iter_mut().zip(&self.team.members) {
            let (sr, o) = (sl.slab(s.rank), sl.owned(s.rank));
            let span = (o.start - sr.y0) * nx..(o.end - sr.y0) * nx;
            let cg = s.cg.as_mut().ok_or_else(no_cg)?;
            let mut ex = exec(mem);
            let cfg = ex.reduce_flat(span.len())?;
            let (rv, zv) = (cg.rho.view(span.clone())?, s.u[0].view(span)?);
            launch!(
                &mut ex,
                cfg,
                multigrid::mg_cg_dot::<T>(rv, zv, &mut cg.s, zs)
            )?;
        }
        self.all_reduce_slot(slot::GAMMA)?;
        for (s, mem) in self.slabs.iter_mut().zip(&self.team.members) {
            let (sr, rows) = (sl.slab(s.rank), sl.owned_in_slab(s.rank));
            let cg = s.cg.as_mut().ok_or_else(no_cg)?;
            let (a, bb) = cg.d.split_at_mut(1);
            let (d_in, d_out) = if k.is_multiple_of(2) {
                (&a[0], &mut bb[0])
            } else {
                (&bb[0], &mut a[0])
            };
            let part = sr.part(rows, 3, "slab PCG direction")?;
            let (z, q) = (&s.u[0], &mut cg.q);
            let mut ex = exec(mem);
            let cfg = ex.reduce_rows(sr.level.nx, part.len())?;
            let (zv, di) = (part.view(z)?, part.view(d_in)?);
            let (dov, qv) = (part.view_mut(d_out)?, part.view_mut(q)?);
            let at = part.fine(h);
            launch!(
                &mut ex,
                cfg,
                multigrid::mg_cg_dir_slab::<T>(zv, di, dov, qv, &mut cg.s, at, zs)
            )?;
        }
        self.all_reduce_slot(slot::DQ)?;
        for (s, mem) in self.slabs.iter_mut().zip(&self.team.members) {
            let (sr, o) = (sl.slab(s.rank), sl.owned(s.rank));
            let span = (o.start - sr.y0) * nx..(o.end - sr.y0) * nx;
            let cg = s.cg.as_mut().ok_or_else(no_cg)?;
            let d = &cg.d[(k + 1) % 2];
            let (p, r) = (&mut s.p[0], &mut s.f[0]);
            let mut ex = exec(mem);
            let cfg = ex.reduce_flat(span.len())?;
            let (pv, rhov) = (p.view_mut(span.clone())?, cg.rho.view_mut(span.clone())?);
            let (rv, dv, qv) = (
                r.view_mut(span.clone())?,
                d.view(span.clone())?,
                cg.q.view(span)?,
            );
            launch!(
                &mut ex,
                cfg,
                multigrid::mg_cg_update::<T>(pv, rhov, rv, dv, qv, &mut cg.s, rs)
            )?;
        }
        self.all_reduce_slot(slot::RHO2)?;
        self.exchange_f0()?;
        let (Some(s), Some(m)) = (self.slabs.first(), self.team.members.first()) else {
            return Err(Error::input("team", "no device"));
        };
        m.synchronize()?;
        let cg = s.cg.as_ref().ok_or_else(no_cg)?;
        Ok(m.dev.download(&cg.s)?[slot::RHO2])
    }

    fn step(&mut self, k: usize) -> Result<f64> {
        for s in &mut self.slabs {
            s.coarse.cur.iter_mut().for_each(|c| *c = 0);
        }
        let opts = self.opts;
        cycle(&mut TeamOps { placed: self }, &opts, k)?;
        self.defect(1.0 / self.r_scale)
    }

    /// Solves from the initial field (reset first, so a placed solve can
    /// run several times) to the tolerance or the most cycles: the loop of
    /// the single-device solver ([`crate::mg::MgDevice::solve`]).
    pub fn solve(&mut self) -> Result<MgReport> {
        for (s, mem) in self.slabs.iter_mut().zip(&self.team.members) {
            mem.synchronize()?;
            mem.dev.write(&mut s.p[0], &s.p0)?;
            if let Some(cg) = &mut s.cg {
                mem.dev.write(&mut cg.d[0], &vec![0.0; s.p0.len()])?;
                mem.dev.write(&mut cg.s, &[0.0; slot::COUNT])?;
            }
            mem.dev.synchronize()?;
        }
        self.pc = 0;
        // With one process per GPU the ranks arrive here at different times
        // (each ran its own reference solve first): meet before the clock
        // starts, so the solve's time is not the wait for the slowest rank.
        // The all-reduced value is discarded (both starts clear `acc`).
        if self.slabs.len() != self.split.world() {
            self.sum_accs()?;
        }
        let (opts, b_sq) = (self.opts, self.b_sq);
        match opts.method {
            Method::Multigrid => {
                cycles_to_tolerance(self, &opts, b_sq, |p| p.defect(0.0), |p, k| p.step(k))
            }
            Method::Pcg => {
                cycles_to_tolerance(self, &opts, b_sq, |p| p.pcg_start(), |p, k| p.pcg_step(k))
            }
        }
    }

    /// One untimed cycle (kernel loading, the transport's first use).
    pub fn warm_up(&mut self) -> Result<()> {
        let keep = self.opts.max_cycles;
        self.opts.max_cycles = 1;
        let r = self.solve();
        self.opts.max_cycles = keep;
        r.map(|_| ())
    }

    /// The whole field (f64) when this process drives every rank (`None`
    /// with one process per GPU: each holds its own rows only, see
    /// [`PlacedMg::gather_mine`]).
    pub fn gather(&mut self) -> Result<Option<Vec<f64>>> {
        if self.slabs.len() != self.split.world() {
            return Ok(None);
        }
        self.gather_to_lead()
    }

    /// The whole field (f64) on the process of rank 0, `None` on the
    /// others ([`Team::gather_field`]: with one process per GPU every rank
    /// sends the rows it owns to rank 0 over the transport).
    pub fn gather_to_lead(&mut self) -> Result<Option<Vec<f64>>> {
        let sl = &self.split.levels[0];
        let shares = shares(sl, &self.slabs, self.pc);
        let rows_of = |r: usize| owned_with_boundary(sl, r);
        self.team
            .gather_field((sl.level.nx, sl.level.ny), &shares, rows_of, f64::NAN)
    }

    /// The rows of the field that this process's ranks own (f64), in a
    /// grid-sized vector that is NaN elsewhere, and which rows they are
    /// (the boundary rows go with the first and last rank).
    pub fn gather_mine(&mut self) -> Result<(Vec<f64>, Vec<bool>)> {
        let sl = &self.split.levels[0];
        let shares = shares(sl, &self.slabs, self.pc);
        self.team
            .local_field((sl.level.nx, sl.level.ny), &shares, f64::NAN)
    }
}

/// The parts of level 0's field (`p[pc]`) that this process's ranks hold.
fn shares<'a, T>(sl: &SplitLevel, slabs: &'a [MgSlab<T>], pc: usize) -> Vec<Share<'a, f64>> {
    slabs
        .iter()
        .enumerate()
        .map(|(i, s)| Share {
            local: i,
            rank: s.rank,
            buf: &s.p[pc],
            y0: sl.stored(s.rank).start,
            rows: owned_with_boundary(sl, s.rank),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_covers_every_row_and_reads_inside_its_halos() {
        for (nx, ny, world, min) in [(67, 45, 2, 4), (131, 97, 3, 4), (33, 200, 4, 2)] {
            let grid = Grid::new(nx, ny).unwrap();
            let s = MgSplit::new(grid, 0.01, world, min, 1).unwrap();
            assert!(s.split() >= 1 && s.split() < s.hier.depth());
            for sl in &s.levels {
                assert_eq!(sl.owned(0).start, 1);
                assert_eq!(sl.owned(world - 1).end, sl.level.ny - 1);
                for r in 0..world {
                    assert!(!sl.owned(r).is_empty(), "{nx}x{ny}: {:?}", s.describe());
                }
            }
            let g = s.gathered(0).start..s.gathered(world - 1).end;
            assert_eq!(g, 1..s.hier.levels[s.split()].ny - 1);
        }
    }

    #[test]
    fn too_many_ranks_is_an_error_naming_the_limit() {
        let grid = Grid::new(9, 5).unwrap();
        let e = MgSplit::new(grid, 0.1, 4, 1, 1).unwrap_err().to_string();
        assert!(e.contains("use at most 3 devices"), "{e}");
    }
}
