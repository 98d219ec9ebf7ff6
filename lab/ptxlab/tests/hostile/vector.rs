//! `ptxlab vector-add`.

use crate::common::*;
use crate::{CPU, SIM, on, refused};

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
        refused(
            be,
            "vector-add --n 5 --reps 0",
            &["--reps", "0 timed repetitions", "allowed 1..=10000"],
        );
        refused(
            be,
            "vector-add --n 5 --reps 1e12",
            &["--reps", "1000000000000", "allowed 1..=10000"],
        );
        // An unknown variant is refused on every backend, even where unused.
        refused(
            be,
            "vector-add --n 5 --variant x8",
            &["'x8'", "possible values: all, scalar, wide"],
        );
        refused(
            be,
            "vector-add --n 5 --precision f16",
            &["--precision", "'f16'", "possible values: f32, f64"],
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
        &["--n", "on the simulator; at most 4194304", "--backend cpu"],
    );
    fails_with(
        &on(SIM, &["vector-add", "--n", "4194305"]),
        &["4194305 elements on the simulator; at most 4194304"],
    );
    fails_with(
        &["vector-add", "--backend", "tpu"],
        &["--backend", "'tpu'", "possible values: gpu, sim, cpu"],
    );
}

#[test]
fn vector_add_hostile_npy_and_valid_edges() {
    let a4 = f32_npy("va_a4.npy", &[1.0, 2.0, 3.0, 4.0], false);
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
    let x = f32_npy(
        "va_x.npy",
        &[1.0, f32::NAN, f32::INFINITY, -f32::INFINITY, 3e38],
        true,
    );
    let y = f32_npy(
        "va_y.npy",
        &[1.0, 1.0, -f32::INFINITY, -f32::INFINITY, 3e38],
        false,
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
            assert!(
                text.contains("PASS vector-add f32 1 element/thread n=5"),
                "{text}"
            );
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
        let label = if v == "wide" {
            "16-byte loads"
        } else {
            "1 element/thread"
        };
        assert!(
            text.contains(&format!("PASS vector-add {p} {label} n={n}")),
            "{text}"
        );
    }
    succeeds(&on(CPU, &words("vector-add --n 1 --reps 1")));
}
