//! 2D diffusion (explicit 5-point scheme writing the Laplacian and the
//! updated field): typed launchers, CPU baselines, checks, the race lesson,
//! the benchmark and the `ptxlab diffusion` CLI.
//!
//! Grid: row-major `ny x nx` f32, `x` = column. Boundary cells are fixed.
// Checks are written `!(err < tol)` on purpose: a NaN error must fail them.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use kernels_gpu::diffusion as k;
use ptxlab_common::bench_ctx::BenchCtx;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::report::{Row, Status, fmt_ms};
use ptxlab_common::rng::{rel_err_norm, uniform_vec};
use ptxlab_common::runtime::{Buffer, Device, LaunchConfig, SimOptions, Timing};
use ptxlab_device::sim::Fault;
use ptxlab_poisson::{self as poisson, Grid};
use rayon::prelude::*;

/// Variants: the material's racy in-place kernel and the two race-free ones
/// (`--variant`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Variant {
    /// The material's 8x8 in-place kernel (racy; the lesson).
    Inplace,
    /// Race-free ping-pong, one step per launch.
    Pingpong,
    /// Race-free, `TEMPORAL_STEPS` (8) steps per launch (temporal blocking).
    Temporal,
}

impl Variant {
    /// Every variant, in ladder order.
    pub const ALL: [Variant; 3] = [Variant::Inplace, Variant::Pingpong, Variant::Temporal];
    /// Label for reports.
    pub fn label(&self) -> &'static str {
        match self {
            Variant::Inplace => "material 8x8 in place (racy)",
            Variant::Pingpong => "ping-pong, 1 step/launch",
            Variant::Temporal => "temporal blocking, 8 steps/launch",
        }
    }
    /// The PTX entry of the variant's kernel (for the resource report).
    pub fn entry(&self) -> &'static str {
        use kernels_gpu::diffusion as kd;
        use ptxlab_runtime::entry;
        match self {
            Variant::Inplace => entry!(kd::diffusion_inplace_f32),
            Variant::Pingpong => entry!(kd::diffusion_pingpong_f32),
            Variant::Temporal => entry!(kd::diffusion_temporal_f32),
        }
    }
}

/// Most cells of a grid (the kernels' indices are 32-bit).
pub const MAX_CELLS: usize = i32::MAX as usize;
/// Most rows of a grid: the launch grid's y dimension is at most 65535
/// blocks of 8 rows.
pub const MAX_ROWS: usize = 65535 * 8;

/// `nx * ny`, or an input error when it overflows.
fn cells(nx: usize, ny: usize) -> Result<usize> {
    nx.checked_mul(ny).ok_or_else(|| {
        Error::input(
            "diffusion grid",
            format!("{nx}x{ny} overflows the number of cells; at most {MAX_CELLS} cells"),
        )
    })
}

/// An input error unless each of the step's three buffers (`u`, `lap`,
/// `u_new`: their lengths) holds the `nx x ny` grid.
fn check_buffers(lens: [usize; 3], nx: usize, ny: usize) -> Result<()> {
    let n = cells(nx, ny)?;
    if lens.iter().any(|&l| l != n) {
        return Err(Error::input(
            "diffusion",
            format!(
                "buffers of {}, {}, {} for a {nx}x{ny} grid",
                lens[0], lens[1], lens[2]
            ),
        ));
    }
    Ok(())
}

/// Checks the grid and the coefficient. `alpha > 0.25` makes the explicit
/// 5-point scheme unstable (errors grow by up to `|1 - 8 alpha|` per step),
/// so it is refused with the stable limit named.
pub fn check_params(nx: usize, ny: usize, alpha: f32) -> Result<()> {
    if nx < 3 || ny < 3 {
        return Err(Error::input(
            "diffusion grid",
            format!(
                "{nx}x{ny}: both dimensions must be at least 3 (boundary cells plus one interior cell)"
            ),
        ));
    }
    if nx.checked_mul(ny).is_none_or(|c| c > MAX_CELLS) || ny > MAX_ROWS {
        return Err(Error::input(
            "diffusion grid",
            format!(
                "{nx}x{ny} is too large: at most {MAX_CELLS} cells and {MAX_ROWS} rows (32-bit \
                 indices, launch grid y <= 65535 blocks of 8 rows); use a smaller --size"
            ),
        ));
    }
    if !alpha.is_finite() || alpha < 0.0 {
        return Err(Error::input(
            "alpha",
            format!("{alpha}: the coefficient must be finite and >= 0"),
        ));
    }
    if alpha > k::ALPHA_MAX_STABLE {
        return Err(Error::input(
            "alpha",
            format!(
                "{alpha} makes the explicit 5-point scheme unstable; the stable limit is alpha <= {} \
                 (dt * D / dx^2 <= 1/4)",
                k::ALPHA_MAX_STABLE
            ),
        ));
    }
    Ok(())
}

