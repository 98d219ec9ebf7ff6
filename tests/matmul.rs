//! SGEMM ladder and column sum: simulator correctness at odd sizes, hostile
//! inputs, and (when a driver is present) every rung on the GPU.

use kernels_gpu::matmul as km;
use ptxlab::runtime::Device;
use ptxlab::workloads::matmul::{self, Colsum, FusedPlan, Loads, Precision, Rung, Variant};

#[test]
fn sim_check_passes() {
    // The SGEMM ladder and column sums: the other two parts of
    // `matmul::sim_check`, the tensor-core ladder and the FP8 GEMM, are the
    // simulator checks of tests/matmul_tensor.rs and tests/matmul_fp8.rs
    // (and tests/coverage.rs runs all three), so each runs there alone.
    matmul::sim_check_f32().unwrap();
}

/// Every rung on the simulator at `m x n x k` against the reference, within
/// [`matmul::TOL`] (relative).
fn every_rung_on_the_simulator(m: usize, n: usize, k: usize, seed: u64) {
    let dev = Device::sim();
    for rung in Rung::ALL {
        let e = matmul::check_rung(&dev, rung, m, n, k, seed).unwrap();
        assert!(
            e < matmul::TOL,
            "{rung:?} at {m}x{n}x{k}: relative error {e:e}"
        );
    }
}

/// Every rung over several block tiles in both dimensions, ragged at both
/// far edges and with an odd depth: 259x261 is 3x3 tiles of 128x128, 5x5 of
/// 64x64 and 9x9 of 32x32; k = 67 is a few k-tiles and a partial one.
#[test]
fn every_rung_covers_several_block_tiles_on_the_simulator_259x261x67() {
    every_rung_on_the_simulator(259, 261, 67, 21);
}

#[test]
fn every_rung_matches_the_reference_on_the_simulator_37x29x41() {
    every_rung_on_the_simulator(37, 29, 41, 1);
}

#[test]
fn rung4_covers_two_block_tiles_and_several_k_tiles() {
    // 130 rows and 133 columns: two block tiles each way, 19 k tiles (odd).
    let e = matmul::check_rung(&Device::sim(), Rung::Vec, 130, 133, 150, 2).unwrap();
    assert!(e < matmul::TOL, "relative error {e:e}");
}

#[test]
fn k16_rungs_cover_ragged_and_vector_paths() {
    let dev = Device::sim();
    // 130x133x150: two block tiles each way, 10 k tiles of 16 (the last of
    // 6: zero fill), nothing a multiple of 4 (scalar loads and stores).
    // 132x136x72: k and n multiples of 4 (the 16-byte paths), 5 k tiles (odd,
    // so the last tile is in stage 0), m ragged.
    check_sizes(
        &dev,
        &[Rung::Vec16, Rung::Vec16x2, Rung::Vec16s],
        &[(130, 133, 150), (132, 136, 72)],
        6,
    );
}

/// Every rung of `rungs` at every `(m, n, k)` of `sizes` against the f64
/// reference (inputs from `seed`), within `matmul::TOL`.
fn check_sizes(dev: &Device, rungs: &[Rung], sizes: &[(usize, usize, usize)], seed: u64) {
    for &(m, n, k) in sizes {
        for &rung in rungs {
            let e = matmul::check_rung(dev, rung, m, n, k, seed).unwrap();
            assert!(
                e < matmul::TOL,
                "{rung:?} {m}x{n}x{k}: relative error {e:e}"
            );
        }
    }
}

#[test]
fn async_rungs_cover_the_copy_paths_and_short_pipelines() {
    let dev = Device::sim();
    // 132x136x72: both operands by cp.async (k, n multiples of 4), 9 k
    // tiles (more than the 4 stages: every stage reused). 130x133x150:
    // neither (element-by-element stores). 130x136x70: A element by element,
    // B by cp.async; 132x133x72: the other way round. 33x36x5: one k tile,
    // so the prologue commits empty groups. Ragged m and n everywhere but
    // one case: zero-filled groups outside the matrix.
    check_sizes(
        &dev,
        &[Rung::Async, Rung::Async2, Rung::Asyncs2, Rung::Asyncs],
        &[
            (132, 136, 72),
            (130, 133, 150),
            (130, 136, 70),
            (132, 133, 72),
            (33, 36, 5),
            (128, 128, 24),
        ],
        6,
    );
}

