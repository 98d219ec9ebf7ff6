//! `ptxlab fft`: arguments, input (random or `.npy`), every rung checked
//! against rustfft in f64 and timed, and the output.

use super::bench::{flops, size_label};
use super::check::{compare, run_once};
use super::cpu::{random_input, reference};
use super::launch::Rung;
use super::lines::Element;
use super::problem::{Fft, Spec};
use ptxlab_common::cli::{OneOrAll, Precision, timed_row};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::{Row, fmt_ms};
use ptxlab_common::runtime::Timing;
use std::path::PathBuf;

/// `ptxlab fft` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Shape of the random input, NumPy's order: `ROWSxN` (a batch of ROWS
    /// transforms of length N, or one ROWS x N 2-D transform with --2d), or
    /// `N` (one row). With --real it is the real array's shape (ignored
    /// with --input).
    #[arg(long, default_value = "1000x203", value_parser = parse_shape)]
    pub shape: (usize, usize),
    /// One 2-D transform over both axes instead of a batch of 1-D ones.
    #[arg(long = "2d")]
    pub two_d: bool,
    /// Real transforms: real-to-complex forward (NumPy's rfft, N/2+1
    /// outputs per row), complex-to-real with --inverse (irfft).
    #[arg(long)]
    pub real: bool,
    /// The inverse transform, scaled by 1/N (NumPy's ifft, irfft).
    #[arg(long)]
    pub inverse: bool,
    /// Element type (f32: complex64 / float32 arrays; f64: complex128 /
    /// float64).
    #[arg(long, value_enum, default_value_t = Precision::F32)]
    pub precision: Precision,
    /// The rung (Stockham in global memory, one block per transform in
    /// shared memory, radix-16 butterflies in registers, or coalesced
    /// sector-wide tiles with passes that fit the register file), or all
    /// of them.
    #[arg(long, value_parser = OneOrAll::<Rung>::parser(), default_value = "all")]
    pub variant: OneOrAll<Rung>,
    /// gpu, sim or cpu (rustfft only).
    #[arg(long, value_enum, default_value_t = ptxlab_common::Backend::Gpu)]
    pub backend: ptxlab_common::Backend,
    /// Timed repetitions (1..=10000).
    #[arg(long, default_value_t = ptxlab_common::cli::DEFAULT_REPS, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
    /// Random seed of the input.
    #[arg(long, default_value_t = ptxlab_common::cli::DEFAULT_SEED)]
    pub seed: u64,
    /// Input array (.npy; 1-D or 2-D, the transform along the last axis, or
    /// both with --2d): complex64/complex128, or float32/float64 with --real
    /// (forward). With --real --inverse the output length is 2*(N-1), as
    /// NumPy's irfft.
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// Write the result here (.npy; complex64/complex128, or float32/float64
    /// for --real --inverse), from the last rung run.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the measured rows as JSON on stdout (the row objects of
    /// `results.json`), and nothing else there.
    #[arg(long)]
    pub json: bool,
}

/// Parses `--shape`: `ROWSxN` or `N`, whole numbers.
pub fn parse_shape(s: &str) -> std::result::Result<(usize, usize), String> {
    let parts: Vec<&str> = s.split(['x', 'X']).collect();
    let whole = ptxlab_common::cli::parse_whole::<usize>;
    match parts.as_slice() {
        [n] => Ok((1, whole(n)?)),
        [r, n] => Ok((whole(r)?, whole(n)?)),
        _ => Err(format!("`{s}`: give ROWSxN (for example 1000x203) or N")),
    }
}

/// Largest number of elements on the simulator.
pub const SIM_MAX: usize = 1 << 20;

/// `ptxlab fft`: the rows it measured.
pub fn cli(args: &Args) -> Result<Vec<Row>> {
    ptxlab_common::cli::check_reps(args.reps)?;
    match args.precision {
        Precision::F32 => cli_typed::<f32>(args),
        Precision::F64 => cli_typed::<f64>(args),
    }
}

