//! `ptxlab lomb-scargle`.

use crate::common::*;
use crate::{CPU, SIM, on};

#[test]
fn lomb_scargle_hostile_inputs_and_valid_edges() {
    let xs: Vec<f64> = (0..9)
        .map(|i| 0.37 * i as f64 + 0.01 * (i * i) as f64)
        .collect();
    let ys: Vec<f64> = xs.iter().map(|t| (1.3 * t).cos()).collect();
    let x = npy("ls_x.npy", "<f8", "(9,)", &f64_bytes(&xs, false));
    let y = npy("ls_y.npy", "<f8", "(9,)", &f64_bytes(&ys, false));
    let y_be = npy("ls_y_be.npy", ">f8", "(9,)", &f64_bytes(&ys, true));
    let x32: Vec<f32> = xs.iter().map(|v| *v as f32).collect();
    let x_f4 = npy("ls_x_f4.npy", "<f4", "(9,)", &f32_bytes(&x32, false));
    let y_short = npy("ls_y5.npy", "<f8", "(5,)", &f64_bytes(&ys[..5], false));
    let mut yn = ys.clone();
    yn[3] = f64::NAN;
    let y_nan = npy("ls_y_nan.npy", "<f8", "(9,)", &f64_bytes(&yn, false));
    let empty = npy("ls_empty.npy", "<f8", "(0,)", &[]);
    let x_2d = npy("ls_x_2d.npy", "<f8", "(3, 3)", &f64_bytes(&xs, false));
    let x_i8 = npy("ls_x_i8.npy", "<i8", "(9,)", &[0u8; 72]);
    let x_tr = npy("ls_x_tr.npy", "<f8", "(9,)", &f64_bytes(&xs[..8], false));
    let f0 = npy("ls_f0.npy", "<f8", "(2,)", &f64_bytes(&[0.0, 1.0], false));
    let f_big = npy(
        "ls_f_big.npy",
        "<f8",
        "(2,)",
        &f64_bytes(&[1e300, 2e300], false),
    );
    let x_huge = npy(
        "ls_x_huge.npy",
        "<f8",
        "(3,)",
        &f64_bytes(&[1e200, 2e200, 3e200], false),
    );
    let y3 = npy(
        "ls_y3.npy",
        "<f8",
        "(3,)",
        &f64_bytes(&[1.0, 2.0, 3.0], false),
    );
    let f_huge = npy("ls_f_huge.npy", "<f8", "(1,)", &f64_bytes(&[1e200], false));
    let s = |p: &std::path::PathBuf| p.to_str().unwrap().to_string();
    let grid = ["--start", "0.5", "--step", "0.25", "--n", "7"];
    for be in [CPU, SIM] {
        let with = |x: &str, y: &str, extra: &[&str], needles: &[&str]| {
            let mut a = vec!["lomb-scargle", "--x", x, "--y", y];
            a.extend_from_slice(extra);
            a.extend_from_slice(&["--backend", be]);
            fails_with(&a, needles);
        };
        let (xs_, ys_) = (s(&x), s(&y));
        with(
            &xs_,
            &s(&y_short),
            &grid,
            &["x has 9 values and y has 5", "same length"],
        );
        with(
            &xs_,
            &s(&y_nan),
            &grid,
            &["lomb-scargle y", "y[3] = NaN is not finite"],
        );
        with(
            &s(&empty),
            &s(&empty),
            &grid,
            &["x and y are empty", "at least one sample"],
        );
        with(
            &s(&x_2d),
            &ys_,
            &grid,
            &["(3, 3) has 2 dimension(s); a 1-D array is required"],
        );
        with(
            &s(&x_i8),
            &ys_,
            &grid,
            &["its dtype is '<i8' (int64), but float64 or float32 is required"],
        );
        with(
            &s(&x_tr),
            &ys_,
            &grid,
            &["the file is truncated", "needs 72 bytes", "holds 64"],
        );
        with(
            &xs_,
            &ys_,
            &["--freqs", &s(&f0)],
            &["freqs[0] = 0", "use non-zero frequencies"],
        );
        with(
            &xs_,
            &ys_,
            &words("--start 0.5 --step 0.25 --n 0"),
            &["--n", "0 frequencies; give at least one"],
        );
        with(
            &xs_,
            &ys_,
            &words("--start 0.5 --step nan --n 5"),
            &["--step", "NaN", "finite and non-zero"],
        );
        with(
            &xs_,
            &ys_,
            &words("--start 0.5 --n 5"),
            &["--start/--step/--n", "give all three"],
        );
        with(
            &xs_,
            &ys_,
            &["--freqs", &s(&f0), "--n", "5"],
            &["--freqs", "not both"],
        );
        with(
            &xs_,
            &ys_,
            &words("--start 0.5 --step 0.25 --n 1e12"),
            &["--n: needs", "of host memory", "use a smaller --n"],
        );
        // Options that are wrong whatever the inputs: after a valid grid.
        let bad_options: [(&[&str], &[&str]); 9] = [
            (
                &["--variant", "bogus"][..],
                &[
                    "invalid value 'bogus'",
                    "possible values: all, baseline, cached",
                ][..],
            ),
            (
                &["--variant", "cheby-tabb"][..],
                &[
                    "invalid value 'cheby-tabb'",
                    "a similar value exists: 'cheby-tab",
                ][..],
            ),
            (
                &["--variant", "regcap8"][..],
                &["`regcap8`", "regcapN takes a register cap N in 16..=255"][..],
            ),
            (
                &["--block", "0"][..],
                &["--block", "0 threads per block; allowed 1..=1024"][..],
            ),
            (
                &["--block", "2000"][..],
                &["--block", "2000 threads per block"][..],
            ),
            (
                &["--blocks-per-sm", "0"][..],
                &["--blocks-per-sm", "allowed 1..=1024"][..],
            ),
            (
                &["--blocks-per-sm", "4294967295"][..],
                &["--blocks-per-sm", "allowed 1..=1024"][..],
            ),
            (&["--reps", "0"][..], &["--reps", "allowed 1..=10000"][..]),
            (
                &["--precision", "f16"][..],
                &["invalid value 'f16'", "possible values: f32, f64"][..],
            ),
        ];
        for (extra, needles) in bad_options {
            with(&xs_, &ys_, &[&grid[..], extra].concat(), needles);
        }
        with(&xs_, &s(&empty), &[], &["x has 9 values and y has 0"]);
        fails_with(
            &on(be, &["lomb-scargle", "--x", &xs_]),
            &["--x/--y", "give both --x and --y, or neither"],
        );
        // Values whose phase w x overflows f64: refused, not a NaN periodogram.
        with(
            &s(&x_huge),
            &s(&y3),
            &["--freqs", &s(&f_huge), "--precision", "f64"],
            &["too large for f64", "rescale x, y or the frequencies"],
        );
    }
    // The device path in f32: values past f32's range are refused up front.
    fails_with(
        &on(
            SIM,
            &[
                "lomb-scargle",
                "--x",
                &s(&x),
                "--y",
                &s(&y),
                "--freqs",
                &s(&f_big),
            ],
        ),
        &[
            "lomb-scargle freqs",
            "2.000e300 is beyond the largest f32",
            "--precision f64",
        ],
    );
    // A launch shape over the kernel's own limit, on the simulator.
    fails_with(
        &on(
            SIM,
            &[
                &[
                    "lomb-scargle",
                    "--x",
                    &s(&x),
                    "--y",
                    &s(&y),
                    "--variant",
                    "launch-bounds",
                    "--block",
                    "1024",
                ][..],
                &grid[..],
            ]
            .concat(),
        ),
        &[
            "invalid launch of `lomb_bounds_f32`",
            "1024 threads",
            "launch_bounds(128)",
        ],
    );
    fails_with(
        &on(
            SIM,
            &[
                "lomb-scargle",
                "--x",
                &s(&x),
                "--y",
                &s(&y),
                "--variant",
                "rotate",
                "--freqs",
                &s(&f0),
            ],
        ),
        &["freqs[0] = 0"],
    );

    // Valid edges: big-endian y and float32 x; a single frequency; a
    // negative step; the simulator agrees with the CPU reference.
    let mut outs = Vec::new();
    for (be, xf, yf, extra) in [
        (
            CPU,
            &x,
            &y,
            vec!["--start", "2.0", "--step", "-0.25", "--n", "7"],
        ),
        (
            SIM,
            &x,
            &y_be,
            vec![
                "--start",
                "2.0",
                "--step",
                "-0.25",
                "--n",
                "7",
                "--variant",
                "rotate",
            ],
        ),
        (
            SIM,
            &x,
            &y,
            vec![
                "--start",
                "2.0",
                "--step",
                "-0.25",
                "--n",
                "7",
                "--precision",
                "f64",
                "--variant",
                "shared",
            ],
        ),
    ] {
        let out = tmp(&format!("ls_out_{}.npy", outs.len()));
        let mut a = vec![
            "lomb-scargle",
            "--x",
            xf.to_str().unwrap(),
            "--y",
            yf.to_str().unwrap(),
            "--out",
            &out,
            "--reps",
            "1",
        ];
        a.extend(extra.iter().copied());
        let text = succeeds(&on(be, &a));
        if be == SIM {
            assert!(text.contains("PASS lomb-scargle"), "{text}");
        }
        outs.push(out);
    }
    let cpu = read_f64_npy(&outs[0], 7);
    let sim32 = read_f32_npy(&outs[1], 7);
    let sim64 = read_f64_npy(&outs[2], 7);
    let peak = cpu.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for i in 0..7 {
        assert!(
            (sim32[i] as f64 - cpu[i]).abs() <= 1e-4 * peak,
            "{sim32:?} vs {cpu:?}"
        );
        assert!(
            (sim64[i] - cpu[i]).abs() <= 1e-9 * peak,
            "{sim64:?} vs {cpu:?}"
        );
    }
    // One sample: the periodogram is 0/0, refused with the reason. Two
    // samples and one frequency work; float32 x is read and widened.
    let one = npy("ls_one.npy", "<f8", "(1,)", &f64_bytes(&[0.5], false));
    let two = npy("ls_two.npy", "<f8", "(2,)", &f64_bytes(&[0.5, 1.7], false));
    for be in [CPU, SIM] {
        fails_with(
            &on(
                be,
                &[
                    "lomb-scargle",
                    "--x",
                    &s(&one),
                    "--y",
                    &s(&one),
                    "--start",
                    "1",
                    "--step",
                    "1",
                    "--n",
                    "1",
                ],
            ),
            &[
                "freqs[0] = 1 is NaN",
                "degenerate",
                "give at least 2 samples at distinct times",
            ],
        );
        succeeds(&on(
            be,
            &[
                "lomb-scargle",
                "--x",
                &s(&two),
                "--y",
                &s(&two),
                "--start",
                "1",
                "--step",
                "1",
                "--n",
                "1",
                "--reps",
                "1",
            ],
        ));
        succeeds(&on(
            be,
            &[
                &[
                    "lomb-scargle",
                    "--x",
                    &s(&x_f4),
                    "--y",
                    &s(&y),
                    "--reps",
                    "1",
                ][..],
                &grid[..],
            ]
            .concat(),
        ));
    }
}

