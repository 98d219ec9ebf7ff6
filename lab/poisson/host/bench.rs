//! Bench rows of the Jacobi ladder: CPU baselines and the thread sweep, and
//! every rung on a GPU (three temporal depths) after its check.

use super::check::{CHECK_GRID_GPU, CHECK_SWEEPS, CheckCase, bench_inputs, check_residual, verify};
use super::cpu::{cpu_sweep, cpu_sweep_nd, cpu_sweep_rayon, with_threads};
use super::launch::{Field, residual_sq};
use super::types::{Element, Grid, NAME, Rung, default_h, k_of_h};
use ptxlab_common::bench_ctx::{BenchCtx, skipped_gpu};
use ptxlab_common::error::Result;
use ptxlab_common::report::{Row, Status};
use ptxlab_common::runtime::{Device, Timing};
use std::time::Instant;

/// Sizes of the full benchmark (square) and the odd one.
pub const BENCH_SIZES: [(usize, usize); 5] = [
    (800, 800),
    (2000, 2000),
    (4096, 4096),
    (8192, 8192),
    (1999, 1237),
];
/// Temporal depths timed by the benchmark.
pub const BENCH_DEPTHS: [u32; 3] = [4, 8, 12];

fn bytes_per_cell<T>() -> f64 {
    3.0 * std::mem::size_of::<T>() as f64
}

/// Sweeps per timed call for a grid: enough that launch gaps and event
/// resolution do not dominate.
fn sweeps_per_call(cells: usize) -> usize {
    match cells {
        0..=1_000_000 => 100,
        1_000_001..=5_000_000 => 60,
        5_000_001..=20_000_000 => 40,
        _ => 20,
    }
}

fn cpu_row<T: Element>(variant: &str, grid: Grid, t: &Timing, t1_ms: f64) -> Row {
    let mut r = Row::new(NAME, variant, "cpu", &grid.label(), T::NAME);
    r.throughput = Some(grid.cells() as f64 / (t.median_ms * 1e-3) / 1e9);
    r.unit = "GCells/s".into();
    r.speedup = Some(t1_ms / t.median_ms);
    r.timing = Some(t.clone());
    r
}

/// CPU rows at one size: one thread, ndarray, rayon on all threads, and the
/// thread-count sweep (1, 2, 4, ... up to all cores, each its own pool).
/// Times are per sweep. Returns the rows and the one-thread time.
pub fn cpu_rows<T: Element>(
    grid: Grid,
    reps: usize,
    sweep_threads: bool,
) -> Result<(Vec<Row>, f64)> {
    let (p, b) = bench_inputs::<T>(grid);
    let k = T::from_f64(k_of_h(default_h(grid)));
    let mut out = vec![T::ZERO; grid.cells()];
    let t1 = Timing::host(1, reps, || cpu_sweep(&p, &b, &mut out, grid, k));
    let mut rows = vec![cpu_row::<T>("CPU 1 thread", grid, &t1, t1.median_ms)];
    cpu_sweep_nd(&p, &b, &mut out, grid, k)?;
    let tn = Timing::host(0, reps, || {
        let _ = cpu_sweep_nd(&p, &b, &mut out, grid, k);
    });
    rows.push(cpu_row::<T>(
        "CPU ndarray slicing (1 thread)",
        grid,
        &tn,
        t1.median_ms,
    ));
    let all = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let tr = Timing::host(2, reps, || cpu_sweep_rayon(&p, &b, &mut out, grid, k));
    rows.push(cpu_row::<T>(
        &format!("CPU rayon all threads ({all})"),
        grid,
        &tr,
        t1.median_ms,
    ));
    if sweep_threads {
        let mut counts: Vec<usize> = std::iter::successors(Some(1usize), |n| Some(n * 2))
            .take_while(|&n| n < all)
            .collect();
        counts.push(all);
        for n in counts {
            let t = with_threads(n, || {
                Timing::host(2, reps, || cpu_sweep_rayon(&p, &b, &mut out, grid, k))
            })?;
            let mut r = cpu_row::<T>(&format!("CPU rayon {n} threads"), grid, &t, t1.median_ms);
            // Bytes per second of the sweep, to show where bandwidth saturates.
            r.pct_of_ceiling = None;
            rows.push(r);
        }
    }
    Ok((rows, t1.median_ms))
}

