//! `cargo xtask <command>`: the project's build, inspection, benchmark,
//! documentation and packaging jobs. `cargo xtask <command> --help` shows a
//! command's options.
//!
//! | command | what it does |
//! |---|---|
//! | `build-and-bench` | build the kernels and `ptxlab`, check every workload, time every variant, write the report (`--quick`, `--only W`, `--backend`, `--peers`, `--out DIR` go to `ptxlab bench`); `--update-docs [DIR]`: the workload docs' results tables from a recorded run |
//! | `build-ptx` | one module of the kernels to PTX (`--arch sm_80\|sm_86\|sm_89\|sm_90\|sm_90a`, `--fast`), or every module the lab embeds (`--all`); cubins and the resource report with `ptxas` |
//! | `inspect [<kernel>]` | every kernel of every module (sm_80 and sm_90a) with its module and arch; or one kernel's PTX, its resource report and, where `cuobjdump`/`nvdisasm` exist, its SASS, from whichever module holds it |
//! | `ptx-diff [--base REV]` | the PTX of every kernel (sm_80 precise and fast-math, sm_90a) against `REV`'s, built by `REV`'s own xtask in a temporary worktree: identical / differs / added / removed |
//! | `doctor` | toolchain, components, `ptxas`, driver, GPU, Python peers: each OK or what to do |
//! | `new-kernel-crate <path>` | a standalone project with its own kernel crate, `build.rs` and a host binary, depending on ptxlab by path (this checkout), git or version (`--dep`) |
//! | `test [ARGS]` | the test suite (`cargo test --workspace ARGS`) |
//! | `bundle` | test and bench binaries, PTX, cubins, peers and a run script in one folder, for a GPU machine without Rust; `--scaffold`: a project made by `new-kernel-crate` instead |
//! | `sanitize` | the bundled GPU tests under `compute-sanitizer` |
//! | `book` | the book under `docs/book`, links checked (`--check-links`: only the check) |
//! | `results-index` | `docs/results/README.md`, one line per recorded run (`--check`: verify it) |
//! | `package-check` | `cargo package` of the four publishable crates, each `.crate`'s size |

mod bench;
mod bundle;
mod cli;
mod docs;
mod doctor;
mod package;
mod ptx;
mod ptx_diff;
mod scaffold;
mod target;
mod util;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};
use cli::{Cli, Cmd};
use std::process::ExitCode;

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

/// The commands and what each does, for the message on an unknown one.
fn command_list() -> String {
    let mut s = String::from("the commands are:\n");
    for c in Cli::command().get_subcommands() {
        let about = c.get_about().map(|a| a.to_string()).unwrap_or_default();
        s.push_str(&format!("  {:<18} {about}\n", c.get_name()));
    }
    s
}

/// Exits as clap does (help and version on stdout with 0, errors on stderr
/// with 2), listing the commands after an unknown one.
fn exit_on_parse_error(e: clap::Error) -> ! {
    let _ = e.print();
    if e.kind() == ErrorKind::InvalidSubcommand {
        eprint!("\n{}", command_list());
    }
    std::process::exit(e.exit_code());
}

fn main() -> ExitCode {
    default_sigpipe();
    let cli = Cli::try_parse().unwrap_or_else(|e| exit_on_parse_error(e));
    let r = match cli.cmd {
        Cmd::BuildAndBench(a) => bench::build_and_bench(&a),
        Cmd::BuildPtx(a) => ptx::build_ptx(&a),
        Cmd::Inspect(a) => ptx::inspect(&a),
        // Like diff(1): 1 when something differs, 2 when it could not compare.
        Cmd::PtxDiff(a) => {
            return match ptx_diff::ptx_diff(&a) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::from(1),
                Err(e) => {
                    eprintln!("error: {e:#}");
                    ExitCode::from(2)
                }
            };
        }
        Cmd::Doctor => doctor::doctor(),
        Cmd::NewKernelCrate(a) => scaffold::new_kernel_crate(&a),
        Cmd::Test(a) => util::run(util::cargo().args(["test", "--workspace"]).args(&a.args)),
        Cmd::Bundle(a) => bundle::bundle(&a),
        Cmd::Sanitize(a) => bundle::sanitize(&a),
        Cmd::Book(a) => docs::book(&docs::BookOpts {
            check_only: a.check_links,
            out: a.out,
        }),
        Cmd::ResultsIndex(a) => docs::results_index(a.check),
        Cmd::PackageCheck(a) => package::package_check(&a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests;
