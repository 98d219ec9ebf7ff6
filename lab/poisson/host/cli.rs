//! `ptxlab poisson`: dispatches to the multi-device run (`--gpus`) or solves
//! on one device (or the CPU), after checking the kernel on the problem.

use super::args::{Args, SolveMethod};
use super::check::CheckCase;
use super::check::verify;
use super::cpu::reference;
use super::input::{cli_problem, write_field};
use super::mg;
use super::multi;
use super::problem::{SolveOptions, SolveReport};
use super::solve::{solve_cpu, solve_device};
use super::types::{Element, k_of_h};
use ptxlab_common::cli::Precision;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::{Row, fmt_ms};

/// `ptxlab poisson`: the rows it measured (the Jacobi solves on one device
/// or the CPU, a multigrid or PCG solve on one device; the multi-device
/// runs print their results and return none).
pub fn cli(args: &Args) -> Result<Vec<Row>> {
    args.check()?;
    if matches!(args.mg.method, SolveMethod::Multigrid | SolveMethod::Pcg) && !args.gpus.requested()
    {
        return mg::run::cli(args);
    }
    if args.mg.method == SolveMethod::Spectral {
        return super::spectral::cli(args);
    }
    let other = if args.mg.method != SolveMethod::Jacobi {
        Some(format!(
            "--method {}",
            ptxlab_common::cli::value_name(&args.mg.method)
        ))
    } else if args.gpus.requested() {
        Some("--gpus".to_string())
    } else {
        None
    };
    if let Some(what) = other {
        if args.json {
            return Err(Error::input(
                "--json",
                format!(
                    "poisson prints JSON rows for the solves on one device; {what} \
                     prints its results as text (leave out --json)"
                ),
            ));
        }
        if args.mg.method != SolveMethod::Jacobi {
            mg::run::cli(args).map(|_| ())?;
        } else {
            multi::cli(args)?;
        }
        return Ok(Vec::new());
    }
    let backend = args.backend;
    match args.precision {
        Precision::F32 => cli_typed::<f32>(args, backend),
        Precision::F64 => cli_typed::<f64>(args, backend),
    }
}

/// Most cells of a grid on the simulator (2048 x 2048: three grids and their
/// race shadow, about 400 MB).
pub const SIM_MAX_CELLS: usize = 1 << 22;
/// Most simulated cell updates of one `ptxlab poisson --backend sim` run:
/// cells x (sweeps + 3) x variants (one to two minutes on two cores, with
/// race detection).
pub const SIM_MAX_WORK: usize = 1 << 28;

