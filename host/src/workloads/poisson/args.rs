//! `ptxlab poisson` arguments.

use super::multi::args::GpuArgs;
use super::types::DEFAULT_DEPTH;
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
    /// f32 or f64.
    #[arg(long, default_value = "f32")]
    pub precision: String,
    /// naive, tiled, register, temporal, or all.
    #[arg(long, default_value = "all")]
    pub variant: String,
    /// Sweeps per pass of the temporal variant (1..=16).
    #[arg(long, default_value_t = DEFAULT_DEPTH, value_parser = crate::cli::parse_whole::<u32>, allow_negative_numbers = true)]
    pub depth: u32,
    /// gpu, sim or cpu.
    #[arg(long, default_value = "gpu")]
    pub backend: String,
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
}

impl Default for Args {
    fn default() -> Self {
        Self {
            nx: None,
            ny: None,
            size: None,
            precision: "f32".into(),
            variant: "all".into(),
            depth: DEFAULT_DEPTH,
            backend: "gpu".into(),
            iters: None,
            tol: None,
            check_every: 100,
            h: None,
            b: None,
            p0: None,
            out: None,
            gpus: Default::default(),
        }
    }
}
