//! Attention ladder: every rung on the simulator at odd shapes against the
//! f64 reference (the workload's `sim_check`, and the edges it leaves out:
//! one query, one key, more queries than keys under the causal mask, many
//! key tiles), the checker catching a wrong result, hostile inputs, the
//! PTX (entries, directives, instructions; `ptxas` when it is found: no
//! spills, register caps honoured, `setmaxnreg` kept), and (when a driver is
//! present) every rung on the GPU against the f64 reference.

use ptxlab::runtime::Device;
use ptxlab::runtime::testing::gpu_or_skip;
use ptxlab::workloads::attention::{
    self, Errors, Inputs, POISON_16, Plan, Precision, Rung, Shape, check_inputs, check_rung,
};

// One kernel's text in a PTX module, shared with tests/ptx.rs and tests/cluster.rs.
mod common {
    pub mod ptx_entry;
}
use common::ptx_entry::entry;

#[test]
fn sim_every_rung_at_odd_shapes_causal_and_not() {
    // S = 77 and 133 (no tile divides them), Sq < Skv and Sq > Skv, D = 64
    // and 128, both precisions, causal and not, full f64 reference.
    attention::sim_check().unwrap();
}

#[test]
fn sim_one_query_one_key_and_more_queries_than_keys() {
    let dev = Device::sim();
    // (batch, heads, sq, skv, d, causal)
    let cases = [
        (1, 1, 1, 1, 64, false),
        (1, 1, 1, 1, 128, true),
        (1, 2, 300, 77, 64, true),
    ];
    for (b, h, sq, skv, d, causal) in cases {
        let shape = Shape::new(b, h, sq, skv, d, causal, None).unwrap();
        for rung in Rung::ALL {
            if rung.refuses(&shape).is_none() {
                check_rung(&dev, rung, Precision::Bf16, &shape, 7).unwrap();
            }
        }
    }
}

#[test]
fn sim_many_key_tiles_reuse_every_stage() {
    // 600 keys: 5 tiles of 128 (the Hopper rungs' 2 or 3 stages are each
    // refilled), 10 of 64 (rung 2); a non-default scale.
    let dev = Device::sim();
    // At D = 256 (rungs 4 and 5, 80-key tiles): 8 tiles through 2 stages.
    for (d, prec, causal) in [
        (128, Precision::F16, false),
        (64, Precision::Bf16, true),
        (256, Precision::Bf16, true),
    ] {
        let shape = Shape::new(1, 1, 150, 600, d, causal, Some(0.2)).unwrap();
        for rung in [Rung::Fa2, Rung::Wgmma, Rung::Ws, Rung::WsSkip] {
            if rung.refuses(&shape).is_none() {
                check_rung(&dev, rung, prec, &shape, 3).unwrap();
            }
        }
    }
}

#[test]
fn sim_a_window_skips_the_tiles_outside_its_band() {
    // 300 queries over 420 keys with windows of 70 and 100: most key tiles
    // of a query tile lie outside the band (rung 2 and the backward pass
    // skip them), the band's edges cross tiles, and the last query tile is
    // partial; forward and backward against the f64 reference.
    let dev = Device::sim();
    for (window, causal, prec) in [(70, false, Precision::Bf16), (100, true, Precision::F16)] {
        let shape = Shape::new(1, 2, 300, 420, 64, causal, None)
            .unwrap()
            .with_window(window)
            .unwrap();
        for rung in [Rung::Split, Rung::Fa2] {
            check_rung(&dev, rung, prec, &shape, 5).unwrap();
        }
        attention::check_backward(&dev, prec, &shape, 5).unwrap();
    }
}

