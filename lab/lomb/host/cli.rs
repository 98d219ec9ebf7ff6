//! `ptxlab lomb-scargle`: arguments, inputs from `.npy` files, and the run
//! of one curve (a batch is `cli_batch.rs`).
//!
//! A production run computes the periodogram once, checks it (`--check`:
//! a few hundred frequencies spread over the grid by default, the full f64
//! reference with `full`, nothing with `none`), writes it, and reports the
//! time to the written result; `--reps N` adds a timing of N runs.

use super::check::{Accuracy, verify};
use super::cpu::reference_rayon;
use super::general::{GENERAL_RUNGS, general_supported, run_general};
use super::input::{check_range, even_grid, material_freqs, material_samples, validate};
use super::ladder::{Rung, Shape, variant_parser};
use super::launch::{Bufs, Elem, GenBufs, not_even};
use super::model::{General, Normalization, reference_general};
use super::phase::Phases;
use super::run::run_rung;
use super::{MATERIAL_FREQS, Options};
use kernels_gpu::lomb::BLOCKS_PER_SM;
use ptxlab_common::cli::{OneOrAll, Precision, value_name};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::{Row, fmt_ms};
use ptxlab_common::runtime::Device;
use std::path::PathBuf;
use std::time::Instant;

/// `ptxlab lomb-scargle` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Sample times (.npy, 1-D float64 or float32). Without --x/--y: the material's 114 samples.
    #[arg(long)]
    pub x: Option<PathBuf>,
    /// Sample values (.npy, same length as --x).
    #[arg(long)]
    pub y: Option<PathBuf>,
    /// Uncertainties of the values (.npy, same length as --y): weights 1/dy^2
    /// (astropy's model).
    #[arg(long)]
    pub dy: Option<PathBuf>,
    /// Many curves at once: a folder of .npy curves ((n, 2) or (n, 3): t, y,
    /// dy) or an .npz with t, y, offsets (and dy); needs a frequency grid.
    /// Astropy's model (its defaults unless flags say otherwise; SciPy's
    /// with --precenter/--normalize).
    #[arg(long, value_name = "DIR|NPZ")]
    pub curves: Option<PathBuf>,
    /// Angular frequencies (.npy). Or --start/--step/--n; default: linspace(0.01, 10, 2^20).
    #[arg(long)]
    pub freqs: Option<PathBuf>,
    /// First frequency of an even grid.
    #[arg(long, allow_negative_numbers = true)]
    pub start: Option<f64>,
    /// Step of an even grid (may be negative).
    #[arg(long, allow_negative_numbers = true)]
    pub step: Option<f64>,
    /// Number of frequencies of an even grid (with --start and --step).
    #[arg(long, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub n: Option<usize>,
    /// Element type of the kernels.
    #[arg(long, value_enum, default_value_t = Precision::F32)]
    pub precision: Precision,
    /// Rung of the ladder, or all of them in order (those that apply to
    /// the model and the grid); any register cap as regcapN, N in 16..=255.
    /// Every rung of `all` loads cubins assembled ahead of time where the
    /// build has them; `jit` (not part of `all`) loads the PTX through the
    /// driver's JIT, the material's JIT lesson. launch-bounds is the default
    /// rung for any grid and either model.
    #[arg(long, value_parser = variant_parser(), default_value = "all")]
    pub variant: OneOrAll<Rung>,
    /// gpu, sim or cpu.
    #[arg(long, value_enum, default_value_t = ptxlab_common::Backend::Gpu)]
    pub backend: ptxlab_common::Backend,
    /// Subtract the mean of y first (SciPy's precenter).
    #[arg(long)]
    pub precenter: bool,
    /// Normalized periodogram (SciPy's normalize).
    #[arg(long)]
    pub normalize: bool,
    /// Astropy's floating mean (`--fit-mean` or `--fit-mean false`); any of
    /// --fit-mean, --center-data, --normalization, --dy selects astropy's
    /// model, whose defaults are fit-mean and center-data on, standard.
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    pub fit_mean: Option<bool>,
    /// Astropy's center_data (`--center-data` or `--center-data false`).
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    pub center_data: Option<bool>,
    /// Astropy's normalization.
    #[arg(long, value_enum)]
    pub normalization: Option<Normalization>,
    /// Check the result against the f64 reference.
    #[arg(long, value_enum, default_value_t = CheckMode::Sample)]
    pub check: CheckMode,
    /// Phases: split phases (the `_long` kernels) where the span needs
    /// them, or always plain, or always split.
    #[arg(long, value_enum, default_value_t = Phases::Auto)]
    pub phases: Phases,
    /// Blocks per SM of the launch shape (the material: 20; 1..=1024).
    #[arg(long, default_value_t = BLOCKS_PER_SM, value_parser = ptxlab_common::cli::parse_whole::<u32>, allow_negative_numbers = true)]
    pub blocks_per_sm: u32,
    /// Threads per block (1..=1024, at most 128 for launch-bounds). Default:
    /// the material's 128; fast-lean 512, the shape it was tuned for.
    #[arg(long, value_parser = ptxlab_common::cli::parse_whole::<u32>, allow_negative_numbers = true)]
    pub block: Option<u32>,
    /// Timed repetitions (1..=10000; device events, median).
    #[arg(long, default_value_t = ptxlab_common::cli::DEFAULT_REPS, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
    /// Print the measured rows as JSON on stdout (the row objects of
    /// `results.json`), and nothing else there.
    #[arg(long)]
    pub json: bool,
    /// Write the periodogram here (.npy, float64 for f64, float32 for f32;
    /// a batch: shape (curves, freqs)).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Best periods per curve of --curves (1..=1000).
    #[arg(long, default_value_t = 1, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub top: usize,
    /// Write the --top best periods (2 pi / w of the highest peaks) of
    /// --curves here (.npy float64, shape (curves, top), NaN where a curve has
    /// fewer peaks).
    #[arg(long)]
    pub periods: Option<PathBuf>,
}

