//! `ptxlab vector-add`: arguments, the simulator's limit, the PASS line and
//! the timing.

use super::{Element, Rung, add, bytes, cpu_rayon, cpu_serial, inputs, same_value};
use ptxlab_common::cli::{OneOrAll, Precision, timed_row};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::Row;
use ptxlab_common::runtime::{ModuleKey, Timing};

/// `ptxlab vector-add` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Number of elements (ignored with --a/--b; at most 4194304 on the
    /// simulator).
    #[arg(long, default_value_t = 1 << 24, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub n: usize,
    /// Element type.
    #[arg(long, value_enum, default_value_t = Precision::F32)]
    pub precision: Precision,
    /// The rung (one element per thread, or 16-byte loads), or all of them.
    #[arg(long, value_parser = OneOrAll::<Rung>::parser(), default_value = "all")]
    pub variant: OneOrAll<Rung>,
    /// gpu, sim or cpu.
    #[arg(long, value_enum, default_value_t = ptxlab_common::Backend::Gpu)]
    pub backend: ptxlab_common::Backend,
    /// Timed repetitions (1..=10000).
    #[arg(long, default_value_t = ptxlab_common::cli::DEFAULT_REPS, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
    /// Input a (.npy, 1-D, float32 or float64 matching --precision).
    #[arg(long)]
    pub a: Option<std::path::PathBuf>,
    /// Input b (.npy).
    #[arg(long)]
    pub b: Option<std::path::PathBuf>,
    /// Write c here (.npy).
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// Print the measured rows as JSON on stdout (the row objects of
    /// `results.json`), and nothing else there.
    #[arg(long)]
    pub json: bool,
}

/// Largest `--n` on the simulator (three arrays and their race shadow:
/// about 400 MB at the limit).
pub const SIM_MAX_N: usize = 1 << 22;

/// `ptxlab vector-add`: the rows it measured.
pub fn cli(args: &Args) -> Result<Vec<Row>> {
    let backend = args.backend;
    ptxlab_common::cli::check_reps(args.reps)?;
    match args.precision {
        Precision::F32 => cli_typed::<f32>(args, backend),
        Precision::F64 => cli_typed::<f64>(args, backend),
    }
}

fn cli_typed<T: Element>(args: &Args, backend: ptxlab_common::Backend) -> Result<Vec<Row>> {
    use ptxlab_common::report::fmt_ms;
    if args.a.is_some() != args.b.is_some() {
        return Err(Error::input(
            "--a/--b",
            "give both --a and --b, or neither (random inputs of length --n)",
        ));
    }
    if args.a.is_none() {
        if args.n == 0 {
            return Err(Error::input(
                "vector add",
                "--n 0: the vectors are empty; give at least one element",
            ));
        }
        if backend == ptxlab_common::Backend::Sim {
            ptxlab_common::cli::check_sim_limit("--n", args.n, SIM_MAX_N, "elements")?;
        }
        // a, b, the CPU result and the device's result.
        ptxlab_common::cli::check_host_arrays("--n", args.n, std::mem::size_of::<T>(), 4)?;
    }
    // Before the inputs are made: a missing driver is reported at once.
    let dev = ptxlab_common::cli::open_device(backend)?;
    let (ha, hb) = match (&args.a, &args.b) {
        (Some(a), Some(b)) => (
            ptxlab_common::npy::read_1d::<T>(a, T::NAME)?,
            ptxlab_common::npy::read_1d::<T>(b, T::NAME)?,
        ),
        _ => inputs::<T>(args.n, ptxlab_common::cli::DEFAULT_SEED),
    };
    if ha.len() != hb.len() {
        return Err(Error::input(
            "vector add",
            format!(
                "a has {} elements and b has {}; they must be equal",
                ha.len(),
                hb.len()
            ),
        ));
    }
    if ha.is_empty() {
        return Err(Error::input(
            "vector add",
            "the vectors are empty; give at least one element",
        ));
    }
    let n = ha.len();
    if let Some(d) = &dev
        && d.is_sim()
    {
        ptxlab_common::cli::check_sim_limit("--a/--b", n, SIM_MAX_N, "elements")?;
    }
    let size = format!("2^{:.1} ({n})", (n as f64).log2());
    let gbs = |t: &Timing| bytes::<T>(n) / (t.median_ms * 1e-3) / 1e9;
    let mut rows = Vec::new();
    let mut want = vec![T::ZERO; n];
    let t1 = Timing::host(0, 3, || cpu_serial(&ha, &hb, &mut want));
    println!("CPU 1 thread: {} ms", fmt_ms(t1.median_ms));
    let mut r1 = timed_row(
        "vector-add",
        "CPU 1 thread",
        "cpu",
        &size,
        T::NAME,
        &t1,
        Some((gbs(&t1), "GB/s")),
    );
    r1.speedup = Some(1.0);
    rows.push(r1);
    let result = match dev {
        None => {
            let mut c = vec![T::ZERO; n];
            let tr = Timing::host(1, args.reps, || cpu_rayon(&ha, &hb, &mut c));
            println!("CPU rayon: {} ms", fmt_ms(tr.median_ms));
            let mut r = timed_row(
                "vector-add",
                "CPU rayon all cores",
                "cpu",
                &size,
                T::NAME,
                &tr,
                Some((gbs(&tr), "GB/s")),
            );
            r.speedup = Some(t1.median_ms / tr.median_ms);
            rows.push(r);
            c
        }
        Some(dev) => {
            let a = dev.upload(&ha)?;
            let b = dev.upload(&hb)?;
            let mut c = dev.alloc_filled(n, T::from_f64(f64::NAN))?;
            let backend = if dev.is_sim() { "sim" } else { "gpu" };
            for rung in args.variant.rungs() {
                dev.write(&mut c, &vec![T::from_f64(f64::NAN); n])?;
                add(&dev, rung, ModuleKey::default(), &a, &b, &mut c)?;
                let got = dev.download(&c)?;
                let bad = got
                    .iter()
                    .zip(&want)
                    .filter(|(g, w)| !same_value(**g, **w))
                    .count();
                if bad > 0 {
                    return Err(Error::Verification {
                        what: format!("vector add {} n={n}", T::NAME),
                        detail: format!("{bad} elements differ from the CPU result"),
                    });
                }
                println!(
                    "PASS vector-add {} {} n={n} on {}: bitwise equal to the CPU",
                    T::NAME,
                    rung.label(),
                    dev.name()
                );
                let reps = if dev.is_sim() {
                    args.reps.min(3)
                } else {
                    args.reps
                };
                let t = dev.time(2, reps, |_| {
                    add(&dev, rung, ModuleKey::default(), &a, &b, &mut c)
                })?;
                println!(
                    "{} ({}): median {} ms (min {}, max {}, {} reps), {:.1} GB/s, {:.1}x CPU 1 thread",
                    rung.label(),
                    dev.name(),
                    fmt_ms(t.median_ms),
                    fmt_ms(t.min_ms),
                    fmt_ms(t.max_ms),
                    t.reps,
                    gbs(&t),
                    t1.median_ms / t.median_ms
                );
                let mut r = timed_row(
                    "vector-add",
                    rung.label(),
                    backend,
                    &size,
                    T::NAME,
                    &t,
                    Some((gbs(&t), "GB/s")),
                );
                r.speedup = Some(t1.median_ms / t.median_ms);
                r.rel_err = Some(0.0);
                rows.push(r);
            }
            dev.download(&c)?
        }
    };
    if let Some(out) = &args.out {
        ptxlab_common::npy::write_1d(out, &result)?;
        println!("wrote {}", out.display());
    }
    Ok(rows)
}
