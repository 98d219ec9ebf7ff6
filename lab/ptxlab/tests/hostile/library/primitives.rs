//! Reduction, histogram, Monte-Carlo pi.

use ptxlab::runtime::Device;
use ptxlab::workloads::primitives;

use super::{err, has};

#[test]
fn primitives_public_functions() {
    use primitives::{HistRung, PiLayout, ReduceRung, SumPlan};
    let dev = Device::sim();
    has(
        &err(SumPlan::<f32>::new(&dev, ReduceRung::Tree, 0)),
        &["the input is empty (n = 0)"],
    );
    let x = dev.upload(&[1.0f32; 10]).unwrap();
    let mut out = dev.alloc_filled(1, 0.0f32).unwrap();
    let mut plan = SumPlan::<f32>::new(&dev, ReduceRung::GridStride, 9).unwrap();
    has(
        &err(plan.run(&dev, &x, &mut out, 0)),
        &["the plan is for 9 elements but the input has 10"],
    );
    let mut plan = SumPlan::<f32>::new(&dev, ReduceRung::GridStride, 10).unwrap();
    has(
        &err(plan.run(&dev, &x, &mut out, 1)),
        &["slot 1 is outside the output of 1 elements"],
    );
    has(
        &err(primitives::check_values(&[1.0f32, f32::NAN])),
        &["element 1 is NaN"],
    );
    has(
        &err(primitives::check_values(&[f64::MAX, f64::MAX])),
        &["beyond the largest f64"],
    );
    assert!(primitives::check_values(&[i32::MAX, i32::MAX]).is_ok());
    let keys = dev.upload(&[1u8, 2, 3]).unwrap();
    let mut hist = dev.alloc_filled(8, 0u32).unwrap();
    has(
        &err(primitives::histogram_into(
            &dev,
            HistRung::Shared,
            &keys,
            &mut hist,
            4,
            usize::MAX,
        )),
        &["do not fit in the output of 8 counters"],
    );
    has(
        &err(primitives::histogram_into(
            &dev,
            HistRung::Global,
            &keys,
            &mut hist,
            4,
            5,
        )),
        &["bins 5..5+4 do not fit in the output of 8 counters"],
    );
    has(
        &err(primitives::histogram(&dev, HistRung::Global, &keys, 3)),
        &["3 bins", "a power of two"],
    );
    let none = dev.upload::<u8>(&[]).unwrap();
    has(
        &err(primitives::histogram(&dev, HistRung::Global, &none, 4)),
        &["the input is empty (0 keys)"],
    );
    assert!(primitives::cpu_histogram_serial::<u8>(&[1, 2], 0).is_empty());
    assert_eq!(
        primitives::histogram(&dev, HistRung::Shared, &keys, 2).unwrap(),
        vec![1, 2]
    );
    let mut hits = dev.alloc_filled(1, 0u64).unwrap();
    has(
        &err(primitives::pi_into(
            &dev,
            PiLayout::SIM,
            10,
            1,
            &mut hits,
            3,
        )),
        &["slot 3 is outside the output of 1 counters"],
    );
    let bad = PiLayout {
        blocks: 1,
        block: 48,
    };
    has(
        &err(bad.validate(10)),
        &["1 blocks of 48 threads", "a multiple of 32 threads"],
    );
    let bad = PiLayout {
        blocks: u32::MAX,
        block: 256,
    };
    has(
        &err(primitives::cpu_pi_serial(bad, 10, 1)),
        &["--blocks", "at most 1048576"],
    );
    let wide = PiLayout {
        blocks: 1 << 20,
        block: 256,
    };
    assert_eq!(
        primitives::cpu_pi_serial(wide, 3, 7).unwrap(),
        primitives::cpu_pi_rayon(wide, 3, 7).unwrap()
    );
}
