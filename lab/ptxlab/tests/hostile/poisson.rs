//! `ptxlab poisson`.

use crate::common::*;
use crate::{CPU, SIM, on, refused};

#[test]
fn poisson_hostile_options() {
    for be in [CPU, SIM] {
        for size in ["0", "1", "2"] {
            fails_with(
                &on(be, &["poisson", "--size", size]),
                &[&format!("{size}x{size}"), "smaller than 3x3", "at least 3"],
            );
        }
        fails_with(
            &on(be, &["poisson", "--size", "3x1000000000"]),
            &[
                "grid",
                "3x1000000000",
                "at most 2147483647 cells",
                "use a smaller grid",
            ],
        );
        fails_with(
            &on(be, &["poisson", "--size", "-5"]),
            &["--size", "`-5` is negative"],
        );
        for tol in ["nan", "inf", "-1", "0"] {
            fails_with(
                &on(be, &["poisson", "--size", "5", "--tol", tol]),
                &["--tol", "the tolerance must be a positive finite number"],
            );
        }
        refused(
            be,
            "poisson --size 5 --check-every 0 --tol 1e-3",
            &["--check-every", "0; allowed 1..=10000000"],
        );
        refused(
            be,
            "poisson --size 5 --iters 1e8",
            &["--iters", "100000000; allowed 0..=10000000"],
        );
        for d in ["0", "17"] {
            fails_with(
                &on(be, &["poisson", "--size", "5", "--depth", d]),
                &["--depth", &format!("{d}; allowed 1..=16")],
            );
        }
        refused(
            be,
            "poisson --size 5 --variant fancy",
            &[
                "'fancy'",
                "possible values: all, naive, tiled, register, temporal",
            ],
        );
        refused(
            be,
            "poisson --size 5 --precision f16",
            &["'f16'", "possible values: f32, f64"],
        );
        // Multigrid's options are clap value enums: a typo gets a suggestion.
        for (flag, typo, values) in [
            ("--method", "multigird", "jacobi, multigrid, pcg"),
            ("--cycle", "vv", "v, w, fmg"),
            ("--smoother", "tiles", "rb, tile"),
        ] {
            fails_with(
                &on(be, &["poisson", "--size", "5", flag, typo]),
                &[flag, &format!("'{typo}'"), values],
            );
        }
        for w in ["0", "2", "-0.5", "nan"] {
            fails_with(
                &on(
                    be,
                    &[
                        "poisson",
                        "--size",
                        "5",
                        "--method",
                        "multigrid",
                        "--omega",
                        w,
                    ],
                ),
                &["--omega", "must lie in (0, 2)"],
            );
        }
        refused(
            be,
            "poisson --size 5 --method pcg --omega fast",
            &["--omega", "'fast'"],
        );
        fails_with(
            &on(be, &["poisson", "--size", "5x"]),
            &["--size", "`5x`", "give N (an N x N grid) or NXxNY"],
        );
        refused(
            be,
            "poisson --size 5 --h 0.1",
            &[
                "--h",
                "the manufactured problem (no --b) fixes h",
                "give --b to choose h",
            ],
        );
    }
    // Big grids and long runs on the simulator are refused with the limit.
    fails_with(
        &on(SIM, &["poisson", "--size", "4096"]),
        &[
            "16777216 cells (4096x4096) on the simulator; at most 4194304",
            "--backend cpu",
        ],
    );
    refused(
        SIM,
        "poisson --size 1024 --variant naive --tol 1e-3",
        &[
            "--iters",
            "cell updates on the simulator",
            "at most 268435456",
            "fewer --iters",
        ],
    );
}

