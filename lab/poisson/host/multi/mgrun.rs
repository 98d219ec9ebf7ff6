//! `ptxlab poisson --gpus N --method multigrid|pcg` and the tables of
//! `ptxlab poisson-scaling --method multigrid|pcg`: the solve on one device,
//! then on N, with the residual histories and fields compared.

use super::super::args::Args;
use super::super::input::{cli_problem, write_field};
use super::super::mg::check::{bench_problem, widen};
pub use super::super::mg::compare::{
    check_field, field_difference, history_difference, history_tolerance,
};
use super::super::mg::device::MgDevice;
use super::super::mg::launch::MgElement;
use super::super::mg::levels::{Hierarchy, Method, MgOptions, Smoother};
use super::super::mg::levels::{SIM_MAX_CELLS, SIM_MAX_WORK};
use super::super::mg::report::MgReport;
use super::super::types::{Grid, default_h};
use super::args::ScalingArgs;
use super::mg::{MIN_ROWS_GPU, check_options, team_options};
use super::rows::ScalingRow;
use super::run::require_devices;
use super::team::Team;
use ptxlab_common::Backend;
use ptxlab_common::cli::Precision;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::{Row, fmt_ms};
use ptxlab_common::runtime::{Device, Timing};

/// Fewest rows per rank a coarse level keeps its split with on simulated
/// devices (small, so that the tests split several levels).
pub const MIN_ROWS_SIM: usize = 4;

fn min_rows(backend: Backend) -> usize {
    if backend == Backend::Sim {
        MIN_ROWS_SIM
    } else {
        MIN_ROWS_GPU
    }
}

fn reference_device(team: &Team) -> Result<Device> {
    match team.members.first().and_then(|m| m.dev.as_gpu()) {
        Some(g) => Ok(Device::gpu(g.context().ordinal())?),
        None => Ok(Device::sim()),
    }
}

fn smoother_name(s: Smoother) -> &'static str {
    match s {
        Smoother::RedBlack => "rb",
        Smoother::Tile => "tile",
    }
}

fn method_name(m: Method) -> &'static str {
    match m {
        Method::Multigrid => "multigrid",
        Method::Pcg => "pcg",
    }
}

fn print_history(who: &str, r: &MgReport) {
    let h: Vec<String> = r.history.iter().map(|(_, v)| format!("{v:.3e}")).collect();
    println!("{who}: ||r||/||b|| by cycle: {}", h.join(" "));
    println!(
        "{who}: {} cycles, ||r||/||b|| = {:.3e}, {} ms{}, {}",
        r.cycles,
        r.rel_residual,
        fmt_ms(r.ms),
        r.ms_per_cycle()
            .map(|m| format!(" ({} ms/cycle)", fmt_ms(m)))
            .unwrap_or_default(),
        if r.converged {
            "converged"
        } else {
            "NOT converged"
        }
    );
}

/// `ptxlab poisson --gpus N --method multigrid|pcg`: solves on one device
/// (the single-device solver, same options), then on N slabs; prints both
/// residual histories and checks that they agree to round-off and that the
/// fields agree ([`check_field`]).
pub fn cli(args: &Args, opts: &MgOptions) -> Result<()> {
    let Some(n) = args.gpus.count else {
        return Err(Error::input(
            "--no-overlap",
            "applies to the multi-device Jacobi run (--method jacobi --gpus N)",
        ));
    };
    if args.gpus.no_overlap {
        return Err(Error::input(
            "--no-overlap",
            "applies to --method jacobi (the multigrid slabs exchange between launches)",
        ));
    }
    check_options(opts)?;
    require_devices(args.backend)?;
    match args.precision {
        Precision::F32 => typed::<f32>(args, n, opts),
        Precision::F64 => typed::<f64>(args, n, opts),
    }
}

