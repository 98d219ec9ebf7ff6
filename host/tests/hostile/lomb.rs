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
    let grid = ["--start", "0.5", "--step", "0.25", "--count", "7"];
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
            &["--start", "0.5", "--step", "0.25", "--count", "0"],
            &["--count", "0 frequencies; give at least one"],
        );
        with(
            &xs_,
            &ys_,
            &["--start", "0.5", "--step", "nan", "--count", "5"],
            &["--step", "NaN", "finite and non-zero"],
        );
        with(
            &xs_,
            &ys_,
            &["--start", "0.5", "--count", "5"],
            &["--start/--step/--count", "give all three"],
        );
        with(
            &xs_,
            &ys_,
            &["--freqs", &s(&f0), "--count", "5"],
            &["--freqs", "not both"],
        );
        with(
            &xs_,
            &ys_,
            &["--start", "0.5", "--step", "0.25", "--count", "1e12"],
            &["--count: needs", "of host memory", "use a smaller --count"],
        );
        // Options that are wrong whatever the inputs: after a valid grid.
        let bad_options: [(&[&str], &[&str]); 8] = [
            (
                &["--variant", "bogus"][..],
                &["`bogus`", "allowed: baseline, cached"][..],
            ),
            (
                &["--variant", "regcap8"][..],
                &["`regcap8`", "regcapN (16..=255)"][..],
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
                &["`f16`", "allowed: f32, f64"][..],
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
            vec!["--start", "2.0", "--step", "-0.25", "--count", "7"],
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
                "--count",
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
                "--count",
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
                    "--count",
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
                "--count",
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