/// The three fields of a run on a device.
pub struct Fields {
    /// Current field.
    pub u: Buffer<f32>,
    /// Next field (ping-pong partner).
    pub u_new: Buffer<f32>,
    /// Laplacian of the last step.
    pub lap: Buffer<f32>,
    /// Columns.
    pub nx: usize,
    /// Rows.
    pub ny: usize,
}

impl Fields {
    /// Uploads `u0`; the other two buffers are poisoned with NaN.
    pub fn new(dev: &Device, u0: &[f32], nx: usize, ny: usize) -> Result<Self> {
        let n = cells(nx, ny)?;
        if u0.len() != n {
            return Err(Error::input(
                "diffusion field",
                format!("{} values for a {nx}x{ny} grid; need {n}", u0.len()),
            ));
        }
        Ok(Self {
            u: dev.upload(u0)?,
            u_new: dev.alloc_filled(n, f32::NAN)?,
            lap: dev.alloc_filled(n, f32::NAN)?,
            nx,
            ny,
        })
    }
}

/// One ping-pong step `u -> (lap, u_new)`.
pub fn step_pingpong(
    dev: &Device,
    u: &Buffer<f32>,
    lap: &mut Buffer<f32>,
    u_new: &mut Buffer<f32>,
    nx: usize,
    ny: usize,
    alpha: f32,
) -> Result<()> {
    check_buffers([u.len(), lap.len(), u_new.len()], nx, ny)?;
    let cfg = LaunchConfig::for_2d(nx, ny, k::PINGPONG_BLOCK.0, k::PINGPONG_BLOCK.1)?;
    launch!(
        dev,
        cfg,
        diffusion::diffusion_pingpong_f32(u, lap, u_new, nx as u32, ny as u32, alpha)
    )
}

/// `depth` steps (1..=16) in one launch `u -> (lap, u_new)`, with the
/// launch shape of the Poisson solver's temporally blocked rung (the two
/// share their kernel body).
#[allow(clippy::too_many_arguments)] // buffers, grid, coefficient, depth
pub fn pass_temporal(
    dev: &Device,
    u: &Buffer<f32>,
    lap: &mut Buffer<f32>,
    u_new: &mut Buffer<f32>,
    nx: usize,
    ny: usize,
    alpha: f32,
    depth: u32,
) -> Result<()> {
    check_buffers([u.len(), lap.len(), u_new.len()], nx, ny)?;
    let cfg = poisson::sweep_config::<f32>(poisson::Rung::Temporal, Grid::new(nx, ny)?, depth)?;
    launch!(
        dev,
        cfg,
        diffusion::diffusion_temporal_f32(u, lap, u_new, nx as u32, ny as u32, alpha, depth)
    )
}

/// One step of the material's racy in-place kernel with 8x8 blocks (or
/// `block` x `block`, for the lesson's block-shape comparison).
pub fn step_inplace(
    dev: &Device,
    u: &mut Buffer<f32>,
    lap: &mut Buffer<f32>,
    nx: usize,
    ny: usize,
    alpha: f32,
    block: u32,
) -> Result<()> {
    let n = cells(nx, ny)?;
    if u.len() != n || lap.len() != n {
        return Err(Error::input(
            "diffusion",
            format!("buffers of {}, {} for a {nx}x{ny} grid", u.len(), lap.len()),
        ));
    }
    if block == 0 || block > k::INPLACE_TILE {
        return Err(Error::input(
            "in-place block",
            format!("{block}; allowed 1..={}", k::INPLACE_TILE),
        ));
    }
    let cfg = LaunchConfig::for_2d(nx, ny, block, block)?.with_shared(k::inplace_shared_bytes());
    launch!(
        dev,
        cfg,
        diffusion::diffusion_inplace_f32(u, lap, nx as u32, ny as u32, alpha)
    )
}

