//! Poisson / Jacobi ladder: every rung against the CPU f64 reference on the
//! simulator (odd sizes, tiny grids, several temporal depths), the residual
//! reduction, manufactured-solution solves on the CPU and on the simulator,
//! hostile inputs (error text asserted), and the same checks on a GPU when
//! one is present.

use ptxlab::runtime::Device;
use ptxlab::workloads::poisson::{
    self as ps, Args, CheckCase, Element, Grid, Problem, Rung, SolveOptions,
};
use std::path::PathBuf;

/// Every rung after each count of `sweeps`; the temporal rung at each of
/// `depths`.
fn check_depths<T: Element>(
    dev: &Device,
    nx: usize,
    ny: usize,
    seed: u64,
    sweeps: &[usize],
    rungs: &[Rung],
    temporal_depths: &[u32],
) {
    let case = CheckCase::new::<T>(Grid::new(nx, ny).unwrap(), seed, sweeps);
    let tol = ps::tolerance::<T>();
    for &rung in rungs {
        let depths: &[u32] = if rung == Rung::Temporal {
            temporal_depths
        } else {
            &[1]
        };
        for &d in depths {
            let errs = ps::check_case::<T>(dev, rung, d, &case).unwrap();
            for (s, e) in errs {
                assert!(
                    e <= tol,
                    "{} {} {nx}x{ny} depth {d}: relative error {e:e} after {s} sweeps (tolerance {tol:e})",
                    rung.name(),
                    T::NAME
                );
            }
        }
    }
}

fn check_rungs<T: Element>(
    dev: &Device,
    nx: usize,
    ny: usize,
    seed: u64,
    sweeps: &[usize],
    rungs: &[Rung],
) {
    check_depths::<T>(dev, nx, ny, seed, sweeps, rungs, &[4]);
}

#[test]
fn sim_every_rung_37x29_f32() {
    check_rungs::<f32>(&Device::sim(), 37, 29, 1, &[1, 2, 37], &Rung::ALL);
}

#[test]
fn sim_every_rung_37x29_f64() {
    check_rungs::<f64>(&Device::sim(), 37, 29, 2, &[1, 2, 37], &Rung::ALL);
}

#[test]
fn sim_every_rung_64x48_f32() {
    check_rungs::<f32>(&Device::sim(), 64, 48, 3, &[1, 2, 37], &Rung::ALL);
}

#[test]
fn sim_every_rung_64x48_f64() {
    check_rungs::<f64>(&Device::sim(), 64, 48, 4, &[1, 2, 37], &Rung::ALL);
}

#[test]
fn sim_tiny_grids() {
    let dev = Device::sim();
    for (i, (nx, ny)) in [(3, 3), (4, 3), (3, 7), (5, 5), (33, 3)]
        .into_iter()
        .enumerate()
    {
        check_depths::<f32>(&dev, nx, ny, 10 + i as u64, &[1, 2, 5], &Rung::ALL, &[1, 3]);
        check_depths::<f64>(&dev, nx, ny, 20 + i as u64, &[1, 2, 5], &Rung::ALL, &[2]);
    }
}

/// Several block tiles of every rung on both axes, partial tiles at both
/// far edges: 250x131 is 8x17 tiles of 32x8 (naive, tiled), 8x5 register
/// strips of 32x32, and 3x3 temporal tiles of 128x64 at depth 8.
#[test]
fn sim_multi_block_every_rung() {
    let dev = Device::sim();
    check_depths::<f32>(&dev, 250, 131, 5, &[1, 2, 19], &Rung::ALL, &[1, 3, 8, 16]);
    check_depths::<f64>(&dev, 250, 131, 6, &[2, 5], &Rung::ALL, &[5]);
}

#[test]
fn sim_residual_matches_cpu() {
    let dev = Device::sim();
    for (nx, ny) in [(3, 3), (37, 29), (300, 7)] {
        let g = Grid::new(nx, ny).unwrap();
        ps::check_residual::<f32>(&dev, &CheckCase::new::<f32>(g, 7, &[1])).unwrap();
        ps::check_residual::<f64>(&dev, &CheckCase::new::<f64>(g, 8, &[1])).unwrap();
    }
}

#[test]
fn cpu_baselines_agree() {
    let g = Grid::new(41, 23).unwrap();
    let (p, b) = ps::random_inputs(g, 9);
    let k = 0.3;
    let want = ps::reference(&p, &b, g, k, 1);
    let mut s = vec![f64::NAN; g.cells()];
    ps::cpu_sweep(&p, &b, &mut s, g, k);
    let mut r = vec![f64::NAN; g.cells()];
    ps::cpu_sweep_rayon(&p, &b, &mut r, g, k);
    let mut n = vec![f64::NAN; g.cells()];
    ps::cpu_sweep_nd(&p, &b, &mut n, g, k).unwrap();
    assert_eq!(s, want);
    assert_eq!(r, want);
    assert_eq!(n, want);
    let r2 = ps::with_threads(2, || {
        let mut o = vec![f64::NAN; g.cells()];
        ps::cpu_sweep_rayon(&p, &b, &mut o, g, k);
        o
    })
    .unwrap();
    assert_eq!(r2, want);
}

