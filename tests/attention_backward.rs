//! The attention backward pass: its kernels on the simulator at odd shapes
//! (tails in every tile, `Sq != Skv` both ways, causal and not) against
//! the f64 gradients with the outputs poisoned first, the checker failing
//! a wrong gradient, bad input refused with the array and the shape it
//! needs, and (when a driver is present) the same checks on the GPU.

use ptxlab::runtime::Device;
use ptxlab::runtime::testing::gpu_or_skip;
use ptxlab::workloads::attention::{
    self, Backward, BwdRung, Grads, Inputs, Plan, Precision, Rung, Shape, check_backward,
    check_backward_on, grad_inputs,
};

/// [`check_backward_on`] on `shape` with every rung `dev` runs at its head
/// dimension (its error fails the test, naming the case), then one line per
/// rung with the case and the three gradients' errors.
fn check_and_print(dev: &Device, prec: Precision, shape: &Shape, seed: u64) {
    for rung in BwdRung::all_on(dev, shape.d) {
        let e = check_backward_on(dev, rung, prec, shape, seed)
            .unwrap_or_else(|e| panic!("{} {} {}: {e}", rung.label(), shape.label(), prec.name()));
        println!(
            "{} {} {}: dQ {:.2e} dK {:.2e} dV {:.2e}",
            rung.label(),
            shape.label(),
            prec.name(),
            e.dq,
            e.dk,
            e.dv
        );
    }
}

#[test]
fn sim_backward_at_odd_shapes_causal_and_not() {
    let dev = Device::sim();
    // (batch, heads, sq, skv, d, causal, precision): no length a multiple
    // of 64, more keys than queries and the reverse (causal keys past the
    // last query get no gradient), both head dims and both precisions.
    let cases = [
        (1, 2, 33, 47, 64, false, Precision::Bf16),
        (1, 2, 33, 47, 64, true, Precision::Bf16),
        (1, 1, 70, 33, 128, true, Precision::F16),
        (2, 1, 47, 130, 64, false, Precision::F16),
    ];
    for (i, (b, h, sq, skv, d, causal, prec)) in cases.into_iter().enumerate() {
        let shape = Shape::new(b, h, sq, skv, d, causal, None).unwrap();
        check_and_print(&dev, prec, &shape, i as u64);
    }
}

#[test]
fn sim_backward_at_head_dim_256() {
    let dev = Device::sim();
    // Rung 2's D = 256 kernel (64-key blocks, the warpgroups splitting the
    // query tile for S^T and the columns for dK, dV and dQ): the issue's
    // odd grouped shape (S = 77, S_kv = 133, H = 4 over H_kv = 2) causal,
    // more queries than keys without a mask, and a window.
    let cases = [
        (1, 4, 2, 77, 133, true, 0, Precision::Bf16),
        (1, 1, 1, 130, 70, false, 0, Precision::F16),
        (1, 2, 1, 100, 100, false, 33, Precision::Bf16),
    ];
    for (i, (b, h, hkv, sq, skv, causal, window, prec)) in cases.into_iter().enumerate() {
        let mut shape = Shape::new(b, h, sq, skv, 256, causal, None)
            .unwrap()
            .with_kv_heads(hkv)
            .unwrap();
        if window > 0 {
            shape = shape.with_window(window).unwrap();
        }
        check_and_print(&dev, prec, &shape, 40 + i as u64);
    }
}

#[test]
fn sim_backward_with_grouped_heads() {
    let dev = Device::sim();
    // (batch, heads, kv_heads, sq, skv, d, causal, precision): multi-query
    // with three query heads, two groups of two over two batch elements,
    // and the odd shape (S = 77, S_kv = 133, H = 4 over H_kv = 2);
    // dK and dV are summed over each group (a kernel that wrote only one
    // query head's share would be off by about half).
    let cases = [
        (1, 3, 1, 33, 47, 64, true, Precision::Bf16),
        (2, 4, 2, 70, 33, 128, false, Precision::F16),
        (1, 4, 2, 77, 133, 128, true, Precision::Bf16),
    ];
    for (i, (b, h, hkv, sq, skv, d, causal, prec)) in cases.into_iter().enumerate() {
        let shape = Shape::new(b, h, sq, skv, d, causal, None)
            .unwrap()
            .with_kv_heads(hkv)
            .unwrap();
        check_and_print(&dev, prec, &shape, 20 + i as u64);
    }
}

