//! `ptxlab`: run, check and time the workloads from the command line.
//!
//! Every subcommand takes `--backend gpu|sim|cpu`: `gpu` runs the Rust
//! kernels on an NVIDIA GPU, `sim` runs the same kernels in the CPU simulator,
//! `cpu` runs the CPU baselines only.

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use ptxlab::report::{self, Row};
use ptxlab::runtime::{Device, ModuleKey, Timing};
use ptxlab::workloads::vector::{self, Element, Rung};
use ptxlab::{Backend, npy};
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "ptxlab", version, about = "Run, check and time Rust GPU kernels")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Show the GPU (or why there is none), the embedded kernels and their resources.
    Info,
    /// c = a + b: checked against the CPU, then timed.
    VectorAdd(VectorArgs),
}

#[derive(clap::Args)]
struct VectorArgs {
    /// Number of elements (ignored with --a/--b).
    #[arg(long, default_value_t = 1 << 24)]
    n: usize,
    /// f32 or f64.
    #[arg(long, default_value = "f32")]
    precision: String,
    /// scalar (1 element/thread) or wide (16-byte loads).
    #[arg(long, default_value = "wide")]
    variant: String,
    /// gpu, sim or cpu.
    #[arg(long, default_value = "gpu")]
    backend: String,
    /// Timed repetitions.
    #[arg(long, default_value_t = 20)]
    reps: usize,
    /// Input a (.npy, 1-D, float32 or float64 matching --precision).
    #[arg(long)]
    a: Option<PathBuf>,
    /// Input b (.npy).
    #[arg(long)]
    b: Option<PathBuf>,
    /// Write c here (.npy).
    #[arg(long)]
    out: Option<PathBuf>,
}

fn device(backend: Backend) -> Result<Option<Device>> {
    Ok(match backend {
        Backend::Gpu => Some(Device::gpu(0)?),
        Backend::Sim => Some(Device::sim()),
        Backend::Cpu => None,
    })
}

fn info() -> Result<()> {
    match Device::gpu(0) {
        Ok(d) => {
            let g = d.as_gpu().context("gpu")?;
            let i = g.info();
            println!(
                "GPU 0: {} (sm_{}{}), {} SMs, {:.1} GiB, L2 {} MiB, driver CUDA {}",
                i.name,
                i.compute_capability.0,
                i.compute_capability.1,
                i.sm_count,
                i.total_mem as f64 / (1u64 << 30) as f64,
                i.l2_bytes >> 20,
                i.driver_cuda
            );
        }
        Err(e) => println!("GPU: none ({})", e.to_string().lines().next().unwrap_or("")),
    }
    println!("embedded PTX: {} ({} kernels)", ptxlab::modules::PTX_ARCH, ptxlab_device::KERNELS.len());
    let res = ptxlab::modules::resources(false);
    if res.is_empty() {
        println!("resource report: none (ptxas was not available at build time)");
    } else {
        print!("{}", ptxlab_builder::report_table(&res));
    }
    Ok(())
}

fn vector_add<T: Element>(args: &VectorArgs, backend: Backend) -> Result<()> {
    let (ha, hb) = match (&args.a, &args.b) {
        (Some(a), Some(b)) => {
            (npy::read_1d::<T>(a, T::NAME)?, npy::read_1d::<T>(b, T::NAME)?)
        }
        (None, None) => vector::inputs::<T>(args.n, 42),
        _ => bail!("give both --a and --b, or neither (random inputs of length --n)"),
    };
    if ha.len() != hb.len() {
        bail!("a has {} elements and b has {}; they must be equal", ha.len(), hb.len());
    }
    if ha.is_empty() {
        bail!("the vectors are empty; give at least one element");
    }
    let n = ha.len();
    let mut want = vec![T::ZERO; n];
    let t1 = Timing::host(0, 3, || vector::cpu_serial(&ha, &hb, &mut want));
    println!("CPU 1 thread: {} ms", report::fmt_ms(t1.median_ms));
    let result = match device(backend)? {
        None => {
            let mut c = vec![T::ZERO; n];
            let tr = Timing::host(1, args.reps, || vector::cpu_rayon(&ha, &hb, &mut c));
            println!("CPU rayon: {} ms", report::fmt_ms(tr.median_ms));
            c
        }
        Some(dev) => {
            let rung: Rung = args.variant.parse()?;
            let a = dev.upload(&ha)?;
            let b = dev.upload(&hb)?;
            let mut c = dev.alloc_filled(n, T::from_f64(f64::NAN))?;
            vector::add(&dev, rung, ModuleKey::default(), &a, &b, &mut c)?;
            let got = dev.download(&c)?;
            let bad = got.iter().zip(&want).filter(|(g, w)| g.to_f64().to_bits() != w.to_f64().to_bits()).count();
            if bad > 0 {
                bail!("FAIL vector-add {} n={n}: {bad} elements differ from the CPU result", T::NAME);
            }
            println!("PASS vector-add {} n={n} on {}: bitwise equal to the CPU", T::NAME, dev.name());
            let reps = if dev.is_sim() { args.reps.min(3) } else { args.reps };
            let t = dev.time(2, reps, |_| vector::add(&dev, rung, ModuleKey::default(), &a, &b, &mut c))?;
            let gbs = vector::bytes::<T>(n) / (t.median_ms * 1e-3) / 1e9;
            println!(
                "{} ({}): median {} ms (min {}, max {}, {} reps), {gbs:.1} GB/s, {:.1}x CPU 1 thread",
                rung.label(),
                dev.name(),
                report::fmt_ms(t.median_ms),
                report::fmt_ms(t.min_ms),
                report::fmt_ms(t.max_ms),
                t.reps,
                t1.median_ms / t.median_ms
            );
            got
        }
    };
    if let Some(out) = &args.out {
        npy::write_1d(out, &result)?;
        println!("wrote {}", out.display());
    }
    Ok(())
}

fn main() {
    let cli = Cli::parse();
    let r = match &cli.cmd {
        Cmd::Info => info(),
        Cmd::VectorAdd(a) => a.backend.parse::<Backend>().map_err(Into::into).and_then(|b| match a.precision.as_str() {
            "f32" => vector_add::<f32>(a, b),
            "f64" => vector_add::<f64>(a, b),
            p => bail!("precision `{p}`: allowed f32, f64"),
        }),
    };
    if let Err(e) = r {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
    let _ = Row::new("", "", "", "", "");
}
