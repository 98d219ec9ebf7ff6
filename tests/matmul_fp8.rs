//! The FP8 GEMM (`ptxlab matmul --precision fp8`): simulator correctness at
//! odd shapes against the f64 products of the dequantised inputs, a planted
//! layout bug the check must catch, the refusals (shapes, scales, lengths,
//! flags), the command on the simulator, and (when a driver is present) the
//! kernel on the GPU.

use ptxlab::runtime::Device;
use ptxlab::workloads::matmul::{self, Args, Fp8Kernel, Fp8Plan, Fp8Scales, Precision, Variant};
use ptxlab_device::fp8::E4m3;
use ptxlab_device::mma::{Bf16, Half16};

#[test]
fn fp8_sim_check_passes() {
    matmul::sim_check_fp8().unwrap();
}

/// The shapes the issue names run on the simulator (the race detector on:
/// `n` is even) and pass against the f64 reference, the output poisoned
/// first; each check is sensitive: the same output judged against scales
/// off by a factor of 2 fails.
#[test]
fn odd_shapes_pass_and_a_wrong_scale_fails() {
    let dev = Device::sim();
    for (m, n, k) in [(130, 136, 256), (67, 48, 128)] {
        let inp = matmul::fp8_inputs(m, n, k, 21, (None, None)).unwrap();
        let a = dev.upload(&inp.a).unwrap();
        let bt = dev.upload(&inp.bt).unwrap();
        let mut d = dev.alloc_filled(m * n, matmul::POISON_16).unwrap();
        matmul::gemm_fp8(&dev, Fp8Kernel::Ws, &a, &bt, &mut d, (m, n, k), inp.scales).unwrap();
        let got = dev.download(&d).unwrap();
        let e = matmul::fp8_error("fp8", &got, &inp, m, n, k, true).unwrap();
        assert!(e < matmul::fp8_tol(), "{m}x{n}x{k}: {e:e}");
        let mut off = inp.clone();
        off.scales.b *= 2.0;
        let e = matmul::fp8_error("fp8", &got, &off, m, n, k, true).unwrap();
        assert!(e > 0.4, "{m}x{n}x{k}: a scale off by 2 gives {e:e}");
    }
}

/// `B` passed row-major (`k x n`) where `B^T` (`n x k`) belongs has the
/// right length, so only the check can catch it; it must.
#[test]
fn b_passed_untransposed_is_caught() {
    let dev = Device::sim();
    let (m, n, k) = (67, 48, 128);
    let inp = matmul::fp8_inputs(m, n, k, 22, (None, None)).unwrap();
    // Undo the transpose: B row-major, k x n.
    let b: Vec<E4m3> = (0..k * n).map(|i| inp.bt[(i % n) * k + i / n]).collect();
    assert_eq!(matmul::transpose_fp8(&b, k, n).unwrap(), inp.bt);
    let a = dev.upload(&inp.a).unwrap();
    let wrong = dev.upload(&b).unwrap();
    let mut d = dev.alloc_filled(m * n, matmul::POISON_16).unwrap();
    matmul::gemm_fp8(
        &dev,
        Fp8Kernel::Ws,
        &a,
        &wrong,
        &mut d,
        (m, n, k),
        inp.scales,
    )
    .unwrap();
    let got = dev.download(&d).unwrap();
    let e = matmul::fp8_error("fp8", &got, &inp, m, n, k, true).unwrap();
    assert!(e > 0.5, "an untransposed B gives {e:e}");
}

/// An output element left unwritten (the poison) is named by the check.
#[test]
fn an_unwritten_element_is_named() {
    let (m, n, k) = (3, 5, 16);
    let inp = matmul::fp8_inputs(m, n, k, 23, (None, None)).unwrap();
    let want = matmul::reference_fp8(&inp, m, n, k);
    let mut got: Vec<u16> = want.iter().map(|v| Bf16::from_f32(*v as f32)).collect();
    assert!(matmul::fp8_error("fp8", &got, &inp, m, n, k, true).unwrap() < 4e-3);
    got[2 * n + 4] = matmul::POISON_16;
    let e = matmul::fp8_error("fp8", &got, &inp, m, n, k, true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("D[2, 4]") && e.contains("never written"), "{e}");
}

#[test]
fn quantisation_uses_the_whole_e4m3_range_and_saturates() {
    let x = [0.5f32, -2.0, 1.0, 0.0];
    let s = matmul::e4m3_scale(&x);
    assert_eq!(s, 2.0 / 448.0);
    let q = matmul::quantize_e4m3(&x, s);
    assert_eq!(q[1], E4m3::MIN);
    assert_eq!(q[0].to_f32(), 112.0);
    assert_eq!(matmul::e4m3_scale(&[0.0, -0.0]), 1.0);
    // A scale too small for the data saturates at 448 (cvt's rule).
    let q = matmul::quantize_e4m3(&x, 1e-3);
    assert_eq!(q[1], E4m3::MIN);
    assert_eq!(q[2], E4m3::MAX);
}

