//! The `ptxlab` command line as data: every subcommand and its arguments
//! ([`Cli`], [`Cmd`]), the one entry point that parses them
//! ([`parse_from`]; the binary and the CLI fuzz target both go through it),
//! and [`check`], the argument checks that need neither a device nor a
//! file, for the fuzz target to run on whatever parses.

use crate::error::Result;
use crate::workloads::{
    attention, diffusion, fusion, lomb, mathcheck, matmul, poisson, primitives, vector,
};
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
    /// Schedule of the CPU simulator: in-order (the default) or random
    /// (from --sim-seed). Overrides PTXLAB_SIM_SCHEDULE.
    #[arg(long, global = true, value_enum)]
    pub sim_schedule: Option<ScheduleArg>,
    /// Seed of a random simulator schedule (alone, it implies random).
    /// Overrides PTXLAB_SIM_SEED.
    #[arg(long, global = true)]
    pub sim_seed: Option<u64>,
}

/// The values of the global `--sim-schedule` flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ScheduleArg {
    /// Threads in index order, copies landing at their issue (the default).
    InOrder,
    /// From `--sim-seed`: random warp order, interruptions and landing times.
    Random,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Show the GPU (or why there is none), the embedded kernels and their resources.
    Info,
    /// Check and time every workload; write report.md, report.html, results.json/csv and charts.
    Bench(BenchArgs),
    /// Draw a recorded run's report again (charts, report.md, report.html) from its results.json.
    Report(ReportArgs),
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
    /// Attention softmax(Q K^T scale) V: the FlashAttention ladder.
    Attention(attention::Args),
    /// Three elementwise kernels against one fused kernel.
    Fusion(fusion::Args),
    /// Many small launches, plain and replayed from a CUDA graph.
    LaunchOverhead(fusion::LaunchArgs),
    /// Speed of the CPU simulator: simulated GPU threads per second.
    SimBench(SimBenchArgs),
    /// Error of the math functions (exp, powf, erf, ...) in ulps, on the GPU and the CPU.
    MathAccuracy(mathcheck::Args),
    /// A command on the simulator under many schedules: the first error or divergence.
    SimFuzz(SimFuzzArgs),
    /// The planted bugs of asynchronous pipelines, and what catches them.
    PipelineBugs(crate::pipeline_bugs::Args),
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
    #[arg(long, value_enum, default_value_t = crate::Backend::Gpu)]
    pub backend: crate::Backend,
    /// Output directory (default: target/bench-results/`<timestamp>`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also run the Python peers (CuPy, PyTorch, Numba) where installed.
    #[arg(long)]
    pub peers: bool,
    /// Folder of the peer scripts.
    #[arg(long, default_value = "peers")]
    pub peers_dir: PathBuf,
    /// Terse progress: one line per workload, none per row or peer step.
    #[arg(long)]
    pub quiet: bool,
}

/// `ptxlab report` arguments.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// A run's `results.json` (written by `ptxlab bench`). Repeat it to
    /// join the parts of one run (`bench --only A`, then `--only B`, on
    /// the same machine and commit): their workloads and peers follow in
    /// the order given, the environment and ceilings are the first part's.
    #[arg(long, value_name = "results.json", required = true, num_args = 1)]
    pub from: Vec<PathBuf>,
    /// Folder to write the report into (created; files of the same names
    /// are replaced). Default: the folder of the first `--from`.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `ptxlab sim-fuzz` arguments.
#[derive(Debug, clap::Args)]
pub struct SimFuzzArgs {
    /// Random schedules to try after the in-order run.
    #[arg(long, default_value_t = 20)]
    pub seeds: u64,
    /// The first seed (then S+1, S+2, ...).
    #[arg(long, default_value_t = 1)]
    pub first_seed: u64,
    /// The ptxlab command and its arguments, after `--` (for example
    /// `-- pipeline-bugs --bug inplace-prefetch`); it must run on the
    /// simulator (`--backend sim` where the command has a backend).
    #[arg(required = true, allow_hyphen_values = true, num_args = 1.., last = true)]
    pub command: Vec<String>,
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
/// file (the rest happen when the subcommand runs; clap has checked the
/// backend names): the repetition counts, `bench --only`, Lomb-Scargle's
/// model options and the diffusion grid.
pub fn check(cli: &Cli) -> Result<()> {
    use crate::cli::check_reps;
    match &cli.cmd {
        Cmd::Bench(a) => {
            let names: Vec<&str> = crate::workloads::all().iter().map(|w| w.name).collect();
            match a.only.iter().find(|o| !names.contains(&o.as_str())) {
                Some(o) => Err(crate::error::Error::input(
                    "--only",
                    format!("`{o}`: allowed {}", names.join(", ")),
                )),
                None => Ok(()),
            }
        }
        Cmd::VectorAdd(a) => check_reps(a.reps),
        Cmd::PoissonScaling(a) => check_reps(a.reps),
        Cmd::LombScargle(a) => lomb::model_of(a).map(|_| ()),
        Cmd::Reduce(a) => check_reps(a.reps),
        Cmd::Histogram(a) => check_reps(a.reps),
        Cmd::MonteCarloPi(a) => check_reps(a.reps),
        Cmd::Diffusion(a) => {
            let (nx, ny) = diffusion::parse_size(&a.size)?;
            diffusion::check_params(nx, ny, a.alpha)
        }
        Cmd::Matmul(a) => check_reps(a.reps),
        Cmd::Attention(a) => check_reps(a.reps),
        Cmd::Fusion(a) => check_reps(a.reps),
        Cmd::LaunchOverhead(a) => check_reps(a.reps),
        Cmd::Info
        | Cmd::Report(_)
        | Cmd::Poisson(_)
        | Cmd::SimBench(_)
        | Cmd::MathAccuracy(_)
        | Cmd::SimFuzz(_)
        | Cmd::PipelineBugs(_) => Ok(()),
    }
}
