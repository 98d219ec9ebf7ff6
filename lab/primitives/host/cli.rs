//! The subcommands `ptxlab reduce`, `ptxlab histogram` and
//! `ptxlab monte-carlo-pi`: arguments, limits of the simulator, PASS lines
//! and timings.

use super::{
    HistKey, HistRung, MAX_KEYS, PiLayout, ReduceRung, SumElement, SumPlan, check_buffer,
    check_values, cpu_histogram_rayon, cpu_histogram_serial, cpu_pi_rayon, cpu_sum_rayon,
    cpu_sum_serial, estimate, histogram, histogram_into, pi_hits, pi_into, random_inputs,
    random_keys, reference, validate_bins,
};
use kernels_gpu::montecarlo as mc;
use ptxlab_common::cli::{DEFAULT_REPS, DEFAULT_SEED, OneOrAll, timed_row};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::Row;
use ptxlab_common::runtime::{Device, Timing};
fn open_device(backend: ptxlab_common::Backend) -> Result<Option<Device>> {
    Ok(match backend {
        ptxlab_common::Backend::Gpu => Some(ptxlab_common::Error::open_gpu(0)?),
        ptxlab_common::Backend::Sim => Some(Device::sim()),
        ptxlab_common::Backend::Cpu => None,
    })
}

/// Largest problem the simulator accepts from the command line (the input
/// and its race shadow: about 300 MB at the limit).
const SIM_MAX_N: usize = 1 << 23;
/// Largest problem of the one-element-per-thread rungs on the simulator.
const SIM_MAX_N_PER_ELEMENT: usize = 1 << 22;

fn print_timing(what: &str, dev: &str, t: &Timing, extra: &str) {
    use ptxlab_common::report::fmt_ms;
    println!(
        "{what} ({dev}): median {} ms (min {}, max {}, {} reps){extra}",
        fmt_ms(t.median_ms),
        fmt_ms(t.min_ms),
        fmt_ms(t.max_ms),
        t.reps
    );
}

/// The element types of `ptxlab reduce` (`--precision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SumPrecision {
    /// 32-bit float.
    F32,
    /// 64-bit float.
    F64,
    /// 32-bit integer (exact).
    I32,
}

/// The key types of `ptxlab histogram` (`--keys`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KeyType {
    /// Bytes (up to 256 bins).
    U8,
    /// 32-bit keys.
    U32,
}

/// `ptxlab reduce` arguments.
#[derive(Debug, clap::Args)]
pub struct ReduceArgs {
    /// Number of elements (ignored with --input).
    #[arg(long, default_value_t = 1 << 24, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub n: usize,
    /// Element type.
    #[arg(long, value_enum, default_value_t = SumPrecision::F32)]
    pub precision: SumPrecision,
    /// The rung, or all of them.
    #[arg(long, value_parser = OneOrAll::<ReduceRung>::parser(), default_value = "all")]
    pub variant: OneOrAll<ReduceRung>,
    /// gpu, sim or cpu.
    #[arg(long, value_enum, default_value_t = ptxlab_common::Backend::Gpu)]
    pub backend: ptxlab_common::Backend,
    /// Timed repetitions (1..=10000).
    #[arg(long, default_value_t = DEFAULT_REPS, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
    /// Seed of the random input.
    #[arg(long, default_value_t = DEFAULT_SEED, value_parser = ptxlab_common::cli::parse_whole::<u64>, allow_negative_numbers = true)]
    pub seed: u64,
    /// Input (.npy, 1-D, float32 / float64 / int32 matching --precision).
    #[arg(long)]
    pub input: Option<std::path::PathBuf>,
    /// Print the measured rows as JSON on stdout (the row objects of
    /// `results.json`), and nothing else there.
    #[arg(long)]
    pub json: bool,
}

/// `ptxlab reduce`: the rows it measured.
pub fn cli_reduce(args: &ReduceArgs) -> Result<Vec<Row>> {
    let backend = args.backend;
    ptxlab_common::cli::check_reps(args.reps)?;
    match args.precision {
        SumPrecision::F32 => cli_reduce_typed::<f32>(args, backend),
        SumPrecision::F64 => cli_reduce_typed::<f64>(args, backend),
        SumPrecision::I32 => cli_reduce_typed::<i32>(args, backend),
    }
}

