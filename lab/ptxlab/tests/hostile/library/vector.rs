//! Vector add.

use ptxlab::runtime::Device;
use ptxlab::workloads::vector;

use super::{err, has};

#[test]
fn vector_add_buffers() {
    let dev = Device::sim();
    let a = dev.upload(&[1.0f32; 5]).unwrap();
    let b = dev.upload(&[1.0f32; 4]).unwrap();
    let mut c = dev.alloc_filled(5, 0.0f32).unwrap();
    let m = ptxlab::ModuleKey::default();
    has(
        &err(vector::add(&dev, vector::Rung::Wide, m, &a, &b, &mut c)),
        &[
            "lengths differ: a has 5, b has 4, c has 5",
            "all three must be equal",
        ],
    );
    let e = dev.upload::<f32>(&[]).unwrap();
    let mut e2 = dev.alloc_filled(0, 0.0f32).unwrap();
    has(
        &err(vector::add(&dev, vector::Rung::Scalar, m, &e, &e, &mut e2)),
        &["length 0", "at least one element"],
    );
    has(
        &err(vector::check::<f64>(&dev, 0, vector::Rung::Scalar, 1)),
        &["length 0"],
    );
    assert_eq!(
        vector::check::<f32>(&dev, 1, vector::Rung::Wide, 3)
            .unwrap()
            .mismatches,
        0
    );
}
