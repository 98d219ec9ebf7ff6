//! Thread-block clusters, distributed shared memory and TMA multicast: the
//! cluster sum and the multicast matrix-vector product
//! (`kernels_gpu::cluster`) on the simulator at odd sizes and every
//! cluster size against f64 references, in order and under random
//! schedules; their planted DSMEM and multicast bugs caught with one-line
//! reports that name both places; bad cluster shapes and multicast masks
//! refused with errors that name the limit; the PTX of the kernels; and,
//! when a driver is present, the same results on the GPU (skipped with a
//! one-line reason otherwise).

use ptxlab::cluster;
use ptxlab::pipeline_bugs::{self, Bug, Outcome};
use ptxlab::rng::uniform_vec;
use ptxlab::runtime::config::{Limits, check_launch};
use ptxlab::runtime::{Device, LaunchConfig, SimOptions};
use ptxlab_device::sim::Schedule;

// One kernel's text in a PTX module, shared with tests/ptx.rs and tests/attention.rs.
mod common {
    pub mod ptx_entry;
}
use common::ptx_entry::entry;

fn data(seed: u64, n: usize) -> Vec<f32> {
    uniform_vec(seed, n, -1.0, 1.0)
        .into_iter()
        .map(|v| v as f32)
        .collect()
}

/// Lengths that leave partial blocks and partial clusters.
const SIZES: [usize; 6] = [1, 255, 1025, 3001, 9999, 17_000];

#[test]
fn cluster_sum_matches_the_f64_reference_at_odd_sizes_on_the_simulator() {
    let dev = Device::sim();
    for c in [1u32, 2, 3, 4, 8] {
        for (i, &n) in SIZES.iter().enumerate() {
            let x = data(100 + i as u64, n);
            let got = cluster::run(&dev, &x, c).unwrap();
            // The output starts as NaN: every cluster must have written.
            cluster::check(&x, c, &got).unwrap_or_else(|e| panic!("n {n}, cluster {c}: {e}"));
        }
    }
}

#[test]
fn cluster_sum_runs_clean_under_random_schedules() {
    for seed in 1..=3 {
        let dev = Device::sim_with(SimOptions {
            schedule: Schedule::Random { seed },
            ..SimOptions::default()
        });
        let x = data(7, 5000);
        let got = cluster::run(&dev, &x, 4).unwrap();
        cluster::check(&x, 4, &got).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    }
}

#[test]
fn the_check_catches_a_wrong_sum() {
    let x = data(3, 3001);
    let mut got: Vec<f32> = cluster::reference(&x, 2)
        .iter()
        .map(|&v| v as f32)
        .collect();
    cluster::check(&x, 2, &got).unwrap();
    got[1] += 0.5;
    assert!(cluster::check(&x, 2, &got).is_err());
    got[1] = f32::NAN;
    assert!(cluster::check(&x, 2, &got).is_err());
}

