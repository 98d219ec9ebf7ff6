//! `ptxlab fusion` and `ptxlab launch-overhead`.

use super::{
    COEFFS, MAX_KERNELS, check, check_counts, cpu_rayon, cpu_serial, fused, input, launch_overhead,
    unfused,
};
use ptxlab_common::cli::{DEFAULT_REPS, timed_row};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::{Row, fmt_ms};
use ptxlab_common::runtime::{Device, Timing};

/// `ptxlab fusion` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Elements (at most 4194304 on the simulator).
    #[arg(long, default_value_t = 1 << 26, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub n: usize,
    /// gpu, sim or cpu.
    #[arg(long, value_enum, default_value_t = ptxlab_common::Backend::Gpu)]
    pub backend: ptxlab_common::Backend,
    /// Timed repetitions (1..=10000).
    #[arg(long, default_value_t = DEFAULT_REPS, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
    /// Print the measured rows as JSON on stdout (the row objects of
    /// `results.json`), and nothing else there.
    #[arg(long)]
    pub json: bool,
}

/// Largest `--n` on the simulator (a few arrays and their race shadow).
pub const SIM_MAX_N: usize = 1 << 22;
/// Most `--kernels` of `launch-overhead` on the simulator.
pub const SIM_MAX_KERNELS: usize = 20_000;

/// `ptxlab fusion`: the rows it measured.
pub fn cli(args: &Args) -> Result<Vec<Row>> {
    let backend = args.backend;
    let n = args.n;
    if n == 0 {
        return Err(Error::input("--n", "0 elements; give at least one"));
    }
    ptxlab_common::cli::check_reps(args.reps)?;
    if backend == ptxlab_common::Backend::Sim {
        ptxlab_common::cli::check_sim_limit("--n", n, SIM_MAX_N, "elements")?;
    }
    // x, w on the host; x, y, z, w on the device (the simulator's are host memory).
    ptxlab_common::cli::check_host_arrays("--n", n, 4, 6)?;
    // Before the input is made: a missing driver is reported at once.
    let dev = ptxlab_common::cli::open_device(backend)?;
    let (a, b, c) = COEFFS;
    let hx = input(n, ptxlab_common::cli::DEFAULT_SEED);
    let mut hw = vec![0f32; n];
    let t1 = Timing::host(0, 1, || cpu_serial(&hx, &mut hw, a, b, c));
    println!("CPU 1 thread: {} ms", fmt_ms(t1.median_ms));
    let size = format!("2^{:.1} ({n})", (n as f64).log2());
    let row = |variant: &str, backend: &str, t: &Timing, bytes: f64| {
        let mut r = timed_row(
            "fusion",
            variant,
            backend,
            &size,
            "f32",
            t,
            Some((bytes * n as f64 / (t.median_ms * 1e-3) / 1e9, "GB/s")),
        );
        r.speedup = Some(t1.median_ms / t.median_ms);
        r
    };
    let mut rows = vec![row("CPU 1 thread", "cpu", &t1, 8.0)];
    let Some(dev) = dev else {
        let tr = Timing::host(1, args.reps.min(5), || cpu_rayon(&hx, &mut hw, a, b, c));
        println!("CPU rayon: {} ms", fmt_ms(tr.median_ms));
        rows.push(row("CPU rayon all cores", "cpu", &tr, 8.0));
        return Ok(rows);
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
    let backend_name = if dev.is_sim() { "sim" } else { "gpu" };
    for (name, t, bytes, err) in [
        ("unfused (3 kernels)", tu, 24.0, eu),
        ("fused (1 kernel)", tf, 8.0, ef),
    ] {
        println!(
            "{name}: {} ms, {:.1} GB/s moved",
            fmt_ms(t.median_ms),
            bytes * n as f64 / (t.median_ms * 1e-3) / 1e9
        );
        let mut r = row(name, backend_name, &t, bytes);
        r.rel_err = Some(err);
        rows.push(r);
    }
    Ok(rows)
}

/// `ptxlab launch-overhead` arguments.
#[derive(Debug, clap::Args)]
pub struct LaunchArgs {
    /// Tiny kernels per measurement (1..=100000; at most 20000 on the simulator).
    #[arg(long, default_value_t = 1000, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub kernels: usize,
    /// gpu or sim (sim: plain launches only).
    #[arg(long, value_enum, default_value_t = ptxlab_common::Backend::Gpu)]
    pub backend: ptxlab_common::Backend,
    /// Timed repetitions (1..=10000).
    #[arg(long, default_value_t = DEFAULT_REPS, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
    /// Print the measured rows as JSON on stdout (the row objects of
    /// `results.json`), and nothing else there.
    #[arg(long)]
    pub json: bool,
}

/// `ptxlab launch-overhead`: the rows it measured.
pub fn cli_launch(args: &LaunchArgs) -> Result<Vec<Row>> {
    let backend = args.backend;
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
    ptxlab_common::cli::check_reps(args.reps)?;
    check_counts(
        args.kernels,
        if backend == ptxlab_common::Backend::Sim {
            1
        } else {
            args.reps
        },
    )?;
    let dev = match backend {
        ptxlab_common::Backend::Gpu => ptxlab_common::Error::open_gpu(0)?,
        ptxlab_common::Backend::Sim => {
            if args.kernels > SIM_MAX_KERNELS {
                return Err(Error::input(
                    "--kernels",
                    format!(
                        "{}; at most {SIM_MAX_KERNELS} on the simulator (each launch hands its \
                         blocks to the CPU cores and waits for them)",
                        args.kernels
                    ),
                ));
            }
            Device::sim()
        }
        ptxlab_common::Backend::Cpu => {
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
    let backend_name = if dev.is_sim() { "sim" } else { "gpu" };
    let size = format!("{} kernels", args.kernels);
    // The rows of `ptxlab bench`'s fusion workload: the time per kernel.
    let row = |variant: &str, t: &Timing| {
        let k = args.kernels as f64;
        let per = Timing {
            median_ms: t.median_ms / k,
            min_ms: t.min_ms / k,
            max_ms: t.max_ms / k,
            reps: t.reps,
        };
        let us = per.median_ms * 1e3;
        timed_row(
            "fusion",
            variant,
            backend_name,
            &size,
            "f32",
            &per,
            Some((us, "us/kernel")),
        )
    };
    let mut rows = vec![row("plain launches (launch!), per kernel", &tp)];
    match tg {
        Some(t) => {
            println!(
                "CUDA graph replay: {:.2} us per kernel",
                t.median_ms * 1e3 / args.kernels as f64
            );
            rows.push(row("CUDA graph replay, per kernel", &t));
        }
        None => println!(
            "CUDA graph replay: not available on the simulator (graphs are a driver feature)"
        ),
    }
    Ok(rows)
}
