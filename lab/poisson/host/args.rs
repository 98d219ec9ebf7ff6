//! `ptxlab poisson` arguments.

use super::mg::{Cycle, Smoother};
use super::multi::args::GpuArgs;
use super::spectral::Boundary;
use super::types::{DEFAULT_DEPTH, Rung};
use ptxlab_common::cli::{GridSize, OneOrAll, Precision};
use ptxlab_common::error::{Error, Result};
use std::path::PathBuf;

/// `ptxlab poisson` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Grid: `N` (N x N) or `NXxNY` (NX columns, the fastest-varying
    /// index, by NY rows). Default 2000, or the shape of --b.
    #[arg(long, value_parser = GridSize::parse, allow_negative_numbers = true)]
    pub size: Option<GridSize>,
    /// The element type (with multigrid or pcg: of the cycles).
    #[arg(long, value_enum, default_value_t = Precision::F32)]
    pub precision: Precision,
    /// The rung of the Jacobi ladder, or all of them.
    #[arg(long, value_parser = OneOrAll::<Rung>::parser(), default_value = "all")]
    pub variant: OneOrAll<Rung>,
    /// Sweeps per pass of the temporal variant (1..=16).
    #[arg(long, default_value_t = DEFAULT_DEPTH, value_parser = ptxlab_common::cli::parse_whole::<u32>, allow_negative_numbers = true)]
    pub depth: u32,
    /// gpu, sim or cpu.
    #[arg(long, value_enum, default_value_t = ptxlab_common::Backend::Gpu)]
    pub backend: ptxlab_common::Backend,
    /// Sweeps to run (without --tol, default 100), or the most sweeps (with
    /// --tol, default 100000; 5000 on the simulator). f32 cannot reach a
    /// relative residual much below 1e-7 * 4 / (h^2 |b|); past that the solve
    /// stops at this count and reports "NOT converged".
    #[arg(long, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub iters: Option<usize>,
    /// Stop when ||b - lap_h p|| / ||b|| falls below this (positive).
    #[arg(long, allow_negative_numbers = true)]
    pub tol: Option<f64>,
    /// Sweeps between residual checks (with --tol).
    #[arg(long, default_value_t = 100, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub check_every: usize,
    /// Grid spacing h (default 1 / (max(nx, ny) - 1)).
    #[arg(long, allow_negative_numbers = true)]
    pub h: Option<f64>,
    /// Right-hand side b (.npy, 2-D C-order, shape (ny, nx), float32/float64
    /// matching --precision). Default: the manufactured problem
    /// b = -2 pi^2 sin(pi x) sin(pi y).
    #[arg(long)]
    pub b: Option<PathBuf>,
    /// Initial field, boundary values included (.npy, same shape and dtype as b).
    #[arg(long)]
    pub p0: Option<PathBuf>,
    /// Write the result p here (.npy).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Several devices: `--gpus N`, `--no-overlap` (see `poisson::multi`).
    #[command(flatten)]
    pub gpus: GpuArgs,
    /// Multigrid and PCG: `--method`, `--cycle`, `--pre/--post`, `--smoother`.
    #[command(flatten)]
    pub mg: MgArgs,
    /// Print the measured rows as JSON on stdout (the row objects of
    /// `results.json`), and nothing else there.
    #[arg(long)]
    pub json: bool,
}

impl Args {
    /// The multigrid smoother of this run: `--smoother` when given, else
    /// the tile smoother (on one device and on slabs with `--gpus`).
    pub fn smoother(&self) -> Smoother {
        self.mg.smoother.unwrap_or(Smoother::Tile)
    }

    /// The checks that need neither a device nor a file: the spectral
    /// solve's own flags with another method.
    pub fn check(&self) -> Result<()> {
        if self.mg.method != SolveMethod::Spectral {
            for (flag, given) in [
                ("--boundary", self.mg.boundary != Boundary::Dirichlet),
                ("--reps", self.mg.reps != ptxlab_common::cli::DEFAULT_REPS),
            ] {
                if given {
                    return Err(Error::input(
                        flag,
                        "only --method spectral takes it (the other methods solve the Dirichlet \
                         problem and time the solve itself)",
                    ));
                }
            }
        }
        Ok(())
    }
}

