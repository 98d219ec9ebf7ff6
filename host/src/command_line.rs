//! The `ptxlab` command line as data: every subcommand and its arguments
//! ([`Cli`], [`Cmd`]), the one entry point that parses them
//! ([`parse_from`]; the binary and the CLI fuzz target both go through it),
//! and [`check`], the argument checks that need neither a device nor a
//! file, for the fuzz target to run on whatever parses.

use crate::error::Result;
use crate::workloads::{diffusion, fusion, lomb, matmul, poisson, primitives, vector};
use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;

/// `ptxlab`'s arguments.
#[derive(Debug, Parser)]
#[command(
    name = "ptxlab",
    version,
    about = "Run, check and time Rust GPU kernels"
)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub cmd: Cmd,
    /// Data-race detection of the CPU simulator (`--backend sim`): on (the
    /// default; it costs up to half the speed, `ptxlab sim-bench` measures
    /// it) or off. Overrides the environment variable PTXLAB_SIM_RACECHECK.
    #[arg(long, global = true, value_name = "on|off", value_parser = ["on", "off"])]
    pub race_check: Option<String>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Show the GPU (or why there is none), the embedded kernels and their resources.
    Info,
    /// Check and time every workload; write report.md, results.json/csv and plots.
    Bench(BenchArgs),
    /// c = a + b: checked against the CPU, then timed.
    VectorAdd(vector::Args),
    /// 2D Poisson by Jacobi iteration (the stencil ladder and a real solve).
    Poisson(poisson::Args),
    /// Multi-GPU Poisson: ms per sweep on 1 and N GPUs, strong and weak scaling.
    PoissonScaling(poisson::multi::ScalingArgs),
    /// Lomb-Scargle periodogram (the optimisation ladder).
    LombScargle(lomb::Args),
    /// Sum reduction ladder.
    Reduce(primitives::ReduceArgs),
    /// 256-bin histogram: global atomics vs privatised shared-memory bins.
    Histogram(primitives::HistogramArgs),
    /// Monte-Carlo estimate of pi.
    MonteCarloPi(primitives::PiArgs),
    /// 2D diffusion (race-free ping-pong, and the material's racy version).
    Diffusion(diffusion::Args),
    /// SGEMM ladder and the fused column sum.
    Matmul(matmul::Args),
    /// Three elementwise kernels against one fused kernel.
    Fusion(fusion::Args),
    /// Many small launches, plain and replayed from a CUDA graph.
    LaunchOverhead(fusion::LaunchArgs),
    /// Speed of the CPU simulator: simulated GPU threads per second.
    SimBench(SimBenchArgs),
}

/// `ptxlab bench` arguments.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Smaller sizes and fewer repetitions.
    #[arg(long)]
    pub quick: bool,
    /// Only these workloads (repeatable): poisson, lomb-scargle, vector-add,
    /// primitives (reduce, histogram, Monte-Carlo pi), diffusion, matmul, fusion.
    #[arg(long)]
    pub only: Vec<String>,
    /// gpu (fall back to CPU + simulator checks when there is no GPU), sim, or cpu.
    #[arg(long, default_value = "gpu")]
    pub backend: String,
    /// Output directory (default: target/bench-results/<timestamp>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also run the Python peers (CuPy, PyTorch, Numba) where installed.
    #[arg(long)]
    pub peers: bool,
    /// Folder of the peer scripts.
    #[arg(long, default_value = "peers")]
    pub peers_dir: PathBuf,
}

/// `ptxlab sim-bench` arguments.
#[derive(Debug, clap::Args)]
pub struct SimBenchArgs {
    /// Keep launching each kernel until this many seconds have passed (at
    /// least 3 launches).
    #[arg(long, default_value_t = 1.0)]
    pub min_seconds: f64,
    /// Only the kernels whose name contains this text.
    #[arg(long)]
    pub only: Option<String>,
    /// Race detection: on, off, or both (one row each).
    #[arg(long, default_value = "both")]
    pub race: String,
}

/// Parses a command line (`args[0]` is the program name), as the binary
/// does; clap's error (usage, `--help`, `--version` included) otherwise.
pub fn parse_from<I, T>(args: I) -> std::result::Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    Cli::try_parse_from(args)
}

/// The names of the subcommands, for the message on an unknown one.
pub fn subcommand_names() -> Vec<String> {
    use clap::CommandFactory;
    Cli::command()
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect()
}

/// The checks of a parsed command line that need neither a device nor a
/// file (the rest happen when the subcommand runs): the backend names,
/// the repetition counts, `bench --only`, Lomb-Scargle's model options and
/// the diffusion grid.
pub fn check(cli: &Cli) -> Result<()> {
    let backend = |b: &str| b.parse::<crate::Backend>().map(|_| ());
    match &cli.cmd {
        Cmd::Info => Ok(()),
        Cmd::Bench(a) => {
            let names: Vec<&str> = crate::workloads::all().iter().map(|w| w.name).collect();
            if let Some(o) = a.only.iter().find(|o| !names.contains(&o.as_str())) {
                return Err(crate::error::Error::input(
                    "--only",
                    format!("`{o}`: allowed {}", names.join(", ")),
                ));
            }
            backend(&a.backend)
        }
        Cmd::VectorAdd(a) => backend(&a.backend).and(crate::cli::check_reps(a.reps)),
        Cmd::Poisson(a) => backend(&a.backend),
        Cmd::PoissonScaling(a) => backend(&a.backend).and(crate::cli::check_reps(a.reps)),
        Cmd::LombScargle(a) => backend(&a.backend).and(lomb::model_of(a).map(|_| ())),
        Cmd::Reduce(a) => backend(&a.backend).and(crate::cli::check_reps(a.reps)),
        Cmd::Histogram(a) => backend(&a.backend).and(crate::cli::check_reps(a.reps)),
        Cmd::MonteCarloPi(a) => backend(&a.backend).and(crate::cli::check_reps(a.reps)),
        Cmd::Diffusion(a) => {
            backend(&a.backend)?;
            let (nx, ny) = diffusion::parse_size(&a.size)?;
            diffusion::check_params(nx, ny, a.alpha)
        }
        Cmd::Matmul(a) => backend(&a.backend).and(crate::cli::check_reps(a.reps)),
        Cmd::Fusion(a) => backend(&a.backend).and(crate::cli::check_reps(a.reps)),
        Cmd::LaunchOverhead(a) => backend(&a.backend).and(crate::cli::check_reps(a.reps)),
        Cmd::SimBench(_) => Ok(()),
    }
}
