//! Kernel fusion and launch overhead: the three-step elementwise pipeline
//! unfused (3 kernels) and fused (1), and many tiny launches plain against a
//! CUDA graph captured once and replayed.

use super::BenchCtx;
use crate::error::{Error, Result};
use crate::launch;
use crate::report::{Row, Status, fmt_ms};
use crate::rng::{rel_err_norm, uniform_vec};
use crate::runtime::{Buffer, Device, KernelArg, LaunchConfig, Timing};
use kernels_gpu::fusion as k;
use rayon::prelude::*;

/// Pipeline coefficients `(a, b, c)` used by the checks and the benchmark.
pub const COEFFS: (f32, f32, f32) = (1.5, -0.25, 0.5);

fn check_lens(what: &str, lens: &[usize]) -> Result<usize> {
    let n = lens[0];
    if lens.iter().any(|&l| l != n) {
        return Err(Error::input(
            what,
            format!("buffer lengths differ: {lens:?}; all must be equal"),
        ));
    }
    if n == 0 {
        return Err(Error::input(what, "length 0; give at least one element"));
    }
    Ok(n)
}

fn config(n: usize) -> Result<LaunchConfig> {
    LaunchConfig::for_threads(n.div_ceil(k::PER_THREAD), k::BLOCK)
}

/// The pipeline as three kernels: `y = a x + b`, `z = y y`, `w = sqrt(z) + c`.
#[allow(clippy::too_many_arguments)]
pub fn unfused(
    dev: &Device,
    x: &Buffer<f32>,
    y: &mut Buffer<f32>,
    z: &mut Buffer<f32>,
    w: &mut Buffer<f32>,
    a: f32,
    b: f32,
    c: f32,
) -> Result<()> {
    let n = check_lens("fusion pipeline", &[x.len(), y.len(), z.len(), w.len()])?;
    let cfg = config(n)?;
    launch!(dev, cfg, fusion::fusion_axpb_f32(x, &mut *y, a, b))?;
    launch!(dev, cfg, fusion::fusion_square_f32(&*y, &mut *z))?;
    launch!(dev, cfg, fusion::fusion_sqrt_add_f32(&*z, w, c))
}

/// The pipeline as one kernel.
pub fn fused(
    dev: &Device,
    x: &Buffer<f32>,
    w: &mut Buffer<f32>,
    a: f32,
    b: f32,
    c: f32,
) -> Result<()> {
    let n = check_lens("fusion pipeline", &[x.len(), w.len()])?;
    launch!(dev, config(n)?, fusion::fusion_fused_f32(x, w, a, b, c))
}

/// CPU baseline, one thread.
pub fn cpu_serial(x: &[f32], w: &mut [f32], a: f32, b: f32, c: f32) {
    for (w, x) in w.iter_mut().zip(x) {
        *w = k::stage3(k::stage2(k::stage1(*x, a, b)), c);
    }
}

/// CPU baseline, rayon.
pub fn cpu_rayon(x: &[f32], w: &mut [f32], a: f32, b: f32, c: f32) {
    w.par_iter_mut()
        .zip(x.par_iter())
        .for_each(|(w, x)| *w = k::stage3(k::stage2(k::stage1(*x, a, b)), c));
}

/// f64 reference.
pub fn reference(x: &[f32], a: f32, b: f32, c: f32) -> Vec<f64> {
    x.iter()
        .map(|v| ((a as f64 * *v as f64 + b as f64).powi(2)).sqrt() + c as f64)
        .collect()
}

/// Input in [-1, 1).
pub fn input(n: usize, seed: u64) -> Vec<f32> {
    uniform_vec(seed, n, -1.0, 1.0)
        .into_iter()
        .map(|v| v as f32)
        .collect()
}

