//! The FP8 GEMM (`ptxlab matmul --precision fp8`): simulator correctness at
//! odd shapes against the f64 products of the dequantised inputs, with
//! per-tensor and with block scales, planted bugs the check must catch (a
//! layout bug, a scale off by 2, block scales swapped), the refusals
//! (shapes, scales, lengths, flags, scale files), `B`'s block scales read
//! through 16-byte-aligned TMA boxes at every column of tiles, the command
//! on the simulator, and (when a driver is present) the kernels on the GPU.

use ptxlab::runtime::Device;
use ptxlab::workloads::matmul::{
    self, Args, Fp8BlockScaleBufs, Fp8BlockScales, Fp8Kernel, Fp8Plan, Fp8Scales, Fp8Scaling,
    Precision, Variant,
};
use ptxlab_device::fp8::E4m3;
use ptxlab_device::mma::{Bf16, Half16};

/// Per-tensor and block scales at the simulator shapes.
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
        scaling: Fp8Scaling::Tensor,
        scale_a_file: None,
        scale_b_file: None,
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

/// The block-scaled GEMM of random inputs (`seed`) on `dev`, the output
/// poisoned first, checked against the f64 reference: the inputs and the
/// raw BF16 output.
fn block_scaled_on(
    dev: &Device,
    (m, n, k): Shape,
    seed: u64,
) -> (matmul::Fp8BlockInputs, Vec<u16>) {
    let inp = matmul::fp8_block_inputs(m, n, k, seed, None).unwrap();
    let a = dev.upload(&inp.a).unwrap();
    let bt = dev.upload(&inp.bt).unwrap();
    let mut d = dev.alloc_filled(m * n, matmul::POISON_16).unwrap();
    matmul::gemm_fp8_blockscaled(dev, Fp8Kernel::Ws, &a, &bt, &mut d, (m, n, k), &inp.scales)
        .unwrap();
    let got = dev.download(&d).unwrap();
    let e = matmul::fp8_block_error("fp8 block", &got, &inp, m, n, k, true).unwrap();
    assert!(e < matmul::fp8_tol(), "{m}x{n}x{k}: {e:e}");
    (inp, got)
}

/// A GEMM shape `(m, n, k)`.
type Shape = (usize, usize, usize);

/// The GPU (or `None` after a one-line skip), whether it is a Hopper, and
/// the shapes of a GPU test: `odd`, then three large ones, which are left
/// out under compute-sanitizer (`PTXLAB_TEST_SCALE=small`).
fn gpu_and_shapes(odd: &[Shape]) -> Option<(Device, bool, Vec<Shape>)> {
    let dev = ptxlab::runtime::testing::gpu_or_skip()?;
    let hopper = dev.as_gpu().unwrap().info().compute_capability == (9, 0);
    let mut shapes = odd.to_vec();
    if std::env::var("PTXLAB_TEST_SCALE").as_deref() != Ok("small") {
        shapes.extend([(1000, 1016, 1008), (130, 136, 8192), (2048, 2048, 2048)]);
    }
    Some((dev, hopper, shapes))
}

/// A GPU check's result (`what` names the case): on a Hopper GPU its value
/// (an error fails the test); elsewhere `None`, after checking that the
/// kernel was refused for want of `sm_90a`.
fn on_hopper_only<T, E: std::fmt::Display>(hopper: bool, r: Result<T, E>, what: &str) -> Option<T> {
    match r {
        Ok(v) if hopper => Some(v),
        Err(e) if hopper => panic!("{what}: {e}"),
        Ok(_) => panic!("{what}: the FP8 kernel ran on a GPU that is not a Hopper"),
        Err(e) => {
            let e = e.to_string();
            assert!(e.contains("sm_90a"), "{what}: {e}");
            None
        }
    }
}

