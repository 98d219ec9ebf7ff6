//! Problems and checks of the multigrid rung: the benchmark problem (the
//! same one the Python peers build), the manufactured solution and its
//! second-order error, every kernel on the simulator against the CPU solver,
//! and the Jacobi rung's predicted sweep count.

use super::super::cpu::interior_norm_sq;
use super::super::problem::{Problem, manufactured};
use super::super::types::{Element, Grid, default_h};
use super::compare::{check_field, history_difference, history_gap, history_tolerance};
use super::device::MgDevice;
use super::launch::MgElement;
use super::levels::{Cycle, Hierarchy, Method, MgOptions, Smoother};
use super::report::MgReport;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::rng::rel_err_norm;
use ptxlab_common::runtime::Device;

/// The benchmark problem on `grid`: `b` from the hash the Jacobi benchmark
/// and the peers use (`(i 40503 mod 1000) / 1000 - 0.5`, row-major index
/// `i`) on the interior, 0 on the boundary; zero Dirichlet values and a zero
/// start; `h = 1 / (max(nx, ny) - 1)`. Returns `(b, p0)`.
pub fn bench_problem(grid: Grid) -> (Vec<f64>, Vec<f64>) {
    let mut b = vec![0.0; grid.cells()];
    for y in 1..grid.ny - 1 {
        for x in 1..grid.nx - 1 {
            let i = y * grid.nx + x;
            b[i] = ((i as u64).wrapping_mul(40_503) % 1000) as f64 / 1000.0 - 0.5;
        }
    }
    (b, vec![0.0; grid.cells()])
}

/// A solve's inputs in f64: `(b, p0, ||b||^2 over the interior)`, from a
/// problem in `T` (widened exactly).
pub fn widen<T: Element>(prob: &Problem<T>) -> (Vec<f64>, Vec<f64>, f64) {
    let b: Vec<f64> = prob.b.iter().map(|v| v.to_f64()).collect();
    let p0: Vec<f64> = prob.p0.iter().map(|v| v.to_f64()).collect();
    let b_sq = interior_norm_sq(&b, prob.grid);
    (b, p0, b_sq)
}

/// Solves `prob` on `dev` (cycles in `T`); returns the field and report.
pub fn solve_device<T: MgElement>(
    dev: &Device,
    prob: &Problem<T>,
    opts: &MgOptions,
) -> Result<(Vec<f64>, MgReport)> {
    prob.validate()?;
    let hier = Hierarchy::new(prob.grid, prob.h)?;
    let (b, p0, b_sq) = widen(prob);
    let mut s = MgDevice::<T>::new(dev, &hier, opts, &b, &p0, b_sq)?;
    let r = s.solve(&p0)?;
    Ok((s.field()?, r))
}

/// Solves `prob` on the CPU (cycles in `T`).
pub fn solve_cpu<T: MgElement>(
    prob: &Problem<T>,
    opts: &MgOptions,
) -> Result<(Vec<f64>, MgReport)> {
    prob.validate()?;
    let hier = Hierarchy::new(prob.grid, prob.h)?;
    let (b, p0, b_sq) = widen(prob);
    super::cpu::solve::<T>(&hier, opts, &b, &p0, b_sq)
}

/// Max |p - p*| of a solve of the manufactured problem on `grid` (square
/// cells, `h = 1 / (max(nx, ny) - 1)`) to `tol`, on `dev` or (None) the CPU.
pub fn manufactured_error<T: MgElement>(
    dev: Option<&Device>,
    grid: Grid,
    opts: &MgOptions,
) -> Result<(f64, MgReport)> {
    let (m, exact) = manufactured(grid);
    let conv = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
    let prob = Problem::new(grid, m.h, conv(&m.b), conv(&m.p0))?;
    let (p, r) = match dev {
        Some(d) => solve_device::<T>(d, &prob, opts)?,
        None => solve_cpu::<T>(&prob, opts)?,
    };
    let err = p
        .iter()
        .zip(&exact)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    Ok((err, r))
}