fn max_err(p: &[f64], exact: &[f64]) -> f64 {
    p.iter()
        .zip(exact)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max)
}

/// The discretisation error of the manufactured problem on an n x n grid is
/// about (pi^2 / 12) h^2 = 0.82 h^2 (see `ps::manufactured`); we assert
/// max |p - p*| <= h^2, and second order: the error ratio between h and h/2
/// is within [3.5, 4.5].
#[test]
fn manufactured_solution_cpu_second_order() {
    let mut errs = Vec::new();
    for n in [17, 33] {
        let (prob, exact) = ps::manufactured(Grid::new(n, n).unwrap());
        let h = prob.h;
        let opts = SolveOptions {
            rung: Rung::Naive,
            depth: 1,
            tol: Some(1e-10),
            max_iters: 100_000,
            check_every: 50,
        };
        let (p, rep) = ps::solve_cpu(&prob, &opts).unwrap();
        assert!(rep.converged, "n={n}: {rep:?}");
        let e = max_err(&p, &exact);
        assert!(e <= h * h, "n={n}: max error {e:e} > h^2 = {:e}", h * h);
        assert!(
            e >= 0.5 * h * h,
            "n={n}: max error {e:e} is suspiciously small"
        );
        errs.push(e);
    }
    let ratio = errs[0] / errs[1];
    assert!(
        (3.5..=4.5).contains(&ratio),
        "error ratio {ratio} (errors {errs:?}) is not second order"
    );
}

/// The same solve on the simulator with the GPU residual reduction (temporal
/// and register rungs, f64 and f32): converges, to within h^2 of p*, and to the
/// CPU's answer.
#[test]
fn manufactured_solution_sim() {
    let dev = Device::sim();
    let n = 13;
    let (prob, exact) = ps::manufactured(Grid::new(n, n).unwrap());
    let h2 = prob.h * prob.h;
    let opts = SolveOptions {
        rung: Rung::Temporal,
        depth: 16,
        tol: Some(1e-8),
        max_iters: 20_000,
        check_every: 32,
    };
    let (p, rep) = ps::solve_device(&dev, &prob, &opts).unwrap();
    assert!(rep.converged && rep.rel_residual < 1e-8, "{rep:?}");
    assert!(rep.iterations > 0 && rep.iterations % 32 == 0, "{rep:?}");
    let e = max_err(&p, &exact);
    assert!(e <= h2, "f64 temporal: max error {e:e} > h^2 = {h2:e}");
    let (pc, repc) = ps::solve_cpu(&prob, &opts).unwrap();
    assert_eq!(
        rep.iterations, repc.iterations,
        "GPU and CPU stop at different sweeps"
    );
    assert!(max_err(&p, &pc) < 1e-8);

    // f32: the residual floor is about eps_f32 * 4 / h^2 / |b| = 3e-6 here.
    let prob32 = Problem::<f32>::new(
        prob.grid,
        prob.h,
        prob.b.iter().map(|&v| v as f32).collect(),
        prob.p0.iter().map(|&v| v as f32).collect(),
    )
    .unwrap();
    let opts32 = SolveOptions {
        tol: Some(1e-4),
        rung: Rung::Register,
        ..opts
    };
    let (p32, rep32) = ps::solve_device(&dev, &prob32, &opts32).unwrap();
    assert!(rep32.converged, "{rep32:?}");
    let p32: Vec<f64> = p32.iter().map(|&v| v as f64).collect();
    let e32 = max_err(&p32, &exact);
    assert!(e32 <= h2, "f32 register: max error {e32:e} > h^2 = {h2:e}");
}

#[test]
fn fixed_iteration_run_reports_residual() {
    let dev = Device::sim();
    let (prob, _) = ps::manufactured(Grid::new(9, 7).unwrap());
    let opts = SolveOptions {
        rung: Rung::Register,
        depth: 1,
        tol: None,
        max_iters: 5,
        check_every: 100,
    };
    let (p, rep) = ps::solve_device(&dev, &prob, &opts).unwrap();
    assert_eq!(rep.iterations, 5);
    assert!(rep.rel_residual.is_finite() && rep.rel_residual > 0.0);
    let want = ps::reference(&prob.p0, &prob.b, prob.grid, ps::k_of_h(prob.h), 5);
    assert!(ptxlab::rng::rel_err_norm(&p, &want) < 1e-13);
}