/// Runs `iters` steps of `variant`; afterwards `f.u` holds the field and
/// `f.lap` the Laplacian of the last step.
pub fn run(dev: &Device, variant: Variant, f: &mut Fields, iters: usize, alpha: f32) -> Result<()> {
    check_params(f.nx, f.ny, alpha)?;
    let (nx, ny) = (f.nx, f.ny);
    match variant {
        Variant::Inplace => {
            for _ in 0..iters {
                step_inplace(dev, &mut f.u, &mut f.lap, nx, ny, alpha, k::INPLACE_TILE)?;
            }
        }
        Variant::Pingpong => {
            for _ in 0..iters {
                step_pingpong(dev, &f.u, &mut f.lap, &mut f.u_new, nx, ny, alpha)?;
                std::mem::swap(&mut f.u, &mut f.u_new);
            }
        }
        Variant::Temporal => {
            // Passes of TEMPORAL_STEPS steps; the last one takes the remainder.
            let mut left = iters;
            while left > 0 {
                let d = left.min(k::TEMPORAL_STEPS);
                pass_temporal(dev, &f.u, &mut f.lap, &mut f.u_new, nx, ny, alpha, d as u32)?;
                std::mem::swap(&mut f.u, &mut f.u_new);
                left -= d;
            }
        }
    }
    Ok(())
}

fn cpu_row(u: &[f32], lap: &mut [f32], un: &mut [f32], y: usize, nx: usize, ny: usize, alpha: f32) {
    for x in 0..nx {
        let i = y * nx + x;
        if x == 0 || y == 0 || x + 1 == nx || y + 1 == ny {
            lap[x] = 0.0;
            un[x] = u[i];
        } else {
            let (l, v) = k::step(u[i], u[i + 1], u[i - 1], u[i - nx], u[i + nx], alpha);
            lap[x] = l;
            un[x] = v;
        }
    }
}

/// CPU baseline, one thread: one step `u -> (lap, u_new)`, the same f32
/// expression as the kernels.
pub fn cpu_step(u: &[f32], lap: &mut [f32], u_new: &mut [f32], nx: usize, ny: usize, alpha: f32) {
    for (y, (lr, ur)) in lap.chunks_mut(nx).zip(u_new.chunks_mut(nx)).enumerate() {
        cpu_row(u, lr, ur, y, nx, ny, alpha);
    }
}

/// CPU baseline, rayon: rows in parallel.
pub fn cpu_step_rayon(
    u: &[f32],
    lap: &mut [f32],
    u_new: &mut [f32],
    nx: usize,
    ny: usize,
    alpha: f32,
) {
    lap.par_chunks_mut(nx)
        .zip(u_new.par_chunks_mut(nx))
        .enumerate()
        .for_each(|(y, (lr, ur))| cpu_row(u, lr, ur, y, nx, ny, alpha));
}

/// `iters` CPU steps from `u0`: `(u, lap)` (one thread).
pub fn cpu_run(u0: &[f32], nx: usize, ny: usize, iters: usize, alpha: f32) -> (Vec<f32>, Vec<f32>) {
    let mut u = u0.to_vec();
    let mut un = vec![0f32; u.len()];
    let mut lap = vec![0f32; u.len()];
    for _ in 0..iters {
        cpu_step(&u, &mut lap, &mut un, nx, ny, alpha);
        std::mem::swap(&mut u, &mut un);
    }
    (u, lap)
}

/// f64 reference: `iters` steps in f64 from `u0`.
pub fn reference_f64(u0: &[f32], nx: usize, ny: usize, iters: usize, alpha: f32) -> Vec<f64> {
    let a = alpha as f64;
    let mut u: Vec<f64> = u0.iter().map(|v| *v as f64).collect();
    let mut un = u.clone();
    for _ in 0..iters {
        for y in 1..ny - 1 {
            for x in 1..nx - 1 {
                let i = y * nx + x;
                let lap = u[i + 1] + u[i - 1] + u[i - nx] + u[i + nx] - 4.0 * u[i];
                un[i] = u[i] + a * lap;
            }
        }
        std::mem::swap(&mut u, &mut un);
    }
    u
}