/// How a run is checked against the f64 reference (`--check`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckMode {
    /// Not at all.
    None,
    /// At a few hundred frequencies spread over the grid
    /// ([`SAMPLE_FREQS`]), and the peak.
    Sample,
    /// At every frequency.
    Full,
}

/// Frequencies of the sampled check.
pub const SAMPLE_FREQS: usize = 256;

/// Which periodogram: SciPy's classic one or astropy's model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// `scipy.signal.lombscargle` (`--precenter`, `--normalize`).
    Scipy(Options),
    /// astropy's `LombScargle` (`--fit-mean`, `--center-data`,
    /// `--normalization`, `--dy`).
    Astropy(General),
}

/// The model the flags ask for (an error when they mix the two).
pub fn model_of(args: &Args) -> Result<Model> {
    let astropy = args.fit_mean.is_some()
        || args.center_data.is_some()
        || args.normalization.is_some()
        || args.dy.is_some();
    if astropy && (args.precenter || args.normalize) {
        return Err(Error::input(
            "--precenter/--normalize",
            "these are SciPy's options; with astropy's (--fit-mean, --center-data, \
             --normalization, --dy) use --center-data and --normalization standard instead",
        ));
    }
    if !astropy {
        return Ok(Model::Scipy(Options {
            precenter: args.precenter,
            normalize: args.normalize,
        }));
    }
    let d = General::default();
    Ok(Model::Astropy(General {
        fit_mean: args.fit_mean.unwrap_or(d.fit_mean),
        center_data: args.center_data.unwrap_or(d.center_data),
        normalization: args.normalization.unwrap_or(d.normalization),
    }))
}

/// Reads a 1-D float64 or float32 `.npy` (either byte order), choosing by
/// the header's dtype, so an error is about this file's real problem.
pub(super) fn read_any(path: &std::path::Path) -> Result<Vec<f64>> {
    let h = ptxlab_common::npy::inspect(path)?;
    let d = h.descr.trim_start_matches(['<', '>', '=', '|']);
    if d == "f4" {
        Ok(
            ptxlab_common::npy::read_1d::<f32>(path, "float64 or float32")?
                .into_iter()
                .map(f64::from)
                .collect(),
        )
    } else {
        ptxlab_common::npy::read_1d::<f64>(path, "float64 or float32")
    }
}

