//! Multigrid and PCG for the Poisson problem: the manufactured solution to
//! second order on odd and non-nested grids (CPU, simulator, GPU), the
//! simulator and the GPU equal to the CPU solver cycle by cycle, grid-
//! independent convergence, the mixed-precision solve below f32's floor,
//! the CLI, and bad input refused with errors that name it. GPU tests skip
//! without a driver.

use ptxlab::cli::Precision;
use ptxlab::runtime::Device;
use ptxlab::runtime::testing::gpu_or_skip;
use ptxlab::workloads::poisson::mg::check::{
    bench_problem, compare_with_cpu, jacobi_sweeps, second_order, solve_cpu, solve_device,
};
use ptxlab::workloads::poisson::mg::{self, Cycle, Hierarchy, Method, MgOptions, Smoother};
use ptxlab::workloads::poisson::{self as ps, Args, Grid, Problem, SolveMethod};

fn opts() -> MgOptions {
    MgOptions {
        graph: false,
        ..MgOptions::default()
    }
}

fn random<T: ps::Element>(nx: usize, ny: usize, seed: u64, h: f64) -> Problem<T> {
    let grid = Grid::new(nx, ny).unwrap();
    let (p0, b) = ps::random_inputs(grid, seed);
    let conv = |v: Vec<f64>| v.into_iter().map(T::from_f64).collect::<Vec<T>>();
    Problem::new(grid, h, conv(b), conv(p0)).unwrap()
}

fn err_of(r: ptxlab::Result<impl std::fmt::Debug>) -> String {
    r.unwrap_err().to_string()
}

fn has(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "`{msg}` does not mention `{p}`");
    }
}

// ------------------------------------------------------------ geometry

#[test]
fn hierarchy_coarsens_any_shape_to_one_point() {
    let h = Hierarchy::new(Grid::new(4096, 4096).unwrap(), 1.0 / 4095.0).unwrap();
    let shapes: Vec<usize> = h.levels.iter().map(|l| l.nx).collect();
    assert_eq!(
        shapes,
        [4096, 2049, 1025, 513, 257, 129, 65, 33, 17, 9, 5, 3]
    );
    let h = Hierarchy::new(Grid::new(4097, 3).unwrap(), 0.5).unwrap();
    assert_eq!(h.levels.last().unwrap().nx, 3);
    assert!(
        h.levels.iter().all(|l| l.ny == 3),
        "an axis of one interior point is never coarsened"
    );
    // Every level spans the same domain: (nx_l - 1) hx_l = (nx - 1) h.
    let g = Grid::new(200, 133).unwrap();
    let h = Hierarchy::new(g, 0.01).unwrap();
    for l in &h.levels {
        assert!(((l.nx - 1) as f64 / l.cx.sqrt() - 199.0 * 0.01).abs() < 1e-12);
        assert!(((l.ny - 1) as f64 / l.cy.sqrt() - 132.0 * 0.01).abs() < 1e-12);
    }
    assert_eq!(
        Hierarchy::new(Grid::new(3, 3).unwrap(), 0.5)
            .unwrap()
            .depth(),
        1
    );
}

// ------------------------------------------------------------ CPU

#[test]
fn cpu_manufactured_solution_second_order_on_odd_and_even_grids() {
    for (nx, ny) in [(33, 25), (34, 26)] {
        let g = Grid::new(nx, ny).unwrap();
        second_order::<f64>(None, g, &opts()).unwrap();
        second_order::<f32>(None, g, &opts()).unwrap();
        let pcg = MgOptions {
            method: Method::Pcg,
            ..opts()
        };
        second_order::<f64>(None, g, &pcg).unwrap();
        let fmg = MgOptions {
            cycle: Cycle::Fmg,
            smoother: Smoother::RedBlack,
            ..opts()
        };
        second_order::<f64>(None, g, &fmg).unwrap();
    }
}