/// Initial field: uniform in [0, 1) (never all zero).
pub fn initial(nx: usize, ny: usize, seed: u64) -> Vec<f32> {
    uniform_vec(seed, nx * ny, 0.0, 1.0)
        .into_iter()
        .map(|v| v as f32)
        .collect()
}

/// Result of [`check`].
#[derive(Debug, Clone)]
pub struct Check {
    /// Cells of `u` whose value differs from the CPU f32 run by more than
    /// `1e-5` (relative to 1): the CPU run uses the kernels' own expression.
    pub mismatches: usize,
    /// Largest absolute difference from the CPU f32 run (`u` and `lap`).
    pub max_abs: f64,
    /// Relative error of `u` against the f64 reference.
    pub rel_err: f64,
}

/// Runs `iters` steps of `variant` on a random field and compares `u` and
/// `lap` with the CPU (f32, same expression) and `u` with f64.
pub fn check(
    dev: &Device,
    variant: Variant,
    nx: usize,
    ny: usize,
    iters: usize,
    alpha: f32,
    seed: u64,
) -> Result<Check> {
    check_params(nx, ny, alpha)?;
    if iters == 0 {
        return Err(Error::input(
            "diffusion check",
            "0 steps: the check compares the Laplacian of the last step, so it needs at least 1",
        ));
    }
    let u0 = initial(nx, ny, seed);
    let mut f = Fields::new(dev, &u0, nx, ny)?;
    run(dev, variant, &mut f, iters, alpha)?;
    let (gu, gl) = (dev.download(&f.u)?, dev.download(&f.lap)?);
    let (cu, cl) = cpu_run(&u0, nx, ny, iters, alpha);
    let mut mismatches = 0;
    let mut max_abs = 0f64;
    for (g, c) in gu.iter().zip(&cu).chain(gl.iter().zip(&cl)) {
        let d = (*g as f64 - *c as f64).abs();
        if !(d <= 1e-5) {
            mismatches += 1;
        }
        max_abs = if d.is_nan() { f64::NAN } else { max_abs.max(d) };
    }
    let g64: Vec<f64> = gu.iter().map(|v| *v as f64).collect();
    Ok(Check {
        mismatches,
        max_abs,
        rel_err: rel_err_norm(&g64, &reference_f64(&u0, nx, ny, iters, alpha)),
    })
}

/// Every diffusion kernel on the simulator at small odd sizes. The race-free
/// variants must match the CPU; the in-place kernel must be reported by the
/// race detector (a block reads the halo cells its neighbour overwrites),
/// and with detection off it only has to run (its result is
/// schedule-dependent; `tests/diffusion.rs` shows the race).
pub fn sim_check() -> Result<()> {
    let dev = Device::sim();
    for (variant, iters) in [(Variant::Pingpong, 3), (Variant::Temporal, 5)] {
        let c = check(&dev, variant, 37, 29, iters, 0.2, 17)?;
        if c.mismatches != 0 || !(c.rel_err < 1e-5) {
            return Err(Error::Verification {
                what: format!(
                    "diffusion {} 37x29, {iters} steps (simulator)",
                    variant.label()
                ),
                detail: format!(
                    "{} values differ from the CPU (max {:.2e}), rel err {:.2e}",
                    c.mismatches, c.max_abs, c.rel_err
                ),
            });
        }
    }
    if let Err(e) = inplace_race(&dev, 37, 29) {
        return Err(Error::Verification {
            what: "diffusion in-place (simulator)".into(),
            detail: format!("the race detector should report the in-place kernel: {e}"),
        });
    }
    let quiet = Device::sim_with(SimOptions {
        race_check: false,
        ..SimOptions::default()
    });
    let c = check(&quiet, Variant::Inplace, 37, 29, 1, 0.2, 17)?;
    if !c.rel_err.is_finite() {
        return Err(Error::Verification {
            what: "diffusion in-place (simulator, race detection off)".into(),
            detail: "non-finite values".into(),
        });
    }
    Ok(())
}

