//! `ptxlab sim-bench`: how fast the CPU simulator runs kernels, in simulated
//! GPU threads per second, for one kernel of each class: no barrier (vector
//! add, naive Jacobi), block barriers (tiled Jacobi, shared-memory tree
//! reduction) and warp shuffles (warp-aggregated reduction), with race
//! detection on and off. Each kernel is checked against a CPU reference
//! once, then launched repeatedly; the figure is the median launch. The
//! sizes are fixed so that figures from different versions of the simulator
//! compare directly.

use anyhow::{Result, bail};
use ptxlab::launch;
use ptxlab::report::Row;
use ptxlab::runtime::{Device, LaunchConfig, SimOptions, Timing};
use ptxlab::workloads::poisson::{self, Grid};
use ptxlab::workloads::primitives::ReduceRung;
use std::time::Instant;

/// The arguments (defined with the rest of the command line in the library).
pub use ptxlab::command_line::SimBenchArgs as Args;

/// Launches a case's kernel once on a device.
type RunFn = Box<dyn FnMut(&Device) -> Result<()>>;
/// Compares a case's last output with the CPU reference.
type CheckFn = Box<dyn Fn(&Device) -> Result<()>>;

/// Elements of the vector add and the reductions (2^16).
const N: usize = 1 << 16;
/// The Poisson grid of the measurement.
const GRID: (usize, usize) = (203, 157);

struct Case {
    class: &'static str,
    kernel: &'static str,
    cfg: LaunchConfig,
    run: RunFn,
    check: CheckFn,
}

fn data(n: usize, seed: u64) -> Vec<f32> {
    ptxlab::rng::uniform_vec(seed, n, -1.0, 1.0)
        .into_iter()
        .map(|v| v as f32)
        .collect()
}

fn close(what: &str, got: f64, want: f64, tol: f64) -> Result<()> {
    let err = (got - want).abs();
    if err.is_nan() || err > tol * want.abs().max(1.0) {
        bail!("{what}: got {got}, expected {want} (tolerance {tol:e})");
    }
    Ok(())
}

fn vector_add(dev: &Device) -> Result<Case> {
    let (ha, hb) = (data(N, 1), data(N, 2));
    let (a, b) = (dev.upload(&ha)?, dev.upload(&hb)?);
    let c = std::rc::Rc::new(std::cell::RefCell::new(dev.alloc_filled(N, f32::NAN)?));
    let cfg = LaunchConfig::for_threads(N, kernels_gpu::vector::BLOCK)?;
    let c2 = c.clone();
    Ok(Case {
        class: "no barrier",
        kernel: <f32 as kernels_gpu::vector::vector_add::Built>::ENTRY,
        cfg,
        run: Box::new(move |dev| {
            let mut c = c2.borrow_mut();
            launch!(dev, cfg, vector::vector_add::<f32>(&a, &b, &mut *c))?;
            Ok(())
        }),
        check: Box::new(move |dev| {
            let got = dev.download(&c.borrow())?;
            for i in 0..N {
                if got[i] != ha[i] + hb[i] {
                    bail!(
                        "vector_add: c[{i}] = {}, expected {}",
                        got[i],
                        ha[i] + hb[i]
                    );
                }
            }
            Ok(())
        }),
    })
}

fn jacobi(dev: &Device, rung: poisson::Rung) -> Result<Case> {
    let grid = Grid::new(GRID.0, GRID.1)?;
    let (hp, hb) = (data(grid.cells(), 3), data(grid.cells(), 4));
    let (p, b) = (dev.upload(&hp)?, dev.upload(&hb)?);
    let out = std::rc::Rc::new(std::cell::RefCell::new(
        dev.alloc_filled(grid.cells(), f32::NAN)?,
    ));
    let k = 0.01f32;
    let cfg = poisson::sweep_config::<f32>(rung, grid, 1)?;
    let o2 = out.clone();
    let class = match rung {
        poisson::Rung::Naive => "no barrier",
        _ => "barriers",
    };
    let kernel = rung.entry::<f32>();
    Ok(Case {
        class,
        kernel,
        cfg,
        run: Box::new(move |dev| {
            let mut o = o2.borrow_mut();
            poisson::sweep(dev, rung, grid, &p, &b, &mut o, k, 1)?;
            Ok(())
        }),
        check: Box::new(move |dev| {
            let got = dev.download(&out.borrow())?;
            let mut want = vec![0f32; grid.cells()];
            poisson::cpu_sweep(&hp, &hb, &mut want, grid, k);
            if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
                bail!("{kernel}: cell {i} = {}, expected {}", got[i], want[i]);
            }
            Ok(())
        }),
    })
}