fn typed<T: MgElement>(args: &Args, n: usize, opts: &MgOptions) -> Result<()> {
    let backend = args.backend;
    let mut team = Team::open(n, backend)?;
    let (prob, _) = cli_problem::<T>(args)?;
    team.agree(&super::run::describe_problem(&prob, opts))?;
    let grid = prob.grid;
    if backend == Backend::Sim {
        let work = grid.cells().saturating_mul(opts.max_cycles);
        if grid.cells() > SIM_MAX_CELLS || work > SIM_MAX_WORK {
            return Err(Error::input(
                "grid/--iters",
                format!(
                    "{} cells x {} cycles on simulated devices; at most {SIM_MAX_CELLS} cells \
                     and {SIM_MAX_WORK} cells x cycles: use a smaller grid or fewer --iters",
                    grid.cells(),
                    opts.max_cycles
                ),
            ));
        }
    }
    let (b, p0, b_sq) = widen(&prob);
    let hier = Hierarchy::new(grid, prob.h)?;
    let lead = team.is_lead();
    let world = team.world_size();
    let refdev = reference_device(&team)?;
    // The single-device solver with the team's options (the outer step on
    // the finest level): the same arithmetic in the same order.
    let one_opts = team_options(opts);
    let mut one = MgDevice::<T>::new(&refdev, &hier, &one_opts, &b, &p0, b_sq)?;
    one.warm_up(&p0)?;
    let r1 = one.solve(&p0)?;
    let p1 = one.field()?;
    drop(one);
    let mut placed = team.place_mg::<T>(grid, prob.h, &b, &p0, opts, min_rows(backend))?;
    if lead {
        println!(
            "poisson {} {} h={:e}: {}, {} smoother, until ||r||/||b|| < {:e} (at most {} \
             cycles), on {world} device(s) ({}), {}",
            grid.label(),
            T::NAME,
            prob.h,
            opts.label(),
            smoother_name(opts.smoother),
            opts.tol,
            opts.max_cycles,
            refdev.name(),
            placed.team().describe()
        );
        println!("split: {}", placed.split().describe());
        print_history("1 device (whole grid)", &r1);
    }
    placed.warm_up()?;
    let rn = placed.solve()?;
    // The whole field on rank 0's process (gathered over the transport with
    // one process per device); every other process checks the rows it owns
    // against its own single-device solve.
    let field = placed.gather_to_lead()?;
    let own = match field {
        Some(_) => None,
        None => Some(placed.gather_mine()?),
    };
    if lead {
        print_history(&format!("{world} devices"), &rn);
    }
    let what = format!(
        "poisson --gpus {n} --method {} {}",
        method_name(opts.method),
        grid.label()
    );
    let diff = history_difference(&what, &rn, &r1)?;
    let tol = history_tolerance(opts.method, std::mem::size_of::<T>());
    if diff > tol {
        return Err(Error::Verification {
            what,
            detail: format!(
                "the residual histories differ by {diff:.2e} (relative) at most; round-off \
                 is below {tol:e}"
            ),
        });
    }
    if let Some(f) = &field {
        let same = check_field(&what, opts.method, f, &p1)?;
        println!(
            "PASS: the same residual history as one device (largest relative difference \
             {diff:.1e}, the sums' order) and {same}; speedup {:.2}x",
            r1.ms / rn.ms
        );
    } else if let Some((f, mine)) = &own {
        let nx = grid.nx;
        let pick = |v: &[f64]| -> Vec<f64> {
            (0..grid.ny)
                .filter(|&y| mine[y])
                .flat_map(|y| v[y * nx..(y + 1) * nx].to_vec())
                .collect()
        };
        let same = check_field(&what, opts.method, &pick(f), &pick(&p1))?;
        if lead {
            println!(
                "PASS: the same residual history as one device (largest relative difference \
                 {diff:.1e}, the sums' order) and, on each rank's own rows, {same}; speedup {:.2}x",
                r1.ms / rn.ms
            );
        }
    }
    if let (Some(out), Some(f)) = (&args.out, field) {
        let v: Vec<T> = f.iter().map(|&x| T::from_f64(x)).collect();
        write_field(out, grid, &v)?;
    }
    Ok(())
}

/// The multigrid scaling table as Markdown.
pub fn mg_scaling_table(rows: &[ScalingRow], precision: &str, tol: f64) -> String {
    let mut s = format!(
        "| scaling | grid ({precision}, to {tol:e}) | GPUs | code | cycles | ms (median) | ms/cycle | speedup | efficiency |\n|---|---|---|---|---|---|---|---|---|\n"
    );
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {:.2} | {:.3} | {} | {} |\n",
            r.kind,
            r.grid.label(),
            r.gpus,
            r.mode,
            r.cycles.unwrap_or(0),
            r.ms(),
            r.ms_per_cycle(),
            r.speedup_cell(),
            r.efficiency_cell(),
        ));
    }
    s
}

