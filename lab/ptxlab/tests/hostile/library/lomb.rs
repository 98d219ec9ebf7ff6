//! Lomb-Scargle.

use ptxlab::runtime::Device;
use ptxlab::workloads::lomb;

use super::{err, has};

#[test]
fn lomb_public_functions() {
    let dev = Device::sim();
    has(
        &err(lomb::validate(&[1.0, 2.0], &[1.0], &[1.0])),
        &["x has 2 values and y has 1"],
    );
    has(
        &err(lomb::validate(&[], &[], &[1.0])),
        &["x and y are empty"],
    );
    has(
        &err(lomb::validate(&[1.0], &[1.0], &[])),
        &["no frequencies"],
    );
    has(
        &err(lomb::validate(&[1.0], &[f64::INFINITY], &[1.0])),
        &["y[0] = inf is not finite"],
    );
    has(
        &err(lomb::reference(&[1.0], &[1.0], &[0.0], Default::default())),
        &["freqs[0] = 0"],
    );
    has(
        &err(lomb::check_range::<f32>(&[1e20], &[1.0], &[1e20])),
        &[
            "phase max|w| * max|x|",
            "beyond the largest f32",
            "--precision f64",
        ],
    );
    assert!(lomb::check_range::<f64>(&[1e20], &[1.0], &[1e20]).is_ok());
    has(
        &err(lomb::Bufs::<f32>::new(
            &dev,
            &[1.0],
            &[1e30],
            &[1.0],
            Default::default(),
        )),
        &["sum of y^2", "beyond the largest f32"],
    );
    let uneven = [1.0, 2.0, 4.0];
    has(
        &err(lomb::periodogram::<f32>(
            &dev,
            lomb::Rung::Rotate,
            &[0.5],
            &[1.0],
            &uneven,
            Default::default(),
            lomb::Shape::material(&dev),
        )),
        &["the rotation variant needs an evenly spaced frequency grid"],
    );
    let shape = lomb::Shape {
        blocks: 1,
        block: 0,
    };
    has(
        &err(lomb::config::<f32>(lomb::Rung::Cached, 3, shape, 1)),
        &["block size", "0 threads per block"],
    );
    let shape = lomb::Shape {
        blocks: 1,
        block: 2048,
    };
    has(
        &err(lomb::periodogram::<f32>(
            &dev,
            lomb::Rung::Cached,
            &[0.5],
            &[1.0],
            &[1.0],
            Default::default(),
            shape,
        )),
        &[
            "invalid launch of `lomb_direct_f32`",
            "2048 threads",
            "at most 1024",
        ],
    );
    has(
        &err(<lomb::Rung as clap::ValueEnum>::from_str(
            "regcap300",
            false,
        )),
        &["`regcap300`", "regcapN takes a register cap N in 16..=255"],
    );
    assert!(lomb::linspace(0.0, 1.0, 0).is_empty());
    assert_eq!(lomb::linspace(0.0, 1.0, 1), vec![0.0]);
    let (x, y) = ([0.5, 1.7], [1.0, -0.5]);
    let p = lomb::periodogram::<f64>(
        &dev,
        lomb::Rung::Cached,
        &x,
        &y,
        &[1.0],
        Default::default(),
        lomb::Shape::material(&dev),
    )
    .unwrap();
    let r = lomb::reference(&x, &y, &[1.0], Default::default()).unwrap();
    assert!(
        r[0].is_finite() && (p[0] - r[0]).abs() <= 1e-12 * r[0].abs(),
        "{p:?} vs {r:?}"
    );
}