/// Runs both pipelines on `n` random elements (outputs poisoned) and returns
/// `(rel err unfused, rel err fused)` against f64.
pub fn check(dev: &Device, n: usize, seed: u64) -> Result<(f64, f64)> {
    let (a, b, c) = COEFFS;
    let hx = input(n, seed);
    let x = dev.upload(&hx)?;
    let mut y = dev.alloc_filled(n, f32::NAN)?;
    let mut z = dev.alloc_filled(n, f32::NAN)?;
    let mut w = dev.alloc_filled(n, f32::NAN)?;
    let mut w2 = dev.alloc_filled(n, f32::NAN)?;
    unfused(dev, &x, &mut y, &mut z, &mut w, a, b, c)?;
    fused(dev, &x, &mut w2, a, b, c)?;
    let want = reference(&hx, a, b, c);
    let e = |buf: &Buffer<f32>| -> Result<f64> {
        let g: Vec<f64> = dev.download(buf)?.into_iter().map(f64::from).collect();
        Ok(rel_err_norm(&g, &want))
    };
    Ok((e(&w)?, e(&w2)?))
}

/// Launches the tiny kernel once (`x[i] += 1` for every `i`).
pub fn tiny(dev: &Device, x: &mut Buffer<f32>) -> Result<()> {
    if x.is_empty() || x.len() > k::TINY_THREADS as usize {
        return Err(Error::input(
            "tiny kernel buffer",
            format!("{} elements; allowed 1..={}", x.len(), k::TINY_THREADS),
        ));
    }
    launch!(
        dev,
        LaunchConfig::for_threads(x.len(), k::TINY_THREADS)?,
        fusion::fusion_tiny_f32(x)
    )
}

/// `n` plain launches of the tiny kernel.
pub fn plain(dev: &Device, x: &mut Buffer<f32>, n: usize) -> Result<()> {
    for _ in 0..n {
        tiny(dev, x)?;
    }
    Ok(())
}

/// `n` tiny launches captured once into a CUDA graph (on a stream of its
/// own: `launch!` goes to the legacy default stream, which cannot be captured).
pub struct TinyGraph {
    graph: crate::runtime::Graph,
    /// Kernels in the graph.
    pub kernels: usize,
}

impl TinyGraph {
    /// Captures `n` launches of the tiny kernel on `x`. On the simulator:
    /// [`Error::Unsupported`] (graphs are a driver feature).
    pub fn capture(dev: &Device, x: &mut Buffer<f32>, n: usize) -> Result<Self> {
        let g = dev.as_gpu().ok_or_else(|| Error::Unsupported {
            what: "CUDA graph capture".into(),
            backend: "sim".into(),
            hint: "graphs need the CUDA driver: use --backend gpu, or time the plain launches (which the simulator runs)".into(),
        })?;
        if n == 0 {
            return Err(Error::input("--kernels", "0 kernels; capture at least one"));
        }
        if x.is_empty() || x.len() > k::TINY_THREADS as usize {
            return Err(Error::input(
                "tiny kernel buffer",
                format!("{} elements; allowed 1..={}", x.len(), k::TINY_THREADS),
            ));
        }
        let cfg = LaunchConfig::for_threads(x.len(), x.len() as u32)?;
        let mut params = Vec::new();
        KernelArg::push_params(&x, &mut params);
        let graph = crate::runtime::Graph::capture(g, |cap| {
            for _ in 0..n {
                cap.launch(&crate::modules::KERNELS, "fusion_tiny_f32", &cfg, &params)?;
            }
            Ok(())
        })?;
        Ok(Self { graph, kernels: n })
    }

    /// Replays the graph once (asynchronously).
    pub fn replay(&self) -> Result<()> {
        self.graph.replay()
    }

    /// Waits for the graph's stream.
    pub fn synchronize(&self) -> Result<()> {
        self.graph.synchronize()
    }

    /// Times `reps` replays with events on the graph's stream (ms per replay).
    pub fn time(&self, warmup: usize, reps: usize) -> Result<Timing> {
        self.graph.time(warmup, reps)
    }
}

/// Every fusion kernel on the simulator at odd sizes; the graph path must
/// be refused there with a hint.
pub fn sim_check() -> Result<()> {
    let dev = Device::sim();
    for n in [1usize, 7, 1001] {
        let (eu, ef) = check(&dev, n, n as u64)?;
        if !(eu < 1e-6 && ef < 1e-6) {
            return Err(Error::Verification {
                what: format!("fusion pipeline n={n} (simulator)"),
                detail: format!("rel err unfused {eu:.1e}, fused {ef:.1e}"),
            });
        }
    }
    let mut x = dev.upload(&[0.0f32; 29])?;
    plain(&dev, &mut x, 5)?;
    if dev.download(&x)?.iter().any(|v| *v != 5.0) {
        return Err(Error::Verification {
            what: "tiny kernel (simulator)".into(),
            detail: "5 launches did not add 5".into(),
        });
    }
    match TinyGraph::capture(&dev, &mut x, 3) {
        Err(Error::Unsupported { .. }) => Ok(()),
        Err(e) => Err(e),
        Ok(_) => Err(Error::Verification {
            what: "graph capture on the simulator".into(),
            detail: "should be unsupported".into(),
        }),
    }
}

