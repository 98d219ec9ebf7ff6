//! Lomb-Scargle: precise math error bounds, the CPU reference against SciPy,
//! every kernel on the simulator, hostile inputs, and GPU checks.

use ptxlab_device::precise::{self, Trig};

/// ulp of `v` in f64 (spacing at |v|).
fn ulp64(v: f64) -> f64 {
    let a = v.abs().max(f64::MIN_POSITIVE);
    f64::from_bits(a.to_bits() + 1) - a
}
fn ulp32(v: f32) -> f64 {
    let a = v.abs().max(f32::MIN_POSITIVE);
    (f32::from_bits(a.to_bits() + 1) - a) as f64
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next()
    }
    /// Log-uniform magnitude in [lo, hi], random sign.
    fn logu(&mut self, lo: f64, hi: f64) -> f64 {
        let m = (lo.ln() + (hi.ln() - lo.ln()) * self.next()).exp();
        if self.next() < 0.5 { -m } else { m }
    }
}

/// (max abs error, max error in ulps where |f| >= floor) of f against g.
fn errs64(xs: &[f64], f: impl Fn(f64) -> f64, g: impl Fn(f64) -> f64, floor: f64) -> (f64, f64) {
    let mut abs = 0f64;
    let mut ulps = 0f64;
    for &x in xs {
        let (a, b) = (f(x), g(x));
        let e = (a - b).abs();
        abs = abs.max(e);
        if b.abs() >= floor {
            ulps = ulps.max(e / ulp64(b));
        }
    }
    (abs, ulps)
}

fn points64(seed: u64, n: usize, lo: f64, hi: f64, log: bool) -> Vec<f64> {
    let mut r = Rng(seed);
    (0..n)
        .map(|_| {
            if log {
                r.logu(lo, hi)
            } else {
                r.uniform(-hi, hi)
            }
        })
        .collect()
}

#[test]
fn precise_f64_sin_cos_bounds() {
    let ranges: [(&str, Vec<f64>); 4] = [
        ("|x|<=4", points64(1, 200_000, 0.0, 4.0, false)),
        ("|x|<=1e6", points64(2, 200_000, 0.0, 1e6, false)),
        ("1e-300..1e6 log", points64(3, 200_000, 1e-300, 1e6, true)),
        (
            "1e6..1e300 log (Payne-Hanek)",
            points64(4, 200_000, 1e6, 1e300, true),
        ),
    ];
    for (name, xs) in &ranges {
        let (sa, su) = errs64(xs, precise::sin_f64, f64::sin, 1.0 / 1024.0);
        let (ca, cu) = errs64(xs, precise::cos_f64, f64::cos, 1.0 / 1024.0);
        println!("f64 {name}: sin abs {sa:.3e} ulps {su:.2}; cos abs {ca:.3e} ulps {cu:.2}");
        assert!(
            sa <= 2.0 * f64::EPSILON && ca <= 2.0 * f64::EPSILON,
            "{name}: abs error {sa:e} / {ca:e}"
        );
        assert!(su <= 3.0 && cu <= 3.0, "{name}: ulp error {su} / {cu}");
    }
}

#[test]
fn precise_f32_sin_cos_bounds() {
    let ranges: [(&str, Vec<f64>); 4] = [
        ("|x|<=4", points64(11, 200_000, 0.0, 4.0, false)),
        ("|x|<=1e4", points64(12, 200_000, 0.0, 1e4, false)),
        ("1e4..1e7 log", points64(13, 100_000, 1e4, 1e7, true)),
        ("1e7..1e30 log", points64(14, 100_000, 1e7, 1e30, true)),
    ];
    for (name, xs) in &ranges {
        let mut abs = 0f64;
        let mut ulps = 0f64;
        for &x in xs {
            let x32 = x as f32;
            let (s, c) = precise::sincos_f32(x32);
            for (got, want) in [(s, (x32 as f64).sin()), (c, (x32 as f64).cos())] {
                let e = (got as f64 - want).abs();
                abs = abs.max(e);
                if want.abs() >= 1.0 / 1024.0 {
                    ulps = ulps.max(e / ulp32(want as f32));
                }
            }
        }
        println!("f32 {name}: sin/cos abs {abs:.3e} ulps {ulps:.2}");
        assert!(abs <= f32::EPSILON as f64, "{name}: abs error {abs:e}");
        assert!(ulps <= 3.0, "{name}: ulp error {ulps}");
    }
}