/// What `ptxlab poisson` runs (`--method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SolveMethod {
    /// The Jacobi sweep ladder.
    Jacobi,
    /// Multigrid cycles.
    Multigrid,
    /// Conjugate gradients preconditioned by one V-cycle.
    Pcg,
    /// The direct spectral solve (DST-I or DCT-II, `poisson::spectral`).
    Spectral,
}

/// The solver options of `ptxlab poisson` beyond the Jacobi sweeps.
#[derive(Debug, Clone, clap::Args)]
pub struct MgArgs {
    /// jacobi (the sweep ladder), multigrid, or pcg (conjugate gradients
    /// preconditioned by one V-cycle). With multigrid or pcg, --tol is the
    /// relative residual to reach (default 1e-8) and --iters the most cycles
    /// (default 50); --precision f32 runs the cycles in f32 and keeps the
    /// field and residual in f64 (mixed precision, iterative refinement).
    #[arg(long, value_enum, default_value_t = SolveMethod::Jacobi)]
    pub method: SolveMethod,
    /// The cycle: v, w, or fmg (full multigrid first, then V-cycles).
    #[arg(long, value_enum, default_value_t = Cycle::V)]
    pub cycle: Cycle,
    /// Pre-smoothing sweeps (red-black Gauss-Seidel), 1..=4.
    #[arg(long, default_value_t = 2, value_parser = ptxlab_common::cli::parse_whole::<u32>, allow_negative_numbers = true)]
    pub pre: u32,
    /// Post-smoothing sweeps, 0..=4.
    #[arg(long, default_value_t = 2, value_parser = ptxlab_common::cli::parse_whole::<u32>, allow_negative_numbers = true)]
    pub post: u32,
    /// tile (rung 2: all sweeps of a visit in one kernel through shared
    /// memory) or rb (rung 1: one kernel per colour). Default: tile, with
    /// --gpus too (each slab then stores a halo of 2 x sweeps rows).
    #[arg(long, value_enum)]
    pub smoother: Option<Smoother>,
    /// Over-relaxation of the red-black sweeps, in (0, 2) (1: Gauss-Seidel).
    #[arg(long, default_value_t = 1.1, allow_negative_numbers = true)]
    pub omega: f64,
    /// Post-smooth in the reverse colour order (a symmetric cycle, as PCG
    /// always does) instead of the pre-smoothing's order.
    #[arg(long)]
    pub symmetric: bool,
    /// Keep the finest level on the error equation with an outer step
    /// (rung 4) instead of holding the field there and taking the residual
    /// from the last sweep (rung 5, the default for f64 multigrid).
    #[arg(long)]
    pub no_fused_fine: bool,
    /// Launch each cycle directly instead of replaying it as a CUDA graph.
    #[arg(long)]
    pub no_graph: bool,
    /// Launch every coarse level's kernels instead of running the levels
    /// that fit one block's shared memory as one kernel (rung 3).
    #[arg(long)]
    pub no_coarse_block: bool,
    /// Spectral: dirichlet (the boundary cells of --p0 are the values) or
    /// neumann (they are the outward normal derivative; b must sum to zero
    /// with them folded in; the solution has zero interior mean).
    #[arg(long, value_enum, default_value_t = Boundary::Dirichlet)]
    pub boundary: Boundary,
    /// Spectral: timed solves after two warm-up solves.
    #[arg(long, default_value_t = ptxlab_common::cli::DEFAULT_REPS, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
}

impl Default for MgArgs {
    fn default() -> Self {
        Self {
            method: SolveMethod::Jacobi,
            cycle: Cycle::V,
            pre: 2,
            post: 2,
            smoother: None,
            omega: 1.1,
            symmetric: false,
            no_fused_fine: false,
            no_graph: false,
            no_coarse_block: false,
            boundary: Boundary::Dirichlet,
            reps: ptxlab_common::cli::DEFAULT_REPS,
        }
    }
}

impl Default for Args {
    fn default() -> Self {
        Self {
            size: None,
            precision: Precision::F32,
            variant: OneOrAll::All,
            depth: DEFAULT_DEPTH,
            backend: ptxlab_common::Backend::Gpu,
            iters: None,
            tol: None,
            check_every: 100,
            h: None,
            b: None,
            p0: None,
            out: None,
            gpus: Default::default(),
            mg: Default::default(),
            json: false,
        }
    }
}