/// Per-block partial sums (tree, `per_block` elements each) or the total
/// (warp-aggregated atomics).
fn reduction(dev: &Device, rung: ReduceRung) -> Result<Case> {
    let hx = data(N, 5);
    let x = dev.upload(&hx)?;
    let block = kernels_gpu::reduce::BLOCK;
    let kernel = rung.entry::<f32>();
    let (class, cfg, outs) = match rung {
        ReduceRung::Tree => (
            "barriers",
            LaunchConfig::for_threads(N / 2, block)?
                .with_shared(kernels_gpu::reduce::tree_shared_bytes::<f32>(block)),
            N / (2 * block as usize),
        ),
        _ => ("warp shuffles", LaunchConfig::for_threads(N, block)?, 1),
    };
    let out = std::rc::Rc::new(std::cell::RefCell::new(dev.alloc_filled(outs, 0f32)?));
    let o2 = out.clone();
    let warp = rung == ReduceRung::AtomicWarp;
    let cfg2 = cfg;
    Ok(Case {
        class,
        kernel,
        cfg,
        run: Box::new(move |dev| {
            let mut o = o2.borrow_mut();
            if warp {
                // The atomic rung accumulates: start from zero each launch.
                *o = dev.alloc_filled(1, 0f32)?;
                launch!(dev, cfg2, reduce::reduce_atomic_warp::<f32>(&x, &mut *o, 0))?;
            } else {
                launch!(dev, cfg2, reduce::reduce_tree::<f32>(&x, &mut *o, 0))?;
            }
            Ok(())
        }),
        check: Box::new(move |dev| {
            let got = dev.download(&out.borrow())?;
            let per = N / got.len();
            for (j, g) in got.iter().enumerate() {
                let want: f64 = hx[j * per..(j + 1) * per].iter().map(|&v| v as f64).sum();
                close(&format!("{kernel} partial {j}"), *g as f64, want, 1e-4)?;
            }
            Ok(())
        }),
    })
}

/// CPU time of the whole process (every thread), in seconds.
fn process_cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes one `timespec` through the pointer,
    // which points to a live, writable `timespec` on this stack.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    if r != 0 {
        return f64::NAN;
    }
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// `ptxlab sim-bench`: the rows it measured (one per kernel and
/// race-check setting).
pub fn run(args: &Args) -> Result<Vec<Row>> {
    if !(args.min_seconds.is_finite() && args.min_seconds > 0.0 && args.min_seconds <= 600.0) {
        bail!(
            "--min-seconds {}: give a number of seconds in (0, 600]",
            args.min_seconds
        );
    }
    let modes = args.race.settings();
    let mut rows = Vec::new();
    let dev = Device::sim();
    let cases = vec![
        vector_add(&dev)?,
        jacobi(&dev, poisson::Rung::Naive)?,
        jacobi(&dev, poisson::Rung::Tiled)?,
        reduction(&dev, ReduceRung::Tree)?,
        reduction(&dev, ReduceRung::AtomicWarp)?,
    ];
    println!(
        "simulated GPU threads per second, {} worker threads: per second of wall time (median \
         launch; min-max) and per second of CPU time (all launches, all threads; robust to \
         other load on the machine)\n",
        rayon::current_num_threads()
    );
    println!(
        "| class | kernel | grid x block | threads | race check | launches | ms per launch | \
         threads/s | threads/CPU-s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for mut c in cases {
        if args
            .kernel
            .as_deref()
            .is_some_and(|o| !c.kernel.contains(o))
        {
            continue;
        }
        for &race in modes {
            let dev = Device::sim_with(SimOptions {
                race_check: race,
                ..SimOptions::default()
            });
            (c.run)(&dev)?;
            (c.check)(&dev)?;
            let mut times = Vec::new();
            let cpu0 = process_cpu_seconds();
            let start = Instant::now();
            while times.len() < 3 || start.elapsed().as_secs_f64() < args.min_seconds {
                let t = Instant::now();
                (c.run)(&dev)?;
                times.push(t.elapsed().as_secs_f64());
                if times.len() >= 10_000 {
                    break;
                }
            }
            let cpu = process_cpu_seconds() - cpu0;
            times.sort_by(f64::total_cmp);
            let median = times[times.len() / 2];
            let threads = c.cfg.grid.volume() * c.cfg.block.volume();
            println!(
                "| {} | {} | {} x {} | {threads} | {} | {} | {:.3} ({:.3}-{:.3}) | {:.3e} | {:.3e} |",
                c.class,
                c.kernel,
                c.cfg.grid,
                c.cfg.block,
                if race { "on" } else { "off" },
                times.len(),
                median * 1e3,
                times[0] * 1e3,
                times[times.len() - 1] * 1e3,
                threads as f64 / median,
                (threads * times.len() as u64) as f64 / cpu
            );
            let ms: Vec<f64> = times.iter().map(|t| t * 1e3).collect();
            let mut r = Row::plain(
                "sim-bench",
                &format!(
                    "{} ({}), race check {}",
                    c.kernel,
                    c.class,
                    if race { "on" } else { "off" }
                ),
                "sim",
                &format!("{} x {}", c.cfg.grid, c.cfg.block),
                "f32",
            );
            r.timing = Some(Timing::from_samples(ms));
            r.throughput = Some(threads as f64 / median / 1e6);
            r.unit = "Mthreads/s".into();
            r.note = format!(
                "{:.3e} threads per CPU-second",
                (threads * times.len() as u64) as f64 / cpu
            );
            rows.push(r);
        }
    }
    Ok(rows)
}
