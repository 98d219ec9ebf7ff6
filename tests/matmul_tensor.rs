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
    assert!(e.contains("mma, ldsm, pipe"), "{e}");
    let e = "pipe".parse::<Tf32x3>().unwrap_err().to_string();
    assert!(e.contains("tf32x3") && e.contains("mma"), "{e}");
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
}

#[test]
fn gpu_every_tensor_kernel() {
    if !ptxlab::runtime::driver_present() {
        println!("skipped: no NVIDIA driver");
        return;
    }
    let dev = Device::gpu(0).unwrap();
    for (m, n, k) in [
        (37, 29, 41),
        (517, 389, 301),
        (256, 256, 256),
        (1000, 1016, 1008),
        (130, 136, 4096),
    ] {
        for half in Half::ALL {
            for rung in TcRung::ALL {
                let e = matmul::check_half(&dev, rung, half, m, n, k, 9).unwrap();
                assert!(e < half.tol(), "{half:?} {rung:?} {m}x{n}x{k}: {e:e}");
            }
        }
        for v in Tf32x3::ALL {
            let e = matmul::check_tf32x3(&dev, v, m, n, k, 9).unwrap();
            assert!(e < matmul::TOL, "{v:?} {m}x{n}x{k}: {e:e}");
        }
    }
}
