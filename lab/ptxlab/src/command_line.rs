//! The `ptxlab` command line as data: every subcommand and its arguments
//! ([`Cli`], [`Cmd`]), the one entry point that parses them
//! ([`parse_from`]; the binary and the CLI fuzz target both go through it),
//! and [`check`], the argument checks that need neither a device nor a
//! file, for the fuzz target to run on whatever parses.

use crate::error::Result;
use crate::workloads::{
    attention, diffusion, fft, fusion, lomb, mathcheck, matmul, poisson, primitives, vector,
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
    #[arg(long, global = true, value_enum)]
    pub race_check: Option<crate::cli::OnOff>,
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
    /// 2D Poisson: the Jacobi stencil ladder, and solves to a tolerance by
    /// Jacobi, multigrid or PCG, on one device or row slabs over several.
    Poisson(poisson::Args),
    /// Multi-GPU Poisson: strong and weak scaling on 1 and N devices (Jacobi
    /// ms per sweep, or multigrid / PCG solves with --method).
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
    /// GEMM: the SGEMM ladder (f32), the tensor-core ladders (bf16, f16),
    /// 3xTF32 on tensor cores, and the fused column sum.
    Matmul(matmul::Args),
    /// Attention softmax(Q K^T scale) V: the FlashAttention ladder.
    Attention(attention::Args),
    /// Decoding over a paged KV cache: a few new query rows per sequence,
    /// split over the cached length (FlashDecoding), grouped K/V heads.
    AttentionDecode(attention::decode::Args),
    /// FFT: complex and real transforms, 1-D batched or 2-D, any length (the FFT ladder).
    Fft(fft::Args),
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
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
}

/// `ptxlab completions` arguments.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell whose completion script to print on stdout (for example
    /// `ptxlab completions bash > ~/.local/share/bash-completion/completions/ptxlab`).
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Writes the completion script of `ptxlab` for `shell` to `out`.
pub fn completions(shell: clap_complete::Shell, out: &mut dyn std::io::Write) {
    use clap::CommandFactory;
    clap_complete::generate(shell, &mut Cli::command(), "ptxlab", out);
}

/// The workloads of the registry ([`crate::workloads::all`]) as the
/// possible values of `bench --only`, so `--help` lists them all.
fn workload_parser() -> clap::builder::PossibleValuesParser {
    use clap::builder::PossibleValue;
    clap::builder::PossibleValuesParser::new(
        crate::workloads::all()
            .into_iter()
            .map(|w| PossibleValue::new(w.name).help(w.about)),
    )
}

/// `ptxlab bench` arguments.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Smaller sizes and fewer repetitions.
    #[arg(long)]
    pub quick: bool,
    /// Only these workloads (repeatable; default: every workload).
    #[arg(long, value_parser = workload_parser())]
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
    /// Random schedules to try after the in-order run (0: only the in-order
    /// run).
    #[arg(long, default_value_t = 20, value_parser = crate::cli::parse_whole::<u64>, allow_negative_numbers = true)]
    pub seeds: u64,
    /// The first seed (then S+1, S+2, ...).
    #[arg(long, default_value_t = 1, value_parser = crate::cli::parse_whole::<u64>, allow_negative_numbers = true)]
    pub first_seed: u64,
    /// The ptxlab command and its arguments, after `--` (for example
    /// `-- pipeline-bugs --bug inplace-prefetch`). It runs on the simulator:
    /// `--backend sim` is added when the command has a `--backend` and none
    /// is given; another backend is refused.
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
    #[arg(long, value_name = "TEXT")]
    pub kernel: Option<String>,
    /// Race detection: on, off, or both (one row each).
    #[arg(long, value_enum, default_value_t = RaceModes::Both)]
    pub race: RaceModes,
    /// Print the measured rows as JSON on stdout (the row objects of
    /// `results.json`), and nothing else there.
    #[arg(long)]
    pub json: bool,
}

/// `sim-bench --race`: the race-detection settings to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RaceModes {
    /// Race detection on.
    On,
    /// Race detection off.
    Off,
    /// One row with it on, one with it off.
    Both,
}

impl RaceModes {
    /// The settings, in row order (`true`: race detection on).
    pub fn settings(self) -> &'static [bool] {
        match self {
            RaceModes::On => &[true],
            RaceModes::Off => &[false],
            RaceModes::Both => &[true, false],
        }
    }
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

impl Cmd {
    /// `true` when the command was asked for `--json` (its measured rows as
    /// JSON on stdout, and nothing else there).
    pub fn json(&self) -> bool {
        match self {
            Cmd::VectorAdd(a) => a.json,
            Cmd::Poisson(a) => a.json,
            Cmd::Reduce(a) => a.json,
            Cmd::Histogram(a) => a.json,
            Cmd::MonteCarloPi(a) => a.json,
            Cmd::Diffusion(a) => a.json,
            Cmd::Matmul(a) => a.json,
            Cmd::Attention(a) => a.json,
            Cmd::AttentionDecode(a) => a.json,
            Cmd::Fft(a) => a.json,
            Cmd::Fusion(a) => a.json,
            Cmd::LaunchOverhead(a) => a.json,
            Cmd::SimBench(a) => a.json,
            Cmd::LombScargle(a) => a.json,
            Cmd::MathAccuracy(a) => a.json,
            Cmd::PoissonScaling(a) => a.json,
            Cmd::Info
            | Cmd::Bench(_)
            | Cmd::Report(_)
            | Cmd::SimFuzz(_)
            | Cmd::PipelineBugs(_)
            | Cmd::Completions(_) => false,
        }
    }
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
/// model options and the grids.
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
        Cmd::Poisson(a) => a.check(),
        Cmd::PoissonScaling(a) => {
            check_reps(a.reps)?;
            a.square_sizes().map(|_| ())
        }
        Cmd::LombScargle(a) => {
            check_reps(a.reps)?;
            lomb::model_of(a).map(|_| ())
        }
        Cmd::Reduce(a) => check_reps(a.reps),
        Cmd::Histogram(a) => check_reps(a.reps),
        Cmd::MonteCarloPi(a) => check_reps(a.reps),
        Cmd::Diffusion(a) => diffusion::check_params(a.size.nx, a.size.ny, a.alpha),
        Cmd::Matmul(a) => check_reps(a.reps),
        Cmd::Attention(a) => check_reps(a.reps),
        Cmd::AttentionDecode(a) => check_reps(a.reps),
        Cmd::Fft(a) => check_reps(a.reps),
        Cmd::Fusion(a) => check_reps(a.reps),
        Cmd::LaunchOverhead(a) => check_reps(a.reps),
        Cmd::Info
        | Cmd::Report(_)
        | Cmd::SimBench(_)
        | Cmd::MathAccuracy(_)
        | Cmd::SimFuzz(_)
        | Cmd::PipelineBugs(_)
        | Cmd::Completions(_) => Ok(()),
    }
}
