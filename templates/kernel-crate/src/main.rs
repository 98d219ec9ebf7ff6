//! Launches the kernels of ./kernels on a GPU or on the CPU simulator,
//! checks each against a CPU reference in f64, prints a `PASS` (or `FAIL`)
//! line per kernel and, on a GPU, times them with device events.
//!
//! ```text
//! cargo run --release -- --backend sim     # any machine: the CPU simulator
//! cargo run --release -- --backend gpu     # an NVIDIA GPU and its driver
//! cargo run --release -- --backend gpu --n 100000000
//! ```

use ptxlab_runtime::{Buffer, Device, LaunchConfig, Result, launch};
use std::process::ExitCode;

// `pub static KERNELS`: the PTX of ./kernels, as build.rs embedded it.
ptxlab_runtime::include_kernels!();

/// Command-line options.
struct Args {
    sim: bool,
    n: Option<usize>,
}

fn parse_args() -> std::result::Result<Args, String> {
    let mut args = Args { sim: false, n: None };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--backend" => match it.next().as_deref() {
                Some("gpu") => args.sim = false,
                Some("sim") => args.sim = true,
                other => return Err(format!("--backend {other:?}: allowed gpu, sim")),
            },
            "--n" => {
                let v = it.next().unwrap_or_default();
                match v.parse::<usize>() {
                    Ok(n) if n > 0 => args.n = Some(n),
                    _ => return Err(format!("--n `{v}`: a whole number of elements >= 1")),
                }
            }
            "-h" | "--help" => {
                println!("usage: {{name}} [--backend gpu|sim] [--n ELEMENTS]");
                std::process::exit(0);
            }
            other => return Err(format!("unknown option `{other}`; try --help")),
        }
    }
    Ok(args)
}

/// Reproducible inputs in [-1, 1) (SplitMix64).
fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            ((z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) as f32
        })
        .collect()
}

/// ||got - want|| / ||want||, in f64; NaN (an unwritten output) gives NaN.
fn rel_err(got: &[f32], want: &[f64]) -> f64 {
    let (mut d, mut w) = (0.0f64, 0.0f64);
    for (g, r) in got.iter().zip(want) {
        d += (*g as f64 - r).powi(2);
        w += r * r;
    }
    (d / w).sqrt()
}

/// Launches `saxpy` over `out.len()` elements.
fn saxpy(dev: &Device, a: f32, x: &Buffer<f32>, y: &Buffer<f32>, out: &mut Buffer<f32>) -> Result<()> {
    let cfg = LaunchConfig::for_threads(out.len(), kernels::BLOCK)?;
    launch!(dev, &KERNELS, cfg, kernels::saxpy(a, x, y, out))
}

/// Launches `stencil` over `y.len()` elements, with its shared-memory tile.
fn stencil(dev: &Device, x: &Buffer<f32>, y: &mut Buffer<f32>) -> Result<()> {
    let cfg = LaunchConfig::for_threads(y.len(), kernels::BLOCK)?
        .with_shared(kernels::stencil_shared_bytes(kernels::BLOCK));
    launch!(dev, &KERNELS, cfg, kernels::stencil(x, y))
}

/// One kernel's check: runs it on random inputs with the output poisoned
/// (NaN), compares with the f64 reference, prints PASS/FAIL, and on a GPU
/// times it. Returns whether it passed.
fn report(dev: &Device, name: &str, n: usize, err: f64, tol: f64, bytes: f64, time: impl FnMut(usize) -> Result<()>) -> Result<bool> {
    let pass = err <= tol; // NaN fails
    println!(
        "{} {name}: n={n}, rel err {err:.2e} (tolerance {tol:.0e}) on {}",
        if pass { "PASS" } else { "FAIL" },
        dev.name()
    );
    if pass && !dev.is_sim() {
        let t = dev.time(5, 50, time)?;
        println!(
            "     {name}: median {:.4} ms (min {:.4}, max {:.4}, {} runs), {:.0} GB/s",
            t.median_ms,
            t.min_ms,
            t.max_ms,
            t.reps,
            bytes / (t.median_ms * 1e-3) / 1e9
        );
    }
    Ok(pass)
}

