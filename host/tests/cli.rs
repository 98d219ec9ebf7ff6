//! Hostile inputs through the `ptxlab` binary: each ends in an error that
//! names the input and what is allowed, never a panic.

mod common;

use common::*;

#[test]
fn unknown_subcommand_lists_the_valid_ones() {
    fails_with(&["frobnicate"], &["unrecognized subcommand", "vector-add"]);
}

#[test]
fn vector_add_rejects_bad_options() {
    fails_with(
        &["vector-add", "--precision", "f16", "--backend", "cpu"],
        &["'f16'", "possible values: f32, f64"],
    );
    fails_with(
        &["vector-add", "--backend", "tpu"],
        &["'tpu'", "possible values: gpu, sim, cpu"],
    );
    fails_with(&["vector-add", "--n", "0", "--backend", "cpu"], &["empty"]);
    fails_with(
        &[
            "vector-add",
            "--variant",
            "x8",
            "--n",
            "10",
            "--backend",
            "sim",
        ],
        &["'x8'", "possible values: scalar, wide"],
    );
}

#[test]
fn vector_add_rejects_bad_npy_files() {
    let good = npy(
        "good.npy",
        "<f4",
        "(4,)",
        &f32_bytes(&[1.0, 2.0, 3.0, 4.0], false),
    );
    let short = npy(
        "short.npy",
        "<f4",
        "(3,)",
        &f32_bytes(&[1.0, 2.0, 3.0], false),
    );
    let wrong_dtype = npy("f8.npy", "<f8", "(2,)", &[0u8; 16]);
    let two_d = npy(
        "2d.npy",
        "<f4",
        "(2, 2)",
        &f32_bytes(&[1.0, 2.0, 3.0, 4.0], false),
    );
    let truncated = npy("trunc.npy", "<f4", "(100,)", &f32_bytes(&[1.0; 10], false));
    let g = good.to_str().unwrap();
    for (bad, needle) in [
        (short.to_str().unwrap(), "a has 4 elements and b has 3"),
        (wrong_dtype.to_str().unwrap(), "not a valid .npy of f32"),
        (two_d.to_str().unwrap(), "not a valid .npy of f32"),
        (truncated.to_str().unwrap(), "not a valid .npy of f32"),
        ("/nonexistent/x.npy", "cannot open"),
    ] {
        fails_with(
            &["vector-add", "--backend", "cpu", "--a", g, "--b", bad],
            &[needle],
        );
    }
    fails_with(
        &["vector-add", "--backend", "cpu", "--a", g],
        &["give both --a and --b"],
    );
}

#[test]
fn big_endian_npy_is_read_correctly() {
    let a = npy(
        "be.npy",
        ">f4",
        "(4,)",
        &f32_bytes(&[1.0, 2.0, 3.0, 4.0], true),
    );
    let b = npy(
        "le.npy",
        "<f4",
        "(4,)",
        &f32_bytes(&[1.0, 1.0, 1.0, 1.0], false),
    );
    let out = std::env::temp_dir().join(format!("ptxlab-cli-out-{}.npy", std::process::id()));
    let (code, text) = ptxlab(&[
        "vector-add",
        "--backend",
        "sim",
        "--a",
        a.to_str().unwrap(),
        "--b",
        b.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("PASS vector-add f32 n=4"), "{text}");
    let bytes = std::fs::read(&out).unwrap();
    let data = &bytes[bytes.len() - 16..];
    let got: Vec<f32> = data
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, vec![2.0, 3.0, 4.0, 5.0]);
}

#[test]
fn missing_driver_is_one_clear_line() {
    if std::path::Path::new("/dev/nvidiactl").exists() {
        println!("skipped: this machine has an NVIDIA driver");
        return;
    }
    fails_with(
        &["vector-add", "--backend", "gpu", "--n", "10"],
        &["no NVIDIA driver", "--backend sim"],
    );
}

#[test]
fn bench_rejects_unknown_workloads() {
    fails_with(
        &[
            "bench",
            "--only",
            "nosuch",
            "--backend",
            "cpu",
            "--out",
            "/tmp/ptxlab-cli-bench",
        ],
        &["nosuch", "allowed", "poisson"],
    );
}

#[test]
fn enum_options_are_checked_by_the_parser_with_suggestions() {
    fails_with(
        &["poisson", "--variant", "fancy", "--backend", "cpu"],
        &[
            "'fancy'",
            "possible values: all, naive, tiled, register, temporal",
        ],
    );
    fails_with(
        &["poisson", "--variant", "tiles", "--backend", "cpu"],
        &["'tiles'", "a similar value exists: 'tiled'"],
    );
    fails_with(
        &["poisson", "--precision", "f16", "--backend", "cpu"],
        &["'f16'", "possible values: f32, f64"],
    );
    fails_with(
        &["reduce", "--variant", "gridstrid", "--backend", "cpu"],
        &["a similar value exists: 'gridstride'"],
    );
    fails_with(
        &["histogram", "--keys", "u16", "--backend", "cpu"],
        &["possible values: u8, u32"],
    );
}
