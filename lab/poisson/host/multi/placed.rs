//! A problem placed on a [`Team`]: iterate, residual, solve, compare with a
//! single-device field, gather.

use super::super::cpu::interior_norm_sq;
use super::super::launch::Field;
use super::super::problem::{Problem, SolveOptions, SolveReport, overflowed_at};
use super::super::solve::to_tolerance;
use super::super::types::{Rung, k_of_h};
use super::decomp::Decomp;
use super::element::{SlabElement, check_rung};
use super::gather::Share;
use super::slab::Slab;
use super::team::Team;
use super::transport::{Dtype, HaloOp, Rows};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::runtime::{Device, Timing};
use std::time::Instant;

impl Team {
    /// Puts `prob` on the team: each device gets its slab (rows of `p0` and
    /// `b` with the halo rows) in two buffers, two one-edge scratch grids and
    /// the residual accumulator. `rung` must have depth 1.
    pub fn place<T: SlabElement>(
        &mut self,
        prob: &Problem<T>,
        rung: Rung,
    ) -> Result<Placed<'_, T>> {
        check_rung(rung)?;
        let world = self.transport.world_size();
        let decomp = Decomp::new(prob.grid, world)?;
        let nx = prob.grid.nx;
        let mut slabs = Vec::with_capacity(self.members.len());
        for mem in &self.members {
            let r = mem.rank;
            let m = decomp.rows(r);
            let first = decomp.owned(r).start - 1;
            let span = first * nx..(first + m + 2) * nx;
            let (p0, b) = (&prob.p0[span.clone()], &prob.b[span]);
            let dev = &mem.dev;
            if let Some(g) = dev.as_gpu() {
                // Load the modules now, so the timed sweeps do not include it.
                let key = ptxlab_common::runtime::ModuleKey::PRECISE;
                g.function(&ptxlab_common::modules::KERNELS, key, rung.entry::<T>())?;
                g.function(
                    &ptxlab_common::modules::KERNELS,
                    key,
                    <T as kernels_gpu::poisson::poisson_residual::Built>::ENTRY,
                )?;
            }
            let nan = T::from_f64(f64::NAN);
            slabs.push(Slab {
                rank: r,
                m,
                nx,
                field: [dev.upload(p0)?, dev.upload(p0)?],
                cur: 0,
                b: dev.upload(b)?,
                top: dev.alloc_filled(3 * nx, nan)?,
                bot: dev.alloc_filled(3 * nx, nan)?,
                acc: dev.alloc_filled(1, 0.0f64)?,
                sms: dev.as_gpu().map(|g| g.info().sm_count as usize),
            });
            // Uploads went through the legacy default stream: finish them
            // before streams A and B touch the buffers.
            dev.synchronize()?;
            if let Some(s) = &mem.streams {
                s.a_done.record(&s.a)?;
            }
        }
        let mut placed = Placed {
            b_sq: interior_norm_sq(&prob.b, prob.grid),
            team: self,
            decomp,
            slabs,
            rung,
            k: T::from_f64(k_of_h(prob.h)),
            h: prob.h,
            overlap: true,
            iterations: 0,
        };
        placed.warm_up()?;
        Ok(placed)
    }
}

/// Cells of a comparison with a single-device field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comparison {
    /// Cells compared, all ranks.
    pub cells: u64,
    /// Cells whose bits differ, all ranks.
    pub differ: u64,
    /// The first differing cell `(x, y)` among this process's slabs.
    pub first: Option<(usize, usize)>,
}

/// A problem on a [`Team`]: the slabs, the sweep count, the overlap switch.
pub struct Placed<'t, T: SlabElement> {
    team: &'t mut Team,
    decomp: Decomp,
    slabs: Vec<Slab<T>>,
    rung: Rung,
    k: T,
    h: f64,
    b_sq: f64,
    overlap: bool,
    iterations: usize,
}

impl<T: SlabElement> std::fmt::Debug for Placed<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Placed")
            .field("decomp", &self.decomp)
            .field("rung", &self.rung)
            .field("overlap", &self.overlap)
            .field("iterations", &self.iterations)
            .finish()
    }
}

impl<T: SlabElement> Drop for Placed<'_, T> {
    fn drop(&mut self) {
        // The buffers are freed on the default stream, which does not wait for
        // streams A and B: let them finish first.
        let _ = self.synchronize();
    }
}

impl<'t, T: SlabElement> Placed<'t, T> {
    /// Overlap the halo exchange with the interior update (default on).
    pub fn set_overlap(&mut self, on: bool) {
        self.overlap = on;
    }
    /// Whether the exchange is overlapped.
    pub fn overlap(&self) -> bool {
        self.overlap
    }
    /// The decomposition.
    pub fn decomposition(&self) -> &Decomp {
        &self.decomp
    }
    /// Sweeps done since placement.
    pub fn iterations(&self) -> usize {
        self.iterations
    }
    /// The team.
    pub fn team(&self) -> &Team {
        self.team
    }