/// The discretisation check: errors on `grid` and on the grid with half
/// the spacing (`2 (n - 1) + 1` points per axis), solved to 1e-10; the
/// ratio must be near 4 (second order). Returns `(coarse error, fine error)`.
pub fn second_order<T: MgElement>(
    dev: Option<&Device>,
    grid: Grid,
    opts: &MgOptions,
) -> Result<(f64, f64)> {
    let fine = Grid::new(2 * grid.nx - 1, 2 * grid.ny - 1)?;
    let o = MgOptions {
        tol: 1e-10,
        ..*opts
    };
    let (e1, r1) = manufactured_error::<T>(dev, grid, &o)?;
    let (e2, r2) = manufactured_error::<T>(dev, fine, &o)?;
    let ratio = e1 / e2;
    let h = default_h(grid);
    if !(r1.converged && r2.converged && (3.5..=4.5).contains(&ratio) && e1 < 1.0 * h * h) {
        return Err(Error::Verification {
            what: format!(
                "{} {} manufactured solution on {} and {}",
                opts.label(),
                T::NAME,
                grid.label(),
                fine.label()
            ),
            detail: format!(
                "max |p - p*| {e1:.3e} then {e2:.3e} (ratio {ratio:.2}, second order wants ~4 and an \
                 error below h^2 = {:.2e}); relative residuals {:.1e} and {:.1e}",
                h * h,
                r1.rel_residual,
                r2.rel_residual
            ),
        });
    }
    Ok((e1, e2))
}

/// Random problem for the simulator check: random `b` and `p0` (boundary
/// values included), spacing `h`, rounded to `T`.
fn random_problem<T: Element>(grid: Grid, seed: u64, h: f64) -> Result<Problem<T>> {
    let (p0, b) = super::super::check::random_inputs(grid, seed);
    let conv = |v: Vec<f64>| v.into_iter().map(T::from_f64).collect::<Vec<T>>();
    Problem::new(grid, h, conv(b), conv(p0))
}

/// The simulator or GPU against the CPU solver: the same iteration on
/// `prob`, fields compared by norm and the residual histories. Tolerances:
/// 1e-12 with f64 cycles; 1e-7 with f32 cycles, because PCG's dot products
/// (summed in another order) change the f64 residual in its last bits, which
/// can round the f32 right-hand side of the next cycle to the neighbouring
/// f32 value (6e-8 relative) in some cells.
pub fn compare_with_cpu<T: MgElement>(
    dev: &Device,
    prob: &Problem<T>,
    opts: &MgOptions,
) -> Result<f64> {
    let (pd, rd) = solve_device::<T>(dev, prob, opts)?;
    let (pc, rc) = solve_cpu::<T>(prob, opts)?;
    let tol = if std::mem::size_of::<T>() == 4 {
        1e-7
    } else {
        1e-12
    };
    let e = rel_err_norm(&pd, &pc);
    let hist = history_gap(&rd, &rc);
    if !(e <= tol && rd.cycles == rc.cycles && hist <= 1e-6) {
        return Err(Error::Verification {
            what: format!(
                "{} {} {} on {}",
                opts.label(),
                ptxlab_common::cli::value_name(&opts.smoother),
                T::NAME,
                dev.name()
            ),
            detail: format!(
                "field differs from the CPU solver by {e:.2e} (tolerance {tol:.0e}); {} cycles \
                 against {}; residual histories differ by {hist:.1e}",
                rd.cycles, rc.cycles
            ),
        });
    }
    Ok(e)
}

/// Every multigrid kernel on the simulator against the CPU solver, on
/// small odd and non-square grids (nested and non-nested coarsening):
/// multigrid V with both smoothers, with and without the coarse levels in
/// one block (which takes all the levels of these small grids), W, FMG and
/// PCG, f32 and f64 cycles.
pub fn sim_check() -> Result<()> {
    let dev = Device::sim();
    fn typed<T: MgElement>(dev: &Device) -> Result<()> {
        let base = MgOptions {
            tol: 1e-9,
            max_cycles: 2,
            graph: false,
            ..MgOptions::default()
        };
        let cases = [
            (
                (19, 14),
                MgOptions {
                    smoother: Smoother::RedBlack,
                    coarse_block: false,
                    ..base
                },
            ),
            (
                (19, 14),
                MgOptions {
                    cycle: Cycle::W,
                    pre: 1,
                    post: 1,
                    ..base
                },
            ),
            (
                (17, 21),
                MgOptions {
                    cycle: Cycle::Fmg,
                    max_cycles: 2,
                    ..base
                },
            ),
            (
                (18, 11),
                MgOptions {
                    method: Method::Pcg,
                    pre: 1,
                    post: 1,
                    coarse_block: false,
                    ..base
                },
            ),
            ((3, 3), base),
            // Rung 3's cycle (symmetric order, Gauss-Seidel, outer step) and
            // rung 4's (outer step): the field-on-the-fine-level rung is the
            // default of the others.
            (
                (19, 14),
                MgOptions {
                    omega: 1.0,
                    symmetric: true,
                    field_on_fine: false,
                    ..base
                },
            ),
            (
                (21, 12),
                MgOptions {
                    field_on_fine: false,
                    ..base
                },
            ),
            // The tile smoother and the restriction on two tiles per axis.
            (
                (66, 35),
                MgOptions {
                    coarse_block: false,
                    max_cycles: 1,
                    ..base
                },
            ),
        ];
        for (i, ((nx, ny), o)) in cases.iter().enumerate() {
            let grid = Grid::new(*nx, *ny)?;
            let prob = random_problem::<T>(grid, 40 + i as u64, 0.3)?;
            compare_with_cpu::<T>(dev, &prob, o)?;
        }
        Ok(())
    }
    typed::<f64>(&dev)?;
    typed::<f32>(&dev)?;
    // The spectral solver's kernels (the direct solve of the same problem).
    super::super::spectral::sim_check()?;
    team_check::<f64>()?;
    team_check::<f32>()
}

