//! Multigrid and PCG on a device (GPU or simulator): the level buffers,
//! the outer loops, and on a GPU one CUDA graph per cycle (captured once
//! per buffer parity, replayed every cycle).
//!
//! What lives where: the field `p` (two buffers, the outer step writes the
//! other one), `b`, and PCG's residual, directions and `lap d` are f64; each
//! level's correction `u` (two buffers for the tile smoother, which works
//! out of place) and right-hand side `f` are in the cycle's precision `T`.
//! The residual handed to an f32 cycle is scaled by `1 / rms(b)` so that it
//! stays far from f32's underflow whatever the units of `b`.

use super::cycle::{Ops, Smoothing, cycle, visit};
use super::launch::{
    Exec, MgElement, clear, coarse_cells, coarse_cfg, coarse_geometry, holds, slots_cfg, tile_cfg,
};
use super::levels::{Hierarchy, Level, Method, MgOptions, Smoother};
use super::outer::cycles_to_tolerance;
use super::report::MgReport;
use kernels_gpu::multigrid::{self as km, Colour, slot};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::{Buffer, Device, Graph, Timing};

/// The correction and right-hand side of every level.
pub struct LevelBufs<T> {
    hier: Hierarchy,
    smoother: Smoother,
    pub(crate) u: Vec<Vec<Buffer<T>>>,
    pub(crate) f: Vec<Buffer<T>>,
    pub(crate) cur: Vec<usize>,
    /// The first level whose suffix fits the coarse-levels kernel, and the
    /// suffix's geometry on the device.
    coarse: Option<(usize, Buffer<f64>)>,
    /// Rung 5: level 0 holds the field (`u`) and `b` (`f`).
    field: bool,
}

impl<T: MgElement> LevelBufs<T> {
    /// Zero-filled levels (the boundary rings must stay zero).
    pub fn new(dev: &Device, hier: &Hierarchy, smoother: Smoother, field: bool) -> Result<Self> {
        let per = match smoother {
            Smoother::RedBlack => 1,
            Smoother::Tile => 2,
        };
        let mut u = Vec::new();
        let mut f = Vec::new();
        for l in &hier.levels {
            u.push(
                (0..per)
                    .map(|_| dev.alloc_filled(l.cells(), T::ZERO))
                    .collect::<ptxlab_common::runtime::Result<Vec<_>>>()?,
            );
            f.push(dev.alloc_filled(l.cells(), T::ZERO)?);
        }
        let elem = std::mem::size_of::<T>();
        // With the field on level 0, the one-block kernel (which starts from
        // a zero correction) takes levels 1.. at most.
        let first = usize::from(field);
        let coarse = match (first..hier.depth())
            .find(|&l| coarse_cells(&hier.levels[l..], elem).is_some())
        {
            Some(l) => Some((l, dev.upload(&coarse_geometry(&hier.levels[l..]))?)),
            None => None,
        };
        Ok(Self {
            hier: hier.clone(),
            smoother,
            u,
            f,
            cur: vec![0; hier.depth()],
            coarse,
            field,
        })
    }
    fn level(&self, l: usize) -> Level {
        self.hier.levels[l]
    }
}

/// `(v[l], v[l + 1])`, both mutable.
fn pair<X>(v: &mut [X], l: usize) -> (&mut X, &mut X) {
    let (a, b) = v.split_at_mut(l + 1);
    (&mut a[l], &mut b[0])
}

/// [`Ops`] on device buffers, launching through `ex`.
pub(crate) struct DevOps<'e, 'a, 'g, T> {
    pub(crate) ex: &'e mut Exec<'a, 'g>,
    pub(crate) lv: &'e mut LevelBufs<T>,
    /// The residual's sum (rung 5's last sweep adds to it).
    pub(crate) acc: &'e mut Buffer<f64>,
}