    /// Waits for all queued work of this process's devices.
    pub fn synchronize(&self) -> Result<()> {
        self.team.synchronize()
    }

    /// One halo exchange of the initial field (whose halo rows already hold
    /// the neighbours' rows, so nothing changes) and one all-reduce: NCCL sets
    /// up its connections on first use, and that belongs outside any timing.
    fn warm_up(&mut self) -> Result<()> {
        let world = self.team.transport.world_size();
        {
            let mut ops = Vec::new();
            for (i, s) in self.slabs.iter().enumerate() {
                let (nx, m, r) = (s.nx, s.m, s.rank);
                let cur = &s.field[s.cur];
                let row = |y: usize| Rows::of(cur, y * nx, nx, T::DTYPE);
                if r > 0 {
                    ops.push(HaloOp::Send {
                        local: i,
                        peer: r - 1,
                        rows: row(1)?,
                    });
                    ops.push(HaloOp::Recv {
                        local: i,
                        peer: r - 1,
                        rows: row(0)?,
                    });
                }
                if r + 1 < world {
                    ops.push(HaloOp::Send {
                        local: i,
                        peer: r + 1,
                        rows: row(m)?,
                    });
                    ops.push(HaloOp::Recv {
                        local: i,
                        peer: r + 1,
                        rows: row(m + 1)?,
                    });
                }
            }
            self.team.transport.exchange(&ops)?;
        }
        self.sum_over_ranks(&vec![0.0; self.slabs.len()])?;
        self.synchronize()
    }

    fn step(&mut self) -> Result<()> {
        let world = self.team.transport.world_size();
        let (overlap, rung, k) = (self.overlap, self.rung, self.k);
        for (s, mem) in self.slabs.iter_mut().zip(&self.team.members) {
            if overlap {
                s.launch_overlap(mem, rung, k)?;
            } else {
                s.launch_full(mem, rung, k)?;
            }
        }
        {
            let mut ops = Vec::with_capacity(4 * self.slabs.len());
            for (i, s) in self.slabs.iter().enumerate() {
                s.halo_ops(i, world, overlap, &mut ops)?;
            }
            self.team.transport.exchange(&ops)?;
        }
        for (s, mem) in self.slabs.iter_mut().zip(&self.team.members) {
            s.finish(mem, overlap)?;
        }
        self.iterations += 1;
        Ok(())
    }

    /// `n` sweeps (queued; a GPU may still be running them on return).
    pub fn iterate(&mut self, n: usize) -> Result<()> {
        for _ in 0..n {
            self.step()?;
        }
        Ok(())
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
        match (self.slabs.first(), self.team.members.first()) {
            (Some(s), Some(m)) => s.get_acc(m),
            _ => Err(Error::input("team", "no device")),
        }
    }

    /// Sum over all interior cells of `r^2`, `r = b - lap_h p`: each slab
    /// reduces its own rows on its device, then an all-reduce over ranks.
    pub fn residual_sq(&mut self) -> Result<f64> {
        for (s, mem) in self.slabs.iter_mut().zip(&self.team.members) {
            s.residual(mem, self.h)?;
        }
        self.sum_accs()
    }

    /// Sums one value per local slab over all ranks.
    fn sum_over_ranks(&mut self, vals: &[f64]) -> Result<f64> {
        for ((s, mem), v) in self.slabs.iter_mut().zip(&self.team.members).zip(vals) {
            s.set_acc(mem, *v)?;
        }
        self.sum_accs()
    }

    /// Global rows this slab reports (see [`reported`]), each with its row
    /// in the slab, which stores global row `owned.start - 1` first.
    fn reported_rows(&self, i: usize) -> Vec<(usize, usize)> {
        let rank = self.slabs[i].rank;
        let y0 = self.decomp.owned(rank).start - 1;
        reported(&self.decomp, rank).map(|y| (y - y0, y)).collect()
    }

    /// Compares the current field with a whole-grid field (`reference`, e.g.
    /// the single-device result after as many sweeps) bit for bit; the counts
    /// are summed over all ranks.
    pub fn compare(&mut self, reference: &[T]) -> Result<Comparison> {
        let grid = self.decomp.grid();
        if reference.len() != grid.cells() {
            return Err(Error::input(
                "reference field",
                format!("{} values for the grid {}", reference.len(), grid.label()),
            ));
        }
        self.synchronize()?;
        let nx = grid.nx;
        let (mut cells, mut differ, mut first) = (Vec::new(), Vec::new(), None);
        for (i, (s, mem)) in self.slabs.iter().zip(&self.team.members).enumerate() {
            let local = mem.dev.download(&s.field[s.cur])?;
            let (mut c, mut d) = (0u64, 0u64);
            for (l, y) in self.reported_rows(i) {
                let (got, want) = (
                    &local[l * nx..(l + 1) * nx],
                    &reference[y * nx..(y + 1) * nx],
                );
                for (x, (a, b)) in got.iter().zip(want).enumerate() {
                    c += 1;
                    if a.bits() != b.bits() {
                        d += 1;
                        first.get_or_insert((x, y));
                    }
                }
            }
            cells.push(c as f64);
            differ.push(d as f64);
        }
        let cells = self.sum_over_ranks(&cells)? as u64;
        let differ = self.sum_over_ranks(&differ)? as u64;
        Ok(Comparison {
            cells,
            differ,
            first,
        })
    }

