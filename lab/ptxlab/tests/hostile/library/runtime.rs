//! The runtime (launch configurations, buffers) and the `.npy` readers.

use super::{err, has};
use ptxlab::runtime::{Device, LaunchConfig, config::check_launch};
use ptxlab::workloads::vector;

#[test]
fn runtime_launch_configs_and_buffers() {
    has(
        &err(LaunchConfig::for_threads(0, 256)),
        &["launch size", "0 threads requested"],
    );
    has(
        &err(LaunchConfig::for_threads(10, 0)),
        &["block size", "0 threads per block; use 32..=1024"],
    );
    has(
        &err(LaunchConfig::for_threads(usize::MAX, 32)),
        &["launch size", "at most 2147483647 blocks"],
    );
    has(
        &err(LaunchConfig::for_2d(0, 5, 8, 8)),
        &["0x5 threads in 8x8 blocks", "no dimension may be 0"],
    );
    has(
        &err(LaunchConfig::for_2d(5, 8 * 65536, 8, 8)),
        &["y to 65535"],
    );
    let dev = Device::sim();
    let lim = dev.limits();
    let cfg = LaunchConfig::for_threads(64, 64)
        .unwrap()
        .with_shared(lim.max_shared_optin + 1);
    has(
        &err(check_launch("vector_add_f32", &cfg, &lim)),
        &[
            "invalid launch of `vector_add_f32`",
            "dynamic shared memory",
            "at most 232448 bytes per block",
        ],
    );
    let mut cfg = LaunchConfig::for_threads(64, 64).unwrap();
    cfg.block.x = 2048;
    has(
        &err(check_launch("vector_add_f32", &cfg, &lim)),
        &["2048 threads", "at most 1024 threads per block"],
    );
    cfg.block.x = 0;
    has(
        &err(check_launch("vector_add_f32", &cfg, &lim)),
        &["the block", "every dimension must be at least 1"],
    );
    // Through a real launcher: shared memory over the limit and a block
    // over the kernel's launch bounds, on the simulator.
    let a = dev.upload(&[1.0f32; 64]).unwrap();
    let b = dev.upload(&[2.0f32; 64]).unwrap();
    let mut c = dev.alloc_filled(64, 0.0f32).unwrap();
    let big = LaunchConfig::for_threads(64, 64)
        .unwrap()
        .with_shared(300_000);
    has(
        &err(vector::launch_rung::<f32>(
            &dev,
            big,
            vector::Rung::Scalar,
            &a,
            &b,
            &mut c,
        )),
        &[
            "invalid launch of `vector_add_f32`",
            "300000 bytes",
            "at most",
        ],
    );
    // Buffers: a write of the wrong length; an absurd allocation.
    has(
        &err(dev.write(&mut c, &[0.0f32; 3])),
        &["write", "buffer has 64 elements, data 3"],
    );
    has(
        &err(dev.alloc_filled(usize::MAX / 4, 0.0f32)),
        &[
            "not enough device memory for an output buffer",
            "bytes requested",
            "use a smaller size",
        ],
    );
    has(
        &err(dev.alloc_filled(1usize << 50, 0u8)),
        &[
            "not enough device memory",
            "1125899906842624 bytes requested",
        ],
    );
}

#[test]
fn npy_readers() {
    let dir = std::env::temp_dir().join(format!("ptxlab-hostile-lib-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("ok.npy");
    ptxlab::npy::write_2d(&p, 2, 3, &[1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let h = ptxlab::npy::inspect(&p).unwrap();
    assert_eq!(
        (h.descr.as_str(), h.shape.clone(), h.data_bytes),
        ("<f8", vec![2, 3], 48)
    );
    assert_eq!(
        ptxlab::npy::read_2d::<f64>(&p, "f64").unwrap(),
        (2, 3, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    );
    has(
        &err(ptxlab::npy::read_1d::<f64>(&p, "f64")),
        &["(2, 3) has 2 dimension(s); a 1-D array is required"],
    );
    has(
        &err(ptxlab::npy::read_2d::<f32>(&p, "f32")),
        &["its dtype is '<f8' (float64), but f32 is required"],
    );
    let bytes = std::fs::read(&p).unwrap();
    let t = dir.join("trunc.npy");
    std::fs::write(&t, &bytes[..bytes.len() - 1]).unwrap();
    has(
        &err(ptxlab::npy::read_2d::<f64>(&t, "f64")),
        &["the file is truncated", "needs 48 bytes", "holds 47"],
    );
    has(
        &err(ptxlab::npy::inspect(&dir.join("none.npy"))),
        &["cannot open"],
    );
}
