//! Bench rows of the multigrid rung: time to a relative residual (1e-6,
//! 1e-8, 1e-10) on 1025^2, 4096^2 and 8192^2 for multigrid (both smoothers,
//! V, W, FMG, f64 and mixed f32) and PCG, each after the checks (the
//! manufactured solution's second order, the GPU against the CPU solver);
//! the CPU solver (rayon); and the Jacobi temporal rung, extrapolated from
//! its measured sweep time and spectral radius (validated by a measured
//! solve on a small grid). Every row carries cycles, ms per cycle, the
//! convergence factor and the bytes floor of one cycle in its note, and the
//! solves their residual history (the convergence plot). Beside them, the
//! spectral solver's direct solve of the same problem (f64 and f32), with
//! the bytes it moves per solve and the fraction of the memory floor.

use super::super::launch::Field;
use super::super::problem::{Problem, SolveOptions};
use super::super::solve::solve_device as jacobi_solve;
use super::super::spectral::{self, Boundary, SpectralDevice, SpectralElement};
use super::super::types::{Element, Grid, Rung, default_h, k_of_h};
use super::check::{bench_problem, compare_with_cpu, jacobi_radius, jacobi_sweeps, second_order};
use super::device::MgDevice;
use super::launch::MgElement;
use super::levels::{Cycle, Hierarchy, Method, MgOptions, Smoother, cycle_bytes};
use ptxlab_common::bench_ctx::{BenchCtx, skipped_gpu};
use ptxlab_common::error::Result;
use ptxlab_common::report::{Row, Status};
use ptxlab_common::runtime::{Device, Timing};
use std::time::Instant;

/// Workload name in reports.
pub const NAME: &str = "poisson-mg";
/// Square sizes of the full benchmark.
pub const BENCH_SIZES: [usize; 3] = [1025, 4096, 8192];

/// One configuration of the solver and the tolerances it is timed to.
struct Config {
    label: &'static str,
    f32_cycles: bool,
    opts: MgOptions,
    tols: &'static [f64],
    /// Keep the residual history of the last tolerance (the plot).
    plot: bool,
}

fn configs(quick: bool) -> Vec<Config> {
    let v = MgOptions::default();
    let cfg = |label, f32_cycles, opts, tols, plot| Config {
        label,
        f32_cycles,
        opts,
        tols,
        plot,
    };
    // The ladder: rung 3 is the cycle measured on 2026-11-24 (symmetric
    // colour order, Gauss-Seidel, an outer step); rung 4 tunes the cycle
    // (post-smoothing in the pre-smoothing's order, omega 1.1); rung 5
    // keeps the field on the finest level and takes the residual from the
    // last sweep (no outer step).
    let (rung3, rung4) = earlier_rungs(v);
    let pcg = MgOptions {
        method: Method::Pcg,
        ..rung4
    };
    let mut c = vec![
        cfg(
            "multigrid V(2,2), rung 5 (field on the fine level, residual in the last sweep)",
            false,
            v,
            &[1e-6, 1e-8, 1e-10],
            true,
        ),
        cfg(
            "multigrid FMG + V(2,2), rung 5",
            false,
            MgOptions {
                cycle: Cycle::Fmg,
                ..v
            },
            &[1e-8],
            true,
        ),
        cfg(
            "multigrid V(2,2), rung 4, f32 cycles",
            true,
            rung4,
            &[1e-8, 1e-10],
            true,
        ),
        cfg(
            "PCG, V(2,2) omega 1.1 preconditioner",
            false,
            pcg,
            &[1e-8, 1e-10],
            true,
        ),
    ];
    if !quick {
        c.extend([
            cfg(
                "multigrid V(2,2), rung 4 (same colour order, omega 1.1, outer step)",
                false,
                rung4,
                &[1e-8],
                false,
            ),
            cfg(
                "multigrid V(2,2), rung 3 (symmetric order, Gauss-Seidel; 2026-11-24's cycle)",
                false,
                rung3,
                &[1e-8],
                true,
            ),
            cfg(
                "PCG, V(2,2) omega 1.1 preconditioner, f32 cycles",
                true,
                pcg,
                &[1e-8],
                false,
            ),
            cfg(
                "multigrid FMG + V(2,2), rung 4, f32 cycles",
                true,
                MgOptions {
                    cycle: Cycle::Fmg,
                    ..rung4
                },
                &[1e-8],
                false,
            ),
            cfg(
                "multigrid V(2,2), rung 1 (red-black smoother, one launch per colour), omega 1.1",
                false,
                MgOptions {
                    smoother: Smoother::RedBlack,
                    coarse_block: false,
                    ..rung4
                },
                &[1e-8],
                false,
            ),
            cfg(
                "multigrid V(2,2), rung 5, no CUDA graph",
                false,
                MgOptions { graph: false, ..v },
                &[1e-8],
                false,
            ),
        ]);
    }
    c
}

