//! Tensor-core GEMM ladder (BF16/FP16 and 3xTF32): simulator correctness at
//! odd shapes, the element-wise 3xTF32 bound against two planted bugs,
//! hostile inputs, and (when a driver is present) every kernel on the GPU
//! against the f64 reference.

use ptxlab::runtime::Device;
use ptxlab::workloads::matmul::{
    self, Half, HalfPlan, Precision, Staging, TcRung, Tf32x3, Variant,
};

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

/// The bound's constant, as stated in `docs/book/src/workloads/matmul.md`.
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
fn variants_of_another_ladder_name_the_allowed_ones() {
    let e = Variant::named("vec").pick::<TcRung>(Precision::Bf16);
    let e = e.unwrap_err().to_string();
    assert!(
        e.contains("--precision bf16") && e.contains("mma, ldsm, pipe") && e.contains("wgmma, ws"),
        "{e}"
    );
    let e = Variant::named("pipe").pick::<Tf32x3>(Precision::Tf32x3);
    let e = e.unwrap_err().to_string();
    assert!(e.contains("tf32x3") && e.contains("mma, wgmma"), "{e}");
    let both = Variant::named("wgmma");
    assert_eq!(
        both.pick::<TcRung>(Precision::F16).unwrap(),
        vec![TcRung::Wgmma]
    );
    assert_eq!(
        both.pick::<Tf32x3>(Precision::Tf32x3).unwrap(),
        vec![Tf32x3::Wgmma]
    );
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
    // The TMA rungs stage what TMA cannot read in place; asked to read such
    // an operand in place, they name the alignment they need.
    let (ha, hb) = matmul::half_inputs(Half::Bf16, 3, 5, 12, 4);
    let (a, b) = (dev.upload(&ha).unwrap(), dev.upload(&hb).unwrap());
    matmul::gemm_half(&dev, TcRung::Wgmma, Half::Bf16, &a, &b, &mut c, 3, 5, 12).unwrap();
    let in_place = Staging { a: false, b: true };
    let e = HalfPlan::with_staging(&dev, TcRung::Ws, Half::Bf16, (&a, &b), (3, 5, 12), in_place);
    let e = e.err().expect("k = 12 cannot be read in place").to_string();
    assert!(e.contains("A (k = 12)") && e.contains("16-byte"), "{e}");
}

/// The TMA rungs at ragged shapes under every staging choice that applies,
/// on the simulator: inputs random, the output poisoned, the result against
/// the f64 product of the rounded inputs. `sim_check_tensor` covers the
/// automatic choice; this covers each operand read in place with rows not
/// 128-byte aligned (`k`, `n` multiples of 8, not of 64) and staged when it
/// need not be, so each path meets ragged tiles on every edge.
#[test]
fn tma_rungs_at_ragged_shapes_under_every_staging() {
    use ptxlab_device::sim::SimOptions;
    // With 16-bit outputs and odd `n` two blocks write one 4-byte word
    // (byte-granular on a GPU); the detector tracks words (see
    // `sim_check_tensor`), so odd `n` runs with it off.
    let racy = Device::sim_with(SimOptions {
        race_check: false,
        ..SimOptions::default()
    });
    let strict = Device::sim();
    for rung in [TcRung::Wgmma, TcRung::Ws] {
        let t = rung.tile();
        for (m, n, kk) in [(t + 3, 72, 136), (t + 5, t + 5, 40), (t + 1, 8, 129)] {
            let dev = if n % 2 == 1 { &racy } else { &strict };
            let (ha, hb) = matmul::half_inputs(Half::Bf16, m, n, kk, 11);
            let want = matmul::reference_f64(
                &matmul::widen(Half::Bf16, &ha),
                &matmul::widen(Half::Bf16, &hb),
                m,
                n,
                kk,
            );
            let (a, b) = (dev.upload(&ha).unwrap(), dev.upload(&hb).unwrap());
            for (sa, sb) in [(false, false), (false, true), (true, false), (true, true)] {
                if (!sa && kk % 8 != 0) || (!sb && n % 8 != 0) {
                    continue;
                }
                let staging = Staging { a: sa, b: sb };
                let mut c = dev.alloc_filled(m * n, matmul::POISON_16).unwrap();
                let mut plan =
                    HalfPlan::with_staging(dev, rung, Half::Bf16, (&a, &b), (m, n, kk), staging)
                        .unwrap();
                // Both staged: run twice (the copies and their maps are
                // made again at each run).
                for _ in 0..if sa && sb { 2 } else { 1 } {
                    dev.write(&mut c, &vec![matmul::POISON_16; m * n]).unwrap();
                    plan.run(dev, &mut c).unwrap();
                    let got: Vec<f64> = matmul::widen(Half::Bf16, &dev.download(&c).unwrap())
                        .into_iter()
                        .map(f64::from)
                        .collect();
                    let e = ptxlab::rng::rel_err_norm(&got, &want);
                    assert!(
                        e < Half::Bf16.tol(),
                        "{rung:?} {m}x{n}x{kk} {staging:?}: {e:e}"
                    );
                }
            }
        }
    }
}

#[test]
fn the_staging_copy_pads_rows_with_zeros() {
    let dev = Device::sim();
    for (rows, cols, ld) in [(5usize, 13usize, 64usize), (3, 16, 64), (2, 1, 8)] {
        let src: Vec<u16> = (0..rows * cols).map(|i| 1 + i as u16).collect();
        let s = dev.upload(&src).unwrap();
        let mut d = dev.alloc_filled(rows * ld, 0xffffu16).unwrap();
        let cfg = ptxlab::LaunchConfig::for_2d(ld / 8, rows, 32, 1).unwrap();
        let (r, c, l) = (rows as u32, cols as u32, ld as u32);
        ptxlab::launch!(&dev, cfg, tensor::matmul_pitch16(&s, &mut d, r, c, l)).unwrap();
        let got = dev.download(&d).unwrap();
        for r in 0..rows {
            for c in 0..ld {
                let want = if c < cols { src[r * cols + c] } else { 0 };
                assert_eq!(got[r * ld + c], want, "{rows}x{cols} -> {ld}: ({r}, {c})");
            }
        }
    }
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
                if rung.uses_tma() && !hopper {
                    // Refused with the reason (not an sm_90 GPU), never a
                    // wrong answer.
                    let e = r.unwrap_err().to_string();
                    assert!(e.contains("sm_90a"), "{e}");
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