/// Most tiny kernels per launch-overhead measurement.
pub const MAX_KERNELS: usize = 100_000;

/// The tiny kernel counts in f32 (`x[i] += 1`), which is exact only up to
/// 2^24: `kernels x (reps + 2)` launches (warm-up included) must stay there,
/// or the check that every launch ran would fail on a correct run.
pub fn check_counts(kernels: usize, reps: usize) -> Result<()> {
    let total = kernels.checked_mul(reps.saturating_add(2));
    if total.is_none_or(|t| t > 1 << 24) {
        return Err(Error::input(
            "--kernels/--reps",
            format!(
                "{kernels} kernels x ({reps} reps + 2 warm-up) launches; at most 2^24 = 16777216 in \
                 all (each adds 1.0 to an f32 counter, exact only up to 2^24): use fewer"
            ),
        ));
    }
    Ok(())
}

/// Launch-overhead measurement: `(plain us/kernel, graph us/kernel)`,
/// checking that every launch ran.
pub fn launch_overhead(
    dev: &Device,
    kernels: usize,
    reps: usize,
) -> Result<(Timing, Option<Timing>)> {
    if kernels == 0 || kernels > MAX_KERNELS {
        return Err(Error::input(
            "--kernels",
            format!("{kernels} kernels; allowed 1..={MAX_KERNELS}"),
        ));
    }
    // The timers run at least one repetition; count what they run.
    let reps = reps.max(1);
    check_counts(kernels, reps)?;
    let mut x = dev.upload(&vec![0.0f32; k::TINY_THREADS as usize])?;
    let plain_t = dev.time(1, reps, |_| plain(dev, &mut x, kernels))?;
    let want = (kernels * (reps + 1)) as f32;
    if dev.download(&x)?.iter().any(|v| *v != want) {
        return Err(Error::Verification {
            what: "plain launches".into(),
            detail: format!("expected every element = {want}"),
        });
    }
    if dev.is_sim() {
        return Ok((plain_t, None));
    }
    dev.write(&mut x, &vec![0.0f32; k::TINY_THREADS as usize])?;
    let graph = TinyGraph::capture(dev, &mut x, kernels)?;
    let t = graph.time(2, reps)?;
    graph.synchronize()?;
    let want = (kernels * (reps + 2)) as f32;
    if dev.download(&x)?.iter().any(|v| *v != want) {
        return Err(Error::Verification {
            what: "graph replay".into(),
            detail: format!("expected every element = {want}"),
        });
    }
    Ok((plain_t, Some(t)))
}

fn per_kernel(t: &Timing, kernels: usize) -> Timing {
    let d = kernels as f64;
    Timing {
        median_ms: t.median_ms / d,
        min_ms: t.min_ms / d,
        max_ms: t.max_ms / d,
        reps: t.reps,
    }
}

