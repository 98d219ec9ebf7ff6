//! The multigrid hierarchy of a grid (shapes and spacings of every level)
//! and the solver's options: pure data, no device.
//!
//! Coarsening (see `lab/poisson/kernels/multigrid/mod.rs`): an axis with `n >= 2`
//! interior points gets `n / 2` on the next level; an axis with one interior
//! point stays; the hierarchy ends at one interior point. Every level spans
//! the same domain `[0, (nx - 1) h] x [0, (ny - 1) h]`, so a level with
//! `nx_l` points per row has `hx = (nx - 1) h / (nx_l - 1)`.

use super::super::types::Grid;
use kernels_gpu::multigrid as km;
use ptxlab_common::error::{Error, Result};
use ptxlab_device::math::Real;

/// Most cells of a multigrid run on the simulator (one device or several).
pub const SIM_MAX_CELLS: usize = 1 << 16;
/// Most cells x cycles of a multigrid run on the simulator.
pub const SIM_MAX_WORK: usize = 1 << 22;

/// One level: its full grid (interior plus boundary ring) and operator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Level {
    /// Columns, boundary included.
    pub nx: usize,
    /// Rows, boundary included.
    pub ny: usize,
    /// `1 / hx^2`.
    pub cx: f64,
    /// `1 / hy^2`.
    pub cy: f64,
}

impl Level {
    /// Cells, boundary included.
    pub fn cells(&self) -> usize {
        self.nx * self.ny
    }
    /// Its shape, as the kernels take it.
    pub fn dims(&self) -> km::Dims {
        km::Dims {
            nx: self.nx as u32,
            ny: self.ny as u32,
        }
    }
    /// Its shape and operator in the cycle's precision, as the kernels take
    /// them.
    pub fn stencil<T: Real>(&self) -> km::Stencil<T> {
        km::Stencil {
            dims: self.dims(),
            cx: T::from_f64(self.cx),
            cy: T::from_f64(self.cy),
        }
    }
    /// The fine level of spacing `h` as its f64 kernels take it (`1 / h^2`).
    pub fn fine(&self, h: f64) -> km::Fine {
        km::Fine {
            nx: self.nx as u32,
            ny: self.ny as u32,
            inv_h2: 1.0 / (h * h),
        }
    }
}

/// Every level of a grid, finest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Hierarchy {
    /// Finest first; the last has one interior point.
    pub levels: Vec<Level>,
    /// Fine-grid spacing.
    pub h: f64,
}

fn coarse(n: usize) -> usize {
    if n >= 2 { n / 2 } else { n }
}

impl Hierarchy {
    /// The hierarchy of `grid` with spacing `h` (checked by the caller).
    pub fn new(grid: Grid, h: f64) -> Result<Self> {
        grid.validate()?;
        if !(h.is_finite() && h > 0.0) {
            return Err(Error::input(
                "--h",
                format!("{h}; a positive finite spacing"),
            ));
        }
        let (lx, ly) = ((grid.nx - 1) as f64 * h, (grid.ny - 1) as f64 * h);
        let level = |nx: usize, ny: usize| {
            let hx = lx / (nx - 1) as f64;
            let hy = ly / (ny - 1) as f64;
            Level {
                nx,
                ny,
                cx: 1.0 / (hx * hx),
                cy: 1.0 / (hy * hy),
            }
        };
        let (mut ix, mut iy) = (grid.nx - 2, grid.ny - 2);
        let mut levels = vec![level(grid.nx, grid.ny)];
        while ix > 1 || iy > 1 {
            (ix, iy) = (coarse(ix), coarse(iy));
            levels.push(level(ix + 2, iy + 2));
        }
        Ok(Self { levels, h })
    }
    /// Levels.
    pub fn depth(&self) -> usize {
        self.levels.len()
    }
    /// The finest level.
    pub fn fine(&self) -> Level {
        self.levels[0]
    }
    /// `nx x ny` of every level, for reports.
    pub fn describe(&self) -> String {
        self.levels
            .iter()
            .map(|l| format!("{}x{}", l.nx, l.ny))
            .collect::<Vec<_>>()
            .join(" > ")
    }
}

/// What solves the system to a tolerance (`--method`, with `jacobi` for the
/// sweep ladder: [`super::super::args::SolveMethod`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Method {
    /// Multigrid cycles on the error equation (defect correction).
    Multigrid,
    /// Conjugate gradients preconditioned by one V-cycle.
    Pcg,
}