#[test]
fn gpu_fp8_gemm() {
    let odd = [
        (130, 136, 256),
        (67, 48, 128),
        (67, 45, 128),
        (517, 389, 304),
    ];
    let Some((dev, hopper, shapes)) = gpu_and_shapes(&odd) else {
        return;
    };
    for (m, n, k) in shapes {
        for scales in [None, Some(Fp8Scales { a: 1.5e-3, b: 37.0 })] {
            let r = matmul::check_fp8(&dev, Fp8Kernel::Ws, (m, n, k), scales, 9);
            let what = format!("{m}x{n}x{k} {scales:?}");
            if let Some(e) = on_hopper_only(hopper, r, &what) {
                assert!(e < matmul::fp8_tol(), "{what}: {e:e}");
            }
        }
    }
}

/// Block scaling at the odd shape and another (odd `m` and `n`,
/// a short last k block) on the simulator, the output poisoned first,
/// against the f64 reference; each check is sensitive: the same output
/// judged against one k block's `A` scales doubled, or against `B`'s
/// block scales of two column blocks swapped, fails.
#[test]
fn block_scaled_odd_shapes_pass_and_a_wrong_block_fails() {
    for (m, n, k) in [(130, 136, 256), (67, 45, 400)] {
        let dev = if n % 2 == 1 {
            Device::sim_with(ptxlab_device::sim::SimOptions {
                race_check: false,
                ..Default::default()
            })
        } else {
            Device::sim()
        };
        let (inp, got) = block_scaled_on(&dev, (m, n, k), 31);
        // The per-block weights differ: the reference with one k block's
        // scales of A doubled is far from the kernel's output.
        let kb = k.div_ceil(128);
        let mut off = inp.clone();
        // The k block that weighs most in D: the largest sum over rows of
        // A's scale times B's (first column block's) scale.
        let weight = |c: usize| -> f64 {
            (0..m)
                .map(|i| off.scales.a[i * kb + c] as f64 * off.scales.b[c] as f64)
                .sum()
        };
        let loud = (0..kb)
            .max_by(|&x, &y| weight(x).total_cmp(&weight(y)))
            .unwrap();
        for i in 0..m {
            off.scales.a[i * kb + loud] *= 2.0;
        }
        let e = matmul::fp8_block_error("fp8 block", &got, &off, m, n, k, true).unwrap();
        assert!(
            e > 0.05,
            "{m}x{n}x{k}: A's k block {loud} doubled gives {e:e}"
        );
        // B's first two column blocks' scales swapped (where `n` has two).
        if n > 128 {
            let mut off = inp.clone();
            for c in 0..kb {
                off.scales.b.swap(c, kb + c);
            }
            let e = matmul::fp8_block_error("fp8 block", &got, &off, m, n, k, true).unwrap();
            assert!(
                e > 0.05,
                "{m}x{n}x{k}: B's column blocks swapped give {e:e}"
            );
        }
    }
}

