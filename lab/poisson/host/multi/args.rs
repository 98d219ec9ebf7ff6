//! The multi-GPU arguments: `--gpus N` / `--no-overlap` of `ptxlab poisson`
//! and `ptxlab poisson-scaling`.

use super::nccl;
use std::path::PathBuf;

/// The multi-GPU options of `ptxlab poisson` (flattened into its `Args`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct GpuArgs {
    /// Split the grid into N row slabs, one per device, with a halo exchange
    /// every sweep (NCCL between GPUs; --backend sim: N simulated devices).
    /// Under a launcher (PTXLAB_RANK/PTXLAB_WORLD_SIZE, torchrun's RANK/
    /// WORLD_SIZE, mpirun's OMPI_COMM_WORLD_*), this process is one of N
    /// ranks with one GPU each.
    #[arg(long = "gpus", value_name = "N")]
    pub count: Option<usize>,
    /// Exchange halos after the whole slab is updated, instead of overlapping
    /// the exchange with the interior update (for comparison).
    #[arg(long)]
    pub no_overlap: bool,
}

impl GpuArgs {
    /// `true` when a multi-device option was given (`ptxlab poisson` then
    /// dispatches to [`super::run::cli`]).
    pub fn requested(&self) -> bool {
        self.count.is_some() || self.no_overlap
    }
}

/// Sets `NCCL_NVLS_ENABLE=0` (NVLink multicast off, see [`nccl`]).
///
/// # Safety
/// No other thread may read or write the environment while this runs (call
/// it first thing in `main`, before any thread exists).
pub unsafe fn disable_nvls_in_env() {
    let (k, v) = nccl::NVLS_ENV;
    // SAFETY: forwarded from the caller: the process is single-threaded here.
    unsafe { std::env::set_var(k, v) };
}

/// `ptxlab poisson-scaling` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct ScalingArgs {
    /// Square grids N (repeat it or separate by commas): strong scaling on
    /// N x N, weak scaling on N columns x gpus*N rows.
    #[arg(long, value_delimiter = ',', default_value = "8192,16384", value_parser = ptxlab_common::cli::GridSize::parse, allow_negative_numbers = true)]
    pub size: Vec<ptxlab_common::cli::GridSize>,
    /// GPUs (or simulated devices) to scale to.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub gpus: usize,
    /// Sweeps per timed batch.
    #[arg(long, default_value_t = 200, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub iters: usize,
    /// Timed repetitions: batches of --iters sweeps (1..=10000; the median
    /// is reported).
    #[arg(long, default_value_t = ptxlab_common::cli::DEFAULT_REPS, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
    /// Untimed sweeps first.
    #[arg(long, default_value_t = 20, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub warmup: usize,
    /// Element type.
    #[arg(long, value_enum, default_value_t = ptxlab_common::cli::Precision::F32)]
    pub precision: ptxlab_common::cli::Precision,
    /// The rung (naive, tiled or register: the temporal one is not
    /// decomposed), or all of them (naive, tiled, register).
    #[arg(long, value_parser = ptxlab_common::cli::OneOrAll::<crate::Rung>::parser(), default_value = "all")]
    pub variant: ptxlab_common::cli::OneOrAll<crate::Rung>,
    /// gpu or sim (sim: a smoke test at small sizes).
    #[arg(long, value_enum, default_value_t = ptxlab_common::Backend::Gpu)]
    pub backend: ptxlab_common::Backend,
    /// Skip the weak-scaling rows.
    #[arg(long)]
    pub no_weak: bool,
    /// Skip the bit-for-bit checks (odd grid after 1, 2, 37 sweeps, and each
    /// strong-scaling grid after the timed sweeps).
    #[arg(long)]
    pub no_check: bool,
    /// Also write the Markdown table to this file.
    #[arg(long)]
    pub md: Option<PathBuf>,
    /// Print the measured rows as JSON on stdout (the row objects of
    /// `results.json`: ms per sweep or per solve, the scaling in the note),
    /// and nothing else there.
    #[arg(long)]
    pub json: bool,
    /// jacobi (ms per sweep of the rung), multigrid or pcg (the solve to
    /// --tol on slabs with --smoother; the bench problem).
    #[arg(long, value_enum, default_value_t = crate::SolveMethod::Jacobi)]
    pub method: crate::SolveMethod,
    /// Multigrid and PCG: the relative residual to reach.
    #[arg(long, default_value_t = 1e-8)]
    pub tol: f64,
    /// Multigrid and PCG: the slabs' smoother, tile (all sweeps of a visit
    /// in one launch, a halo of 2 x sweeps rows) or rb (one launch and one
    /// exchange per colour).
    #[arg(long, value_enum, default_value_t = crate::mg::Smoother::Tile)]
    pub smoother: crate::mg::Smoother,
}

impl ScalingArgs {
    /// The sizes N of the `--size` grids, which must be square (N x N).
    pub fn square_sizes(&self) -> ptxlab_common::error::Result<Vec<usize>> {
        self.size
            .iter()
            .map(|g| {
                if g.is_square() {
                    Ok(g.nx)
                } else {
                    Err(ptxlab_common::error::Error::input(
                        "--size",
                        format!(
                            "{g}: poisson-scaling takes square grids N (strong scaling on N x N, \
                             weak on N x gpus*N); give --size {}",
                            g.nx
                        ),
                    ))
                }
            })
            .collect()
    }
}

impl Default for ScalingArgs {
    fn default() -> Self {
        Self {
            size: vec![
                ptxlab_common::cli::GridSize { nx: 8192, ny: 8192 },
                ptxlab_common::cli::GridSize {
                    nx: 16384,
                    ny: 16384,
                },
            ],
            gpus: 2,
            iters: 200,
            reps: ptxlab_common::cli::DEFAULT_REPS,
            warmup: 20,
            precision: ptxlab_common::cli::Precision::F32,
            variant: ptxlab_common::cli::OneOrAll::All,
            backend: ptxlab_common::Backend::Gpu,
            no_weak: false,
            no_check: false,
            md: None,
            json: false,
            method: crate::SolveMethod::Jacobi,
            tol: 1e-8,
            smoother: crate::mg::Smoother::Tile,
        }
    }
}