fn prec(f32_cycles: bool) -> &'static str {
    if f32_cycles {
        "f32 cycles, f64 field"
    } else {
        "f64"
    }
}

/// Rows of one configuration on one grid: solve `reps` times to each
/// tolerance (wall time from the first residual to the converged check).
#[allow(clippy::too_many_arguments)]
fn solver_rows<T: MgElement>(
    dev: &Device,
    grid: Grid,
    cfg: &Config,
    reps: usize,
    copy_gbs: Option<f64>,
    cpu_ms: Option<f64>,
    failed: Option<&str>,
) -> Result<Vec<Row>> {
    let h = default_h(grid);
    let hier = Hierarchy::new(grid, h)?;
    let (b, p0) = bench_problem(grid);
    let b_sq = super::super::cpu::interior_norm_sq(&b, grid);
    let t = Instant::now();
    let mut s = MgDevice::<T>::new(dev, &hier, &cfg.opts, &b, &p0, b_sq)?;
    s.warm_up(&p0)?;
    let setup = t.elapsed().as_secs_f64() * 1e3;
    let floor_bytes = cycle_bytes(&hier, &cfg.opts, std::mem::size_of::<T>());
    let mut rows = Vec::new();
    let mut last_ms_cycle = None;
    for (i, &tol) in cfg.tols.iter().enumerate() {
        let mut row = Row::new(
            NAME,
            &format!("{} to {tol:.0e}", cfg.label),
            "gpu",
            &grid.label(),
            prec(cfg.f32_cycles),
        );
        row.first_ms = Some(setup);
        if let Some(why) = failed {
            row.status = Status::Failed(why.to_string());
            rows.push(row);
            continue;
        }
        s.set_tolerance(tol)?;
        let mut ms = Vec::new();
        let mut rep = None;
        for _ in 0..reps.max(1) {
            let r = s.solve(&p0)?;
            ms.push(r.ms);
            rep = Some(r);
        }
        let Some(r) = rep else { continue };
        let true_rel = (s.true_residual_sq()? / b_sq).sqrt();
        row.timing = Some(Timing::from_samples(ms));
        row.rel_err = Some(true_rel);
        if !r.converged {
            row.status = Status::Failed(format!(
                "not converged: {:.2e} after {} cycles",
                r.rel_residual, r.cycles
            ));
        }
        if i + 1 == cfg.tols.len() {
            last_ms_cycle = s.cycle_timing(10)?.map(|t| t.median_ms);
        }
        let per = r.ms_per_cycle().unwrap_or(f64::NAN);
        let gpu_per = last_ms_cycle;
        let basis = gpu_per.unwrap_or(per);
        let gbs = floor_bytes / (basis * 1e-3) / 1e9;
        row.throughput = Some(gbs);
        row.unit = "GB/s (cycle bytes floor / ms per cycle)".into();
        row.pct_of_ceiling = copy_gbs.map(|c| 100.0 * gbs / c);
        let vs_cpu = cpu_ms
            .filter(|_| tol == 1e-8)
            .and_then(|c| {
                row.timing
                    .as_ref()
                    .map(|t| format!("; {:.0}x the CPU solver", c / t.median_ms))
            })
            .unwrap_or_default();
        row.note = format!(
            "{} cycles, {per:.3} ms/cycle wall{}, residual x{:.3}/cycle, floor {:.3} ms/cycle ({:.2} GB at the copy rate); {} levels{vs_cpu}",
            r.cycles,
            gpu_per
                .map(|g| format!(" ({g:.3} GPU, graph replay)"))
                .unwrap_or_default(),
            r.factor().unwrap_or(f64::NAN),
            copy_gbs.map_or(f64::NAN, |c| floor_bytes / (c * 1e9) * 1e3),
            floor_bytes / 1e9,
            hier.depth()
        );
        if cfg.plot && i + 1 == cfg.tols.len() {
            row.history = r.history.clone();
        }
        rows.push(row);
    }
    Ok(rows)
}

