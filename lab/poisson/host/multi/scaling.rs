//! `ptxlab poisson-scaling`: ms per sweep on one device and on N, strong and
//! weak scaling, overlapped and not, each checked bit for bit.

use super::super::check::{CHECK_GRID_GPU, CHECK_H, CHECK_SWEEPS, bench_inputs, random_inputs};
use super::super::launch::Field;
use super::super::problem::Problem;
use super::super::types::{Grid, Rung, default_h, k_of_h};
use super::args::ScalingArgs;
use super::bootstrap::RankEnv;
use super::element::SlabElement;
use super::placed::{Placed, single_device};
use super::rows::ScalingRow;
use super::run::{reference_device, rungs_of, sim_limits};
use super::team::Team;
use crate::SolveMethod;
use crate::mg::Method;
use ptxlab_common::Backend;
use ptxlab_common::cli::Precision;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::Row;
use ptxlab_common::runtime::{Buffer, Device, Timing};
use std::time::Instant;

/// The scaling table as Markdown.
pub fn scaling_table(rows: &[ScalingRow], precision: &str, rung: Rung) -> String {
    let mut s = format!(
        "| scaling | grid ({precision}, {}) | GPUs | halo exchange | ms/sweep | GCells/s | speedup | efficiency |\n|---|---|---|---|---|---|---|---|\n",
        rung.name()
    );
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {:.4} | {:.1} | {} | {} |\n",
            r.kind,
            r.grid.label(),
            r.gpus,
            r.mode,
            r.ms(),
            r.gcells_per_s(),
            r.speedup_cell(),
            r.efficiency_cell(),
        ));
    }
    s
}

/// `ptxlab poisson-scaling`: ms per sweep on one device and on N, strong
/// (same global grid) and weak (N times the rows) scaling, with and without
/// the overlap; prints a Markdown table and returns the rows (`--json`).
pub fn cli_scaling(args: &ScalingArgs) -> Result<Vec<Row>> {
    let backend = args.backend;
    match args.method {
        SolveMethod::Jacobi => {}
        SolveMethod::Spectral => {
            return Err(Error::input(
                "--method",
                "spectral is a direct solve on one device; poisson-scaling runs jacobi, \
                 multigrid or pcg",
            ));
        }
        SolveMethod::Multigrid | SolveMethod::Pcg => {
            if backend == Backend::Cpu {
                return Err(Error::input("--backend", "cpu; gpu or sim"));
            }
            if args.size.is_empty() {
                return Err(Error::input("--size", "at least one size"));
            }
            let method = if args.method == SolveMethod::Pcg {
                Method::Pcg
            } else {
                Method::Multigrid
            };
            return super::mgrun::cli_mg_scaling(args, method);
        }
    }
    if backend == Backend::Cpu {
        return Err(Error::input("--backend", "cpu; gpu or sim"));
    }
    if backend == Backend::Gpu && RankEnv::from_env()?.is_some() {
        return Err(Error::input(
            "poisson-scaling",
            "runs as one process driving every GPU; unset the launcher's rank variables \
             (use `ptxlab poisson --gpus N` for one process per GPU)",
        ));
    }
    if args.size.is_empty() || args.iters == 0 {
        return Err(Error::input(
            "--size/--iters",
            "at least one size and one sweep per batch",
        ));
    }
    args.square_sizes()?;
    let mut tables = Vec::new();
    let mut rows = Vec::new();
    for rung in rungs_of(args.variant)? {
        let (table, measured) = match args.precision {
            Precision::F32 => scaling_typed::<f32>(args, backend, rung)?,
            Precision::F64 => scaling_typed::<f64>(args, backend, rung)?,
        };
        tables.push(table);
        let precision = args.precision.name();
        rows.extend(
            measured
                .iter()
                .map(|r| r.to_row(&rung.name(), backend, precision, None)),
        );
    }
    if let Some(md) = &args.md {
        std::fs::write(md, tables.join("\n")).map_err(|e| Error::File {
            path: md.display().to_string(),
            detail: e.to_string(),
        })?;
        println!("wrote {}", md.display());
    }
    Ok(rows)
}