#[test]
fn the_checker_fails_a_wrong_or_unwritten_output() {
    let dev = Device::sim();
    let shape = Shape::new(1, 1, 40, 50, 64, false, None).unwrap();
    let prec = Precision::Bf16;
    let [q, k, v] = check_inputs(&shape, prec, 1, 2.0).unwrap();
    let x = Inputs::upload(&dev, &shape, &q, &k, &v).unwrap();
    let refr = attention::reference(
        &shape,
        &attention::widen(prec, &q),
        &attention::widen(prec, &k),
        &attention::widen(prec, &v),
        attention::all_rows(&shape),
    );
    let mut o = dev.alloc_filled(shape.q_len(), POISON_16).unwrap();
    let mut plan = Plan::new(&dev, Rung::Fa2, prec, shape, &x).unwrap();
    plan.run(&dev, &mut o, None).unwrap();
    let good = dev.download(&o).unwrap();
    let e: Errors = attention::errors(&shape, prec, &refr, &good, None).unwrap();
    attention::verify("good", Rung::Fa2, prec, refr.max_score, &e).unwrap();
    // One output off by 10%: the max measure catches it.
    let mut bad = good.clone();
    bad[77] = prec.round(prec.value(bad[77]) * 1.1 + 0.2);
    let e = attention::errors(&shape, prec, &refr, &bad, None).unwrap();
    assert!(attention::verify("bad", Rung::Fa2, prec, refr.max_score, &e).is_err());
    // An element never written is named.
    let mut hole = good;
    hole[5 * 64 + 3] = POISON_16;
    let why = attention::errors(&shape, prec, &refr, &hole, None).unwrap_err();
    assert!(why.contains("row 5, col 3"), "{why}");
}

#[test]
fn sim_grouped_heads_read_the_right_kv_head() {
    // Four query heads on two K/V heads (group 2) and on one (multi-query),
    // batch 2, odd lengths: every rung against the f64 reference (outputs
    // poisoned first, so a head never written fails); then the grouped
    // output compared with a reference whose query head h reads K/V head
    // h % H_kv instead of h / group: the check must fail, so it tells the
    // two mappings apart.
    let dev = Device::sim();
    let prec = Precision::Bf16;
    for (hkv, d, causal) in [(2, 64, true), (1, 128, false)] {
        let shape = Shape::new(2, 4, 45, 71, d, causal, None)
            .unwrap()
            .with_kv_heads(hkv)
            .unwrap();
        for rung in Rung::ALL {
            if rung.refuses(&shape).is_none() {
                check_rung(&dev, rung, prec, &shape, 9).unwrap();
            }
        }
    }
    let shape = Shape::new(1, 4, 45, 71, 64, false, None)
        .unwrap()
        .with_kv_heads(2)
        .unwrap();
    let [q, k, v] = check_inputs(&shape, prec, 2, 2.0).unwrap();
    let x = Inputs::upload(&dev, &shape, &q, &k, &v).unwrap();
    let mut o = dev.alloc_filled(shape.q_len(), POISON_16).unwrap();
    Plan::new(&dev, Rung::Fa2, prec, shape, &x)
        .unwrap()
        .run(&dev, &mut o, None)
        .unwrap();
    let got = dev.download(&o).unwrap();
    let plain = Shape {
        kv_heads: 4,
        ..shape
    };
    let per = shape.skv * shape.d;
    let modulo = |t: &[u16]| -> Vec<f32> {
        let w = attention::widen(prec, t);
        (0..4)
            .flat_map(|h| w[(h % 2) * per..(h % 2 + 1) * per].to_vec())
            .collect()
    };
    let wrong = attention::reference(
        &plain,
        &attention::widen(prec, &q),
        &modulo(&k),
        &modulo(&v),
        attention::all_rows(&plain),
    );
    let e = attention::errors(&plain, prec, &wrong, &got, None).unwrap();
    assert!(
        attention::verify("modulo", Rung::Fa2, prec, wrong.max_score, &e).is_err(),
        "{e:?}"
    );
    // K of the ungrouped length is refused for the grouped shape.
    let e = Inputs::upload(&dev, &shape, &q, &q, &v)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("K") && e.contains("the shape needs"), "{e}");
}

#[test]
fn rungs_refuse_shapes_they_cannot_take() {
    let dev = Device::sim();
    let shape = Shape::new(1, 1, 10, 10, 96, false, None).unwrap();
    let [q, k, v] = check_inputs(&shape, Precision::Bf16, 0, 1.0).unwrap();
    let x = Inputs::upload(&dev, &shape, &q, &k, &v).unwrap();
    for rung in [Rung::Fa2, Rung::Wgmma, Rung::Ws] {
        let e = Plan::new(&dev, rung, Precision::Bf16, shape, &x)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("not for this shape") && e.contains("and 128"),
            "{e}"
        );
    }
    // D = 256: rungs 4 and 5 only (and rung 1); the others name them.
    let wide = Shape::new(1, 1, 10, 10, 256, false, None).unwrap();
    for rung in [Rung::Fa2, Rung::Wgmma] {
        let e = rung.refuses(&wide).unwrap();
        assert!(e.contains("D = 256") && e.contains("rungs 4 and 5"), "{e}");
    }
    assert_eq!(Rung::Ws.refuses(&wide), None);
    // Rung 1 takes D = 96.
    check_rung(&dev, Rung::Split, Precision::Bf16, &shape, 0).unwrap();
    let e = Plan::new(
        &dev,
        Rung::WsSkip,
        Precision::Bf16,
        Shape { d: 64, ..shape },
        &x,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("without --causal"), "{e}");
}