fn cli_typed<T: Element>(args: &Args, backend: ptxlab_common::Backend) -> Result<Vec<Row>> {
    if let Some(i) = args.iters {
        ptxlab_common::cli::check_iters("--iters", i, 0)?;
    }
    ptxlab_common::cli::check_iters("--check-every", args.check_every, 1)?;
    let rungs = args.variant.rungs();
    let opts = SolveOptions {
        rung: rungs[0],
        depth: args.depth,
        tol: args.tol,
        max_iters: args.iters.unwrap_or(match (args.tol, backend) {
            (None, _) => 100,
            (Some(_), ptxlab_common::Backend::Sim) => 5_000,
            (Some(_), _) => 100_000,
        }),
        check_every: args.check_every,
    };
    opts.validate()?;
    let dev = ptxlab_common::cli::open_device(backend)?;
    let (prob, exact) = cli_problem::<T>(args)?;
    let grid = prob.grid;
    grid.check_sim_cells(backend, SIM_MAX_CELLS)?;
    if backend == ptxlab_common::Backend::Sim {
        let work = grid
            .cells()
            .saturating_mul(opts.max_iters.saturating_add(3))
            .saturating_mul(rungs.len());
        if work > SIM_MAX_WORK {
            return Err(Error::input(
                "--iters",
                format!(
                    "{} cells x {} sweeps x {} variant(s) = {work} cell updates on the simulator; at \
                     most {SIM_MAX_WORK} (one to two minutes on two cores): give fewer --iters, \
                     a smaller grid or one --variant",
                    grid.cells(),
                    opts.max_iters + 3,
                    rungs.len()
                ),
            ));
        }
    }
    println!(
        "poisson {} {} h={:e}, {}",
        grid.label(),
        T::NAME,
        prob.h,
        opts.stop_label()
    );
    // One row per solve: ms per sweep (residual checks included).
    let row = |variant: &str, backend: &str, r: &SolveReport| {
        let per = r.ms / r.iterations.max(1) as f64;
        let t = ptxlab_common::runtime::Timing {
            median_ms: per,
            min_ms: per,
            max_ms: per,
            reps: 1,
        };
        let mut row = ptxlab_common::cli::timed_row(
            "poisson",
            variant,
            backend,
            &grid.label(),
            T::NAME,
            &t,
            Some((grid.cells() as f64 / (per * 1e-3) / 1e9, "GCells/s")),
        );
        row.note = format!(
            "{} sweeps in {} ms, ||r||/||b|| = {:.3e}{}",
            r.iterations,
            fmt_ms(r.ms),
            r.rel_residual,
            match (opts.tol, r.converged) {
                (Some(_), true) => ", converged",
                (Some(_), false) => ", NOT converged",
                (None, _) => "",
            }
        );
        row
    };
    let mut rows = Vec::new();
    let report = |who: &str, p: &[T], r: &SolveReport| {
        let per_us = if r.iterations > 0 {
            1e3 * r.ms / r.iterations as f64
        } else {
            f64::NAN
        };
        println!(
            "{who}: {} sweeps, ||r||/||b|| = {:.3e} (||r|| = {:.3e}), {} ms{}{}",
            r.iterations,
            r.rel_residual,
            r.residual_norm,
            fmt_ms(r.ms),
            if per_us.is_finite() {
                format!(
                    ", {per_us:.2} us/sweep, {:.2} GCells/s",
                    grid.cells() as f64 / per_us / 1e3
                )
            } else {
                String::new()
            },
            match (opts.tol, r.converged) {
                (Some(_), true) => ", converged".to_string(),
                (Some(_), false) => format!(", NOT converged within {} sweeps", opts.max_iters),
                (None, _) => String::new(),
            }
        );
        if let Some(e) = &exact {
            let err = p
                .iter()
                .zip(e)
                .map(|(a, b)| (a.to_f64() - b).abs())
                .fold(0.0, f64::max);
            println!(
                "  max |p - p*| = {err:.3e} (discretisation error of the manufactured problem is about {:.3e})",
                0.822 * prob.h * prob.h
            );
        }
    };
    let result = match dev {
        None => {
            let (p, r) = solve_cpu(&prob, &opts)?;
            report(
                &format!("CPU rayon ({} threads)", rayon::current_num_threads()),
                &p,
                &r,
            );
            rows.push(row("CPU rayon", "cpu", &r));
            p
        }
        Some(dev) => {
            let mut last = None;
            for rung in rungs {
                // Check the kernel on this problem first: 2 sweeps against the CPU f64 reference.
                let case = CheckCase {
                    grid,
                    p0: prob.p0.iter().map(|v| v.to_f64()).collect(),
                    b: prob.b.iter().map(|v| v.to_f64()).collect(),
                    k: T::from_f64(k_of_h(prob.h)).to_f64(),
                    refs: Vec::new(),
                };
                let k = case.k;
                let case = CheckCase {
                    refs: vec![(2, reference(&case.p0, &case.b, grid, k, 2))],
                    ..case
                };
                let e = verify::<T>(&dev, rung, args.depth.min(2), &case)?;
                println!(
                    "PASS {} {}: 2 sweeps match the CPU f64 reference (relative error {e:.1e})",
                    rung.label(args.depth),
                    T::NAME
                );
                let (p, r) = solve_device(&dev, &prob, &SolveOptions { rung, ..opts })?;
                report(
                    &format!("{} on {}", rung.label(args.depth), dev.name()),
                    &p,
                    &r,
                );
                let mut rr = row(
                    &rung.label(args.depth),
                    if dev.is_sim() { "sim" } else { "gpu" },
                    &r,
                );
                rr.rel_err = Some(e);
                rows.push(rr);
                last = Some(p);
            }
            last.unwrap_or_default()
        }
    };
    if let Some(out) = &args.out {
        write_field(out, grid, &result)?;
    }
    Ok(rows)
}