#[test]
fn cpu_convergence_is_grid_independent_and_reaches_1e8_within_8_cycles() {
    let mut factors = Vec::new();
    // Square (nested and not), odd and non-square shapes.
    for (nx, ny) in [
        (65, 65),
        (129, 129),
        (257, 257),
        (256, 256),
        (203, 157),
        (200, 131),
    ] {
        let n = format!("{nx}x{ny}");
        let g = Grid::new(nx, ny).unwrap();
        let (b, p0) = bench_problem(g);
        let prob = Problem::new(g, ps::default_h(g), b, p0).unwrap();
        let (_, r) = solve_cpu::<f64>(&prob, &opts()).unwrap();
        assert!(
            r.converged && r.cycles <= 8,
            "{n}: {} cycles to {:e}",
            r.cycles,
            r.rel_residual
        );
        factors.push(r.factor().unwrap());
        let (_, r) = solve_cpu::<f64>(
            &prob,
            &MgOptions {
                method: Method::Pcg,
                ..opts()
            },
        )
        .unwrap();
        assert!(
            r.converged && r.cycles <= 8,
            "PCG {n}: {} iterations",
            r.cycles
        );
    }
    assert!(
        factors.iter().all(|f| *f < 0.1),
        "factors per V(2,2) cycle: {factors:?}"
    );
}

#[test]
fn mixed_precision_reaches_1e10_below_the_f32_floor() {
    // f32 arithmetic alone stalls near 1e-7 relative; the f64 outer step
    // takes the f32 cycles' corrections down to 1e-10.
    let g = Grid::new(129, 97).unwrap();
    let (b, p0) = bench_problem(g);
    let prob = Problem::new(g, ps::default_h(g), b, p0).unwrap();
    let conv = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
    let p32 = Problem::new(g, prob.h, conv(&prob.b), conv(&prob.p0)).unwrap();
    for o in [
        opts(),
        MgOptions {
            method: Method::Pcg,
            ..opts()
        },
    ] {
        let o = MgOptions { tol: 1e-10, ..o };
        let (_, r) = solve_cpu::<f32>(&p32, &o).unwrap();
        assert!(
            r.converged && r.rel_residual < 1e-10,
            "{}: {:e}",
            o.label(),
            r.rel_residual
        );
        assert!(r.cycles <= 13, "{} cycles", r.cycles);
    }
}

#[test]
fn jacobi_extrapolation_formula() {
    // rho = cos(pi h) on a square: about 1 - pi^2 h^2 / 2 per sweep.
    let g = Grid::new(1025, 1025).unwrap();
    let n = jacobi_sweeps(g, 1e-8);
    let approx = 2.0 * 1024.0f64.powi(2) / std::f64::consts::PI.powi(2) * 1e8f64.ln();
    assert!((n / approx - 1.0).abs() < 1e-3, "{n} vs {approx}");
}

/// `||b - lap_h p|| / ||b||` over the interior, in f64, written out here
/// independently of the solver's kernels.
fn rel_residual_f64(g: Grid, h: f64, b: &[f64], p: &[f64]) -> f64 {
    let (mut rr, mut bb) = (0.0, 0.0);
    for y in 1..g.ny - 1 {
        for x in 1..g.nx - 1 {
            let i = y * g.nx + x;
            let lap = (p[i - 1] + p[i + 1] + p[i - g.nx] + p[i + g.nx] - 4.0 * p[i]) / (h * h);
            rr += (b[i] - lap).powi(2);
            bb += b[i] * b[i];
        }
    }
    (rr / bb).sqrt()
}