/// Benchmark: unfused vs fused GB/s and % of the copy ceiling; plain vs
/// graph microseconds per tiny kernel.
pub fn bench(ctx: &BenchCtx) -> Result<Vec<Row>> {
    let (a, b, c) = COEFFS;
    let n: usize = if ctx.quick { 1 << 24 } else { 1 << 26 };
    let size = format!("2^{}", n.trailing_zeros());
    let hx = input(n, 1);
    let mut hw = vec![0f32; n];
    let t1 = Timing::host(0, 2, || cpu_serial(&hx, &mut hw, a, b, c));
    let tr = Timing::host(1, 3, || cpu_rayon(&hx, &mut hw, a, b, c));
    let mut rows = Vec::new();
    for (name, t) in [
        ("CPU 1 thread (fused loop)", &t1),
        ("CPU rayon (fused loop)", &tr),
    ] {
        let mut r = Row::new("fusion", name, "cpu", &size, "f32");
        r.throughput = Some(8.0 * n as f64 / (t.median_ms * 1e-3) / 1e9);
        r.unit = "GB/s".into();
        r.speedup = Some(t1.median_ms / t.median_ms);
        r.timing = Some(t.clone());
        rows.push(r);
    }
    let Some(dev) = ctx.gpu() else {
        rows.push(super::skipped_gpu("fusion", ctx));
        return Ok(rows);
    };
    let (eu, ef) = check(dev, 1_000_003, 3)?;
    let x = dev.upload(&hx)?;
    let mut y = dev.alloc_filled(n, 0f32)?;
    let mut z = dev.alloc_filled(n, 0f32)?;
    let mut w = dev.alloc_filled(n, 0f32)?;
    for (fusedp, err) in [(false, eu), (true, ef)] {
        let label = if fusedp {
            "fused: 1 kernel, 8 B/element"
        } else {
            "unfused: 3 kernels, 24 B/element"
        };
        let mut row = Row::new("fusion", label, "gpu", &size, "f32");
        row.rel_err = Some(err);
        if !(err < 1e-6) {
            row.status = Status::Failed(format!("relative error {err:.1e} >= 1e-6"));
            rows.push(row);
            continue;
        }
        let t = dev.time(3, ctx.reps(), |_| {
            if fusedp {
                fused(dev, &x, &mut w, a, b, c)
            } else {
                unfused(dev, &x, &mut y, &mut z, &mut w, a, b, c)
            }
        })?;
        let bytes = if fusedp { 8.0 } else { 24.0 } * n as f64;
        let gbs = bytes / (t.median_ms * 1e-3) / 1e9;
        row.throughput = Some(gbs);
        row.unit = "GB/s".into();
        // The figure of merit: this pipeline's time against one memory pass
        // (8 bytes per element at the copy bandwidth).
        row.pct_of_ceiling = ctx
            .ceilings
            .copy_gbs
            .map(|cg| 100.0 * (8.0 * n as f64 / (t.median_ms * 1e-3) / 1e9) / cg);
        row.speedup = Some(t1.median_ms / t.median_ms);
        row.timing = Some(t);
        rows.push(row);
    }
    let kernels = if ctx.quick { 200 } else { 1000 };
    let (tp, tg) = launch_overhead(dev, kernels, if ctx.quick { 5 } else { 20 })?;
    let ksize = format!("{kernels} kernels");
    for (label, t) in [
        ("plain launches (launch!), per kernel", Some(tp)),
        ("CUDA graph replay, per kernel", tg),
    ] {
        let Some(t) = t else { continue };
        let per = per_kernel(&t, kernels);
        let mut row = Row::new("fusion", label, "gpu", &ksize, "f32");
        row.throughput = Some(per.median_ms * 1e3);
        row.unit = "us/kernel".into();
        row.timing = Some(per);
        rows.push(row);
    }
    Ok(rows)
}

/// `ptxlab fusion` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Elements (at most 65536 on the simulator).
    #[arg(long, default_value_t = 1 << 26, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub n: usize,
    /// gpu, sim or cpu.
    #[arg(long, default_value = "gpu")]
    pub backend: String,
    /// Timed repetitions (1..=10000).
    #[arg(long, default_value_t = 20, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
}

/// Largest `--n` on the simulator (one OS thread per GPU thread).
pub const SIM_MAX_N: usize = 1 << 16;

