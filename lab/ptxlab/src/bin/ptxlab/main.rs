//! `ptxlab`: run, check and time the workloads from the command line.
//!
//! Every workload subcommand takes `--backend gpu|sim|cpu`: `gpu` runs the
//! Rust kernels on an NVIDIA GPU, `sim` runs the same kernels in the CPU
//! simulator, `cpu` runs the CPU baselines only. `ptxlab bench` runs every
//! workload and writes the report (it is what `cargo xtask build-and-bench`
//! runs after building).

use ptxlab::command_line::{self, Cmd};
use ptxlab::report::Row;
use ptxlab::workloads::{
    attention, diffusion, fft, fusion, lomb, mathcheck, matmul, poisson, primitives, vector,
};

mod bench;
mod info;
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
    if let Some(r) = cli.race_check {
        ptxlab_device::sim::set_race_check(Some(r.is_on()));
    }
    sim_fuzz::apply_schedule(cli.sim_schedule, cli.sim_seed);
    // `--json`: stdout carries the rows alone; everything else printed on
    // the way goes to stderr.
    let json_out = if cli.cmd.json() {
        match json_stdout() {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("error: --json: {e}");
                std::process::exit(1);
            }
        }
    } else {
        None
    };
    let r: anyhow::Result<Vec<Row>> = match &cli.cmd {
        Cmd::Info => info::info().map(|()| Vec::new()),
        Cmd::Bench(a) => bench::run(a).map(|()| Vec::new()),
        Cmd::Report(a) => bench::report_from(a).map(|()| Vec::new()),
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
        Cmd::AttentionDecode(a) => attention::decode::cli(a).map_err(Into::into),
        Cmd::Fft(a) => fft::cli(a).map_err(Into::into),
        Cmd::Fusion(a) => fusion::cli(a).map_err(Into::into),
        Cmd::LaunchOverhead(a) => fusion::cli_launch(a).map_err(Into::into),
        Cmd::SimBench(a) => sim_bench::run(a),
        Cmd::MathAccuracy(a) => mathcheck::cli(a).map_err(Into::into),
        Cmd::SimFuzz(a) => sim_fuzz::run(a).map(|()| Vec::new()),
        Cmd::PipelineBugs(a) => ptxlab::pipeline_bugs::cli(a)
            .map(|()| Vec::new())
            .map_err(Into::into),
        Cmd::Completions(a) => {
            command_line::completions(a.shell, &mut std::io::stdout());
            Ok(Vec::new())
        }
    };
    match (r, json_out) {
        (Err(e), _) => {
            eprintln!("error: {e:#}");
            std::process::exit(1);
        }
        (Ok(rows), Some(mut out)) => {
            use std::io::Write;
            let _ = std::io::stdout().flush();
            if let Err(e) = writeln!(out, "{}", ptxlab::cli::rows_json(&rows)) {
                eprintln!("error: writing the JSON rows: {e}");
                std::process::exit(1);
            }
        }
        (Ok(_), None) => {}
    }
}

/// Points stdout (file descriptor 1) at stderr and returns the original
/// stdout, so every line a command prints on the way lands on stderr and
/// the JSON rows alone on the real stdout.
#[cfg(unix)]
fn json_stdout() -> std::io::Result<std::fs::File> {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    std::io::stdout().flush()?;
    // SAFETY: `dup` takes any descriptor number and returns a new one (or
    // -1); it touches no memory of this process.
    let saved = unsafe { libc::dup(1) };
    if saved < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `dup2` on two descriptor numbers; descriptor 1 now refers to
    // stderr's file, and `saved` stays open for the JSON.
    if unsafe { libc::dup2(2, 1) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `saved` is a descriptor `dup` just opened and nothing else
    // owns; the `File` closes it when dropped.
    Ok(unsafe { std::fs::File::from_raw_fd(saved) })
}

/// Elsewhere `--json` is refused (stdout cannot be pointed at stderr).
#[cfg(not(unix))]
fn json_stdout() -> std::io::Result<std::fs::File> {
    Err(std::io::Error::other(
        "needs a Unix system (stdout is redirected to stderr while the command runs)",
    ))
}
