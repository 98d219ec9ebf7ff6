//! `ptxlab`: run, check and time the workloads from the command line.
//!
//! Every workload subcommand takes `--backend gpu|sim|cpu`: `gpu` runs the
//! Rust kernels on an NVIDIA GPU, `sim` runs the same kernels in the CPU
//! simulator, `cpu` runs the CPU baselines only. `ptxlab bench` runs every
//! workload and writes the report (it is what `cargo xtask build-and-bench`
//! runs after building).

use clap::{Parser, Subcommand};

use ptxlab::workloads::{diffusion, fusion, lomb, mathcheck, matmul, poisson, primitives, vector};

mod bench;
mod sim_bench;
mod sim_fuzz;

#[derive(Parser)]
#[command(
    name = "ptxlab",
    version,
    about = "Run, check and time Rust GPU kernels"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    /// Data-race detection of the CPU simulator (`--backend sim`): on (the
    /// default; it costs up to half the speed, `ptxlab sim-bench` measures
    /// it) or off. Overrides the environment variable PTXLAB_SIM_RACECHECK.
    #[arg(long, global = true, value_name = "on|off", value_parser = ["on", "off"])]
    race_check: Option<String>,
    /// Schedule of the CPU simulator: in-order (the default) or random
    /// (from --sim-seed). Overrides PTXLAB_SIM_SCHEDULE.
    #[arg(long, global = true, value_enum)]
    sim_schedule: Option<sim_fuzz::ScheduleArg>,
    /// Seed of a random simulator schedule (alone, it implies random).
    /// Overrides PTXLAB_SIM_SEED.
    #[arg(long, global = true)]
    sim_seed: Option<u64>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Show the GPU (or why there is none), the embedded kernels and their resources.
    Info,
    /// Check and time every workload; write report.md, report.html, results.json/csv and charts.
    Bench(bench::Args),
    /// Draw a recorded run's report again (charts, report.md, report.html) from its results.json.
    Report(bench::ReportArgs),
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
    SimBench(sim_bench::Args),
    /// Error of the math functions (exp, powf, erf, ...) in ulps, on the GPU and the CPU.
    MathAccuracy(mathcheck::Args),
    /// A command on the simulator under many schedules: the first error or divergence.
    SimFuzz(sim_fuzz::Args),
    /// The planted bugs of asynchronous pipelines, and what catches them.
    PipelineBugs(ptxlab::pipeline_bugs::Args),
}

/// Let a closed stdout (`cargo xtask inspect k | head`) end the process
/// quietly, as it does for C tools, instead of `println!` panicking with
/// "failed printing to stdout: Broken pipe". Rust's runtime ignores SIGPIPE;
/// this puts the default action back.
fn default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in `main`, before any other thread exists;
    // setting SIGPIPE's disposition to SIG_DFL installs no Rust handler, so
    // there is no handler code whose async-signal safety matters.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() {
    default_sigpipe();
    // SAFETY: first thing in `main` after the signal set-up: no other thread
    // exists yet, so nothing reads the environment concurrently.
    unsafe { poisson::multi::disable_nvls_in_env() };
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if e.kind() == clap::error::ErrorKind::InvalidSubcommand => {
            use clap::CommandFactory;
            let names: Vec<String> = Cli::command()
                .get_subcommands()
                .map(|s| s.get_name().to_string())
                .collect();
            eprintln!("{e}\nvalid commands: {}", names.join(", "));
            std::process::exit(2);
        }
        Err(e) => e.exit(),
    };
    if let Some(r) = &cli.race_check {
        ptxlab_device::sim::set_race_check(Some(r == "on"));
    }
    sim_fuzz::apply_schedule(cli.sim_schedule, cli.sim_seed);
    let r: anyhow::Result<()> = match &cli.cmd {
        Cmd::Info => bench::info(),
        Cmd::Bench(a) => bench::run(a),
        Cmd::Report(a) => bench::report_from(a),
        Cmd::VectorAdd(a) => vector::cli(a).map_err(Into::into),
        Cmd::Poisson(a) => poisson::cli(a).map_err(Into::into),
        Cmd::PoissonScaling(a) => poisson::multi::cli_scaling(a).map_err(Into::into),
        Cmd::LombScargle(a) => lomb::cli(a).map_err(Into::into),
        Cmd::Reduce(a) => primitives::cli_reduce(a).map_err(Into::into),
        Cmd::Histogram(a) => primitives::cli_histogram(a).map_err(Into::into),
        Cmd::MonteCarloPi(a) => primitives::cli_pi(a).map_err(Into::into),
        Cmd::Diffusion(a) => diffusion::cli(a).map_err(Into::into),
        Cmd::Matmul(a) => matmul::cli(a).map_err(Into::into),
        Cmd::Fusion(a) => fusion::cli(a).map_err(Into::into),
        Cmd::LaunchOverhead(a) => fusion::cli_launch(a).map_err(Into::into),
        Cmd::SimBench(a) => sim_bench::run(a),
        Cmd::MathAccuracy(a) => mathcheck::cli(a).map_err(Into::into),
        Cmd::SimFuzz(a) => sim_fuzz::run(a),
        Cmd::PipelineBugs(a) => ptxlab::pipeline_bugs::cli(a).map_err(Into::into),
    };
    if let Err(e) = r {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
