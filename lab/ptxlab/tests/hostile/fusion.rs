//! `ptxlab fusion` and `ptxlab launch-overhead`.

use crate::common::*;
use crate::{CPU, SIM, on, refused};

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
        refused(
            be,
            "fusion --n 7 --reps 0",
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
        refused(
            be,
            "launch-overhead --kernels 1 --reps 20000",
            &["--reps", "allowed 1..=10000"],
        );
    }
    fails_with(
        &on(CPU, &["fusion", "--n", "1e12"]),
        &["--n: needs", "of host memory", "use a smaller --n"],
    );
    fails_with(
        &on(SIM, &["fusion", "--n", "5000000"]),
        &["--n", "5000000 elements on the simulator; at most 4194304"],
    );
    fails_with(
        &on(SIM, &["launch-overhead", "--kernels", "20001"]),
        &["--kernels", "20001; at most 20000 on the simulator"],
    );
    fails_with(
        &on(CPU, &["launch-overhead", "--kernels", "5"]),
        &["--backend", "launch overhead needs gpu or sim"],
    );
    refused(
        CPU,
        "launch-overhead --kernels 100000 --reps 1000",
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
    let text = succeeds(&on(SIM, &words("launch-overhead --kernels 1 --reps 1")));
    assert!(
        text.contains("plain launches:") && text.contains("not available on the simulator"),
        "{text}"
    );
}