#[test]
fn hostile_shapes_and_buffers_are_refused_with_the_allowed_range() {
    let err = |r: ptxlab::Result<Shape>| r.expect_err("must be refused").to_string();
    for (i, flag) in ["--batch", "--heads", "--seq", "--seq-kv", "--dim"]
        .iter()
        .enumerate()
    {
        let mut s = [1usize, 1, 8, 8, 64];
        s[i] = 0;
        let e = err(Shape::new(s[0], s[1], s[2], s[3], s[4], false, None));
        assert!(e.contains(flag) && e.contains("at least 1"), "{e}");
    }
    let e = err(Shape::new(1, 1, 8, 8, 4096, false, None));
    assert!(e.contains("--dim") && e.contains("64 and 128"), "{e}");
    let e = err(Shape::new(300, 300, 8, 8, 64, false, None));
    assert!(e.contains("90000 heads") && e.contains("65535"), "{e}");
    let e = err(Shape::new(1, 1, 1 << 30, 8, 64, false, None));
    assert!(e.contains("elements per tensor"), "{e}");
    for bad in [0.0, -0.5, f64::NAN, f64::INFINITY, 1e-60, 1e60] {
        let e = err(Shape::new(1, 1, 8, 8, 64, false, Some(bad)));
        assert!(
            e.contains("--scale") && e.contains("positive finite"),
            "{bad}: {e}"
        );
    }
    // Buffers that do not match the shape, and non-finite or overflowing
    // values, are named.
    let dev = Device::sim();
    let shape = Shape::new(1, 2, 9, 11, 64, true, None).unwrap();
    let [q, k, v] = check_inputs(&shape, Precision::F16, 4, 1.0).unwrap();
    let e = Inputs::upload(&dev, &shape, &q, &k[1..], &v)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("K") && e.contains(&format!("{} elements", k.len() - 1)),
        "{e}"
    );
    let x = Inputs::upload(&dev, &shape, &q, &k, &v).unwrap();
    let mut plan = Plan::new(&dev, Rung::Fa2, Precision::F16, shape, &x).unwrap();
    let mut short = dev.alloc_filled(shape.q_len() - 1, POISON_16).unwrap();
    let e = plan.run(&dev, &mut short, None).unwrap_err().to_string();
    assert!(e.contains("O") && e.contains("the shape needs"), "{e}");
    let mut o = dev.alloc_filled(shape.q_len(), POISON_16).unwrap();
    let mut lse = dev.alloc_filled(3, 0f32).unwrap();
    let e = plan
        .run(&dev, &mut o, Some(&mut lse))
        .unwrap_err()
        .to_string();
    assert!(e.contains("lse") && e.contains("3 elements"), "{e}");
    let e = attention::round_checked(Precision::Bf16, "Q", &[0.5, f32::INFINITY])
        .unwrap_err()
        .to_string();
    assert!(e.contains("Q") && e.contains("element 1"), "{e}");
}

/// One line of a GPU test's output: the rung, the problem and its errors.
fn print_errors(rung: Rung, prec: Precision, shape: &Shape, e: &Errors) {
    println!(
        "{} {} {}: rel {:.2e} max {:.2e} lse {:.1e}",
        rung.label(),
        prec.name(),
        shape.label(),
        e.rel,
        e.max,
        e.lse
    );
}

/// Every rung that takes `shape` (the Hopper ones only on a Hopper GPU)
/// in both precisions against the f64 reference, one line of errors each.
fn every_rung_on_the_gpu(dev: &Device, hopper: bool, shape: &Shape, seed: u64) {
    for prec in Precision::ALL {
        for rung in Rung::ALL {
            if rung.refuses(shape).is_some() || (rung.hopper() && !hopper) {
                continue;
            }
            let e = check_rung(dev, rung, prec, shape, seed).unwrap_or_else(|e| {
                panic!("{} {} {}: {e}", rung.label(), prec.name(), shape.label())
            });
            print_errors(rung, prec, shape, &e);
        }
    }
}