/// Rung 5 keeps the field on the finest level and reads the residual out
/// of the last sweep: on an odd grid with random, non-zero Dirichlet values,
/// the boundary must come back unchanged and the residual the solver stops
/// on must be the true one (f64, computed here), for V and FMG cycles, on
/// the CPU and (fewer cells) the simulator.
fn field_on_fine_keeps_dirichlet_values(dev: Option<&Device>, nx: usize, ny: usize) {
    let g = Grid::new(nx, ny).unwrap();
    let h = 1.0 / (nx.max(ny) - 1) as f64;
    let prob = random::<f64>(nx, ny, 11, h);
    for cycle in [Cycle::V, Cycle::Fmg] {
        let o = MgOptions {
            tol: 1e-9,
            cycle,
            ..opts()
        };
        assert!(o.fused_fine(8), "the default f64 multigrid is rung 5");
        let (p, r) = match dev {
            Some(d) => solve_device::<f64>(d, &prob, &o).unwrap(),
            None => solve_cpu::<f64>(&prob, &o).unwrap(),
        };
        // A random start (noise of size 1 on every cell) begins far above
        // the bench problem's residual: no cycle bound here.
        assert!(r.converged, "{cycle:?}: {r:?}");
        for (i, (a, b)) in p.iter().zip(&prob.p0).enumerate() {
            let (x, y) = (i % nx, i / nx);
            if x == 0 || y == 0 || x + 1 == nx || y + 1 == ny {
                assert_eq!(a, b, "{cycle:?}: boundary cell ({x}, {y}) changed");
            }
        }
        // The solver's residual and this one differ by the rounding of
        // `lap p` (about 1e-16 |p| / h^2 per cell): 1e-3 relative apart.
        let truth = rel_residual_f64(g, h, &prob.b, &p);
        assert!(
            truth < 1e-9 && ((truth - r.rel_residual) / truth).abs() < 1e-3,
            "{cycle:?}: reported {:e}, true {truth:e}",
            r.rel_residual
        );
    }
}

#[test]
fn cpu_field_on_fine_keeps_dirichlet_values_and_stops_on_the_true_residual() {
    field_on_fine_keeps_dirichlet_values(None, 203, 157);
}

#[test]
fn sim_field_on_fine_keeps_dirichlet_values_and_stops_on_the_true_residual() {
    field_on_fine_keeps_dirichlet_values(Some(&Device::sim()), 37, 23);
}

// ------------------------------------------------------------ simulator

#[test]
fn sim_manufactured_solution_second_order() {
    let g = Grid::new(13, 11).unwrap();
    second_order::<f64>(Some(&Device::sim()), g, &opts()).unwrap();
}

#[test]
fn sim_equals_cpu_for_every_cycle_and_smoother() {
    let dev = Device::sim();
    // These grids fit one block: the coarse-levels kernel would take every
    // level, so the level-by-level kernels run with it switched off.
    let base = MgOptions {
        tol: 1e-12,
        max_cycles: 2,
        coarse_block: false,
        ..opts()
    };
    compare_with_cpu::<f64>(
        &dev,
        &random(20, 13, 1, 0.2),
        &MgOptions {
            smoother: Smoother::RedBlack,
            ..base
        },
    )
    .unwrap();
    compare_with_cpu::<f32>(&dev, &random(17, 9, 2, 0.2), &base).unwrap();
    let block = MgOptions {
        coarse_block: true,
        ..base
    };
    compare_with_cpu::<f64>(&dev, &random(33, 21, 7, 0.2), &block).unwrap();
    compare_with_cpu::<f32>(&dev, &random(40, 11, 8, 0.2), &block).unwrap();
    compare_with_cpu::<f64>(
        &dev,
        &random(15, 16, 3, 0.2),
        &MgOptions {
            cycle: Cycle::W,
            post: 0,
            ..base
        },
    )
    .unwrap();
    compare_with_cpu::<f64>(
        &dev,
        &random(17, 17, 4, 0.2),
        &MgOptions {
            method: Method::Pcg,
            ..base
        },
    )
    .unwrap();
    // Several tiles of the tile smoother in x and y (64 x 32 outputs each),
    // non-nested in x.
    let one = MgOptions {
        max_cycles: 1,
        ..base
    };
    compare_with_cpu::<f64>(&dev, &random(100, 41, 5, 0.2), &one).unwrap();
}

// ------------------------------------------------------------ CLI

fn mg_args(method: SolveMethod) -> Args {
    let mut a = Args {
        backend: ptxlab::Backend::Cpu,
        size: Some(ptxlab::cli::GridSize { nx: 33, ny: 33 }),
        ..Args::default()
    };
    a.mg.method = method;
    a
}