impl<T: MgElement> Ops for DevOps<'_, '_, '_, T> {
    fn depth(&self) -> usize {
        self.lv.hier.depth()
    }
    fn smooth(&mut self, l: usize, step: Smoothing) -> Result<()> {
        let Smoothing {
            sweeps,
            black_first,
            zero,
            prolong,
            omega,
        } = step;
        let lvl = self.lv.level(l);
        let (first, omega) = (Colour::black_if(black_first), T::from_f64(omega));
        match self.lv.smoother {
            Smoother::RedBlack => {
                if prolong {
                    self.prolong(l, true)?;
                }
                let (u, f) = (&mut self.lv.u[l][0], &self.lv.f[l]);
                holds(&lvl, &[("u", u.len()), ("f", f.len())])?;
                let cfg = self.ex.rows((lvl.nx - 1) / 2, lvl.ny - 2)?;
                let level = lvl.stencil::<T>();
                for s in 0..sweeps {
                    for colour in [first, first.other()] {
                        let zero = zero && s == 0 && colour == first;
                        let sweep = km::RbSweep {
                            level,
                            omega,
                            colour,
                            zero,
                        };
                        launch!(
                            &mut *self.ex,
                            cfg,
                            multigrid::mg_smooth_rb::<T>(&mut *u, f, sweep)
                        )?;
                    }
                }
                Ok(())
            }
            Smoother::Tile => {
                let c = self.lv.cur[l];
                let field = self.lv.field && l == 0;
                let mode = km::TileMode {
                    sweeps,
                    first,
                    zero,
                    prolong,
                    dirichlet: field,
                    residual: field && prolong,
                };
                let below = prolong.then(|| (self.lv.level(l + 1), self.lv.cur[l + 1]));
                let (lo, hi) = self.lv.u.split_at_mut(l + 1);
                let (a, b) = lo[l].split_at_mut(1);
                let (u_in, u_out) = if c == 0 {
                    (&a[0], &mut b[0])
                } else {
                    (&b[0], &mut a[0])
                };
                let f = &self.lv.f[l];
                let lens = [("u_in", u_in.len()), ("f", f.len()), ("u_out", u_out.len())];
                holds(&lvl, &lens)?;
                // The coarse correction, read with the prolongation only.
                let (uc, coarse) = match below {
                    Some((cl, cc)) => {
                        holds(&cl, &[("uc", hi[0][cc].len())])?;
                        (&hi[0][cc], cl.dims())
                    }
                    None => (f, km::Dims { nx: 0, ny: 0 }),
                };
                let sweep = km::TileSweep {
                    level: lvl.stencil::<T>(),
                    coarse,
                    omega,
                    mode,
                };
                let cfg = tile_cfg::<T>(&lvl, mode)?;
                let acc = &mut *self.acc;
                launch!(
                    &mut *self.ex,
                    cfg,
                    multigrid::mg_smooth_tile::<T>(u_in, f, uc, u_out, acc, sweep)
                )?;
                self.lv.cur[l] = 1 - c;
                Ok(())
            }
        }
    }
    fn restrict(&mut self, l: usize, with_u: bool) -> Result<()> {
        let (lvl, cl) = (self.lv.level(l), self.lv.level(l + 1));
        let (cu, cc) = (self.lv.cur[l], self.lv.cur[l + 1]);
        let (ul, uc) = pair(&mut self.lv.u, l);
        let (fl, fc) = pair(&mut self.lv.f, l);
        let (u, f, uc) = (&ul[cu], &*fl, &mut uc[cc]);
        holds(&lvl, &[("u", u.len()), ("f", f.len())])?;
        holds(&cl, &[("fc", fc.len()), ("uc", uc.len())])?;
        let r = km::Restrict {
            fine: lvl.stencil::<T>(),
            coarse: cl.dims(),
            with_u,
        };
        let cfg = self.ex.rows(cl.nx, cl.ny)?;
        launch!(
            &mut *self.ex,
            cfg,
            multigrid::mg_restrict::<T>(u, f, fc, uc, r)
        )
    }
    fn prolong(&mut self, l: usize, add: bool) -> Result<()> {
        let (lvl, cl) = (self.lv.level(l), self.lv.level(l + 1));
        let (cu, cc) = (self.lv.cur[l], self.lv.cur[l + 1]);
        let (ul, uc) = pair(&mut self.lv.u, l);
        let (u, uc) = (&mut ul[cu], &uc[cc]);
        holds(&lvl, &[("u", u.len())])?;
        holds(&cl, &[("uc", uc.len())])?;
        let p = km::Prolong {
            fine: lvl.dims(),
            coarse: cl.dims(),
            add,
        };
        let cfg = self.ex.rows(lvl.nx - 2, lvl.ny - 2)?;
        launch!(&mut *self.ex, cfg, multigrid::mg_prolong::<T>(uc, u, p))
    }
    fn coarse_cycle(&mut self, l: usize, opts: &MgOptions) -> Result<bool> {
        let Some((first, geom)) = &self.lv.coarse else {
            return Ok(false);
        };
        if l != *first {
            return Ok(false);
        }
        let levels = &self.lv.hier.levels[l..];
        let (f, u) = (&self.lv.f[l], &mut self.lv.u[l][self.lv.cur[l]]);
        let cfg = coarse_cfg::<T>(levels, geom.len(), f.len(), u.len())?;
        let c = km::CoarseCycle {
            levels: levels.len() as u32,
            pre: opts.pre,
            post: opts.post,
            post_first: Colour::black_if(opts.post_black_first()),
            omega: T::from_f64(opts.omega),
        };
        launch!(
            &mut *self.ex,
            cfg,
            multigrid::mg_coarse_cycle::<T>(f, u, geom, c)
        )?;
        Ok(true)
    }
    fn field_on_fine(&self) -> bool {
        self.lv.field
    }
}