#[test]
fn gpu_every_rung() {
    let Some(dev) = gpu_or_skip() else { return };
    let hopper = dev.as_gpu().unwrap().info().compute_capability == (9, 0);
    // Under compute-sanitizer (PTXLAB_TEST_SCALE=small) the large shapes
    // are left out.
    let small = std::env::var("PTXLAB_TEST_SCALE").as_deref() == Ok("small");
    let mut shapes = vec![(1, 2, 77, 133), (2, 1, 133, 77), (1, 1, 1, 1)];
    if !small {
        shapes.extend([(2, 3, 1000, 1000), (1, 2, 513, 2049), (1, 1, 4096, 300)]);
    }
    for (b, h, sq, skv) in shapes {
        for d in [64, 128, 256] {
            for causal in [false, true] {
                let shape = Shape::new(b, h, sq, skv, d, causal, None).unwrap();
                every_rung_on_the_gpu(&dev, hopper, &shape, 5);
            }
        }
    }
}

/// The FP8 forward on the GPU (sm_90 only) against the f64 reference of
/// the dequantised inputs: odd lengths both ways, one query and one key,
/// grouped heads, causal and not.
#[test]
fn gpu_fp8_forward() {
    let Some(dev) = gpu_or_skip() else { return };
    if dev.as_gpu().unwrap().info().compute_capability != (9, 0) {
        println!("skipped: the FP8 forward is an sm_90a kernel");
        return;
    }
    // (batch, heads, kv_heads, sq, skv)
    let shapes = [
        (1, 2, 2, 77, 133),
        (2, 1, 1, 133, 77),
        (1, 1, 1, 1, 1),
        (1, 4, 1, 1000, 1999),
        (2, 6, 3, 513, 300),
    ];
    for (i, (b, h, hkv, sq, skv)) in shapes.into_iter().enumerate() {
        for causal in [false, true] {
            let shape = Shape::new(b, h, sq, skv, 128, causal, None)
                .unwrap()
                .with_kv_heads(hkv)
                .unwrap();
            let seed = 50 + 3 * i as u64;
            let q = attention::generated(seed, shape.q_len());
            let k = attention::generated(seed + 1, shape.kv_len());
            let v = attention::generated(seed + 2, shape.kv_len());
            let (e, ..) =
                attention::check_fp8(&dev, &shape, [&q, &k, &v], attention::all_rows(&shape))
                    .unwrap_or_else(|e| panic!("FP8 {}: {e}", shape.label()));
            println!(
                "FP8 {}: rel {:.2e}, max {:.2e}, lse {:.1e}",
                shape.label(),
                e.rel,
                e.max,
                e.lse
            );
        }
    }
}

#[test]
fn fp8_refuses_what_it_cannot_take_and_bad_scales() {
    let dev = Device::sim();
    let d64 = Shape::new(1, 1, 8, 8, 64, false, None).unwrap();
    let e = attention::fp8_refuses(&d64).unwrap();
    assert!(e.contains("D = 128") && e.contains("D = 64"), "{e}");
    let windowed = Shape::new(1, 1, 8, 8, 128, false, None)
        .unwrap()
        .with_window(4)
        .unwrap();
    assert!(
        attention::fp8_refuses(&windowed)
            .unwrap()
            .contains("--window")
    );
    let shape = Shape::new(1, 1, 8, 8, 128, false, None).unwrap();
    let x = vec![1f32; shape.q_len()];
    let mut bad = x.clone();
    bad[5] = f32::NAN;
    let e = attention::Fp8Inputs::quantize(&dev, &shape, [&x, &bad, &x])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("K[5]") && e.contains("finite"), "{e}");
    let e = attention::Fp8Inputs::quantize(&dev, &shape, [&x[..10], &x, &x])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("Q") && e.contains("the shape needs 1024"), "{e}");
    for s in [0.0, -1.0, f32::INFINITY, f32::NAN] {
        let scales = attention::Fp8Scales {
            q: 1.0,
            k: s,
            v: 1.0,
        };
        let e = scales.check().unwrap_err().to_string();
        assert!(
            e.contains("scale of K") && e.contains("finite positive"),
            "{e}"
        );
    }
}

