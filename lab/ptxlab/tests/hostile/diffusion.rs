//! `ptxlab diffusion`.

use crate::common::*;
use crate::{CPU, SIM, on, refused};

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
        refused(
            be,
            "diffusion --size 1000000 --iters 1",
            &[
                "1000000x1000000 is too large",
                "at most 2147483647 cells and 524280 rows",
                "use a smaller --size",
            ],
        );
        refused(
            be,
            "diffusion --size 3x600000 --iters 1",
            &["3x600000 is too large", "524280 rows"],
        );
        refused(
            be,
            "diffusion --size 99999999999999999999 --iters 1",
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
        refused(
            be,
            "diffusion --size 5 --iters 1 --alpha 0.3",
            &[
                "0.3 makes the explicit 5-point scheme unstable",
                "alpha <= 0.25",
            ],
        );
        refused(
            be,
            "diffusion --size 5 --iters 1 --variant foo",
            &["'foo'", "possible values: all, inplace, pingpong, temporal"],
        );
    }
    refused(
        SIM,
        "diffusion --size 2000 --iters 100",
        &[
            "--size/--iters",
            "2000x2000 cells x 100 steps",
            "too many for the simulator",
            "--backend cpu",
        ],
    );
    // Valid: the smallest grid; an odd rectangle; the CPU and the simulator
    // give the same field (the same f32 expression).
    for be in [CPU, SIM] {
        succeeds(&on(be, &words("diffusion --size 3 --iters 1")));
    }
    // The material's racy kernel on the simulator: the race detector names
    // it (a RACE line with both blocks and lines), and the run goes on
    // without detection; with `--race-check off`, only the warning.
    let racy = [
        "diffusion",
        "--size",
        "37x29",
        "--iters",
        "2",
        "--variant",
        "inplace",
    ];
    let text = succeeds(&on(SIM, &racy));
    assert!(
        text.contains("RACE (the material's bug")
            && text.contains("data race on global memory")
            && text.contains("lab/diffusion/kernels.rs:")
            && text.contains("WARNING: the in-place kernel is racy"),
        "{text}"
    );
    let mut quiet = racy.to_vec();
    quiet.extend(["--race-check", "off"]);
    let text = succeeds(&on(SIM, &quiet));
    assert!(
        !text.contains("RACE") && text.contains("WARNING: the in-place kernel is racy"),
        "{text}"
    );
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
