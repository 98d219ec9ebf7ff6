//! `ptxlab poisson --method spectral`, and the simulator check of the
//! spectral kernels.

use super::{
    Boundary, CPU_MAX_SIDE, SpectralDevice, SpectralElement, floor_bytes, manufactured_neumann,
    rel_error_interior, solve_bytes, solve_cpu,
};
use crate::args::Args;
use crate::cpu::{cpu_residual_sq, interior_norm_sq};
use crate::input::{cli_problem, write_field};
use crate::problem::Problem;
use crate::types::{Element, Grid};
use ptxlab_common::cli::Precision;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::{Row, fmt_ms};
use ptxlab_common::runtime::Device;

/// Most cells of a spectral solve on the simulator.
pub const SIM_MAX_CELLS: usize = 1 << 18;
/// `ptxlab poisson --method spectral`: checks the arguments, solves (on
/// the GPU, the simulator or the CPU), prints the time, the relative
/// residual, the error against the CPU f64 solve (sides up to 1025) or the
/// manufactured solution, and the bytes per solve against the memory floor.
/// Returns the solve's row (what `--json` prints).
pub fn cli(args: &Args) -> Result<Vec<Row>> {
    for (flag, given) in [
        ("--gpus", args.gpus.requested()),
        ("--tol", args.tol.is_some()),
        ("--iters", args.iters.is_some()),
    ] {
        if given {
            return Err(Error::input(
                flag,
                "--method spectral is a direct solve on one device (exact up to rounding, no \
                 iterations or tolerance); leave this option out",
            ));
        }
    }
    let reps = args.mg.reps;
    ptxlab_common::cli::check_iters("--reps", reps, 1)?;
    let row = match args.precision {
        Precision::F32 => typed::<f32>(args, reps),
        Precision::F64 => typed::<f64>(args, reps),
    }?;
    Ok(vec![row])
}

/// The problem of the arguments: [`cli_problem`], or for Neumann without
/// `--b` the manufactured Neumann problem.
fn problem<T: Element>(args: &Args, boundary: Boundary) -> Result<(Problem<T>, Option<Vec<f64>>)> {
    if boundary == Boundary::Dirichlet || args.b.is_some() {
        return cli_problem::<T>(args);
    }
    for (flag, given) in [("--h", args.h.is_some()), ("--p0", args.p0.is_some())] {
        if given {
            return Err(Error::input(
                flag,
                "the manufactured Neumann problem (no --b) fixes h = 1 / (max(nx, ny) - 1) and a \
                 zero boundary derivative; give --b to choose h and p0",
            ));
        }
    }
    let grid = match args.size {
        Some(g) => Grid::new(g.nx, g.ny)?,
        None => Grid::new(2000, 2000)?,
    };
    ptxlab_common::cli::check_host_arrays("grid (--size)", grid.cells(), 8, 8)?;
    let (m, exact) = manufactured_neumann(grid);
    let conv = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
    Ok((
        Problem::new(grid, m.h, conv(&m.b), conv(&m.p0))?,
        Some(exact),
    ))
}

