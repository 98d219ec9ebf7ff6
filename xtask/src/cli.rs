//! The command line of `cargo xtask`: one subcommand per job, each with its
//! own typed options and `--help`.

use crate::target::{Arch, Cubins};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::ffi::OsString;
use std::path::PathBuf;

/// `cargo xtask`'s arguments.
#[derive(Debug, Parser)]
#[command(
    name = "xtask",
    bin_name = "cargo xtask",
    about = "The project's build, inspection, benchmark, documentation and packaging jobs",
    arg_required_else_help = true
)]
pub(crate) struct Cli {
    /// The job.
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// The jobs.
#[derive(Debug, Subcommand)]
pub(crate) enum Cmd {
    /// Build the kernels and `ptxlab`, check every workload, time every variant, write the report.
    BuildAndBench(BenchArgs),
    /// Build the kernels to PTX (cubins and the resource report with ptxas).
    BuildPtx(BuildPtxArgs),
    /// List every kernel of every module, or show one kernel's PTX, ptxas resources and SASS.
    Inspect(InspectArgs),
    /// Compare every kernel's PTX with another commit's (exit 1: differs, 2: could not compare).
    PtxDiff(PtxDiffArgs),
    /// Check the toolchain, components, ptxas, driver, GPU and Python peers.
    Doctor,
    /// Make a standalone project with its own kernel crate, build.rs and host binary.
    NewKernelCrate(NewKernelCrateArgs),
    /// Run the test suite: `cargo test --workspace` with the arguments given.
    Test(TestArgs),
    /// Pack binaries, PTX, cubins, peers and run scripts for a GPU machine without Rust.
    Bundle(BundleArgs),
    /// Run the bundled GPU tests under compute-sanitizer.
    Sanitize(SanitizeArgs),
    /// Build the book (docs/book) and check its links.
    Book(BookArgs),
    /// Write or check the index of recorded runs (docs/results/README.md).
    ResultsIndex(ResultsIndexArgs),
    /// Package the publishable crates (cargo package) and list each .crate's size.
    PackageCheck(PackageCheckArgs),
}

/// The backends of `ptxlab bench`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Backend {
    /// An NVIDIA GPU (CPU and simulator checks when there is none).
    Gpu,
    /// The CPU simulator.
    Sim,
    /// The CPU baselines only.
    Cpu,
}

/// `build-and-bench`: everything but `--update-docs` is handed to `ptxlab bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// Smaller sizes and fewer repetitions.
    #[arg(long)]
    pub quick: bool,
    /// Only this workload (repeatable); `ptxlab bench --help` lists them.
    #[arg(long, value_name = "WORKLOAD")]
    pub only: Vec<String>,
    /// Where the kernels run (default gpu).
    #[arg(long, value_enum)]
    pub backend: Option<Backend>,
    /// Also run the Python peers (CuPy, PyTorch, Numba) where installed.
    #[arg(long)]
    pub peers: bool,
    /// Folder of the peer scripts (default peers).
    #[arg(long, value_name = "DIR")]
    pub peers_dir: Option<PathBuf>,
    /// Terse progress: one line per workload.
    #[arg(long)]
    pub quiet: bool,
    /// Output folder (default `target/bench-results/<timestamp>`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Instead of a run: regenerate the README's results table and the book's
    /// generated pages from a recorded run's folder (`docs/results/<run>`; the
    /// folder is required).
    #[arg(
        long,
        value_name = "RESULTS_DIR",
        num_args = 0..=1,
        conflicts_with_all = ["quick", "only", "backend", "peers", "peers_dir", "quiet", "out"]
    )]
    pub update_docs: Option<Option<PathBuf>>,
}

