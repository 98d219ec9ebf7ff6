//! Vector add: typed launchers, CPU baselines, the correctness check and the
//! benchmark (against the device-to-device copy measured in the same run).

use crate::error::{Error, Result};
use crate::launch;
use crate::report::{Row, Status};
use crate::rng::{rel_err_norm, uniform_vec};
use crate::runtime::{Buffer, Device, DeviceKind, LaunchConfig, ModuleKey, Timing};
use cudarc::driver::DeviceRepr;
use kernels_gpu::vector::{BLOCK, lanes, threads_needed};
use ptxlab_device::math::Real;
use rayon::prelude::*;

/// The rungs of the vector-add ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rung {
    /// One element per thread.
    Scalar,
    /// One 16-byte group per thread (`x4` for f32, `x2` for f64).
    Wide,
}

impl Rung {
    /// All rungs in ladder order.
    pub const ALL: [Rung; 2] = [Rung::Scalar, Rung::Wide];
    /// Label.
    pub fn label(&self) -> &'static str {
        match self {
            Rung::Scalar => "1 element/thread",
            Rung::Wide => "16-byte loads",
        }
    }
    /// Kernel name for element type `T`.
    pub fn kernel<T: Element>(&self) -> &'static str {
        match self {
            Rung::Scalar => T::SCALAR_KERNEL,
            Rung::Wide => T::WIDE_KERNEL,
        }
    }
}

impl std::str::FromStr for Rung {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "scalar" => Ok(Rung::Scalar),
            "wide" | "x4" | "x2" => Ok(Rung::Wide),
            _ => Err(Error::input(
                "variant",
                format!("`{s}`; allowed: scalar, wide"),
            )),
        }
    }
}

/// Element types of the vector-add kernels.
pub trait Element:
    Real + DeviceRepr + Send + Sync + ndarray_npy::WritableElement + ndarray_npy::ReadableElement
{
    /// `f32` / `f64`.
    const NAME: &'static str;
    /// Rung 1 kernel.
    const SCALAR_KERNEL: &'static str;
    /// Rung 2 kernel.
    const WIDE_KERNEL: &'static str;
    /// Launches the kernel of `rung`.
    fn launch(
        dev: &Device,
        cfg: LaunchConfig,
        rung: Rung,
        a: &Buffer<Self>,
        b: &Buffer<Self>,
        c: &mut Buffer<Self>,
    ) -> Result<()>;
}

impl Element for f32 {
    const NAME: &'static str = "f32";
    const SCALAR_KERNEL: &'static str = "vector_add_f32";
    const WIDE_KERNEL: &'static str = "vector_add_x4_f32";
    fn launch(
        dev: &Device,
        cfg: LaunchConfig,
        rung: Rung,
        a: &Buffer<f32>,
        b: &Buffer<f32>,
        c: &mut Buffer<f32>,
    ) -> Result<()> {
        match rung {
            Rung::Scalar => launch!(dev, cfg, vector::vector_add_f32(a, b, c)),
            Rung::Wide => launch!(dev, cfg, vector::vector_add_x4_f32(a, b, c)),
        }
    }
}

impl Element for f64 {
    const NAME: &'static str = "f64";
    const SCALAR_KERNEL: &'static str = "vector_add_f64";
    const WIDE_KERNEL: &'static str = "vector_add_x2_f64";
    fn launch(
        dev: &Device,
        cfg: LaunchConfig,
        rung: Rung,
        a: &Buffer<f64>,
        b: &Buffer<f64>,
        c: &mut Buffer<f64>,
    ) -> Result<()> {
        match rung {
            Rung::Scalar => launch!(dev, cfg, vector::vector_add_f64(a, b, c)),
            Rung::Wide => launch!(dev, cfg, vector::vector_add_x2_f64(a, b, c)),
        }
    }
}

/// The launch configuration of `rung` for `n` elements.
pub fn config<T: Element>(n: usize, rung: Rung) -> Result<LaunchConfig> {
    let per = match rung {
        Rung::Scalar => 1,
        Rung::Wide => lanes::<T>(),
    };
    LaunchConfig::for_threads(threads_needed(n, per), BLOCK)
}

/// `c = a + b` on `dev`. Checks that the three lengths agree and are not zero.
pub fn add<T: Element>(
    dev: &Device,
    rung: Rung,
    module: ModuleKey,
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &mut Buffer<T>,
) -> Result<()> {
    let n = c.len();
    if a.len() != n || b.len() != n {
        return Err(Error::input(
            "vector add",
            format!(
                "lengths differ: a has {}, b has {}, c has {}; all three must be equal",
                a.len(),
                b.len(),
                n
            ),
        ));
    }
    if n == 0 {
        return Err(Error::input(
            "vector add",
            "length 0; the vectors must have at least one element",
        ));
    }
    T::launch(
        dev,
        config::<T>(n, rung)?.with_module(module),
        rung,
        a,
        b,
        c,
    )
}