struct GpuBench<'a> {
    dev: &'a Device,
    reps: usize,
    copy_gbs: Option<f64>,
}

impl GpuBench<'_> {
    fn rows_for<T: Element>(
        &self,
        grid: Grid,
        cpu1_ms: Option<f64>,
        checks: &[(Rung, u32, Result<f64, String>)],
    ) -> Result<Vec<Row>> {
        let dev = self.dev;
        let mut rows = Vec::new();
        let (p0, bh) = bench_inputs::<T>(grid);
        let b = dev.upload(&bh)?;
        let mut f = Field::new(dev, &p0)?;
        let k = T::from_f64(k_of_h(default_h(grid)));
        let sweeps = sweeps_per_call(grid.cells());
        let arch = dev.as_gpu().map(|g| g.info().arch());
        for (rung, depth, check) in checks {
            let (rung, depth) = (*rung, *depth);
            let mut row = Row::new(
                NAME,
                &rung.label(depth),
                if dev.is_sim() { "sim" } else { "gpu" },
                &grid.label(),
                T::NAME,
            );
            if let Some(a) = &arch
                && let Some(res) = ptxlab_common::modules::resource(rung.entry::<T>(), a, false)
            {
                row.registers = Some(res.registers);
                row.spills = Some(res.spill_stores + res.spill_loads);
            }
            match check {
                Ok(e) => row.rel_err = Some(*e),
                Err(e) => {
                    row.status = Status::Failed(e.clone());
                    rows.push(row);
                    continue;
                }
            }
            let t0 = Instant::now();
            f.run(
                dev,
                rung,
                grid,
                &b,
                k,
                if rung == Rung::Temporal {
                    depth as usize
                } else {
                    1
                },
                depth,
            )?;
            dev.synchronize()?;
            row.first_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
            let t = dev.time(2, self.reps, |_| {
                f.run(dev, rung, grid, &b, k, sweeps, depth)
            })?;
            let per = |ms: f64| ms / sweeps as f64;
            let t_iter = Timing {
                median_ms: per(t.median_ms),
                min_ms: per(t.min_ms),
                max_ms: per(t.max_ms),
                reps: t.reps,
            };
            let gcells = grid.cells() as f64 / (t_iter.median_ms * 1e-3) / 1e9;
            row.throughput = Some(gcells);
            row.unit = "GCells/s".into();
            row.pct_of_ceiling = self
                .copy_gbs
                .map(|c| 100.0 * gcells * bytes_per_cell::<T>() / c);
            row.speedup = cpu1_ms.map(|c| c / t_iter.median_ms);
            row.timing = Some(t_iter);
            rows.push(row);
        }
        // The residual reduction: reads p and b once (8 or 16 bytes per cell).
        let mut acc = dev.alloc_filled(1, 0.0f64)?;
        let h = default_h(grid);
        let mut row = Row::new(
            NAME,
            "residual (GPU reduction, 1 atomic/block)",
            "gpu",
            &grid.label(),
            T::NAME,
        );
        let t = dev.time(2, self.reps, |_| {
            residual_sq(dev, grid, &f.cur, &b, h, &mut acc).map(|_| ())
        })?;
        let gbs = grid.cells() as f64 * 2.0 * std::mem::size_of::<T>() as f64
            / (t.median_ms * 1e-3)
            / 1e9;
        row.throughput = Some(gbs);
        row.unit = "GB/s (incl. zero + read-back)".into();
        row.pct_of_ceiling = self.copy_gbs.map(|c| 100.0 * gbs / c);
        row.timing = Some(t);
        rows.push(row);
        Ok(rows)
    }

    fn precision<T: Element>(&self, sizes: &[(usize, usize)], cpu: bool) -> Result<Vec<Row>> {
        let (cx, cy) = CHECK_GRID_GPU;
        let case = CheckCase::new::<T>(Grid::new(cx, cy)?, 5, &CHECK_SWEEPS);
        let mut variants: Vec<(Rung, u32)> =
            vec![(Rung::Naive, 1), (Rung::Tiled, 1), (Rung::Register, 1)];
        variants.extend(BENCH_DEPTHS.iter().map(|&d| (Rung::Temporal, d)));
        let checks: Vec<(Rung, u32, Result<f64, String>)> = variants
            .into_iter()
            .map(|(r, d)| {
                (
                    r,
                    d,
                    verify::<T>(self.dev, r, d, &case).map_err(|e| e.to_string()),
                )
            })
            .collect();
        let mut rows = Vec::new();
        if let Err(e) = check_residual::<T>(self.dev, &case) {
            let mut r = Row::new(
                NAME,
                "residual (GPU reduction, 1 atomic/block)",
                "gpu",
                &case.grid.label(),
                T::NAME,
            );
            r.status = Status::Failed(e.to_string());
            rows.push(r);
        }
        for &(nx, ny) in sizes {
            let grid = Grid::new(nx, ny)?;
            let cpu1 = if cpu {
                let (p, b) = bench_inputs::<T>(grid);
                let k = T::from_f64(k_of_h(default_h(grid)));
                let mut out = vec![T::ZERO; grid.cells()];
                let t1 = Timing::host(1, 3, || cpu_sweep(&p, &b, &mut out, grid, k));
                rows.push(cpu_row::<T>("CPU 1 thread", grid, &t1, t1.median_ms));
                Some(t1.median_ms)
            } else {
                None
            };
            rows.extend(self.rows_for::<T>(grid, cpu1, &checks)?);
        }
        Ok(rows)
    }
}

