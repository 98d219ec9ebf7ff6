//! `ptxlab math-accuracy`: the error of every math function of `Real`,
//! in ulps against a binary128 reference, as a Markdown table.

use super::check::{Measure, Worst, measure_all, table};
use super::reference::Ty;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::{Row, Status};
use ptxlab_common::runtime::Device;

/// Where the kernel runs: the `--backend` of every command.
pub use ptxlab_common::Backend;

/// Which types to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Precision {
    /// f32 only.
    F32,
    /// f64 only.
    F64,
    /// Both.
    Both,
}

/// `ptxlab math-accuracy` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where the kernel runs: gpu (the pure-Rust functions as PTX), sim (the
    /// simulator: the host's `std` functions) or cpu (no kernel). The
    /// pure-Rust code is also measured on the CPU in every case.
    #[arg(long, value_enum, default_value_t = Backend::Gpu)]
    pub backend: Backend,
    /// Also run the kernel on the simulator (with --backend gpu): one more
    /// column, the host's functions.
    #[arg(long)]
    pub with_sim: bool,
    /// Points per function and type (special values included; at least 64).
    #[arg(long, default_value_t = 1_000_000, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub n: usize,
    /// f32, f64 or both.
    #[arg(long, value_enum, default_value_t = Precision::Both)]
    pub precision: Precision,
    /// Only these functions (comma-separated; default: all).
    #[arg(long, value_delimiter = ',')]
    pub functions: Vec<String>,
    /// Seed of the random points.
    #[arg(long, default_value_t = ptxlab_common::cli::DEFAULT_SEED, value_parser = ptxlab_common::cli::parse_whole::<u64>, allow_negative_numbers = true)]
    pub seed: u64,
    /// Also write the Markdown table (with the environment block) to this
    /// file.
    #[arg(long)]
    pub md: Option<std::path::PathBuf>,
    /// Print the measured rows as JSON on stdout (the row objects of
    /// `results.json`: per function and type, the largest error in ulps as
    /// the row's figure, unit `ulp`), and nothing else there (the Markdown
    /// table goes to stderr).
    #[arg(long)]
    pub json: bool,
}

/// The largest `--n` (points per function): each point holds a binary128 reference and a
/// few f64 values on the host, and three arrays on the device.
pub const MAX_POINTS: usize = 1 << 26;

/// The rows of a measurement: per function and type, one for the kernel
/// on the device (`backend`: `gpu` or `sim`) when it ran there and one for
/// the pure-Rust code on the CPU. The figure is the largest error in ulps
/// (unit `ulp`; a wrong special value, infinite, is `null`), the note the
/// worst argument; a wrong special value is INACCURATE.
pub fn rows(all: &[Measure], backend: &str) -> Vec<Row> {
    let row = |m: &Measure, who: &str, w: &Worst, variant: String| {
        let mut r = Row::plain(
            "math-accuracy",
            &variant,
            who,
            &format!("{} points", m.points),
            m.ty.name(),
        );
        r.unit = "ulp".into();
        r.throughput = Some(w.ulp).filter(|u| u.is_finite());
        r.note = format!(
            "worst at x = {:e}, y = {:e}: got {:e}, want {:e}",
            w.x, w.y, w.got, w.want
        );
        if !w.ulp.is_finite() {
            r.status = Status::Inaccurate("a wrong special value (NaN or infinity)".into());
        }
        r
    };
    let mut out = Vec::new();
    for m in all {
        if let Some(d) = &m.device {
            let mut r = row(m, backend, d, m.func.name.to_string());
            r.note = format!("{}; {} results differ from the CPU's", r.note, m.differ);
            out.push(r);
        }
        out.push(row(
            m,
            "cpu",
            &m.cpu,
            format!("{} (pure Rust on the CPU)", m.func.name),
        ));
    }
    out
}

/// `ptxlab math-accuracy`: the rows it measured (see `rows`).
pub fn cli(args: &Args) -> Result<Vec<Row>> {
    if !(64..=MAX_POINTS).contains(&args.n) {
        return Err(Error::input(
            "--n",
            format!("{} points; allowed: 64 to {MAX_POINTS}", args.n),
        ));
    }
    if args.with_sim && args.backend != Backend::Gpu {
        return Err(Error::input(
            "--with-sim",
            "only with --backend gpu (--backend sim runs the simulator alone)",
        ));
    }
    let types: &[Ty] = match args.precision {
        Precision::F32 => &[Ty::F32],
        Precision::F64 => &[Ty::F64],
        Precision::Both => &[Ty::F32, Ty::F64],
    };
    let (dev, label) = match args.backend {
        Backend::Gpu => (Some(Device::gpu(0)?), "GPU"),
        Backend::Sim => (Some(Device::sim()), "simulator (host std)"),
        Backend::Cpu => (None, "-"),
    };
    let gpu = dev.as_ref().and_then(|d| d.as_gpu());
    let mut env = ptxlab_common::report::Environment::collect(gpu);
    let t = std::time::Instant::now();
    let all = measure_all(dev.as_ref(), &args.functions, types, args.n, args.seed)?;
    let mut out = rows(
        &all,
        ptxlab_common::cli::backend_name(if args.backend == Backend::Sim {
            Backend::Sim
        } else {
            Backend::Gpu
        }),
    );
    if let Some(g) = gpu {
        env.note_loads(g);
    }
    let mut md = format!(
        "# Math functions: max error in ulps against binary128\n\n{}\n{}",
        env.markdown(),
        table(&all, label)
    );
    if args.with_sim {
        let sim = Device::sim();
        let all = measure_all(Some(&sim), &args.functions, types, args.n, args.seed)?;
        out.extend(rows(&all, "sim").into_iter().filter(|r| r.backend == "sim"));
        md.push_str("\nThe same points through the kernel on the simulator (the host's `std` functions):\n\n");
        md.push_str(&table(&all, "simulator (host std)"));
    }
    println!("{md}");
    eprintln!("measured in {:.1} s", t.elapsed().as_secs_f64());
    if let Some(path) = &args.md {
        std::fs::write(path, &md).map_err(|e| Error::File {
            path: path.display().to_string(),
            detail: e.to_string(),
        })?;
    }
    Ok(out)
}