// ------------------------------------------------------------ hostile input

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ptxlab-poisson-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn cli_err(args: Args) -> String {
    match ps::cli(&args) {
        Ok(_) => panic!("expected an error for {args:?}"),
        Err(e) => e.to_string(),
    }
}

fn cpu_args() -> Args {
    Args {
        backend: ptxlab::Backend::Cpu,
        iters: Some(1),
        ..Args::default()
    }
}

/// A temporary `rows x cols` .npy file of f32 named `name` holding `data`.
fn npy_f32(name: &str, rows: usize, cols: usize, data: &[f32]) -> PathBuf {
    let path = tmp(name);
    ptxlab::npy::write_2d(&path, rows, cols, data).unwrap();
    path
}

/// [`cli_err`] of a CPU run reading `b` (and `p0`, when given) from files.
fn files_err(b: PathBuf, p0: Option<PathBuf>) -> String {
    cli_err(Args {
        b: Some(b),
        p0,
        ..cpu_args()
    })
}

#[test]
fn rejects_grid_smaller_than_3x3() {
    let e = cli_err(Args {
        size: Some(ptxlab::cli::GridSize { nx: 2, ny: 2 }),
        ..cpu_args()
    });
    assert!(e.contains("2x2") && e.contains("smaller than 3x3"), "{e}");
    let e = cli_err(Args {
        size: Some(ptxlab::cli::GridSize { nx: 3, ny: 1 }),
        ..cpu_args()
    });
    assert!(e.contains("3x1") && e.contains("at least 3"), "{e}");
    assert!(Grid::new(3, 3).is_ok());
}

#[test]
fn rejects_tolerance_that_is_not_positive() {
    for t in [0.0, -1e-6, f64::NAN, f64::INFINITY] {
        let e = cli_err(Args {
            size: Some(ptxlab::cli::GridSize { nx: 5, ny: 5 }),
            tol: Some(t),
            ..cpu_args()
        });
        assert!(
            e.contains("--tol") && e.contains("positive finite"),
            "{t}: {e}"
        );
    }
    let e = cli_err(Args {
        size: Some(ptxlab::cli::GridSize { nx: 5, ny: 5 }),
        tol: Some(1e-3),
        check_every: 0,
        ..cpu_args()
    });
    assert!(e.contains("--check-every"), "{e}");
}

#[test]
fn rejects_bad_depth_variant_precision_backend() {
    let e = cli_err(Args {
        size: Some(ptxlab::cli::GridSize { nx: 5, ny: 5 }),
        depth: 0,
        ..cpu_args()
    });
    assert!(e.contains("--depth") && e.contains("1..=16"), "{e}");
    let e = cli_err(Args {
        size: Some(ptxlab::cli::GridSize { nx: 5, ny: 5 }),
        depth: 17,
        ..cpu_args()
    });
    assert!(e.contains("--depth"), "{e}");
}

#[test]
fn rejects_npy_of_wrong_shape() {
    let path = tmp("b_1d.npy");
    ptxlab::npy::write_1d(&path, &[1.0f32; 25]).unwrap();
    let e = files_err(path, None);
    assert!(
        e.contains("--b") && e.contains("2-D C-order array of f32"),
        "{e}"
    );
    // A 2-D b whose shape disagrees with the grid asked for.
    let path2 = npy_f32("b_4x6.npy", 4, 6, &[1.0f32; 24]);
    let e = cli_err(Args {
        b: Some(path2.clone()),
        size: Some(ptxlab::cli::GridSize { nx: 5, ny: 5 }),
        ..cpu_args()
    });
    assert!(e.contains("shape (4, 6)") && e.contains("5x5"), "{e}");
    // p0 of another shape than b.
    let p0 = npy_f32("p0_5x5.npy", 5, 5, &[0.0f32; 25]);
    let e = files_err(path2, Some(p0));
    assert!(
        e.contains("--p0") && e.contains("shape (5, 5)") && e.contains("shape (4, 6) is required"),
        "{e}"
    );
}

#[test]
fn rejects_npy_of_wrong_dtype() {
    let path = tmp("b_f64.npy");
    ptxlab::npy::write_2d(&path, 5, 5, &[1.0f64; 25]).unwrap();
    let e = cli_err(Args {
        b: Some(path.clone()),
        precision: ptxlab::cli::Precision::F32,
        ..cpu_args()
    });
    assert!(
        e.contains("--b") && e.contains("not a valid .npy of f32"),
        "{e}"
    );
    // The same file is fine as f64.
    ps::cli(&Args {
        b: Some(path),
        precision: ptxlab::cli::Precision::F64,
        ..cpu_args()
    })
    .unwrap();
}