#[test]
fn precise_atan2_bounds() {
    let mut r = Rng(21);
    let mut u64m = 0f64;
    let mut u32m = 0f64;
    for i in 0..200_000 {
        let (y, x) = if i % 2 == 0 {
            (r.uniform(-10.0, 10.0), r.uniform(-10.0, 10.0))
        } else {
            (r.logu(1e-30, 1e30), r.logu(1e-30, 1e30))
        };
        let want = y.atan2(x);
        u64m = u64m.max((precise::atan2_f64(y, x) - want).abs() / ulp64(want));
        let (y32, x32) = (y as f32, x as f32);
        let w32 = (y32 as f64).atan2(x32 as f64);
        u32m = u32m.max((precise::atan2_f32(y32, x32) as f64 - w32).abs() / ulp32(w32 as f32));
    }
    println!("atan2 f64 {u64m:.2} ulp, f32 {u32m:.2} ulp");
    assert!(u64m <= 3.0, "atan2 f64 {u64m} ulp");
    assert!(u32m <= 3.0, "atan2 f32 {u32m} ulp");
    // special cases
    for (y, x) in [
        (0.0, 1.0),
        (-0.0, 1.0),
        (0.0, -1.0),
        (-0.0, -1.0),
        (1.0, 0.0),
        (-1.0, 0.0),
        (f64::INFINITY, f64::INFINITY),
        (f64::INFINITY, -f64::INFINITY),
        (1.0, f64::INFINITY),
        (1.0, -f64::INFINITY),
        (f64::INFINITY, 1.0),
    ] {
        let want = y.atan2(x);
        assert_eq!(
            precise::atan2_f64(y, x).to_bits(),
            want.to_bits(),
            "atan2({y}, {x})"
        );
        assert!(
            (precise::atan2_f32(y as f32, x as f32) as f64 - want).abs() <= 4e-7,
            "atan2_f32({y}, {x})"
        );
    }
    assert!(
        precise::atan2_f64(f64::NAN, 1.0).is_nan() && precise::atan2_f32(1.0, f32::NAN).is_nan()
    );
    assert!(precise::sin_f64(f64::INFINITY).is_nan() && precise::cos_f32(f32::NAN).is_nan());
    assert_eq!(Trig::sin(0.5f64), precise::sin_f64(0.5));
}

// ---- the CPU reference against SciPy ----------------------------------------

use ptxlab::workloads::lomb::{self, Options, Rung, Shape};
use ptxlab::{Device, Error};

// The fixtures, shared with tests/lomb_models.rs (tests/common/lomb_fixtures.rs).
mod common {
    pub mod lomb_fixtures;
}
use common::lomb_fixtures::{fixture, npy};

fn npy2(name: &str) -> (usize, usize, Vec<f64>) {
    ptxlab::npy::parse_2d::<f64>(fixture(name), name).expect("fixture")
}
const OPTS: [Options; 4] = [
    Options {
        precenter: false,
        normalize: false,
    },
    Options {
        precenter: true,
        normalize: false,
    },
    Options {
        precenter: false,
        normalize: true,
    },
    Options {
        precenter: true,
        normalize: true,
    },
];

#[test]
fn reference_matches_scipy() {
    for case in ["material", "random"] {
        let x = npy(&format!("{case}_x.npy"));
        let y = npy(&format!("{case}_y.npy"));
        let f = npy(&format!("{case}_freqs.npy"));
        let (rows, cols, p) = npy2(&format!("{case}_pgram.npy"));
        assert_eq!((rows, cols), (4, f.len()));
        for (r, opts) in OPTS.iter().enumerate() {
            let want = &p[r * cols..(r + 1) * cols];
            for got in [
                lomb::reference(&x, &y, &f, *opts).unwrap(),
                lomb::reference_rayon(&x, &y, &f, *opts).unwrap(),
            ] {
                let a = lomb::accuracy(&got, want);
                let peak = want.iter().fold(0f64, |m, v| m.max(v.abs()));
                let max_rel = got
                    .iter()
                    .zip(want)
                    .filter(|(_, w)| w.abs() > 1e-6 * peak)
                    .map(|(g, w)| ((g - w) / w).abs())
                    .fold(0f64, f64::max);
                println!(
                    "{case} {opts:?}: err/peak {:.2e}, max rel {max_rel:.2e}",
                    a.err_over_peak
                );
                assert!(
                    a.err_over_peak <= 1e-12,
                    "{case} {opts:?}: {:e}",
                    a.err_over_peak
                );
                assert!(
                    max_rel <= 1e-10,
                    "{case} {opts:?}: max relative {max_rel:e}"
                );
            }
        }
    }
    // The embedded material samples are the fixture's.
    let (mx, my) = lomb::material_samples().unwrap();
    assert_eq!(mx, npy("material_x.npy"));
    assert_eq!(my, npy("material_y.npy"));
    assert_eq!(mx.len(), 114);
}