#[test]
fn gpu_grouped_heads() {
    let Some(dev) = gpu_or_skip() else { return };
    let hopper = dev.as_gpu().unwrap().info().compute_capability == (9, 0);
    let small = std::env::var("PTXLAB_TEST_SCALE").as_deref() == Ok("small");
    // (batch, heads, kv_heads, sq, skv)
    let mut shapes = vec![(1, 4, 2, 77, 133), (2, 4, 1, 133, 77)];
    if !small {
        shapes.extend([(2, 8, 2, 1000, 1000), (1, 6, 3, 513, 2049)]);
    }
    for (b, h, hkv, sq, skv) in shapes {
        for d in [64, 128, 256] {
            for causal in [false, true] {
                let shape = Shape::new(b, h, sq, skv, d, causal, None)
                    .unwrap()
                    .with_kv_heads(hkv)
                    .unwrap();
                every_rung_on_the_gpu(&dev, hopper, &shape, 6);
            }
        }
    }
}

#[test]
fn gpu_sliding_windows_forward_and_backward() {
    let Some(dev) = gpu_or_skip() else { return };
    let small = std::env::var("PTXLAB_TEST_SCALE").as_deref() == Ok("small");
    // (batch, heads, sq, skv, window)
    let mut shapes = vec![(1, 2, 77, 133, 21), (2, 1, 133, 77, 65)];
    if !small {
        shapes.extend([
            (2, 3, 1000, 1000, 129),
            (1, 2, 2049, 513, 1600),
            (1, 2, 4096, 4096, 1000),
        ]);
    }
    for (b, h, sq, skv, window) in shapes {
        for d in [64, 128] {
            for causal in [false, true] {
                let shape = Shape::new(b, h, sq, skv, d, causal, None)
                    .unwrap()
                    .with_window(window)
                    .unwrap();
                for prec in Precision::ALL {
                    for rung in [Rung::Split, Rung::Fa2] {
                        let e = check_rung(&dev, rung, prec, &shape, 8).unwrap();
                        print_errors(rung, prec, &shape, &e);
                    }
                    if sq * skv <= 1 << 21 {
                        let e = attention::check_backward(&dev, prec, &shape, 8).unwrap();
                        println!("backward {} {}: {e:?}", prec.name(), shape.label());
                    }
                }
            }
        }
    }
}

/// Packed variable-length batches on the GPU: rung 2 and the backward
/// pass against the f64 reference of every sequence (outputs and gradients
/// poisoned), ragged lengths that are no multiple of a tile, grouped heads,
/// causal and not, with and without a window, both precisions and head
/// dims; and at full size, sequences past 4096 tokens.
#[test]
fn gpu_packed_variable_length_batches_forward_and_backward() {
    let Some(dev) = gpu_or_skip() else { return };
    let small = std::env::var("PTXLAB_TEST_SCALE").as_deref() == Ok("small");
    let mut batches: Vec<(Vec<usize>, Vec<usize>)> = attention::SIM_PACKED
        .iter()
        .map(|(q, k)| (q.to_vec(), k.to_vec()))
        .collect();
    if !small {
        let lens = [1000usize, 1, 4097, 63, 2049, 640];
        let mut cu = vec![0];
        for l in lens {
            cu.push(cu[cu.len() - 1] + l);
        }
        batches.push((cu.clone(), cu));
    }
    let mut ran = 0;
    for (cu_q, cu_k) in &batches {
        for d in [64, 128] {
            for causal in [false, true] {
                for window in [None, Some(200)] {
                    let p = attention::Packed::new(
                        4,
                        d,
                        causal,
                        None,
                        cu_q.clone(),
                        Some(cu_k.clone()),
                    )
                    .and_then(|p| p.with_kv_heads(2))
                    .unwrap();
                    let p = match window {
                        Some(w) => match p.with_window(w) {
                            Ok(p) => p,
                            Err(_) => continue,
                        },
                        None => p,
                    };
                    for prec in Precision::ALL {
                        let (e, g) = attention::check_packed(&dev, prec, &p, 9, true).unwrap();
                        println!("{} {}: {e:?} {g:?}", prec.name(), p.label());
                        ran += 1;
                    }
                }
            }
        }
    }
    assert!(ran >= 16, "{ran} packed checks ran");
}