#[test]
fn shapes_scales_and_lengths_are_refused_with_the_reason() {
    let dev = Device::sim();
    let inp = matmul::fp8_inputs(3, 5, 48, 24, (None, None)).unwrap();
    let a = dev.upload(&inp.a).unwrap();
    let bt = dev.upload(&inp.bt).unwrap();
    let plan = |shape, scales| {
        Fp8Plan::new(&dev, Fp8Kernel::Ws, (&a, &bt), shape, scales)
            .err()
            .map(|e| e.to_string())
    };
    let ok = Fp8Scales { a: 0.5, b: 2.0 };
    assert_eq!(plan((3, 5, 48), ok), None);
    // k = 24: lengths 72 and 120 would fit, but rows of 24 bytes are not
    // 16-byte aligned.
    let a24 = dev.upload(&[E4m3::ONE; 72]).unwrap();
    let b24 = dev.upload(&[E4m3::ONE; 120]).unwrap();
    let e = Fp8Plan::new(&dev, Fp8Kernel::Ws, (&a24, &b24), (3, 5, 24), ok)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("k must be a multiple of 16") && e.contains("to 32"),
        "{e}"
    );
    let e = plan((3, 0, 48), ok).unwrap();
    assert!(e.contains("zero dimension"), "{e}");
    let e = plan((3, 4, 48), ok).unwrap();
    assert!(
        e.contains("B^T has 240 elements") && e.contains("192"),
        "{e}"
    );
    for bad in [f32::NAN, f32::INFINITY, 0.0, -1.0, -0.0] {
        let e = plan((3, 5, 48), Fp8Scales { a: bad, b: 1.0 }).unwrap();
        assert!(
            e.contains("scale_a") && e.contains("finite positive"),
            "{bad}: {e}"
        );
        let e = plan((3, 5, 48), Fp8Scales { a: 1.0, b: bad }).unwrap();
        assert!(e.contains("scale_b"), "{bad}: {e}");
    }
    let e = plan((3, 5, 48), Fp8Scales { a: 1e30, b: 1e30 }).unwrap();
    assert!(
        e.contains("scale_a * scale_b") && e.contains("normal range"),
        "{e}"
    );
    let e = plan((3, 5, 48), Fp8Scales { a: 1e-30, b: 1e-30 }).unwrap();
    assert!(e.contains("normal range"), "{e}");
    // The output's length.
    let p = Fp8Plan::new(&dev, Fp8Kernel::Ws, (&a, &bt), (3, 5, 48), ok).unwrap();
    let mut d = dev.alloc_filled(14, 0u16).unwrap();
    let e = p.run(&dev, &mut d).unwrap_err().to_string();
    assert!(e.contains("D has 14 elements") && e.contains("15"), "{e}");
}

fn args(precision: Precision, (m, n, k): (usize, usize, usize)) -> Args {
    Args {
        m,
        n,
        k,
        precision,
        variant: Variant::ALL,
        colsum: None,
        backend: ptxlab::Backend::Sim,
        reps: 1,
        json: false,
        scale_a: None,
        scale_b: None,
    }
}

/// `ptxlab matmul --precision fp8 --backend sim` end to end: one checked
/// row; and the command's refusals before any device work.
#[test]
fn the_command_runs_on_the_simulator_and_refuses_bad_flags() {
    let rows = matmul::cli(&args(Precision::Fp8, (67, 48, 128))).unwrap();
    assert_eq!(rows.len(), 1);
    let e = rows[0].rel_err.unwrap();
    assert!(e < matmul::fp8_tol(), "{e:e}");
    assert_eq!(rows[0].variant, Fp8Kernel::Ws.label());
    let refused = |a: Args| matmul::cli(&a).unwrap_err().to_string();
    let e = refused(args(Precision::Fp8, (67, 48, 100)));
    assert!(e.contains("--k") && e.contains("multiple of 16"), "{e}");
    let mut a = args(Precision::Fp8, (67, 48, 128));
    a.scale_b = Some(-2.0);
    let e = refused(a);
    assert!(
        e.contains("--scale-b") && e.contains("finite positive"),
        "{e}"
    );
    let mut a = args(Precision::Bf16, (67, 48, 128));
    a.scale_a = Some(0.5);
    let e = refused(a);
    assert!(e.contains("--precision fp8"), "{e}");
    let mut a = args(Precision::Fp8, (67, 48, 128));
    a.variant = Variant::named("pipe");
    let e = refused(a);
    assert!(
        e.contains("not a rung of --precision fp8") && e.contains("ws"),
        "{e}"
    );
    let mut a = args(Precision::Fp8, (67, 48, 128));
    a.backend = ptxlab::Backend::Cpu;
    let e = refused(a);
    assert!(e.contains("no FP8 kernels"), "{e}");
}

#[test]
fn gpu_fp8_gemm() {
    let Some(dev) = ptxlab::runtime::testing::gpu_or_skip() else {
        return;
    };
    let hopper = dev.as_gpu().unwrap().info().compute_capability == (9, 0);
    // Under compute-sanitizer (PTXLAB_TEST_SCALE=small) the large shapes
    // are left out.
    let small = std::env::var("PTXLAB_TEST_SCALE").as_deref() == Ok("small");
    let mut shapes = vec![
        (130, 136, 256),
        (67, 48, 128),
        (67, 45, 128),
        (517, 389, 304),
    ];
    if !small {
        shapes.extend([(1000, 1016, 1008), (130, 136, 8192), (2048, 2048, 2048)]);
    }
    for (m, n, k) in shapes {
        for scales in [None, Some(Fp8Scales { a: 1.5e-3, b: 37.0 })] {
            let r = matmul::check_fp8(&dev, Fp8Kernel::Ws, (m, n, k), scales, 9);
            if !hopper {
                let e = r.unwrap_err().to_string();
                assert!(e.contains("sm_90a"), "{e}");
                continue;
            }
            let e = r.unwrap();
            assert!(e < matmul::fp8_tol(), "{m}x{n}x{k} {scales:?}: {e:e}");
        }
    }
}