fn time_single<T: SlabElement>(
    dev: &Device,
    f: &mut Field<T>,
    b: &Buffer<T>,
    grid: Grid,
    k: T,
    rung: Rung,
    args: &ScalingArgs,
) -> Result<Timing> {
    f.run(dev, rung, grid, b, k, args.warmup, 1)?;
    dev.synchronize()?;
    let mut ms = Vec::new();
    for _ in 0..args.reps.max(1) {
        let t = Instant::now();
        f.run(dev, rung, grid, b, k, args.iters, 1)?;
        dev.synchronize()?;
        ms.push(t.elapsed().as_secs_f64() * 1e3 / args.iters as f64);
    }
    Ok(Timing::from_samples(ms))
}

fn check_equal<T: SlabElement>(
    placed: &mut Placed<'_, T>,
    want: &[T],
    what: &str,
) -> Result<String> {
    let c = placed.compare(want)?;
    if c.differ > 0 {
        return Err(Error::Verification {
            what: what.to_string(),
            detail: format!(
                "{} of {} cells differ from the single-device field after {} sweeps{}",
                c.differ,
                c.cells,
                placed.iterations(),
                c.first
                    .map(|(x, y)| format!(" (first at x={x}, y={y})"))
                    .unwrap_or_default()
            ),
        });
    }
    Ok(format!(
        "PASS {what}: bit-identical to one device after {} sweeps ({} cells)",
        placed.iterations(),
        c.cells
    ))
}

