//! Tensor-core GEMM ladder (BF16/FP16 and 3xTF32): simulator correctness at
//! odd shapes, the element-wise 3xTF32 bound against two planted bugs,
//! hostile inputs, and (when a driver is present) every kernel on the GPU
//! against the f64 reference.

use ptxlab::runtime::Device;
use ptxlab::workloads::matmul::{self, Half, TcRung, Tf32x3};

#[test]
fn tensor_sim_check_passes() {
    matmul::sim_check_tensor().unwrap();
}

/// The simulator's shape of the `mma` variant: two block tiles each way
/// with ragged edges, `k` of three 16-deep tiles, the last one short (for
/// `wgmma`, whose `k` must be a multiple of 4: 36).
const PLANT_SHAPE: (usize, usize, usize) = (150, 136, 40);

/// The element-wise 3xTF32 check must catch a kernel that drops one of the
/// two cross terms (`hi_a lo_b`), which leaves an error near plain TF32's
/// in every element. The planted kernel is the real one fed `B` already
/// rounded to TF32: its split then gives `lo_b = 0`, so it computes exactly
/// `lo_a hi_b + hi_a hi_b` (adding zero products is exact), what a kernel
/// without the `hi_a lo_b` product would compute; the check compares it
/// with the f64 product of the original `A` and `B`. With the original `B`
/// the same kernel passes.
#[test]
fn planted_missing_cross_term_fails_the_element_wise_bound() {
    let dev = Device::sim();
    for v in Tf32x3::ALL {
        let (m, n, k) = match v {
            Tf32x3::Mma => PLANT_SHAPE,
            Tf32x3::Wgmma => (PLANT_SHAPE.0, PLANT_SHAPE.1, 36),
        };
        let (ha, hb) = matmul::inputs(m, n, k, 6);
        let hb_hi: Vec<f32> = hb
            .iter()
            .map(|&x| ptxlab_device::mma::tf32_split(x).0)
            .collect();
        assert!(hb_hi.iter().zip(&hb).filter(|(h, b)| h != b).count() > hb.len() / 2);
        let a = dev.upload(&ha).unwrap();
        let b_hi = dev.upload(&hb_hi).unwrap();
        let mut c = dev.alloc_filled(m * n, f32::NAN).unwrap();
        matmul::gemm_tf32x3(&dev, v, &a, &b_hi, &mut c, m, n, k).unwrap();
        let got = dev.download(&c).unwrap();
        let e = matmul::verify_tf32x3("planted", v, &got, &ha, &hb, m, n, k, true)
            .unwrap_err()
            .to_string();
        println!("{v:?}: {e}");
        assert!(
            e.contains("> bound") && e.contains("c u (|A||B|)_ij"),
            "{e}"
        );
        // The same kernel on the original B passes.
        matmul::check_tf32x3(&dev, v, m, n, k, 6).unwrap();
    }
}

/// A bug confined to an edge tile (here: the corner tile, rows 128.. and
/// columns 128.., computed from the TF32 high parts only, as an edge path
/// that skipped the small terms would) dilutes away in a norm-wise error
/// (below the old 1e-4) but fails the element-wise bound, naming an element
/// of that tile.
#[test]
fn planted_wrong_edge_tile_fails_the_element_wise_bound() {
    let dev = Device::sim();
    let (m, n, k) = PLANT_SHAPE;
    let (ha, hb) = matmul::inputs(m, n, k, 6);
    let a = dev.upload(&ha).unwrap();
    let b = dev.upload(&hb).unwrap();
    let mut c = dev.alloc_filled(m * n, f32::NAN).unwrap();
    matmul::gemm_tf32x3(&dev, Tf32x3::Mma, &a, &b, &mut c, m, n, k).unwrap();
    let mut got = dev.download(&c).unwrap();
    let hi = |x: f32| ptxlab_device::mma::tf32_split(x).0 as f64;
    let t = Tf32x3::Mma.tile();
    for i in t..m {
        for j in t..n {
            let s: f64 = (0..k).map(|p| hi(ha[i * k + p]) * hi(hb[p * n + j])).sum();
            got[i * n + j] = s as f32;
        }
    }
    let want = matmul::reference_f64(&ha, &hb, m, n, k);
    let norm = ptxlab::rng::rel_err_norm(&got.iter().map(|&v| v as f64).collect::<Vec<_>>(), &want);
    assert!(
        norm < matmul::TOL,
        "the norm-wise error {norm:e} should hide the bad tile"
    );
    let e = matmul::verify_tf32x3("planted", Tf32x3::Mma, &got, &ha, &hb, m, n, k, true)
        .unwrap_err()
        .to_string();
    println!("norm-wise {norm:.2e}; {e}");
    let at = e
        .split("C[")
        .nth(1)
        .and_then(|r| r.split(']').next())
        .unwrap();
    let (i, j) = at.split_once(", ").unwrap();
    let (i, j): (usize, usize) = (i.parse().unwrap(), j.parse().unwrap());
    assert!(
        i >= t && j >= t,
        "the worst element {at} is outside the planted tile: {e}"
    );
}

