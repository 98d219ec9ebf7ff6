//! `ptxlab bench`, `ptxlab info` and the command line itself.

use crate::common::*;

#[test]
fn bench_info_and_command_line_hostile() {
    let out = tmp("bench-never-created");
    fails_with(
        &["bench", "--backend", "tpu", "--out", &out],
        &["--backend", "'tpu'", "possible values: gpu, sim, cpu"],
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
        &["'nosuch'", "possible values:", "poisson", "vector-add"],
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