/// CPU baseline, one thread.
pub fn cpu_serial<T: Element>(a: &[T], b: &[T], c: &mut [T]) {
    for ((c, a), b) in c.iter_mut().zip(a).zip(b) {
        *c = *a + *b;
    }
}

/// CPU baseline, rayon on all cores.
pub fn cpu_rayon<T: Element>(a: &[T], b: &[T], c: &mut [T]) {
    c.par_iter_mut()
        .zip(a.par_iter())
        .zip(b.par_iter())
        .for_each(|((c, a), b)| *c = *a + *b);
}

/// Inputs for the checks: uniform in [-1, 1), from a seed.
pub fn inputs<T: Element>(n: usize, seed: u64) -> (Vec<T>, Vec<T>) {
    let a = uniform_vec(seed, n, -1.0, 1.0)
        .into_iter()
        .map(T::from_f64)
        .collect();
    let b = uniform_vec(seed ^ 0xABCD, n, -1.0, 1.0)
        .into_iter()
        .map(T::from_f64)
        .collect();
    (a, b)
}

/// Bitwise equal, or both NaN (a NaN input gives a NaN sum, whose payload
/// bits the GPU need not keep).
pub fn same_value<T: Element>(a: T, b: T) -> bool {
    let (a, b) = (a.to_f64(), b.to_f64());
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Result of [`check`].
#[derive(Debug, Clone)]
pub struct Check {
    /// Elements that differ from the CPU result (bitwise).
    pub mismatches: usize,
    /// Relative error by norm against the f64 sum.
    pub rel_err: f64,
}

/// Runs `rung` on random inputs of length `n` with the output poisoned (NaN)
/// and compares with the CPU: the sum of two floats is correctly rounded on
/// both, so the results must be bitwise equal.
pub fn check<T: Element>(dev: &Device, n: usize, rung: Rung, seed: u64) -> Result<Check> {
    let (ha, hb) = inputs::<T>(n, seed);
    let a = dev.upload(&ha)?;
    let b = dev.upload(&hb)?;
    let mut c = dev.alloc_filled(n, T::from_f64(f64::NAN))?;
    add(dev, rung, ModuleKey::default(), &a, &b, &mut c)?;
    let got = dev.download(&c)?;
    let mut want = vec![T::ZERO; n];
    cpu_serial(&ha, &hb, &mut want);
    let mismatches = got
        .iter()
        .zip(&want)
        .filter(|(g, w)| !same_value(**g, **w))
        .count();
    let g64: Vec<f64> = got.iter().map(|v| v.to_f64()).collect();
    let r64: Vec<f64> = ha
        .iter()
        .zip(&hb)
        .map(|(a, b)| a.to_f64() + b.to_f64())
        .collect();
    Ok(Check {
        mismatches,
        rel_err: rel_err_norm(&g64, &r64),
    })
}

/// Bytes moved by one vector add of `n` elements (2 reads, 1 write).
pub fn bytes<T>(n: usize) -> f64 {
    3.0 * n as f64 * std::mem::size_of::<T>() as f64
}

/// Measures the device-to-device copy bandwidth (read + write bytes per
/// second) with a copy of `bytes` bytes: the ceiling of every memory-bound row.
pub fn copy_bandwidth(dev: &Device, bytes: usize, reps: usize) -> Result<(Timing, f64)> {
    let g = dev.as_gpu().ok_or_else(|| Error::Unsupported {
        what: "copy bandwidth".into(),
        backend: "sim".into(),
        hint: "run on a GPU".into(),
    })?;
    let src = dev.alloc_filled::<u8>(bytes, 1)?;
    let mut dst = dev.alloc_filled::<u8>(bytes, 0)?;
    let (s, d) = (src.cuda_slice(), dst.cuda_slice_mut());
    let (Some(s), Some(d)) = (s, d) else {
        unreachable!("GPU buffers")
    };
    let t = g.time(3, reps, |_| g.copy_dtod(s, d))?;
    let gbs = 2.0 * bytes as f64 / (t.median_ms * 1e-3) / 1e9;
    Ok((t, gbs))
}

/// Benchmark options.
#[derive(Debug, Clone)]
pub struct Bench {
    /// Lengths to time.
    pub sizes: Vec<usize>,
    /// Timed repetitions per row.
    pub reps: usize,
    /// Untimed warm-up calls.
    pub warmup: usize,
    /// Time the CPU baselines at these lengths (they are slow).
    pub cpu: bool,
}

/// Times every rung at every size on `dev`, after checking each, and adds
/// the CPU baselines and the copy ceiling. Small sizes rotate over several
/// buffer sets so the timing is not an L2-cache figure.
pub fn bench<T: Element>(dev: &Device, opts: &Bench) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let backend = if dev.is_sim() { "sim" } else { "gpu" };
    for &n in &opts.sizes {
        let size = format!("2^{:.1} ({n})", (n as f64).log2());
        let cpu1 = if opts.cpu {
            let (a, b) = inputs::<T>(n, 1);
            let mut c = vec![T::ZERO; n];
            let t1 = Timing::host(1, 3, || cpu_serial(&a, &b, &mut c));
            let tr = Timing::host(1, 5, || cpu_rayon(&a, &b, &mut c));
            for (name, t) in [("CPU 1 thread", &t1), ("CPU rayon all cores", &tr)] {
                let mut r = Row::new("vector-add", name, "cpu", &size, T::NAME);
                r.throughput = Some(bytes::<T>(n) / (t.median_ms * 1e-3) / 1e9);
                r.unit = "GB/s".into();
                r.speedup = Some(t1.median_ms / t.median_ms);
                r.timing = Some(t.clone());
                rows.push(r);
            }
            Some(t1.median_ms)
        } else {
            None
        };
        let ceiling = match dev.kind() {
            DeviceKind::Gpu(_) => {
                let (t, gbs) = copy_bandwidth(dev, n * 2 * std::mem::size_of::<T>(), opts.reps)?;
                let mut r = Row::new(
                    "vector-add",
                    "cudaMemcpy DtoD (ceiling)",
                    "gpu",
                    &size,
                    T::NAME,
                );
                r.timing = Some(t);
                r.throughput = Some(gbs);
                r.unit = "GB/s".into();
                r.pct_of_ceiling = Some(100.0);
                rows.push(r);
                Some(gbs)
            }
            DeviceKind::Sim => None,
        };
        let l2 = dev
            .as_gpu()
            .map(|g| g.info().l2_bytes as f64)
            .unwrap_or(0.0);
        let sets = ((4.0 * l2) / bytes::<T>(n)).ceil().clamp(1.0, 16.0) as usize;
        for rung in Rung::ALL {
            let mut row = Row::new("vector-add", rung.label(), backend, &size, T::NAME);
            let kernel = rung.kernel::<T>();
            if let Some(g) = dev.as_gpu()
                && let Some(res) = crate::modules::resource(kernel, &g.info().arch(), false)
            {
                row.registers = Some(res.registers);
                row.spills = Some(res.spill_stores + res.spill_loads);
            }
            let check_n = if dev.is_sim() { n.min(5000) } else { n };
            match check::<T>(dev, check_n, rung, 7) {
                Ok(c) if c.mismatches == 0 => row.rel_err = Some(c.rel_err),
                Ok(c) => {
                    row.status = Status::Failed(format!(
                        "{} of {check_n} elements differ from the CPU",
                        c.mismatches
                    ));
                    rows.push(row);
                    continue;
                }
                Err(e) => {
                    row.status = Status::Failed(e.to_string());
                    rows.push(row);
                    continue;
                }
            }
            let (ha, hb) = inputs::<T>(n, 3);
            let mut bufs = Vec::new();
            for _ in 0..sets {
                bufs.push((
                    dev.upload(&ha)?,
                    dev.upload(&hb)?,
                    dev.alloc_filled(n, T::ZERO)?,
                ));
            }
            let module = ModuleKey::default();
            let t0 = std::time::Instant::now();
            {
                let (a, b, c) = &mut bufs[0];
                add(dev, rung, module, a, b, c)?;
                dev.synchronize()?;
            }
            row.first_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
            let t = dev.time(opts.warmup, opts.reps, |i| {
                let (a, b, c) = &mut bufs[i % sets];
                add(dev, rung, module, a, b, c)
            })?;
            let gbs = bytes::<T>(n) / (t.median_ms * 1e-3) / 1e9;
            row.throughput = Some(gbs);
            row.unit = "GB/s".into();
            row.pct_of_ceiling = ceiling.map(|c| 100.0 * gbs / c);
            row.speedup = cpu1.map(|c| c / t.median_ms);
            row.timing = Some(t);
            rows.push(row);
        }
    }
    Ok(rows)
}

