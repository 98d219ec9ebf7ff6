//! The types every other file of the workload stands on: the rungs of the
//! ladder, the element types, the validated grid and the spacing checks.

use kernels_gpu::poisson as kp;
use ptxlab_common::error::{Error, Result};
use ptxlab_device::math::Real;

/// Workload name in reports.
pub const NAME: &str = "poisson";
/// Default temporal depth (sweeps per pass of rung 4).
pub const DEFAULT_DEPTH: u32 = 8;
/// Largest grid accepted, in cells (indices are 32-bit in the kernels).
pub const MAX_CELLS: usize = i32::MAX as usize;

/// The rungs of the ladder (`--variant`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Rung {
    /// 1: one thread per cell, global memory only.
    Naive,
    /// 2: the material's shared-memory tile with a halo.
    Tiled,
    /// 3: several rows per thread, vertical reuse in registers.
    Register,
    /// 4: temporal blocking, `depth` sweeps per pass.
    Temporal,
}

impl Rung {
    /// Every rung in ladder order.
    pub const ALL: [Rung; 4] = [Rung::Naive, Rung::Tiled, Rung::Register, Rung::Temporal];
    /// CLI name.
    pub fn name(&self) -> String {
        ptxlab_common::cli::value_name(self)
    }
    /// Label for reports.
    pub fn label(&self, depth: u32) -> String {
        match self {
            Rung::Naive => "1 naive (global memory)".into(),
            Rung::Tiled => format!("2 shared tile {}x{} + halo", kp::TILE_X, kp::TILE_Y),
            Rung::Register => format!("3 register strips ({} rows/thread)", kp::REG_RY),
            Rung::Temporal => format!("4 temporal blocking, depth {depth}"),
        }
    }
    /// The PTX entry of the rung's kernel for `T` (for the resource report).
    pub fn entry<T: Element>(&self) -> &'static str {
        match self {
            Rung::Naive => <T as kp::poisson_naive::Built>::ENTRY,
            Rung::Tiled => <T as kp::poisson_tiled::Built>::ENTRY,
            Rung::Register => <T as kp::poisson_register::Built>::ENTRY,
            Rung::Temporal => <T as kp::poisson_temporal::Built>::ENTRY,
        }
    }
}

/// Element types of the Poisson kernels: `f32` and `f64`, the types every
/// kernel of the ladder was built for (each `kp::<kernel>::Built` bound says
/// that one kernel has an instance for `Self`, so generic code launches
/// `kp::<kernel>::<T>` without naming a type).
pub trait Element:
    Real
    + ptxlab_common::runtime::Element
    + Send
    + Sync
    + std::fmt::Debug
    + ndarray_npy::WritableElement
    + ndarray_npy::ReadableElement
    + kp::poisson_naive::Built
    + kp::poisson_tiled::Built
    + kp::poisson_register::Built
    + kp::poisson_temporal::Built
    + kp::poisson_residual::Built
{
    /// `f32` / `f64`.
    const NAME: &'static str;
}

impl Element for f32 {
    const NAME: &'static str = "f32";
}

impl Element for f64 {
    const NAME: &'static str = "f64";
}

/// A validated grid: `nx` columns (x, fastest) by `ny` rows, both >= 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    /// Columns.
    pub nx: usize,
    /// Rows.
    pub ny: usize,
}

impl Grid {
    /// Checks the shape: at least 3 x 3 (one interior cell inside the
    /// Dirichlet boundary) and at most [`MAX_CELLS`] cells.
    pub fn new(nx: usize, ny: usize) -> Result<Self> {
        if nx < 3 || ny < 3 {
            return Err(Error::input(
                "grid",
                format!(
                    "{nx}x{ny} (nx x ny) is smaller than 3x3; each of nx and ny must be at least 3 \
                     (a Dirichlet boundary around at least one interior cell)"
                ),
            ));
        }
        let cells = nx.saturating_mul(ny);
        if cells > MAX_CELLS || ny > 65535 * kp::NAIVE_BY as usize {
            return Err(Error::input(
                "grid",
                format!(
                    "{nx}x{ny} has {cells} cells; at most {MAX_CELLS} cells and {} rows \
                     (32-bit indices, launch grid y <= 65535): use a smaller grid",
                    65535 * kp::NAIVE_BY
                ),
            ));
        }
        Ok(Self { nx, ny })
    }
    /// Cells.
    pub fn cells(&self) -> usize {
        self.nx * self.ny
    }
    /// `"nx x ny"` for reports.
    pub fn label(&self) -> String {
        format!("{}x{}", self.nx, self.ny)
    }
    /// On the simulator (`backend`), refuses a grid of more than `max`
    /// cells (the limit of the solver that runs it).
    pub fn check_sim_cells(&self, backend: ptxlab_common::Backend, max: usize) -> Result<()> {
        if backend != ptxlab_common::Backend::Sim {
            return Ok(());
        }
        ptxlab_common::cli::check_sim_limit(
            "grid (--size)",
            self.cells(),
            max,
            &format!("cells ({})", self.label()),
        )
    }
    pub(crate) fn dims(&self) -> (u32, u32) {
        (self.nx as u32, self.ny as u32)
    }
    /// Checks a grid built without [`Grid::new`] (its fields are public).
    pub fn validate(&self) -> Result<()> {
        Grid::new(self.nx, self.ny).map(|_| ())
    }
}

/// `k = h^2 / 4` of the sweep formula.
pub fn k_of_h(h: f64) -> f64 {
    0.25 * h * h
}

/// Default grid spacing: the longer side spans `[0, 1]`.
pub fn default_h(grid: Grid) -> f64 {
    1.0 / (grid.nx.max(grid.ny) - 1) as f64
}

fn check_h(h: f64) -> Result<()> {
    if !(h.is_finite() && h > 0.0) {
        return Err(Error::input(
            "--h",
            format!("{h}; the grid spacing must be a positive finite number"),
        ));
    }
    Ok(())
}

/// The range of `h` for element type `T`: `k = h^2 / 4` must be a normal `T`
/// (the sweep multiplies `b` by it) and `1 / h^2` a finite f64 (the residual).
pub fn h_range<T: Element>() -> (f64, f64) {
    let (min_pos, max) = if std::mem::size_of::<T>() == 4 {
        (f32::MIN_POSITIVE as f64, f32::MAX as f64)
    } else {
        (f64::MIN_POSITIVE, f64::MAX)
    };
    let lo = (2.0 * min_pos.sqrt()).max(1.0 / f64::MAX.sqrt());
    let hi = 2.0 * max.sqrt();
    (lo, hi)
}

/// `check_h` and the range of [`h_range`] for `T`.
pub fn check_h_for<T: Element>(h: f64) -> Result<()> {
    check_h(h)?;
    let (lo, hi) = h_range::<T>();
    if !(lo..=hi).contains(&h) {
        return Err(Error::input(
            "--h",
            format!(
                "{h:e}; with {} allowed {lo:.1e} <= h <= {hi:.1e} (so that h^2/4 and 1/h^2 are normal \
                 numbers); rescale the problem so that h is nearer 1",
                T::NAME
            ),
        ));
    }
    Ok(())
}

pub(crate) fn check_depth(depth: u32) -> Result<()> {
    if depth == 0 || depth > kp::MAX_DEPTH {
        return Err(Error::input(
            "--depth",
            format!("{depth}; allowed 1..={}", kp::MAX_DEPTH),
        ));
    }
    Ok(())
}