/// A multigrid or PCG solve on a device: its buffers and captured graphs.
pub struct MgDevice<'d, T> {
    dev: &'d Device,
    opts: MgOptions,
    h: f64,
    levels: LevelBufs<T>,
    p: [Buffer<f64>; 2],
    pc: usize,
    b: Buffer<f64>,
    acc: Buffer<f64>,
    /// PCG: residual, directions (ping-pong), `lap d`, scalars.
    rho: Option<Buffer<f64>>,
    d: Option<[Buffer<f64>; 2]>,
    q: Option<Buffer<f64>>,
    s: Buffer<f64>,
    r_scale: f64,
    b_sq: f64,
    graphs: Vec<(usize, Graph)>,
}

impl<T: MgElement> std::fmt::Debug for MgDevice<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "MgDevice({}, {})",
            self.levels.hier.describe(),
            self.opts.label()
        )
    }
}

fn one<T: Copy>(v: &[T], what: &str) -> Result<T> {
    v.first()
        .copied()
        .ok_or_else(|| Error::input(what, "an empty device buffer"))
}

impl<'d, T: MgElement> MgDevice<'d, T> {
    /// Uploads the problem (`b`, and `p0` with its Dirichlet boundary, as
    /// f64) and allocates every level. `b_sq` is `||b||^2` over the interior.
    pub fn new(
        dev: &'d Device,
        hier: &Hierarchy,
        opts: &MgOptions,
        b: &[f64],
        p0: &[f64],
        b_sq: f64,
    ) -> Result<Self> {
        opts.validate()?;
        let fine = hier.fine();
        for (n, v) in [("b", b), ("p0", p0)] {
            if v.len() != fine.cells() {
                return Err(Error::input(
                    n,
                    format!("{} values for a {}x{} grid", v.len(), fine.nx, fine.ny),
                ));
            }
        }
        let interior = ((fine.nx - 2) * (fine.ny - 2)) as f64;
        let rms = (b_sq / interior).sqrt();
        let r_scale = if std::mem::size_of::<T>() == 4 && rms > 0.0 && rms.is_finite() {
            1.0 / rms
        } else {
            1.0
        };
        let pcg = opts.method == Method::Pcg;
        let field = opts.fused_fine(std::mem::size_of::<T>()) && hier.depth() >= 2;
        let nan = f64::NAN;
        let n = fine.cells();
        let mut me = Self {
            dev,
            opts: *opts,
            h: hier.h,
            levels: LevelBufs::new(dev, hier, opts.smoother, field)?,
            p: [dev.upload(p0)?, dev.alloc_filled(n, nan)?],
            pc: 0,
            b: dev.upload(b)?,
            acc: dev.alloc_filled(1, 0.0)?,
            rho: if pcg {
                Some(dev.alloc_filled(n, nan)?)
            } else {
                None
            },
            d: if pcg {
                Some([dev.alloc_filled(n, 0.0)?, dev.alloc_filled(n, nan)?])
            } else {
                None
            },
            q: if pcg {
                Some(dev.alloc_filled(n, nan)?)
            } else {
                None
            },
            s: dev.alloc_filled(slot::COUNT, 0.0)?,
            r_scale,
            b_sq,
            graphs: Vec::new(),
        };
        if field {
            // Rung 5: level 0's right-hand side is b itself.
            let bt: Vec<T> = b.iter().map(|&v| T::from_f64(v)).collect();
            dev.write(&mut me.levels.f[0], &bt)?;
        }
        Ok(me)
    }

