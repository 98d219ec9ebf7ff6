//! Hostile inputs for every `ptxlab` subcommand and for the public host
//! functions: wrong `.npy` dtype, shape, byte order or a truncated file; NaN
//! and infinity; sizes of 0, 1 and far beyond memory; launch shapes over the
//! limits; a missing, broken or too-old driver (the loader pointed at an
//! empty folder, or at a stub `libcuda` built here). Every case asserts the
//! error's text: the input it names, the limit and what to do. None may end
//! in a panic, an abort, a hang (each run has a time limit) or a wrong
//! answer: the valid edge cases (size 1, odd sizes, big-endian files) are
//! checked against known results on `--backend cpu` and `--backend sim`.

mod common;

use common::*;

const CPU: &str = "cpu";
const SIM: &str = "sim";

/// `args` with `--backend be` appended.
fn on<'a>(be: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut v = args.to_vec();
    v.extend_from_slice(&["--backend", be]);
    v
}

// ---------------------------------------------------------------- vector-add

#[test]
fn vector_add_hostile_options() {
    for be in [CPU, SIM] {
        fails_with(
            &on(be, &["vector-add", "--n", "0"]),
            &["vector add", "--n 0", "empty", "at least one element"],
        );
        fails_with(
            &on(be, &["vector-add", "--n", "-5"]),
            &["--n", "`-5` is negative", "whole number >= 0"],
        );
        fails_with(
            &on(be, &["vector-add", "--n", "abc"]),
            &["--n", "`abc` is not a whole non-negative number", "1e6"],
        );
        fails_with(
            &on(be, &["vector-add", "--n", "18446744073709551616"]),
            &["--n", "not a whole non-negative number"],
        );
        fails_with(
            &on(be, &["vector-add", "--n", "5", "--reps", "0"]),
            &["--reps", "0 timed repetitions", "allowed 1..=10000"],
        );
        fails_with(
            &on(be, &["vector-add", "--n", "5", "--reps", "1e12"]),
            &["--reps", "1000000000000", "allowed 1..=10000"],
        );
        // An unknown variant is refused on every backend, even where unused.
        fails_with(
            &on(be, &["vector-add", "--n", "5", "--variant", "x8"]),
            &["`x8`", "allowed: scalar, wide"],
        );
        fails_with(
            &on(be, &["vector-add", "--n", "5", "--precision", "f16"]),
            &["--precision", "`f16`", "allowed: f32, f64"],
        );
    }
    // 10^12 elements: refused with the memory it needs, never attempted.
    for n in ["1e12", "18446744073709551615"] {
        fails_with(
            &on(CPU, &["vector-add", "--n", n]),
            &[
                "--n: needs",
                "of host memory",
                "available",
                "use a smaller --n",
            ],
        );
    }
    fails_with(
        &on(SIM, &["vector-add", "--n", "1e12"]),
        &["--n", "on the simulator; at most 65536", "--backend cpu"],
    );
    fails_with(
        &on(SIM, &["vector-add", "--n", "65537"]),
        &["65537 elements on the simulator; at most 65536"],
    );
    fails_with(
        &["vector-add", "--backend", "tpu"],
        &["backend", "`tpu`", "allowed: gpu, sim, cpu"],
    );
}

#[test]
fn vector_add_hostile_npy_and_valid_edges() {
    let a4 = npy(
        "va_a4.npy",
        "<f4",
        "(4,)",
        &f32_bytes(&[1.0, 2.0, 3.0, 4.0], false),
    );
    let a = a4.to_str().unwrap();
    let cases: Vec<(std::path::PathBuf, &[&str])> = vec![
        (
            npy("va_f8.npy", "<f8", "(4,)", &f64_bytes(&[1.0; 4], false)),
            &[
                "not a valid .npy of f32",
                "its dtype is '<f8' (float64), but f32 is required",
            ],
        ),
        (
            npy("va_i4.npy", "<i4", "(4,)", &i32_bytes(&[1; 4], false)),
            &["its dtype is '<i4' (int32), but f32 is required"],
        ),
        (
            npy("va_2d.npy", "<f4", "(2, 2)", &f32_bytes(&[1.0; 4], false)),
            &["its shape (2, 2) has 2 dimension(s); a 1-D array is required"],
        ),
        (
            npy("va_0d.npy", "<f4", "()", &f32_bytes(&[1.0], false)),
            &["its shape () has 0 dimension(s); a 1-D array is required"],
        ),
        (
            npy(
                "va_trunc.npy",
                "<f4",
                "(100,)",
                &f32_bytes(&[1.0; 10], false),
            ),
            &[
                "the file is truncated",
                "needs 400 bytes of data, but the file holds 40",
            ],
        ),
        (
            // A hostile header: 10^12 elements promised by a 16-byte body.
            npy("va_huge.npy", "<f4", "(1000000000000,)", &[0u8; 16]),
            &[
                "the file is truncated",
                "needs 4000000000000 bytes",
                "holds 16",
            ],
        ),
        (
            npy(
                "va_overflow.npy",
                "<f4",
                "(18446744073709551615,)",
                &[0u8; 16],
            ),
            &["its shape (18446744073709551615,) overflows a size"],
        ),
        (
            npy("va_extra.npy", "<f4", "(2,)", &[0u8; 16]),
            &["8 bytes after the data of shape (2,)"],
        ),
        (
            npy("va_neg.npy", "<f4", "(-3,)", &[0u8; 16]),
            &[
                "not a valid .npy file",
                "the shape (-3,) is not a tuple of sizes",
            ],
        ),
        (
            raw("va_garbage.npy", b"this is not an npy file at all"),
            &["not a valid .npy file", "magic string", "30 bytes"],
        ),
        (raw("va_empty.npy", b""), &["magic string", "0 bytes"]),
        (
            raw("va_hdr.npy", &b"\x93NUMPY\x01\x00\x76\x00{'descr'"[..]),
            &["truncated header", "118 header bytes"],
        ),
        (
            npy("va_short.npy", "<f4", "(3,)", &f32_bytes(&[1.0; 3], false)),
            &["a has 4 elements and b has 3", "must be equal"],
        ),
    ];
    for be in [CPU, SIM] {
        for (bad, needles) in &cases {
            let b = bad.to_str().unwrap();
            let mut want: Vec<&str> = needles.to_vec();
            if !needles[0].starts_with("a has") {
                want.push(b);
            }
            fails_with(&on(be, &["vector-add", "--a", a, "--b", b]), &want);
        }
        fails_with(
            &on(be, &["vector-add", "--a", a, "--b", "/nonexistent/b.npy"]),
            &["/nonexistent/b.npy", "cannot open", "No such file"],
        );
        fails_with(
            &on(be, &["vector-add", "--a", a]),
            &["--a/--b", "give both --a and --b, or neither"],
        );
    }

    // Valid edges: NaN and infinities in the data give the IEEE sums on
    // both backends (NaN compares equal to NaN, whatever its payload bits);
    // big-endian and little-endian inputs mix.
    let x = npy(
        "va_x.npy",
        ">f4",
        "(5,)",
        &f32_bytes(&[1.0, f32::NAN, f32::INFINITY, -f32::INFINITY, 3e38], true),
    );
    let y = npy(
        "va_y.npy",
        "<f4",
        "(5,)",
        &f32_bytes(&[1.0, 1.0, -f32::INFINITY, -f32::INFINITY, 3e38], false),
    );
    for be in [CPU, SIM] {
        let out = tmp(&format!("va_out_{be}.npy"));
        let text = succeeds(&on(
            be,
            &[
                "vector-add",
                "--a",
                x.to_str().unwrap(),
                "--b",
                y.to_str().unwrap(),
                "--out",
                &out,
                "--variant",
                "scalar",
            ],
        ));
        if be == SIM {
            assert!(text.contains("PASS vector-add f32 n=5"), "{text}");
        }
        let c = read_f32_npy(&out, 5);
        assert_eq!(c[0], 2.0);
        assert!(c[1].is_nan() && c[2].is_nan(), "{c:?}");
        assert_eq!(c[3], -f32::INFINITY);
        assert_eq!(c[4], f32::INFINITY, "3e38 + 3e38 overflows f32 to inf");
    }
    // Size 1 and odd sizes, both precisions and rungs, on the simulator.
    for (n, p, v) in [
        ("1", "f32", "wide"),
        ("7", "f64", "scalar"),
        ("1001", "f64", "wide"),
    ] {
        let text = succeeds(&on(
            SIM,
            &[
                "vector-add",
                "--n",
                n,
                "--precision",
                p,
                "--variant",
                v,
                "--reps",
                "1",
            ],
        ));
        assert!(
            text.contains(&format!("PASS vector-add {p} n={n}")),
            "{text}"
        );
    }
    succeeds(&on(CPU, &["vector-add", "--n", "1", "--reps", "1"]));
}