/// The benchmark: CPU rows at 2000^2 f32 (one thread, ndarray, all threads,
/// and the thread sweep); on a GPU every rung (and three temporal depths) at
/// 800^2, 2000^2, 4096^2, 8192^2 and 1999x1237, f32 and f64, after checking
/// each against the CPU f64 reference (quick: 2000^2 f32 only). On the
/// simulator, the rungs at a small odd size.
pub fn bench(ctx: &BenchCtx) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let g2000 = Grid::new(2000, 2000)?;
    let (cpu, cpu1_2000) = cpu_rows::<f32>(g2000, if ctx.quick { 3 } else { 5 }, true)?;
    rows.extend(cpu);
    match ctx.dev {
        Some(dev) if !dev.is_sim() => {
            let gb = GpuBench {
                dev,
                reps: ctx.reps(),
                copy_gbs: ctx.ceilings.copy_gbs,
            };
            if ctx.quick {
                let g = gb.precision::<f32>(&[(2000, 2000)], false)?;
                for mut r in g {
                    if r.size == g2000.label()
                        && r.backend == "gpu"
                        && r.timing.is_some()
                        && !r.variant.starts_with("residual")
                    {
                        r.speedup = r.timing.as_ref().map(|t| cpu1_2000 / t.median_ms);
                    }
                    rows.push(r);
                }
            } else {
                rows.extend(gb.precision::<f32>(&BENCH_SIZES, true)?);
                rows.extend(gb.precision::<f64>(&BENCH_SIZES[..4], true)?);
            }
        }
        Some(dev) => {
            rows.push(skipped_gpu(NAME, ctx));
            let grid = Grid::new(67, 45)?;
            let case = CheckCase::new::<f32>(grid, 3, &[1, 2]);
            for rung in Rung::ALL {
                let d = if rung == Rung::Temporal { 2 } else { 1 };
                let mut row = Row::new(NAME, &rung.label(d), "sim", &grid.label(), "f32");
                match verify::<f32>(dev, rung, d, &case) {
                    Ok(e) => row.rel_err = Some(e),
                    Err(e) => row.status = Status::Failed(e.to_string()),
                }
                rows.push(row);
            }
        }
        None => rows.push(skipped_gpu(NAME, ctx)),
    }
    Ok(rows)
}
