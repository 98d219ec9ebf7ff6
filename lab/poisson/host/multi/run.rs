//! `ptxlab poisson --gpus N`: one device over the whole grid, then N slabs,
//! checked bit for bit.

use super::super::args::Args;
use super::super::input::{cli_problem, write_field};
use super::super::problem::{SolveOptions, SolveReport};
use super::super::solve::solve_device;
use super::super::types::{Grid, Rung};
use super::decomp::Decomp;
use super::element::{SlabElement, temporal_error};
use super::team::Team;
use ptxlab_common::Backend;
use ptxlab_common::cli::{OneOrAll, Precision};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::fmt_ms;
use ptxlab_common::runtime::{Device, ModuleKey};

/// Most cells of a grid on simulated devices (as one simulated device).
pub const SIM_MAX_CELLS: usize = crate::SIM_MAX_CELLS;
/// Most simulated cell updates of one run on simulated devices.
pub const SIM_MAX_WORK: usize = crate::SIM_MAX_WORK;

pub(super) fn sim_limits(grid: Grid, work: usize) -> Result<()> {
    if grid.cells() > SIM_MAX_CELLS || work > SIM_MAX_WORK {
        return Err(Error::input(
            "grid/--iters",
            format!(
                "{} cells ({}) and {work} cell updates on simulated devices; at most \
                 {SIM_MAX_CELLS} cells and {SIM_MAX_WORK} updates (one to two minutes on two \
                 cores): use a smaller grid or fewer sweeps",
                grid.cells(),
                grid.label()
            ),
        ));
    }
    Ok(())
}

pub(super) fn rungs_of(variant: OneOrAll<Rung>) -> Result<Vec<Rung>> {
    let rungs = match variant {
        OneOrAll::All => vec![Rung::Naive, Rung::Tiled, Rung::Register],
        OneOrAll::One(r) => vec![r],
    };
    if rungs.contains(&Rung::Temporal) {
        return Err(temporal_error());
    }
    Ok(rungs)
}

/// `--gpus` runs on devices: `--backend gpu` (NCCL) or `sim`, not `cpu`.
pub(super) fn require_devices(backend: Backend) -> Result<()> {
    if backend == Backend::Cpu {
        return Err(Error::input(
            "--gpus",
            "needs --backend gpu (N GPUs through NCCL) or --backend sim (N simulated devices); \
             --backend cpu has no devices",
        ));
    }
    Ok(())
}

fn per_sweep(r: &SolveReport) -> String {
    if r.iterations == 0 {
        return String::new();
    }
    format!(", {:.4} ms/sweep", r.ms / r.iterations as f64)
}

/// `ptxlab poisson --gpus N [--no-overlap]`: solves on one device over the
/// whole grid, then on N slabs, prints both (ms per sweep) and checks that
/// the N-device field equals the single-device field bit for bit.
pub fn cli(args: &Args) -> Result<()> {
    let Some(n) = args.gpus.count else {
        return Err(Error::input(
            "--no-overlap",
            "applies to the multi-device run; add --gpus N",
        ));
    };
    let backend = args.backend;
    require_devices(backend)?;
    match args.precision {
        Precision::F32 => cli_typed::<f32>(args, n, backend),
        Precision::F64 => cli_typed::<f64>(args, n, backend),
    }
}

/// What the ranks of a job compare before they work ([`Team::agree`]): the
/// grid, precision, spacing, a checksum of `b` and `p0`, and the options.
pub(super) fn describe_problem<T: crate::types::Element>(
    prob: &crate::problem::Problem<T>,
    options: &impl std::fmt::Debug,
) -> String {
    let hash = ptxlab_common::distributed::checksum(
        prob.b.iter().chain(&prob.p0).map(|v| v.to_f64().to_bits()),
    );
    format!(
        "{} {} h={:e} b,p0 checksum {hash:016x} {options:?}",
        prob.grid.label(),
        T::NAME,
        prob.h
    )
}

pub(super) fn reference_device(team: &Team) -> Result<Device> {
    match team.members.first().and_then(|m| m.dev.as_gpu()) {
        Some(g) => Ok(Device::gpu(g.context().ordinal())?),
        None => Ok(Device::sim()),
    }
}