/// `ptxlab fusion`.
pub fn cli(args: &Args) -> Result<()> {
    let backend: crate::Backend = args.backend.parse()?;
    let n = args.n;
    if n == 0 {
        return Err(Error::input("--n", "0 elements; give at least one"));
    }
    crate::cli::check_reps(args.reps)?;
    if backend == crate::Backend::Sim {
        crate::cli::check_sim_limit("--n", n, SIM_MAX_N, "elements")?;
    }
    // x, w on the host; x, y, z, w on the device (the simulator's are host memory).
    crate::cli::check_host_arrays("--n", n, 4, 6)?;
    // Before the input is made: a missing driver is reported at once.
    let dev = crate::cli::open_device(backend)?;
    let (a, b, c) = COEFFS;
    let hx = input(n, 42);
    let mut hw = vec![0f32; n];
    let t1 = Timing::host(0, 1, || cpu_serial(&hx, &mut hw, a, b, c));
    println!("CPU 1 thread: {} ms", fmt_ms(t1.median_ms));
    let Some(dev) = dev else {
        let tr = Timing::host(1, args.reps.min(5), || cpu_rayon(&hx, &mut hw, a, b, c));
        println!("CPU rayon: {} ms", fmt_ms(tr.median_ms));
        return Ok(());
    };
    let (eu, ef) = check(&dev, n.min(1 << 20), 7)?;
    if !(eu < 1e-6 && ef < 1e-6) {
        return Err(Error::Verification {
            what: "fusion pipeline".into(),
            detail: format!("rel err unfused {eu:.1e}, fused {ef:.1e}"),
        });
    }
    println!("PASS unfused and fused match the f64 reference (rel err {eu:.1e}, {ef:.1e})");
    let x = dev.upload(&hx)?;
    let mut y = dev.alloc_filled(n, 0f32)?;
    let mut z = dev.alloc_filled(n, 0f32)?;
    let mut w = dev.alloc_filled(n, 0f32)?;
    let reps = if dev.is_sim() { 1 } else { args.reps };
    let tu = dev.time(1, reps, |_| {
        unfused(&dev, &x, &mut y, &mut z, &mut w, a, b, c)
    })?;
    let tf = dev.time(1, reps, |_| fused(&dev, &x, &mut w, a, b, c))?;
    for (name, t, bytes) in [
        ("unfused (3 kernels)", tu, 24.0),
        ("fused (1 kernel)", tf, 8.0),
    ] {
        println!(
            "{name}: {} ms, {:.1} GB/s moved",
            fmt_ms(t.median_ms),
            bytes * n as f64 / (t.median_ms * 1e-3) / 1e9
        );
    }
    Ok(())
}

/// `ptxlab launch-overhead` arguments.
#[derive(Debug, clap::Args)]
pub struct LaunchArgs {
    /// Tiny kernels per measurement (1..=100000; at most 200 on the simulator).
    #[arg(long, default_value_t = 1000, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub kernels: usize,
    /// gpu or sim (sim: plain launches only).
    #[arg(long, default_value = "gpu")]
    pub backend: String,
    /// Timed repetitions (1..=10000).
    #[arg(long, default_value_t = 10, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
}

/// `ptxlab launch-overhead`.
pub fn cli_launch(args: &LaunchArgs) -> Result<()> {
    let backend: crate::Backend = args.backend.parse()?;
    if args.kernels == 0 {
        return Err(Error::input("--kernels", "0 kernels; give at least one"));
    }
    if args.kernels > MAX_KERNELS {
        return Err(Error::input(
            "--kernels",
            format!(
                "{} kernels; at most {MAX_KERNELS} per measurement (a graph of that many nodes)",
                args.kernels
            ),
        ));
    }
    crate::cli::check_reps(args.reps)?;
    check_counts(
        args.kernels,
        if backend == crate::Backend::Sim {
            1
        } else {
            args.reps
        },
    )?;
    let dev = match backend {
        crate::Backend::Gpu => Device::gpu(0)?,
        crate::Backend::Sim => {
            if args.kernels > 200 {
                return Err(Error::input(
                    "--kernels",
                    "at most 200 on the simulator (each launch starts OS threads)",
                ));
            }
            Device::sim()
        }
        crate::Backend::Cpu => {
            return Err(Error::input(
                "--backend",
                "launch overhead needs gpu or sim",
            ));
        }
    };
    let (tp, tg) = launch_overhead(&dev, args.kernels, if dev.is_sim() { 1 } else { args.reps })?;
    println!(
        "plain launches: {:.2} us per kernel ({} kernels)",
        tp.median_ms * 1e3 / args.kernels as f64,
        args.kernels
    );
    match tg {
        Some(t) => println!(
            "CUDA graph replay: {:.2} us per kernel",
            t.median_ms * 1e3 / args.kernels as f64
        ),
        None => println!(
            "CUDA graph replay: not available on the simulator (graphs are a driver feature)"
        ),
    }
    Ok(())
}
