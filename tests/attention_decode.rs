//! Decoding over a paged KV cache: every kernel instance on the simulator at
//! odd shapes against the f64 reference (the workload's `sim_check`, and the
//! cases it leaves out: the automatic split, garbage in the unused slots of
//! a partial last page), the checker catching a wrong page or an unwritten
//! row, hostile shapes and tables refused with a reason, and (when a driver
//! is present) the same checks on the GPU.

use ptxlab::runtime::Device;
use ptxlab::runtime::testing::gpu_or_skip;
use ptxlab::workloads::attention::decode::{
    self, DecodeInputs, DecodePlan, DecodeShape, POISON, all_rows, check_decode, generate,
    reference,
};

#[test]
fn sim_every_instance_at_odd_shapes() {
    // D = 64, 128, 256; 8 and 16 rows per block; one and two row blocks
    // per K/V head; lengths 1, 3, 9, 77, 133, 200 (partial last pages and
    // tiles); pages of 1, 16 and 128 tokens; several splits per sequence.
    decode::sim_check().unwrap();
}

#[test]
fn sim_the_automatic_split_and_a_long_sequence() {
    let dev = Device::sim();
    // One split (the planned length is at least 4 tiles) and, with splits
    // of 64 keys, 11 of them for 700 keys: the merge sees many.
    let shape = DecodeShape::generated(2, 4, 2, 1, 128, 16, vec![700, 133], None).unwrap();
    let plan = DecodePlan::new(&dev, &shape, None).unwrap();
    assert!(plan.split_keys() >= 256 && plan.split_keys().is_multiple_of(64));
    check_decode(&dev, &shape, 5, None).unwrap();
    check_decode(&dev, &shape, 5, Some(64)).unwrap();
    // A non-default scale, grouped 4:1, two new tokens.
    let shape = DecodeShape::generated(1, 8, 2, 2, 64, 32, vec![150], Some(0.3)).unwrap();
    check_decode(&dev, &shape, 6, Some(64)).unwrap();
}

#[test]
fn sim_garbage_past_a_sequence_s_end_is_never_used() {
    // The unused slots of each partial last page hold huge values: any read
    // of them into the softmax or the output would wreck the result.
    let dev = Device::sim();
    let shape = DecodeShape::generated(3, 4, 2, 2, 64, 16, vec![77, 2, 33], None).unwrap();
    let mut x = generate(&shape, 3);
    let big = |v: f32| ptxlab::workloads::attention::Precision::Bf16.round(v);
    let per_slot = shape.kv_heads * shape.d;
    for b in 0..shape.batch {
        let kv = shape.kv_lens[b];
        let last = x.table[b * shape.max_pages + (kv - 1) / shape.page_size] as usize;
        let used = (kv - 1) % shape.page_size + 1;
        for slot in used..shape.page_size {
            let at = (last * shape.page_size + slot) * per_slot;
            for i in at..at + per_slot {
                x.k[i] = big(60.0);
                x.v[i] = big(1.0e4);
            }
        }
    }
    let refr = reference(&shape, &x, all_rows(&shape));
    let dx = DecodeInputs::upload(&dev, &shape, &x).unwrap();
    let (_, e, _, _) = decode::run_checked(&dev, &shape, &dx, &refr, Some(64)).unwrap();
    assert!(e.rel <= decode::bound(), "{e:?}");
}

#[test]
fn the_checker_fails_a_wrong_page_or_an_unwritten_row() {
    let dev = Device::sim();
    let shape = DecodeShape::generated(2, 4, 2, 1, 64, 16, vec![40, 70], None).unwrap();
    let x = generate(&shape, 2);
    let refr = reference(&shape, &x, all_rows(&shape));
    let dx = DecodeInputs::upload(&dev, &shape, &x).unwrap();
    let (_, _, good, lse) = decode::run_checked(&dev, &shape, &dx, &refr, Some(64)).unwrap();
    // The reference of a table whose sequence 1 starts with sequence 0's
    // first page: the kernel's output must fail against it.
    let mut y = x.clone();
    y.table[shape.max_pages] = y.table[0];
    let wrong = reference(&shape, &y, all_rows(&shape));
    let e = decode::errors(&shape, &wrong, &good, &lse).unwrap();
    assert!(decode::verify("a wrong page", wrong.max_score, &e).is_err());
    // A row never written is named: sequence 1, token 0, head 3.
    let mut hole = good.clone();
    let row = shape.q_len * shape.heads + 3;
    hole[row * shape.d + 5] = POISON;
    let why = decode::errors(&shape, &refr, &hole, &lse).unwrap_err();
    assert!(why.contains("sequence 1, token 0, head 3, dim 5"), "{why}");
    // So is a log-sum-exp never written.
    let mut l = lse.clone();
    l[2] = f32::NAN;
    let why = decode::errors(&shape, &refr, &good, &l).unwrap_err();
    assert!(why.contains("lse[sequence 0, token 0, head 2]"), "{why}");
}