/// The frequency grid of the flags; `None` when none is given.
pub(super) fn grid_of(args: &Args) -> Result<Option<Vec<f64>>> {
    Ok(match (&args.freqs, args.start, args.step, args.n) {
        (Some(_), Some(_), _, _) | (Some(_), _, Some(_), _) | (Some(_), _, _, Some(_)) => {
            return Err(Error::input(
                "--freqs",
                "give either --freqs or --start/--step/--n, not both",
            ));
        }
        (Some(f), None, None, None) => Some(read_any(f)?),
        (None, Some(a), Some(s), Some(n)) => {
            if n == 0 {
                return Err(Error::input("--n", "0 frequencies; give at least one"));
            }
            // The grid, the reference and the device's periodogram (f64).
            ptxlab_common::cli::check_host_arrays("--n", n, 8, 4)?;
            if !(s.is_finite() && s != 0.0) {
                return Err(Error::input(
                    "--step",
                    format!("{s}; the step must be finite and non-zero"),
                ));
            }
            Some((0..n).map(|k| a + k as f64 * s).collect())
        }
        (None, None, None, None) => None,
        _ => {
            return Err(Error::input(
                "--start/--step/--n",
                "give all three (an even grid), or --freqs",
            ));
        }
    })
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
    let freqs = grid_of(args)?.unwrap_or_else(|| material_freqs(MATERIAL_FREQS));
    validate(&x, &y, &freqs)?;
    Ok((x, y, freqs))
}

/// Most sample x frequency pairs of one simulated launch (about 10 s).
pub const SIM_MAX_PAIRS: usize = 1 << 28;
/// Most blocks per SM of `--blocks-per-sm`.
pub const MAX_BLOCKS_PER_SM: u32 = 1024;
/// Most best periods per curve (`--top`).
pub const MAX_TOP: usize = 1000;

/// A checked `--curves` request, run by `cli_batch.rs`.
pub struct BatchJob {
    /// `--backend`.
    pub backend: ptxlab_common::Backend,
    /// The folder or `.npz` of curves.
    pub path: PathBuf,
    /// The model (astropy's unless SciPy's flags ask otherwise).
    pub g: General,
    /// `--check`.
    pub check: CheckMode,
    /// f64 kernels (`--precision f64`, or the CPU's f64 reference).
    pub f64: bool,
    /// When the command started (for the time to the written result).
    pub t0: Instant,
}