#[test]
fn fast_path_rungs_mix_interior_and_edge_blocks() {
    let dev = Device::sim();
    // (interior blocks, edge blocks) of a launch, by the kernel's own test.
    let split = |m: usize, n: usize, k: usize| {
        let (gx, gy) = (n.div_ceil(km::VEC_BN), m.div_ceil(km::VEC_BM));
        let fast = (0..gy)
            .flat_map(|y| (0..gx).map(move |x| (y, x)))
            .filter(|&(y, x)| km::vecf_fast_tile(y * km::VEC_BM, x * km::VEC_BN, m, n, k))
            .count();
        (fast, gx * gy - fast)
    };
    // 257x256x40: four interior blocks and, in the same launch, a block row
    // of one row of C on the checked path; 5 k tiles (odd: the last in
    // stage 0). 256x260x24: the last block column is 4 wide. 128x128x8: one
    // interior block with one k tile (the first tile is the last).
    // 200x136x44 and 256x256x20: k not a multiple of 8, every block checked
    // (16-byte loads where k % 4 == 0, scalar where not).
    for (m, n, k, fast, edge) in [
        (257, 256, 40, 4, 2),
        (256, 260, 24, 4, 2),
        (128, 128, 8, 1, 0),
        (200, 136, 44, 0, 4),
        (256, 256, 20, 0, 4),
    ] {
        assert_eq!(split(m, n, k), (fast, edge), "{m}x{n}x{k}");
        check_sizes(&dev, &[Rung::Vecf, Rung::Vecf2], &[(m, n, k)], 13);
    }
    // Both paths do rung 4b's FMAs in rung 4b's order: bitwise equal output.
    let (m, n, k) = (257, 256, 40);
    let (ha, hb) = matmul::inputs(m, n, k, 14);
    let (a, b) = (dev.upload(&ha).unwrap(), dev.upload(&hb).unwrap());
    let run = |rung: Rung| {
        let mut c = dev.alloc_filled(m * n, f32::NAN).unwrap();
        matmul::gemm(&dev, rung, &a, &b, &mut c, m, n, k).unwrap();
        dev.download(&c).unwrap()
    };
    let want: Vec<u32> = run(Rung::Vec1).iter().map(|v| v.to_bits()).collect();
    for rung in [Rung::Vecf, Rung::Vecf2] {
        let got: Vec<u32> = run(rung).iter().map(|v| v.to_bits()).collect();
        assert!(got == want, "{rung:?} differs from rung 4b");
    }
}

#[test]
fn grouped_order_covers_every_tile_once() {
    // 10 block rows (a group of 8 and a last group of 2) x 2 block columns;
    // C is poisoned with NaN, so a tile never computed fails the check, and
    // a tile computed twice by the wrong block would be another's values.
    let (m, n, k) = (128 * 9 + 5, 133, 20);
    let e = matmul::check_rung(&Device::sim(), Rung::Vec16s, m, n, k, 8).unwrap();
    assert!(e < matmul::TOL, "relative error {e:e}");
}

#[test]
fn vec_rungs_fit_in_default_shared_memory() {
    assert_eq!(km::vec16_shared_bytes(), 33_280);
    for rung in Rung::ALL {
        let cfg = rung.config(4096, 4096).unwrap();
        // No opt-in needed (48 KiB), and two blocks fit on any sm_80+ SM.
        assert!(
            cfg.shared_bytes <= 48 * 1024,
            "{rung:?}: {}",
            cfg.shared_bytes
        );
    }
    let cfg = Rung::Vec16.config(1000, 1000).unwrap();
    assert_eq!(cfg.shared_bytes, km::vec16_shared_bytes());
    assert_eq!((cfg.grid.x, cfg.grid.y, cfg.block.x), (8, 8, 256));
}

#[test]
fn rung_names_round_trip() {
    for rung in Rung::ALL {
        let picked = Variant::named(rung.name()).pick::<Rung>(Precision::F32);
        assert_eq!(picked.unwrap(), vec![rung]);
    }
    let all = Variant::ALL.pick::<Rung>(Precision::F32).unwrap();
    assert_eq!(all, Rung::ALL.to_vec());
}

#[test]
fn fused_plans_match_the_reference_on_the_simulator() {
    let dev = Device::sim();
    // k = 520: three blocks of 256 columns of A (the last ragged); chunks that
    // divide nothing; one-launch chunks of B that straddle two column blocks
    // of A (rows 200..300 need v[0..256] and v[256..512]).
    let (m, n, k) = (203, 41, 520);
    let plans = [
        FusedPlan::rows(24, Loads::Four),
        FusedPlan::rows(24, Loads::Eight),
        FusedPlan::rows(1, Loads::Eight),
        FusedPlan::rows(1000, Loads::Four),
        FusedPlan::one_wave(&dev, Loads::Eight, m, n, k).unwrap(),
        FusedPlan::rows(40, Loads::Eight).with_memset(),
        FusedPlan {
            chunk_a: 48,
            chunk_b: 100,
            ..FusedPlan::one_launch(1)
        },
        FusedPlan::one_launch(7),
    ];
    for plan in plans {
        let e = matmul::check_fused(&dev, &plan, m, n, k, 21).unwrap();
        assert!(e < 1e-4, "{}: relative error {e:e}", plan.label());
    }
}

#[test]
fn fused_plan_labels_name_what_differs() {
    assert_eq!(
        FusedPlan::DEFAULT.label(),
        "colsum fused: colsum(A) B (16-row chunks, 8 loads/thread)"
    );
    assert_eq!(
        FusedPlan::rows(128, Loads::Eight).label(),
        "colsum fused, 128-row chunks, 8 loads/thread"
    );
    assert!(FusedPlan::one_launch(64).label().contains("1 launch"));
    assert!(FusedPlan::DEFAULT.with_memset().label().contains("memset"));
    let dev = Device::sim();
    let p = FusedPlan::one_wave(&dev, Loads::Four, 10000, 7000, 5000).unwrap();
    assert!(p.label().contains("one wave"), "{}", p.label());
    assert!(
        p.chunk_a.is_multiple_of(8) && p.chunk_b.is_multiple_of(8),
        "{p:?}"
    );
}