/// The line numbers of `lab/pipeline-bugs/kernels/cluster.rs` in a report.
fn bug_lines(line: &str) -> Vec<String> {
    let key = "lab/pipeline-bugs/kernels/cluster.rs:";
    line.match_indices(key)
        .map(|(i, _)| {
            line[i + key.len()..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect()
        })
        .collect()
}

#[test]
fn a_remote_read_before_the_cluster_barrier_is_a_race_naming_both_places() {
    let dev = Device::sim();
    let got = pipeline_bugs::run(&dev, Bug::ClusterRemoteReadBeforeSync, true).unwrap();
    let Outcome::Caught(e) = got else {
        panic!("not caught: {got}");
    };
    let line = e.to_string();
    println!("{line}");
    assert!(
        line.contains("data race on distributed shared memory"),
        "{line}"
    );
    // Lane 1 of block 0 of a cluster read block 1's sum before block 1's
    // thread 0 wrote it (clusters run in parallel: any cluster may report).
    assert!(
        line.contains("read by thread (1, 0, 0) of block ("),
        "{line}"
    );
    assert!(
        line.contains("then written by thread (0, 0, 0) of block ("),
        "{line}"
    );
    assert!(line.contains("no cluster barrier between them"), "{line}");
    let lines = bug_lines(&line);
    assert!(
        lines.len() >= 2 && lines[0] != lines[1],
        "two different source lines expected: {line}"
    );
    assert!(!line.contains('\n'));
    // The correct kernel runs clean and right.
    let ok = pipeline_bugs::run(&dev, Bug::ClusterRemoteReadBeforeSync, false).unwrap();
    assert!(matches!(ok, Outcome::Right { .. }), "{ok}");
}

#[test]
fn a_block_that_exits_while_a_peer_reads_it_is_reported_naming_both_places() {
    let dev = Device::sim();
    let got = pipeline_bugs::run(&dev, Bug::ClusterExitWhileRead, true).unwrap();
    let Outcome::Caught(e) = got else {
        panic!("not caught: {got}");
    };
    let line = e.to_string();
    println!("{line}");
    assert!(line.contains("but that block has exited"), "{line}");
    assert!(
        line.contains("reads the shared memory of block ("),
        "{line}"
    );
    let lines = bug_lines(&line);
    assert!(
        lines.len() >= 2 && lines.iter().any(|l| *l != lines[0]),
        "the read and the exited block's last cluster barrier expected: {line}"
    );
    let ok = pipeline_bugs::run(&dev, Bug::ClusterExitWhileRead, false).unwrap();
    assert!(matches!(ok, Outcome::Right { .. }), "{ok}");
}

/// Odd shapes of the multicast matrix-vector product: partial row tiles,
/// partial column tiles, more tiles than stages.
const MC_SHAPES: [(usize, usize); 4] = [(1, 1), (33, 97), (67, 131), (130, 260)];

#[test]
fn multicast_matvec_matches_the_f64_reference_at_odd_shapes_on_the_simulator() {
    let dev = Device::sim();
    for c in cluster::MULTICAST_CLUSTERS {
        for (i, &(m, k)) in MC_SHAPES.iter().enumerate() {
            let (a, x) = cluster::multicast_data(300 + i as u64, m, k, c);
            let got = cluster::multicast_run(&dev, &a, &x, m, k, c).unwrap();
            // The output starts as NaN: every block must have written.
            cluster::multicast_check(&a, &x, m, k, c, &got)
                .unwrap_or_else(|e| panic!("{m}x{k}, cluster {c}: {e}"));
        }
    }
}

#[test]
fn multicast_matvec_runs_clean_under_random_schedules() {
    for seed in 1..=4 {
        let dev = Device::sim_with(SimOptions {
            schedule: Schedule::Random { seed },
            ..SimOptions::default()
        });
        for c in [2u32, 4] {
            let (m, k) = (67, 200);
            let (a, x) = cluster::multicast_data(9, m, k, c);
            let got = cluster::multicast_run(&dev, &a, &x, m, k, c).unwrap();
            cluster::multicast_check(&a, &x, m, k, c, &got)
                .unwrap_or_else(|e| panic!("seed {seed}, cluster {c}: {e}"));
        }
    }
}

#[test]
fn the_multicast_check_catches_a_wrong_result() {
    let (m, k, c) = (33, 40, 2);
    let (a, x) = cluster::multicast_data(4, m, k, c);
    let (want, _) = cluster::multicast_reference(&a, &x, m, k, c);
    let mut got: Vec<f32> = want.iter().map(|&v| v as f32).collect();
    cluster::multicast_check(&a, &x, m, k, c, &got).unwrap();
    got[m + 5] += 0.01;
    let e = cluster::multicast_check(&a, &x, m, k, c, &got).unwrap_err();
    assert!(e.to_string().contains("vector 1, row 5"), "{e}");
    got[m + 5] = f32::NAN;
    assert!(cluster::multicast_check(&a, &x, m, k, c, &got).is_err());
}

#[test]
fn bad_multicast_shapes_are_refused() {
    let e = cluster::multicast_config(64, 64, 3)
        .unwrap_err()
        .to_string();
    assert!(e.contains("allowed: 1, 2, 4 or 8"), "{e}");
    let e = cluster::multicast_config(0, 64, 2).unwrap_err().to_string();
    assert!(e.contains("at least") || e.contains("1..="), "{e}");
    let dev = Device::sim();
    let e = cluster::multicast_run(&dev, &[0.0; 10], &[0.0; 4], 3, 4, 2)
        .unwrap_err()
        .to_string();
    assert!(e.contains("want 12 and 8"), "{e}");
}

/// The line numbers of `file` in a report.
fn lines_of(line: &str, file: &str) -> Vec<String> {
    let key = format!("{file}:");
    line.match_indices(&key)
        .map(|(i, _)| {
            line[i + key.len()..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect()
        })
        .collect()
}

/// The one-line report of `bug` (planted), after checking that its
/// correct kernel gives the right result and that the report contains every
/// one of `phrases`.
fn multicast_report(bug: Bug, phrases: &[&str]) -> String {
    let dev = Device::sim();
    let ok = pipeline_bugs::run(&dev, bug, false).unwrap();
    assert!(matches!(ok, Outcome::Right { .. }), "{ok}");
    let got = pipeline_bugs::run(&dev, bug, true).unwrap();
    let Outcome::Caught(e) = got else {
        panic!("not caught: {got}");
    };
    assert_eq!(e.kernel, bug.kernel());
    let line = e.to_string();
    println!("{line}");
    assert!(!line.contains('\n'));
    for p in phrases {
        assert!(line.contains(p), "no `{p}` in: {line}");
    }
    line
}

/// The line numbers of the multicast kernels' source in a report.
fn multicast_lines(line: &str) -> Vec<String> {
    lines_of(line, "lab/pipeline-bugs/kernels/multicast.rs")
}

/// Fails unless the report `line` names at least two different lines of
/// the multicast kernels (`what`: the two it should name).
fn assert_two_places(line: &str, what: &str) {
    let lines = multicast_lines(line);
    assert!(
        lines.len() >= 2 && lines.iter().any(|l| *l != lines[0]),
        "{what} expected: {line}"
    );
}

#[test]
fn a_multicast_mask_that_misses_a_consumer_is_a_deadlock_naming_the_multicast() {
    let line = multicast_report(
        Bug::MulticastMaskMissesPeer,
        &[
            "deadlock",
            "its mask misses a block that waits for its data",
            "cta_mask 0b",
            "transaction bytes pending",
        ],
    );
    // The consumer's wait and the multicast (in the shared kernel body).
    assert_two_places(&line, "the wait and the multicast");
}

#[test]
fn an_expect_tx_of_one_blocks_bytes_is_a_read_of_unlanded_data_naming_the_multicast() {
    let line = multicast_report(
        Bug::MulticastExpectTxOneBlock,
        &[
            "TMA multicast",
            "counted fewer bytes than land in this block",
        ],
    );
    assert_two_places(&line, "the read and the multicast");
}

#[test]
fn a_stage_released_on_the_own_block_only_leaves_the_peers_producer_waiting() {
    let line = multicast_report(
        Bug::MulticastArriveOwnRankOnly,
        &["deadlock", "arrivals pending"],
    );
    let lines = multicast_lines(&line);
    assert!(lines.len() >= 2, "the wait and the init expected: {line}");
}

/// The error of a cluster sum launched with `cfg` on the simulator.
fn launch_error(cfg: LaunchConfig) -> String {
    let x = data(1, 4096);
    let e = cluster::run_with(&Device::sim(), &x, cfg).expect_err("the launch must be refused");
    e.to_string()
}

#[test]
fn bad_cluster_shapes_are_refused_with_the_limit() {
    let base = cluster::config(4096, 1).unwrap();
    let e = launch_error(base.with_cluster(16, 1, 1));
    assert!(e.contains("at most 8 blocks per cluster"), "{e}");
    let e = launch_error(base.with_cluster(3, 1, 1));
    assert!(
        e.contains("multiple of the cluster's") && e.contains("grid (4, 1, 1)"),
        "{e}"
    );
    let e = launch_error(base.with_cluster(0, 1, 1));
    assert!(e.contains("at least 1"), "{e}");
    let e = launch_error(base.with_cluster(2, 2, 1));
    assert!(e.contains("multiple of the cluster's"), "{e}");
    // A device without clusters (below sm_90) refuses any.
    let old = Limits {
        max_cluster_blocks: 0,
        ..Limits::SIM
    };
    let e = check_launch("cluster_sum_f32", &base.with_cluster(2, 1, 1), &old)
        .expect_err("no clusters below sm_90")
        .to_string();
    assert!(e.contains("sm_90"), "{e}");
    let plain = LaunchConfig {
        cluster: None,
        ..base
    };
    check_launch("cluster_sum_f32", &plain, &old).unwrap();
    // And the simulator itself refuses what the runtime's check would.
    let spec = ptxlab_device::sim::LaunchSpec {
        kernel: "cluster_test",
        grid: ptxlab_device::Dim3::x(6),
        block: ptxlab_device::Dim3::x(32),
        shared_bytes: 0,
    };
    let r = ptxlab_device::sim::launch_cluster(
        &spec,
        ptxlab_device::Dim3::x(4),
        &SimOptions::default(),
        || {},
    );
    assert!(
        r.unwrap_err()
            .to_string()
            .contains("not a whole number of clusters")
    );
}

#[test]
fn the_kernel_ptx_has_the_cluster_barrier_and_dsmem() {
    let ptx = ptxlab::modules::ptx_sm90a();
    let e = entry(ptx, "cluster_sum_f32");
    for what in [
        "barrier.cluster.arrive",
        "barrier.cluster.wait",
        "mapa.shared::cluster",
        "ld.shared::cluster",
        "%cluster_ctarank",
        "%cluster_nctarank",
    ] {
        assert!(e.contains(what), "cluster_sum_f32: no `{what}`");
    }
    for bug in ["cluster_remote_read_before_sync", "cluster_exit_while_read"] {
        let e = entry(ptx, bug);
        assert!(e.contains("mapa.shared::cluster"), "{bug}");
        assert!(e.contains("barrier.cluster.wait"), "{bug}");
    }
    // The portable module has none of them.
    assert!(!ptxlab::modules::ptx(false).contains("barrier.cluster"));
    for name in [
        "cluster_multicast_matvec_f32",
        "multicast_mask_misses_peer",
        "multicast_expect_tx_one_block",
        "multicast_arrive_own_rank_only",
    ] {
        let e = entry(ptx, name);
        for what in [
            ".multicast::cluster",
            "mbarrier.arrive.release.cluster.shared::cluster.b64",
            "mapa.shared::cluster",
            "fence.mbarrier_init.release.cluster",
            "barrier.cluster.wait",
        ] {
            assert!(e.contains(what), "{name}: no `{what}`");
        }
    }
}

#[test]
fn gpu_cluster_sum() {
    let Some(dev) = ptxlab::runtime::testing::gpu_or_skip() else {
        return;
    };
    let x = data(5, 9999);
    let Some(gpu) = dev.as_gpu() else {
        return;
    };
    let cc = gpu.info().compute_capability;
    if cc.0 < 9 {
        let e = cluster::run(&dev, &x, 2).expect_err("no clusters below sm_90");
        assert!(e.to_string().contains("sm_90"), "{e}");
        println!(
            "skipped: compute capability {}.{} has no clusters",
            cc.0, cc.1
        );
        return;
    }
    for c in [1u32, 2, 4, 8] {
        for (i, &n) in SIZES.iter().enumerate() {
            let x = data(200 + i as u64, n);
            let got = cluster::run(&dev, &x, c).unwrap();
            cluster::check(&x, c, &got).unwrap_or_else(|e| panic!("GPU n {n}, cluster {c}: {e}"));
        }
    }
    let e = cluster::run_with(
        &dev,
        &x,
        cluster::config(x.len(), 1).unwrap().with_cluster(16, 1, 1),
    )
    .expect_err("16 blocks exceed the portable cluster size");
    assert!(e.to_string().contains("at most 8"), "{e}");
}

#[test]
fn gpu_multicast_matvec() {
    let Some(dev) = ptxlab::runtime::testing::gpu_or_skip() else {
        return;
    };
    let Some(gpu) = dev.as_gpu() else {
        return;
    };
    let cc = gpu.info().compute_capability;
    if cc.0 < 9 {
        println!(
            "skipped: compute capability {}.{} has no clusters or TMA",
            cc.0, cc.1
        );
        return;
    }
    let shapes = [(1, 1), (33, 97), (67, 131), (130, 260), (1000, 4099)];
    for c in cluster::MULTICAST_CLUSTERS {
        for (i, &(m, k)) in shapes.iter().enumerate() {
            let (a, x) = cluster::multicast_data(500 + i as u64, m, k, c);
            let got = cluster::multicast_run(&dev, &a, &x, m, k, c).unwrap();
            cluster::multicast_check(&a, &x, m, k, c, &got)
                .unwrap_or_else(|e| panic!("GPU {m}x{k}, cluster {c}: {e}"));
        }
    }
}
