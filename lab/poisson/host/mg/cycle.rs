//! The cycles, written once over [`Ops`] (what a level can do): the device
//! (GPU, simulator, CUDA-graph capture) and the CPU reference run the same
//! control flow, so they do the same arithmetic in the same order.
//!
//! Every level solves its error equation `lap u = f` from a zero start; the
//! finest level's `f` is the residual of the current field (set by the outer
//! step), so a cycle returns a correction, not a new field.

use super::levels::{Cycle, MgOptions};
use ptxlab_common::error::Result;

/// One smoothing step of a level: `sweeps` red-black sweeps over-relaxed
/// by `omega` (black first when `black_first`; from a zero correction when
/// `zero`), after adding the prolongation of the level below's correction
/// when `prolong`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Smoothing {
    /// Red-black sweeps (each a red and a black half-sweep).
    pub sweeps: u32,
    /// Black half-sweep first.
    pub black_first: bool,
    /// From a zero correction.
    pub zero: bool,
    /// Add the prolongation of the level below's correction first.
    pub prolong: bool,
    /// Over-relaxation factor.
    pub omega: f64,
}

impl Smoothing {
    /// Pre-smoothing: `sweeps` sweeps, red first, no prolongation.
    pub fn pre(sweeps: u32, zero: bool, omega: f64) -> Self {
        Self {
            sweeps,
            black_first: false,
            zero,
            prolong: false,
            omega,
        }
    }
}

/// What a cycle asks of a level `l` (the level below is `l + 1`).
pub trait Ops {
    /// Levels.
    fn depth(&self) -> usize;
    /// Smooths level `l` as `s` says ([`Smoothing`]). With the field on
    /// the finest level ([`Ops::field_on_fine`]), level 0's post-smoothing
    /// also measures the residual.
    fn smooth(&mut self, l: usize, s: Smoothing) -> Result<()>;
    /// `f[l + 1] = R (f[l] - lap u[l])` (`R f[l]` without `with_u`), and a
    /// zero correction on level `l + 1`.
    fn restrict(&mut self, l: usize, with_u: bool) -> Result<()>;
    /// `u[l] += P u[l + 1]`, or `u[l] = P u[l + 1]` without `add`.
    fn prolong(&mut self, l: usize, add: bool) -> Result<()>;
    /// A whole V-cycle of levels `l..` from a zero correction in one step,
    /// when the implementation has one for these levels (the device's
    /// coarse-levels kernel); `false`: do it level by level. Either way the
    /// arithmetic is the same.
    fn coarse_cycle(&mut self, _l: usize, _opts: &MgOptions) -> Result<bool> {
        Ok(false)
    }
    /// Rung 5: level 0 holds the field (its `f` is `b`), not a correction.
    fn field_on_fine(&self) -> bool {
        false
    }
}

/// One visit of level `l`: pre-smoothing, restriction, the coarser
/// level(s), prolongation with post-smoothing. The coarsest level (one
/// interior point) is solved exactly by one sweep.
pub fn visit<O: Ops>(o: &mut O, opts: &MgOptions, l: usize, zero: bool) -> Result<()> {
    if zero && opts.cycle != Cycle::W && opts.coarse_block && o.coarse_cycle(l, opts)? {
        return Ok(());
    }
    if l + 1 >= o.depth() {
        return o.smooth(l, Smoothing::pre(1, zero, 1.0));
    }
    o.smooth(l, Smoothing::pre(opts.pre, zero, opts.omega))?;
    o.restrict(l, true)?;
    visit(o, opts, l + 1, true)?;
    if opts.cycle == Cycle::W {
        visit(o, opts, l + 1, false)?;
    }
    if opts.post > 0 {
        let post = Smoothing {
            sweeps: opts.post,
            black_first: opts.post_black_first(),
            zero: false,
            prolong: true,
            omega: opts.omega,
        };
        o.smooth(l, post)
    } else {
        o.prolong(l, true)
    }
}

/// Full multigrid on the finest level's `f`: restrict it down to the
/// coarsest level, solve there, then on each finer level interpolate the
/// coarser solution and improve it by one V-cycle. With the field on the
/// finest level, the first restriction is of its residual and the coarse
/// solution is added to the field (the coarse levels solve for a
/// correction, which keeps any Dirichlet values and start right).
pub fn fmg<O: Ops>(o: &mut O, opts: &MgOptions) -> Result<()> {
    let depth = o.depth();
    let field = o.field_on_fine();
    for l in 0..depth - 1 {
        o.restrict(l, field && l == 0)?;
    }
    visit(o, opts, depth - 1, true)?;
    let v = MgOptions {
        cycle: Cycle::V,
        ..*opts
    };
    for l in (0..depth - 1).rev() {
        o.prolong(l, field && l == 0)?;
        visit(o, &v, l, false)?;
    }
    Ok(())
}

/// The cycle of iteration `k`: FMG first when asked, V or W otherwise.
pub fn cycle<O: Ops>(o: &mut O, opts: &MgOptions, k: usize) -> Result<()> {
    if opts.cycle == Cycle::Fmg && k == 0 {
        fmg(o, opts)
    } else {
        let zero = !o.field_on_fine();
        visit(o, opts, 0, zero)
    }
}