/// Solves `reps` times after the warm-up; the last report and the median ms.
fn time_team<T: MgElement>(
    team: &mut Team,
    grid: Grid,
    b: &[f64],
    opts: &MgOptions,
    reps: usize,
    min: usize,
) -> Result<(MgReport, Timing, Option<Vec<f64>>)> {
    let p0 = vec![0.0; grid.cells()];
    let mut placed = team.place_mg::<T>(grid, default_h(grid), b, &p0, opts, min)?;
    placed.warm_up()?;
    let mut ms = Vec::new();
    let mut last = None;
    for _ in 0..reps.max(1) {
        let r = placed.solve()?;
        ms.push(r.ms);
        last = Some(r);
    }
    let field = placed.gather()?;
    let last = last.ok_or_else(|| Error::input("--reps", "0"))?;
    Ok((last, Timing::from_samples(ms), field))
}

fn time_device<T: MgElement>(
    dev: &Device,
    grid: Grid,
    b: &[f64],
    opts: &MgOptions,
    reps: usize,
) -> Result<(MgReport, Timing)> {
    let p0 = vec![0.0; grid.cells()];
    let hier = Hierarchy::new(grid, default_h(grid))?;
    let b_sq = super::super::cpu::interior_norm_sq(b, grid);
    let mut s = MgDevice::<T>::new(dev, &hier, opts, b, &p0, b_sq)?;
    s.warm_up(&p0)?;
    let mut ms = Vec::new();
    let mut last = None;
    for _ in 0..reps.max(1) {
        let r = s.solve(&p0)?;
        ms.push(r.ms);
        last = Some(r);
    }
    let last = last.ok_or_else(|| Error::input("--reps", "0"))?;
    Ok((last, Timing::from_samples(ms)))
}

/// `ptxlab poisson-scaling --method multigrid|pcg`: for each size S, the
/// solve of the bench problem to `--tol` on one device (the best
/// single-device rung of the method, and the single-device solver with the
/// slabs' options: `--smoother`, the outer step), the slab code on a team of 1 and of N (strong
/// scaling, histories and fields checked against the team of 1), and on
/// S x N S over N devices (weak).
/// Returns the rows (`--json`).
pub fn cli_mg_scaling(args: &ScalingArgs, method: Method) -> Result<Vec<Row>> {
    match args.precision {
        Precision::F32 => mg_scaling_typed::<f32>(args, method),
        Precision::F64 => mg_scaling_typed::<f64>(args, method),
    }
}