/// The CPU solver (rayon, all threads) on the same problem: one solve.
fn cpu_row<T: MgElement>(grid: Grid, cfg: &Config, tol: f64) -> Result<(Row, f64)> {
    let h = default_h(grid);
    let hier = Hierarchy::new(grid, h)?;
    let (b, p0) = bench_problem(grid);
    let b_sq = super::super::cpu::interior_norm_sq(&b, grid);
    let opts = MgOptions { tol, ..cfg.opts };
    let (_, r) = super::cpu::solve::<T>(&hier, &opts, &b, &p0, b_sq)?;
    let mut row = Row::new(
        NAME,
        &format!(
            "CPU rayon ({} threads): {} to {tol:.0e}",
            rayon::current_num_threads(),
            cfg.label
        ),
        "cpu",
        &grid.label(),
        prec(cfg.f32_cycles),
    );
    row.timing = Some(Timing::from_samples(vec![r.ms]));
    row.rel_err = Some(r.rel_residual);
    row.note = format!(
        "{} cycles, {:.1} ms/cycle, residual x{:.3}/cycle",
        r.cycles,
        r.ms_per_cycle().unwrap_or(f64::NAN),
        r.factor().unwrap_or(f64::NAN)
    );
    row.history = r.history.clone();
    if !r.converged {
        row.status = Status::Failed(format!("not converged: {:.2e}", r.rel_residual));
    }
    Ok((row, r.ms))
}

/// Jacobi rung 4 (temporal, depth 8) in `T`: measured ms per sweep on
/// `grid`, and the time to each tolerance at the asymptotic rate.
fn jacobi_rows<T: Element>(
    dev: &Device,
    grid: Grid,
    tols: &[f64],
    reps: usize,
) -> Result<Vec<Row>> {
    let (b, p0) = bench_problem(grid);
    let conv = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
    let bb = dev.upload(&conv(&b))?;
    let mut f = Field::new(dev, &conv(&p0))?;
    let k = T::from_f64(k_of_h(default_h(grid)));
    let sweeps = 200;
    let depth = 8;
    f.run(dev, Rung::Temporal, grid, &bb, k, sweeps, depth)?;
    let t = dev.time(1, reps.max(3), |_| {
        f.run(dev, Rung::Temporal, grid, &bb, k, sweeps, depth)
    })?;
    let per = t.median_ms / sweeps as f64;
    let rho = jacobi_radius(grid);
    let mut rows = Vec::new();
    for &tol in tols {
        let n = jacobi_sweeps(grid, tol);
        let total = n * per;
        let mut row = Row::new(
            NAME,
            &format!("Jacobi rung 4 (temporal, depth 8) to {tol:.0e}, EXTRAPOLATED"),
            "gpu",
            &grid.label(),
            T::NAME,
        );
        row.timing = Some(Timing {
            median_ms: total,
            min_ms: total,
            max_ms: total,
            reps: 0,
        });
        row.note = format!(
            "not run: {n:.3e} sweeps (ln(tol) / ln(rho), rho = {rho:.9}) x {:.2} us per sweep measured here ({} x {sweeps} sweeps)",
            per * 1e3,
            t.reps
        );
        // r(t) = rho^(t / per): the asymptotic line, for the plot (once,
        // for the smallest tolerance).
        if tol != tols.iter().copied().fold(f64::MAX, f64::min) {
            rows.push(row);
            continue;
        }
        row.history = (0..=20)
            .map(|i| {
                let s = (n.max(1.0)).powf(i as f64 / 20.0);
                (s * per, rho.powf(s).max(tol))
            })
            .collect();
        rows.push(row);
    }
    Ok(rows)
}