fn cli_reduce_typed<T: SumElement>(
    args: &ReduceArgs,
    backend: ptxlab_common::Backend,
) -> Result<Vec<Row>> {
    let rungs = args.variant.rungs();
    // The simulator's limit for these rungs (one thread per element for all
    // but the grid-stride rung).
    let sim_limit = if rungs.iter().all(|r| *r == ReduceRung::GridStride) {
        SIM_MAX_N
    } else {
        SIM_MAX_N_PER_ELEMENT
    };
    let sim_flag = |n: usize, flag: &str| -> Result<()> {
        if backend == ptxlab_common::Backend::Sim && n > sim_limit {
            return Err(Error::input(
                flag,
                format!(
                    "{n} elements with --variant {} on the simulator; at most {sim_limit} (one OS \
                     thread per GPU thread): use a smaller input, or --backend cpu",
                    args.variant.name()
                ),
            ));
        }
        Ok(())
    };
    if args.input.is_none() {
        if args.n == 0 {
            return Err(Error::input(
                "--n",
                "0 elements; the input is empty, give at least one element",
            ));
        }
        sim_flag(args.n, "--n")?;
        ptxlab_common::cli::check_host_arrays("--n", args.n, std::mem::size_of::<T>(), 2)?;
    }
    // Before the input is made: a missing driver is reported at once.
    let dev = open_device(backend)?;
    let hx: Vec<T> = match &args.input {
        Some(p) => ptxlab_common::npy::read_1d::<T>(p, T::NAME)?,
        None => random_inputs::<T>(args.n, args.seed),
    };
    let n = hx.len();
    if n == 0 {
        return Err(Error::input(
            "reduce",
            "the input is empty (n = 0); give at least one element",
        ));
    }
    sim_flag(n, "--input")?;
    check_values(&hx)?;
    let r = reference(&hx);
    println!(
        "reduce {} n={n}: f64 reference sum {} (sum |x| = {})",
        T::NAME,
        r.sum,
        r.abs_sum
    );
    let t1 = Timing::host(0, 3, || {
        std::hint::black_box(cpu_sum_serial(&hx));
    });
    println!(
        "CPU 1 thread: {} ms, sum {:?}",
        ptxlab_common::report::fmt_ms(t1.median_ms),
        cpu_sum_serial(&hx)
    );
    let size = format!("2^{:.1} ({n})", (n as f64).log2());
    let gbs = |t: &Timing| (n * std::mem::size_of::<T>()) as f64 / (t.median_ms * 1e-3) / 1e9;
    let row = |variant: &str, backend: &str, t: &Timing| {
        let mut r = timed_row(
            "reduce",
            variant,
            backend,
            &size,
            T::NAME,
            t,
            Some((gbs(t), "GB/s")),
        );
        r.speedup = Some(t1.median_ms / t.median_ms);
        r
    };
    let mut rows = vec![row("CPU 1 thread", "cpu", &t1)];
    let Some(dev) = dev else {
        let tr = Timing::host(1, args.reps, || {
            std::hint::black_box(cpu_sum_rayon(&hx));
        });
        println!(
            "CPU rayon: {} ms, sum {:?}",
            ptxlab_common::report::fmt_ms(tr.median_ms),
            cpu_sum_rayon(&hx)
        );
        rows.push(row("CPU rayon all cores", "cpu", &tr));
        return Ok(rows);
    };
    let backend_name = if dev.is_sim() { "sim" } else { "gpu" };
    let x = dev.upload(&hx)?;
    for rung in rungs {
        let c = check_buffer(&dev, rung, &hx, &x)?;
        c.verify(&format!("reduce {} {} n={n}", T::NAME, rung.name()))?;
        println!(
            "PASS reduce {} {} n={n} on {}: sum {} (error {:.2e}, bound {:.2e})",
            T::NAME,
            rung.name(),
            dev.name(),
            c.got,
            c.err,
            c.bound
        );
        let reps = if dev.is_sim() {
            args.reps.min(2)
        } else {
            args.reps
        };
        let mut plan = SumPlan::<T>::new(&dev, rung, n)?;
        let init = if rung.accumulates() {
            T::ZERO
        } else {
            T::POISON
        };
        let mut out = dev.alloc_filled(reps + 2, init)?;
        let t = dev.time(2, reps, |i| plan.run(&dev, &x, &mut out, i))?;
        print_timing(
            rung.label(),
            &dev.name(),
            &t,
            &format!(
                ", {:.1} GB/s read, {:.1}x CPU 1 thread",
                gbs(&t),
                t1.median_ms / t.median_ms
            ),
        );
        let mut r = row(rung.label(), backend_name, &t);
        r.rel_err = Some(c.rel_err());
        rows.push(r);
    }
    Ok(rows)
}