/// Runs one step of the material's in-place kernel on `dev` (a simulator
/// with race detection on) and returns the race it reports: a write by
/// one block to a cell that another block reads as its halo. An error when
/// there is no such report.
pub fn inplace_race(dev: &Device, nx: usize, ny: usize) -> Result<ptxlab_device::sim::SimError> {
    match check(dev, Variant::Inplace, nx, ny, 1, 0.2, 17) {
        Err(Error::Runtime(ptxlab_common::runtime::Error::Sim(e)))
            if matches!(&e.fault, Fault::Race(r) if r.space == "global memory"
                && r.first.block != r.second.block) =>
        {
            Ok(e)
        }
        Err(e) => Err(e),
        Ok(c) => Err(Error::Verification {
            what: "diffusion in-place (simulator)".into(),
            detail: format!(
                "no race was reported (race detection {}; max difference from the race-free \
                 result {:.2e})",
                if dev.sim_options().race_check {
                    "on"
                } else {
                    "off"
                },
                c.max_abs
            ),
        }),
    }
}

/// Benchmark: ms per iteration at 2000^2 (quick: fewer iterations), after a
/// check at an odd size; CPU baselines per iteration.
pub fn bench(ctx: &BenchCtx) -> Result<Vec<Row>> {
    let (nx, ny) = (2000usize, 2000usize);
    let alpha = 0.2f32;
    let size = format!("{nx}^2");
    let mut rows = Vec::new();
    let u0 = initial(nx, ny, 1);
    let cpu_iters = if ctx.quick { 2 } else { 5 };
    let u = u0.clone();
    let mut un = vec![0f32; nx * ny];
    let mut lap = vec![0f32; nx * ny];
    let t1 = Timing::host(0, cpu_iters, || {
        cpu_step(&u, &mut lap, &mut un, nx, ny, alpha)
    });
    let tr = Timing::host(1, cpu_iters, || {
        cpu_step_rayon(&u, &mut lap, &mut un, nx, ny, alpha)
    });
    for (name, t) in [
        ("CPU 1 thread, per iteration", &t1),
        ("CPU rayon, per iteration", &tr),
    ] {
        let mut r = Row::new("diffusion", name, "cpu", &size, "f32");
        r.throughput = Some((nx * ny) as f64 / (t.median_ms * 1e-3) / 1e9);
        r.unit = "GCells/s".into();
        r.speedup = Some(t1.median_ms / t.median_ms);
        r.timing = Some(t.clone());
        rows.push(r);
    }
    let Some(dev) = ctx.gpu() else {
        rows.push(ptxlab_common::bench_ctx::skipped_gpu("diffusion", ctx));
        return Ok(rows);
    };
    let arch = dev.as_gpu().map(|g| g.info().arch()).unwrap_or_default();
    let iters = if ctx.quick { 400 } else { 10_000 };
    for variant in Variant::ALL {
        let mut row = Row::new(
            "diffusion",
            &format!("{}, per iteration ({iters} it.)", variant.label()),
            "gpu",
            &size,
            "f32",
        );
        if let Some(res) = ptxlab_common::modules::resource(variant.entry(), &arch, false) {
            row.registers = Some(res.registers);
            row.spills = Some(res.spill_stores + res.spill_loads);
        }
        let c = check(dev, variant, 517, 263, 9, alpha, 5)?;
        row.rel_err = Some(c.rel_err);
        if variant != Variant::Inplace && (c.mismatches != 0 || !(c.rel_err < 1e-5)) {
            row.status = Status::Failed(format!(
                "{} values differ from the CPU (max {:.2e})",
                c.mismatches, c.max_abs
            ));
            rows.push(row);
            continue;
        }
        let mut f = Fields::new(dev, &u0, nx, ny)?;
        let t0 = std::time::Instant::now();
        run(dev, variant, &mut f, 4, alpha)?;
        dev.synchronize()?;
        row.first_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
        let t = dev.time(1, 3, |_| run(dev, variant, &mut f, iters, alpha))?;
        let per = Timing {
            median_ms: t.median_ms / iters as f64,
            min_ms: t.min_ms / iters as f64,
            max_ms: t.max_ms / iters as f64,
            reps: t.reps,
        };
        row.throughput = Some((nx * ny) as f64 / (per.median_ms * 1e-3) / 1e9);
        row.unit = "GCells/s".into();
        row.speedup = Some(t1.median_ms / per.median_ms);
        row.timing = Some(per);
        // The in-place row stays: its time is the material's, its rel_err
        // (from the check above) shows how far the race moved the result.
        rows.push(row);
    }
    Ok(rows)
}

