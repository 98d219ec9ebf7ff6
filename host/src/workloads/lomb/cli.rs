//! `ptxlab lomb-scargle`: arguments, inputs from `.npy` files, and the run.

use super::check::check;
use super::cpu::reference_rayon;
use super::input::{check_range, even_grid, material_freqs, material_samples, validate};
use super::ladder::{Rung, Shape};
use super::launch::{Bufs, Elem, not_even, run_rung};
use super::{MATERIAL_FREQS, Options};
use crate::error::{Error, Result};
use crate::report::fmt_ms;
use kernels_gpu::lomb::BLOCKS_PER_SM;

/// `ptxlab lomb-scargle` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Sample times (.npy, 1-D float64 or float32). Without --x/--y: the material's 114 samples.
    #[arg(long)]
    pub x: Option<std::path::PathBuf>,
    /// Sample values (.npy, same length as --x).
    #[arg(long)]
    pub y: Option<std::path::PathBuf>,
    /// Angular frequencies (.npy). Or --start/--step/--count; default: linspace(0.01, 10, 2^20).
    #[arg(long)]
    pub freqs: Option<std::path::PathBuf>,
    /// First frequency of an even grid.
    #[arg(long, allow_negative_numbers = true)]
    pub start: Option<f64>,
    /// Step of an even grid (may be negative).
    #[arg(long, allow_negative_numbers = true)]
    pub step: Option<f64>,
    /// Number of frequencies of an even grid.
    #[arg(long, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub count: Option<usize>,
    /// f32 or f64.
    #[arg(long, default_value = "f32")]
    pub precision: String,
    /// Rung: baseline, cached, fast-math, fast-math-fit, fast-lean, regcapN, cubin,
    /// launch-bounds, launch-bounds-fast, shared, rotate, rotate-fast, cheby,
    /// cheby-tab, cheby-tabp, taylor, or all.
    #[arg(long, default_value = "cached")]
    pub variant: String,
    /// gpu, sim or cpu.
    #[arg(long, default_value = "gpu")]
    pub backend: String,
    /// Subtract the mean of y first (SciPy's precenter).
    #[arg(long)]
    pub precenter: bool,
    /// Normalized periodogram (SciPy's normalize).
    #[arg(long)]
    pub normalize: bool,
    /// Blocks per SM of the launch shape (the material: 20; 1..=1024).
    #[arg(long, default_value_t = BLOCKS_PER_SM, value_parser = crate::cli::parse_whole::<u32>, allow_negative_numbers = true)]
    pub blocks_per_sm: u32,
    /// Threads per block (1..=1024, at most 128 for launch-bounds). Default:
    /// the material's 128; fast-lean 512, the shape it was tuned for.
    #[arg(long, value_parser = crate::cli::parse_whole::<u32>, allow_negative_numbers = true)]
    pub block: Option<u32>,
    /// Timed repetitions (1..=10000).
    #[arg(long, default_value_t = 20, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
    /// Write the periodogram here (.npy, float64 for f64, float32 for f32).
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
}

/// Reads a 1-D float64 or float32 `.npy` (either byte order), choosing by
/// the header's dtype, so an error is about this file's real problem.
fn read_any(path: &std::path::Path) -> Result<Vec<f64>> {
    let h = crate::npy::inspect(path)?;
    let d = h.descr.trim_start_matches(['<', '>', '=', '|']);
    if d == "f4" {
        Ok(crate::npy::read_1d::<f32>(path, "float64 or float32")?
            .into_iter()
            .map(f64::from)
            .collect())
    } else {
        crate::npy::read_1d::<f64>(path, "float64 or float32")
    }
}

/// The CLI's inputs: samples and frequency grid.
pub fn cli_inputs(args: &Args) -> Result<(Vec<f64>, Vec<f64>, Vec<f64>)> {
    let (x, y) = match (&args.x, &args.y) {
        (Some(x), Some(y)) => (read_any(x)?, read_any(y)?),
        (None, None) => material_samples()?,
        _ => {
            return Err(Error::input(
                "--x/--y",
                "give both --x and --y, or neither (the material's 114 samples)",
            ));
        }
    };
    let freqs = match (&args.freqs, args.start, args.step, args.count) {
        (Some(_), Some(_), _, _) | (Some(_), _, Some(_), _) | (Some(_), _, _, Some(_)) => {
            return Err(Error::input(
                "--freqs",
                "give either --freqs or --start/--step/--count, not both",
            ));
        }
        (Some(f), None, None, None) => read_any(f)?,
        (None, Some(a), Some(s), Some(n)) => {
            if n == 0 {
                return Err(Error::input("--count", "0 frequencies; give at least one"));
            }
            // The grid, the reference and the device's periodogram (f64).
            crate::cli::check_host_arrays("--count", n, 8, 4)?;
            if !(s.is_finite() && s != 0.0) {
                return Err(Error::input(
                    "--step",
                    format!("{s}; the step must be finite and non-zero"),
                ));
            }
            (0..n).map(|k| a + k as f64 * s).collect()
        }
        (None, None, None, None) => material_freqs(MATERIAL_FREQS),
        _ => {
            return Err(Error::input(
                "--start/--step/--count",
                "give all three (an even grid), or --freqs",
            ));
        }
    };
    validate(&x, &y, &freqs)?;
    Ok((x, y, freqs))
}