/// `ptxlab lomb-scargle` up to the choice of one curve or a batch: checks
/// the options, then runs one curve's periodogram ([`Curve::Done`]) or
/// returns the batch to run ([`Curve::Batch`], `cli_batch.rs`).
pub fn curve_or_batch(args: &Args) -> Result<Curve> {
    let t0 = Instant::now();
    let backend = args.backend;
    ptxlab_common::cli::check_reps(args.reps)?;
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
    if args.top == 0 || args.top > MAX_TOP {
        return Err(Error::input(
            "--top",
            format!("{} best periods; allowed 1..={MAX_TOP}", args.top),
        ));
    }
    let (check, phases) = (args.check, args.phases);
    let model = model_of(args)?;
    let rungs = args.variant.rungs();
    if let Some(path) = &args.curves {
        if args.variant != OneOrAll::All
            || args.x.is_some()
            || args.y.is_some()
            || args.dy.is_some()
        {
            return Err(Error::input(
                "--curves",
                "many curves bring their own samples and run the batch kernels: drop --x, --y, \
                 --dy and --variant (give dy with each curve)",
            ));
        }
        // A batch follows astropy unless SciPy's flags ask otherwise.
        let g = match model {
            Model::Astropy(g) => g,
            Model::Scipy(o) if !o.precenter && !o.normalize => General::default(),
            Model::Scipy(o) => General {
                fit_mean: false,
                center_data: o.precenter,
                normalization: if o.normalize {
                    Normalization::Standard
                } else {
                    Normalization::Psd
                },
            },
        };
        return Ok(Curve::Batch(BatchJob {
            backend,
            path: path.clone(),
            g,
            check,
            // On the CPU the result is the f64 reference, written as f64.
            f64: args.precision == Precision::F64 || backend == ptxlab_common::Backend::Cpu,
            t0,
        }));
    }
    if args.periods.is_some() {
        return Err(Error::input(
            "--periods",
            "best periods are written for --curves; one curve's periodogram is --out",
        ));
    }
    let rungs = match model {
        Model::Astropy(_) => {
            let (ok, skipped): (Vec<Rung>, Vec<Rung>) =
                rungs.iter().partition(|r| general_supported(**r));
            if ok.is_empty() {
                return Err(super::general::general_unsupported(rungs[0]));
            }
            if !skipped.is_empty() {
                let names: Vec<String> = skipped.iter().map(|r| r.name()).collect();
                println!(
                    "skipped (SciPy's classic periodogram only): {}; the floating-mean model runs on {GENERAL_RUNGS}",
                    names.join(", ")
                );
            }
            ok
        }
        Model::Scipy(_) => rungs,
    };
    let run = Run {
        args,
        backend,
        model,
        check,
        phases,
        t0,
    };
    Ok(Curve::Done(match args.precision {
        Precision::F32 => run.go::<f32>(&rungs)?,
        Precision::F64 => run.go::<f64>(&rungs)?,
    }))
}

/// What [`curve_or_batch`] did.
pub enum Curve {
    /// Ran one curve: the rows it measured.
    Done(Vec<Row>),
    /// Many curves: the batch to run.
    Batch(BatchJob),
}

/// The size of a run as the report's rows print it: `114 samples x 2^20
/// freqs` (a power of two), else `114 samples x 1000 freqs`.
pub(super) fn size_text(n: usize, nf: usize) -> String {
    if nf.is_power_of_two() {
        super::bench::size_label(n, nf)
    } else {
        format!("{n} samples x {nf} freqs")
    }
}

/// The indices of the sampled check: [`SAMPLE_FREQS`] spread evenly over
/// `nf` frequencies (both ends included), and `peak`.
pub fn sample_indices(nf: usize, peak: Option<usize>) -> Vec<usize> {
    let s = SAMPLE_FREQS.min(nf);
    let mut idx: Vec<usize> = (0..s)
        .map(|k| {
            if s == 1 {
                0
            } else {
                ((k as u128 * (nf - 1) as u128) / (s - 1) as u128) as usize
            }
        })
        .collect();
    idx.extend(peak);
    idx.sort_unstable();
    idx.dedup();
    idx
}

/// The index of the largest finite value.
pub(super) fn argmax(p: &[f64]) -> Option<usize> {
    p.iter()
        .enumerate()
        .filter(|(_, v)| v.is_finite())
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(i, _)| i)
}

/// One curve's run.
struct Run<'a> {
    args: &'a Args,
    backend: ptxlab_common::Backend,
    model: Model,
    check: CheckMode,
    phases: Phases,
    t0: Instant,
}