/// `B`'s block scales reach a tile through a box of four column blocks
/// that starts on a 16-byte boundary (TMA refuses any other start, and so
/// does the simulator): a tile in an odd column of tiles reads the box's
/// last two. At four columns of tiles (column blocks 0..8, the last one
/// partly past `n`), each column block of the output, judged alone, passes
/// against the f64 reference; and each fails against a reference that
/// gives the odd tiles the box's first two column blocks (as a read at
/// the box's start would), or that doubles the block's own scales.
#[test]
fn block_scales_of_every_column_of_tiles_come_from_aligned_boxes() {
    let (m, n, k) = (67, 1000, 256);
    let dev = Device::sim();
    let (inp, got) = block_scaled_on(&dev, (m, n, k), 32);
    let got: Vec<f64> = got
        .iter()
        .map(|&v| f32::from_bits((v as u32) << 16) as f64)
        .collect();
    // The normwise relative error of column block `j` of the output
    // against `want`.
    let block_err = |want: &[f64], j: usize| -> f64 {
        let (mut num, mut den) = (0f64, 0f64);
        for i in 0..m {
            for c in 128 * j..(128 * j + 128).min(n) {
                num += (got[i * n + c] - want[i * n + c]).powi(2);
                den += want[i * n + c].powi(2);
            }
        }
        (num / den).sqrt()
    };
    let want = matmul::reference_fp8_block(&inp, m, n, k);
    let kb = k.div_ceil(128);
    // The column block whose scales the odd tiles would read from the
    // box's start.
    let misread = |j: usize| if (j / 2) % 2 == 1 { j - 2 } else { j };
    let mut misread_scales = inp.clone();
    for j in 0..n.div_ceil(128) {
        for c in 0..kb {
            misread_scales.scales.b[j * kb + c] = inp.scales.b[misread(j) * kb + c];
        }
    }
    let misread_want = matmul::reference_fp8_block(&misread_scales, m, n, k);
    for j in 0..n.div_ceil(128) {
        let e = block_err(&want, j);
        assert!(e < matmul::fp8_tol(), "column block {j}: {e:e}");
        let mut doubled = inp.clone();
        for c in 0..kb {
            doubled.scales.b[j * kb + c] *= 2.0;
        }
        let e = block_err(&matmul::reference_fp8_block(&doubled, m, n, k), j);
        assert!(e > 0.4, "column block {j}, its scales doubled: {e:e}");
        if misread(j) != j {
            let e = block_err(&misread_want, j);
            assert!(
                e > 0.05,
                "column block {j} with {}'s scales: {e:e}",
                misread(j)
            );
        }
    }
}

/// The block scales' refusals: a non-finite or non-positive scale (named
/// by operand, block and the rows and k it covers), a wrong shape, a
/// product outside f32's normal range, scales made for another shape.
#[test]
fn block_scales_are_refused_with_the_block_named() {
    let (m, n, k) = (3, 130, 272);
    let ok = Fp8BlockScales::ones(m, n, k);
    assert_eq!(ok.a.len(), 3 * 3);
    assert_eq!(ok.b.len(), 2 * 3);
    ok.check(m, n, k).unwrap();
    for bad in [f32::NAN, f32::INFINITY, 0.0, -1.0, -0.0] {
        let mut s = ok.clone();
        s.a[2 * 3 + 1] = bad;
        let e = s.check(m, n, k).unwrap_err().to_string();
        assert!(
            e.contains("A's block scale [2, 1]")
                && e.contains("row 2")
                && e.contains("k 128..256")
                && e.contains("finite positive"),
            "{bad}: {e}"
        );
        let mut s = ok.clone();
        s.b[3 + 2] = bad;
        let e = s.check(m, n, k).unwrap_err().to_string();
        assert!(
            e.contains("B's block scale [1, 2]")
                && e.contains("rows 128..130 of B^T")
                && e.contains("k 256..272"),
            "{bad}: {e}"
        );
    }
    let mut s = ok.clone();
    s.b.pop();
    let e = s.check(m, n, k).unwrap_err().to_string();
    assert!(
        e.contains("B's block scales have 5 values") && e.contains("2 x 3 = 6"),
        "{e}"
    );
    let mut s = ok.clone();
    s.a[1] = 1e30;
    s.b[3 + 1] = 1e30;
    let e = s.check(m, n, k).unwrap_err().to_string();
    assert!(
        e.contains("A's block scale [0, 1] times B's [1, 1]") && e.contains("normal range"),
        "{e}"
    );
    let mut s = ok.clone();
    s.a[0] = 1e-30;
    s.b[0] = 1e-30;
    assert!(
        s.check(m, n, k)
            .unwrap_err()
            .to_string()
            .contains("normal range")
    );
    // Device scales made for one shape are refused by a plan of another.
    let dev = Device::sim();
    let bufs = Fp8BlockScaleBufs::new(&dev, &ok, (m, n, k)).unwrap();
    let a = dev.upload(&vec![E4m3::ONE; m * k]).unwrap();
    let bt = dev.upload(&vec![E4m3::ONE; n * k]).unwrap();
    let bt2 = dev.upload(&vec![E4m3::ONE; (n - 2) * k]).unwrap();
    assert!(Fp8Plan::new_blockscaled(&dev, Fp8Kernel::Ws, (&a, &bt), (m, n, k), &bufs).is_ok());
    let e = Fp8Plan::new_blockscaled(&dev, Fp8Kernel::Ws, (&a, &bt2), (m, n - 2, k), &bufs)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("made for 3x130x272"), "{e}");
    // k the FP8 GEMM cannot take is refused as for per-tensor scales.
    let e = matmul::fp8_block_inputs(m, n, 100, 1, None)
        .and_then(|inp| {
            let a = dev.upload(&inp.a)?;
            let bt = dev.upload(&inp.bt)?;
            let mut d = dev.alloc_filled(m * n, 0u16)?;
            matmul::gemm_fp8_blockscaled(
                &dev,
                Fp8Kernel::Ws,
                &a,
                &bt,
                &mut d,
                (m, n, 100),
                &inp.scales,
            )
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("k must be a multiple of 16"), "{e}");
}

