//! Fusion and launch overhead: both pipelines on the simulator at odd sizes,
//! the graph path refused on the simulator, hostile inputs, and the GPU.

use ptxlab::error::Error;
use ptxlab::runtime::Device;
use ptxlab::workloads::fusion;

#[test]
fn sim_check_passes() {
    fusion::sim_check().unwrap();
}

#[test]
fn unfused_and_fused_match_f64_at_odd_sizes() {
    let dev = Device::sim();
    for n in [3usize, 4, 5, 1027] {
        let (eu, ef) = fusion::check(&dev, n, 9).unwrap();
        assert!(eu < 1e-6 && ef < 1e-6, "n={n}: {eu:e} {ef:e}");
    }
}

#[test]
fn graph_capture_is_unsupported_on_the_simulator_with_a_hint() {
    let dev = Device::sim();
    let mut x = dev.upload(&[0.0f32; 8]).unwrap();
    let Err(e) = fusion::TinyGraph::capture(&dev, &mut x, 10) else {
        panic!("capture succeeded on the simulator")
    };
    assert!(
        matches!(
            e,
            Error::Runtime(ptxlab::runtime::Error::Unsupported { .. })
        ),
        "{e}"
    );
    let s = e.to_string();
    assert!(
        s.contains("CUDA graph") && s.contains("hint") && s.contains("--backend gpu"),
        "{s}"
    );
}

#[test]
fn plain_launches_run_on_the_simulator() {
    let dev = Device::sim();
    let (t, g) = fusion::launch_overhead(&dev, 4, 1).unwrap();
    assert!(t.median_ms > 0.0 && g.is_none());
}

#[test]
fn mismatched_or_empty_buffers_are_refused() {
    let dev = Device::sim();
    let x = dev.upload(&[1.0f32; 5]).unwrap();
    let mut w = dev.upload(&[1.0f32; 4]).unwrap();
    let e = fusion::fused(&dev, &x, &mut w, 1.0, 0.0, 0.0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("lengths differ"), "{e}");
    let x0 = dev.upload::<f32>(&[]).unwrap();
    let mut w0 = dev.upload::<f32>(&[]).unwrap();
    let e = fusion::fused(&dev, &x0, &mut w0, 1.0, 0.0, 0.0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("length 0"), "{e}");
    let mut big = dev.upload(&[0.0f32; 33]).unwrap();
    let e = fusion::tiny(&dev, &mut big).unwrap_err().to_string();
    assert!(e.contains("allowed 1..=32"), "{e}");
}

#[test]
fn gpu_pipelines_and_graph_replay() {
    let Some(dev) = ptxlab::runtime::testing::gpu_or_skip() else {
        return;
    };
    for n in [1usize, 7, 1 << 20, (1 << 20) + 3] {
        let (eu, ef) = fusion::check(&dev, n, 2).unwrap();
        assert!(eu < 1e-6 && ef < 1e-6, "n={n}");
    }
    // launch_overhead checks that every plain launch and every graph node ran.
    let (tp, tg) = fusion::launch_overhead(&dev, 100, 3).unwrap();
    let tg = tg.expect("graph timing on a GPU");
    println!(
        "plain {:.2} us/kernel, graph {:.2} us/kernel",
        tp.median_ms * 10.0,
        tg.median_ms * 10.0
    );
}