#[test]
fn even_grid_detection() {
    assert!(lomb::even_grid(&lomb::material_freqs(1 << 20)).is_some());
    assert!(lomb::even_grid(&npy("random_freqs.npy")).is_none());
    assert_eq!(lomb::even_grid(&[2.0]), Some((2.0, 0.0)));
}

// ---- every kernel on the simulator ----------------------------------------------

#[test]
fn sim_check_all_kernels() {
    lomb::sim_check().unwrap();
}

#[test]
fn sim_scipy_fixture_every_rung() {
    let dev = Device::sim();
    let shape = Shape::material(&dev);
    let x = npy("random_x.npy");
    let y = npy("random_y.npy");
    let f = npy("random_freqs.npy");
    let (_, cols, p) = npy2("random_pgram.npy");
    for (r, opts) in OPTS.iter().enumerate() {
        let want = &p[r * cols..(r + 1) * cols];
        for rung in [Rung::Cached, Rung::FastLean, Rung::Bounds, Rung::Shared] {
            let a32 = lomb::check::<f32>(&dev, rung, &x, &y, &f, *opts, want, shape).unwrap();
            let a64 = lomb::check::<f64>(&dev, rung, &x, &y, &f, *opts, want, shape).unwrap();
            assert!(
                a64.err_over_peak < 1e-12,
                "{rung:?} f64 {:e}",
                a64.err_over_peak
            );
            println!(
                "{rung:?} {opts:?}: f32 {:.2e}, f64 {:.2e}",
                a32.err_over_peak, a64.err_over_peak
            );
        }
    }
}

/// `rung` in f32 and f64 against `want`, asserting the bounds (1e-4
/// and 1e-9 of the peak); the two errors over the peak.
#[allow(clippy::too_many_arguments)]
fn check_both(
    dev: &Device,
    rung: Rung,
    x: &[f64],
    y: &[f64],
    f: &[f64],
    opts: Options,
    want: &[f64],
    shape: Shape,
) -> (f64, f64) {
    let a32 = lomb::check::<f32>(dev, rung, x, y, f, opts, want, shape).unwrap();
    let a64 = lomb::check::<f64>(dev, rung, x, y, f, opts, want, shape).unwrap();
    assert!(
        a32.err_over_peak < 1e-4,
        "{rung:?} f32 {:e}",
        a32.err_over_peak
    );
    assert!(
        a64.err_over_peak < 1e-9,
        "{rung:?} f64 {:e}",
        a64.err_over_peak
    );
    (a32.err_over_peak, a64.err_over_peak)
}

/// The step of the material's grid (`material_freqs(MATERIAL_FREQS)`).
fn material_step() -> f64 {
    let (lo, hi) = lomb::MATERIAL_F_RANGE;
    (hi - lo) / (lomb::MATERIAL_FREQS - 1) as f64
}

#[test]
fn sim_recurrences_on_material_grid() {
    // The material's samples on a 1000-point slice of its 2^20 grid (same
    // step): the rotation and the three-term recurrence, f32 and f64.
    let dev = Device::sim();
    let shape = Shape::material(&dev);
    let (x, y) = lomb::material_samples().unwrap();
    let full_step = material_step();
    let f: Vec<f64> = (0..1000)
        .map(|k| 3.0 + k as f64 * full_step * 37.0)
        .collect();
    // The step angles of this grid are small: one shift centres them all.
    assert!(lomb::cheby_shift(&x, full_step * 37.0).is_some());
    let want = lomb::reference(&x, &y, &f, Options::default()).unwrap();
    for rung in [
        Rung::Rotate,
        Rung::Cheby,
        Rung::ChebyTab,
        Rung::ChebyTabPipe,
        Rung::Taylor,
    ] {
        let o = Options::default();
        let (e32, e64) = check_both(&dev, rung, &x, &y, &f, o, &want, shape);
        println!("{rung:?}: f32 {e32:.2e}, f64 {e64:.2e}");
    }
}