/// `--scaling block` on the simulator: one checked row whose size names
/// the scaling (a problem of its own in reports); scale files read and
/// checked; the flags' refusals.
#[test]
fn the_block_scaled_command_runs_and_refuses_bad_flags() {
    let mut a = args(Precision::Fp8, (67, 48, 272));
    a.scaling = Fp8Scaling::Block;
    let rows = matmul::cli(&a).unwrap();
    assert_eq!(rows.len(), 1);
    let e = rows[0].rel_err.unwrap();
    assert!(e < matmul::fp8_tol(), "{e:e}");
    assert!(rows[0].size.ends_with("block-scaled"), "{}", rows[0].size);
    assert_eq!(rows[0].variant, Fp8Kernel::Ws.label_for(Fp8Scaling::Block));
    let refused = |a: &Args| matmul::cli(a).unwrap_err().to_string();
    // Scale files: shape (67, 3) and (1, 3).
    let dir = std::env::temp_dir().join(format!("ptxlab-fp8-block-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (pa, pb) = (dir.join("sa.npy"), dir.join("sb.npy"));
    let sa: Vec<f32> = (0..67 * 3).map(|i| 1e-3 * (1 + i % 5) as f32).collect();
    ptxlab::npy::write_2d(&pa, 67, 3, &sa).unwrap();
    ptxlab::npy::write_2d(&pb, 1, 3, &[2e-3f32, 4e-3, 8e-3]).unwrap();
    let mut f = a.clone_args();
    f.scale_a_file = Some(pa.clone());
    f.scale_b_file = Some(pb.clone());
    let rows = matmul::cli(&f).unwrap();
    assert!(rows[0].rel_err.unwrap() < matmul::fp8_tol());
    let mut w = f.clone_args();
    w.scale_b_file = Some(pa.clone());
    let e = refused(&w);
    assert!(
        e.contains("--scale-b-file") && e.contains("(67, 3)") && e.contains("shape (1, 3)"),
        "{e}"
    );
    ptxlab::npy::write_2d(&pb, 1, 3, &[2e-3f32, f32::NAN, 8e-3]).unwrap();
    let e = refused(&f);
    assert!(e.contains("B's block scale [0, 1]"), "{e}");
    let mut w = f.clone_args();
    w.scale_b_file = None;
    assert!(refused(&w).contains("both block-scale files or neither"));
    let mut w = a.clone_args();
    w.scale_a = Some(0.5);
    assert!(refused(&w).contains("do not apply with --scaling block"));
    let mut w = args(Precision::Fp8, (67, 48, 272));
    w.scale_a_file = Some(pa.clone());
    assert!(refused(&w).contains("need --scaling block"));
    let mut w = args(Precision::Bf16, (67, 48, 272));
    w.scaling = Fp8Scaling::Block;
    assert!(refused(&w).contains("--precision fp8"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A copy of the arguments (clap's `Args` is not `Clone`).
trait CloneArgs {
    fn clone_args(&self) -> Args;
}

impl CloneArgs for Args {
    fn clone_args(&self) -> Args {
        Args {
            m: self.m,
            n: self.n,
            k: self.k,
            precision: self.precision,
            variant: self.variant.clone(),
            colsum: self.colsum,
            backend: self.backend,
            reps: self.reps,
            json: self.json,
            scale_a: self.scale_a,
            scale_b: self.scale_b,
            scaling: self.scaling,
            scale_a_file: self.scale_a_file.clone(),
            scale_b_file: self.scale_b_file.clone(),
        }
    }
}

/// The block-scaled kernel on the GPU at odd shapes against the f64
/// reference, the output poisoned first (`check_fp8_block`): one column
/// of tiles, then two (the second tile's `B` scales in the last two
/// places of its 16-byte box) and four (the third and fourth tiles'
/// boxes start at column block 4). Off Hopper the kernel is refused.
#[test]
fn gpu_fp8_block_scaled_gemm() {
    let odd = [
        (130, 136, 256),
        (67, 45, 400),
        (517, 389, 304),
        (67, 1000, 256),
    ];
    let Some((dev, hopper, shapes)) = gpu_and_shapes(&odd) else {
        return;
    };
    for (m, n, k) in shapes {
        let r = matmul::check_fp8_block(&dev, Fp8Kernel::Ws, (m, n, k), 9);
        let what = format!("{m}x{n}x{k}");
        if let Some(e) = on_hopper_only(hopper, r, &what) {
            assert!(e < matmul::fp8_tol(), "{what}: {e:e}");
        }
    }
}

/// The report pairs each FP8 row only with the peer of the same problem:
/// per-tensor scales with `torch._scaled_mm`'s default accumulation, never
/// its faster `use_fast_accum` row (`fast-accum` in its size, as
/// `peers/matmul.py` writes it), and block-scaled rows (`block-scaled`,
/// [`Fp8Scaling::size_words`]) only with the block-scaled peer.
#[test]
fn fp8_rows_meet_only_the_peer_of_their_problem() {
    use ptxlab::report::{Row, comparisons};
    let row = |variant: &str, backend: &str, size: &str, ms: f64| {
        Row::from_json(&serde_json::json!({
            "workload": "matmul", "variant": variant, "backend": backend, "size": size,
            "precision": "fp8", "median_ms": ms, "throughput": 1.0, "unit": "GFLOP/s",
        }))
        .unwrap()
    };
    let block = format!("4096^3{}", Fp8Scaling::Block.size_words());
    let rows = [
        row(Fp8Kernel::Ws.label(), "gpu", "4096^3", 0.12),
        row(
            &Fp8Kernel::Ws.label_for(Fp8Scaling::Block),
            "gpu",
            &block,
            0.13,
        ),
        row(
            "torch._scaled_mm FP8 e4m3 (cuBLAS)",
            "torch",
            "4096^3",
            0.121,
        ),
        row(
            "torch._scaled_mm FP8 e4m3, fast accum (cuBLAS)",
            "torch",
            "4096^3 fast-accum",
            0.10,
        ),
        row(
            "torch._scaled_mm FP8 e4m3, block scales 1x128/128x128 (cuBLAS)",
            "torch",
            "4096^3 block-scaled",
            0.14,
        ),
    ];
    let cs = comparisons(&rows);
    let pair = |best: usize| {
        cs.iter()
            .find(|c| c.best == Some(best))
            .and_then(|c| c.peer)
            .unwrap_or_else(|| panic!("row {best} has no peer"))
    };
    assert_eq!(pair(0), 2, "per-tensor FP8 met another problem's peer");
    assert_eq!(pair(1), 4, "block-scaled FP8 met another problem's peer");
    // The fast-accumulation row is a problem of its own, with no Rust row.
    let fast = cs.iter().find(|c| c.peer == Some(3)).unwrap();
    assert_eq!(fast.best, None);
}