fn run(args: &Args) -> Result<bool> {
    let dev = if args.sim { Device::sim() } else { Device::gpu(0).map_err(no_gpu_hint)? };
    // Not a multiple of the block: the last block is partial.
    let n = args.n.unwrap_or(if args.sim { 100_003 } else { 50_000_017 });
    let (hx, hy) = (random(n, 1), random(n, 2));
    let x = dev.upload(&hx)?;
    let y = dev.upload(&hy)?;
    let a = 2.5f32;

    let mut out = dev.alloc_filled(n, f32::NAN)?;
    saxpy(&dev, a, &x, &y, &mut out)?;
    let want: Vec<f64> = hx.iter().zip(&hy).map(|(x, y)| a as f64 * *x as f64 + *y as f64).collect();
    let err = rel_err(&dev.download(&out)?, &want);
    let ok1 = report(&dev, "saxpy", n, err, 1e-6, 12.0 * n as f64, |_| saxpy(&dev, a, &x, &y, &mut out))?;

    let mut sy = dev.alloc_filled(n, f32::NAN)?;
    stencil(&dev, &x, &mut sy)?;
    let r = kernels::RADIUS as isize;
    let want: Vec<f64> = (0..n as isize)
        .map(|i| {
            (-r..=r)
                .map(|k| {
                    let j = i + k;
                    let v = if j >= 0 && (j as usize) < n { hx[j as usize] as f64 } else { 0.0 };
                    kernels::WEIGHTS[(k + r) as usize] as f64 * v
                })
                .sum()
        })
        .collect();
    let err = rel_err(&dev.download(&sy)?, &want);
    let ok2 = report(&dev, "stencil", n, err, 1e-6, 8.0 * n as f64, |_| stencil(&dev, &x, &mut sy))?;

    // A generic kernel: the f64 instance, `y = 2 x + y` in place.
    let (hx64, hy64): (Vec<f64>, Vec<f64>) = (widen(&hx), widen(&hy));
    let x64 = dev.upload(&hx64)?;
    let mut y64 = dev.upload(&hy64)?;
    let cfg = LaunchConfig::for_threads(n, kernels::BLOCK)?;
    launch!(&dev, &KERNELS, cfg, kernels::axpy::<f64>(2.0, &x64, &mut y64))?;
    let want: Vec<f64> = hx64.iter().zip(&hy64).map(|(x, y)| 2.0 * x + y).collect();
    let err = rel_err_f64(&dev.download(&y64)?, &want);
    let ok3 = report(&dev, "axpy::<f64>", n, err, 1e-15, 24.0 * n as f64, |_| {
        launch!(&dev, &KERNELS, cfg, kernels::axpy::<f64>(2.0, &x64, &mut y64))
    })?;

    // A const-generic kernel: rows of 37 columns (not a multiple of W = 4).
    let (rows, cols) = (n / 37, 37usize);
    let mut sums = dev.alloc_filled(rows, f32::NAN)?;
    let cfg = LaunchConfig::for_threads(rows, 128)?;
    launch!(&dev, &KERNELS, cfg, kernels::row_sums::<f32, 4>(&x, &mut sums, cols as u32))?;
    let want: Vec<f64> = (0..rows).map(|r| hx[r * cols..(r + 1) * cols].iter().map(|v| *v as f64).sum()).collect();
    let err = rel_err(&dev.download(&sums)?, &want);
    let ok4 = report(&dev, "row_sums::<f32, 4>", rows, err, 1e-6, 4.0 * (rows * cols) as f64, |_| {
        launch!(&dev, &KERNELS, cfg, kernels::row_sums::<f32, 4>(&x, &mut sums, cols as u32))
    })?;
    Ok(ok1 && ok2 && ok3 && ok4)
}