fn typed<T: SpectralElement>(args: &Args, reps: usize) -> Result<Row> {
    let boundary = args.mg.boundary;
    let backend = args.backend;
    let (prob, exact) = problem::<T>(args, boundary)?;
    let grid = prob.grid;
    grid.check_sim_cells(backend, SIM_MAX_CELLS)?;
    let wide = |v: &[T]| v.iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
    let (b, p0) = (wide(&prob.b), wide(&prob.p0));
    println!(
        "poisson --method spectral {} {} h={:e}, {} boundary ({} both axes, direct)",
        grid.label(),
        T::NAME,
        prob.h,
        boundary.name(),
        boundary.transform()
    );
    let small = grid.nx.max(grid.ny) <= 1025;
    let dev = ptxlab_common::cli::open_device(backend)?;
    // The bench's rows of direct solves are poisson-mg's (its report pairs
    // them with every tolerance of the grid).
    let mut row = Row::new(
        "poisson-mg",
        &format!("spectral ({}, direct)", boundary.transform()),
        &ptxlab_common::cli::value_name(&backend),
        &grid.label(),
        T::NAME,
    );
    let (p, who): (Vec<f64>, String) = match &dev {
        None => {
            super::check_problem(&prob, boundary)?;
            let t = std::time::Instant::now();
            let p = solve_cpu(grid, prob.h, &b, &p0, boundary)?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            row.first_ms = Some(ms);
            row.note = "one CPU solve by dense f64 transforms".into();
            println!(
                "CPU dense f64 transforms: {} ms (one solve, up to {CPU_MAX_SIDE} per side)",
                fmt_ms(ms)
            );
            (p, "CPU".into())
        }
        Some(dev) => {
            let first = std::time::Instant::now();
            let mut s = SpectralDevice::<T>::new(dev, &prob, boundary)?;
            let p = s.solve()?;
            row.first_ms = Some(first.elapsed().as_secs_f64() * 1e3);
            let t = s.time(2, reps)?;
            let bytes = solve_bytes(grid, std::mem::size_of::<T>());
            let floor = floor_bytes(grid, std::mem::size_of::<T>());
            let gbs = bytes / (t.median_ms * 1e-3) / 1e9;
            println!(
                "spectral ({}, direct) on {}: median {} ms (min {}, max {}, {} solves after 2 \
                 warm-up), 3 passes, blocks of {} threads",
                boundary.transform(),
                dev.name(),
                fmt_ms(t.median_ms),
                fmt_ms(t.min_ms),
                fmt_ms(t.max_ms),
                t.reps,
                s.threads().map(|t| t.to_string()).join("/")
            );
            let copy = if dev.is_sim() {
                None
            } else {
                ptxlab_vector::copy_bandwidth(dev, 1 << 30, 10)
                    .ok()
                    .map(|(_, g)| g)
            };
            println!(
                "  bytes per solve {:.3} GB ({gbs:.0} GB/s); any solve moves at least {:.3} GB \
                 (read b, write p){}",
                bytes / 1e9,
                floor / 1e9,
                match copy {
                    Some(c) => format!(
                        "; at the copy rate {c:.0} GB/s the passes need {} ms: {:.0}% of the \
                         memory floor reached",
                        fmt_ms(bytes / (c * 1e9) * 1e3),
                        100.0 * (bytes / (c * 1e9) * 1e3) / t.median_ms
                    ),
                    None => String::new(),
                }
            );
            row.throughput = Some(gbs);
            row.unit = "GB/s (bytes of the 3 passes / time)".into();
            row.pct_of_ceiling = copy.map(|c| 100.0 * gbs / c);
            row.note = format!(
                "median of {} (device events) after 2 warm-up solves; 3 passes, {:.3} GB per \
                 solve",
                t.reps,
                bytes / 1e9
            );
            row.timing = Some(t);
            (wide(&p), dev.name().to_string())
        }
    };
    let b_sq = interior_norm_sq(&b, grid);
    let res = cpu_residual_sq(&p, &b, grid, prob.h).sqrt();
    let rel = if b_sq > 0.0 { res / b_sq.sqrt() } else { res };
    row.rel_err = Some(rel);
    println!(
        "{who}: ||b - lap_h p|| / ||b|| = {rel:.3e} (in f64, of the {} field)",
        T::NAME
    );
    if dev.is_some() && small {
        let r = solve_cpu(grid, prob.h, &b, &p0, boundary)?;
        println!(
            "  relative error against the CPU f64 direct solve: {:.3e} (interior, by norm)",
            rel_error_interior(&p, &r, grid)
        );
    }
    if let Some(e) = &exact {
        let err = (1..grid.ny - 1)
            .flat_map(|y| (1..grid.nx - 1).map(move |x| y * grid.nx + x))
            .map(|i| (p[i] - e[i]).abs())
            .fold(0.0, f64::max);
        println!(
            "  max |p - p*| = {err:.3e} over the interior (the manufactured problem's \
             discretisation error is O(h^2): about {:.3e})",
            0.822 * prob.h * prob.h
        );
    }
    if let Some(out) = &args.out {
        let field: Vec<T> = p.iter().map(|&v| T::from_f64(v)).collect();
        write_field(out, grid, &field)?;
    }
    Ok(row)
}