impl BenchArgs {
    /// The arguments of `ptxlab bench`.
    pub(crate) fn bench_args(&self) -> Vec<OsString> {
        let mut v: Vec<OsString> = Vec::new();
        if self.quick {
            v.push("--quick".into());
        }
        for w in &self.only {
            v.extend(["--only".into(), w.into()]);
        }
        if let Some(b) = self.backend {
            let name = b.to_possible_value().map(|p| p.get_name().to_string());
            v.extend(["--backend".into(), name.unwrap_or_default().into()]);
        }
        if self.peers {
            v.push("--peers".into());
        }
        if let Some(d) = &self.peers_dir {
            v.extend(["--peers-dir".into(), d.into()]);
        }
        if self.quiet {
            v.push("--quiet".into());
        }
        if let Some(d) = &self.out {
            v.extend(["--out".into(), d.into()]);
        }
        v
    }
}

/// `build-ptx`.
#[derive(Debug, Args)]
pub(crate) struct BuildPtxArgs {
    /// PTX target (default sm_80); sm_90a builds the module of Hopper kernels
    /// (PTX ISA 8.5, the kernel crate's `sm90a` feature).
    #[arg(long, value_enum, conflicts_with = "all")]
    pub arch: Option<Arch>,
    /// Every module the lab embeds: precise and fast math for sm_80, and sm_90a.
    #[arg(long)]
    pub all: bool,
    /// Optimisation level of opt and llc.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub opt_level: u8,
    /// The fast-math module (approximate math, flush-to-zero).
    #[arg(long, conflicts_with = "all")]
    pub fast: bool,
    /// Cubin archs, comma-separated, or `none` (default: the module's arch,
    /// plus sm_90 for sm_80..sm_89).
    #[arg(long, value_name = "ARCH[,ARCH]|none")]
    pub cubin: Option<Cubins>,
    /// Output folder (default target/ptx-out).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `inspect`.
#[derive(Debug, Args)]
pub(crate) struct InspectArgs {
    /// The kernel's PTX entry name (`matmul_tiled_f32`); without it, every
    /// kernel is listed.
    pub kernel: Option<String>,
    /// List every kernel of every module with its module, arch and group.
    #[arg(long, conflicts_with = "kernel")]
    pub list: bool,
    /// The modules to search, by target (repeatable or comma-separated;
    /// default every arch the lab builds: sm_80 and sm_90a).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub arch: Vec<Arch>,
    /// The fast-math modules instead of the precise ones.
    #[arg(long)]
    pub fast: bool,
    /// Optimisation level of opt and llc.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub opt_level: u8,
    /// Cubin archs for the SASS, comma-separated, or `none` (default: the
    /// module's arch, sm_90 for the portable modules).
    #[arg(long, value_name = "ARCH[,ARCH]|none", conflicts_with = "list")]
    pub cubin: Option<Cubins>,
    /// Output folder of the builds (default target/ptx-out).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `ptx-diff`.
#[derive(Debug, Args)]
pub(crate) struct PtxDiffArgs {
    /// The commit to compare with (built by its own xtask in a worktree).
    #[arg(
        long,
        value_name = "REV",
        default_value = "HEAD",
        conflicts_with = "files"
    )]
    pub base: String,
    /// The targets whose modules are compared (repeatable or
    /// comma-separated; default every arch the lab builds: sm_80, whose
    /// precise and fast-math modules are compared, and sm_90a).
    #[arg(long, value_enum, value_delimiter = ',', conflicts_with = "files")]
    pub arch: Vec<Arch>,
    /// Renumber virtual registers and block labels by first use.
    #[arg(long)]
    pub ignore_numbering: bool,
    /// Compare the base's kernel OLD with this tree's NEW (repeatable).
    #[arg(long, value_name = "OLD=NEW", value_parser = parse_rename)]
    pub rename: Vec<(String, String)>,
    /// Compare two PTX files (any project's) without building.
    #[arg(long, num_args = 2, value_names = ["OLD.ptx", "NEW.ptx"])]
    pub files: Option<Vec<PathBuf>>,
}