/// f32 inputs as f64.
fn widen(v: &[f32]) -> Vec<f64> {
    v.iter().map(|x| *x as f64).collect()
}

/// ||got - want|| / ||want|| of f64 results; NaN gives NaN.
fn rel_err_f64(got: &[f64], want: &[f64]) -> f64 {
    let (mut d, mut w) = (0.0f64, 0.0f64);
    for (g, r) in got.iter().zip(want) {
        d += (g - r).powi(2);
        w += r * r;
    }
    (d / w).sqrt()
}

/// The runtime's error, plus this program's way to run without a GPU.
fn no_gpu_hint(e: ptxlab_runtime::Error) -> ptxlab_runtime::Error {
    ptxlab_runtime::Error::input("--backend gpu", format!("{e}\n(run without a GPU: --backend sim)"))
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The cluster example (`kernels::cluster`): run with `cargo test`, on the
/// simulator always and on a GPU when there is one with clusters.
#[cfg(test)]
mod tests {
    use super::*;
    use kernels::cluster::{CLUSTER, CLUSTER_BLOCK, neighbour_sum_shared_bytes};

    /// `neighbour_sum` of `x` on `dev`: a whole number of 2-block clusters.
    fn neighbour_sum(dev: &Device, x: &[f32]) -> Result<Vec<f32>> {
        let blocks = x.len().div_ceil(CLUSTER_BLOCK as usize).div_ceil(CLUSTER as usize) * CLUSTER as usize;
        let cfg = LaunchConfig::for_threads(blocks * CLUSTER_BLOCK as usize, CLUSTER_BLOCK)?
            .with_shared(neighbour_sum_shared_bytes())
            .with_cluster(CLUSTER, 1, 1);
        let xs = dev.upload(x)?;
        let mut out = dev.alloc_filled(x.len(), f32::NAN)?;
        launch!(dev, &KERNELS, cfg, kernels::cluster::neighbour_sum(&xs, &mut out))?;
        dev.download(&out)
    }

    /// The reference: `x[i]` plus the same thread's element in the next
    /// block of the cluster (0 past the end of `x`), in f32 as the kernel.
    fn reference(x: &[f32]) -> Vec<f32> {
        let (b, c) = (CLUSTER_BLOCK as usize, CLUSTER as usize);
        (0..x.len())
            .map(|i| {
                let (block, t) = (i / b, i % b);
                let next = block / c * c + (block % c + 1) % c;
                x[i] + x.get(next * b + t).copied().unwrap_or(0.0)
            })
            .collect()
    }

    /// Runs the kernel on `dev` and compares every element exactly (one f32
    /// addition: the same bits on the GPU and the CPU).
    fn check(dev: &Device) {
        // Not a multiple of the block: the last cluster is partly empty.
        let x = random(3 * CLUSTER_BLOCK as usize + 37, 11);
        let got = neighbour_sum(dev, &x).unwrap_or_else(|e| panic!("neighbour_sum on {}: {e}", dev.name()));
        let want = reference(&x);
        if let Some(i) = (0..want.len()).find(|&i| got[i].to_bits() != want[i].to_bits()) {
            panic!("neighbour_sum on {}: element {i} is {}, want {}", dev.name(), got[i], want[i]);
        }
    }

    #[test]
    fn neighbour_sum_on_the_simulator() {
        check(&Device::sim());
    }

    #[test]
    fn neighbour_sum_on_the_gpu() {
        let dev = match Device::gpu(0) {
            Ok(d) => d,
            Err(e) => {
                let why = e.to_string();
                eprintln!("skipped: no GPU ({})", why.lines().next().unwrap_or_default());
                return;
            }
        };
        if dev.limits().max_cluster_blocks == 0 {
            eprintln!("skipped: {} has no thread-block clusters (they need sm_90 or newer)", dev.name());
            return;
        }
        check(&dev);
    }
}