#[test]
fn hostile_shapes_and_tables_are_refused_with_a_reason() {
    let err = |r: ptxlab::Result<DecodeShape>| r.expect_err("must be refused").to_string();
    let e = err(DecodeShape::generated(2, 6, 4, 1, 64, 16, vec![8, 8], None));
    assert!(e.contains("--kv-heads") && e.contains("must divide"), "{e}");
    let e = err(DecodeShape::generated(2, 4, 2, 1, 64, 16, vec![8, 0], None));
    assert!(e.contains("sequence 1 has 0 cached tokens"), "{e}");
    let e = err(DecodeShape::new(1, 4, 2, 1, 64, 16, 4, 2, vec![33], None));
    assert!(e.contains("more than its 2 block-table entries"), "{e}");
    let e = err(DecodeShape::generated(1, 4, 2, 1, 64, 12, vec![8], None));
    assert!(
        e.contains("--page-size") && e.contains("power of two"),
        "{e}"
    );
    let e = err(DecodeShape::generated(1, 4, 2, 1, 64, 8192, vec![8], None));
    assert!(e.contains("--page-size"), "{e}");
    let e = err(DecodeShape::generated(1, 4, 2, 1, 80, 16, vec![8], None));
    assert!(e.contains("--dim"), "{e}");
    let e = err(DecodeShape::generated(
        1,
        4,
        2,
        1,
        64,
        16,
        vec![8],
        Some(-1.0),
    ));
    assert!(e.contains("--scale"), "{e}");
    // A block-table entry outside the cache, in a page the sequence uses.
    let dev = Device::sim();
    let shape = DecodeShape::generated(2, 4, 2, 1, 64, 16, vec![20, 5], None).unwrap();
    let mut x = generate(&shape, 1);
    x.table[1] = shape.num_pages as i32;
    let e = DecodeInputs::upload(&dev, &shape, &x)
        .err()
        .expect("must be refused")
        .to_string();
    assert!(
        e.contains("--block-table") && e.contains("entry [0][1]") && e.contains("outside"),
        "{e}"
    );
    x.table[1] = -3;
    assert!(DecodeInputs::upload(&dev, &shape, &x).is_err());
    // An entry past a sequence's pages is never read, whatever it holds.
    let mut x = generate(&shape, 1);
    x.table[shape.max_pages + 1] = -7;
    DecodeInputs::upload(&dev, &shape, &x).unwrap();
    // A split length that is not a whole number of tiles.
    let e = DecodePlan::new(&dev, &shape, Some(100))
        .err()
        .expect("must be refused")
        .to_string();
    assert!(
        e.contains("--split-keys") && e.contains("multiple of 64"),
        "{e}"
    );
}

#[test]
fn gpu_every_instance_and_a_serving_shape() {
    let Some(dev) = gpu_or_skip() else { return };
    for i in 0..decode::SIM_SHAPES.len() {
        let (shape, split) = decode::sim_shape(i).unwrap();
        check_decode(&dev, &shape, i as u64 + 1, Some(split)).unwrap();
        check_decode(&dev, &shape, i as u64 + 1, None).unwrap();
    }
    // Llama-3-8B-like: 32 query heads on 8 K/V heads, mixed lengths.
    let shape =
        DecodeShape::generated(4, 32, 8, 1, 128, 16, vec![4096, 1, 777, 8191], None).unwrap();
    check_decode(&dev, &shape, 9, None).unwrap();
}