// ---------------------------------------------------------------- poisson

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
            &on(be, &["poisson", "--nx", "3", "--ny", "1000000000"]),
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
        fails_with(
            &on(
                be,
                &[
                    "poisson",
                    "--size",
                    "5",
                    "--check-every",
                    "0",
                    "--tol",
                    "1e-3",
                ],
            ),
            &["--check-every", "0; allowed 1..=10000000"],
        );
        fails_with(
            &on(be, &["poisson", "--size", "5", "--iters", "1e8"]),
            &["--iters", "100000000; allowed 0..=10000000"],
        );
        for d in ["0", "17"] {
            fails_with(
                &on(be, &["poisson", "--size", "5", "--depth", d]),
                &["--depth", &format!("{d}; allowed 1..=16")],
            );
        }
        fails_with(
            &on(be, &["poisson", "--size", "5", "--variant", "fancy"]),
            &["`fancy`", "allowed: naive, tiled, register, temporal, all"],
        );
        fails_with(
            &on(be, &["poisson", "--size", "5", "--precision", "f16"]),
            &["`f16`", "allowed: f32, f64"],
        );
        fails_with(
            &on(be, &["poisson", "--size", "5", "--nx", "5"]),
            &["--size", "give --size N or --nx/--ny, not both"],
        );
        fails_with(
            &on(be, &["poisson", "--size", "5", "--h", "0.1"]),
            &[
                "--h",
                "the manufactured problem (no --b) fixes h",
                "give --b to choose h",
            ],
        );
    }
    // The simulator runs one OS thread per GPU thread: big grids and long
    // runs are refused with the limit.
    fails_with(
        &on(SIM, &["poisson", "--size", "2000"]),
        &[
            "4000000 cells (2000x2000) on the simulator; at most 65536",
            "--backend cpu",
        ],
    );
    fails_with(
        &on(
            SIM,
            &[
                "poisson",
                "--size",
                "64",
                "--variant",
                "naive",
                "--tol",
                "1e-3",
            ],
        ),
        &[
            "--iters",
            "cell updates on the simulator",
            "at most 4194304",
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
            &["--nx", "5", "--ny", "7"],
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
        let text = succeeds(&on(be, &["poisson", "--size", "3", "--iters", "2"]));
        assert!(text.contains("poisson 3x3 f32"), "{text}");
    }
}

// ---------------------------------------------------------------- lomb-scargle

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

// ---------------------------------------------------------------- reduce