/// `ptxlab diffusion` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Grid: `N` (N x N) or `NXxNY` (NX columns by NY rows).
    #[arg(long, default_value = "2000", value_parser = ptxlab_common::cli::GridSize::parse, allow_negative_numbers = true)]
    pub size: ptxlab_common::cli::GridSize,
    /// Time steps.
    #[arg(long, default_value_t = 1000, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub iters: usize,
    /// Diffusion coefficient `dt D / dx^2` (stable for <= 0.25).
    #[arg(long, default_value_t = 0.2, allow_negative_numbers = true)]
    pub alpha: f32,
    /// The kernel (ping-pong, temporal blocking, or the material's racy
    /// in-place one), or all of them.
    #[arg(long, value_parser = ptxlab_common::cli::OneOrAll::<Variant>::parser(), default_value = "all")]
    pub variant: ptxlab_common::cli::OneOrAll<Variant>,
    /// gpu, sim or cpu.
    #[arg(long, value_enum, default_value_t = ptxlab_common::Backend::Gpu)]
    pub backend: ptxlab_common::Backend,
    /// Timed repetitions of the --iters steps (1..=10000; one on the
    /// simulator).
    #[arg(long, default_value_t = ptxlab_common::cli::DEFAULT_REPS, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
    /// Write the final field of the last kernel run here (.npy, 2-D float32,
    /// ny x nx): --iters steps from the initial field.
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// Print the measured rows as JSON on stdout (the row objects of
    /// `results.json`), and nothing else there.
    #[arg(long)]
    pub json: bool,
}

/// Most cell updates (cells x steps) of a simulated run (one to two minutes
/// on two cores, with race detection).
pub const SIM_MAX_WORK: usize = 1 << 28;

/// Parses `N` or `NXxNY` (the `--size` of every grid command,
/// [`ptxlab_common::cli::GridSize`]) into `(nx, ny)`.
pub fn parse_size(s: &str) -> Result<(usize, usize)> {
    ptxlab_common::cli::GridSize::parse(s)
        .map(|g| (g.nx, g.ny))
        .map_err(|e| Error::input("--size", e))
}