/// The bound's constant, as stated in `docs/workloads/matmul.md`.
#[test]
fn tf32x3_bound_constant_is_the_documented_one() {
    let c = |v, k| matmul::tf32x3_c(v, k);
    assert!((c(Tf32x3::Mma, 40) - 1.01 * (132.0 + 3.0)).abs() < 1e-9);
    assert!((c(Tf32x3::Wgmma, 100) - 1.01 * (252.0 + 4.0)).abs() < 1e-9);
    // Below 9 k (mma) and 8 k (wgmma) once k reaches the tile depth.
    for k in [16, 17, 64, 301, 4096, 8192] {
        assert!(c(Tf32x3::Mma, k) < 9.0 * k as f64, "{k}");
    }
    for k in [32, 33, 100, 4096, 8192] {
        assert!(c(Tf32x3::Wgmma, k) < 8.0 * k as f64, "{k}");
    }
}

#[test]
fn unknown_tensor_variants_name_the_allowed_ones() {
    let e = "wmma".parse::<TcRung>().unwrap_err().to_string();
    assert!(
        e.contains("mma, ldsm, pipe") && e.contains("wgmma, ws"),
        "{e}"
    );
    let e = "pipe".parse::<Tf32x3>().unwrap_err().to_string();
    assert!(e.contains("tf32x3") && e.contains("mma, wgmma"), "{e}");
}

#[test]
fn tensor_shapes_and_lengths_are_checked() {
    let dev = Device::sim();
    let a = dev.upload(&[0u16; 12]).unwrap();
    let b = dev.upload(&[0u16; 20]).unwrap();
    let mut c = dev.alloc_filled(15, 0u16).unwrap();
    let e = matmul::gemm_half(&dev, TcRung::Pipe, Half::Bf16, &a, &b, &mut c, 3, 5, 5)
        .unwrap_err()
        .to_string();
    assert!(e.contains("A has 12 elements") && e.contains("15"), "{e}");
    let e = matmul::gemm_half(&dev, TcRung::Mma, Half::F16, &a, &b, &mut c, 3, 0, 4)
        .unwrap_err()
        .to_string();
    assert!(e.contains("zero dimension"), "{e}");
    // The TMA rungs name the alignment they need.
    let a = dev.upload(&[0u16; 3 * 12]).unwrap();
    let b = dev.upload(&[0u16; 12 * 5]).unwrap();
    let e = matmul::gemm_half(&dev, TcRung::Wgmma, Half::Bf16, &a, &b, &mut c, 3, 5, 12)
        .unwrap_err()
        .to_string();
    assert!(e.contains("k (12) and n (5) must be multiples of 8"), "{e}");
}

#[test]
fn gpu_every_tensor_kernel() {
    let Some(dev) = ptxlab::runtime::testing::gpu_or_skip() else {
        return;
    };
    let hopper = dev.as_gpu().unwrap().info().compute_capability == (9, 0);
    // Under compute-sanitizer (PTXLAB_TEST_SCALE=small) the large shapes
    // are left out.
    let small = std::env::var("PTXLAB_TEST_SCALE").as_deref() == Ok("small");
    let mut shapes = vec![
        (37, 29, 41),
        (517, 389, 301),
        (129, 264, 200),
        (256, 256, 256),
    ];
    if !small {
        shapes.extend([(1000, 1016, 1008), (130, 136, 4096), (1000, 264, 1000)]);
    }
    for (m, n, k) in shapes {
        for half in Half::ALL {
            for rung in TcRung::ALL {
                let r = matmul::check_half(&dev, rung, half, m, n, k, 9);
                if rung.uses_tma() && !(hopper && n % 8 == 0 && k % 8 == 0) {
                    // Refused with the reason (rows not 16-byte aligned, or
                    // not an sm_90 GPU), never a wrong answer.
                    let e = r.unwrap_err().to_string();
                    assert!(e.contains("multiple") || e.contains("sm_90a"), "{e}");
                    continue;
                }
                let e = r.unwrap();
                assert!(e < half.tol(), "{half:?} {rung:?} {m}x{n}x{k}: {e:e}");
            }
        }
        for v in Tf32x3::ALL {
            let r = matmul::check_tf32x3(&dev, v, m, n, k, 9);
            if v.uses_tma() && !(hopper && k % 4 == 0) {
                let e = r.unwrap_err().to_string();
                assert!(e.contains("multiple") || e.contains("sm_90a"), "{e}");
                continue;
            }
            // Element-wise against the 3xTF32 bound inside check_tf32x3,
            // and by norm against the SGEMM rungs' tolerance.
            let e = r.unwrap();
            assert!(e < matmul::TOL, "{v:?} {m}x{n}x{k}: {e:e}");
        }
    }
}