/// The extrapolation's check: Jacobi rung 4 run to 1e-6 on a small grid,
/// the sweeps it took against `ln(tol) / ln(rho)`.
fn jacobi_validation(dev: &Device) -> Result<Row> {
    let grid = Grid::new(257, 257)?;
    let (b, p0) = bench_problem(grid);
    let prob = Problem::new(grid, default_h(grid), b, p0)?;
    let tol = 1e-6;
    let opts = SolveOptions {
        rung: Rung::Temporal,
        depth: 8,
        tol: Some(tol),
        max_iters: 2_000_000,
        check_every: 1000,
    };
    let (_, r) = jacobi_solve(dev, &prob, &opts)?;
    let want = jacobi_sweeps(grid, tol);
    let mut row = Row::new(
        NAME,
        "check: Jacobi rung 4 measured to 1e-6 (the extrapolation's basis)",
        "gpu",
        &grid.label(),
        "f64",
    );
    row.timing = Some(Timing::from_samples(vec![r.ms]));
    row.rel_err = Some(r.rel_residual);
    row.note = format!(
        "{} sweeps measured (checked every 1000) against {want:.0} predicted: ratio {:.2}",
        r.iterations,
        r.iterations as f64 / want
    );
    if !r.converged || !(0.5..=1.5).contains(&(r.iterations as f64 / want)) {
        row.status = Status::Failed(row.note.clone());
    }
    Ok(row)
}

/// The checks on a GPU: second order of the manufactured solution, and the
/// GPU solver equal to the CPU solver on an odd, non-nested grid.
/// A failed check: the options and cycle precision it ran, and why.
type Failure = (MgOptions, bool, String);

fn check_rows(dev: &Device) -> Result<(Vec<Row>, Vec<Failure>)> {
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    let v = MgOptions::default();
    let grid = Grid::new(129, 97)?;
    for (label, o, f32c) in [
        ("multigrid V(2,2) tile", v, false),
        ("multigrid V(2,2) tile", v, true),
        (
            "PCG",
            MgOptions {
                method: Method::Pcg,
                ..v
            },
            false,
        ),
    ] {
        let mut row = Row::new(
            NAME,
            &format!("check: manufactured solution O(h^2), {label}"),
            "gpu",
            "129x97 -> 257x193",
            prec(f32c),
        );
        let res = if f32c {
            second_order::<f32>(Some(dev), grid, &o)
        } else {
            second_order::<f64>(Some(dev), grid, &o)
        };
        match res {
            Ok((e1, e2)) => {
                row.rel_err = Some(e2);
                row.note = format!(
                    "max |p - p*| {e1:.3e} -> {e2:.3e}, ratio {:.3} (second order: 4)",
                    e1 / e2
                );
            }
            Err(e) => {
                failures.push((o, f32c, e.to_string()));
                row.status = Status::Failed(e.to_string());
            }
        }
        rows.push(row);
    }
    let odd = Grid::new(1000, 777)?;
    let (b, p0) = super::super::check::random_inputs(odd, 77);
    let (rung3, rung4) = earlier_rungs(v);
    for (label, o, f32c) in [
        ("multigrid V(2,2) rung 5", v, false),
        ("multigrid V(2,2) rung 4", rung4, true),
        ("multigrid V(2,2) rung 4", rung4, false),
        ("multigrid V(2,2) rung 3", rung3, false),
        (
            "multigrid V(2,2) rung 2",
            MgOptions {
                coarse_block: false,
                ..rung4
            },
            true,
        ),
        (
            "multigrid V(2,2) rung 1",
            MgOptions {
                smoother: Smoother::RedBlack,
                coarse_block: false,
                ..rung4
            },
            false,
        ),
        (
            "multigrid W(2,2)",
            MgOptions {
                cycle: Cycle::W,
                coarse_block: false,
                ..v
            },
            false,
        ),
        (
            "multigrid FMG, rung 5",
            MgOptions {
                cycle: Cycle::Fmg,
                ..v
            },
            false,
        ),
        (
            "PCG",
            MgOptions {
                method: Method::Pcg,
                ..v
            },
            false,
        ),
        (
            "PCG",
            MgOptions {
                method: Method::Pcg,
                ..v
            },
            true,
        ),
    ] {
        let o = MgOptions {
            max_cycles: 4,
            tol: 1e-14,
            ..o
        };
        let mut row = Row::new(
            NAME,
            &format!("check: 4 cycles equal the CPU solver, {label}"),
            "gpu",
            &odd.label(),
            prec(f32c),
        );
        let res = if f32c {
            let conv = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
            compare_with_cpu::<f32>(dev, &Problem::new(odd, 0.01, conv(&b), conv(&p0))?, &o)
        } else {
            compare_with_cpu::<f64>(dev, &Problem::new(odd, 0.01, b.clone(), p0.clone())?, &o)
        };
        match res {
            Ok(e) => row.rel_err = Some(e),
            Err(e) => {
                failures.push((o, f32c, e.to_string()));
                row.status = Status::Failed(e.to_string());
            }
        }
        rows.push(row);
    }
    Ok((rows, failures))
}