/// `OLD=NEW` of `--rename`.
fn parse_rename(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((old, new)) if !old.is_empty() && !new.is_empty() => {
            Ok((old.to_string(), new.to_string()))
        }
        _ => Err(format!(
            "`{s}`: expected OLD=NEW (a kernel name of the base, and of this tree)"
        )),
    }
}

/// How a project made by `new-kernel-crate` depends on the ptxlab crates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DepKind {
    /// By path, on this checkout.
    Path,
    /// By git, on the repository (`--git-url`, `--rev`).
    Git,
    /// By version, from crates.io.
    Version,
}

/// `new-kernel-crate`.
#[derive(Debug, Args)]
pub(crate) struct NewKernelCrateArgs {
    /// The new project's folder (must not exist, or be empty).
    pub path: PathBuf,
    /// Package name (default: the folder's name).
    #[arg(long)]
    pub name: Option<String>,
    /// How the project depends on ptxlab-runtime, ptxlab-builder and ptxlab-device.
    #[arg(long, value_enum, default_value_t = DepKind::Path)]
    pub dep: DepKind,
    /// The repository of `--dep git` (default `https://github.com/ptxlab/ptxlab`).
    #[arg(long, value_name = "URL")]
    pub git_url: Option<String>,
    /// The commit of `--dep git` (default: the head of the default branch).
    #[arg(long, value_name = "REV")]
    pub rev: Option<String>,
}

/// `test`.
#[derive(Debug, Args)]
pub(crate) struct TestArgs {
    /// Arguments for `cargo test --workspace` (`-p ptxlab --test launch -- --nocapture`).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CARGO_TEST_ARGS"
    )]
    pub args: Vec<OsString>,
}

/// `bundle`.
#[derive(Debug, Args)]
pub(crate) struct BundleArgs {
    /// Output folder (default bundle).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Only these test targets (comma-separated names of `--test` targets).
    #[arg(
        long,
        value_name = "NAME[,NAME]",
        value_delimiter = ',',
        conflicts_with = "scaffold"
    )]
    pub tests: Vec<String>,
    /// Without the Criterion bench binary.
    #[arg(long, conflicts_with = "scaffold")]
    pub no_benches: bool,
    /// A project made by `new-kernel-crate` instead: its binary, PTX, cubins and run.sh.
    #[arg(long)]
    pub scaffold: bool,
}

/// The tools of compute-sanitizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SanitizerTool {
    /// Out-of-bounds and misaligned accesses.
    Memcheck,
    /// Shared-memory data races.
    Racecheck,
    /// Barrier misuse.
    Synccheck,
    /// Reads of uninitialised device memory.
    Initcheck,
}

/// `sanitize`.
#[derive(Debug, Args)]
pub(crate) struct SanitizeArgs {
    /// One tool (default memcheck, racecheck and synccheck).
    #[arg(long, value_enum)]
    pub tool: Option<SanitizerTool>,
    /// Only the test binaries whose name contains this text.
    pub filter: Option<String>,
}

/// `book`.
#[derive(Debug, Args)]
pub(crate) struct BookArgs {
    /// Only check the book's links (no rendering).
    #[arg(long)]
    pub check_links: bool,
    /// Where to write the rendered book (default target/book).
    #[arg(long, value_name = "DIR", conflicts_with = "check_links")]
    pub out: Option<PathBuf>,
}

/// `results-index`.
#[derive(Debug, Args)]
pub(crate) struct ResultsIndexArgs {
    /// Fail when docs/results/README.md is not what would be written, instead of writing it.
    #[arg(long)]
    pub check: bool,
}

/// `package-check`.
#[derive(Debug, Args)]
pub(crate) struct PackageCheckArgs {
    /// Package uncommitted changes too (cargo package --allow-dirty).
    #[arg(long)]
    pub allow_dirty: bool,
    /// Only package, without building each .crate (cargo package --no-verify).
    #[arg(long)]
    pub no_verify: bool,
}