#[test]
fn rejects_non_finite_b_and_p0() {
    let mut v = vec![1.0f32; 30];
    v[2 * 6 + 4] = f32::NAN;
    let e = files_err(npy_f32("b_nan.npy", 5, 6, &v), None);
    assert!(
        e.contains("b")
            && e.contains("row 2, column 4")
            && e.contains("NaN")
            && e.contains("finite"),
        "{e}"
    );
    let mut p = vec![0.0f32; 30];
    p[7] = f32::INFINITY;
    let bp = npy_f32("b_ok.npy", 5, 6, &[1.0f32; 30]);
    let pp = npy_f32("p0_inf.npy", 5, 6, &p);
    let e = files_err(bp, Some(pp));
    assert!(
        e.contains("p0") && e.contains("row 1, column 1") && e.contains("inf"),
        "{e}"
    );
}

#[test]
fn rejects_bad_spacing_and_lengths() {
    let g = Grid::new(4, 4).unwrap();
    let e = Problem::<f64>::new(g, 0.0, vec![0.0; 16], vec![0.0; 16])
        .unwrap_err()
        .to_string();
    assert!(e.contains("--h") && e.contains("positive finite"), "{e}");
    let e = Problem::<f64>::new(g, 0.1, vec![0.0; 15], vec![0.0; 16])
        .unwrap_err()
        .to_string();
    assert!(e.contains("15 values") && e.contains("needs 16"), "{e}");
    let dev = Device::sim();
    let p = dev.upload(&[0.0f32; 16]).unwrap();
    let b = dev.upload(&[0.0f32; 15]).unwrap();
    let mut o = dev.alloc_filled(16, 0.0f32).unwrap();
    let e = ps::sweep(&dev, Rung::Naive, g, &p, &b, &mut o, 0.1, 1)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("b") && e.contains("15 elements") && e.contains("16 cells"),
        "{e}"
    );
}

#[test]
fn cli_sim_and_cpu_write_npy() {
    let out = tmp("p_out.npy");
    ps::cli(&Args {
        size: Some(ptxlab::cli::GridSize { nx: 9, ny: 9 }),
        backend: ptxlab::Backend::Sim,
        iters: Some(5),
        out: Some(out.clone()),
        ..Args::default()
    })
    .unwrap();
    let (r, c, v) = ptxlab::npy::read_2d::<f32>(&out, "f32").unwrap();
    assert_eq!((r, c), (9, 9));
    assert!(v.iter().all(|x| x.is_finite()));
    let out2 = tmp("p_out_cpu.npy");
    ps::cli(&Args {
        size: Some(ptxlab::cli::GridSize { nx: 11, ny: 7 }),
        precision: ptxlab::cli::Precision::F64,
        tol: Some(1e-3),
        iters: Some(10_000),
        out: Some(out2.clone()),
        ..cpu_args()
    })
    .unwrap();
    let (r, c, _) = ptxlab::npy::read_2d::<f64>(&out2, "f64").unwrap();
    assert_eq!((r, c), (7, 11));
}

// ------------------------------------------------------------ GPU

#[test]
fn gpu_every_rung_matches_cpu() {
    let Some(dev) = ptxlab::runtime::testing::gpu_or_skip() else {
        return;
    };
    for (nx, ny) in [(1999, 1237), (3, 3), (37, 29), (64, 48), (4099, 33)] {
        check_rungs::<f32>(&dev, nx, ny, 31, &[1, 2, 37], &Rung::ALL);
        check_rungs::<f64>(&dev, nx, ny, 32, &[1, 2, 37], &Rung::ALL);
        let g = Grid::new(nx, ny).unwrap();
        ps::check_residual::<f32>(&dev, &CheckCase::new::<f32>(g, 33, &[1])).unwrap();
        ps::check_residual::<f64>(&dev, &CheckCase::new::<f64>(g, 34, &[1])).unwrap();
    }
}

#[test]
fn gpu_manufactured_solve() {
    let Some(dev) = ptxlab::runtime::testing::gpu_or_skip() else {
        return;
    };
    // Under compute-sanitizer (PTXLAB_TEST_SCALE=small) racecheck makes every
    // launch slow: a 17x17 grid converges in a few hundred sweeps.
    let n = if std::env::var("PTXLAB_TEST_SCALE").as_deref() == Ok("small") {
        17
    } else {
        65
    };
    let (prob, exact) = ps::manufactured(Grid::new(n, n).unwrap());
    let h2 = prob.h * prob.h;
    for rung in Rung::ALL {
        let opts = SolveOptions {
            rung,
            depth: 8,
            tol: Some(1e-9),
            max_iters: 200_000,
            check_every: 200,
        };
        let (p, rep) = ps::solve_device(&dev, &prob, &opts).unwrap();
        assert!(rep.converged, "{}: {rep:?}", rung.name());
        let e = max_err(&p, &exact);
        assert!(e <= h2, "{}: max error {e:e} > h^2 = {h2:e}", rung.name());
    }
}
