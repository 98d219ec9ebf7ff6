//! SGEMM ladder and column sum: simulator correctness at odd sizes, hostile
//! inputs, and (when a driver is present) every rung on the GPU.

use ptxlab::runtime::Device;
use ptxlab::workloads::matmul::{self, Colsum, Rung};

#[test]
fn sim_check_passes() {
    matmul::sim_check().unwrap();
}

#[test]
fn every_rung_matches_the_reference_on_the_simulator_37x29x41() {
    let dev = Device::sim();
    for rung in Rung::ALL {
        let e = matmul::check_rung(&dev, rung, 37, 29, 41, 1).unwrap();
        assert!(e < matmul::TOL, "{rung:?}: relative error {e:e}");
    }
}

#[test]
fn rung4_covers_two_block_tiles_and_several_k_tiles() {
    // 130 rows and 133 columns: two block tiles each way, 19 k tiles (odd).
    let e = matmul::check_rung(&Device::sim(), Rung::Vec, 130, 133, 150, 2).unwrap();
    assert!(e < matmul::TOL, "relative error {e:e}");
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

#[test]
fn zero_dimension_is_a_clear_error() {
    let e = matmul::check_shapes(0, 4, 4, 6).unwrap_err().to_string();
    assert!(e.contains("zero dimension") && e.contains("m=0"), "{e}");
    let dev = Device::sim();
    let a = dev.upload(&[1.0f32; 4]).unwrap();
    let b = dev.upload(&[1.0f32; 4]).unwrap();
    let mut c = dev.upload(&[0.0f32; 1]).unwrap();
    let e = matmul::gemm(&dev, Rung::Naive, &a, &b, &mut c, 1, 0, 4)
        .unwrap_err()
        .to_string();
    assert!(e.contains("zero dimension"), "{e}");
}

#[test]
fn buffer_lengths_must_match_the_shapes() {
    let dev = Device::sim();
    let a = dev.upload(&[1.0f32; 6]).unwrap();
    let b = dev.upload(&[1.0f32; 6]).unwrap();
    let mut c = dev.upload(&[0.0f32; 3]).unwrap();
    let e = matmul::gemm(&dev, Rung::Tiled, &a, &b, &mut c, 2, 2, 3)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("C has 3 elements") && e.contains("need 4"),
        "{e}"
    );
}

#[test]
fn unknown_variant_names_the_allowed_ones() {
    let e = "fast".parse::<Rung>().unwrap_err().to_string();
    assert!(e.contains("naive, tiled, regblock, vec"), "{e}");
    let e = "both".parse::<Colsum>().unwrap_err().to_string();
    assert!(e.contains("direct, fused"), "{e}");
}

#[test]
fn gpu_every_rung_and_both_column_sums() {
    if !ptxlab::runtime::driver_present() {
        println!("skipped: no NVIDIA driver");
        return;
    }
    let dev = Device::gpu(0).unwrap();
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
}
