//! `ptxlab poisson --method multigrid|pcg`: solves the problem of the
//! Poisson CLI (`--b/--p0/--h/--out`, or the manufactured one) to
//! `--tol`, on a GPU, the simulator or the CPU, and prints every cycle.

use super::super::args::{Args, SolveMethod};
use super::super::input::{cli_problem, write_field};
use super::super::types::DEFAULT_DEPTH;
use super::check::widen;
use super::device::MgDevice;
use super::launch::MgElement;
use super::levels::{Hierarchy, Method, MgOptions};
use super::report::MgReport;
use ptxlab_common::Backend;
use ptxlab_common::cli::Precision;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::{Row, fmt_ms};
use std::time::Instant;

pub use super::levels::{SIM_MAX_CELLS, SIM_MAX_WORK};

/// The options `args` ask for (method, cycle, sweeps, smoother, tolerance,
/// cycles), checked; Jacobi-only options are refused.
pub fn options(args: &Args) -> Result<MgOptions> {
    let a = &args.mg;
    let method = match a.method {
        SolveMethod::Multigrid => Method::Multigrid,
        SolveMethod::Pcg => Method::Pcg,
        SolveMethod::Spectral => {
            return Err(Error::input(
                "--method",
                "spectral is a direct solve (poisson::spectral), not a multigrid solve",
            ));
        }
        SolveMethod::Jacobi => {
            return Err(Error::input(
                "--method",
                "jacobi runs the sweep ladder, not a multigrid solve",
            ));
        }
    };
    for (flag, given) in [
        (
            "--variant",
            args.variant != ptxlab_common::cli::OneOrAll::All,
        ),
        ("--depth", args.depth != DEFAULT_DEPTH),
        ("--check-every", args.check_every != 100),
    ] {
        if given {
            return Err(Error::input(
                flag,
                format!(
                    "applies to --method jacobi (the sweep ladder), not to --method {}",
                    ptxlab_common::cli::value_name(&a.method)
                ),
            ));
        }
    }
    if let Some(i) = args.iters {
        ptxlab_common::cli::check_iters("--iters", i, 1)?;
    }
    let opts = MgOptions {
        method,
        cycle: a.cycle,
        pre: a.pre,
        post: a.post,
        smoother: args.smoother(),
        tol: args.tol.unwrap_or(1e-8),
        max_cycles: args.iters.unwrap_or(50),
        graph: !a.no_graph,
        coarse_block: !a.no_coarse_block,
        omega: a.omega,
        symmetric: a.symmetric,
        field_on_fine: !a.no_fused_fine,
    };
    opts.validate()?;
    Ok(opts)
}

/// `ptxlab poisson --method multigrid|pcg`: the row of the solve on one
/// device (none on the CPU or over several devices, which print theirs).
pub fn cli(args: &Args) -> Result<Vec<Row>> {
    let opts = options(args)?;
    if args.gpus.requested() {
        return crate::multi::mgrun::cli(args, &opts).map(|()| Vec::new());
    }
    let backend = args.backend;
    match args.precision {
        Precision::F32 => typed::<f32>(args, backend, &opts),
        Precision::F64 => typed::<f64>(args, backend, &opts),
    }
}

fn print_report(who: &str, r: &MgReport, tol: f64) {
    for (k, w) in r.history.windows(2).enumerate() {
        println!(
            "  cycle {:>3}: ||r||/||b|| = {:.3e} (x{:.3}), {} ms",
            k + 1,
            w[1].1,
            w[1].1 / w[0].1,
            fmt_ms(w[1].0)
        );
    }
    println!(
        "{who}: {} cycles, ||r||/||b|| = {:.3e} (||r|| = {:.3e}), {} ms{}{}, {}",
        r.cycles,
        r.rel_residual,
        r.residual_sq.sqrt(),
        fmt_ms(r.ms),
        r.ms_per_cycle()
            .map(|m| format!(" ({} ms/cycle)", fmt_ms(m)))
            .unwrap_or_default(),
        r.factor()
            .map(|f| format!(", residual reduced {f:.3}x per cycle"))
            .unwrap_or_default(),
        if r.converged {
            "converged".to_string()
        } else {
            format!("NOT converged to {tol:e}")
        }
    );
}