/// The multi-device path (`multi::mg`: row slabs, halo exchanges, the
/// coarse levels replicated) on two simulated devices against one: the
/// multigrid and PCG solves with the red-black smoother, and multigrid with
/// the tile smoother, on a grid whose two finest levels are split. The slab
/// kernels (restriction, prolongation, outer step and CG direction on a
/// slab) run only here and in
/// `tests/multi_gpu.rs`. The same cycle counts, histories and fields as
/// one device, judged as `ptxlab poisson --gpus` judges them
/// ([`super::compare`]): multigrid's field bit for bit, PCG's to round-off.
fn team_check<T: MgElement>() -> Result<()> {
    use super::super::multi::Team;
    let grid = Grid::new(37, 29)?;
    let h = 0.3;
    let (p0, b) = super::super::check::random_inputs(grid, 77);
    let hier = Hierarchy::new(grid, h)?;
    let b_sq = interior_norm_sq(&b, grid);
    let one = Device::sim();
    let cases = [
        (Method::Multigrid, Smoother::RedBlack),
        (Method::Pcg, Smoother::RedBlack),
        (Method::Multigrid, Smoother::Tile),
    ];
    for (method, smoother) in cases {
        let opts = super::super::multi::team_options(&MgOptions {
            method,
            smoother,
            tol: 1e-9,
            max_cycles: 3,
            graph: false,
            ..MgOptions::default()
        });
        let mut s = MgDevice::<T>::new(&one, &hier, &opts, &b, &p0, b_sq)?;
        let r1 = s.solve(&p0)?;
        let p1 = s.field()?;
        let mut team = Team::sim(2)?;
        let mut placed = team.place_mg::<T>(grid, h, &b, &p0, &opts, 4)?;
        let split = placed.split().describe();
        let r2 = placed.solve()?;
        let p2 = placed.gather()?.ok_or_else(|| Error::Verification {
            what: "multigrid on 2 simulated devices".into(),
            detail: "the field was not gathered".into(),
        })?;
        let what = format!(
            "{} {} on 2 simulated devices ({split}) against one, {}",
            opts.label(),
            T::NAME,
            grid.label()
        );
        let hist = history_difference(&what, &r2, &r1)?;
        let hist_tol = history_tolerance(method, std::mem::size_of::<T>());
        if hist > hist_tol {
            return Err(Error::Verification {
                what,
                detail: format!(
                    "the residual histories differ by {hist:.1e} (allowed {hist_tol:.0e})"
                ),
            });
        }
        check_field(&what, method, &p2, &p1)?;
    }
    Ok(())
}

/// Spectral radius of the Jacobi sweep on `grid`:
/// `(cos(pi / (nx - 1)) + cos(pi / (ny - 1))) / 2`.
pub fn jacobi_radius(grid: Grid) -> f64 {
    let pi = std::f64::consts::PI;
    0.5 * ((pi / (grid.nx - 1) as f64).cos() + (pi / (grid.ny - 1) as f64).cos())
}

/// Jacobi sweeps to reduce the residual by `tol` at the asymptotic rate:
/// `ln(tol) / ln(rho)`.
pub fn jacobi_sweeps(grid: Grid, tol: f64) -> f64 {
    tol.ln() / jacobi_radius(grid).ln()
}
