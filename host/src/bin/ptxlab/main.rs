//! `ptxlab`: run, check and time the workloads from the command line.
//!
//! Every workload subcommand takes `--backend gpu|sim|cpu`: `gpu` runs the
//! Rust kernels on an NVIDIA GPU, `sim` runs the same kernels in the CPU
//! simulator, `cpu` runs the CPU baselines only. `ptxlab bench` runs every
//! workload and writes the report (it is what `cargo xtask build-and-bench`
//! runs after building).

use ptxlab::command_line::{self, Cmd};
use ptxlab::workloads::{
    attention, diffusion, fusion, lomb, mathcheck, matmul, poisson, primitives, vector,
};

mod bench;
mod sim_bench;
mod sim_fuzz;

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
    // The command line is defined in the library (`ptxlab::command_line`),
    // so tests and the fuzz target parse exactly what the binary parses.
    let cli = match command_line::parse_from(std::env::args_os()) {
        Ok(c) => c,
        Err(e) if e.kind() == clap::error::ErrorKind::InvalidSubcommand => {
            let names = command_line::subcommand_names();
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
        Cmd::Attention(a) => attention::cli(a).map_err(Into::into),
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