#[test]
fn ptx_of_the_ladder_exports_every_instance_with_its_directives_and_instructions() {
    let _ = kernels_gpu::attention::LOG2_E;
    let kernels: Vec<_> = ptxlab_device::REGISTRY
        .iter()
        .filter(|k| {
            // Decoding has its own checks (tests/attention_decode.rs, tests/ptx.rs).
            k.module.starts_with("kernels_gpu::attention") && !k.module.ends_with("::decode")
        })
        .collect();
    // 1 transpose + 2 softmaxes + 4 fa2 + 8 ranged fa2 (dense with a
    // window, packed) + 4 wgmma + 8 ws + 4 wide ws (D = 256) instances, 2
    // FP8 instances and its V^T transpose, and the backward's 8 main
    // instances of each rung (dense, packed) + 2 of rung 2 at D = 256 + 2
    // pre + 2 dQ instances.
    assert_eq!(
        kernels.len(),
        1 + 2 + 4 + 8 + 4 + 8 + 4 + 3 + 8 + 8 + 2 + 2 + 2,
        "{kernels:?}"
    );
    let (portable, hopper) = (ptxlab::modules::ptx(false), ptxlab::modules::ptx_sm90a());
    for k in &kernels {
        let bwd_hopper = k.module.ends_with("::backward_hopper");
        let bwd_wide = k.module.ends_with("::backward_wide");
        let is_hopper = k.module.ends_with("::hopper");
        let wide = k.module.ends_with("::wide");
        let fp8 = k.module.ends_with("::fp8");
        let e = entry(
            if is_hopper || bwd_hopper || bwd_wide || wide || fp8 {
                hopper
            } else {
                portable
            },
            k.name,
        );
        assert!(
            e.contains(&format!(".maxntid {}, 1, 1", k.max_threads)),
            "{}: no .maxntid {}",
            k.name,
            k.max_threads
        );
        if is_hopper {
            assert!(e.contains(".minnctapersm 1"), "{}", k.name);
            for what in [
                "wgmma.mma_async.sync.aligned.m64n128k16.f32",
                "wgmma.fence.sync.aligned",
                "wgmma.wait_group.sync.aligned",
                "cp.async.bulk.tensor.2d",
                "mbarrier.try_wait.parity",
            ] {
                assert!(e.contains(what), "{}: no `{what}`", k.name);
            }
            // P V takes P from registers: `{a0, a1, a2, a3}`, B transposed.
            let n = if k.name.contains("_64") { 64 } else { 128 };
            assert!(
                e.contains(&format!("m64n{n}k16.f32"))
                    && e.lines()
                        .any(|l| l.contains("wgmma.mma_async") && l.contains("p, 1, 1, 1;")),
                "{}: no register-A wgmma of N = {n}",
                k.name
            );
        }
        if bwd_hopper {
            // Backward rung 2: every product on wgmma, m64n64k16 with both
            // operands read transposed for dQ = dS K (`1, 1, 1, 1`: scales,
            // then trans-A, trans-B), the register-A products of dV and dK,
            // the tiles by cp.async handed to the tensor core's proxy, and
            // dQ as vector reductions.
            assert!(e.contains(".minnctapersm 1"), "{}", k.name);
            for what in [
                "wgmma.mma_async.sync.aligned.m64n64k16.f32",
                "wgmma.fence.sync.aligned",
                "wgmma.wait_group.sync.aligned",
                "cp.async.cg",
                "fence.proxy.async",
                "red.global.add.v2.f32",
            ] {
                assert!(e.contains(what), "{}: no `{what}`", k.name);
            }
            assert!(
                e.lines()
                    .any(|l| l.contains("m64n64k16") && l.contains("p, 1, 1, 1, 1;")),
                "{}: no wgmma with both operands transposed",
                k.name
            );
            assert!(
                e.lines()
                    .any(|l| l.contains("wgmma.mma_async") && l.contains("p, 1, 1, 1;")),
                "{}: no register-A wgmma",
                k.name
            );
            assert!(!e.contains("atom.add.f32"), "{}: a generic atomic", k.name);
        }
        if bwd_wide {
            // Backward at D = 256: S^T and dP^T on m64n32k16 (half the
            // query tile a warpgroup), dV and dK on m64n128k16 from shared
            // memory (B N-major: `1, 1, 0, 1`), dQ on m64n64k16 with both
            // operands transposed, dQ as vector reductions, no spills.
            assert!(e.contains(".minnctapersm 1"), "{}", k.name);
            for what in [
                "wgmma.mma_async.sync.aligned.m64n32k16.f32",
                "cp.async.cg",
                "fence.proxy.async",
                "red.global.add.v2.f32",
            ] {
                assert!(e.contains(what), "{}: no `{what}`", k.name);
            }
            for (shape, tail) in [
                ("m64n128k16", "p, 1, 1, 0, 1;"),
                ("m64n64k16", "p, 1, 1, 1, 1;"),
            ] {
                assert!(
                    e.lines().any(|l| l.contains(shape) && l.contains(tail)),
                    "{}: no {shape} ending `{tail}`",
                    k.name
                );
            }
            assert!(!e.contains("atom.add.f32"), "{}: a generic atomic", k.name);
            assert!(
                !e.contains("ld.local"),
                "{}: accumulators in local memory",
                k.name
            );
        }
        if wide {
            // D = 256: S on m64n80k16 from shared memory (80-key tiles),
            // P V on m64n256k16 with P in registers, the TMA pipeline, the
            // producer giving back all it can so the consumers get 240.
            assert!(e.contains(".minnctapersm 1"), "{}", k.name);
            for what in [
                "wgmma.mma_async.sync.aligned.m64n80k16.f32",
                "cp.async.bulk.tensor.2d",
                "mbarrier.try_wait.parity",
                "setmaxnreg.dec.sync.aligned.u32 24",
                "setmaxnreg.inc.sync.aligned.u32 240",
                "bar.sync",
                "bar.arrive",
            ] {
                assert!(e.contains(what), "{}: no `{what}`", k.name);
            }
            assert!(
                e.lines()
                    .any(|l| l.contains("m64n256k16") && l.contains("p, 1, 1, 1;")),
                "{}: no register-A wgmma of N = 256",
                k.name
            );
            assert!(
                !e.contains("ld.local"),
                "{}: accumulators in local memory",
                k.name
            );
        }
        if k.name.starts_with("attn_ws_fp8") {
            // FP8: both products on m64n128k32 E4M3, the second with P in
            // registers (`{a0..a3}`, no transpose immediates: FP8 has
            // none), P rounded by the paired cvt, the TMA pipeline.
            assert!(e.contains(".minnctapersm 1"), "{}", k.name);
            for what in [
                "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3",
                "cvt.rn.satfinite.e4m3x2.f32",
                "cp.async.bulk.tensor.2d",
                "mbarrier.try_wait.parity",
                "setmaxnreg.dec.sync.aligned.u32 40",
                "setmaxnreg.inc.sync.aligned.u32 232",
                "bar.sync",
                "bar.arrive",
            ] {
                assert!(e.contains(what), "{}: no `{what}`", k.name);
            }
            assert!(
                e.lines()
                    .any(|l| l.contains("m64n128k32") && l.contains("}, {%r")),
                "{}: no register-A FP8 wgmma",
                k.name
            );
            assert!(
                !e.contains("ld.local"),
                "{}: registers in local memory",
                k.name
            );
        }
        if k.name.starts_with("attn_ws") && !wide && !fp8 {
            for what in [
                "setmaxnreg.dec.sync.aligned.u32 40",
                "setmaxnreg.inc.sync.aligned.u32 232",
                "bar.sync",
                "bar.arrive",
            ] {
                assert!(e.contains(what), "{}: no `{what}`", k.name);
            }
        }
        let bwd_main = k.name.starts_with("attn_bwd_")
            && !bwd_hopper
            && !bwd_wide
            && !k.name.starts_with("attn_bwd_pre")
            && !k.name.starts_with("attn_bwd_dq");
        if k.name.starts_with("attn_fa2") || bwd_main {
            for what in [
                "mma.sync.aligned.m16n8k16",
                "ldmatrix.sync.aligned.m8n8.x4.trans",
                "cp.async.cg",
            ] {
                assert!(e.contains(what), "{}: no `{what}`", k.name);
            }
        }
        if bwd_main {
            // dQ's partial sums go out as fire-and-forget reductions on
            // global memory, never as generic atomics that return a value.
            assert!(
                e.contains("red.global.add.f32") && !e.contains("atom.add.f32"),
                "{}: dQ not added with red.global.add.f32",
                k.name
            );
        }
    }
}

