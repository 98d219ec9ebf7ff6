//! Diffusion, matmul, fusion and launch overhead.

use ptxlab::Error;
use ptxlab::runtime::Device;
use ptxlab::workloads::{diffusion, fusion, matmul};

use super::{err, has};

#[test]
fn diffusion_matmul_fusion_public_functions() {
    let dev = Device::sim();
    has(
        &err(diffusion::check_params(usize::MAX, 3, 0.1)),
        &["is too large", "at most 2147483647 cells"],
    );
    has(
        &err(diffusion::check_params(5, 5, f32::NAN)),
        &["alpha", "finite"],
    );
    has(
        &err(diffusion::Fields::new(&dev, &[0.0; 24], 5, 5)),
        &["24 values for a 5x5 grid; need 25"],
    );
    has(
        &err(diffusion::Fields::new(&dev, &[0.0; 24], usize::MAX, 2)),
        &["overflows the number of cells"],
    );
    let u = dev.upload(&[0.0f32; 25]).unwrap();
    let mut lap = dev.alloc_filled(25, 0.0f32).unwrap();
    let mut un = dev.alloc_filled(24, 0.0f32).unwrap();
    has(
        &err(diffusion::step_pingpong(
            &dev, &u, &mut lap, &mut un, 5, 5, 0.1,
        )),
        &["buffers of 25, 25, 24 for a 5x5 grid"],
    );
    has(
        &err(diffusion::step_pingpong(
            &dev,
            &u,
            &mut lap,
            &mut un,
            usize::MAX,
            5,
            0.1,
        )),
        &["overflows the number of cells"],
    );
    let mut uu = dev.upload(&[0.0f32; 25]).unwrap();
    has(
        &err(diffusion::step_inplace(
            &dev, &mut uu, &mut lap, 5, 5, 0.1, 0,
        )),
        &["in-place block", "0; allowed 1..=8"],
    );
    has(
        &err(diffusion::check(
            &dev,
            diffusion::Variant::Pingpong,
            5,
            5,
            0,
            0.1,
            1,
        )),
        &["0 steps", "at least 1"],
    );
    let c = diffusion::check(&dev, diffusion::Variant::Pingpong, 3, 3, 1, 0.25, 1).unwrap();
    assert_eq!(c.mismatches, 0);

    has(
        &err(matmul::check_shapes(3, 4, 5, 6)),
        &[
            "inner dimensions do not match",
            "A's columns (4) must equal B's rows (5)",
        ],
    );
    let a = dev.upload(&[1.0f32; 6]).unwrap();
    let b = dev.upload(&[1.0f32; 6]).unwrap();
    let mut cc = dev.alloc_filled(4, 0.0f32).unwrap();
    has(
        &err(matmul::gemm(
            &dev,
            matmul::Rung::Naive,
            &a,
            &b,
            &mut cc,
            2,
            2,
            4,
        )),
        &["A has 6 elements; the shapes need 8"],
    );
    let mut col = dev.alloc_filled(3, 0.0f32).unwrap();
    has(
        &err(matmul::colsum_add(&dev, &a, &mut col, usize::MAX, 3)),
        &["larger than 4294967295"],
    );
    has(
        &err(matmul::colsum_add(&dev, &a, &mut col, 3, 3)),
        &["the matrix has 6 elements; the shapes need 9"],
    );
    let mut bufs = matmul::ColsumBufs::new(&dev, matmul::Colsum::Fused, 2, 3, 2).unwrap();
    let a4 = dev.upload(&[1.0f32; 4]).unwrap();
    has(
        &err(matmul::colsum_of_product(
            &dev,
            matmul::Colsum::Direct,
            &a4,
            &b,
            &mut bufs,
            2,
            3,
            2,
        )),
        &["the direct way needs a C buffer"],
    );
    let mut c1 = dev.alloc_filled(1, f32::NAN).unwrap();
    let one = dev.upload(&[3.0f32]).unwrap();
    matmul::gemm(&dev, matmul::Rung::Vec, &one, &one, &mut c1, 1, 1, 1).unwrap();
    assert_eq!(dev.download(&c1).unwrap(), vec![9.0]);

    let x = dev.upload(&[1.0f32; 5]).unwrap();
    let mut y = dev.alloc_filled(5, 0.0f32).unwrap();
    let mut z = dev.alloc_filled(4, 0.0f32).unwrap();
    let mut w = dev.alloc_filled(5, 0.0f32).unwrap();
    has(
        &err(fusion::unfused(
            &dev, &x, &mut y, &mut z, &mut w, 1.0, 0.0, 0.0,
        )),
        &["buffer lengths differ: [5, 5, 4, 5]"],
    );
    let mut empty = dev.alloc_filled(0, 0.0f32).unwrap();
    has(
        &err(fusion::tiny(&dev, &mut empty)),
        &["tiny kernel buffer", "0 elements; allowed 1..="],
    );
    has(
        &err(fusion::launch_overhead(&dev, 0, 1)),
        &["--kernels", "allowed 1..=100000"],
    );
    has(&err(fusion::check_counts(1 << 20, 100)), &["at most 2^24"]);
    // reps = 0 times one repetition (as the timers do) and counts it.
    assert!(fusion::launch_overhead(&dev, 2, 0).is_ok());
    assert!(matches!(
        fusion::TinyGraph::capture(&dev, &mut w, 3),
        Err(Error::Runtime(ptxlab::runtime::Error::Unsupported { .. }))
    ));
}
