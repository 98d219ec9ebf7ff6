//! Poisson.

use ptxlab::runtime::Device;
use ptxlab::workloads::poisson;

use super::{err, has};

#[test]
fn poisson_public_functions() {
    use poisson::{Field, Grid, Problem, Rung, SolveOptions};
    let dev = Device::sim();
    let g = Grid::new(5, 4).unwrap();
    let p = dev.upload(&[0.0f32; 20]).unwrap();
    let b = dev.upload(&[0.0f32; 19]).unwrap();
    let mut o = dev.alloc_filled(20, 0.0f32).unwrap();
    has(
        &err(poisson::sweep(&dev, Rung::Tiled, g, &p, &b, &mut o, 0.1, 1)),
        &["b", "19 elements, but the grid 5x4 has 20 cells"],
    );
    // A grid built from its public fields, bypassing Grid::new.
    let bad = Grid { nx: 1, ny: 1 };
    let one = dev.upload(&[0.0f32]).unwrap();
    let mut acc = dev.alloc_filled(1, 0.0f64).unwrap();
    has(
        &err(poisson::residual_sq(&dev, bad, &one, &one, 0.5, &mut acc)),
        &["1x1", "smaller than 3x3"],
    );
    let mut acc2 = dev.alloc_filled(2, 0.0f64).unwrap();
    has(
        &err(poisson::residual_sq(&dev, g, &p, &p, 0.5, &mut acc2)),
        &["residual accumulator", "2 elements; it must have exactly 1"],
    );
    has(
        &err(poisson::sweep_config::<f32>(Rung::Temporal, g, 0)),
        &["--depth", "0; allowed 1..=16"],
    );
    let mut f = Field::new(&dev, &[0.0f32; 20]).unwrap();
    has(
        &err(f.run(&dev, Rung::Naive, g, &b, 0.1, 3, 1)),
        &["19 elements"],
    );
    // Problems: wrong lengths, non-finite values, h out of range, and
    // the same through the public fields (the solvers check again).
    has(
        &err(Problem::new(g, 0.5, vec![0.0f32; 19], vec![0.0; 20])),
        &["b", "19 values, but the grid 5x4 needs 20"],
    );
    has(
        &err(Problem::new(g, 0.5, vec![f32::NAN; 20], vec![0.0; 20])),
        &["row 0, column 0 is NaN"],
    );
    has(
        &err(Problem::new(
            g,
            f64::INFINITY,
            vec![0.0f32; 20],
            vec![0.0; 20],
        )),
        &["--h", "positive finite"],
    );
    has(
        &err(Problem::new(g, 1e-30, vec![0.0f32; 20], vec![0.0; 20])),
        &["--h", "with f32 allowed"],
    );
    let forged = Problem {
        grid: g,
        h: 0.5,
        b: vec![0.0f32; 3],
        p0: vec![0.0; 20],
    };
    let opts = SolveOptions {
        rung: Rung::Naive,
        depth: 1,
        tol: None,
        max_iters: 2,
        check_every: 1,
    };
    has(&err(poisson::solve_cpu(&forged, &opts)), &["b", "3 values"]);
    has(
        &err(poisson::solve_device(&dev, &forged, &opts)),
        &["b", "3 values"],
    );
    let bad_opts = SolveOptions {
        tol: Some(f64::NAN),
        ..opts
    };
    has(&err(bad_opts.validate()), &["--tol", "positive finite"]);
    let bad_opts = SolveOptions {
        check_every: 0,
        tol: Some(1e-3),
        ..opts
    };
    has(&err(bad_opts.validate()), &["--check-every"]);
    // Finite inputs whose iteration overflows f32: an error, not NaN.
    let mut bb = vec![0.0f32; 20];
    bb[6] = 3e38;
    let mut pp = vec![0.0f32; 20];
    pp[0] = 3e38;
    pp[19] = -3e38;
    let prob = Problem::new(g, 1.5e19, bb, pp).unwrap();
    has(
        &err(poisson::solve_cpu(&prob, &opts)),
        &[
            "the residual became",
            "too large for f32 arithmetic",
            "use --precision f64",
        ],
    );
    has(
        &err(poisson::solve_device(&dev, &prob, &opts)),
        &["the residual became"],
    );
    // Valid: the smallest grid solves on both.
    let small = Problem::new(Grid::new(3, 3).unwrap(), 0.5, vec![1.0f64; 9], vec![0.0; 9]).unwrap();
    let (pc, _) = poisson::solve_cpu(&small, &opts).unwrap();
    let (pd, _) = poisson::solve_device(&dev, &small, &opts).unwrap();
    for (c, d) in pc.iter().zip(&pd) {
        assert!((c - d).abs() <= 1e-12, "{pc:?} vs {pd:?}");
    }
}