#[test]
fn sim_cheby_shift_and_fallback() {
    // A coarse grid over long times: the step angles span many turns, so no
    // shift keeps every sin p_j >= 1/2 and the Cheby rung runs the rotation
    // kernel instead; the result must still be within the bounds.
    let dev = Device::sim();
    let shape = Shape::material(&dev);
    let (x, y, f) = lomb::coarse_case();
    let step = 0.05;
    assert!(lomb::cheby_shift(&x, step).is_none());
    let (_, tab) = lomb::recurrence_tables::<f64>(&x, &y, step);
    assert!(tab.is_none());
    // The shift centres the angles on pi/2 when they fit.
    let g = lomb::cheby_shift(&x, 1e-4).unwrap();
    let (lo, hi) = (1e-4 * x[0] + g, 1e-4 * x[60] + g);
    assert!((0.5 * (lo + hi) - std::f64::consts::FRAC_PI_2).abs() < 1e-12);
    let want = lomb::reference(&x, &y, &f, Options::default()).unwrap();
    let o = Options {
        precenter: true,
        normalize: true,
    };
    let want_o = lomb::reference(&x, &y, &f, o).unwrap();
    for (opts, want) in [(Options::default(), &want), (o, &want_o)] {
        for rung in [
            Rung::Cheby,
            Rung::ChebyTab,
            Rung::ChebyTabPipe,
            Rung::Taylor,
        ] {
            check_both(&dev, rung, &x, &y, &f, opts, want, shape);
        }
    }
}

#[test]
fn finish_without_trig_matches_finish() {
    // Rung 11's finish (half-angle formulas) against the atan2/sincos one on
    // random sums, and on the corners: no preferred angle (CS = 0, CC = SS),
    // a double angle of exactly pi (both signs of zero), and of pi/2.
    use kernels_gpu::lomb::{finish, finish_half, finish_ls};
    let mut rng = ptxlab::rng::SplitMix64(7);
    // Sums of real samples: 40 random phases (spread by a random amount, so
    // some sets are nearly aligned) and values.
    let mut cases: Vec<[f64; 5]> = (0..5_000)
        .map(|_| {
            let spread = 6.3 * rng.next_f64();
            let mut sums = [0.0; 5];
            for _ in 0..40 {
                let (s, c) = (spread * rng.next_f64()).sin_cos();
                let y = 2.0 * rng.next_f64() - 1.0;
                sums[0] += y * c;
                sums[1] += y * s;
                sums[2] += c * c;
                sums[3] += s * s;
                sums[4] += c * s;
            }
            sums
        })
        .collect();
    cases.extend([
        [3.0, -2.0, 50.0, 50.0, 0.0],
        [3.0, -2.0, 10.0, 90.0, 0.0],
        [3.0, -2.0, 10.0, 90.0, -0.0],
        [3.0, -2.0, 50.0, 50.0, 7.0],
        [3.0, -2.0, 50.0, 50.0, -7.0],
        [3.0, -2.0, 90.0, 10.0, 0.0],
    ]);
    for [xc, xs, cc, ss, cs] in cases {
        let a = finish(xc, xs, cc, ss, cs, 0.5);
        let b = finish_half(xc, xs, cc, ss, cs, 0.5);
        assert!(
            (a - b).abs() <= 1e-12 * a.abs().max(1.0),
            "{a} {b} at {xc} {xs} {cc} {ss} {cs}"
        );
        let a32 = finish(xc as f32, xs as f32, cc as f32, ss as f32, cs as f32, 0.5);
        let b32 = finish_half(xc as f32, xs as f32, cc as f32, ss as f32, cs as f32, 0.5);
        let d32 = (f64::from(a32) - f64::from(b32)).abs();
        assert!(d32 <= 1e-4 * a.abs().max(1.0), "{a32} {b32} ({a})");
        // Rung 4c's least-squares finish: the same value without tau (a
        // singular M, CC SS = CS^2, is not among the cases: both are 0/0).
        let c = finish_ls(xc, xs, cc, ss, cs, 0.5);
        assert!(
            (a - c).abs() <= 1e-11 * a.abs().max(1.0),
            "{a} {c} at {xc} {xs} {cc} {ss} {cs}"
        );
        let c32 = finish_ls(xc as f32, xs as f32, cc as f32, ss as f32, cs as f32, 0.5);
        let e32 = (f64::from(a32) - f64::from(c32)).abs();
        assert!(e32 <= 1e-4 * a.abs().max(1.0), "{a32} {c32} ({a})");
    }
}