/// One rung's scaling rows and their Markdown table.
fn scaling_typed<T: SlabElement>(
    args: &ScalingArgs,
    backend: Backend,
    rung: Rung,
) -> Result<(String, Vec<ScalingRow>)> {
    let n = args.gpus;
    let sim = backend == Backend::Sim;
    if sim {
        for s in args.square_sizes()? {
            let grid = Grid::new(s, n.max(1) * s)?;
            let sweeps = (args.warmup + args.reps.max(1) * args.iters).saturating_mul(6);
            sim_limits(grid, grid.cells().saturating_mul(sweeps))?;
        }
    }
    let mut team = if sim { Team::sim(n)? } else { Team::gpus(n)? };
    let mut team1 = if sim { Team::sim(1)? } else { Team::gpus(1)? };
    let dev = reference_device(&team)?;
    println!(
        "poisson-scaling: {} {} on {} x {}; {}; {} warm-up sweeps, then {} batches of {} sweeps \
         (median ms per sweep, wall clock between synchronisations)",
        rung.label(1),
        T::NAME,
        n,
        dev.name(),
        team.describe(),
        args.warmup,
        args.reps,
        args.iters
    );
    if !args.no_check {
        let (cx, cy) = if sim { (37, 29) } else { CHECK_GRID_GPU };
        let grid = Grid::new(cx, cy)?;
        let (p0, b) = random_inputs(grid, 9);
        let conv = |v: Vec<f64>| v.into_iter().map(T::from_f64).collect::<Vec<T>>();
        let prob = Problem::new(grid, CHECK_H, conv(b), conv(p0))?;
        for overlap in [true, false] {
            let mut placed = team.place(&prob, rung)?;
            placed.set_overlap(overlap);
            let mut done = 0;
            for s in CHECK_SWEEPS {
                placed.iterate(s - done)?;
                done = s;
                let want = single_device(&dev, &prob, rung, s)?;
                println!(
                    "{}",
                    check_equal(
                        &mut placed,
                        &want,
                        &format!(
                            "{} GPUs {}, {}",
                            n,
                            grid.label(),
                            if overlap {
                                "overlapped"
                            } else {
                                "not overlapped"
                            }
                        )
                    )?
                );
            }
        }
    }
    let mut rows = Vec::new();
    for s in args.square_sizes()? {
        let grid = Grid::new(s, s)?;
        let (p0, bh) = bench_inputs::<T>(grid);
        let h = default_h(grid);
        let k = T::from_f64(k_of_h(h));
        let b = dev.upload(&bh)?;
        let mut f = Field::new(&dev, &p0)?;
        let timing1 = time_single(&dev, &mut f, &b, grid, k, rung, args)?;
        let t1 = timing1.median_ms;
        println!("{} 1 device, whole grid: {t1:.4} ms/sweep", grid.label());
        rows.push(ScalingRow {
            kind: "strong",
            grid,
            gpus: 1,
            mode: "none (whole grid, single-GPU code)".into(),
            cycles: None,
            timing: timing1,
            speedup: Some(1.0),
            efficiency: Some(1.0),
        });
        let prob = Problem { grid, h, b: bh, p0 };
        {
            let mut placed = team1.place(&prob, rung)?;
            let timing = placed.time_sweeps(args.warmup, args.reps, args.iters)?;
            let t = timing.median_ms;
            println!("{} 1 device, slab code: {t:.4} ms/sweep", grid.label());
            rows.push(ScalingRow {
                kind: "strong",
                grid,
                gpus: 1,
                mode: "none (slab code, no peers)".into(),
                cycles: None,
                timing,
                speedup: Some(t1 / t),
                efficiency: Some(t1 / t),
            });
        }
        {
            let mut placed = team.place(&prob, rung)?;
            for overlap in [true, false] {
                placed.set_overlap(overlap);
                let timing = placed.time_sweeps(args.warmup, args.reps, args.iters)?;
                let t = timing.median_ms;
                let mode = if overlap {
                    "overlapped"
                } else {
                    "not overlapped"
                };
                println!(
                    "{} {n} devices, {mode}: {t:.4} ms/sweep, speedup {:.2}x",
                    grid.label(),
                    t1 / t
                );
                rows.push(ScalingRow {
                    kind: "strong",
                    grid,
                    gpus: n,
                    mode: mode.into(),
                    cycles: None,
                    timing,
                    speedup: Some(t1 / t),
                    efficiency: Some(t1 / t / n as f64),
                });
                if !args.no_check {
                    // Bring the single-device field to the same sweep count
                    // (it ran one timing's worth; the slabs now ran one or two).
                    if !overlap {
                        let w = args.warmup + args.reps.max(1) * args.iters;
                        f.run(&dev, rung, grid, &b, k, w, 1)?;
                    }
                    let want = dev.download(&f.cur)?;
                    println!(
                        "{}",
                        check_equal(
                            &mut placed,
                            &want,
                            &format!("{n} GPUs {}, {mode}", grid.label())
                        )?
                    );
                }
            }
        }
        drop(f);
        drop(b);
        if !args.no_weak && n > 1 {
            let wgrid = match Grid::new(s, n * s) {
                Ok(g) => g,
                Err(e) => {
                    println!("weak scaling at {s} x {}: skipped ({e})", n * s);
                    continue;
                }
            };
            let (p0, bh) = bench_inputs::<T>(wgrid);
            let prob = Problem {
                grid: wgrid,
                h,
                b: bh,
                p0,
            };
            let mut placed = team.place(&prob, rung)?;
            for overlap in [true, false] {
                placed.set_overlap(overlap);
                let timing = placed.time_sweeps(args.warmup, args.reps, args.iters)?;
                let t = timing.median_ms;
                let mode = if overlap {
                    "overlapped"
                } else {
                    "not overlapped"
                };
                println!(
                    "{} {n} devices, {mode}: {t:.4} ms/sweep, weak-scaling efficiency {:.1}%",
                    wgrid.label(),
                    100.0 * t1 / t
                );
                rows.push(ScalingRow {
                    kind: "weak",
                    grid: wgrid,
                    gpus: n,
                    mode: mode.into(),
                    cycles: None,
                    timing,
                    speedup: None,
                    efficiency: Some(t1 / t),
                });
            }
        }
    }
    let table = scaling_table(&rows, T::NAME, rung);
    println!("\n{table}");
    Ok((table, rows))
}