#[test]
fn cli_solves_and_writes_npy_on_cpu_and_sim() {
    let out = std::env::temp_dir().join(format!("ptxlab-mg-{}.npy", std::process::id()));
    let mut a = mg_args(SolveMethod::Multigrid);
    a.out = Some(out.clone());
    a.precision = Precision::F64;
    ps::cli(&a).unwrap();
    let (r, c, v) = ptxlab::npy::read_2d::<f64>(&out, "f64").unwrap();
    assert_eq!((r, c), (33, 33));
    // The manufactured problem: the solution is within the discretisation error.
    let h = 1.0 / 32.0;
    let pi = std::f64::consts::PI;
    let e = (0..33 * 33)
        .map(|i| (v[i] - (pi * (i % 33) as f64 * h).sin() * (pi * (i / 33) as f64 * h).sin()).abs())
        .fold(0.0, f64::max);
    assert!(e < 0.9 * h * h, "max error {e:e}");
    let mut a = mg_args(SolveMethod::Pcg);
    a.backend = ptxlab::Backend::Sim;
    a.size = Some(ptxlab::cli::GridSize { nx: 9, ny: 9 });
    a.out = Some(out.clone());
    ps::cli(&a).unwrap();
    let (r, c, v) = ptxlab::npy::read_2d::<f32>(&out, "f32").unwrap();
    assert_eq!((r, c), (9, 9));
    assert!(v.iter().all(|x| x.is_finite()));
    let _ = std::fs::remove_file(out);
}

#[test]
fn bad_input_is_refused_with_what_was_wrong() {
    let run = |f: &dyn Fn(&mut Args)| {
        let mut a = mg_args(SolveMethod::Multigrid);
        f(&mut a);
        err_of(ps::cli(&a))
    };
    has(&run(&|a| a.tol = Some(0.0)), &["--tol", "positive"]);
    has(&run(&|a| a.tol = Some(-1e-8)), &["--tol", "positive"]);
    has(&run(&|a| a.tol = Some(f64::NAN)), &["--tol", "positive"]);
    has(&run(&|a| a.mg.pre = 0), &["--pre", "1..=4"]);
    has(&run(&|a| a.mg.post = 9), &["--post", "0..=4"]);
    has(&run(&|a| a.iters = Some(0)), &["--iters"]);
    for w in [0.0, 2.0, -0.5, f64::NAN, f64::INFINITY] {
        has(&run(&|a| a.mg.omega = w), &["--omega", "(0, 2)"]);
    }
    has(
        &run(&|a| a.variant = ptxlab::cli::OneOrAll::One(ptxlab::workloads::poisson::Rung::Tiled)),
        &["--variant", "--method jacobi"],
    );
    // The tile smoother runs on slabs too: an explicit one goes on to the
    // devices (here: --backend cpu has none), with multigrid and PCG.
    for method in [SolveMethod::Multigrid, SolveMethod::Pcg] {
        has(
            &run(&|a| {
                a.gpus.count = Some(2);
                a.mg.smoother = Some(Smoother::Tile);
                a.mg.method = method;
            }),
            &["--gpus", "--backend cpu has no devices"],
        );
    }
    // The default goes on to the devices (here: --backend cpu has none).
    has(
        &run(&|a| a.gpus.count = Some(2)),
        &["--gpus", "--backend cpu has no devices"],
    );
    has(
        &run(&|a| {
            a.gpus.count = Some(2);
            a.mg.smoother = Some(Smoother::RedBlack);
            a.gpus.no_overlap = true;
        }),
        &["--no-overlap", "--method jacobi"],
    );
    has(
        &run(&|a| {
            a.mg.method = SolveMethod::Pcg;
            a.mg.cycle = Cycle::W
        }),
        &["--cycle", "pcg"],
    );
    has(
        &run(&|a| {
            a.mg.method = SolveMethod::Pcg;
            a.mg.post = 1
        }),
        &["--pre/--post", "symmetric"],
    );
    has(
        &run(&|a| a.size = Some(ptxlab::cli::GridSize { nx: 2, ny: 9 })),
        &["grid", "at least 3"],
    );
    has(
        &run(&|a| {
            a.backend = ptxlab::Backend::Sim;
            a.size = Some(ptxlab::cli::GridSize { nx: 1000, ny: 1000 })
        }),
        &["simulator"],
    );
    // The library API: lengths and tolerances.
    let g = Grid::new(9, 9).unwrap();
    let hier = Hierarchy::new(g, 0.1).unwrap();
    has(
        &err_of(mg::cpu::solve::<f64>(
            &hier,
            &opts(),
            &[0.0; 80],
            &[0.0; 81],
            1.0,
        )),
        &["b/p0", "80"],
    );
    has(
        &err_of(
            MgOptions {
                tol: f64::INFINITY,
                ..opts()
            }
            .validate(),
        ),
        &["--tol"],
    );
    let bad = Problem::<f64> {
        grid: g,
        h: 0.1,
        b: vec![0.0; 10],
        p0: vec![0.0; 81],
    };
    has(
        &err_of(solve_device::<f64>(&Device::sim(), &bad, &opts())),
        &["b", "10 values"],
    );
    let nan = Problem::<f64> {
        b: vec![f64::NAN; 81],
        ..bad
    };
    has(&err_of(solve_cpu::<f64>(&nan, &opts())), &["b", "finite"]);
}