/// A fixture of `tests/fixtures/lomb` (made by `make_astropy_fixture.py`).
fn lomb_fixture(name: &str) -> String {
    format!(
        "{}/../tests/fixtures/lomb/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn lomb_scargle_models_batches_and_checks() {
    let (t, y, dy) = (
        lomb_fixture("gen_t.npy"),
        lomb_fixture("gen_y.npy"),
        lomb_fixture("gen_dy.npy"),
    );
    let grid = ["--start", "0.1", "--step", "0.05", "--count", "211"];
    for be in [CPU, SIM] {
        let with = |extra: &[&str], needles: &[&str]| {
            let mut a = vec!["lomb-scargle", "--x", &t, "--y", &y];
            a.extend_from_slice(&grid);
            a.extend_from_slice(extra);
            fails_with(&on(be, &a), needles);
        };
        with(
            &["--check", "most"],
            &["--check", "`most`", "allowed: none, sample, full"],
        );
        with(
            &["--normalization", "max"],
            &["--normalization", "allowed: standard, model, log, psd"],
        );
        with(
            &["--precenter", "--fit-mean"],
            &["SciPy's options", "use --center-data"],
        );
        with(
            &["--phases", "wide"],
            &["--phases", "allowed: auto, plain, long"],
        );
        with(&["--top", "0"], &["--top", "allowed 1..=1000"]);
        with(
            &["--periods", "/tmp/p.npy"],
            &["--periods", "written for a --batch"],
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
                a.extend_from_slice(&["--variant", "all", "--check", "full"]);
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
    let bgrid = ["--start", "0.1", "--step", "0.05", "--count", "200"];
    for (be, file) in [(CPU, "batch_small.npz"), (SIM, "batch_small_z.npz")] {
        let (out, per) = (
            tmp(&format!("ls_b_{be}.npy")),
            tmp(&format!("ls_p_{be}.npy")),
        );
        let npz = lomb_fixture(file);
        let mut a = vec![
            "lomb-scargle",
            "--batch",
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
            &on(be, &["lomb-scargle", "--batch", &npz_]),
            &["--batch", "needs its frequency grid"],
        );
        fails_with(
            &on(
                be,
                &[
                    &["lomb-scargle", "--batch", &npz_, "--variant", "taylor"][..],
                    &bgrid[..],
                ]
                .concat(),
            ),
            &["--batch", "drop --x, --y, --dy and --variant"],
        );
        fails_with(
            &on(
                be,
                &[&["lomb-scargle", "--batch", &t][..], &bgrid[..]].concat(),
            ),
            &["neither a folder nor an .npz file", "offsets"],
        );
    }
}

#[test]
fn reduce_hostile_inputs_and_valid_edges() {
    let seven: Vec<f32> = (0..7).map(|i| i as f32).collect();
    let mut with_nan = seven.clone();
    with_nan[2] = f32::NAN;
    let mut with_inf = seven.clone();
    with_inf[4] = -f32::INFINITY;
    let f_nan = npy("rd_nan.npy", "<f4", "(7,)", &f32_bytes(&with_nan, false));
    let f_inf = npy("rd_inf.npy", "<f4", "(7,)", &f32_bytes(&with_inf, false));
    let f_big = npy("rd_big.npy", "<f4", "(4,)", &f32_bytes(&[3e38; 4], false));
    let f_f8 = npy("rd_f8.npy", "<f8", "(7,)", &f64_bytes(&[1.0; 7], false));
    let f_empty = npy("rd_empty.npy", "<f4", "(0,)", &[]);
    let f_2d = npy("rd_2d.npy", "<f4", "(7, 1)", &f32_bytes(&seven, false));
    let f_ok = npy("rd_ok.npy", ">f4", "(7,)", &f32_bytes(&seven, true));
    let i_be = npy(
        "rd_i_be.npy",
        ">i4",
        "(5,)",
        &i32_bytes(&[i32::MAX, 1, 2, 3, 4], true),
    );
    let s = |p: &std::path::PathBuf| p.to_str().unwrap().to_string();
    for be in [CPU, SIM] {
        fails_with(
            &on(be, &["reduce", "--n", "0"]),
            &["--n", "0 elements", "give at least one element"],
        );
        fails_with(
            &on(be, &["reduce", "--n", "-1"]),
            &["--n", "`-1` is negative"],
        );
        fails_with(
            &on(be, &["reduce", "--n", "5", "--precision", "f16"]),
            &["`f16`", "allowed: f32, f64, i32"],
        );
        fails_with(
            &on(be, &["reduce", "--n", "5", "--variant", "foo"]),
            &[
                "`foo`",
                "allowed: tree, shuffle, atomic-thread, atomic-warp, gridstride, all",
            ],
        );
        fails_with(
            &on(be, &["reduce", "--n", "5", "--reps", "10001"]),
            &["--reps", "10001 timed repetitions; allowed 1..=10000"],
        );
        fails_with(
            &on(be, &["reduce", "--input", &s(&f_nan), "--variant", "tree"]),
            &[
                "reduce input",
                "element 2 is NaN",
                "every value must be finite",
            ],
        );
        fails_with(
            &on(be, &["reduce", "--input", &s(&f_inf)]),
            &["element 4 is -inf", "finite"],
        );
        fails_with(
            &on(be, &["reduce", "--input", &s(&f_big)]),
            &[
                "sum |x| = 1.200e39 is beyond the largest f32",
                "--precision f64",
            ],
        );
        fails_with(
            &on(be, &["reduce", "--input", &s(&f_f8)]),
            &["its dtype is '<f8' (float64), but f32 is required"],
        );
        fails_with(
            &on(be, &["reduce", "--input", &s(&f_2d)]),
            &["(7, 1) has 2 dimension(s)"],
        );
        fails_with(
            &on(be, &["reduce", "--input", &s(&f_empty)]),
            &["the input is empty (n = 0)"],
        );
        fails_with(
            &on(be, &["reduce", "--input", "/nonexistent/x.npy"]),
            &["cannot open"],
        );
    }
    fails_with(
        &on(CPU, &["reduce", "--n", "1e12"]),
        &["--n: needs", "of host memory", "use a smaller --n"],
    );
    fails_with(
        &on(SIM, &["reduce", "--n", "1e12"]),
        &["--n", "on the simulator; at most 1048576", "--backend cpu"],
    );
    fails_with(
        &on(
            SIM,
            &["reduce", "--n", "65537", "--variant", "atomic-thread"],
        ),
        &["65537 elements with --variant atomic-thread on the simulator; at most 65536"],
    );
    // Valid: a big-endian file summed exactly by every rung; size 1; the
    // i32 sum wraps as documented.
    let text = succeeds(&on(
        SIM,
        &[
            "reduce",
            "--input",
            &s(&f_ok),
            "--variant",
            "all",
            "--reps",
            "1",
        ],
    ));
    assert_eq!(text.matches("PASS reduce f32").count(), 5, "{text}");
    assert!(text.contains("n=7 on CPU simulator: sum 21 "), "{text}");
    let text = succeeds(&on(CPU, &["reduce", "--input", &s(&f_ok)]));
    assert!(text.contains("f64 reference sum 21 "), "{text}");
    let text = succeeds(&on(
        SIM,
        &[
            "reduce",
            "--input",
            &s(&i_be),
            "--precision",
            "i32",
            "--reps",
            "1",
        ],
    ));
    assert!(text.contains("sum -2147483639"), "{text}");
    for p in ["f32", "f64", "i32"] {
        let text = succeeds(&on(
            SIM,
            &[
                "reduce",
                "--n",
                "1",
                "--precision",
                p,
                "--variant",
                "all",
                "--reps",
                "1",
            ],
        ));
        assert_eq!(text.matches("PASS reduce").count(), 5, "{text}");
    }
}

// ---------------------------------------------------------------- histogram

#[test]
fn histogram_hostile_inputs_and_valid_edges() {
    let keys: Vec<u8> = (0..300u32).map(|i| (i * 7 % 256) as u8).collect();
    let k_u8 = npy("hg_u8.npy", "|u1", "(300,)", &keys);
    let k32: Vec<u32> = (0..300u32).map(|i| i * 13).collect();
    let k_u32_be = npy("hg_u32_be.npy", ">u4", "(300,)", &u32_bytes(&k32, true));
    let k_i8 = npy("hg_i8.npy", "<i8", "(2,)", &[0u8; 16]);
    let k_empty = npy("hg_empty.npy", "|u1", "(0,)", &[]);
    let s = |p: &std::path::PathBuf| p.to_str().unwrap().to_string();
    for be in [CPU, SIM] {
        for bins in ["0", "3", "512"] {
            fails_with(
                &on(be, &["histogram", "--n", "5", "--bins", bins]),
                &[
                    "--bins",
                    &format!("{bins} bins"),
                    "a power of two from 1 to 256 for u8 keys",
                ],
            );
        }
        fails_with(
            &on(
                be,
                &["histogram", "--n", "5", "--keys", "u32", "--bins", "16384"],
            ),
            &["--bins", "from 1 to 8192 for u32 keys"],
        );
        fails_with(
            &on(be, &["histogram", "--n", "5", "--bins", "-4"]),
            &["--bins", "`-4` is negative"],
        );
        fails_with(
            &on(be, &["histogram", "--n", "5", "--bins", "4294967296"]),
            &[
                "--bins",
                "larger than the largest value this option takes (4294967295)",
            ],
        );
        fails_with(
            &on(be, &["histogram", "--n", "5", "--keys", "i8"]),
            &["--keys", "`i8`", "allowed: u8, u32"],
        );
        fails_with(
            &on(be, &["histogram", "--n", "5", "--variant", "foo"]),
            &["`foo`", "allowed: global, shared, all"],
        );
        fails_with(
            &on(be, &["histogram", "--n", "0"]),
            &["the input is empty (0 keys)"],
        );
        fails_with(
            &on(be, &["histogram", "--n", "1e12"]),
            &[
                "--n",
                "1000000000000 keys; at most 4294967295",
                "counters are u32",
            ],
        );
        fails_with(
            &on(be, &["histogram", "--input", &s(&k_empty)]),
            &["the input is empty (0 keys)"],
        );
        fails_with(
            &on(be, &["histogram", "--input", &s(&k_u32_be)]),
            &[
                "--input",
                "its dtype is '>u4' (uint32), but u8 is required",
                "--keys u32",
            ],
        );
        fails_with(
            &on(be, &["histogram", "--input", &s(&k_i8), "--keys", "u32"]),
            &["its dtype is '<i8' (int64), but u32 is required"],
        );
    }
    fails_with(
        &on(SIM, &["histogram", "--n", "2000000"]),
        &["--n", "2000000 keys on the simulator; at most 1048576"],
    );
    // Valid: exact counts for uint8 keys and for big-endian uint32 keys, on
    // both backends and both rungs; a single key.
    let mut want8 = vec![0u32; 4];
    for k in &keys {
        want8[(*k & 3) as usize] += 1;
    }
    let mut want32 = vec![0u32; 16];
    for k in &k32 {
        want32[(*k & 15) as usize] += 1;
    }
    for be in [CPU, SIM] {
        let out = tmp(&format!("hg_out8_{be}.npy"));
        succeeds(&on(
            be,
            &[
                "histogram",
                "--input",
                &s(&k_u8),
                "--bins",
                "4",
                "--variant",
                "all",
                "--out",
                &out,
                "--reps",
                "1",
            ],
        ));
        assert_eq!(read_u32_npy(&out, 4), want8);
        let out = tmp(&format!("hg_out32_{be}.npy"));
        succeeds(&on(
            be,
            &[
                "histogram",
                "--input",
                &s(&k_u32_be),
                "--keys",
                "u32",
                "--bins",
                "16",
                "--out",
                &out,
                "--reps",
                "1",
            ],
        ));
        assert_eq!(read_u32_npy(&out, 16), want32);
        let out = tmp(&format!("hg_out1_{be}.npy"));
        succeeds(&on(
            be,
            &[
                "histogram",
                "--n",
                "1",
                "--bins",
                "1",
                "--out",
                &out,
                "--reps",
                "1",
            ],
        ));
        assert_eq!(read_u32_npy(&out, 1), vec![1]);
    }
}

// ---------------------------------------------------------------- monte-carlo-pi

#[test]
fn monte_carlo_pi_hostile_options_and_valid_edges() {
    for be in [CPU, SIM] {
        fails_with(
            &on(be, &["monte-carlo-pi", "--samples", "0"]),
            &["--samples", "0 samples; give at least 1"],
        );
        for bad in ["-5", "nan", "1.5", "1e30", "many"] {
            fails_with(
                &on(be, &["monte-carlo-pi", "--samples", bad]),
                &[
                    "--samples",
                    &format!("`{bad}` is not a whole non-negative count"),
                ],
            );
        }
        fails_with(
            &on(
                be,
                &["monte-carlo-pi", "--samples", "1000", "--blocks", "0"],
            ),
            &["thread layout", "0 blocks", "need at least one block"],
        );
        fails_with(
            &on(
                be,
                &["monte-carlo-pi", "--samples", "1000", "--blocks", "-1"],
            ),
            &["--blocks", "`-1` is negative"],
        );
        fails_with(
            &on(
                be,
                &[
                    "monte-carlo-pi",
                    "--samples",
                    "1000",
                    "--blocks",
                    "1",
                    "--reps",
                    "0",
                ],
            ),
            &["--reps", "allowed 1..=10000"],
        );
    }
    fails_with(
        &on(
            CPU,
            &[
                "monte-carlo-pi",
                "--samples",
                "1000",
                "--blocks",
                "4294967295",
            ],
        ),
        &["--blocks", "4294967295 blocks; at most 1048576"],
    );
    fails_with(
        &on(
            CPU,
            &["monte-carlo-pi", "--samples", "1e18", "--blocks", "1"],
        ),
        &["--samples", "per thread; at most 4294967295 per thread"],
    );
    fails_with(
        &on(
            SIM,
            &["monte-carlo-pi", "--samples", "1000", "--blocks", "100"],
        ),
        &["--blocks", "100 blocks on the simulator; at most 64"],
    );
    fails_with(
        &on(
            SIM,
            &["monte-carlo-pi", "--samples", "2e8", "--blocks", "1"],
        ),
        &["--samples", "on the simulator; at most 1e8"],
    );
    // Valid: one sample; the simulator's default layout; many idle streams
    // (more threads than samples) on the CPU.
    for be in [CPU, SIM] {
        let text = succeeds(&on(
            be,
            &[
                "monte-carlo-pi",
                "--samples",
                "1",
                "--blocks",
                "1",
                "--reps",
                "1",
            ],
        ));
        assert!(text.contains(" hits of 1:"), "{text}");
    }
    let text = succeeds(&on(
        SIM,
        &["monte-carlo-pi", "--samples", "1000", "--reps", "1"],
    ));
    assert!(
        text.contains("PASS monte-carlo-pi on CPU simulator"),
        "{text}"
    );
    let text = succeeds(&on(
        CPU,
        &[
            "monte-carlo-pi",
            "--samples",
            "10",
            "--blocks",
            "1048576",
            "--reps",
            "1",
        ],
    ));
    assert!(
        text.contains("268435456 streams") && text.contains("hits of 10:"),
        "{text}"
    );
}

// ---------------------------------------------------------------- diffusion

#[test]
fn diffusion_hostile_options_and_valid_edges() {
    for be in [CPU, SIM] {
        for size in ["0", "1", "2x9"] {
            fails_with(
                &on(be, &["diffusion", "--size", size, "--iters", "1"]),
                &["diffusion grid", "must be at least 3"],
            );
        }
        for size in ["abc", "5x", "-5", "1.5", "x5"] {
            fails_with(
                &on(be, &["diffusion", "--size", size, "--iters", "1"]),
                &[
                    "--size",
                    &format!("`{size}`"),
                    "give N (an N x N grid) or NXxNY",
                ],
            );
        }
        fails_with(
            &on(be, &["diffusion", "--size", "1000000", "--iters", "1"]),
            &[
                "1000000x1000000 is too large",
                "at most 2147483647 cells and 524280 rows",
                "use a smaller --size",
            ],
        );
        fails_with(
            &on(be, &["diffusion", "--size", "3x600000", "--iters", "1"]),
            &["3x600000 is too large", "524280 rows"],
        );
        fails_with(
            &on(
                be,
                &[
                    "diffusion",
                    "--size",
                    "99999999999999999999",
                    "--iters",
                    "1",
                ],
            ),
            &["--size", "give N"],
        );
        for iters in ["0", "18446744073709551615"] {
            fails_with(
                &on(be, &["diffusion", "--size", "5", "--iters", iters]),
                &["--iters", "allowed 1..=10000000"],
            );
        }
        for alpha in ["nan", "inf", "-0.1"] {
            fails_with(
                &on(
                    be,
                    &["diffusion", "--size", "5", "--iters", "1", "--alpha", alpha],
                ),
                &["alpha", "the coefficient must be finite and >= 0"],
            );
        }
        fails_with(
            &on(
                be,
                &["diffusion", "--size", "5", "--iters", "1", "--alpha", "0.3"],
            ),
            &[
                "0.3 makes the explicit 5-point scheme unstable",
                "alpha <= 0.25",
            ],
        );
        fails_with(
            &on(
                be,
                &[
                    "diffusion",
                    "--size",
                    "5",
                    "--iters",
                    "1",
                    "--variant",
                    "foo",
                ],
            ),
            &["`foo`", "allowed: pingpong, temporal, inplace"],
        );
    }
    fails_with(
        &on(SIM, &["diffusion", "--size", "300", "--iters", "100"]),
        &[
            "--size/--iters",
            "300x300 cells x 100 steps",
            "too many for the simulator",
            "--backend cpu",
        ],
    );
    // Valid: the smallest grid; an odd rectangle; the CPU and the simulator
    // give the same field (the same f32 expression).
    for be in [CPU, SIM] {
        succeeds(&on(be, &["diffusion", "--size", "3", "--iters", "1"]));
    }
    let mut fields = Vec::new();
    for (be, v) in [(CPU, "pingpong"), (SIM, "pingpong"), (SIM, "temporal")] {
        let out = tmp(&format!("df_out_{be}_{v}.npy"));
        let text = succeeds(&on(
            be,
            &[
                "diffusion",
                "--size",
                "5x7",
                "--iters",
                "9",
                "--variant",
                v,
                "--out",
                &out,
            ],
        ));
        if be == SIM {
            assert!(text.contains("matches the CPU"), "{text}");
        }
        fields.push(read_f32_npy(&out, 35));
    }
    for f in &fields[1..] {
        for (a, b) in f.iter().zip(&fields[0]) {
            assert!((a - b).abs() <= 1e-5, "{f:?} vs {:?}", fields[0]);
        }
    }
}

// ---------------------------------------------------------------- matmul

#[test]
fn matmul_hostile_options_and_valid_edges() {
    for be in [CPU, SIM] {
        fails_with(
            &on(be, &["matmul", "--m", "0"]),
            &["zero dimension: m=0", "every dimension must be at least 1"],
        );
        fails_with(
            &on(be, &["matmul", "--m", "-3"]),
            &["--m", "`-3` is negative"],
        );
        fails_with(
            &on(be, &["matmul", "--m", "4294967296", "--n", "1", "--k", "1"]),
            &["m=4294967296 is larger than 4294967295"],
        );
        fails_with(
            &on(
                be,
                &[
                    "matmul",
                    "--m",
                    "3",
                    "--n",
                    "3",
                    "--k",
                    "3",
                    "--variant",
                    "foo",
                ],
            ),
            &["`foo`", "allowed: naive, tiled, regblock, vec"],
        );
        fails_with(
            &on(
                be,
                &[
                    "matmul", "--m", "3", "--n", "3", "--k", "3", "--colsum", "foo",
                ],
            ),
            &["--colsum", "`foo`", "allowed: direct, fused"],
        );
        fails_with(
            &on(
                be,
                &["matmul", "--m", "3", "--n", "3", "--k", "3", "--reps", "0"],
            ),
            &["--reps", "allowed 1..=10000"],
        );
    }
    fails_with(
        &on(CPU, &["matmul", "--m", "1e6", "--n", "1e6", "--k", "1e6"]),
        &[
            "--m/--n/--k: needs",
            "of host memory",
            "use a smaller --m/--n/--k",
        ],
    );
    fails_with(
        &on(
            CPU,
            &[
                "matmul",
                "--m",
                "4294967295",
                "--n",
                "4294967295",
                "--k",
                "4294967295",
            ],
        ),
        &["--m/--n/--k", "overflow the address space"],
    );
    fails_with(
        &on(
            CPU,
            &["matmul", "--m", "4200", "--n", "4200", "--k", "4200"],
        ),
        &[
            "too large for the one-thread CPU baseline",
            "at most 2^36",
            "--backend gpu",
        ],
    );
    for (m, n, k) in [
        ("1000000", "1000000", "1000000"),
        ("4294967295", "4294967295", "4294967295"),
        ("129", "128", "128"),
    ] {
        fails_with(
            &on(SIM, &["matmul", "--m", m, "--n", n, "--k", k]),
            &[
                "too large for the simulator",
                "m*n*k <= 2^21",
                "--backend cpu",
            ],
        );
    }
    // Valid: 1x1x1 and an odd shape through every rung and both column sums.
    for (m, n, k) in [("1", "1", "1"), ("3", "5", "7")] {
        for colsum in ["fused", "direct"] {
            let text = succeeds(&on(
                SIM,
                &[
                    "matmul", "--m", m, "--n", n, "--k", k, "--colsum", colsum, "--reps", "1",
                ],
            ));
            assert!(
                text.contains("PASS 1 naive") && text.contains("PASS column sum"),
                "{text}"
            );
        }
        succeeds(&on(
            CPU,
            &["matmul", "--m", m, "--n", n, "--k", k, "--reps", "1"],
        ));
    }
}

// ---------------------------------------------------------------- fusion, launch-overhead

#[test]
fn fusion_and_launch_overhead_hostile_options() {
    for be in [CPU, SIM] {
        fails_with(
            &on(be, &["fusion", "--n", "0"]),
            &["--n", "0 elements; give at least one"],
        );
        fails_with(
            &on(be, &["fusion", "--n", "-7"]),
            &["--n", "`-7` is negative"],
        );
        fails_with(
            &on(be, &["fusion", "--n", "7", "--reps", "0"]),
            &["--reps", "allowed 1..=10000"],
        );
        fails_with(
            &on(be, &["launch-overhead", "--kernels", "0"]),
            &["--kernels", "0 kernels; give at least one"],
        );
        fails_with(
            &on(be, &["launch-overhead", "--kernels", "100001"]),
            &["--kernels", "at most 100000"],
        );
        fails_with(
            &on(
                be,
                &["launch-overhead", "--kernels", "1", "--reps", "20000"],
            ),
            &["--reps", "allowed 1..=10000"],
        );
    }
    fails_with(
        &on(CPU, &["fusion", "--n", "1e12"]),
        &["--n: needs", "of host memory", "use a smaller --n"],
    );
    fails_with(
        &on(SIM, &["fusion", "--n", "100000"]),
        &["--n", "100000 elements on the simulator; at most 65536"],
    );
    fails_with(
        &on(SIM, &["launch-overhead", "--kernels", "201"]),
        &["--kernels", "at most 200 on the simulator"],
    );
    fails_with(
        &on(CPU, &["launch-overhead", "--kernels", "5"]),
        &["--backend", "launch overhead needs gpu or sim"],
    );
    fails_with(
        &on(
            CPU,
            &["launch-overhead", "--kernels", "100000", "--reps", "1000"],
        ),
        &[
            "--kernels/--reps",
            "at most 2^24 = 16777216",
            "exact only up to 2^24",
        ],
    );
    // Valid: one element, an odd size, one kernel.
    for n in ["1", "7"] {
        let text = succeeds(&on(SIM, &["fusion", "--n", n, "--reps", "1"]));
        assert!(
            text.contains("PASS unfused and fused match the f64 reference"),
            "{text}"
        );
        succeeds(&on(CPU, &["fusion", "--n", n, "--reps", "1"]));
    }
    let text = succeeds(&on(
        SIM,
        &["launch-overhead", "--kernels", "1", "--reps", "1"],
    ));
    assert!(
        text.contains("plain launches:") && text.contains("not available on the simulator"),
        "{text}"
    );
}

// ---------------------------------------------------------------- bench, info, the command line itself

#[test]
fn bench_info_and_command_line_hostile() {
    let out = tmp("bench-never-created");
    fails_with(
        &["bench", "--backend", "tpu", "--out", &out],
        &["--backend `tpu`", "allowed gpu, sim, cpu"],
    );
    fails_with(
        &[
            "bench",
            "--only",
            "nosuch",
            "--backend",
            "cpu",
            "--out",
            &out,
        ],
        &["--only `nosuch`", "allowed", "poisson", "vector-add"],
    );
    assert!(
        !std::path::Path::new(&out).exists(),
        "a refused bench must not create its output folder"
    );
    fails_with(
        &["frobnicate"],
        &[
            "unrecognized subcommand",
            "valid commands:",
            "vector-add",
            "poisson",
        ],
    );
    fails_with(
        &["vector-add", "--bogus"],
        &["unexpected argument '--bogus'"],
    );
    fails_with(
        &["vector-add", "--n"],
        &["a value is required for '--n <N>'"],
    );
    fails_with(
        &["poisson", "--tol", "abc"],
        &["invalid value 'abc' for '--tol <TOL>'"],
    );
    let text = succeeds(&["info"]);
    assert!(text.contains("embedded PTX:"), "{text}");
}

// ---------------------------------------------------------------- the driver

/// Every subcommand that opens a GPU, with small valid options.
const GPU_RUNS: &[&[&str]] = &[
    &["vector-add", "--n", "10"],
    &["poisson", "--size", "5", "--iters", "1"],
    &[
        "lomb-scargle",
        "--start",
        "1",
        "--step",
        "1",
        "--count",
        "3",
    ],
    &["reduce", "--n", "10"],
    &["histogram", "--n", "10"],
    &["monte-carlo-pi", "--samples", "100"],
    &["diffusion", "--size", "5", "--iters", "1"],
    &["matmul", "--m", "3", "--n", "3", "--k", "3"],
    &["fusion", "--n", "10"],
    &["launch-overhead", "--kernels", "1"],
];

/// The one error line (and its hint) of a run that cannot open the GPU; no
/// other output comes first (the device is opened before the inputs are made).
fn assert_one_error_line(args: &[&str], env: &[(&str, &str)], error: &[&str], hint: &str) {
    let r = ptxlab_env(args, env);
    assert_eq!(r.code, 1, "ptxlab {args:?}: {}", r.text());
    assert!(
        r.stdout.trim().is_empty(),
        "ptxlab {args:?} printed before failing:\n{}",
        r.stdout
    );
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "ptxlab {args:?}: want one error line and one hint:\n{}",
        r.stderr
    );
    for e in error {
        assert!(
            lines[0].contains(e),
            "ptxlab {args:?}: expected `{e}` in `{}`",
            lines[0]
        );
    }
    assert!(lines[0].starts_with("error: "), "{}", lines[0]);
    assert!(
        lines[1].starts_with("hint: ") && lines[1].contains(hint),
        "{}",
        lines[1]
    );
}

#[test]
fn missing_driver_is_one_clear_line_for_every_gpu_subcommand() {
    if real_driver_installed() {
        return;
    }
    let dir = empty_lib_dir();
    for args in GPU_RUNS {
        let mut a = args.to_vec();
        a.extend_from_slice(&["--backend", "gpu"]);
        assert_one_error_line(
            &a,
            &[("LD_LIBRARY_PATH", &dir)],
            &["error: no NVIDIA driver: libcuda.so / libcuda.so.1 could not be loaded"],
            "--backend sim",
        );
    }
    let r = ptxlab_env(&["info"], &[("LD_LIBRARY_PATH", &dir)]);
    assert_eq!(r.code, 0);
    assert!(
        r.stdout.starts_with("GPU: none (no NVIDIA driver:"),
        "{}",
        r.stdout
    );
}

/// Builds a stub `libcuda.so` from C source in its own folder; `None` (and
/// a note) where no C compiler is available.
fn stub_driver(name: &str, source: &str) -> Option<String> {
    let dir = tmp_dir().join(format!("stub-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    let c = dir.join("stub.c");
    std::fs::write(&c, source).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let ok = std::process::Command::new(&cc)
        .args(["-shared", "-fPIC", "-o"])
        .arg(dir.join("libcuda.so"))
        .arg(&c)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        println!("skipped: no C compiler (`{cc}`) to build a stub libcuda");
        return None;
    }
    Some(dir.to_string_lossy().into_owned())
}

#[test]
fn broken_or_too_old_driver_is_refused_clearly() {
    let run = ["vector-add", "--n", "10", "--backend", "gpu"];
    let hint = "--backend sim";
    // A libcuda that is no driver at all.
    let Some(dir) = stub_driver("empty", "int not_cuda(void) { return 0; }\n") else {
        return;
    };
    assert_one_error_line(
        &run,
        &[("LD_LIBRARY_PATH", &dir)],
        &[
            "no NVIDIA driver",
            "does not export cuDriverGetVersion",
            "check LD_LIBRARY_PATH",
        ],
        hint,
    );
    // A driver for CUDA 10.2: older than the embedded PTX needs.
    let old = "int cuDriverGetVersion(int *v) { *v = 10020; return 0; }\n";
    let dir = stub_driver("old", old).unwrap();
    let isa = ptxlab::runtime::ptx_isa_version(ptxlab::modules::ptx(false))
        .expect("the PTX has a .version");
    let need = ptxlab::runtime::cuda_for_ptx_isa(isa).expect("a known PTX ISA");
    assert_one_error_line(
        &run,
        &[("LD_LIBRARY_PATH", &dir)],
        &[
            "the NVIDIA driver is too old for this build",
            "it supports CUDA 10.2",
            &format!("PTX ISA {}.{}", isa.0, isa.1),
            &format!("CUDA {}.{} or newer", need.0, need.1),
        ],
        "update the NVIDIA driver",
    );
    // New enough by its version, but without the entry points cudarc calls
    // (cudarc would panic on the first one).
    let partial = "int cuDriverGetVersion(int *v) { *v = 12080; return 0; }\n";
    let dir = stub_driver("partial", partial).unwrap();
    assert_one_error_line(
        &run,
        &[("LD_LIBRARY_PATH", &dir)],
        &[
            "too old for this build",
            "CUDA 12.8",
            "does not export cuInit",
        ],
        "update the NVIDIA driver",
    );
    // Every entry point present, but no device: the driver's error keeps its
    // CUDA_ERROR_* name and the driver's own text, and gains the hint.
    let mut src = String::from(
        "int cuDriverGetVersion(int *v) { *v = 12080; return 0; }\n\
         int cuGetErrorString(int e, const char **s) { *s = e == 100 ? \"no CUDA-capable device is detected (stub)\" : \"stub\"; return 0; }\n\
         int cuGetErrorName(int e, const char **s) { *s = \"CUDA_ERROR_STUB\"; return 0; }\n",
    );
    for sym in ptxlab::runtime::REQUIRED_DRIVER_SYMBOLS {
        if !["cuDriverGetVersion", "cuGetErrorString", "cuGetErrorName"].contains(sym) {
            src.push_str(&format!("int {sym}(void) {{ return 100; }}\n"));
        }
    }
    let dir = stub_driver("nodevice", &src).unwrap();
    for args in GPU_RUNS {
        let mut a = args.to_vec();
        a.extend_from_slice(&["--backend", "gpu"]);
        assert_one_error_line(
            &a,
            &[("LD_LIBRARY_PATH", &dir)],
            &[
                "error: cuDeviceGetCount failed: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected (stub)",
            ],
            "check the driver installation and CUDA_VISIBLE_DEVICES",
        );
    }
}

// ---------------------------------------------------------------- the library

mod library {
    use ptxlab::Error;
    use ptxlab::runtime::{Device, LaunchConfig, check_launch};
    use ptxlab::workloads::{diffusion, fusion, lomb, matmul, poisson, primitives, vector};

    #[track_caller]
    fn err<T>(r: ptxlab::Result<T>) -> String {
        match r {
            Ok(_) => panic!("expected an error, got Ok"),
            Err(e) => e.to_string(),
        }
    }

    #[track_caller]
    fn has(text: &str, needles: &[&str]) {
        for n in needles {
            assert!(text.contains(n), "expected `{n}` in: {text}");
        }
    }

    #[test]
    fn runtime_launch_configs_and_buffers() {
        has(
            &err(LaunchConfig::for_threads(0, 256)),
            &["launch size", "0 threads requested"],
        );
        has(
            &err(LaunchConfig::for_threads(10, 0)),
            &["block size", "0 threads per block; use 32..=1024"],
        );
        has(
            &err(LaunchConfig::for_threads(usize::MAX, 32)),
            &["launch size", "at most 2147483647 blocks"],
        );
        has(
            &err(LaunchConfig::for_2d(0, 5, 8, 8)),
            &["0x5 threads in 8x8 blocks", "no dimension may be 0"],
        );
        has(
            &err(LaunchConfig::for_2d(5, 8 * 65536, 8, 8)),
            &["y to 65535"],
        );
        let dev = Device::sim();
        let lim = dev.limits();
        let cfg = LaunchConfig::for_threads(64, 64)
            .unwrap()
            .with_shared(lim.max_shared_optin + 1);
        has(
            &err(check_launch("vector_add_f32", &cfg, &lim)),
            &[
                "invalid launch of `vector_add_f32`",
                "dynamic shared memory",
                "at most 232448 bytes per block",
            ],
        );
        let mut cfg = LaunchConfig::for_threads(64, 64).unwrap();
        cfg.block.x = 2048;
        has(
            &err(check_launch("vector_add_f32", &cfg, &lim)),
            &["2048 threads", "at most 1024 threads per block"],
        );
        cfg.block.x = 0;
        has(
            &err(check_launch("vector_add_f32", &cfg, &lim)),
            &["the block", "every dimension must be at least 1"],
        );
        // Through a real launcher: shared memory over the limit and a block
        // over the kernel's launch bounds, on the simulator.
        let a = dev.upload(&[1.0f32; 64]).unwrap();
        let b = dev.upload(&[2.0f32; 64]).unwrap();
        let mut c = dev.alloc_filled(64, 0.0f32).unwrap();
        let big = LaunchConfig::for_threads(64, 64)
            .unwrap()
            .with_shared(300_000);
        has(
            &err(<f32 as vector::Element>::launch(
                &dev,
                big,
                vector::Rung::Scalar,
                &a,
                &b,
                &mut c,
            )),
            &[
                "invalid launch of `vector_add_f32`",
                "300000 bytes",
                "at most",
            ],
        );
        // Buffers: a write of the wrong length; an absurd allocation.
        has(
            &err(dev.write(&mut c, &[0.0f32; 3])),
            &["write", "buffer has 64 elements, data 3"],
        );
        has(
            &err(dev.alloc_filled(usize::MAX / 4, 0.0f32)),
            &[
                "not enough device memory for an output buffer",
                "bytes requested",
                "use a smaller size",
            ],
        );
        has(
            &err(dev.alloc_filled(1usize << 50, 0u8)),
            &[
                "not enough device memory",
                "1125899906842624 bytes requested",
            ],
        );
    }

    #[test]
    fn vector_add_buffers() {
        let dev = Device::sim();
        let a = dev.upload(&[1.0f32; 5]).unwrap();
        let b = dev.upload(&[1.0f32; 4]).unwrap();
        let mut c = dev.alloc_filled(5, 0.0f32).unwrap();
        let m = ptxlab::ModuleKey::default();
        has(
            &err(vector::add(&dev, vector::Rung::Wide, m, &a, &b, &mut c)),
            &[
                "lengths differ: a has 5, b has 4, c has 5",
                "all three must be equal",
            ],
        );
        let e = dev.upload::<f32>(&[]).unwrap();
        let mut e2 = dev.alloc_filled(0, 0.0f32).unwrap();
        has(
            &err(vector::add(&dev, vector::Rung::Scalar, m, &e, &e, &mut e2)),
            &["length 0", "at least one element"],
        );
        has(
            &err(vector::check::<f64>(&dev, 0, vector::Rung::Scalar, 1)),
            &["length 0"],
        );
        has(
            &err("x8".parse::<vector::Rung>()),
            &["`x8`; allowed: scalar, wide"],
        );
        assert_eq!(
            vector::check::<f32>(&dev, 1, vector::Rung::Wide, 3)
                .unwrap()
                .mismatches,
            0
        );
    }

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
        let small =
            Problem::new(Grid::new(3, 3).unwrap(), 0.5, vec![1.0f64; 9], vec![0.0; 9]).unwrap();
        let (pc, _) = poisson::solve_cpu(&small, &opts).unwrap();
        let (pd, _) = poisson::solve_device(&dev, &small, &opts).unwrap();
        for (c, d) in pc.iter().zip(&pd) {
            assert!((c - d).abs() <= 1e-12, "{pc:?} vs {pd:?}");
        }
    }

    #[test]
    fn lomb_public_functions() {
        let dev = Device::sim();
        has(
            &err(lomb::validate(&[1.0, 2.0], &[1.0], &[1.0])),
            &["x has 2 values and y has 1"],
        );
        has(
            &err(lomb::validate(&[], &[], &[1.0])),
            &["x and y are empty"],
        );
        has(
            &err(lomb::validate(&[1.0], &[1.0], &[])),
            &["no frequencies"],
        );
        has(
            &err(lomb::validate(&[1.0], &[f64::INFINITY], &[1.0])),
            &["y[0] = inf is not finite"],
        );
        has(
            &err(lomb::reference(&[1.0], &[1.0], &[0.0], Default::default())),
            &["freqs[0] = 0"],
        );
        has(
            &err(lomb::check_range::<f32>(&[1e20], &[1.0], &[1e20])),
            &[
                "phase max|w| * max|x|",
                "beyond the largest f32",
                "--precision f64",
            ],
        );
        assert!(lomb::check_range::<f64>(&[1e20], &[1.0], &[1e20]).is_ok());
        has(
            &err(lomb::Bufs::<f32>::new(
                &dev,
                &[1.0],
                &[1e30],
                &[1.0],
                Default::default(),
            )),
            &["sum of y^2", "beyond the largest f32"],
        );
        let uneven = [1.0, 2.0, 4.0];
        has(
            &err(lomb::periodogram::<f32>(
                &dev,
                lomb::Rung::Rotate,
                &[0.5],
                &[1.0],
                &uneven,
                Default::default(),
                lomb::Shape::material(&dev),
            )),
            &["the rotation variant needs an evenly spaced frequency grid"],
        );
        let shape = lomb::Shape {
            blocks: 1,
            block: 0,
        };
        has(
            &err(lomb::config::<f32>(lomb::Rung::Cached, 3, shape, 1)),
            &["block size", "0 threads per block"],
        );
        let shape = lomb::Shape {
            blocks: 1,
            block: 2048,
        };
        has(
            &err(lomb::periodogram::<f32>(
                &dev,
                lomb::Rung::Cached,
                &[0.5],
                &[1.0],
                &[1.0],
                Default::default(),
                shape,
            )),
            &[
                "invalid launch of `lomb_direct_f32`",
                "2048 threads",
                "at most 1024",
            ],
        );
        has(
            &err("regcap300".parse::<lomb::Rung>()),
            &["`regcap300`", "regcapN (16..=255)"],
        );
        assert!(lomb::linspace(0.0, 1.0, 0).is_empty());
        assert_eq!(lomb::linspace(0.0, 1.0, 1), vec![0.0]);
        let (x, y) = ([0.5, 1.7], [1.0, -0.5]);
        let p = lomb::periodogram::<f64>(
            &dev,
            lomb::Rung::Cached,
            &x,
            &y,
            &[1.0],
            Default::default(),
            lomb::Shape::material(&dev),
        )
        .unwrap();
        let r = lomb::reference(&x, &y, &[1.0], Default::default()).unwrap();
        assert!(
            r[0].is_finite() && (p[0] - r[0]).abs() <= 1e-12 * r[0].abs(),
            "{p:?} vs {r:?}"
        );
    }

    #[test]
    fn primitives_public_functions() {
        use primitives::{HistRung, PiLayout, ReduceRung, SumPlan};
        let dev = Device::sim();
        has(
            &err(SumPlan::<f32>::new(&dev, ReduceRung::Tree, 0)),
            &["the input is empty (n = 0)"],
        );
        let x = dev.upload(&[1.0f32; 10]).unwrap();
        let mut out = dev.alloc_filled(1, 0.0f32).unwrap();
        let mut plan = SumPlan::<f32>::new(&dev, ReduceRung::GridStride, 9).unwrap();
        has(
            &err(plan.run(&dev, &x, &mut out, 0)),
            &["the plan is for 9 elements but the input has 10"],
        );
        let mut plan = SumPlan::<f32>::new(&dev, ReduceRung::GridStride, 10).unwrap();
        has(
            &err(plan.run(&dev, &x, &mut out, 1)),
            &["slot 1 is outside the output of 1 elements"],
        );
        has(
            &err(primitives::check_values(&[1.0f32, f32::NAN])),
            &["element 1 is NaN"],
        );
        has(
            &err(primitives::check_values(&[f64::MAX, f64::MAX])),
            &["beyond the largest f64"],
        );
        assert!(primitives::check_values(&[i32::MAX, i32::MAX]).is_ok());
        let keys = dev.upload(&[1u8, 2, 3]).unwrap();
        let mut hist = dev.alloc_filled(8, 0u32).unwrap();
        has(
            &err(primitives::histogram_into(
                &dev,
                HistRung::Shared,
                &keys,
                &mut hist,
                4,
                usize::MAX,
            )),
            &["do not fit in the output of 8 counters"],
        );
        has(
            &err(primitives::histogram_into(
                &dev,
                HistRung::Global,
                &keys,
                &mut hist,
                4,
                5,
            )),
            &["bins 5..5+4 do not fit in the output of 8 counters"],
        );
        has(
            &err(primitives::histogram(&dev, HistRung::Global, &keys, 3)),
            &["3 bins", "a power of two"],
        );
        let none = dev.upload::<u8>(&[]).unwrap();
        has(
            &err(primitives::histogram(&dev, HistRung::Global, &none, 4)),
            &["the input is empty (0 keys)"],
        );
        assert!(primitives::cpu_histogram_serial::<u8>(&[1, 2], 0).is_empty());
        assert_eq!(
            primitives::histogram(&dev, HistRung::Shared, &keys, 2).unwrap(),
            vec![1, 2]
        );
        let mut hits = dev.alloc_filled(1, 0u64).unwrap();
        has(
            &err(primitives::pi_into(
                &dev,
                PiLayout::SIM,
                10,
                1,
                &mut hits,
                3,
            )),
            &["slot 3 is outside the output of 1 counters"],
        );
        let bad = PiLayout {
            blocks: 1,
            block: 48,
        };
        has(
            &err(bad.validate(10)),
            &["1 blocks of 48 threads", "a multiple of 32 threads"],
        );
        let bad = PiLayout {
            blocks: u32::MAX,
            block: 256,
        };
        has(
            &err(primitives::cpu_pi_serial(bad, 10, 1)),
            &["--blocks", "at most 1048576"],
        );
        let wide = PiLayout {
            blocks: 1 << 20,
            block: 256,
        };
        assert_eq!(
            primitives::cpu_pi_serial(wide, 3, 7).unwrap(),
            primitives::cpu_pi_rayon(wide, 3, 7).unwrap()
        );
    }

    #[test]
    fn diffusion_matmul_fusion_public_functions() {
        let dev = Device::sim();
        has(
            &err(diffusion::check_params(usize::MAX, 3, 0.1)),
            &["is too large", "at most 2147483647 cells"],
        );
        has(
            &err(diffusion::check_params(5, 5, f32::NAN)),
            &["alpha", "finite"],
        );
        has(
            &err(diffusion::Fields::new(&dev, &[0.0; 24], 5, 5)),
            &["24 values for a 5x5 grid; need 25"],
        );
        has(
            &err(diffusion::Fields::new(&dev, &[0.0; 24], usize::MAX, 2)),
            &["overflows the number of cells"],
        );
        let u = dev.upload(&[0.0f32; 25]).unwrap();
        let mut lap = dev.alloc_filled(25, 0.0f32).unwrap();
        let mut un = dev.alloc_filled(24, 0.0f32).unwrap();
        has(
            &err(diffusion::step_pingpong(
                &dev, &u, &mut lap, &mut un, 5, 5, 0.1,
            )),
            &["buffers of 25, 25, 24 for a 5x5 grid"],
        );
        has(
            &err(diffusion::step_pingpong(
                &dev,
                &u,
                &mut lap,
                &mut un,
                usize::MAX,
                5,
                0.1,
            )),
            &["overflows the number of cells"],
        );
        let mut uu = dev.upload(&[0.0f32; 25]).unwrap();
        has(
            &err(diffusion::step_inplace(
                &dev, &mut uu, &mut lap, 5, 5, 0.1, 0,
            )),
            &["in-place block", "0; allowed 1..=8"],
        );
        has(
            &err(diffusion::check(
                &dev,
                diffusion::Variant::Pingpong,
                5,
                5,
                0,
                0.1,
                1,
            )),
            &["0 steps", "at least 1"],
        );
        let c = diffusion::check(&dev, diffusion::Variant::Pingpong, 3, 3, 1, 0.25, 1).unwrap();
        assert_eq!(c.mismatches, 0);

        has(
            &err(matmul::check_shapes(3, 4, 5, 6)),
            &[
                "inner dimensions do not match",
                "A's columns (4) must equal B's rows (5)",
            ],
        );
        let a = dev.upload(&[1.0f32; 6]).unwrap();
        let b = dev.upload(&[1.0f32; 6]).unwrap();
        let mut cc = dev.alloc_filled(4, 0.0f32).unwrap();
        has(
            &err(matmul::gemm(
                &dev,
                matmul::Rung::Naive,
                &a,
                &b,
                &mut cc,
                2,
                2,
                4,
            )),
            &["A has 6 elements; the shapes need 8"],
        );
        let mut col = dev.alloc_filled(3, 0.0f32).unwrap();
        has(
            &err(matmul::colsum_add(&dev, &a, &mut col, usize::MAX, 3)),
            &["larger than 4294967295"],
        );
        has(
            &err(matmul::colsum_add(&dev, &a, &mut col, 3, 3)),
            &["the matrix has 6 elements; the shapes need 9"],
        );
        let mut bufs = matmul::ColsumBufs::new(&dev, matmul::Colsum::Fused, 2, 3, 2).unwrap();
        let a4 = dev.upload(&[1.0f32; 4]).unwrap();
        has(
            &err(matmul::colsum_of_product(
                &dev,
                matmul::Colsum::Direct,
                &a4,
                &b,
                &mut bufs,
                2,
                3,
                2,
            )),
            &["the direct way needs a C buffer"],
        );
        let mut c1 = dev.alloc_filled(1, f32::NAN).unwrap();
        let one = dev.upload(&[3.0f32]).unwrap();
        matmul::gemm(&dev, matmul::Rung::Vec, &one, &one, &mut c1, 1, 1, 1).unwrap();
        assert_eq!(dev.download(&c1).unwrap(), vec![9.0]);

        let x = dev.upload(&[1.0f32; 5]).unwrap();
        let mut y = dev.alloc_filled(5, 0.0f32).unwrap();
        let mut z = dev.alloc_filled(4, 0.0f32).unwrap();
        let mut w = dev.alloc_filled(5, 0.0f32).unwrap();
        has(
            &err(fusion::unfused(
                &dev, &x, &mut y, &mut z, &mut w, 1.0, 0.0, 0.0,
            )),
            &["buffer lengths differ: [5, 5, 4, 5]"],
        );
        let mut empty = dev.alloc_filled(0, 0.0f32).unwrap();
        has(
            &err(fusion::tiny(&dev, &mut empty)),
            &["tiny kernel buffer", "0 elements; allowed 1..="],
        );
        has(
            &err(fusion::launch_overhead(&dev, 0, 1)),
            &["--kernels", "allowed 1..=100000"],
        );
        has(&err(fusion::check_counts(1 << 20, 100)), &["at most 2^24"]);
        // reps = 0 times one repetition (as the timers do) and counts it.
        assert!(fusion::launch_overhead(&dev, 2, 0).is_ok());
        assert!(matches!(
            fusion::TinyGraph::capture(&dev, &mut w, 3),
            Err(Error::Unsupported { .. })
        ));
    }

    #[test]
    fn npy_readers() {
        let dir = std::env::temp_dir().join(format!("ptxlab-hostile-lib-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("ok.npy");
        ptxlab::npy::write_2d(&p, 2, 3, &[1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let h = ptxlab::npy::inspect(&p).unwrap();
        assert_eq!(
            (h.descr.as_str(), h.shape.clone(), h.data_bytes),
            ("<f8", vec![2, 3], 48)
        );
        assert_eq!(
            ptxlab::npy::read_2d::<f64>(&p, "f64").unwrap(),
            (2, 3, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        );
        has(
            &err(ptxlab::npy::read_1d::<f64>(&p, "f64")),
            &["(2, 3) has 2 dimension(s); a 1-D array is required"],
        );
        has(
            &err(ptxlab::npy::read_2d::<f32>(&p, "f32")),
            &["its dtype is '<f8' (float64), but f32 is required"],
        );
        let bytes = std::fs::read(&p).unwrap();
        let t = dir.join("trunc.npy");
        std::fs::write(&t, &bytes[..bytes.len() - 1]).unwrap();
        has(
            &err(ptxlab::npy::read_2d::<f64>(&t, "f64")),
            &["the file is truncated", "needs 48 bytes", "holds 47"],
        );
        has(
            &err(ptxlab::npy::inspect(&dir.join("none.npy"))),
            &["cannot open"],
        );
    }
}