/// Most sample x frequency pairs of one simulated launch (about 10 s).
pub const SIM_MAX_PAIRS: usize = 1 << 28;
/// Most blocks per SM of `--blocks-per-sm`.
pub const MAX_BLOCKS_PER_SM: u32 = 1024;

/// `ptxlab lomb-scargle`.
pub fn cli(args: &Args) -> Result<()> {
    let backend: crate::Backend = args.backend.parse()?;
    crate::cli::check_reps(args.reps)?;
    if let Some(b) = args.block
        && (b == 0 || b > 1024)
    {
        return Err(Error::input(
            "--block",
            format!("{b} threads per block; allowed 1..=1024"),
        ));
    }
    if args.blocks_per_sm == 0 || args.blocks_per_sm > MAX_BLOCKS_PER_SM {
        return Err(Error::input(
            "--blocks-per-sm",
            format!("{}; allowed 1..={MAX_BLOCKS_PER_SM}", args.blocks_per_sm),
        ));
    }
    let rungs: Vec<Rung> = if args.variant == "all" {
        Rung::LADDER.to_vec()
    } else {
        vec![args.variant.parse()?]
    };
    match args.precision.as_str() {
        "f32" => cli_typed::<f32>(args, backend, &rungs),
        "f64" => cli_typed::<f64>(args, backend, &rungs),
        p => Err(Error::input(
            "--precision",
            format!("`{p}`; allowed: f32, f64"),
        )),
    }
}

fn cli_typed<T: Elem>(args: &Args, backend: crate::Backend, rungs: &[Rung]) -> Result<()> {
    let dev = crate::cli::open_device(backend)?;
    let (x, y, freqs) = cli_inputs(args)?;
    let opts = Options {
        precenter: args.precenter,
        normalize: args.normalize,
    };
    if rungs.iter().any(|r| r.kernel().needs_even_grid()) && even_grid(&freqs).is_none() {
        return Err(not_even());
    }
    if let Some(d) = &dev {
        check_range::<T>(&x, &y, &freqs)?;
        if d.is_sim() {
            crate::cli::check_sim_limit(
                "--count/--freqs",
                x.len().saturating_mul(freqs.len()),
                SIM_MAX_PAIRS,
                "sample x frequency pairs",
            )?;
        }
    }
    let t0 = std::time::Instant::now();
    let want = reference_rayon(&x, &y, &freqs, opts)?;
    if let Some(i) = want.iter().position(|v| !v.is_finite()) {
        return Err(Error::input(
            "lomb-scargle inputs",
            format!(
                "the f64 periodogram at freqs[{i}] = {} is {}: the samples are degenerate there \
                 (fewer than 2 distinct sample phases give 0/0) or too large for f64 arithmetic (a \
                 phase w x or sum y^2 overflows); give at least 2 samples at distinct times, or \
                 rescale x, y or the frequencies",
                freqs[i], want[i]
            ),
        ));
    }
    println!(
        "CPU reference (rayon, f64): {} ms for {} samples x {} frequencies",
        fmt_ms(t0.elapsed().as_secs_f64() * 1e3),
        x.len(),
        freqs.len()
    );
    let Some(dev) = dev else {
        if let Some(out) = &args.out {
            crate::npy::write_1d(out, &want)?;
            println!("wrote {}", out.display());
        }
        return Ok(());
    };
    let mut base = Shape::material(&dev);
    if let Some(g) = dev.as_gpu() {
        base.blocks = g.info().sm_count.saturating_mul(args.blocks_per_sm);
    }
    let mut last = Vec::new();
    for &rung in rungs {
        // `--block` where given, else the rung's own default.
        let shape = match args.block {
            Some(block) => Shape { block, ..base },
            None => base.for_rung(rung),
        };
        let acc = check::<T>(&dev, rung, &x, &y, &freqs, opts, &want, shape)?;
        println!(
            "PASS lomb-scargle {} {} on {}: max |err|/peak {:.2e}, material check max rel {:.2e}",
            T::NAME,
            rung.name(),
            dev.name(),
            acc.err_over_peak,
            acc.material_rel
        );
        let mut b = Bufs::<T>::new(&dev, &x, &y, &freqs, opts)?;
        let reps = if dev.is_sim() || rung == Rung::Baseline {
            args.reps.min(3)
        } else {
            args.reps
        };
        let t = dev.time(if rung == Rung::Baseline { 0 } else { 2 }, reps, |_| {
            run_rung(&dev, rung, &mut b, shape)
        })?;
        println!(
            "  {}: median {} ms (min {}, max {}, {} reps), {:.1} Gpairs/s",
            rung.label(),
            fmt_ms(t.median_ms),
            fmt_ms(t.min_ms),
            fmt_ms(t.max_ms),
            t.reps,
            x.len() as f64 * freqs.len() as f64 / (t.median_ms * 1e-3) / 1e9
        );
        last = dev.download(&b.out)?;
    }
    if let Some(out) = &args.out {
        crate::npy::write_1d(out, &last)?;
        println!("wrote {}", out.display());
    }
    Ok(())
}