/// A fixture of `tests/fixtures/lomb` (made by `make_astropy_fixture.py`),
/// embedded in the test binary and written to the temporary folder, so the
/// test runs where the source tree is not (a device bundle).
fn lomb_fixture(name: &str) -> String {
    macro_rules! embedded {
        ($($f:literal),* $(,)?) => {
            match name {
                $($f => &include_bytes!(concat!("../../../../tests/fixtures/lomb/", $f))[..],)*
                other => panic!("no embedded lomb fixture {other}"),
            }
        };
    }
    let bytes = embedded!(
        "gen_t.npy",
        "gen_y.npy",
        "gen_dy.npy",
        "long_dy.npy",
        "gen_pgram_even.npy",
        "batch_small_pgram.npy",
        "batch_small.npz",
        "batch_small_z.npz",
    );
    raw(&format!("fixture_{name}"), bytes)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn lomb_scargle_models_batches_and_checks() {
    let (t, y, dy) = (
        lomb_fixture("gen_t.npy"),
        lomb_fixture("gen_y.npy"),
        lomb_fixture("gen_dy.npy"),
    );
    let grid = ["--start", "0.1", "--step", "0.05", "--n", "211"];
    for be in [CPU, SIM] {
        let with = |extra: &[&str], needles: &[&str]| {
            let mut a = vec!["lomb-scargle", "--x", &t, "--y", &y];
            a.extend_from_slice(&grid);
            a.extend_from_slice(extra);
            fails_with(&on(be, &a), needles);
        };
        with(
            &["--check", "most"],
            &[
                "invalid value 'most' for '--check",
                "possible values: none, sample, full",
            ],
        );
        with(
            &["--normalization", "max"],
            &[
                "invalid value 'max' for '--normalization",
                "possible values: standard, model, log, psd",
            ],
        );
        with(
            &["--precenter", "--fit-mean"],
            &["SciPy's options", "use --center-data"],
        );
        with(
            &["--phases", "wide"],
            &[
                "invalid value 'wide' for '--phases",
                "possible values: auto, plain, long",
            ],
        );
        with(
            &["--phases", "lonng"],
            &["invalid value 'lonng'", "a similar value exists: 'long'"],
        );
        with(&["--top", "0"], &["--top", "allowed 1..=1000"]);
        with(
            &["--periods", "/tmp/p.npy"],
            &["--periods", "written for --curves"],
        );
        with(
            &["--dy", &lomb_fixture("long_dy.npy")],
            &["dy has 300 values and y has 61"],
        );
        if be == SIM {
            with(
                &["--fit-mean", "--variant", "rotate"],
                &[
                    "`rotate` computes SciPy's classic periodogram only",
                    "taylor",
                ],
            );
        }
        // Astropy's model with dy on every normalization: within the bounds
        // of the astropy fixture (rows 16 + n: dy, fit_mean and center_data).
        for (n, norm) in ["standard", "model", "log", "psd"].iter().enumerate() {
            let out = tmp(&format!("ls_gen_{be}_{norm}.npy"));
            let mut a = vec![
                "lomb-scargle",
                "--x",
                &t,
                "--y",
                &y,
                "--dy",
                &dy,
                "--normalization",
                norm,
                "--out",
                &out,
            ];
            a.extend_from_slice(&grid);
            if be == SIM {
                a.extend_from_slice(&words("--variant all --check full"));
            }
            let text = succeeds(&on(be, &a));
            assert!(text.contains("time to the written result"), "{text}");
            if be == SIM {
                assert!(text.contains("PASS lomb-scargle f32 taylor"), "{text}");
                assert!(
                    text.contains("skipped (SciPy's classic periodogram only)"),
                    "{text}"
                );
            }
            let got: Vec<f64> = if be == SIM {
                read_f32_npy(&out, 211).into_iter().map(f64::from).collect()
            } else {
                read_f64_npy(&out, 211)
            };
            let want = {
                let p = std::fs::read(lomb_fixture("gen_pgram_even.npy")).unwrap();
                let (_, cols, v) = ptxlab::npy::parse_2d::<f64>(&p, "fixture").unwrap();
                v[(16 + n) * cols..(17 + n) * cols].to_vec()
            };
            let peak = want.iter().fold(0f64, |m, v| m.max(v.abs()));
            let tol = if be == SIM { 1e-4 } else { 1e-9 };
            for i in 0..211 {
                assert!(
                    (got[i] - want[i]).abs() <= tol * peak,
                    "{norm} {i}: {} {}",
                    got[i],
                    want[i]
                );
            }
        }
    }
    // Batches: an .npz (stored and deflated) against astropy, the best
    // periods, and the errors.
    let want: Vec<f64> = {
        let p = std::fs::read(lomb_fixture("batch_small_pgram.npy")).unwrap();
        ptxlab::npy::parse_2d::<f64>(&p, "fixture").unwrap().2
    };
    let bgrid = ["--start", "0.1", "--step", "0.05", "--n", "200"];
    for (be, file) in [(CPU, "batch_small.npz"), (SIM, "batch_small_z.npz")] {
        let (out, per) = (
            tmp(&format!("ls_b_{be}.npy")),
            tmp(&format!("ls_p_{be}.npy")),
        );
        let npz = lomb_fixture(file);
        let mut a = vec![
            "lomb-scargle",
            "--curves",
            &npz,
            "--out",
            &out,
            "--periods",
            &per,
            "--top",
            "2",
        ];
        a.extend_from_slice(&bgrid);
        if be == SIM {
            a.extend_from_slice(&["--check", "full"]);
        }
        let text = succeeds(&on(be, &a));
        assert!(text.contains("3 curves, 71 samples"), "{text}");
        if be == SIM {
            assert!(text.contains("PASS lomb-scargle batch f32"), "{text}");
        }
        let got: Vec<f64> = if be == SIM {
            read_f32_npy(&out, 600).into_iter().map(f64::from).collect()
        } else {
            read_f64_npy(&out, 600)
        };
        for c in 0..3 {
            let w = &want[c * 200..(c + 1) * 200];
            let peak = w.iter().fold(0f64, |m, v| m.max(v.abs()));
            let tol = if be == SIM { 1e-4 } else { 1e-9 };
            for i in 0..200 {
                assert!(
                    (got[c * 200 + i] - w[i]).abs() <= tol * peak,
                    "curve {c} {i}"
                );
            }
            // The best period is that of the highest value.
            let imax = (0..200).max_by(|&a, &b| w[a].total_cmp(&w[b])).unwrap();
            let periods = read_f64_npy(&per, 6);
            let p = std::f64::consts::TAU / (0.1 + 0.05 * imax as f64);
            assert!(
                (periods[2 * c] - p).abs() <= 1e-12 * p,
                "curve {c}: {periods:?} vs {p}"
            );
        }
        let npz_ = lomb_fixture(file);
        fails_with(
            &on(be, &["lomb-scargle", "--curves", &npz_]),
            &["--curves", "need their frequency grid"],
        );
        fails_with(
            &on(
                be,
                &[
                    &["lomb-scargle", "--curves", &npz_, "--variant", "taylor"][..],
                    &bgrid[..],
                ]
                .concat(),
            ),
            &["--curves", "drop --x, --y, --dy and --variant"],
        );
        fails_with(
            &on(
                be,
                &[&["lomb-scargle", "--curves", &t][..], &bgrid[..]].concat(),
            ),
            &["neither a folder nor an .npz file", "offsets"],
        );
    }
}
