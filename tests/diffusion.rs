//! 2D diffusion: the race-free kernels against the CPU on the simulator, the
//! race of the material's in-place kernel, hostile inputs, and the GPU.

use ptxlab::runtime::{Device, SimOptions};
use ptxlab::workloads::diffusion::{self, Variant};
use ptxlab_device::sim::Fault;

#[test]
fn sim_check_passes() {
    diffusion::sim_check().unwrap();
}

#[test]
fn pingpong_and_temporal_match_the_cpu_bitwise_on_the_simulator() {
    let dev = Device::sim();
    // 37x29, 6 steps: one temporal pass of depth 6.
    for v in [Variant::Pingpong, Variant::Temporal] {
        let c = diffusion::check(&dev, v, 37, 29, 6, 0.25, 3).unwrap();
        assert_eq!(c.mismatches, 0, "{v:?}");
        assert_eq!(
            c.max_abs, 0.0,
            "{v:?}: the same f32 expression must give the same bits"
        );
        assert!(c.rel_err < 1e-5, "{v:?}: {}", c.rel_err);
    }
}

#[test]
fn temporal_covers_several_tiles_and_ragged_edges() {
    // 130x53, 10 steps = a pass of depth 8 (output tiles 112x48: two across,
    // two down, ragged) and a pass of depth 2 (tiles 124x60).
    let c = diffusion::check(&Device::sim(), Variant::Temporal, 130, 53, 10, 0.2, 4).unwrap();
    assert_eq!(c.mismatches, 0);
}

/// The lesson, part 1: the simulator's race detector reports the material's
/// in-place kernel: one block overwrites a cell that a neighbouring block
/// reads as its halo, in the same launch. The report names both blocks and
/// threads and both lines of the kernel (the halo read and the write).
#[test]
fn the_race_detector_reports_the_inplace_kernel() {
    let e = diffusion::inplace_race(&Device::sim(), 37, 29).unwrap();
    let Fault::Race(r) = &e.fault else {
        panic!("not a race: {e}")
    };
    assert_eq!(r.space, "global memory");
    assert_ne!(r.first.block, r.second.block, "{e}");
    assert!(
        r.first.write != r.second.write,
        "one read and one write: {e}"
    );
    for a in [&r.first, &r.second] {
        assert!(a.location.starts_with("lab/diffusion/kernels.rs:"), "{e}");
    }
    let text = e.to_string();
    assert!(
        text.contains("diffusion_inplace_f32") && text.contains("data race on global memory"),
        "{text}"
    );
    // With detection off the kernel runs (and gives a schedule-dependent answer).
    let quiet = Device::sim_with(SimOptions {
        race_check: false,
        ..SimOptions::default()
    });
    assert!(diffusion::inplace_race(&quiet, 37, 29).is_err());
}

/// The lesson, part 2: with race detection off, the material's in-place
/// kernel gives a different answer from the sequentially consistent
/// (ping-pong) one, and the difference is deterministic on the simulator,
/// for this reason:
///
/// The simulator hands blocks out in index order to W worker threads (W =
/// rayon's threads, by default the available parallelism), each running one
/// block at a time. When the first block F finishes, at most W blocks have
/// started, all with index < W. With a grid W blocks wide (and at least 2),
/// F lies in block row 0, and the block just below it (index F + W) has not
/// started: it starts later and reads F's bottom row, already overwritten
/// with the new values, as its north halo. Its top-row Laplacian therefore
/// differs from the ping-pong one by alpha * lap(F's bottom row), which is
/// of order 0.1 for random data.
#[test]
fn the_inplace_kernel_races_and_pingpong_does_not() {
    let workers = rayon::current_num_threads().max(2);
    let tile = kernels_gpu::diffusion::INPLACE_TILE as usize;
    let (nx, ny) = (tile * workers, 2 * tile);
    let alpha = 0.25;
    let dev = Device::sim_with(SimOptions {
        race_check: false,
        ..SimOptions::default()
    });
    let u0 = diffusion::initial(nx, ny, 77);
    let (want_u, want_lap) = diffusion::cpu_run(&u0, nx, ny, 1, alpha);

    let mut f = diffusion::Fields::new(&dev, &u0, nx, ny).unwrap();
    diffusion::run(&Device::sim(), Variant::Pingpong, &mut f, 1, alpha).unwrap();
    assert_eq!(
        dev.download(&f.u).unwrap(),
        want_u,
        "ping-pong must equal the sequential answer"
    );
    assert_eq!(dev.download(&f.lap).unwrap(), want_lap);

    let mut f = diffusion::Fields::new(&dev, &u0, nx, ny).unwrap();
    diffusion::run(&dev, Variant::Inplace, &mut f, 1, alpha).unwrap();
    let got = dev.download(&f.lap).unwrap();
    let max = got
        .iter()
        .zip(&want_lap)
        .map(|(g, w)| (g - w).abs())
        .fold(0f32, f32::max);
    assert!(
        max > 1e-3,
        "the racy kernel matched the sequential answer (max diff {max})"
    );
}

#[test]
fn unstable_alpha_is_refused_with_the_limit() {
    let e = diffusion::check_params(64, 64, 0.3)
        .unwrap_err()
        .to_string();
    assert!(e.contains("unstable") && e.contains("0.25"), "{e}");
    assert!(diffusion::check_params(64, 64, 0.25).is_ok());
    let e = diffusion::check_params(64, 64, f32::NAN)
        .unwrap_err()
        .to_string();
    assert!(e.contains("finite"), "{e}");
}

#[test]
fn tiny_or_bad_grids_are_refused() {
    let e = diffusion::check_params(2, 100, 0.1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("at least 3"), "{e}");
    let e = diffusion::parse_size("20x").unwrap_err().to_string();
    assert!(e.contains("NXxNY"), "{e}");
    assert_eq!(diffusion::parse_size("1999x1237").unwrap(), (1999, 1237));
}

#[test]
fn gpu_variants_match_the_cpu() {
    let Some(dev) = ptxlab::runtime::testing::gpu_or_skip() else {
        return;
    };
    for (nx, ny, it) in [(37, 29, 7), (1999, 1237, 9), (2000, 2000, 8)] {
        for v in [Variant::Pingpong, Variant::Temporal] {
            let c = diffusion::check(&dev, v, nx, ny, it, 0.2, 1).unwrap();
            assert_eq!(c.mismatches, 0, "{v:?} {nx}x{ny}: max {}", c.max_abs);
        }
        // The racy kernel runs (its values are schedule-dependent).
        let c = diffusion::check(&dev, Variant::Inplace, nx, ny, it, 0.2, 1).unwrap();
        assert!(c.rel_err.is_finite());
    }
}