#[test]
fn sim_taylor_long_runs_on_the_material_grid() {
    // Rung 12 at the material's own step (runs of 128, the plan it gets at
    // full size): 9000 frequencies around the peak (9 blocks of 1024, the
    // last one partial), and the random samples on a step that gives
    // shorter runs; plus the plan's limits.
    let dev = Device::sim();
    let shape = Shape::material(&dev);
    let (x, y) = lomb::material_samples().unwrap();
    let step = material_step();
    let plan32 = lomb::taylor_plan(&x, step, lomb::TAYLOR_2TAU_MAX_F32);
    let plan64 = lomb::taylor_plan(&x, step, lomb::TAYLOR_2TAU_MAX_F64);
    assert_eq!((plan32.run, plan64.run), (128, 128));
    let f: Vec<f64> = (0..9000)
        .map(|k| 0.01 + (100_000 + k) as f64 * step)
        .collect();
    let want = lomb::reference(&x, &y, &f, Options::default()).unwrap();
    let o = Options::default();
    let (e32, e64) = check_both(&dev, Rung::Taylor, &x, &y, &f, o, &want, shape);
    println!("material grid, runs of 128: f32 {e32:.2e}, f64 {e64:.2e}");
    let (rx, ry) = lomb::random_samples(301, 3);
    let step = 1.1e-4;
    let (p32, p64) = (
        lomb::taylor_plan(&rx, step, lomb::TAYLOR_2TAU_MAX_F32),
        lomb::taylor_plan(&rx, step, lomb::TAYLOR_2TAU_MAX_F64),
    );
    assert!(p32.run >= 2 && p32.run <= p64.run, "{p32:?} {p64:?}");
    let f: Vec<f64> = (0..3001).map(|k| 0.3 + k as f64 * step).collect();
    let want = lomb::reference(&rx, &ry, &f, o).unwrap();
    let (e32, e64) = check_both(&dev, Rung::Taylor, &rx, &ry, &f, o, &want, shape);
    println!(
        "random samples, runs of {} / {}: f32 {e32:.2e}, f64 {e64:.2e}",
        p32.run, p64.run
    );
    // Blocks of another size are refused with a clear error.
    let bad = Shape {
        blocks: 1,
        block: 256,
    };
    let e = lomb::periodogram::<f32>(&dev, Rung::Taylor, &rx, &ry, &f, o, bad).unwrap_err();
    assert!(e.to_string().contains("needs blocks of 128 threads"), "{e}");
    // A grid too coarse for any expansion: runs of 1 (exact, direct).
    assert_eq!(lomb::taylor_plan(&x, 1.0, 0.05).run, 1);
    // All times equal: h = 1, and any run is exact (tau v = 0).
    assert_eq!(lomb::taylor_plan(&[2.0, 2.0], 1e-3, 0.05).h, 1.0);
}

#[test]
fn sim_table_anchors_across_chunks_and_groups() {
    // Rung 11 with more samples than one shared chunk (130 = 64 + 64 + 2)
    // and more groups of 128 runs than blocks (one block asked for: the
    // launch caps the grid at 4 blocks, so every block takes several
    // groups, and the last group is partial); random samples and values.
    let dev = Device::sim();
    let shape = Shape {
        blocks: 1,
        block: 128,
    };
    let (x, y) = lomb::random_samples(130, 11);
    let step = 1.3e-3;
    let f: Vec<f64> = (0..12_001).map(|k| 0.2 + k as f64 * step).collect();
    let want = lomb::reference(&x, &y, &f, Options::default()).unwrap();
    let o = Options::default();
    for rung in [Rung::ChebyTab, Rung::ChebyTabPipe, Rung::Taylor] {
        check_both(&dev, rung, &x, &y, &f, o, &want, shape);
    }
    // Blocks of another size are refused with a clear error, not a trap.
    let bad = Shape {
        blocks: 1,
        block: 64,
    };
    let e = lomb::periodogram::<f32>(&dev, Rung::ChebyTab, &x, &y, &f, o, bad).unwrap_err();
    assert!(e.to_string().contains("need blocks of 128 threads"), "{e}");
}

// ---- hostile inputs ------------------------------------------------------------------

fn input_err(r: ptxlab::Result<Vec<f64>>) -> String {
    match r {
        Err(e @ Error::Runtime(ptxlab::runtime::Error::Input { .. })) => e.to_string(),
        other => panic!("expected an input error, got {other:?}"),
    }
}