/// The spec and input values (f64, interleaved when complex) of the
/// command, and whether the array was 1-D.
fn input_of<T: Element>(args: &Args) -> Result<(Spec, Vec<f64>, bool)> {
    let Some(path) = &args.input else {
        let (rows, n) = args.shape;
        let spec = Spec {
            rows,
            n,
            two_d: args.two_d,
            real: args.real,
            inverse: args.inverse,
        };
        spec.check()?;
        ptxlab_common::cli::check_host_arrays(
            "--shape",
            spec.input_len().max(spec.output_len()),
            8,
            4,
        )?;
        return Ok((
            spec,
            random_input(&spec, args.seed),
            rows == 1 && !args.two_d,
        ));
    };
    let h = ptxlab_common::npy::inspect(path)?;
    let ndim = h.shape.len();
    if !(1..=2).contains(&ndim) || (args.two_d && ndim != 2) {
        return Err(Error::input(
            "--input",
            format!(
                "{}: shape {} has {ndim} dimension(s); give a 1-D or 2-D array (2-D with --2d)",
                path.display(),
                h.shape_text()
            ),
        ));
    }
    let complex_in = !args.real || args.inverse;
    let (shape, vals) = if complex_in {
        let (shape, vals, single) = ptxlab_common::npy::read_complex(path, ndim)?;
        if single != (size_of::<T>() == 4) {
            return Err(Error::input(
                "--input",
                format!(
                    "{}: a {} array with --precision {}; give {} or the other --precision",
                    path.display(),
                    if single { "complex64" } else { "complex128" },
                    T::NAME,
                    T::COMPLEX_NAME
                ),
            ));
        }
        (shape, vals)
    } else {
        let (shape, v) = ptxlab_common::npy::read_nd::<T>(path, T::NAME, ndim)?;
        (shape, v.iter().map(|x| x.to_f64()).collect())
    };
    if let Some(i) = vals.iter().position(|v| !v.is_finite()) {
        let (el, part) = if complex_in {
            (
                i / 2,
                if i % 2 == 0 {
                    " (real part)"
                } else {
                    " (imaginary part)"
                },
            )
        } else {
            (i, "")
        };
        return Err(Error::input(
            "--input",
            format!(
                "{}: element {el}{part} is {}; every value must be finite",
                path.display(),
                vals[i]
            ),
        ));
    }
    let (rows, cols) = if ndim == 1 {
        (1, shape[0])
    } else {
        (shape[0], shape[1])
    };
    let n = if args.real && args.inverse {
        2 * cols.saturating_sub(1)
    } else {
        cols
    };
    let spec = Spec {
        rows,
        n,
        two_d: args.two_d,
        real: args.real,
        inverse: args.inverse,
    };
    spec.check()?;
    Ok((spec, vals, ndim == 1))
}

fn cli_typed<T: Element>(args: &Args) -> Result<Vec<Row>> {
    let dev = ptxlab_common::cli::open_device(args.backend)?;
    let (spec, input, one_d) = input_of::<T>(args)?;
    if let Some(d) = &dev
        && d.is_sim()
    {
        ptxlab_common::cli::check_sim_limit("--shape", spec.rows * spec.n, SIM_MAX, "elements")?;
    }
    // The input as T, so only the transform's error is measured.
    let input: Vec<f64> = input.iter().map(|v| T::from_f64(*v).to_f64()).collect();
    let size = size_label(&spec);
    let gflops = |t: &Timing| flops(&spec) / (t.median_ms * 1e-3) / 1e9;
    let t0 = std::time::Instant::now();
    let want = reference(&spec, &input);
    let cpu = Timing::from_samples(vec![t0.elapsed().as_secs_f64() * 1e3]);
    println!("rustfft (CPU, f64, 1 core): {} ms", fmt_ms(cpu.median_ms));
    let mut rows = vec![timed_row(
        "fft",
        "rustfft (CPU, 1 core, f64)",
        "cpu",
        &size,
        T::NAME,
        &cpu,
        Some((gflops(&cpu), "GFLOP/s")),
    )];
    let mut result = want.clone();
    if let Some(dev) = dev {
        let backend = if dev.is_sim() { "sim" } else { "gpu" };
        let xd = dev.upload(&input.iter().map(|v| T::from_f64(*v)).collect::<Vec<T>>())?;
        for rung in args.variant.rungs() {
            let mut fft = Fft::<T>::new(&dev, spec, rung)?;
            let got = run_once(&dev, &mut fft, &input)?;
            let what = format!("fft {} {size} {}", T::NAME, rung.label());
            let err = compare::<T>(&what, &got, &want)?;
            println!(
                "PASS fft {} {size} {} on {} ({}): relative error {err:.2e} against rustfft in f64",
                T::NAME,
                rung.label(),
                dev.name(),
                fft.describe()
            );
            let mut out = dev.alloc_filled(spec.output_len(), T::ZERO)?;
            let reps = if dev.is_sim() {
                args.reps.min(2)
            } else {
                args.reps
            };
            let t = dev.time(2, reps, |_| fft.run(&dev, &xd, &mut out))?;
            println!(
                "{} ({}): median {} ms (min {}, max {}, {} reps), {:.1} GFLOP/s, {:.1}x rustfft",
                rung.label(),
                dev.name(),
                fmt_ms(t.median_ms),
                fmt_ms(t.min_ms),
                fmt_ms(t.max_ms),
                t.reps,
                gflops(&t),
                cpu.median_ms / t.median_ms
            );
            let mut r = timed_row(
                "fft",
                rung.label(),
                backend,
                &size,
                T::NAME,
                &t,
                Some((gflops(&t), "GFLOP/s")),
            );
            r.rel_err = Some(err);
            r.speedup = Some(cpu.median_ms / t.median_ms);
            rows.push(r);
            result = got;
        }
    }
    if let Some(path) = &args.out {
        let ([r, c], complex) = spec.output_shape();
        let shape = if one_d { vec![c] } else { vec![r, c] };
        if complex {
            ptxlab_common::npy::write_complex(path, &shape, &result, size_of::<T>() == 4)?;
        } else {
            let v: Vec<T> = result.iter().map(|x| T::from_f64(*x)).collect();
            ptxlab_common::npy::write_nd(path, &shape, &v)?;
        }
        println!("wrote {}", path.display());
    }
    Ok(rows)
}
