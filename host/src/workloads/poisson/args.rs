//! `ptxlab poisson` arguments.

use super::multi::args::GpuArgs;
use super::types::{DEFAULT_DEPTH, Rung};
use crate::cli::{OneOrAll, Precision};
use std::path::PathBuf;

/// `ptxlab poisson` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Columns (x, fastest-varying). Default 2000, or the shape of --b.
    #[arg(long, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub nx: Option<usize>,
    /// Rows (y). Default 2000, or the shape of --b.
    #[arg(long, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub ny: Option<usize>,
    /// Square grid N x N (instead of --nx/--ny).
    #[arg(long, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub size: Option<usize>,
    /// Element type.
    #[arg(long, value_enum, default_value_t = Precision::F32)]
    pub precision: Precision,
    /// The rung of the Jacobi ladder, or all of them.
    #[arg(long, value_parser = OneOrAll::<Rung>::parser(), default_value = "all")]
    pub variant: OneOrAll<Rung>,
    /// Sweeps per pass of the temporal variant (1..=16).
    #[arg(long, default_value_t = DEFAULT_DEPTH, value_parser = crate::cli::parse_whole::<u32>, allow_negative_numbers = true)]
    pub depth: u32,
    /// gpu, sim or cpu.
    #[arg(long, value_enum, default_value_t = crate::Backend::Gpu)]
    pub backend: crate::Backend,
    /// Sweeps to run (without --tol, default 100), or the most sweeps (with
    /// --tol, default 100000; 5000 on the simulator). f32 cannot reach a
    /// relative residual much below 1e-7 * 4 / (h^2 |b|); past that the solve
    /// stops at this count and reports "NOT converged".
    #[arg(long, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub iters: Option<usize>,
    /// Stop when ||b - lap_h p|| / ||b|| falls below this (positive).
    #[arg(long, allow_negative_numbers = true)]
    pub tol: Option<f64>,
    /// Sweeps between residual checks (with --tol).
    #[arg(long, default_value_t = 100, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
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
}

/// The solver options of `ptxlab poisson` beyond the Jacobi sweeps.
#[derive(Debug, Clone, clap::Args)]
pub struct MgArgs {
    /// jacobi (the sweep ladder), multigrid, or pcg (conjugate gradients
    /// preconditioned by one V-cycle). With multigrid or pcg, --tol is the
    /// relative residual to reach (default 1e-8) and --iters the most cycles
    /// (default 50); --precision f32 runs the cycles in f32 and keeps the
    /// field and residual in f64 (mixed precision, iterative refinement).
    #[arg(long, default_value = "jacobi")]
    pub method: String,
    /// v, w or fmg (full multigrid first, then V-cycles).
    #[arg(long, default_value = "v")]
    pub cycle: String,
    /// Pre-smoothing sweeps (red-black Gauss-Seidel), 1..=4.
    #[arg(long, default_value_t = 2, value_parser = crate::cli::parse_whole::<u32>, allow_negative_numbers = true)]
    pub pre: u32,
    /// Post-smoothing sweeps, 0..=4.
    #[arg(long, default_value_t = 2, value_parser = crate::cli::parse_whole::<u32>, allow_negative_numbers = true)]
    pub post: u32,
    /// tile (rung 2: all sweeps of a visit in one kernel through shared
    /// memory) or rb (rung 1: one kernel per colour).
    #[arg(long, default_value = "tile")]
    pub smoother: String,
    /// Launch each cycle directly instead of replaying it as a CUDA graph.
    #[arg(long)]
    pub no_graph: bool,
    /// Launch every coarse level's kernels instead of running the levels
    /// that fit one block's shared memory as one kernel (rung 3).
    #[arg(long)]
    pub no_coarse_block: bool,
}

impl Default for MgArgs {
    fn default() -> Self {
        Self {
            method: "jacobi".into(),
            cycle: "v".into(),
            pre: 2,
            post: 2,
            smoother: "tile".into(),
            no_graph: false,
            no_coarse_block: false,
        }
    }
}

impl Default for Args {
    fn default() -> Self {
        Self {
            nx: None,
            ny: None,
            size: None,
            precision: Precision::F32,
            variant: OneOrAll::All,
            depth: DEFAULT_DEPTH,
            backend: crate::Backend::Gpu,
            iters: None,
            tol: None,
            check_every: 100,
            h: None,
            b: None,
            p0: None,
            out: None,
            gpus: Default::default(),
            mg: Default::default(),
        }
    }
}
