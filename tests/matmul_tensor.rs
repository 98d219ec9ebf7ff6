//! Tensor-core GEMM ladder (BF16/FP16 and 3xTF32): simulator correctness at
//! odd shapes, hostile inputs, and (when a driver is present) every kernel
//! on the GPU against the f64 reference.

use ptxlab::runtime::Device;
use ptxlab::workloads::matmul::{self, Half, TcRung, Tf32x3};

#[test]
fn tensor_sim_check_passes() {
    matmul::sim_check_tensor().unwrap();
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
            let e = r.unwrap();
            assert!(e < matmul::TOL, "{v:?} {m}x{n}x{k}: {e:e}");
        }
    }
}