/// `ptxlab diffusion`: the rows it measured.
pub fn cli(args: &Args) -> Result<Vec<Row>> {
    let backend = args.backend;
    let (nx, ny) = (args.size.nx, args.size.ny);
    check_params(nx, ny, args.alpha)?;
    let variants = args.variant.rungs();
    ptxlab_common::cli::check_iters("--iters", args.iters, 1)?;
    ptxlab_common::cli::check_reps(args.reps)?;
    // u, u_new, lap on the host (and on the simulator, which is host memory).
    ptxlab_common::cli::check_host_arrays("--size", nx * ny, 4, 6)?;
    if backend == ptxlab_common::Backend::Sim {
        let work = (nx * ny)
            .saturating_mul(args.iters)
            .saturating_mul(variants.len());
        if work > SIM_MAX_WORK {
            return Err(Error::input(
                "--size/--iters",
                format!(
                    "{nx}x{ny} cells x {} steps x {} kernel(s) = {work} cell updates, too many \
                     for the simulator: at most {SIM_MAX_WORK} (e.g. --size 64 --iters 50), or \
                     use --backend cpu",
                    args.iters,
                    variants.len()
                ),
            ));
        }
    }
    // Before the field is made: a missing driver is reported at once.
    let dev = ptxlab_common::cli::open_device(backend)?;
    let u0 = initial(nx, ny, 42);
    let check_iters = args.iters.min(20);
    let size = format!("{nx}x{ny}");
    let gcells = |t: &Timing| (nx * ny * args.iters) as f64 / (t.median_ms * 1e-3) / 1e9;
    // One row per kernel: the time per step, as `ptxlab bench` records it.
    let row = |variant: &str, backend: &str, t: &Timing| {
        let per = Timing {
            median_ms: t.median_ms / args.iters as f64,
            min_ms: t.min_ms / args.iters as f64,
            max_ms: t.max_ms / args.iters as f64,
            reps: t.reps,
        };
        ptxlab_common::cli::timed_row(
            "diffusion",
            &format!("{variant}, per iteration ({} it.)", args.iters),
            backend,
            &size,
            "f32",
            &per,
            Some((gcells(t), "GCells/s")),
        )
    };
    let mut rows = Vec::new();
    let Some(dev) = dev else {
        let mut u = u0.clone();
        let mut un = vec![0f32; u.len()];
        let mut lap = vec![0f32; u.len()];
        let t = Timing::host(0, args.reps, || {
            // Each repetition from the initial field: `u` ends as --out says.
            u.copy_from_slice(&u0);
            for _ in 0..args.iters {
                cpu_step_rayon(&u, &mut lap, &mut un, nx, ny, args.alpha);
                std::mem::swap(&mut u, &mut un);
            }
        });
        println!(
            "CPU rayon: {} ms per iteration ({} iterations)",
            fmt_ms(t.median_ms / args.iters.max(1) as f64),
            args.iters
        );
        rows.push(row("CPU rayon", "cpu", &t));
        if let Some(out) = &args.out {
            ptxlab_common::npy::write_2d(out, ny, nx, &u)?;
            println!("wrote {}", out.display());
        }
        return Ok(rows);
    };
    let backend_name = if dev.is_sim() { "sim" } else { "gpu" };
    let mut result = Vec::new();
    for variant in variants {
        // The lesson on the simulator: the race detector names the two
        // blocks and lines (on a grid of several blocks, at least 17 x 17,
        // so a block's halo is another block's cells); the kernel then runs
        // without it (its numbers are schedule-dependent, as on a GPU).
        let quiet;
        let dev = if variant == Variant::Inplace && dev.is_sim() && dev.sim_options().race_check {
            let e = inplace_race(&dev, nx.clamp(17, 257), ny.clamp(17, 131))?;
            println!(
                "RACE (the material's bug, found by the simulator's race detector): {e}\n\
                 running on with race detection off; the values below depend on the order \
                 of the blocks"
            );
            quiet = Device::sim_with(SimOptions {
                race_check: false,
                ..SimOptions::default()
            });
            &quiet
        } else {
            &dev
        };
        let c = check(
            dev,
            variant,
            nx.min(257),
            ny.min(131),
            check_iters,
            args.alpha,
            7,
        )?;
        if variant == Variant::Inplace {
            println!(
                "WARNING: the in-place kernel is racy; after {check_iters} steps it differs from the race-free result by up to {:.2e}",
                c.max_abs
            );
        } else if c.mismatches != 0 {
            return Err(Error::Verification {
                what: format!("diffusion {}", variant.label()),
                detail: format!(
                    "{} values differ from the CPU (max {:.2e})",
                    c.mismatches, c.max_abs
                ),
            });
        } else {
            println!(
                "PASS {} matches the CPU ({check_iters} steps, rel err vs f64 {:.1e})",
                variant.label(),
                c.rel_err
            );
        }
        let mut f = Fields::new(dev, &u0, nx, ny)?;
        let reps = if dev.is_sim() { 1 } else { args.reps };
        let t = dev.time(0, reps, |_| {
            run(dev, variant, &mut f, args.iters, args.alpha)
        })?;
        println!(
            "{} on {}: {} ms per iteration ({} iterations, {:.2} GCells/s)",
            variant.label(),
            dev.name(),
            fmt_ms(t.median_ms / args.iters.max(1) as f64),
            args.iters,
            gcells(&t)
        );
        let mut r = row(variant.label(), backend_name, &t);
        r.rel_err = Some(c.rel_err);
        rows.push(r);
        if args.out.is_some() {
            // The timed repetitions went on from each other's field: the
            // written field is one run of --iters steps from the start.
            if reps > 1 {
                f = Fields::new(dev, &u0, nx, ny)?;
                run(dev, variant, &mut f, args.iters, args.alpha)?;
            }
            result = dev.download(&f.u)?;
        }
    }
    if let Some(out) = &args.out {
        ptxlab_common::npy::write_2d(out, ny, nx, &result)?;
        println!("wrote {}", out.display());
    }
    Ok(rows)
}
