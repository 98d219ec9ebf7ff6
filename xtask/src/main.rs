//! `cargo xtask <command>`: the project's build, inspection and benchmark jobs.
//!
//! | command | what it does |
//! |---|---|
//! | `build-and-bench` | build the kernels and `ptxlab`, check every workload, time every variant, write the report |
//! | `build-ptx` | build the kernels to PTX (and cubins + resource report with `ptxas`) |
//! | `inspect <kernel>` | a kernel's PTX, its resource report and, where `cuobjdump`/`nvdisasm` exist, its SASS |
//! | `ptx-diff [--base REV]` | the PTX of every kernel (precise and fast-math modules) against `REV`'s, built by `REV`'s own xtask in a temporary worktree: identical / differs / added / removed |
//! | `doctor` | toolchain, components, `ptxas`, driver, GPU, Python peers: each OK or what to do |
//! | `new-kernel-crate <path>` | a standalone project with its own kernel crate, `build.rs` and a host binary (SAXPY + a shared-memory stencil), depending on this checkout |
//! | `test` | the test suite (`cargo test --workspace`) |
//! | `bundle` | test and bench binaries, PTX, cubins, peers and a run script in one folder, for a GPU machine without Rust; `--scaffold`: a project made by `new-kernel-crate` instead, its binary, PTX, cubins and a run script |

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

mod bench;
mod bundle;
mod doctor;
mod ptx;
mod ptx_diff;
mod scaffold;

const COMMANDS: &[(&str, &str)] = &[
    (
        "build-and-bench",
        "[--quick] [--only <workload>]... [--backend gpu|sim|cpu] [--peers] [--out DIR] [--update-docs [RESULTS_DIR]]",
    ),
    (
        "build-ptx",
        "[--arch sm_XX] [--opt-level 0-3] [--fast] [--cubin sm_XX[,sm_YY]|none] [--out DIR]",
    ),
    ("inspect", "<kernel> [--arch sm_XX] [--fast]"),
    (
        "ptx-diff",
        "[--base REV (default HEAD)] [--arch sm_XX] [--ignore-numbering] | --files OLD.ptx NEW.ptx",
    ),
    ("doctor", ""),
    ("new-kernel-crate", "<path> [--name NAME]"),
    ("test", "[extra cargo test args]"),
    (
        "bundle",
        "[--out DIR] [--tests name,name] [--no-benches] | --scaffold [--out DIR]",
    ),
    (
        "sanitize",
        "[--tool memcheck|racecheck|synccheck|initcheck] [<test-name-filter>]",
    ),
];

fn usage() -> String {
    let mut s = String::from("usage: cargo xtask <command> [options]\n\ncommands:\n");
    for (c, a) in COMMANDS {
        s.push_str(&format!("  {c} {a}\n"));
    }
    s
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    c.current_dir(root());
    c
}

fn run(cmd: &mut Command) -> Result<()> {
    let st = cmd.status().with_context(|| format!("running {cmd:?}"))?;
    if !st.success() {
        bail!("{cmd:?} failed with {st}");
    }
    Ok(())
}

/// `--flag value` from an argument list.
fn opt(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1).cloned())
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
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else {
        eprint!("{}", usage());
        std::process::exit(2);
    };
    let rest = &args[1..];
    // `cargo xtask bundle --help` prints the usage; it must not start a
    // build (`test` hands its arguments to `cargo test`, help included).
    if cmd != "test" && rest.iter().any(|a| a == "-h" || a == "--help") {
        print!("{}", usage());
        return;
    }
    let r = match cmd.as_str() {
        "build-and-bench" => bench::build_and_bench(rest),
        "build-ptx" => ptx::build_ptx(rest).map(|_| ()),
        "inspect" => ptx::inspect(rest),
        // Like diff(1): 1 when something differs, 2 when it could not compare.
        "ptx-diff" => match ptx_diff::ptx_diff(rest) {
            Ok(true) => Ok(()),
            Ok(false) => std::process::exit(1),
            Err(e) => {
                eprintln!("error: {e:#}");
                std::process::exit(2);
            }
        },
        "doctor" => doctor::doctor(),
        "new-kernel-crate" => scaffold::new_kernel_crate(rest),
        "test" => run(cargo().args(["test", "--workspace"]).args(rest)),
        "bundle" => bundle::bundle(rest),
        "sanitize" => bundle::sanitize(rest),
        "-h" | "--help" | "help" => {
            print!("{}", usage());
            Ok(())
        }
        other => {
            eprintln!("unknown command `{other}`\n\n{}", usage());
            std::process::exit(2);
        }
    };
    if let Err(e) = r {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