/// `ptxlab histogram` arguments.
#[derive(Debug, clap::Args)]
pub struct HistogramArgs {
    /// Number of keys (ignored with --input).
    #[arg(long, default_value_t = 1 << 24, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub n: usize,
    /// Key type.
    #[arg(long, value_enum, default_value_t = KeyType::U8)]
    pub keys: KeyType,
    /// Bins: a power of two (key k goes to bin k & (bins - 1)).
    #[arg(long, default_value_t = 256, value_parser = ptxlab_common::cli::parse_whole::<u32>, allow_negative_numbers = true)]
    pub bins: u32,
    /// The rung, or all of them.
    #[arg(long, value_parser = OneOrAll::<HistRung>::parser(), default_value = "all")]
    pub variant: OneOrAll<HistRung>,
    /// gpu, sim or cpu.
    #[arg(long, value_enum, default_value_t = ptxlab_common::Backend::Gpu)]
    pub backend: ptxlab_common::Backend,
    /// Timed repetitions (1..=10000).
    #[arg(long, default_value_t = DEFAULT_REPS, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
    /// Seed of the random keys.
    #[arg(long, default_value_t = DEFAULT_SEED, value_parser = ptxlab_common::cli::parse_whole::<u64>, allow_negative_numbers = true)]
    pub seed: u64,
    /// Keys (.npy, 1-D, uint8 / uint32 matching --keys).
    #[arg(long)]
    pub input: Option<std::path::PathBuf>,
    /// Write the histogram here (.npy, uint32).
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// Print the measured rows as JSON on stdout (the row objects of
    /// `results.json`), and nothing else there.
    #[arg(long)]
    pub json: bool,
}

/// `ptxlab histogram`: the rows it measured.
pub fn cli_histogram(args: &HistogramArgs) -> Result<Vec<Row>> {
    let backend = args.backend;
    ptxlab_common::cli::check_reps(args.reps)?;
    match args.keys {
        KeyType::U8 => cli_histogram_typed::<u8>(args, backend),
        KeyType::U32 => cli_histogram_typed::<u32>(args, backend),
    }
}

fn cli_histogram_typed<K: HistKey>(
    args: &HistogramArgs,
    backend: ptxlab_common::Backend,
) -> Result<Vec<Row>> {
    validate_bins::<K>(args.bins)?;
    let bins = args.bins;
    let rungs = args.variant.rungs();
    let check_n = |n: usize, flag: &str| -> Result<()> {
        if n == 0 {
            return Err(Error::input(
                "histogram",
                "the input is empty (0 keys); give at least one key",
            ));
        }
        if n > MAX_KEYS {
            return Err(Error::input(
                flag,
                format!("{n} keys; at most {MAX_KEYS} (the counters are u32): use fewer keys"),
            ));
        }
        if backend == ptxlab_common::Backend::Sim {
            ptxlab_common::cli::check_sim_limit(flag, n, SIM_MAX_N, "keys")?;
        }
        Ok(())
    };
    if args.input.is_none() {
        check_n(args.n, "--n")?;
        ptxlab_common::cli::check_host_arrays("--n", args.n, std::mem::size_of::<K>(), 2)?;
    }
    // Before the keys are made: a missing driver is reported at once.
    let dev = open_device(backend)?;
    let keys: Vec<K> = match &args.input {
        Some(p) => ptxlab_common::npy::read_1d::<K>(p, K::NAME).map_err(|e| {
            Error::input(
                "--input",
                format!(
                    "{e} (--keys {} reads {} keys; --keys u8 takes uint8 files, --keys u32 uint32)",
                    K::NAME,
                    K::NAME
                ),
            )
        })?,
        None => random_keys::<K>(args.n, args.seed),
    };
    let n = keys.len();
    check_n(n, "--input")?;
    let t1 = Timing::host(0, 3, || {
        std::hint::black_box(cpu_histogram_serial(&keys, bins));
    });
    println!(
        "CPU 1 thread: {} ms",
        ptxlab_common::report::fmt_ms(t1.median_ms)
    );
    let size = format!("2^{:.1} ({n}), {bins} bins", (n as f64).log2());
    let gbs =
        |t: &Timing| std::mem::size_of_val(keys.as_slice()) as f64 / (t.median_ms * 1e-3) / 1e9;
    let row = |variant: &str, backend: &str, t: &Timing| {
        let mut r = timed_row(
            "histogram",
            variant,
            backend,
            &size,
            K::NAME,
            t,
            Some((gbs(t), "GB/s")),
        );
        r.speedup = Some(t1.median_ms / t.median_ms);
        r
    };
    let mut rows = vec![row("CPU 1 thread", "cpu", &t1)];
    let want = cpu_histogram_serial(&keys, bins);
    let Some(dev) = dev else {
        let tr = Timing::host(1, args.reps, || {
            std::hint::black_box(cpu_histogram_rayon(&keys, bins));
        });
        println!(
            "CPU rayon: {} ms",
            ptxlab_common::report::fmt_ms(tr.median_ms)
        );
        rows.push(row("CPU rayon all cores", "cpu", &tr));
        if let Some(out) = &args.out {
            ptxlab_common::npy::write_1d(out, &want)?;
            println!("wrote {}", out.display());
        }
        return Ok(rows);
    };
    let backend_name = if dev.is_sim() { "sim" } else { "gpu" };
    let kb = dev.upload(&keys)?;
    let mut last = Vec::new();
    for rung in rungs {
        let got = histogram(&dev, rung, &kb, bins)?;
        let bad = got.iter().zip(&want).filter(|(g, w)| g != w).count();
        if bad != 0 {
            return Err(Error::Verification {
                what: format!("histogram {} {} n={n} bins={bins}", K::NAME, rung.label()),
                detail: format!("{bad} bins differ from the CPU"),
            });
        }
        println!(
            "PASS histogram {} {} n={n} bins={bins} on {}: equal to the CPU",
            K::NAME,
            rung.label(),
            dev.name()
        );
        let reps = if dev.is_sim() {
            args.reps.min(2)
        } else {
            args.reps
        };
        let mut hist = dev.alloc_filled((reps + 2) * bins as usize, 0u32)?;
        let t = dev.time(2, reps, |i| {
            histogram_into(&dev, rung, &kb, &mut hist, bins, i * bins as usize)
        })?;
        print_timing(
            rung.label(),
            &dev.name(),
            &t,
            &format!(
                ", {:.1} GB/s, {:.1}x CPU 1 thread",
                gbs(&t),
                t1.median_ms / t.median_ms
            ),
        );
        let mut r = row(rung.label(), backend_name, &t);
        r.rel_err = Some(0.0);
        rows.push(r);
        last = got;
    }
    if let Some(out) = &args.out {
        ptxlab_common::npy::write_1d(out, &last)?;
        println!("wrote {}", out.display());
    }
    Ok(rows)
}