fn mg_scaling_typed<T: MgElement>(args: &ScalingArgs, method: Method) -> Result<Vec<Row>> {
    let backend = args.backend;
    let sim = backend == Backend::Sim;
    let n = args.gpus;
    let opts = team_options(&MgOptions {
        method,
        smoother: args.smoother,
        tol: args.tol,
        max_cycles: 100,
        ..MgOptions::default()
    });
    check_options(&opts)?;
    if sim {
        for s in args.square_sizes()? {
            if s * s * n.max(1) > SIM_MAX_CELLS {
                return Err(Error::input(
                    "--size",
                    format!("{s} on simulated devices; at most {SIM_MAX_CELLS} cells per grid"),
                ));
            }
        }
    }
    let min = min_rows(backend);
    let mut team = if sim { Team::sim(n)? } else { Team::gpus(n)? };
    let mut team1 = if sim { Team::sim(1)? } else { Team::gpus(1)? };
    let dev = reference_device(&team)?;
    println!(
        "poisson-scaling --method {}: V({},{}) omega {}, {} smoother, {} cycles, to \
         ||r||/||b|| < {:e}, on {n} x {}; {}; median of {} solves after one untimed cycle (wall \
         clock, the residual read back every cycle)",
        method_name(method),
        opts.pre,
        opts.post,
        opts.omega,
        smoother_name(opts.smoother),
        T::NAME,
        opts.tol,
        dev.name(),
        team.describe(),
        args.reps
    );
    let mut rows = Vec::new();
    for s in args.square_sizes()? {
        let grid = Grid::new(s, s)?;
        let (b, _) = bench_problem(grid);
        // The best single-device rung (rung 5: tile smoother, fused finest
        // level, CUDA graph), for honesty, and the single-device solver with
        // the slabs' options (their smoother, the outer step).
        let best = MgOptions {
            method,
            tol: args.tol,
            max_cycles: 100,
            ..MgOptions::default()
        };
        let (rb, timing_tb) = time_device::<T>(&dev, grid, &b, &best, args.reps)?;
        let tb = timing_tb.median_ms;
        println!(
            "{} 1 device, best single-device rung ({}, tile smoother, graph): {} cycles, {tb:.2} ms",
            grid.label(),
            best.label(),
            rb.cycles
        );
        rows.push(ScalingRow {
            kind: "reference",
            grid,
            gpus: 1,
            mode: if best.fused_fine(std::mem::size_of::<T>()) {
                "single-device solver, best rung (tile, fused, graph)".into()
            } else {
                "single-device solver, best rung (tile, graph)".into()
            },
            cycles: Some(rb.cycles),
            timing: timing_tb,
            speedup: None,
            efficiency: None,
        });
        let (rr, timing_tr) = time_device::<T>(&dev, grid, &b, &opts, args.reps)?;
        let tr = timing_tr.median_ms;
        let same_mode = format!(
            "single-device solver, {} smoother, outer step (graph)",
            smoother_name(opts.smoother)
        );
        println!(
            "{} 1 device, {same_mode}: {} cycles, {tr:.2} ms",
            grid.label(),
            rr.cycles
        );
        rows.push(ScalingRow {
            kind: "reference",
            grid,
            gpus: 1,
            mode: same_mode,
            cycles: Some(rr.cycles),
            timing: timing_tr,
            speedup: None,
            efficiency: None,
        });
        let (r1, timing_t1, f1) = time_team::<T>(&mut team1, grid, &b, &opts, args.reps, min)?;
        let t1 = timing_t1.median_ms;
        println!(
            "{} 1 device, slab code: {} cycles, {t1:.2} ms",
            grid.label(),
            r1.cycles
        );
        rows.push(ScalingRow {
            kind: "strong",
            grid,
            gpus: 1,
            mode: "slab code, team of 1".into(),
            cycles: Some(r1.cycles),
            timing: timing_t1,
            speedup: Some(1.0),
            efficiency: Some(1.0),
        });
        let (rn, timing_tn, fnn) = time_team::<T>(&mut team, grid, &b, &opts, args.reps, min)?;
        let tn = timing_tn.median_ms;
        let what = format!("{n} devices {}", grid.label());
        let diff = history_difference(&what, &rn, &r1)?;
        let tol = history_tolerance(method, std::mem::size_of::<T>());
        if diff > tol {
            return Err(Error::Verification {
                what,
                detail: format!(
                    "the residual history differs by {diff:.2e} (relative; round-off is \
                     below {tol:e})"
                ),
            });
        }
        let same = match (&fnn, &f1) {
            (Some(a), Some(b)) => check_field(&what, method, a, b)?,
            _ => "(fields not gathered)".to_string(),
        };
        println!(
            "{} {n} devices, slab code: {} cycles, {tn:.2} ms, speedup {:.2}x over the team of 1 \
             ({:.2}x over the best single-device rung); PASS same history (max relative \
             difference {diff:.1e}) and {same} as the team of 1",
            grid.label(),
            rn.cycles,
            t1 / tn,
            tb / tn
        );
        rows.push(ScalingRow {
            kind: "strong",
            grid,
            gpus: n,
            mode: "slab code".into(),
            cycles: Some(rn.cycles),
            timing: timing_tn,
            speedup: Some(t1 / tn),
            efficiency: Some(t1 / tn / n as f64),
        });
        if !args.no_weak && n > 1 {
            let wgrid = Grid::new(s, n * s)?;
            let (wb, _) = bench_problem(wgrid);
            let (rw, timing_tw, _) = time_team::<T>(&mut team, wgrid, &wb, &opts, args.reps, min)?;
            let tw = timing_tw.median_ms;
            let per1 = t1 / r1.cycles.max(1) as f64;
            let perw = tw / rw.cycles.max(1) as f64;
            println!(
                "{} {n} devices, slab code: {} cycles, {tw:.2} ms; weak-scaling efficiency {:.1}% \
                 per cycle ({:.1}% in total time)",
                wgrid.label(),
                rw.cycles,
                100.0 * per1 / perw,
                100.0 * t1 / tw
            );
            rows.push(ScalingRow {
                kind: "weak",
                grid: wgrid,
                gpus: n,
                mode: "slab code".into(),
                cycles: Some(rw.cycles),
                timing: timing_tw,
                speedup: None,
                efficiency: Some(per1 / perw),
            });
        }
    }
    let table = mg_scaling_table(&rows, T::NAME, opts.tol);
    println!("\n{table}");
    if let Some(md) = &args.md {
        std::fs::write(md, &table).map_err(|e| Error::File {
            path: md.display().to_string(),
            detail: e.to_string(),
        })?;
        println!("wrote {}", md.display());
    }
    Ok(rows
        .iter()
        .map(|r| r.to_row(method_name(method), backend, T::NAME, Some(opts.tol)))
        .collect())
}