/// Every vector-add kernel on the simulator, odd lengths, against the CPU.
pub fn sim_check() -> Result<()> {
    let dev = Device::sim();
    for n in [1usize, 7, 1001] {
        for rung in Rung::ALL {
            let c32 = check::<f32>(&dev, n, rung, n as u64)?;
            let c64 = check::<f64>(&dev, n, rung, n as u64)?;
            for (p, c) in [("f32", c32), ("f64", c64)] {
                if c.mismatches != 0 {
                    return Err(Error::Verification {
                        what: format!("vector add {p} {} n={n} (simulator)", rung.label()),
                        detail: format!("{} elements differ from the CPU", c.mismatches),
                    });
                }
            }
        }
    }
    Ok(())
}

/// The benchmark of `ptxlab bench`: sizes 2^20..2^28 (f32) and 2^20 f64, or
/// a quick subset; CPU-only rows when there is no device.
pub fn bench_ctx(ctx: &super::BenchCtx) -> Result<Vec<Row>> {
    let quick = ctx.quick;
    let Some(dev) = ctx.dev else {
        let n = if quick { 1 << 20 } else { 1 << 24 };
        let (a, b) = inputs::<f32>(n, 1);
        let mut c = vec![0f32; n];
        let t1 = Timing::host(1, 3, || cpu_serial(&a, &b, &mut c));
        let tr = Timing::host(1, 5, || cpu_rayon(&a, &b, &mut c));
        let mut rows = vec![super::skipped_gpu("vector-add", ctx)];
        for (name, t) in [("CPU 1 thread", t1.clone()), ("CPU rayon all cores", tr)] {
            let mut r = Row::new("vector-add", name, "cpu", &format!("{n}"), "f32");
            r.throughput = Some(bytes::<f32>(n) / (t.median_ms * 1e-3) / 1e9);
            r.unit = "GB/s".into();
            r.speedup = Some(t1.median_ms / t.median_ms);
            r.timing = Some(t);
            rows.push(r);
        }
        return Ok(rows);
    };
    if dev.is_sim() {
        let opts = Bench {
            sizes: vec![4099],
            reps: 2,
            warmup: 0,
            cpu: true,
        };
        return bench::<f32>(dev, &opts);
    }
    let sizes: Vec<usize> = if quick {
        vec![1 << 20, 1 << 24]
    } else {
        vec![1 << 20, 1 << 24, (1 << 20) + 3, 1 << 28]
    };
    let opts = Bench {
        sizes,
        reps: ctx.reps(),
        warmup: 3,
        cpu: !quick,
    };
    let mut rows = bench::<f32>(dev, &opts)?;
    let opts64 = Bench {
        sizes: vec![1 << 20, 1 << 27],
        reps: ctx.reps(),
        warmup: 3,
        cpu: false,
    };
    rows.extend(bench::<f64>(dev, &opts64)?);
    rows.extend(module_loads(dev)?);
    Ok(rows)
}