/// A problem with a known discrete solution: a smooth `p*` with non-zero
/// boundary values (Dirichlet) or derivatives (Neumann), `b = lap_h p*`.
/// Returns `(b, p0, p*)` in f64; for Neumann `p*` has zero interior mean
/// (the gauge) and its ghost cells are `p_inner + h g`.
pub fn exact_problem(grid: Grid, h: f64, boundary: Boundary) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (nx, ny) = (grid.nx, grid.ny);
    let f = |x: usize, y: usize| -> f64 {
        let (u, v) = (x as f64 / nx as f64, y as f64 / ny as f64);
        (3.1 * u + 0.4).sin() * (2.3 * v - 0.2).cos() + 0.5 * u * v + 0.25
    };
    let mut p = vec![0.0; grid.cells()];
    for y in 0..ny {
        for x in 0..nx {
            p[y * nx + x] = f(x, y);
        }
    }
    let mut p0 = vec![0.0; grid.cells()];
    if boundary == Boundary::Neumann {
        // Zero interior mean, then g from the ghost cells.
        let m = (1..ny - 1)
            .flat_map(|y| (1..nx - 1).map(move |x| y * nx + x))
            .map(|i| p[i])
            .sum::<f64>()
            / ((nx - 2) * (ny - 2)) as f64;
        p.iter_mut().for_each(|v| *v -= m);
        for y in 1..ny - 1 {
            for (g, inner) in [(y * nx, y * nx + 1), (y * nx + nx - 1, y * nx + nx - 2)] {
                p0[g] = (p[g] - p[inner]) / h;
            }
        }
        for x in 1..nx - 1 {
            for (g, inner) in [(x, nx + x), ((ny - 1) * nx + x, (ny - 2) * nx + x)] {
                p0[g] = (p[g] - p[inner]) / h;
            }
        }
        // Recompute the ghosts from the rounded g, so p* is exact.
        for y in 1..ny - 1 {
            p[y * nx] = p[y * nx + 1] + h * p0[y * nx];
            p[y * nx + nx - 1] = p[y * nx + nx - 2] + h * p0[y * nx + nx - 1];
        }
        for x in 1..nx - 1 {
            p[x] = p[nx + x] + h * p0[x];
            p[(ny - 1) * nx + x] = p[(ny - 2) * nx + x] + h * p0[(ny - 1) * nx + x];
        }
        for (c, d) in [
            (0, nx + 1),
            (nx - 1, 2 * nx - 2),
            ((ny - 1) * nx, (ny - 2) * nx + 1),
            (ny * nx - 1, (ny - 1) * nx - 2),
        ] {
            p[c] = p[d];
        }
    } else {
        for y in 0..ny {
            for x in 0..nx {
                if x == 0 || y == 0 || x == nx - 1 || y == ny - 1 {
                    p0[y * nx + x] = p[y * nx + x];
                }
            }
        }
    }
    let mut b = vec![0.0; grid.cells()];
    let inv_h2 = 1.0 / (h * h);
    for y in 1..ny - 1 {
        for x in 1..nx - 1 {
            let i = y * nx + x;
            b[i] = (p[i - 1] + p[i + 1] + p[i - nx] + p[i + nx] - 4.0 * p[i]) * inv_h2;
        }
    }
    (b, p0, p)
}