/// Largest prime factor of an FFT length the spectral rows time: a larger
/// one costs `N p` per pass (the solver has no Bluestein transform).
const SPECTRAL_MAX_PRIME: u32 = 127;

/// The spectral solver's row: the direct solve of the same problem (the
/// variant says `direct`, so the report compares it with every tolerance),
/// median of device-event times after warm-up; its note carries the bytes
/// per solve and the fraction of the memory floor reached.
fn spectral_row<T: SpectralElement>(dev: &Device, grid: Grid, copy_gbs: Option<f64>) -> Row {
    let boundary = Boundary::Dirichlet;
    let mut row = Row::new(
        NAME,
        &format!("spectral ({}, direct)", boundary.transform()),
        "gpu",
        &grid.label(),
        T::NAME,
    );
    let largest = spectral::factors(grid.nx - 1)
        .into_iter()
        .chain(spectral::factors(grid.ny - 1))
        .max()
        .unwrap_or(1);
    if largest > SPECTRAL_MAX_PRIME {
        row.status = Status::Skipped(format!(
            "the FFT length {} has the prime factor {largest}: a pass costs N x {largest} \
             (no Bluestein transform in this solver yet)",
            grid.nx - 1
        ));
        return row;
    }
    let res = (|| -> Result<()> {
        let h = default_h(grid);
        let (b, p0) = bench_problem(grid);
        let conv = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
        let prob = Problem::new(grid, h, conv(&b), conv(&p0))?;
        let t = Instant::now();
        let mut s = SpectralDevice::<T>::new(dev, &prob, boundary)?;
        let p: Vec<f64> = s.solve()?.iter().map(|v| v.to_f64()).collect();
        row.first_ms = Some(t.elapsed().as_secs_f64() * 1e3);
        let b_sq = super::super::cpu::interior_norm_sq(&b, grid);
        let rel = (super::super::cpu::cpu_residual_sq(&p, &b, grid, h) / b_sq).sqrt();
        row.rel_err = Some(rel);
        let reps = if grid.cells() > 1 << 24 { 10 } else { 20 };
        let timing = s.time(3, reps)?;
        let bytes = spectral::solve_bytes(grid, std::mem::size_of::<T>());
        let gbs = bytes / (timing.median_ms * 1e-3) / 1e9;
        row.throughput = Some(gbs);
        row.unit = "GB/s (bytes of the 3 passes / time)".into();
        row.pct_of_ceiling = copy_gbs.map(|c| 100.0 * gbs / c);
        row.note = format!(
            "exact discrete solution up to rounding (||r||/||b|| = {rel:.1e}); median of {} \
             (device events) after 3 warm-up solves; 3 passes, {:.3} GB per solve{}",
            timing.reps,
            bytes / 1e9,
            copy_gbs
                .map(|c| format!(
                    ", floor {:.3} ms at the copy rate: {:.0}% of the memory floor",
                    bytes / (c * 1e9) * 1e3,
                    100.0 * bytes / (c * 1e9) * 1e3 / timing.median_ms
                ))
                .unwrap_or_default()
        );
        row.timing = Some(timing);
        Ok(())
    })();
    if let Err(e) = res {
        row.status = Status::Failed(e.to_string());
    }
    row
}