// ------------------------------------------------------------ GPU

/// `full`, or `small` under compute-sanitizer (`PTXLAB_TEST_SCALE=small`),
/// which slows every launch.
fn scale(full: usize, small: usize) -> usize {
    if std::env::var("PTXLAB_TEST_SCALE").as_deref() == Ok("small") {
        small
    } else {
        full
    }
}

#[test]
fn gpu_manufactured_solution_second_order() {
    let Some(dev) = gpu_or_skip() else { return };
    let g = Grid::new(scale(257, 33), scale(193, 25)).unwrap();
    let with_graph = MgOptions::default();
    second_order::<f64>(Some(&dev), g, &with_graph).unwrap();
    second_order::<f32>(Some(&dev), g, &with_graph).unwrap();
    second_order::<f64>(
        Some(&dev),
        g,
        &MgOptions {
            method: Method::Pcg,
            ..with_graph
        },
    )
    .unwrap();
    second_order::<f64>(
        Some(&dev),
        Grid::new(200, 131).unwrap(),
        &MgOptions {
            smoother: Smoother::RedBlack,
            ..opts()
        },
    )
    .unwrap();
}

#[test]
fn gpu_equals_cpu_cycle_by_cycle() {
    let Some(dev) = gpu_or_skip() else { return };
    let base = MgOptions {
        tol: 1e-14,
        max_cycles: 3,
        ..MgOptions::default()
    };
    for o in [
        base,
        MgOptions {
            graph: false,
            ..base
        },
        MgOptions {
            smoother: Smoother::RedBlack,
            ..base
        },
        MgOptions {
            cycle: Cycle::W,
            ..base
        },
        MgOptions {
            cycle: Cycle::Fmg,
            ..base
        },
        MgOptions {
            method: Method::Pcg,
            ..base
        },
    ] {
        compare_with_cpu::<f64>(&dev, &random(scale(1001, 101), scale(778, 78), 5, 0.01), &o)
            .unwrap();
        compare_with_cpu::<f32>(&dev, &random(scale(998, 98), scale(301, 31), 6, 0.01), &o)
            .unwrap();
    }
}

#[test]
fn gpu_4096_f64_and_mixed_f32_reach_1e8_within_10_cycles() {
    let Some(dev) = gpu_or_skip() else { return };
    let n = scale(4096, 129);
    let g = Grid::new(n, n).unwrap();
    let (b, p0) = bench_problem(g);
    let prob = Problem::new(g, ps::default_h(g), b, p0).unwrap();
    let (_, r) = solve_device::<f64>(&dev, &prob, &MgOptions::default()).unwrap();
    assert!(
        r.converged && r.cycles <= 10,
        "f64: {} cycles, {:e}",
        r.cycles,
        r.rel_residual
    );
    let conv = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
    let p32 = Problem::new(g, prob.h, conv(&prob.b), conv(&prob.p0)).unwrap();
    let (_, r) = solve_device::<f32>(&dev, &p32, &MgOptions::default()).unwrap();
    assert!(
        r.converged && r.cycles <= 10,
        "f32 cycles: {} cycles, {:e}",
        r.cycles,
        r.rel_residual
    );
}