/// The cycle (`--cycle`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Cycle {
    /// One visit of each coarser level.
    V,
    /// Two visits of each coarser level.
    W,
    /// Full multigrid first (coarsest to finest, a V-cycle on each), then V-cycles.
    Fmg,
}

/// The smoother's implementation (`--smoother`; both do red-black
/// Gauss-Seidel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Smoother {
    /// Rung 1: one launch per colour, in place; a separate prolongation.
    #[value(name = "rb")]
    RedBlack,
    /// Rung 2: all sweeps of a visit in one launch through shared memory,
    /// the prolongation fused into the post-smoothing.
    Tile,
}

/// Options of a multigrid or PCG solve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MgOptions {
    /// Multigrid or PCG.
    pub method: Method,
    /// V, W or FMG (PCG: the preconditioner is always one V-cycle).
    pub cycle: Cycle,
    /// Pre-smoothing sweeps (>= 1: the first one starts from zero).
    pub pre: u32,
    /// Post-smoothing sweeps.
    pub post: u32,
    /// Rung 1 or 2.
    pub smoother: Smoother,
    /// Stop when `||b - lap_h p|| / ||b||` is below this.
    pub tol: f64,
    /// Most cycles (PCG: iterations).
    pub max_cycles: usize,
    /// Replay each cycle as a CUDA graph (GPU only; ignored elsewhere).
    pub graph: bool,
    /// Rung 3: run the V-cycle over the coarse levels that fit in one
    /// block's shared memory as one kernel (device only; the CPU and the
    /// result are the same either way).
    pub coarse_block: bool,
    /// Over-relaxation of the red-black sweeps (`--omega`, in (0, 2); 1 is
    /// Gauss-Seidel): rung 4 uses 1.1 (the coarsest level, one point, is
    /// always solved with 1).
    pub omega: f64,
    /// Post-smoothing in the reverse colour order (black first), which
    /// makes the cycle a symmetric operator. PCG needs it and always has
    /// it; for multigrid, the same order as the pre-smoothing (red first,
    /// rung 4) leaves a smaller residual per cycle.
    pub symmetric: bool,
    /// Rung 5: the finest level holds the field itself (f64) instead of a
    /// correction, the residual's norm comes out of the last sweep, and
    /// there is no outer step (multigrid with the tile smoother, post >= 1
    /// and f64 cycles; the other solves keep the outer step).
    pub field_on_fine: bool,
}

impl Default for MgOptions {
    fn default() -> Self {
        Self {
            method: Method::Multigrid,
            cycle: Cycle::V,
            pre: 2,
            post: 2,
            smoother: Smoother::Tile,
            tol: 1e-8,
            max_cycles: 50,
            graph: true,
            coarse_block: true,
            omega: 1.1,
            symmetric: false,
            field_on_fine: true,
        }
    }
}

/// Most cycles or PCG iterations one solve may ask for.
pub const MAX_CYCLES: usize = 10_000;