fn cli_typed<T: SlabElement>(args: &Args, n: usize, backend: Backend) -> Result<()> {
    let rungs = rungs_of(args.variant)?;
    let opts = SolveOptions {
        rung: rungs[0],
        depth: 1,
        tol: args.tol,
        max_iters: args.iters.unwrap_or(match (args.tol, backend) {
            (None, _) => 100,
            (Some(_), Backend::Sim) => 5_000,
            (Some(_), _) => 100_000,
        }),
        check_every: args.check_every,
    };
    opts.validate()?;
    // The devices first (a missing driver, GPU or NCCL is reported before any
    // input is made), then the problem.
    let mut team = Team::open(n, backend)?;
    let (prob, _) = cli_problem::<T>(args)?;
    team.agree(&describe_problem(
        &prob,
        &(&opts, rungs.as_slice(), args.gpus.no_overlap),
    ))?;
    Decomp::new(prob.grid, team.world_size())?;
    if backend == Backend::Sim {
        // The single-device run and the slab run, each sweep on every rung.
        let work = prob
            .grid
            .cells()
            .saturating_mul(opts.max_iters.saturating_add(3))
            .saturating_mul(2 * rungs.len());
        sim_limits(prob.grid, work)?;
    }
    let lead = team.is_lead();
    let say = |s: String| {
        if lead {
            println!("{s}");
        }
    };
    let overlap = !args.gpus.no_overlap;
    let grid = prob.grid;
    let decomp = Decomp::new(grid, team.world_size())?;
    say(format!(
        "poisson {} {} on {} device(s) ({}), h={:e}, {}",
        grid.label(),
        T::NAME,
        team.world_size(),
        team.members[0].dev.name(),
        prob.h,
        opts.stop_label()
    ));
    say(format!(
        "slabs (owned rows): {}; halo exchange: {}, {}",
        (0..decomp.world())
            .map(|r| {
                let o = decomp.owned(r);
                format!("rank {r} {}..{}", o.start, o.end)
            })
            .collect::<Vec<_>>()
            .join(", "),
        team.describe(),
        if overlap {
            "overlapped with the interior update"
        } else {
            "after the whole slab (no overlap)"
        }
    ));
    let refdev = reference_device(&team)?;
    let mut last = None;
    for rung in rungs {
        let o = SolveOptions { rung, ..opts };
        if let Some(g) = refdev.as_gpu() {
            // Load the module now, so the timed solve does not include the JIT.
            g.function(
                &ptxlab_common::modules::KERNELS,
                ModuleKey::PRECISE,
                rung.entry::<T>(),
            )?;
            g.function(
                &ptxlab_common::modules::KERNELS,
                ModuleKey::PRECISE,
                <T as kernels_gpu::poisson::poisson_residual::Built>::ENTRY,
            )?;
        }
        let (p1, r1) = solve_device(&refdev, &prob, &o)?;
        let fmt = |r: &SolveReport| {
            format!(
                "{} sweeps, ||r||/||b|| = {:.6e} (||r|| = {:.6e}), {} ms{}{}",
                r.iterations,
                r.rel_residual,
                r.residual_norm,
                fmt_ms(r.ms),
                per_sweep(r),
                match (o.tol, r.converged) {
                    (Some(_), true) => ", converged",
                    (Some(_), false) => ", NOT converged",
                    (None, _) => "",
                }
            )
        };
        say(format!(
            "{} {}, 1 device (whole grid): {}",
            rung.label(1),
            T::NAME,
            fmt(&r1)
        ));
        let mut placed = team.place(&prob, rung)?;
        placed.set_overlap(overlap);
        let rn = placed.solve(&o)?;
        say(format!(
            "{} {}, {} slabs: {}",
            rung.label(1),
            T::NAME,
            decomp.world(),
            fmt(&rn)
        ));
        if rn.iterations != r1.iterations {
            return Err(Error::Verification {
                what: format!("poisson --gpus {n} {} {}", rung.name(), grid.label()),
                detail: format!(
                    "{} sweeps on {n} devices, {} on one: the residuals crossed the tolerance at \
                     different checks",
                    rn.iterations, r1.iterations
                ),
            });
        }
        let c = placed.compare(&p1)?;
        if c.differ > 0 {
            return Err(Error::Verification {
                what: format!("poisson --gpus {n} {} {}", rung.name(), grid.label()),
                detail: format!(
                    "{} of {} cells differ from the single-device field after {} sweeps{}",
                    c.differ,
                    c.cells,
                    rn.iterations,
                    c.first
                        .map(|(x, y)| format!(" (first here at x={x}, y={y})"))
                        .unwrap_or_default()
                ),
            });
        }
        let rdiff = ((rn.residual_norm - r1.residual_norm) / r1.residual_norm).abs();
        if !(rdiff <= 1e-9 || r1.residual_norm == rn.residual_norm) {
            return Err(Error::Verification {
                what: format!("poisson --gpus {n} residual {}", grid.label()),
                detail: format!(
                    "||r|| {:e} on {n} devices, {:e} on one: relative difference {rdiff:.2e}, \
                     tolerance 1e-9",
                    rn.residual_norm, r1.residual_norm
                ),
            });
        }
        say(format!(
            "PASS bit-identical to the single-device field: all {} cells after {} sweeps; \
             ||r|| differs by {rdiff:.1e} (summation order); speedup {:.2}x",
            c.cells,
            rn.iterations,
            r1.ms / rn.ms
        ));
        if args.out.is_some() {
            last = Some(placed.gather()?);
        }
    }
    if let (Some(out), Some(Some(field))) = (&args.out, last) {
        write_field(out, grid, &field)?;
    }
    Ok(())
}