    /// Records iteration `k` (its buffer parity follows from `k`) on `ex`.
    fn record(&mut self, ex: &mut Exec, k: usize) -> Result<()> {
        let fine = self.levels.level(0);
        let zs = 1.0 / self.r_scale;
        self.levels.cur.iter_mut().for_each(|c| *c = 0);
        match self.opts.method {
            Method::Multigrid => {
                clear(ex, &mut self.acc)?;
                cycle(
                    &mut DevOps {
                        ex,
                        lv: &mut self.levels,
                        acc: &mut self.acc,
                    },
                    &self.opts,
                    k,
                )?;
                if self.levels.field {
                    // Rung 5: the field is updated in place on level 0 and
                    // the last sweep summed the residual.
                    return Ok(());
                }
                let pc = (1 + k) % 2;
                let step = self.defect_step(zs, self.r_scale);
                let cfg = ex.reduce_rows(fine.nx, fine.ny)?;
                let (a, b) = self.p.split_at_mut(1);
                let (p_in, p_out) = if pc == 0 {
                    (&a[0], &mut b[0])
                } else {
                    (&b[0], &mut a[0])
                };
                let (u0, f0) = (&self.levels.u[0][self.levels.cur[0]], &mut self.levels.f[0]);
                let (b, acc) = (&self.b, &mut self.acc);
                launch!(
                    ex,
                    cfg,
                    multigrid::mg_defect::<T>(p_in, u0, b, p_out, f0, acc, step)
                )
            }
            Method::Pcg => {
                let (Some(rho), Some(d), Some(q)) = (&mut self.rho, &mut self.d, &mut self.q)
                else {
                    return Err(Error::input("PCG", "the solver was not set up for PCG"));
                };
                launch!(&mut *ex, slots_cfg(1)?, multigrid::mg_cg_shift(&mut self.s))?;
                visit(
                    &mut DevOps {
                        ex,
                        lv: &mut self.levels,
                        acc: &mut self.acc,
                    },
                    &self.opts,
                    0,
                    true,
                )?;
                let z = &self.levels.u[0][self.levels.cur[0]];
                let n = fine.cells();
                let (r, s) = (&mut self.levels.f[0], &mut self.s);
                holds(&n, &[("rho", rho.len()), ("z", z.len()), ("r", r.len())])?;
                let flat = ex.reduce_flat(n)?;
                launch!(
                    &mut *ex,
                    flat,
                    multigrid::mg_cg_dot::<T>(&*rho, z, &mut *s, zs)
                )?;
                let (a, bb) = d.split_at_mut(1);
                let (d_in, d_out) = if k.is_multiple_of(2) {
                    (&a[0], &mut bb[0])
                } else {
                    (&bb[0], &mut a[0])
                };
                let fine_h = fine.fine(self.h);
                let rows = ex.reduce_rows(fine.nx, fine.ny)?;
                launch!(
                    &mut *ex,
                    rows,
                    multigrid::mg_cg_dir::<T>(z, d_in, &mut *d_out, &mut *q, &mut *s, fine_h, zs)
                )?;
                let p = &mut self.p[0];
                holds(&n, &[("p", p.len()), ("d", d_out.len()), ("q", q.len())])?;
                let rs = self.r_scale;
                launch!(
                    ex,
                    flat,
                    multigrid::mg_cg_update::<T>(p, rho, r, &*d_out, &*q, s, rs)
                )
            }
        }
    }

