//! The spectral Poisson solver (`ptxlab poisson --method spectral`): on the
//! simulator, odd grids whose FFT lengths have large prime factors, f32 and
//! f64, Dirichlet with non-zero boundary values and Neumann with non-zero
//! boundary derivatives, against the exact discrete solution and the CPU
//! f64 direct solve (outputs start poisoned); the CPU solve against
//! multigrid; bad input refused with errors that name it. GPU tests skip
//! without a driver.

use ptxlab::runtime::Device;
use ptxlab::runtime::testing::gpu_or_skip;
use ptxlab::workloads::poisson::spectral::{
    self as sp, Boundary, SpectralDevice, check_case, exact_problem, factors, solve_cpu, tolerance,
};
use ptxlab::workloads::poisson::{self as ps, Args, Grid, Problem, SolveMethod};

fn err_of<T: std::fmt::Debug>(r: ptxlab::Result<T>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn factors_multiply_back_and_merge_twos_and_threes() {
    for n in 1..2000usize {
        let f = factors(n);
        assert_eq!(f.iter().map(|&x| x as usize).product::<usize>(), n, "{n}");
    }
    assert_eq!(factors(4095), vec![5, 7, 9, 13]);
    assert_eq!(factors(27), vec![3, 9]);
    assert_eq!(factors(81 * 5), vec![5, 9, 9]);
    assert_eq!(factors(8), vec![8]);
    assert_eq!(factors(32), vec![4, 8]);
    assert_eq!(factors(4096), vec![8, 8, 8, 8]);
    assert_eq!(factors(1024 * 7 * 11), vec![2, 7, 8, 8, 8, 11]);
    assert_eq!(factors(8191), vec![8191]);
    assert!(factors(1).is_empty());
}

#[test]
fn cpu_direct_solve_is_exact_for_both_boundaries() {
    for (nx, ny) in [(11, 7), (20, 33)] {
        let grid = Grid::new(nx, ny).unwrap();
        let h = ps::default_h(grid);
        for boundary in [Boundary::Dirichlet, Boundary::Neumann] {
            let (b, p0, exact) = exact_problem(grid, h, boundary);
            let p = solve_cpu(grid, h, &b, &p0, boundary).unwrap();
            let e = sp::rel_error_interior(&p, &exact, grid);
            assert!(e < 1e-12, "{boundary:?} {nx}x{ny}: {e:e}");
            // The boundary cells too (corners aside).
            for y in [0, ny - 1] {
                for x in 1..nx - 1 {
                    let i = y * nx + x;
                    assert!((p[i] - exact[i]).abs() < 1e-10, "{boundary:?} cell {i}");
                }
            }
        }
    }
}

#[test]
fn cpu_direct_solve_agrees_with_multigrid() {
    let grid = Grid::new(33, 27).unwrap();
    let (p0, b) = ps::random_inputs(grid, 5);
    let h = ps::default_h(grid);
    let p = solve_cpu(grid, h, &b, &p0, Boundary::Dirichlet).unwrap();
    let prob = Problem::new(grid, h, b.clone(), p0.clone()).unwrap();
    let opts = ps::mg::MgOptions {
        tol: 1e-11,
        max_cycles: 60,
        graph: false,
        ..ps::mg::MgOptions::default()
    };
    let (q, rep) = ps::mg::check::solve_cpu(&prob, &opts).unwrap();
    assert!(rep.converged, "multigrid did not converge");
    let e = sp::rel_error_interior(&p, &q, grid);
    assert!(e < 1e-7, "spectral vs multigrid: {e:e}");
    let r = ps::cpu_residual_sq(&p, &b, grid, h).sqrt() / ps::interior_norm_sq(&b, grid).sqrt();
    assert!(r < 1e-12, "residual {r:e}");
}

#[test]
fn simulator_matches_exact_and_cpu_on_prime_heavy_grids() {
    let dev = Device::sim();
    // FFT lengths: 202 = 2 * 101, 156 = 4 * 3 * 13 (Dirichlet); 201 = 3 *
    // 67, 155 = 5 * 31 (Neumann); 60 = 4 * 3 * 5, 66 = 2 * 3 * 11; 59, 65;
    // 56 = 8 * 7, 71 (Dirichlet); 55 = 5 * 11, 70 = 2 * 5 * 7 (Neumann);
    // 57 = 3 * 19, 44 (Dirichlet), 56, 43 (Neumann): an even number of
    // interior columns; 36 = 4 * 9, 27 = 3 * 9 (Dirichlet), 35, 26
    // (Neumann): radix-9 passes.
    for (nx, ny) in [(203, 157), (61, 67), (57, 72), (58, 45), (37, 28)] {
        let grid = Grid::new(nx, ny).unwrap();
        for boundary in [Boundary::Dirichlet, Boundary::Neumann] {
            let (e, c) = check_case::<f64>(&dev, grid, boundary, tolerance::<f64>())
                .unwrap_or_else(|e| panic!("{e}"));
            println!("{nx}x{ny} {boundary:?} f64: {e:.1e} vs p*, {c:.1e} vs CPU");
            let (e, c) = check_case::<f32>(&dev, grid, boundary, tolerance::<f32>())
                .unwrap_or_else(|e| panic!("{e}"));
            println!("{nx}x{ny} {boundary:?} f32: {e:.1e} vs p*, {c:.1e} vs CPU");
        }
    }
}

#[test]
fn simulator_solves_the_cli_problem_twice_the_same() {
    // The device state is reusable: two solves of one problem give the same
    // field, bit for bit, and the manufactured Neumann problem is solved to
    // second order.
    let dev = Device::sim();
    let grid = Grid::new(34, 21).unwrap();
    let (m, exact) = sp::manufactured_neumann(grid);
    let mut s = SpectralDevice::<f64>::new(&dev, &m, Boundary::Neumann).unwrap();
    let a = s.solve().unwrap();
    let b = s.solve().unwrap();
    assert_eq!(a, b);
    let e = sp::rel_error_interior(&a, &exact, grid);
    assert!(e < 10.0 * m.h * m.h, "manufactured Neumann: {e:e}");
}

/// The Dirichlet solve with and without the stash (the second line of a
/// pair kept in shared memory, or sent through global memory as on a device
/// without room for it): the same field, bit for bit, on `dev`.
fn stash_and_global_agree<T: sp::SpectralElement + PartialEq + std::fmt::Debug>(
    dev: &Device,
    grid: Grid,
) {
    let h = ps::default_h(grid);
    let (b, p0, _) = exact_problem(grid, h, Boundary::Dirichlet);
    let conv = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
    let prob = Problem::new(grid, h, conv(&b), conv(&p0)).unwrap();
    let stashed = SpectralDevice::<T>::new(dev, &prob, Boundary::Dirichlet)
        .unwrap()
        .solve()
        .unwrap();
    let global = SpectralDevice::<T>::new(dev, &prob, Boundary::Dirichlet)
        .unwrap()
        .without_stash()
        .unwrap()
        .solve()
        .unwrap();
    assert!(stashed.iter().all(|x| x.to_f64().is_finite()));
    assert_eq!(stashed, global, "{} {}", grid.label(), T::NAME);
}

#[test]
fn simulator_stash_and_global_paths_agree() {
    // FFT lengths 60 = 4 * 3 * 5 and 66 = 2 * 3 * 11; an odd number of
    // interior rows and columns, so the last pair has one line.
    let dev = Device::sim();
    let grid = Grid::new(61, 67).unwrap();
    stash_and_global_agree::<f64>(&dev, grid);
    stash_and_global_agree::<f32>(&dev, grid);
}

/// The f64 solve with the narrow kernels and with the wide ones (blocks
/// of 384 threads at up to 168 registers, or 512 at 128), for both
/// boundaries: the same field to rounding (the forward post-processing's
/// running sum splits a line into one segment per thread, so the order of
/// its additions follows the block size), and each within the solver's
/// tolerance of the exact solution.
fn narrow_and_wide_agree(dev: &Device, grid: Grid) {
    let h = ps::default_h(grid);
    for boundary in [Boundary::Dirichlet, Boundary::Neumann] {
        let (b, p0, _) = exact_problem(grid, h, boundary);
        let prob = Problem::new(grid, h, b, p0).unwrap();
        let solve = |narrow: bool| {
            let mut s = SpectralDevice::<f64>::new(dev, &prob, boundary)
                .unwrap()
                .with_narrow(narrow)
                .unwrap();
            assert_eq!(s.threads(), [if narrow { 384 } else { 512 }; 3]);
            s.solve().unwrap()
        };
        let (narrow, wide) = (solve(true), solve(false));
        assert!(narrow.iter().all(|x| x.is_finite()));
        let d = narrow
            .iter()
            .zip(&wide)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f64>();
        let w = wide.iter().map(|b| b * b).sum::<f64>();
        let rel = (d / w).sqrt();
        assert!(
            rel < 1e-13,
            "{} {boundary:?}: narrow and wide differ by {rel:e} (relative, by norm)",
            grid.label()
        );
    }
}

#[test]
fn simulator_narrow_and_wide_kernels_agree_and_are_picked_per_grid() {
    let dev = Device::sim();
    // FFT lengths 60 = 4 * 3 * 5 and 66 = 2 * 3 * 11 (Dirichlet), 59 and
    // 65 (Neumann: 59 is prime, a direct pass).
    let grid = Grid::new(61, 67).unwrap();
    narrow_and_wide_agree(&dev, grid);
    let pick = |nx: usize, ny: usize, boundary: Boundary| {
        let grid = Grid::new(nx, ny).unwrap();
        let (b, p0, _) = exact_problem(grid, ps::default_h(grid), boundary);
        let prob = Problem::new(grid, ps::default_h(grid), b, p0).unwrap();
        SpectralDevice::<f64>::new(&dev, &prob, boundary)
            .unwrap()
            .narrow_passes()
    };
    // Per pass (rows forward, columns, rows inverse), by the axis its lines
    // run along: butterflies only and, for the row passes, lines of at most
    // 2048 are narrow.
    assert_eq!(pick(61, 67, Boundary::Dirichlet), [true; 3]);
    // A direct pass along x (59 is prime): the row passes are wide.
    assert_eq!(pick(61, 67, Boundary::Neumann), [false, true, false]);
    // ... along y: the column pass is wide.
    assert_eq!(pick(67, 61, Boundary::Neumann), [true, false, true]);
    // Butterflies only but rows longer than 2048 (FFT length 2304 = 2^8 *
    // 9): the row passes are wide; columns that long stay narrow.
    assert_eq!(pick(2305, 5, Boundary::Dirichlet), [false, true, false]);
    assert_eq!(pick(5, 2305, Boundary::Dirichlet), [true; 3]);
    assert_eq!(pick(2049, 5, Boundary::Dirichlet), [true; 3]);
    let grid = Grid::new(9, 7).unwrap();
    let (b, p0, _) = exact_problem(grid, ps::default_h(grid), Boundary::Dirichlet);
    let conv = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
    let prob = Problem::new(grid, ps::default_h(grid), conv(&b), conv(&p0)).unwrap();
    let e = err_of(
        SpectralDevice::<f32>::new(&dev, &prob, Boundary::Dirichlet)
            .unwrap()
            .with_narrow(true)
            .map(|_| ()),
    );
    assert!(e.contains("narrow") && e.contains("f64"), "{e}");
}

#[test]
fn bad_input_is_refused_with_errors_that_name_it() {
    let dev = Device::sim();
    assert!(err_of(Grid::new(2, 9)).contains("at least 3"));
    let grid = Grid::new(9, 7).unwrap();
    let mut b = vec![0.0f64; grid.cells()];
    b[2 * 9 + 4] = f64::NAN;
    let e = err_of(Problem::new(grid, 0.1, b, vec![0.0; grid.cells()]));
    assert!(e.contains("row 2, column 4"), "{e}");
    // Neumann: b must be compatible.
    let b = vec![1.0f64; grid.cells()];
    let prob = Problem::new(grid, 0.1, b, vec![0.0; grid.cells()]).unwrap();
    let e = err_of(SpectralDevice::<f64>::new(&dev, &prob, Boundary::Neumann).map(|_| ()));
    assert!(e.contains("compatibility") && e.contains("mean"), "{e}");
    // The Dirichlet problem with the same b is fine.
    SpectralDevice::<f64>::new(&dev, &prob, Boundary::Dirichlet).unwrap();
}

#[test]
fn cli_refuses_wrong_shapes_and_iterative_options() {
    let dir = std::env::temp_dir().join(format!("ptxlab-spectral-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (bp, pp) = (dir.join("b.npy"), dir.join("p0.npy"));
    ptxlab::npy::write_2d(&bp, 7, 9, &vec![0.5f64; 63]).unwrap();
    ptxlab::npy::write_2d(&pp, 9, 7, &vec![0.0f64; 63]).unwrap();
    let mut args = Args {
        backend: ptxlab::Backend::Sim,
        precision: ptxlab::cli::Precision::F64,
        b: Some(bp.clone()),
        p0: Some(pp.clone()),
        ..Args::default()
    };
    args.mg.method = SolveMethod::Spectral;
    let e = err_of(ps::cli(&args));
    assert!(e.contains("--p0") && e.contains("shape"), "{e}");
    args.p0 = None;
    args.tol = Some(1e-8);
    let e = err_of(ps::cli(&args));
    assert!(e.contains("--tol") && e.contains("direct"), "{e}");
    args.tol = None;
    // And the good case runs, writing the field.
    let out = dir.join("p.npy");
    args.out = Some(out.clone());
    ps::cli(&args).unwrap();
    let (r, c, p) = ptxlab::npy::read_2d::<f64>(&out, "float64").unwrap();
    assert_eq!((r, c), (7, 9));
    assert!(p.iter().all(|v| v.is_finite()));
    // --boundary belongs to the spectral method.
    args.mg.method = SolveMethod::Multigrid;
    args.mg.boundary = Boundary::Neumann;
    let e = err_of(ps::cli(&args));
    assert!(e.contains("--boundary"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn gpu_matches_exact_and_cpu() {
    let Some(dev) = gpu_or_skip() else { return };
    for (nx, ny) in [(203, 157), (61, 67), (1025, 1025)] {
        let grid = Grid::new(nx, ny).unwrap();
        for boundary in [Boundary::Dirichlet, Boundary::Neumann] {
            check_case::<f64>(&dev, grid, boundary, tolerance::<f64>())
                .unwrap_or_else(|e| panic!("{e}"));
            check_case::<f32>(&dev, grid, boundary, tolerance::<f32>())
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn gpu_stash_and_global_paths_agree() {
    let Some(dev) = gpu_or_skip() else { return };
    for (nx, ny) in [(203, 157), (1025, 1023)] {
        let grid = Grid::new(nx, ny).unwrap();
        stash_and_global_agree::<f64>(&dev, grid);
        stash_and_global_agree::<f32>(&dev, grid);
    }
}

#[test]
fn gpu_narrow_and_wide_kernels_agree() {
    let Some(dev) = gpu_or_skip() else { return };
    for (nx, ny) in [(61, 67), (1025, 1023), (2049, 2049)] {
        narrow_and_wide_agree(&dev, Grid::new(nx, ny).unwrap());
    }
}

#[test]
fn gpu_4096_f64_is_exact() {
    let Some(dev) = gpu_or_skip() else { return };
    let grid = Grid::new(4096, 4096).unwrap();
    let (b, p0) = ps::mg::check::bench_problem(grid);
    let h = ps::default_h(grid);
    let prob = Problem::new(grid, h, b.clone(), p0).unwrap();
    let mut s = SpectralDevice::<f64>::new(&dev, &prob, Boundary::Dirichlet).unwrap();
    let p = s.solve().unwrap();
    let r = ps::cpu_residual_sq(&p, &b, grid, h).sqrt() / ps::interior_norm_sq(&b, grid).sqrt();
    assert!(r < 1e-9, "relative residual {r:e}");
}