#[test]
fn bad_inputs_are_clear_errors() {
    let dev = Device::sim();
    let shape = Shape::material(&dev);
    let o = Options::default();
    let f = [1.0, 2.0, 3.0];
    let e = input_err(lomb::reference(&[1.0, 2.0], &[1.0], &f, o));
    assert!(e.contains("x has 2 values and y has 1"), "{e}");
    let e = input_err(lomb::reference(&[], &[], &f, o));
    assert!(e.contains("x and y are empty"), "{e}");
    let e = input_err(lomb::reference(&[1.0], &[1.0], &[], o));
    assert!(e.contains("no frequencies"), "{e}");
    let e = input_err(lomb::reference(&[1.0, 2.0], &[1.0, 2.0], &[1.0, 0.0], o));
    assert!(e.contains("freqs[1] = 0"), "{e}");
    let e = input_err(lomb::reference(&[1.0, f64::NAN], &[1.0, 2.0], &f, o));
    assert!(e.contains("x[1] = NaN is not finite"), "{e}");
    let e = input_err(lomb::reference(&[1.0, 2.0], &[f64::INFINITY, 2.0], &f, o));
    assert!(e.contains("y[0] = inf is not finite"), "{e}");
    let e = input_err(lomb::reference(
        &[1.0, 2.0],
        &[0.0, 0.0],
        &f,
        Options {
            precenter: false,
            normalize: true,
        },
    ));
    assert!(e.contains("normalize needs sum(y^2) > 0"), "{e}");
    // The same checks guard the kernels.
    let e = input_err(lomb::periodogram::<f32>(
        &dev,
        Rung::Cached,
        &[1.0, 2.0],
        &[1.0],
        &f,
        o,
        shape,
    ));
    assert!(e.contains("same length"), "{e}");
    // Rotation forced on an uneven grid.
    let e = input_err(lomb::periodogram::<f32>(
        &dev,
        Rung::Rotate,
        &[1.0, 2.0],
        &[1.0, 3.0],
        &[1.0, 2.0, 4.0],
        o,
        shape,
    ));
    assert!(e.contains("needs an evenly spaced frequency grid"), "{e}");
    // (Unknown variants are clap's to refuse: `lomb::cli`'s unit tests and
    // lab/ptxlab/tests/hostile/lomb.rs.)
}

// ---- GPU --------------------------------------------------------------------------------

#[test]
fn gpu_every_rung_material() {
    let Some(dev) = ptxlab::runtime::testing::gpu_or_skip() else {
        return;
    };
    let shape = Shape::material(&dev);
    let (x, y) = lomb::material_samples().unwrap();
    let f = lomb::material_freqs(1 << 16);
    let want = lomb::reference_rayon(&x, &y, &f, Options::default()).unwrap();
    for rung in Rung::LADDER {
        let a32 =
            lomb::check::<f32>(&dev, rung, &x, &y, &f, Options::default(), &want, shape).unwrap();
        let a64 =
            lomb::check::<f64>(&dev, rung, &x, &y, &f, Options::default(), &want, shape).unwrap();
        println!(
            "{}: f32 {:.2e} f64 {:.2e}",
            rung.name(),
            a32.err_over_peak,
            a64.err_over_peak
        );
    }
}

#[test]
fn bench_without_gpu_gives_cpu_rows_and_a_skip() {
    let ctx = ptxlab::workloads::BenchCtx {
        dev: None,
        quick: true,
        ceilings: Default::default(),
        gpu_skip: None,
    };
    let rows = lomb::bench(&ctx).unwrap();
    assert!(
        rows.iter()
            .any(|r| r.backend == "cpu" && r.timing.is_some())
    );
    assert!(
        rows.iter()
            .any(|r| matches!(r.status, ptxlab::report::Status::Skipped(_)))
    );
}

#[test]
fn lean_rung_has_its_own_block_size() {
    // Rung 4c launches the block size it was tuned for; every other rung
    // keeps the shape it is given, and the rung runs on any block size.
    let dev = Device::sim();
    let shape = Shape::material(&dev);
    assert_eq!(
        shape.for_rung(Rung::FastLean).block,
        kernels_gpu::lomb::LEAN_BLOCK
    );
    for rung in Rung::LADDER {
        if rung != Rung::FastLean {
            assert_eq!(shape.for_rung(rung).block, shape.block, "{rung:?}");
        }
    }
    let (x, y) = lomb::random_samples(37, 11);
    let f = lomb::material_freqs(1003);
    let o = Options::default();
    let want = lomb::reference_rayon(&x, &y, &f, o).unwrap();
    for block in [shape.for_rung(Rung::FastLean).block, 96, 33] {
        let s = Shape { block, ..shape };
        check_both(&dev, Rung::FastLean, &x, &y, &f, o, &want, s);
    }
}