    /// The outer step of the fine level with weights `e_scale` and `r_scale`.
    fn defect_step(&self, e_scale: f64, r_scale: f64) -> km::DefectStep {
        km::DefectStep {
            fine: self.levels.level(0).fine(self.h),
            e_scale,
            r_scale,
        }
    }

    /// The outer start: the residual of `p0` (multigrid: a defect step with
    /// no correction, which also copies `p0` into the other buffer).
    fn start(&mut self) -> Result<f64> {
        let fine = self.levels.level(0);
        let mut ex = Exec::Dev(self.dev);
        clear(&mut ex, &mut self.acc)?;
        let cfg = ex.reduce_rows(fine.nx, fine.ny)?;
        match self.opts.method {
            Method::Multigrid => {
                // Rung 5 takes the residual of p0 only (its r goes to level
                // 0's spare buffer, which the first sweep overwrites).
                let field = self.levels.field;
                let step = self.defect_step(0.0, if field { 1.0 } else { self.r_scale });
                let (a, b) = self.p.split_at_mut(1);
                let (u0, u1) = self.levels.u[0].split_at_mut(1);
                let r = if field {
                    &mut u1[0]
                } else {
                    &mut self.levels.f[0]
                };
                let (e, b0, acc) = (&u0[0], &self.b, &mut self.acc);
                launch!(
                    &mut ex,
                    cfg,
                    multigrid::mg_defect::<T>(&a[0], e, b0, &mut b[0], r, acc, step)
                )?;
                if !field {
                    self.pc = 1;
                }
            }
            Method::Pcg => {
                let rho = self
                    .rho
                    .as_mut()
                    .ok_or_else(|| Error::input("PCG", "no residual buffer"))?;
                let (p, b, r) = (&self.p[0], &self.b, &mut self.levels.f[0]);
                let (fine, rs) = (fine.fine(self.h), self.r_scale);
                launch!(
                    &mut ex,
                    cfg,
                    multigrid::mg_residual::<T>(p, b, rho, r, &mut self.acc, fine, rs)
                )?;
                self.pc = 0;
            }
        }
        one(&self.dev.download(&self.acc)?, "residual")
    }

    fn graph_for(&mut self, k: usize) -> Result<usize> {
        // Multigrid: the parity of p, and FMG's first cycle; PCG: the parity of d.
        let key = if self.opts.cycle == super::levels::Cycle::Fmg && k == 0 {
            2
        } else {
            k % 2
        };
        if let Some(i) = self.graphs.iter().position(|(g, _)| *g == key) {
            return Ok(i);
        }
        let gpu = self
            .dev
            .as_gpu()
            .ok_or_else(|| Error::input("CUDA graph", "graphs need a GPU"))?;
        let dev = self.dev;
        let graph = Graph::capture(gpu, |cap| {
            let mut ex = Exec::Cap(dev, cap);
            self.record(&mut ex, k)
        })?;
        self.graphs.push((key, graph));
        Ok(self.graphs.len() - 1)
    }

    /// Runs iteration `k` and returns the residual's `||.||^2` it measured.
    fn step(&mut self, k: usize) -> Result<f64> {
        let use_graph = self.opts.graph && self.dev.as_gpu().is_some();
        if use_graph {
            let i = self.graph_for(k)?;
            self.graphs[i].1.replay()?;
            self.graphs[i].1.synchronize()?;
        } else {
            let dev = self.dev;
            self.record(&mut Exec::Dev(dev), k)?;
        }
        match self.opts.method {
            Method::Multigrid => {
                self.pc = (1 + k + 1) % 2;
                one(&self.dev.download(&self.acc)?, "residual")
            }
            Method::Pcg => Ok(self.dev.download(&self.s)?[slot::RHO2]),
        }
    }

    /// Captures the graphs a solve of up to `cycles` iterations uses (GPU
    /// with graphs on; otherwise nothing), so a timed solve replays only.
    pub fn prepare(&mut self) -> Result<()> {
        if self.opts.graph && self.dev.as_gpu().is_some() {
            for k in 0..3 {
                self.graph_for(k)?;
            }
        }
        Ok(())
    }