/// Most `--blocks` of a simulated Monte-Carlo run (4M threads).
const SIM_MAX_PI_BLOCKS: usize = 1 << 14;
/// Most samples (`--n`) of a simulated Monte-Carlo run.
const SIM_MAX_PI_SAMPLES: u64 = 1_000_000_000;

/// `ptxlab monte-carlo-pi` arguments.
#[derive(Debug, clap::Args)]
pub struct PiArgs {
    /// Samples (a whole number: 1000000000, 1e9).
    #[arg(long, default_value = "1e9", value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub n: usize,
    /// Seed: each thread's generator is SplitMix64(SplitMix64(seed) ^ thread id).
    #[arg(long, default_value_t = DEFAULT_SEED, value_parser = ptxlab_common::cli::parse_whole::<u64>, allow_negative_numbers = true)]
    pub seed: u64,
    /// Blocks of 256 threads (the layout fixes the streams; keep it to compare
    /// runs). Default 4224 on every backend, so a seed gives the same count on
    /// the GPU, the simulator and the CPU (at most 16384 on the simulator).
    #[arg(long, value_parser = ptxlab_common::cli::parse_whole::<u32>, allow_negative_numbers = true)]
    pub blocks: Option<u32>,
    /// gpu, sim or cpu.
    #[arg(long, value_enum, default_value_t = ptxlab_common::Backend::Gpu)]
    pub backend: ptxlab_common::Backend,
    /// Timed repetitions (1..=10000; each with its own seed, seed + i).
    #[arg(long, default_value_t = DEFAULT_REPS, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
    /// Print the measured rows as JSON on stdout (the row objects of
    /// `results.json`), and nothing else there.
    #[arg(long)]
    pub json: bool,
}