#[test]
fn bad_fused_plans_are_clear_errors() {
    let dev = Device::sim();
    let (m, n, k) = (8, 8, 8);
    let e = matmul::check_fused(&dev, &FusedPlan::rows(0, Loads::Four), m, n, k, 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("0 rows per chunk"), "{e}");
    let e = matmul::check_fused(&dev, &FusedPlan::one_launch(8).with_memset(), m, n, k, 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("one-launch plan"), "{e}");
    // More chunks than a grid's y dimension holds.
    let x = dev.upload(&vec![1.0f32; 70_000]).unwrap();
    let mut out = dev.upload(&[0.0f32]).unwrap();
    let e = matmul::colsum_add_with(&dev, &x, &mut out, 70_000, 1, 1, Loads::Four)
        .unwrap_err()
        .to_string();
    assert!(e.contains("at most 65535"), "{e}");
}

#[test]
fn cpu_baselines_agree_with_the_reference() {
    let (m, n, k) = (37, 29, 41);
    let (a, b) = matmul::inputs(m, n, k, 3);
    let want = matmul::reference_f64(&a, &b, m, n, k);
    for got in [
        matmul::cpu_ndarray(&a, &b, m, n, k),
        matmul::cpu_rayon(&a, &b, m, n, k),
    ] {
        let g: Vec<f64> = got.iter().map(|v| *v as f64).collect();
        assert!(ptxlab::rng::rel_err_norm(&g, &want) < 1e-5);
    }
}

#[test]
fn inner_dimension_mismatch_is_a_clear_error() {
    let e = matmul::check_shapes(3, 4, 5, 6).unwrap_err().to_string();
    assert!(e.contains("inner dimensions do not match"), "{e}");
    assert!(e.contains("A is 3x4") && e.contains("B is 5x6"), "{e}");
}

/// The error of `matmul::gemm` on the simulator with `rung`, buffers A, B
/// and C of `lens` elements (A and B of ones) and the shape `(m, n, k)`;
/// the call must fail.
fn gemm_error(rung: Rung, lens: [usize; 3], (m, n, k): (usize, usize, usize)) -> String {
    let dev = Device::sim();
    let a = dev.upload(&vec![1.0f32; lens[0]]).unwrap();
    let b = dev.upload(&vec![1.0f32; lens[1]]).unwrap();
    let mut c = dev.upload(&vec![0.0f32; lens[2]]).unwrap();
    matmul::gemm(&dev, rung, &a, &b, &mut c, m, n, k)
        .unwrap_err()
        .to_string()
}

#[test]
fn zero_dimension_is_a_clear_error() {
    let e = matmul::check_shapes(0, 4, 4, 6).unwrap_err().to_string();
    assert!(e.contains("zero dimension") && e.contains("m=0"), "{e}");
    let e = gemm_error(Rung::Naive, [4, 4, 1], (1, 0, 4));
    assert!(e.contains("zero dimension"), "{e}");
}

#[test]
fn buffer_lengths_must_match_the_shapes() {
    let e = gemm_error(Rung::Tiled, [6, 6, 3], (2, 2, 3));
    assert!(
        e.contains("C has 3 elements") && e.contains("need 4"),
        "{e}"
    );
}

#[test]
fn a_variant_of_another_ladder_names_the_allowed_ones() {
    let e = Variant::named("pipe").pick::<Rung>(Precision::F32);
    let e = e.unwrap_err().to_string();
    assert!(
        e.contains("`pipe` is not a rung of --precision f32")
            && e.contains("allowed: naive, tiled, regblock, vec"),
        "{e}"
    );
}

#[test]
fn gpu_every_rung_and_both_column_sums() {
    let Some(dev) = ptxlab::runtime::testing::gpu_or_skip() else {
        return;
    };
    for (m, n, k) in [
        (37, 29, 41),
        (517, 389, 301),
        (256, 256, 256),
        (1000, 1004, 1008),
    ] {
        for rung in Rung::ALL {
            let e = matmul::check_rung(&dev, rung, m, n, k, 9).unwrap();
            assert!(e < matmul::TOL, "{rung:?} {m}x{n}x{k}: {e:e}");
        }
    }
    for how in [Colsum::Direct, Colsum::Fused] {
        let e = matmul::check_colsum(&dev, how, 1003, 701, 509, 4).unwrap();
        assert!(e < 1e-4, "{how:?}: {e:e}");
    }
    for plan in matmul::bench_plans(&dev, 1003, 701, 509).unwrap() {
        let e = matmul::check_fused(&dev, &plan, 1003, 701, 509, 4).unwrap();
        assert!(e < 1e-4, "{}: {e:e}", plan.label());
    }
}