    /// Changes the tolerance of the next solves (the graphs do not depend on it).
    pub fn set_tolerance(&mut self, tol: f64) -> Result<()> {
        MgOptions { tol, ..self.opts }.validate()?;
        self.opts.tol = tol;
        Ok(())
    }

    /// Loads the kernels and captures the graphs (one untimed cycle), so a
    /// timed solve measures the cycles only.
    pub fn warm_up(&mut self, p0: &[f64]) -> Result<()> {
        self.prepare()?;
        let keep = self.opts.max_cycles;
        self.opts.max_cycles = 1;
        let r = self.solve(p0);
        self.opts.max_cycles = keep;
        r.map(|_| ())
    }

    /// Solves from `p0` (the buffers are reset first, so a solver can run
    /// several times) to the tolerance or `max_cycles`.
    pub fn solve(&mut self, p0: &[f64]) -> Result<MgReport> {
        self.dev.write(&mut self.p[0], p0)?;
        if self.levels.field {
            // Rung 5: the field starts in level 0's first buffer; the second
            // is poisoned, so a cell the first sweep fails to write (its
            // output covers the whole grid, boundary included) shows up as
            // NaN in the result.
            let p0t: Vec<T> = p0.iter().map(|&v| T::from_f64(v)).collect();
            let (u0, u1) = self.levels.u[0].split_at_mut(1);
            self.dev.write(&mut u0[0], &p0t)?;
            self.dev
                .write(&mut u1[0], &vec![T::from_f64(f64::NAN); p0t.len()])?;
        }
        if let Some(d) = &mut self.d {
            self.dev.write(&mut d[0], &vec![0.0; p0.len()])?;
        }
        let zero = vec![0.0; slot::COUNT];
        self.dev.write(&mut self.s, &zero)?;
        self.dev.synchronize()?;
        let (opts, b_sq) = (self.opts, self.b_sq);
        cycles_to_tolerance(self, &opts, b_sq, |s| s.start(), |s, k| s.step(k))
    }

    /// The current field (f64).
    pub fn field(&self) -> Result<Vec<f64>> {
        if self.levels.field {
            let u = self.dev.download(&self.levels.u[0][self.levels.cur[0]])?;
            return Ok(u.iter().map(|v| v.to_f64()).collect());
        }
        Ok(self.dev.download(&self.p[self.pc])?)
    }

    /// `||b - lap_h p||^2` of the current field, computed afresh (PCG's
    /// recursive residual drifts; this is the true one).
    pub fn true_residual_sq(&mut self) -> Result<f64> {
        let fine = self.levels.level(0);
        if self.levels.field {
            let p = self.field()?;
            self.dev.write(&mut self.p[self.pc], &p)?;
        }
        let mut ex = Exec::Dev(self.dev);
        clear(&mut ex, &mut self.acc)?;
        let mut rho = self.dev.alloc_filled(fine.cells(), f64::NAN)?;
        let mut scratch = self.dev.alloc_filled(fine.cells(), T::from_f64(f64::NAN))?;
        let cfg = ex.reduce_rows(fine.nx, fine.ny)?;
        let (p, b, fine) = (&self.p[self.pc], &self.b, fine.fine(self.h));
        launch!(
            &mut ex,
            cfg,
            multigrid::mg_residual::<T>(p, b, &mut rho, &mut scratch, &mut self.acc, fine, 1.0)
        )?;
        one(&self.dev.download(&self.acc)?, "residual")
    }

    /// GPU time of one cycle (device events around graph replays of the
    /// steady-state cycle); `None` without a GPU or graphs. Changes the
    /// field: call after reading it.
    pub fn cycle_timing(&mut self, reps: usize) -> Result<Option<Timing>> {
        if !(self.opts.graph && self.dev.as_gpu().is_some()) {
            return Ok(None);
        }
        let i = self.graph_for(1)?;
        Ok(self.graphs[i].1.time(2, reps).map(Some)?)
    }

    /// The hierarchy.
    pub fn hierarchy(&self) -> &Hierarchy {
        &self.levels.hier
    }
}