/// `ptxlab monte-carlo-pi`: the rows it measured.
pub fn cli_pi(args: &PiArgs) -> Result<Vec<Row>> {
    let backend = args.backend;
    ptxlab_common::cli::check_reps(args.reps)?;
    // One layout on every backend: the layout fixes the streams.
    let layout = PiLayout {
        blocks: args.blocks.unwrap_or(mc::DEFAULT_BLOCKS),
        block: mc::BLOCK,
    };
    if backend == ptxlab_common::Backend::Sim {
        ptxlab_common::cli::check_sim_limit(
            "--blocks",
            layout.blocks as usize,
            SIM_MAX_PI_BLOCKS,
            "blocks",
        )?;
        if args.n as u64 > SIM_MAX_PI_SAMPLES {
            return Err(Error::input(
                "--n",
                format!(
                    "{} samples on the simulator; at most 1e9 (or use --backend cpu)",
                    args.n
                ),
            ));
        }
    }
    let samples = args.n as u64;
    layout.validate(samples)?;
    let dev = open_device(backend)?;
    println!(
        "layout: {} blocks x {} threads = {} streams, seed {} (the same on every backend)",
        layout.blocks,
        layout.block,
        layout.threads(),
        args.seed
    );
    let size = format!("{samples:.0e} samples");
    let row = |variant: &str, backend: &str, hits: u64, t: &Timing| {
        let mut r = timed_row(
            "monte-carlo-pi",
            variant,
            backend,
            &size,
            "u64 hits",
            t,
            Some((samples as f64 / (t.median_ms * 1e-3) / 1e9, "Gsamples/s")),
        );
        r.rel_err =
            Some((estimate(hits, samples) - std::f64::consts::PI).abs() / std::f64::consts::PI);
        r
    };
    let report = |what: &str, hits: u64, t: &Timing| {
        let est = estimate(hits, samples);
        println!(
            "{what}: {hits} hits of {samples}: pi ~ {est:.9}, error {:.3e}; median {} ms, {:.3e} samples/s",
            est - std::f64::consts::PI,
            ptxlab_common::report::fmt_ms(t.median_ms),
            samples as f64 / (t.median_ms * 1e-3)
        );
    };
    let Some(dev) = dev else {
        let mut hits = 0;
        let t = Timing::host(0, args.reps.clamp(1, 3), || {
            hits = cpu_pi_rayon(layout, samples, args.seed).unwrap_or(0)
        });
        report(
            &format!("CPU rayon, {} streams", layout.threads()),
            hits,
            &t,
        );
        return Ok(vec![row("CPU rayon all cores", "cpu", hits, &t)]);
    };
    let t0 = std::time::Instant::now();
    let got = pi_hits(&dev, layout, samples, args.seed)?;
    let first = t0.elapsed().as_secs_f64() * 1e3;
    let tc = std::time::Instant::now();
    let want = cpu_pi_rayon(layout, samples, args.seed)?;
    let cpu_ms = tc.elapsed().as_secs_f64() * 1e3;
    if got != want {
        return Err(Error::Verification {
            what: format!("monte-carlo-pi {samples} samples seed {}", args.seed),
            detail: format!(
                "{got} hits on {}, {want} on the CPU with the same streams",
                dev.name()
            ),
        });
    }
    println!(
        "PASS monte-carlo-pi on {}: {got} hits, equal to the CPU (rayon, {cpu_ms:.1} ms) for seed {}; first call {first:.1} ms",
        dev.name(),
        args.seed
    );
    let reps = if dev.is_sim() {
        args.reps.min(2)
    } else {
        args.reps.max(1)
    };
    let mut hits = dev.alloc_filled(reps + 1, 0u64)?;
    let t = dev.time(1, reps, |i| {
        pi_into(
            &dev,
            layout,
            samples,
            args.seed.wrapping_add(i as u64),
            &mut hits,
            i,
        )
    })?;
    report(
        &format!(
            "{} (seed {}; timed calls use seeds {}..)",
            dev.name(),
            args.seed,
            args.seed
        ),
        got,
        &t,
    );
    let cpu = Timing {
        median_ms: cpu_ms,
        min_ms: cpu_ms,
        max_ms: cpu_ms,
        reps: 1,
    };
    let backend_name = if dev.is_sim() { "sim" } else { "gpu" };
    let mut r = row("philox streams", backend_name, got, &t);
    r.first_ms = Some(first);
    r.speedup = Some(cpu_ms / t.median_ms);
    Ok(vec![row("CPU rayon all cores", "cpu", want, &cpu), r])
}
/// Parses a sample count: an integer or a float like `1e9` with an integral value.
pub fn parse_count(s: &str) -> std::result::Result<u64, String> {
    if let Ok(v) = s.parse::<u64>() {
        return Ok(v);
    }
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f < 1.8e19 => Ok(f as u64),
        _ => Err(format!(
            "`{s}` is not a whole non-negative count (examples: 100000000, 1e9)"
        )),
    }
}
