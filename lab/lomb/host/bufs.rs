//! Preparing one periodogram's device buffers ([`Bufs`]): the checks, the
//! options, centred times, the choice of plain or `_long` kernels, and the
//! tables of the even-grid rungs.

use super::Options;
use super::input::{check_range, even_grid, prepare, validate};
use super::launch::{Bufs, Elem, use_long};
use super::phase::{Phases, centre, max_phase, split};
use super::tables::{
    anchor_table, recurrence_tables, recurrence_tables_long, taylor_plan, taylor_table,
    taylor_table_long,
};
use ptxlab_common::error::Result;
use ptxlab_common::runtime::Device;

impl<T: Elem> Bufs<T> {
    /// Validates, applies the options, converts to `T` and uploads, with the
    /// kernels the phases need ([`Phases::Auto`]); the output is poisoned
    /// with NaN.
    pub fn new(dev: &Device, x: &[f64], y: &[f64], freqs: &[f64], opts: Options) -> Result<Self> {
        Self::with_phases(dev, x, y, freqs, opts, Phases::Auto)
    }

    /// As [`Bufs::new`], with the plain or `_long` kernels as `phases` says.
    pub fn with_phases(
        dev: &Device,
        x: &[f64],
        y: &[f64],
        freqs: &[f64],
        opts: Options,
        phases: Phases,
    ) -> Result<Self> {
        validate(x, y, freqs)?;
        check_range::<T>(x, y, freqs)?;
        let (yy, scale) = prepare(y, opts)?;
        let (_, u) = centre(x);
        let long = use_long::<T>(max_phase(&u, freqs), phases)?;
        let grid = even_grid(freqs);
        let (rot, cheby, lo, taylor) = match grid {
            Some((start, step)) => {
                let (r, c) = if long {
                    recurrence_tables_long::<T>(&u, &yy, start, step)
                } else {
                    recurrence_tables::<T>(&u, &yy, step)
                };
                let plan = taylor_plan(x, step, T::TAYLOR_2TAU_MAX);
                let tt = if long {
                    taylor_table_long::<T>(x, &yy, None, &plan, start, step)
                } else {
                    taylor_table::<T>(x, &yy, &plan)
                };
                (
                    Some(dev.upload(&r)?),
                    c.map(|c| dev.upload(&c)).transpose()?,
                    Some(dev.upload(&anchor_table::<T>(&u, T::TAB_RUN, step))?),
                    Some((dev.upload(&tt)?, plan)),
                )
            }
            None => (None, None, None, None),
        };
        let (uh, ul): (Vec<T>, Vec<T>) = u.iter().map(|&v| split::<T>(v)).unzip();
        let (fh, fl): (Vec<T>, Vec<T>) = freqs.iter().map(|&v| split::<T>(v)).unzip();
        let cv = |v: &[f64]| v.iter().map(|&a| T::from_f64(a)).collect::<Vec<T>>();
        Ok(Self {
            x: dev.upload(&uh)?,
            x_lo: long.then(|| dev.upload(&ul)).transpose()?,
            y: dev.upload(&cv(&yy))?,
            freqs: dev.upload(&fh)?,
            freqs_lo: long.then(|| dev.upload(&fl)).transpose()?,
            rot,
            cheby,
            lo,
            taylor,
            out: dev.alloc_filled(freqs.len(), T::from_f64(f64::NAN))?,
            scale: T::from_f64(scale),
            grid,
            long,
        })
    }

    /// Poisons the output again.
    pub fn poison(&mut self, dev: &Device) -> Result<()> {
        let n = self.out.len();
        Ok(dev.write(&mut self.out, &vec![T::from_f64(f64::NAN); n])?)
    }
}