impl MgOptions {
    /// Whether post-smoothing runs black first (the symmetric cycle).
    pub fn post_black_first(&self) -> bool {
        self.symmetric || self.method == Method::Pcg
    }
    /// Whether this solve keeps the field on the finest level (rung 5) for
    /// cycle arrays of `elem` bytes: asked for, multigrid, the tile
    /// smoother with post-smoothing, f64 cycles. The device and the CPU
    /// solver decide it here, alike.
    pub fn fused_fine(&self, elem: usize) -> bool {
        self.field_on_fine
            && self.method == Method::Multigrid
            && self.smoother == Smoother::Tile
            && self.post > 0
            && elem == 8
    }
    /// Rejects what the solver cannot do, naming the option.
    pub fn validate(&self) -> Result<()> {
        if !(self.omega > 0.0 && self.omega < 2.0) {
            return Err(Error::input(
                "--omega",
                format!(
                    "{}; the over-relaxation of the sweeps must lie in (0, 2) (1 is \
                     Gauss-Seidel)",
                    self.omega
                ),
            ));
        }
        if !(self.tol.is_finite() && self.tol > 0.0) {
            return Err(Error::input(
                "--tol",
                format!(
                    "{}; the tolerance must be a positive finite number",
                    self.tol
                ),
            ));
        }
        let most = km::MAX_TILE_SWEEPS;
        for (name, v, least) in [("--pre", self.pre, 1), ("--post", self.post, 0)] {
            if v < least || v > most {
                return Err(Error::input(
                    name,
                    format!(
                        "{v} sweeps; allowed {least}..={most} (the first pre-smoothing sweep \
                         starts from a zero correction)"
                    ),
                ));
            }
        }
        if self.max_cycles == 0 || self.max_cycles > MAX_CYCLES {
            return Err(Error::input(
                "--iters",
                format!(
                    "{} cycles; allowed 1..={MAX_CYCLES} for --method multigrid|pcg",
                    self.max_cycles
                ),
            ));
        }
        if self.method == Method::Pcg {
            if self.cycle != Cycle::V {
                return Err(Error::input(
                    "--cycle",
                    format!(
                        "{} with --method pcg; the preconditioner is one V-cycle (use --cycle v)",
                        ptxlab_common::cli::value_name(&self.cycle)
                    ),
                ));
            }
            if self.pre != self.post {
                return Err(Error::input(
                    "--pre/--post",
                    format!(
                        "{} and {} with --method pcg; a CG preconditioner must be symmetric, \
                         which needs as many post- as pre-smoothing sweeps",
                        self.pre, self.post
                    ),
                ));
            }
        }
        Ok(())
    }
    /// `"V(2,2)"`, `"W(2,2)"`, `"FMG+V(2,2)"`, `"PCG, V(2,2)"`; a label
    /// ends with the over-relaxation when it is not 1.
    pub fn label(&self) -> String {
        let c = match self.cycle {
            Cycle::V => "V",
            Cycle::W => "W",
            Cycle::Fmg => "FMG+V",
        };
        let s = if self.omega == 1.0 {
            format!("{c}({},{})", self.pre, self.post)
        } else {
            format!("{c}({},{}), omega {}", self.pre, self.post, self.omega)
        };
        match self.method {
            Method::Multigrid => format!("multigrid {s}"),
            Method::Pcg => format!("PCG, {s} preconditioner"),
        }
    }
}

/// Bytes one cycle must move at least (every array a kernel reads or writes
/// counted once per launch; halos, L2 hits and coarse-grid re-reads not),
/// for cycle arrays of `elem` bytes. The fine-level outer step (f64) is
/// included: `32 + elem` bytes per cell for multigrid (40 with f64 cycles),
/// `80 + 3 elem` for PCG (104 with f64 cycles).
pub fn cycle_bytes(hier: &Hierarchy, opts: &MgOptions, elem: usize) -> f64 {
    let fused = opts.fused_fine(elem);
    let e = elem as f64;
    let mut total = 0.0;
    let n = hier.depth();
    // Per visit of level l (not the coarsest): smoothing, restriction, prolongation.
    let visit = |l: usize| -> f64 {
        let c = hier.levels[l].cells() as f64;
        let cc = hier.levels[(l + 1).min(n - 1)].cells() as f64;
        let (pre, post) = (opts.pre as f64, opts.post as f64);
        match opts.smoother {
            // Read u and f, write u, per colour: ~3 e per cell and colour.
            Smoother::RedBlack => {
                3.0 * e * c * 2.0 * (pre + post)
                    + (2.0 * e * c + 2.0 * e * cc)
                    + (2.0 * e * c + e * cc)
            }
            // Pre: read f, write u; restrict: read u, f, write fc, uc;
            // post: read u, uc, f, write u.
            // Rung 5's finest level pre-smooths the field: it reads u too.
            Smoother::Tile => {
                (if fused && l == 0 { 3.0 } else { 2.0 }) * e * c
                    + (2.0 * e * c + 2.0 * e * cc)
                    + if opts.post > 0 {
                        3.0 * e * c + e * cc
                    } else {
                        2.0 * e * c + e * cc
                    }
            }
        }
    };
    let visits_w = |l: usize| -> f64 {
        match opts.cycle {
            Cycle::W => (1u64 << l.min(62)) as f64,
            _ => 1.0,
        }
    };
    for l in 0..n.saturating_sub(1) {
        total += visit(l) * visits_w(l);
    }
    let last = hier.levels[n - 1].cells() as f64;
    total += 2.0 * e * last * visits_w(n - 1);
    let fine = hier.fine().cells() as f64;
    total += match opts.method {
        // Rung 5: no outer step (the residual comes out of the last sweep).
        Method::Multigrid if fused => 0.0,
        Method::Multigrid => (32.0 + e) * fine,
        // dot (8 + e), direction (e + 8 + 8 + 8), update (4 x 8 + 2 x 8 + e).
        Method::Pcg => (8.0 + e) * fine + (24.0 + e) * fine + (48.0 + e) * fine,
    };
    total
}