#[test]
fn the_gradient_checker_fails_a_wrong_or_unwritten_gradient() {
    let dev = Device::sim();
    let prec = Precision::Bf16;
    let shape = Shape::new(1, 1, 20, 30, 64, false, None).unwrap();
    let [q, k, v, g] = grad_inputs(&shape, prec, 5).unwrap();
    let x = Inputs::upload(&dev, &shape, &q, &k, &v).unwrap();
    let w = |b: &[u16]| attention::widen(prec, b);
    let refr = attention::grad_reference(&shape, &w(&q), &w(&k), &w(&v), &w(&g), &[0]);
    let dout = dev.upload(&g).unwrap();
    let mut o = dev.alloc_filled(shape.q_len(), 0u16).unwrap();
    let mut lse = dev.alloc_filled(shape.sq, 0f32).unwrap();
    Plan::new(&dev, Rung::Fa2, prec, shape, &x)
        .unwrap()
        .run(&dev, &mut o, Some(&mut lse))
        .unwrap();
    let mut grads = Grads::poisoned(&dev, &shape).unwrap();
    Backward::new(&dev, prec, shape)
        .unwrap()
        .run(&dev, &x, &o, &lse, &dout, &mut grads)
        .unwrap();
    let (dq, dk, dv) = (
        dev.download(&grads.dq).unwrap(),
        dev.download(&grads.dk).unwrap(),
        dev.download(&grads.dv).unwrap(),
    );
    let e = attention::grad_errors(&shape, prec, &refr, &dq, &dk, &dv).unwrap();
    attention::verify_grads("good", prec, &e).unwrap();
    // dK scaled by 1.1 everywhere (a wrong scale): caught.
    let bad: Vec<u16> = dk
        .iter()
        .map(|b| prec.round(prec.value(*b) * 1.1))
        .collect();
    let e = attention::grad_errors(&shape, prec, &refr, &dq, &bad, &dv).unwrap();
    assert!(attention::verify_grads("bad", prec, &e).is_err(), "{e:?}");
    // A row of dV never written: named.
    let mut hole = dv.clone();
    hole[7 * 64 + 2] = attention::POISON_16;
    let why = attention::grad_errors(&shape, prec, &refr, &dq, &dk, &hole).unwrap_err();
    assert!(why.contains("dV[head 0, row 7, col 2]"), "{why}");
}

#[test]
fn bad_backward_input_is_refused_with_the_array_and_its_shape() {
    let dev = Device::sim();
    let prec = Precision::Bf16;
    let shape = Shape::new(1, 2, 10, 12, 64, false, None).unwrap();
    let [q, k, v, g] = grad_inputs(&shape, prec, 1).unwrap();
    let x = Inputs::upload(&dev, &shape, &q, &k, &v).unwrap();
    let o = dev.alloc_filled(shape.q_len(), 0u16).unwrap();
    let lse = dev.alloc_filled(shape.bh() * shape.sq, 0f32).unwrap();
    let short = dev.upload(&g[..g.len() - 64]).unwrap();
    let mut grads = Grads::poisoned(&dev, &shape).unwrap();
    let mut b = Backward::new(&dev, prec, shape).unwrap();
    let e = b
        .run(&dev, &x, &o, &lse, &short, &mut grads)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("dO") && e.contains("1216") && e.contains("1280"),
        "{e}"
    );
    let e = Backward::new(&dev, prec, Shape { d: 96, ..shape })
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("not for this shape") && e.contains("64, 128 and 256"),
        "{e}"
    );
    // Rung 1 is not built for D = 256: the error names the rung that is.
    let wide = Shape { d: 256, ..shape };
    let e = Backward::new(&dev, prec, wide)
        .unwrap()
        .with_rung(&dev, BwdRung::Mma)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("--variant fa2") && e.contains("D = 256") && e.contains("--variant wgmma"),
        "{e}"
    );
}

#[test]
fn gpu_backward_matches_the_f64_gradients() {
    let Some(dev) = gpu_or_skip() else { return };
    for (b, h, sq, skv, d, causal) in [
        (1, 2, 33, 47, 64, false),
        (2, 3, 333, 1999, 128, true),
        (1, 4, 1000, 1000, 128, false),
        (1, 2, 4097, 129, 64, true),
        (1, 2, 333, 1999, 256, true),
        (1, 3, 1000, 1000, 256, false),
    ] {
        for prec in Precision::ALL {
            let shape = Shape::new(b, h, sq, skv, d, causal, None).unwrap();
            check_backward(&dev, prec, &shape, 3).unwrap();
        }
    }
    // Grouped K/V heads: (batch, heads, kv_heads, sq, skv, d, causal).
    for (b, h, hkv, sq, skv, d, causal) in [
        (1, 4, 2, 77, 133, 64, true),
        (2, 8, 1, 1000, 1000, 128, false),
        (1, 6, 3, 4097, 129, 128, true),
        (1, 4, 2, 77, 133, 256, true),
        (1, 4, 1, 4097, 129, 256, true),
    ] {
        for prec in Precision::ALL {
            let shape = Shape::new(b, h, sq, skv, d, causal, None)
                .unwrap()
                .with_kv_heads(hkv)
                .unwrap();
            check_backward(&dev, prec, &shape, 4).unwrap();
        }
    }
}