impl Run<'_> {
    /// The f64 reference at `idx` (every frequency when `None`); an error
    /// naming the first frequency where it is not finite.
    fn reference(
        &self,
        x: &[f64],
        y: &[f64],
        dy: Option<&[f64]>,
        freqs: &[f64],
        idx: Option<&[usize]>,
    ) -> Result<Vec<f64>> {
        let sub: Vec<f64>;
        let f = match idx {
            Some(idx) => {
                sub = idx.iter().map(|&i| freqs[i]).collect();
                &sub[..]
            }
            None => freqs,
        };
        let want = match self.model {
            Model::Scipy(o) => reference_rayon(x, y, f, o)?,
            Model::Astropy(g) => reference_general(x, y, dy, f, g)?,
        };
        if let Some(i) = want.iter().position(|v| !v.is_finite()) {
            return Err(Error::input(
                "lomb-scargle inputs",
                format!(
                    "the f64 periodogram at freqs[{}] = {} is {}: the samples are degenerate there \
                     (fewer than 2 distinct sample phases give 0/0) or too large for f64 arithmetic (a \
                     phase w x or sum y^2 overflows); give at least 2 samples at distinct times, or \
                     rescale x, y or the frequencies",
                    idx.map_or(i, |idx| idx[i]),
                    f[i],
                    want[i]
                ),
            ));
        }
        Ok(want)
    }

    fn go<T: Elem>(&self, rungs: &[Rung]) -> Result<Vec<Row>> {
        let args = self.args;
        let (x, y, freqs) = cli_inputs(args)?;
        let dy = args.dy.as_deref().map(read_any).transpose()?;
        let dy = dy.as_deref();
        let t_in = self.t0.elapsed().as_secs_f64() * 1e3;
        let dev = ptxlab_common::cli::open_device(self.backend)?;
        if rungs.iter().any(|r| r.kernel().needs_even_grid()) && even_grid(&freqs).is_none() {
            return Err(not_even());
        }
        let Some(dev) = dev else {
            // CPU: the reference is the result.
            let t = Instant::now();
            let want = self.reference(&x, &y, dy, &freqs, None)?;
            println!(
                "CPU reference (rayon, f64): {} ms for {} samples x {} frequencies",
                fmt_ms(t.elapsed().as_secs_f64() * 1e3),
                x.len(),
                freqs.len()
            );
            if let Some(out) = &args.out {
                ptxlab_common::npy::write_1d(out, &want)?;
                println!("wrote {}", out.display());
            }
            self.report_time(t_in, None);
            return Ok(Vec::new());
        };
        check_range::<T>(&x, &y, &freqs)?;
        if dev.is_sim() {
            ptxlab_common::cli::check_sim_limit(
                "--n/--freqs",
                x.len().saturating_mul(freqs.len()),
                SIM_MAX_PAIRS,
                "sample x frequency pairs",
            )?;
        }
        let mut base = Shape::material(&dev);
        if let Some(g) = dev.as_gpu() {
            base.blocks = g.info().sm_count.saturating_mul(args.blocks_per_sm);
        }
        let full = match self.check {
            CheckMode::Full => Some(self.reference(&x, &y, dy, &freqs, None)?),
            _ => None,
        };
        let mut last = Vec::new();
        let mut rows = Vec::new();
        let mut t_dev = 0.0;
        for &rung in rungs {
            // `--block` where given, else the rung's own default.
            let shape = match args.block {
                Some(block) => Shape { block, ..base },
                None => base.for_rung(rung),
            };
            let t = Instant::now();
            let mut one = One::<T>::new(&dev, self, &x, &y, dy, &freqs)?;
            one.run(&dev, rung, shape)?;
            let out = dev.download(one.out())?;
            t_dev = t.elapsed().as_secs_f64() * 1e3;
            let got: Vec<f64> = out.iter().map(|v| v.to_f64()).collect();
            let what = || {
                format!(
                    "lomb-scargle {} {} ({} samples x {} freqs) on {}",
                    T::NAME,
                    rung.name(),
                    x.len(),
                    freqs.len(),
                    dev.name()
                )
            };
            let acc: Option<Accuracy> = match (self.check, &full) {
                (CheckMode::None, _) => None,
                (CheckMode::Full, Some(want)) => Some(verify::<T>(&got, want, what)?),
                _ => {
                    let idx = sample_indices(freqs.len(), argmax(&got));
                    let want = self.reference(&x, &y, dy, &freqs, Some(&idx))?;
                    let sub: Vec<f64> = idx.iter().map(|&i| got[i]).collect();
                    Some(verify::<T>(&sub, &want, what)?)
                }
            };
            let kernels = if one.long() {
                "split phases"
            } else {
                "plain phases"
            };
            match acc {
                Some(a) => println!(
                    "PASS lomb-scargle {} {} on {} ({kernels}; check {}): max |err|/peak {:.2e}, material check max rel {:.2e}",
                    T::NAME,
                    rung.name(),
                    dev.name(),
                    value_name(&self.args.check),
                    a.err_over_peak,
                    a.material_rel
                ),
                None => {
                    let bad = got.iter().filter(|v| !v.is_finite()).count();
                    println!(
                        "lomb-scargle {} {} on {} ({kernels}): not checked (--check none){}",
                        T::NAME,
                        rung.name(),
                        dev.name(),
                        if bad > 0 {
                            format!("; {bad} values are not finite")
                        } else {
                            String::new()
                        }
                    );
                }
            }
            {
                let reps = self.args.reps;
                let reps = if dev.is_sim() || rung == Rung::Baseline {
                    reps.min(3)
                } else {
                    reps
                };
                let warm = if rung == Rung::Baseline { 0 } else { 2 };
                let t = dev.time(warm, reps, |_| one.run(&dev, rung, shape))?;
                let pairs = x.len() as f64 * freqs.len() as f64;
                let mut row = ptxlab_common::cli::timed_row(
                    "lomb-scargle",
                    &rung.label(),
                    ptxlab_common::cli::backend_name(if dev.is_sim() {
                        ptxlab_common::Backend::Sim
                    } else {
                        ptxlab_common::Backend::Gpu
                    }),
                    &size_text(x.len(), freqs.len()),
                    T::NAME,
                    &t,
                    Some((pairs / (t.median_ms * 1e-3) / 1e9, "Gpairs/s")),
                );
                row.rel_err = acc.as_ref().map(|a| a.err_over_peak);
                rows.push(row);
                println!(
                    "  {}: median {} ms (min {}, max {}, {} reps), {:.1} Gpairs/s",
                    rung.label(),
                    fmt_ms(t.median_ms),
                    fmt_ms(t.min_ms),
                    fmt_ms(t.max_ms),
                    t.reps,
                    x.len() as f64 * freqs.len() as f64 / (t.median_ms * 1e-3) / 1e9
                );
            }
            last = out;
        }
        if let Some(out) = &args.out {
            ptxlab_common::npy::write_1d(out, &last)?;
            println!("wrote {}", out.display());
        }
        self.report_time(t_in, Some(t_dev));
        Ok(rows)
    }

    /// The time from the start of the command to the written result.
    fn report_time(&self, inputs_ms: f64, last_run_ms: Option<f64>) {
        println!(
            "time to the written result: {} ms (inputs read in {} ms{})",
            fmt_ms(self.t0.elapsed().as_secs_f64() * 1e3),
            fmt_ms(inputs_ms),
            last_run_ms.map_or(String::new(), |t| format!(
                "; upload, run and download of the last variant {} ms",
                fmt_ms(t)
            ))
        );
    }
}