/// The registers a thread may have under `.maxntid threads` and
/// `.minnctapersm blocks` (and `.maxnreg`, when set): the SM's 65536
/// registers shared by `threads x blocks` threads, allocated per thread in
/// multiples of 8, at most 255.
fn register_cap(k: &ptxlab_device::KernelInfo) -> u32 {
    let mut cap = 255;
    if k.max_threads > 0 {
        cap = cap.min(65536 / (k.max_threads * k.min_blocks.max(1)) / 8 * 8);
    }
    if k.max_registers > 0 {
        cap = cap.min(k.max_registers);
    }
    cap
}

#[test]
fn ptxas_honours_the_register_caps_and_keeps_setmaxnreg() {
    let ptxas = match ptxlab_builder::find_ptxas() {
        Ok(p) => p,
        Err(why) => {
            assert!(
                std::env::var_os("PTXLAB_REQUIRE_PTXAS").is_none(),
                "PTXLAB_REQUIRE_PTXAS is set but {why}"
            );
            println!("skipped: {why}");
            return;
        }
    };
    let _ = kernels_gpu::attention::LOG2_E;
    let dir = std::env::temp_dir().join(format!("ptxlab-attn-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut seen = Vec::new();
    let modules = ptxlab::modules::KERNELS
        .modules
        .iter()
        .filter(|m| m.group == "attention" && m.math == ptxlab::MathMode::Precise);
    for m in modules {
        // The portable module as the H100 loads it, the Hopper one for the
        // only target it is valid for.
        let arch = if m.arch.ends_with('a') {
            "sm_90a"
        } else {
            "sm_90"
        };
        let src = dir.join(format!("attention.{arch}.ptx"));
        std::fs::write(&src, m.ptx).unwrap();
        let out = std::process::Command::new(&ptxas)
            .args([&format!("-arch={arch}"), "-O3", "-v"])
            .arg(&src)
            .arg("-o")
            .arg(dir.join(format!("attention.{arch}.cubin")))
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}", ptxas.display()));
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "ptxas -arch={arch} rejected the attention module:\n{log}"
        );
        // C7508: ptxas dropped `setmaxnreg` (no register cap at entry, or the
        // warpgroup roles not one branch each): the consumers would then run
        // on the entry allocation.
        assert!(
            !log.contains("C7508") && !log.contains("setmaxnreg"),
            "ptxas -arch={arch} ignored setmaxnreg:\n{log}"
        );
        for r in ptxlab_builder::parse_ptxas_report(&log, arch) {
            let k = ptxlab_device::kernel_info(&r.kernel)
                .unwrap_or_else(|| panic!("ptxas reports `{}`, which is not registered", r.kernel));
            // Decoding's kernels are checked in tests/attention_decode.rs.
            if k.module.ends_with("::decode") {
                continue;
            }
            let cap = register_cap(k);
            assert!(
                r.registers <= cap,
                "{arch}: `{}` uses {} registers over its cap {cap} ({} threads, {} blocks per SM)",
                r.kernel,
                r.registers,
                k.max_threads,
                k.min_blocks
            );
            // The backward kernels do not spill: the main one keeps dK and
            // dV of its keys in registers and recomputes its fragment
            // addresses each tile (`thread::opaque`); its packed D = 128
            // instances keep a few bytes more live and are allowed their
            // spill.
            let bwd_dense = r.kernel.starts_with("attn_bwd") && !r.kernel.ends_with("_packed");
            if r.kernel.starts_with("attn_fa2") || bwd_dense || arch == "sm_90a" {
                assert_eq!(
                    (r.spill_stores, r.spill_loads, r.stack_frame),
                    (0, 0, 0),
                    "{arch}: `{}` spills or uses local memory ({r:?})",
                    r.kernel
                );
            }
            println!("{arch} {}: {} registers (cap {cap})", r.kernel, r.registers);
            seen.push(r.kernel.clone());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    seen.sort();
    seen.dedup();
    assert_eq!(
        seen.len(),
        1 + 2 + 4 + 8 + 4 + 8 + 4 + 3 + 8 + 8 + 2 + 2 + 2,
        "ptxas reported {seen:?}"
    );
}