/// Module load times: the PTX module through the driver's JIT against the
/// cubin assembled ahead of time (each loaded fresh, five times; median).
pub fn module_loads(dev: &Device) -> Result<Vec<Row>> {
    let Some(g) = dev.as_gpu() else {
        return Ok(Vec::new());
    };
    let mut rows = Vec::new();
    for (label, key) in [
        ("module load: PTX, driver JIT", ModuleKey::default()),
        (
            "module load: cubin (ptxas ahead of time)",
            ModuleKey {
                form: crate::Form::Cubin,
                ..ModuleKey::default()
            },
        ),
        ("module load: fast-math PTX, driver JIT", ModuleKey::FAST),
    ] {
        let mut row = Row::new("vector-add", label, "gpu", "whole module", "");
        let mut samples = Vec::new();
        let mut failure = None;
        for _ in 0..5 {
            match g.load_uncached(&crate::modules::KERNELS, key) {
                Ok((_, ms)) => samples.push(ms),
                Err(e) => {
                    failure = Some(e.to_string());
                    break;
                }
            }
        }
        match failure {
            Some(e) => row.status = Status::Skipped(e.lines().next().unwrap_or("").to_string()),
            None => {
                row.first_ms = samples.first().copied();
                row.timing = Some(Timing::from_samples(samples));
            }
        }
        rows.push(row);
    }
    Ok(rows)
}

/// `ptxlab vector-add` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Number of elements (ignored with --a/--b; at most 65536 on the simulator).
    #[arg(long, default_value_t = 1 << 24, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub n: usize,
    /// f32 or f64.
    #[arg(long, default_value = "f32")]
    pub precision: String,
    /// scalar (1 element/thread) or wide (16-byte loads).
    #[arg(long, default_value = "wide")]
    pub variant: String,
    /// gpu, sim or cpu.
    #[arg(long, default_value = "gpu")]
    pub backend: String,
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

/// Largest `--n` on the simulator (one OS thread per GPU thread).
pub const SIM_MAX_N: usize = 1 << 16;

/// `ptxlab vector-add`.
pub fn cli(args: &Args) -> Result<()> {
    let backend: crate::Backend = args.backend.parse()?;
    let _: Rung = args.variant.parse()?;
    crate::cli::check_reps(args.reps)?;
    match args.precision.as_str() {
        "f32" => cli_typed::<f32>(args, backend),
        "f64" => cli_typed::<f64>(args, backend),
        p => Err(Error::input(
            "--precision",
            format!("`{p}`; allowed: f32, f64"),
        )),
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
            let rung: Rung = args.variant.parse()?;
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