/// The benchmark (see the module doc). Quick: 1025^2, three configurations.
pub fn bench(ctx: &BenchCtx) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let sizes: &[usize] = if ctx.quick {
        &BENCH_SIZES[..1]
    } else {
        &BENCH_SIZES
    };
    let cfgs = configs(ctx.quick);
    let Some(dev) = ctx.gpu() else {
        rows.push(skipped_gpu(NAME, ctx));
        let g = Grid::new(257, 257)?;
        rows.push(cpu_row::<f64>(g, &cfgs[0], 1e-8)?.0);
        return Ok(rows);
    };
    let (checks, failures) = check_rows(dev)?;
    rows.extend(checks);
    if !ctx.quick {
        rows.push(jacobi_validation(dev)?);
    }
    for &n in sizes {
        let grid = Grid::new(n, n)?;
        let reps = match n {
            0..=2048 => 5,
            2049..=4096 => 3,
            _ => 2,
        };
        // CPU solver: at 1025^2 and 4096^2 (f64 V-cycle to 1e-8).
        let cpu_ms = if n <= 4096 {
            let (r, ms) = cpu_row::<f64>(grid, &cfgs[0], 1e-8)?;
            rows.push(r);
            Some(ms)
        } else {
            None
        };
        for cfg in &cfgs {
            let o = &cfg.opts;
            let failed = failures
                .iter()
                .find(|(f, f32c, _)| {
                    f.method == o.method
                        && f.smoother == o.smoother
                        && f.cycle == o.cycle
                        && f.coarse_block == o.coarse_block
                        && f.field_on_fine == o.field_on_fine
                        && f.symmetric == o.symmetric
                        && f.omega == o.omega
                        && *f32c == cfg.f32_cycles
                })
                .map(|(_, _, e)| e.as_str());
            let cpu = cpu_ms.filter(|_| !cfg.f32_cycles && cfg.opts == MgOptions::default());
            rows.extend(if cfg.f32_cycles {
                solver_rows::<f32>(dev, grid, cfg, reps, ctx.ceilings.copy_gbs, cpu, failed)?
            } else {
                solver_rows::<f64>(dev, grid, cfg, reps, ctx.ceilings.copy_gbs, cpu, failed)?
            });
        }
        // f64 only: an f32 field cannot reach these residuals at all (its
        // rounding alone leaves ~eps 8 / h^2 |p| / |b|, above 1e-2 here).
        rows.extend(jacobi_rows::<f64>(dev, grid, &[1e-6, 1e-8, 1e-10], 3)?);
        rows.push(spectral_row::<f64>(dev, grid, ctx.ceilings.copy_gbs));
        rows.push(spectral_row::<f32>(dev, grid, ctx.ceilings.copy_gbs));
    }
    Ok(rows)
}

/// Rungs 3 and 4 of the ladder from rung 5's options `v`: rung 4 keeps the
/// field off the finest level (an outer step), rung 3 also goes back to
/// omega 1 and the symmetric colour order.
fn earlier_rungs(v: MgOptions) -> (MgOptions, MgOptions) {
    let rung4 = MgOptions {
        field_on_fine: false,
        ..v
    };
    let rung3 = MgOptions {
        omega: 1.0,
        symmetric: true,
        ..rung4
    };
    (rung3, rung4)
}
