//! `ptxlab vector-add`: arguments, the simulator's limit, the PASS line and
//! the timing.

use super::{Element, Rung, add, bytes, cpu_rayon, cpu_serial, inputs, same_value};
use crate::cli::Precision;
use crate::error::{Error, Result};
use crate::runtime::{ModuleKey, Timing};

/// `ptxlab vector-add` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Number of elements (ignored with --a/--b; at most 65536 on the simulator).
    #[arg(long, default_value_t = 1 << 24, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub n: usize,
    /// Element type.
    #[arg(long, value_enum, default_value_t = Precision::F32)]
    pub precision: Precision,
    /// The rung: one element per thread, or 16-byte loads.
    #[arg(long, value_enum, default_value_t = Rung::Wide)]
    pub variant: Rung,
    /// gpu, sim or cpu.
    #[arg(long, value_enum, default_value_t = crate::Backend::Gpu)]
    pub backend: crate::Backend,
    /// Timed repetitions (1..=10000).
    #[arg(long, default_value_t = 20, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
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
}

/// Largest `--n` on the simulator (three arrays and their race shadow:
/// about 400 MB at the limit).
pub const SIM_MAX_N: usize = 1 << 22;

/// `ptxlab vector-add`.
pub fn cli(args: &Args) -> Result<()> {
    let backend = args.backend;
    crate::cli::check_reps(args.reps)?;
    match args.precision {
        Precision::F32 => cli_typed::<f32>(args, backend),
        Precision::F64 => cli_typed::<f64>(args, backend),
    }
}

fn cli_typed<T: Element>(args: &Args, backend: crate::Backend) -> Result<()> {
    use crate::report::fmt_ms;
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
        if backend == crate::Backend::Sim {
            crate::cli::check_sim_limit("--n", args.n, SIM_MAX_N, "elements")?;
        }
        // a, b, the CPU result and the device's result.
        crate::cli::check_host_arrays("--n", args.n, std::mem::size_of::<T>(), 4)?;
    }
    // Before the inputs are made: a missing driver is reported at once.
    let dev = crate::cli::open_device(backend)?;
    let (ha, hb) = match (&args.a, &args.b) {
        (Some(a), Some(b)) => (
            crate::npy::read_1d::<T>(a, T::NAME)?,
            crate::npy::read_1d::<T>(b, T::NAME)?,
        ),
        _ => inputs::<T>(args.n, 42),
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
        crate::cli::check_sim_limit("--a/--b", n, SIM_MAX_N, "elements")?;
    }
    let mut want = vec![T::ZERO; n];
    let t1 = Timing::host(0, 3, || cpu_serial(&ha, &hb, &mut want));
    println!("CPU 1 thread: {} ms", fmt_ms(t1.median_ms));
    let result = match dev {
        None => {
            let mut c = vec![T::ZERO; n];
            let tr = Timing::host(1, args.reps, || cpu_rayon(&ha, &hb, &mut c));
            println!("CPU rayon: {} ms", fmt_ms(tr.median_ms));
            c
        }
        Some(dev) => {
            let rung = args.variant;
            let a = dev.upload(&ha)?;
            let b = dev.upload(&hb)?;
            let mut c = dev.alloc_filled(n, T::from_f64(f64::NAN))?;
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
                "PASS vector-add {} n={n} on {}: bitwise equal to the CPU",
                T::NAME,
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
            let gbs = bytes::<T>(n) / (t.median_ms * 1e-3) / 1e9;
            println!(
                "{} ({}): median {} ms (min {}, max {}, {} reps), {gbs:.1} GB/s, {:.1}x CPU 1 thread",
                rung.label(),
                dev.name(),
                fmt_ms(t.median_ms),
                fmt_ms(t.min_ms),
                fmt_ms(t.max_ms),
                t.reps,
                t1.median_ms / t.median_ms
            );
            got
        }
    };
    if let Some(out) = &args.out {
        crate::npy::write_1d(out, &result)?;
        println!("wrote {}", out.display());
    }
    Ok(())
}