fn typed<T: MgElement>(args: &Args, backend: Backend, opts: &MgOptions) -> Result<Vec<Row>> {
    let dev = ptxlab_common::cli::open_device(backend)?;
    let (prob, exact) = cli_problem::<T>(args)?;
    let grid = prob.grid;
    grid.check_sim_cells(backend, SIM_MAX_CELLS)?;
    if backend == Backend::Sim {
        let work = grid.cells().saturating_mul(opts.max_cycles);
        if work > SIM_MAX_WORK {
            return Err(Error::input(
                "--iters",
                format!(
                    "{} cells x {} cycles = {work} on the simulator; at most {SIM_MAX_WORK}: give \
                     fewer --iters or a smaller grid",
                    grid.cells(),
                    opts.max_cycles
                ),
            ));
        }
    }
    let hier = Hierarchy::new(grid, prob.h)?;
    println!(
        "poisson {} {} h={:e}: {}, {} smoother, until ||r||/||b|| < {:e} (at most {} cycles); \
         {} levels ({}){}",
        grid.label(),
        T::NAME,
        prob.h,
        opts.label(),
        ptxlab_common::cli::value_name(&opts.smoother),
        opts.tol,
        opts.max_cycles,
        hier.depth(),
        hier.describe(),
        if T::NAME == "f32" {
            "; cycles in f32, field and residual in f64 (mixed precision)"
        } else {
            ""
        }
    );
    let (b, p0, b_sq) = widen(&prob);
    let mut rows = Vec::new();
    let field = match &dev {
        None => {
            let (p, r) = super::cpu::solve::<T>(&hier, opts, &b, &p0, b_sq)?;
            print_report(
                &format!("CPU rayon ({} threads)", rayon::current_num_threads()),
                &r,
                opts.tol,
            );
            p
        }
        Some(dev) => {
            let t = Instant::now();
            let mut s = MgDevice::<T>::new(dev, &hier, opts, &b, &p0, b_sq)?;
            s.warm_up(&p0)?;
            let setup = t.elapsed().as_secs_f64() * 1e3;
            let r = s.solve(&p0)?;
            print_report(&format!("{} on {}", opts.label(), dev.name()), &r, opts.tol);
            let p = s.field()?;
            let true_rel = (s.true_residual_sq()? / b_sq.max(f64::MIN_POSITIVE)).sqrt();
            // The row as the bench writes it: the solve to the tolerance,
            // the precision of its cycles and field.
            let mut row = ptxlab_common::cli::timed_row(
                "poisson-mg",
                &format!("{} to {:e}", opts.label(), opts.tol),
                if dev.is_sim() { "sim" } else { "gpu" },
                &grid.label(),
                if T::NAME == "f32" {
                    "f32 cycles, f64 field"
                } else {
                    T::NAME
                },
                &ptxlab_common::runtime::Timing::from_samples(vec![r.ms]),
                None,
            );
            row.first_ms = Some(setup);
            row.rel_err = Some(true_rel);
            row.note = format!("{} cycles", r.cycles);
            if !r.converged {
                row.status = ptxlab_common::report::Status::Failed(format!(
                    "not converged to {:e}: {:.2e}",
                    opts.tol, r.rel_residual
                ));
            }
            rows.push(row);
            println!(
                "  set-up (buffers, kernel load{}, one untimed cycle): {} ms; true ||b - lap p||/||b|| = {true_rel:.3e}",
                if opts.graph && dev.as_gpu().is_some() {
                    ", graph capture"
                } else {
                    ""
                },
                fmt_ms(setup)
            );
            if let Some(t) = s.cycle_timing(20)? {
                println!(
                    "  one cycle, graph replay timed with device events: {} ms (min {}, max {})",
                    fmt_ms(t.median_ms),
                    fmt_ms(t.min_ms),
                    fmt_ms(t.max_ms)
                );
            }
            p
        }
    };
    if let Some(e) = &exact {
        let err = field
            .iter()
            .zip(e)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        println!(
            "  max |p - p*| = {err:.3e} (discretisation error of the manufactured problem is about {:.3e})",
            0.822 * prob.h * prob.h
        );
    }
    if let Some(out) = &args.out {
        let v: Vec<T> = field.iter().map(|&x| T::from_f64(x)).collect();
        write_field(out, grid, &v)?;
    }
    Ok(rows)
}
