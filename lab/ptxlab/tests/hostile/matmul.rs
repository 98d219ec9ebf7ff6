//! `ptxlab matmul`.

use crate::common::*;
use crate::{CPU, SIM, on, refused};

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
        refused(
            be,
            "matmul --m 4294967296 --n 1 --k 1",
            &["m=4294967296 is larger than 4294967295"],
        );
        refused(
            be,
            "matmul --m 3 --n 3 --k 3 --variant foo",
            &[
                "--variant",
                "'foo'",
                "possible values: all, naive, tiled, regblock, vec",
            ],
        );
        refused(
            be,
            "matmul --m 3 --n 3 --k 3 --colsum foo",
            &["--colsum", "'foo'", "possible values: direct, fused"],
        );
        refused(
            be,
            "matmul --m 3 --n 3 --k 3 --reps 0",
            &["--reps", "allowed 1..=10000"],
        );
    }
    // A rung of another ladder: refused once --precision says which.
    refused(
        SIM,
        "matmul --m 3 --n 3 --k 3 --precision bf16 --variant vec",
        &[
            "--variant",
            "`vec` is not a rung of --precision bf16",
            "allowed: mma, ldsm, pipe",
        ],
    );
    refused(
        CPU,
        "matmul --m 1e6 --n 1e6 --k 1e6",
        &[
            "--m/--n/--k: needs",
            "of host memory",
            "use a smaller --m/--n/--k",
        ],
    );
    refused(
        CPU,
        "matmul --m 4294967295 --n 4294967295 --k 4294967295",
        &["--m/--n/--k", "overflow the address space"],
    );
    refused(
        CPU,
        "matmul --m 4200 --n 4200 --k 4200",
        &[
            "too large for the one-thread CPU baseline",
            "at most 2^36",
            "--backend gpu",
        ],
    );
    for (m, n, k) in [
        ("1000000", "1000000", "1000000"),
        ("4294967295", "4294967295", "4294967295"),
        ("513", "512", "512"),
    ] {
        fails_with(
            &on(SIM, &["matmul", "--m", m, "--n", n, "--k", k]),
            &[
                "too large for the simulator",
                "m*n*k <= 2^27",
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

/// `--variant all` runs every rung that can take the shape and reports the
/// others as rows (`not for this shape: <why>`), then succeeds; a rung that
/// cannot take it, named on its own, is still an error with the reason
/// (3xTF32's TMA rung at an odd k; the BF16 ladder takes every shape).
#[test]
fn tensor_variant_all_reports_rungs_that_cannot_take_the_shape() {
    let odd = ["--m", "37", "--n", "29", "--k", "41", "--reps", "1"];
    fn args<'a>(odd: &[&'a str], precision: &'a str, variant: &'a str) -> Vec<&'a str> {
        let mut a = vec!["matmul", "--precision", precision, "--variant", variant];
        a.extend_from_slice(odd);
        on(SIM, &a)
    }
    let args = |precision, variant| args(&odd, precision, variant);
    // The BF16 ladder takes every shape: its TMA rungs stage an operand
    // whose rows are not on 16-byte boundaries (`Staging`).
    let text = succeeds(&args("bf16", "all"));
    assert!(!text.contains("not for this shape"), "{text}");
    assert_eq!(text.matches("PASS BF16").count(), 9, "{text}");
    let text = succeeds(&args("tf32x3", "all"));
    assert!(
        text.contains("not for this shape: 3xTF32 wgmma")
            && text.contains("k (41) must be a multiple of 4"),
        "{text}"
    );
    assert!(text.contains("PASS 3xTF32 mma.sync"), "{text}");
    assert!(succeeds(&args("bf16", "wgmma")).contains("PASS BF16"));
    fails_with(
        &args("tf32x3", "wgmma"),
        &["k (41) must be a multiple of 4", "use variant mma"],
    );
}