    /// The whole field, on the process that holds rank 0 (`None` elsewhere).
    /// With one process per GPU the other ranks send their rows to rank 0
    /// through the transport; every rank must call it.
    pub fn gather(&mut self) -> Result<Option<Vec<T>>> {
        let grid = self.decomp.grid();
        let decomp = &self.decomp;
        let shares: Vec<Share<'_, T>> = self
            .slabs
            .iter()
            .enumerate()
            .map(|(i, s)| Share {
                local: i,
                rank: s.rank,
                buf: &s.field[s.cur],
                y0: decomp.owned(s.rank).start - 1,
                rows: reported(decomp, s.rank),
            })
            .collect();
        let rows_of = |r: usize| reported(decomp, r);
        self.team
            .gather_field((grid.nx, grid.ny), &shares, rows_of, T::from_f64(f64::NAN))
    }

    /// Iterates like [`crate::solve_device`] (the same
    /// loop: residual checks every `check_every` sweeps, the same stopping
    /// rule, a residual that is not finite is the overflow error) from the
    /// current field. `ms` is the
    /// wall time of the sweeps and residual checks, the devices synchronised
    /// at both ends.
    pub fn solve(&mut self, opts: &SolveOptions) -> Result<SolveReport> {
        opts.validate()?;
        if opts.rung != self.rung {
            return Err(Error::input(
                "solve",
                format!(
                    "the slabs were placed for the {} rung, the options ask for {}",
                    self.rung.name(),
                    opts.rung.name()
                ),
            ));
        }
        self.synchronize()?;
        let t0 = Instant::now();
        let (b_sq, h) = (self.b_sq, self.h);
        let it = to_tolerance(
            self,
            opts,
            b_sq,
            |p, n| p.iterate(n),
            |p| p.residual_sq(),
            |res, done| overflowed_at::<T>(h, res, done),
        )?;
        self.synchronize()?;
        Ok(it.report(b_sq, t0.elapsed().as_secs_f64() * 1e3))
    }

    /// Wall time per sweep: `warmup` sweeps, then `reps` batches of `iters`
    /// sweeps, each timed from a synchronised start to a synchronised end.
    pub fn time_sweeps(&mut self, warmup: usize, reps: usize, iters: usize) -> Result<Timing> {
        self.iterate(warmup)?;
        self.synchronize()?;
        let iters = iters.max(1);
        let mut ms = Vec::with_capacity(reps.max(1));
        for _ in 0..reps.max(1) {
            let t = Instant::now();
            self.iterate(iters)?;
            self.synchronize()?;
            ms.push(t.elapsed().as_secs_f64() * 1e3 / iters as f64);
        }
        Ok(Timing::from_samples(ms))
    }
}

/// The global rows rank `r` reports: the rows it owns, and the boundary row
/// beside them for the first and the last rank (every row of the grid
/// exactly once over the ranks).
fn reported(decomp: &Decomp, r: usize) -> std::ops::Range<usize> {
    let owned = decomp.owned(r);
    owned.start - usize::from(r == 0)..owned.end + usize::from(r + 1 == decomp.world())
}

/// Places `prob` on `team`, solves (as [`crate::solve_device`]) and gathers the
/// field to the process holding rank 0.
pub fn solve_multi<T: SlabElement>(
    team: &mut Team,
    prob: &Problem<T>,
    opts: &SolveOptions,
    overlap: bool,
) -> Result<(Option<Vec<T>>, SolveReport)> {
    let mut placed = team.place(prob, opts.rung)?;
    placed.set_overlap(overlap);
    let report = placed.solve(opts)?;
    let field = placed.gather()?;
    Ok((field, report))
}

/// `iters` sweeps of `rung` on one device over the whole grid (the reference
/// a decomposition must equal bit for bit).
pub fn single_device<T: SlabElement>(
    dev: &Device,
    prob: &Problem<T>,
    rung: Rung,
    iters: usize,
) -> Result<Vec<T>> {
    check_rung(rung)?;
    let b = dev.upload(&prob.b)?;
    let mut f = Field::new(dev, &prob.p0)?;
    f.run(
        dev,
        rung,
        prob.grid,
        &b,
        T::from_f64(k_of_h(prob.h)),
        iters,
        1,
    )?;
    Ok(dev.download(&f.cur)?)
}