#[test]
fn poisson_hostile_npy_and_valid_edges() {
    let (ny, nx) = (5usize, 7usize);
    let mut b = vec![0.0f32; nx * ny];
    b[2 * nx + 3] = 1.0;
    let b_le = npy("ps_b.npy", "<f4", "(5, 7)", &f32_bytes(&b, false));
    let b_be = npy("ps_b_be.npy", ">f4", "(5, 7)", &f32_bytes(&b, true));
    // The same array stored column-major (Fortran order).
    let mut bt = vec![0.0f32; nx * ny];
    for y in 0..ny {
        for x in 0..nx {
            bt[x * ny + y] = b[y * nx + x];
        }
    }
    let b_f = npy_header(
        "ps_b_f.npy",
        "<f4",
        "True",
        "(5, 7)",
        &f32_bytes(&bt, false),
    );
    let mut bn = b.clone();
    bn[2 * nx + 2] = f32::NAN;
    let b_nan = npy("ps_b_nan.npy", "<f4", "(5, 7)", &f32_bytes(&bn, false));
    let mut bi = b.clone();
    bi[0] = f32::INFINITY;
    let b_inf = npy("ps_b_inf.npy", "<f4", "(5, 7)", &f32_bytes(&bi, false));
    let b_f8 = npy(
        "ps_b_f8.npy",
        "<f8",
        "(5, 7)",
        &f64_bytes(&vec![0.0; 35], false),
    );
    let b_1d = npy("ps_b_1d.npy", "<f4", "(35,)", &f32_bytes(&b, false));
    let b_3d = npy("ps_b_3d.npy", "<f4", "(5, 7, 1)", &f32_bytes(&b, false));
    let b_tr = npy("ps_b_tr.npy", "<f4", "(5, 7)", &f32_bytes(&b[..30], false));
    let b_2x2 = npy(
        "ps_b_2x2.npy",
        "<f4",
        "(2, 2)",
        &f32_bytes(&[0.0; 4], false),
    );
    let b_big = npy(
        "ps_b_big.npy",
        "<f8",
        "(5, 7)",
        &f64_bytes(&vec![1e300; 35], false),
    );
    let s = |p: &std::path::PathBuf| p.to_str().unwrap().to_string();
    for be in [CPU, SIM] {
        let run = |b: &str, extra: &[&str]| -> Vec<String> {
            let mut v: Vec<String> = ["poisson", "--b", b, "--iters", "3"]
                .iter()
                .map(|x| x.to_string())
                .collect();
            if !extra.contains(&"--h") {
                v.extend(["--h".to_string(), "0.1".to_string()]);
            }
            v.extend(extra.iter().map(|x| x.to_string()));
            v.extend(["--backend".to_string(), be.to_string()]);
            v
        };
        let check = |b: &str, extra: &[&str], needles: &[&str]| {
            let args = run(b, extra);
            let a: Vec<&str> = args.iter().map(|x| x.as_str()).collect();
            fails_with(&a, needles);
        };
        check(
            &s(&b_nan),
            &[],
            &["b", "row 2, column 2 is NaN", "every value must be finite"],
        );
        check(&s(&b_inf), &[], &["b", "row 0, column 0 is inf", "finite"]);
        check(
            &s(&b_f8),
            &[],
            &[
                "--b",
                "its dtype is '<f8' (float64), but f32 is required",
                "shape (ny, nx)",
            ],
        );
        check(
            &s(&b_1d),
            &[],
            &["--b", "(35,) has 1 dimension(s); a 2-D array is required"],
        );
        check(&s(&b_3d), &[], &["--b", "(5, 7, 1) has 3 dimension(s)"]);
        check(
            &s(&b_tr),
            &[],
            &[
                "--b",
                "the file is truncated",
                "needs 140 bytes",
                "holds 120",
            ],
        );
        check(&s(&b_2x2), &[], &["2x2", "smaller than 3x3"]);
        check(
            &s(&b_le),
            &["--size", "5x7"],
            &[
                "--b",
                "the file has shape (5, 7) = (ny, nx)",
                "5x7 (nx x ny)",
            ],
        );
        check(
            &s(&b_le),
            &["--p0", &s(&b_2x2)],
            &["--p0", "shape (2, 2)", "shape (5, 7) is required"],
        );
        check(
            &s(&b_le),
            &["--p0", &s(&b_nan)],
            &["p0", "row 2, column 2 is NaN"],
        );
        check(
            &s(&b_big),
            &["--precision", "f64"],
            &["the sum of b^2 over the interior overflows f64", "scale b"],
        );
        check("/nonexistent/b.npy", &[], &["--b", "cannot open"]);
        for h in ["nan", "0", "-1"] {
            check(
                &s(&b_le),
                &["--h", h],
                &["--h", "the grid spacing must be a positive finite number"],
            );
        }
        for h in ["1e200", "1e-30"] {
            check(
                &s(&b_le),
                &["--h", h],
                &[
                    "--h",
                    "with f32 allowed 2.2e-19 <= h <= 3.7e19",
                    "rescale the problem",
                ],
            );
        }
    }
    // Valid edges: a big-endian, a Fortran-order and a little-endian b give
    // the same field; the simulator gives the CPU's field (within f32).
    let mut fields = Vec::new();
    for (be, file, variant) in [
        (CPU, &b_le, "all"),
        (CPU, &b_be, "all"),
        (CPU, &b_f, "all"),
        (SIM, &b_be, "naive"),
        (SIM, &b_f, "temporal"),
    ] {
        let out = tmp(&format!("ps_out_{be}_{}.npy", fields.len()));
        let text = succeeds(&on(
            be,
            &[
                "poisson",
                "--b",
                &s(file),
                "--h",
                "0.1",
                "--iters",
                "3",
                "--out",
                &out,
                "--variant",
                variant,
            ],
        ));
        assert!(text.contains("poisson 7x5 f32 h=1e-1, 3 sweeps"), "{text}");
        fields.push(read_f32_npy(&out, 35));
    }
    for f in &fields[1..] {
        for (a, b) in f.iter().zip(&fields[0]) {
            assert!((a - b).abs() <= 1e-6, "{f:?} vs {:?}", fields[0]);
        }
    }
    // Three Jacobi sweeps of a single 1 at (row 2, col 3) with k = 0.0025:
    // the centre after one sweep is -k, and the field stays bounded.
    assert!(fields[0].iter().all(|v| v.is_finite() && v.abs() < 1.0));
    // The smallest grid, on both backends.
    for be in [CPU, SIM] {
        let text = succeeds(&on(be, &words("poisson --size 3 --iters 2")));
        assert!(text.contains("poisson 3x3 f32"), "{text}");
    }
}