/// Relative error (interior, by norm) of the device solve of
/// [`exact_problem`] on `grid` in `T` against its `p*` and against
/// [`solve_cpu`]; fails when either exceeds `tol`.
pub fn check_case<T: SpectralElement>(
    dev: &Device,
    grid: Grid,
    boundary: Boundary,
    tol: f64,
) -> Result<(f64, f64)> {
    let h = super::super::types::default_h(grid);
    let (b, p0, exact) = exact_problem(grid, h, boundary);
    let conv = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
    let prob = Problem::new(grid, h, conv(&b), conv(&p0))?;
    let mut s = SpectralDevice::<T>::new(dev, &prob, boundary)?;
    let p: Vec<f64> = s.solve()?.iter().map(|x| x.to_f64()).collect();
    // The reference from the inputs as T holds them.
    let wide = |v: &[T]| v.iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
    let r = solve_cpu(grid, h, &wide(&prob.b), &wide(&prob.p0), boundary)?;
    if let Some(i) = p.iter().position(|v| !v.is_finite()) {
        return Err(Error::Verification {
            what: format!("spectral {} {} {}", boundary.name(), grid.label(), T::NAME),
            detail: format!(
                "cell (row {}, column {}) is {} (not written, or overflowed)",
                i / grid.nx,
                i % grid.nx,
                p[i]
            ),
        });
    }
    let (e_exact, e_cpu) = (
        rel_error_interior(&p, &exact, grid),
        rel_error_interior(&p, &r, grid),
    );
    // Boundary cells (corners aside) must match the reference's too.
    let mut e_edge: f64 = 0.0;
    for y in 0..grid.ny {
        for x in 0..grid.nx {
            let corner = (x == 0 || x == grid.nx - 1) && (y == 0 || y == grid.ny - 1);
            let edge = x == 0 || y == 0 || x == grid.nx - 1 || y == grid.ny - 1;
            if edge && !corner {
                let i = y * grid.nx + x;
                e_edge = e_edge.max((p[i] - r[i]).abs() / (1.0 + r[i].abs()));
            }
        }
    }
    if !(e_exact <= tol && e_cpu <= tol && e_edge <= tol) {
        return Err(Error::Verification {
            what: format!("spectral {} {} {}", boundary.name(), grid.label(), T::NAME),
            detail: format!(
                "relative error {e_exact:.2e} against p*, {e_cpu:.2e} against the CPU f64 \
                 solve, {e_edge:.2e} on the boundary cells; at most {tol:.0e}"
            ),
        });
    }
    Ok((e_exact, e_cpu))
}

/// The relative error a solve in `T` of a side-`n` problem should stay
/// under: the transforms' rounding grows like `eps log n`, the division
/// amplifies it by the condition number of `lap_h` (`~ n^2`) only in the
/// smooth modes, where the transforms are accurate; `2e-3` (f32) and
/// `1e-10` (f64) cover the test sizes with a wide margin.
pub fn tolerance<T: Element>() -> f64 {
    if std::mem::size_of::<T>() == 4 {
        2e-3
    } else {
        1e-10
    }
}

/// Every spectral kernel on the simulator against the CPU f64 solve and the
/// exact discrete solution: Dirichlet and Neumann, f32 and f64, sizes whose
/// FFT lengths have factors 2, 3, 4 and a prime above 7.
pub fn sim_check() -> Result<()> {
    let dev = Device::sim();
    // Both f64 builds of every pass: 24x15 Dirichlet has a direct pass
    // along x (FFT length 23: wide rows), 13x19 Neumann along y (17: wide
    // columns); the others are narrow throughout.
    for (nx, ny) in [(13, 9), (24, 15), (13, 19)] {
        let grid = Grid::new(nx, ny)?;
        for boundary in [Boundary::Dirichlet, Boundary::Neumann] {
            check_case::<f32>(&dev, grid, boundary, tolerance::<f32>())?;
            check_case::<f64>(&dev, grid, boundary, tolerance::<f64>())?;
        }
    }
    Ok(())
}