/// The buffers of one curve's run in either model.
enum One<T> {
    Scipy(Box<Bufs<T>>),
    Astropy(Box<GenBufs<T>>),
}

impl<T: Elem> One<T> {
    fn new(
        dev: &Device,
        run: &Run,
        x: &[f64],
        y: &[f64],
        dy: Option<&[f64]>,
        freqs: &[f64],
    ) -> Result<Self> {
        Ok(match run.model {
            Model::Scipy(o) => One::Scipy(Box::new(Bufs::with_phases(
                dev, x, y, freqs, o, run.phases,
            )?)),
            Model::Astropy(g) => One::Astropy(Box::new(GenBufs::new(dev, x, y, dy, freqs, g)?)),
        })
    }
    fn run(&mut self, dev: &Device, rung: Rung, shape: Shape) -> Result<()> {
        match self {
            One::Scipy(b) => run_rung(dev, rung, b, shape),
            One::Astropy(b) => run_general(dev, rung, b, shape),
        }
    }
    fn out(&self) -> &ptxlab_common::runtime::Buffer<T> {
        match self {
            One::Scipy(b) => &b.out,
            One::Astropy(b) => &b.out,
        }
    }
    fn long(&self) -> bool {
        match self {
            One::Scipy(b) => b.long,
            One::Astropy(_) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    /// `ptxlab lomb-scargle`'s arguments as their own command.
    #[derive(Debug, clap::Parser)]
    struct Cmd {
        #[command(flatten)]
        args: Args,
    }

    fn parse(a: &[&str]) -> std::result::Result<Args, String> {
        Cmd::try_parse_from([&["lomb-scargle"][..], a].concat())
            .map(|c| c.args)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn enum_like_options_are_clap_values() {
        let a = parse(&[]).unwrap();
        assert_eq!(a.precision, Precision::F32);
        assert_eq!((a.check, a.phases), (CheckMode::Sample, Phases::Auto));
        assert_eq!((a.variant, a.normalization), (OneOrAll::All, None));
        let a = parse(&[
            "--precision",
            "f64",
            "--variant",
            "cheby-tabp",
            "--check",
            "full",
            "--phases",
            "split",
            "--normalization",
            "log",
        ])
        .unwrap();
        assert_eq!(a.precision, Precision::F64);
        assert_eq!(a.variant, OneOrAll::One(Rung::ChebyTabPipe));
        assert_eq!((a.check, a.phases), (CheckMode::Full, Phases::Long));
        assert_eq!(a.normalization, Some(Normalization::Log));
        // Every rung by its name, in ladder order; `all` is the ladder.
        for r in Rung::LADDER {
            let v = parse(&["--variant", &r.name()]).unwrap().variant;
            assert_eq!(v, OneOrAll::One(r), "{}", r.name());
        }
        let all = parse(&["--variant", "all"]).unwrap().variant;
        assert_eq!(all.rungs(), Rung::LADDER.to_vec());
        // Any register cap in range, not only the ladder's.
        for (s, r) in [("regcap24", 24), ("regcap16", 16), ("regcap255", 255)] {
            let v = parse(&["--variant", s]).unwrap().variant;
            assert_eq!(v, OneOrAll::One(Rung::RegCap(r)));
        }
    }

    #[test]
    fn typos_are_refused_by_clap_with_a_suggestion() {
        for (a, needles) in [
            (
                &["--variant", "chebby"][..],
                &["invalid value 'chebby'", "a similar value exists: 'cheby'"][..],
            ),
            (
                &["--variant", "warp-speed"],
                &["possible values: all, baseline, cached"],
            ),
            (
                &["--variant", "regcap8"],
                &["`regcap8`", "regcapN takes a register cap N in 16..=255"],
            ),
            (&["--variant", "regcap"], &["invalid value 'regcap'"]),
            (&["--precision", "f16"], &["possible values: f32, f64"]),
            (
                &["--normalization", "standrd"],
                &["a similar value exists: 'standard'"],
            ),
            (&["--check", "ful"], &["a similar value exists: 'full'"]),
            (
                &["--phases", "sideways"],
                &["possible values: auto, plain, long"],
            ),
        ] {
            let e = parse(a).unwrap_err();
            for n in needles {
                assert!(e.contains(n), "{a:?}: `{n}` not in {e}");
            }
        }
    }

    #[test]
    fn help_lists_every_rung_and_which_need_the_jit() {
        let help = Cmd::command().render_long_help().to_string();
        for r in Rung::LADDER {
            assert!(help.contains(&r.name()), "{} not in the help", r.name());
        }
        // One `- name: help` line per value.
        let line = |name: &str| {
            help.lines()
                .find(|l| l.trim_start().starts_with(&format!("- {name}:")))
                .unwrap_or_else(|| panic!("no help line for {name}: {help}"))
        };
        assert!(line("jit").contains("JIT lesson"), "{}", line("jit"));
        for aot in [
            "baseline",
            "cached",
            "fast-math",
            "cubin",
            "launch-bounds",
            "taylor",
        ] {
            assert!(!line(aot).contains("JIT"), "{}", line(aot));
        }
    }
}
