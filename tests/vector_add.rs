//! Vector add end to end: the simulator in CI, the GPU where there is one,
//! and every kind of bad input ending in a clear error.

use ptxlab::runtime::{
    Device, LaunchConfig, ModuleKey, config::check_launch, probe::driver_present,
    testing::gpu_or_skip,
};
use ptxlab::workloads::vector::{self, Rung};

#[test]
fn simulator_matches_cpu_bitwise_on_odd_lengths() {
    let dev = Device::sim();
    for n in [1usize, 3, 257, 1001] {
        for rung in Rung::ALL {
            let c = vector::check::<f32>(&dev, n, rung, n as u64).unwrap();
            assert_eq!(c.mismatches, 0, "f32 {rung:?} n={n}");
            assert!(c.rel_err < 1e-7, "f32 {rung:?} n={n}: {}", c.rel_err);
            let c = vector::check::<f64>(&dev, n, rung, n as u64).unwrap();
            assert_eq!(c.mismatches, 0, "f64 {rung:?} n={n}");
            assert_eq!(c.rel_err, 0.0);
        }
    }
}

#[test]
fn mismatched_and_empty_lengths_are_rejected() {
    let dev = Device::sim();
    let a = dev.upload(&[1.0f32; 10]).unwrap();
    let b = dev.upload(&[1.0f32; 9]).unwrap();
    let mut c = dev.alloc_filled(10, 0.0f32).unwrap();
    let e = vector::add(&dev, Rung::Scalar, ModuleKey::default(), &a, &b, &mut c)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("lengths differ: a has 10, b has 9, c has 10"),
        "{e}"
    );
    let z = dev.upload::<f32>(&[]).unwrap();
    let mut zc = dev.alloc_filled(0, 0.0f32).unwrap();
    let e = vector::add(&dev, Rung::Wide, ModuleKey::default(), &z, &z, &mut zc)
        .unwrap_err()
        .to_string();
    assert!(e.contains("length 0"), "{e}");
}

#[test]
fn a_buffer_larger_than_memory_is_an_error() {
    let dev = Device::sim();
    let e = dev
        .alloc_filled::<f32>(usize::MAX / 2, 0.0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not enough device memory"), "{e}");
    // The GPU half runs where there is a driver (and must, with
    // PTXLAB_REQUIRE_GPU set).
    if let Some(g) = gpu_or_skip() {
        let total = g.as_gpu().unwrap().info().total_mem as usize;
        let e = g
            .alloc_filled::<f32>(total / 4 + 1024, 0.0)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("not enough device memory") && e.contains("bytes free"),
            "{e}"
        );
    }
}

#[test]
fn block_of_2048_threads_and_too_much_shared_memory_are_rejected() {
    let mut cfg = LaunchConfig::for_threads(4096, 1024).unwrap();
    cfg.block.x = 2048;
    let lim = Device::sim().limits();
    let refused = |cfg: &LaunchConfig| {
        check_launch("vector_add_f32", cfg, &lim)
            .unwrap_err()
            .to_string()
    };
    let e = refused(&cfg);
    assert!(
        e.contains("2048 threads") && e.contains("at most 1024 threads per block"),
        "{e}"
    );
    // The kernel's own launch bounds are enforced too (vector kernels: 1024).
    let cfg = LaunchConfig::for_threads(4096, 256)
        .unwrap()
        .with_shared(300 * 1024);
    let e = refused(&cfg);
    assert!(
        e.contains("307200 bytes") && e.contains("at most 232448 bytes per block"),
        "{e}"
    );
    let e = LaunchConfig::for_threads(0, 256).unwrap_err().to_string();
    assert!(e.contains("0 threads"), "{e}");
}

#[test]
fn demo_kernels_match_their_references_on_the_simulator() {
    ptxlab::workloads::demo::sim_check().unwrap();
}

#[test]
fn missing_driver_is_a_clear_error() {
    if driver_present() {
        println!("skipped: a driver is present (this checks the no-driver path)");
        return;
    }
    // The runtime names its own way out (the simulator), no program's options ...
    let e = Device::gpu(0).unwrap_err().to_string();
    assert!(
        e.contains("no NVIDIA driver") && e.contains("Device::sim()") && !e.contains("--backend"),
        "{e}"
    );
    // ... and the lab names its command-line options.
    let e = ptxlab::Error::open_gpu(0).unwrap_err().to_string();
    assert!(
        e.contains("no NVIDIA driver") && e.contains("--backend sim"),
        "{e}"
    );
}

/// `alloc_filled` fills on the device (a memset per element size, two
/// strided word fills for 8-byte elements): every element reads back as the
/// value, bit for bit, at odd lengths, on the GPU and the simulator alike.
#[test]
fn alloc_filled_gives_the_value_in_every_element() {
    fn check<T: ptxlab::runtime::Element + PartialEq + std::fmt::Debug>(
        dev: &Device,
        v: T,
        bits: impl Fn(&T) -> u64,
    ) {
        for n in [1usize, 7, 1000, (1 << 20) + 3] {
            let got = dev.download(&dev.alloc_filled(n, v).unwrap()).unwrap();
            assert_eq!(got.len(), n);
            assert!(
                got.iter().all(|g| bits(g) == bits(&v)),
                "{} of {v:?}",
                dev.name()
            );
        }
    }
    let mut devs = vec![Device::sim()];
    devs.extend(gpu_or_skip());
    for dev in &devs {
        check(dev, f64::NAN, |v| v.to_bits());
        check(dev, -1.25e-300f64, |v| v.to_bits());
        check(dev, f32::NAN, |v| u64::from(v.to_bits()));
        check(dev, 3.5f32, |v| u64::from(v.to_bits()));
        check(dev, 0xBEEFu16, |v| u64::from(*v));
        check(dev, 0xA5u8, |v| u64::from(*v));
        check(dev, 0x0123_4567_89AB_CDEFu64, |v| *v);
        let empty = dev.alloc_filled(0, 1.0f64).unwrap();
        assert_eq!(dev.download(&empty).unwrap().len(), 0);
    }
}

#[test]
fn gpu_vector_add_is_exact_for_all_lengths() {
    let Some(dev) = gpu_or_skip() else { return };
    // Under compute-sanitizer (PTXLAB_TEST_SCALE=small) the 1 GiB case is skipped.
    let big = if std::env::var("PTXLAB_TEST_SCALE").as_deref() == Ok("small") {
        1 << 16
    } else {
        1 << 28
    };
    for n in [1usize, 1000, (1 << 20) + 3, big] {
        for rung in Rung::ALL {
            let c = vector::check::<f32>(&dev, n, rung, 11).unwrap();
            assert_eq!(c.mismatches, 0, "f32 {rung:?} n={n}");
        }
    }
    for n in [1usize, 1001, (1 << 20) + 3] {
        for rung in Rung::ALL {
            assert_eq!(
                vector::check::<f64>(&dev, n, rung, 12).unwrap().mismatches,
                0,
                "f64 {rung:?} n={n}"
            );
        }
    }
}

#[test]
fn gpu_demo_kernels_and_modules() {
    let Some(dev) = gpu_or_skip() else { return };
    let g = dev.as_gpu().unwrap();
    for capped in [false, true] {
        let e = ptxlab::workloads::demo::regs(&dev, 10_000, capped, ModuleKey::default()).unwrap();
        assert!(e < 1e-5, "capped={capped}: {e}");
    }
    let e = ptxlab::workloads::demo::fast_sincos(&dev, 100_003, ModuleKey::FAST).unwrap();
    assert!(e < 1e-5, "fast sincos max abs err {e}");
    // Register caps as the driver sees them.
    let capped = g
        .num_regs(
            &ptxlab::modules::KERNELS,
            ModuleKey::default(),
            "demo_regs_capped",
        )
        .unwrap();
    let free = g
        .num_regs(&ptxlab::modules::KERNELS, ModuleKey::default(), "demo_regs")
        .unwrap();
    assert!(
        capped <= 32 && free > 32,
        "capped {capped}, uncapped {free}"
    );
    // A cubin loads where one was built for this arch.
    let cubin = ModuleKey {
        form: ptxlab::Form::Cubin,
        ..ModuleKey::default()
    };
    match g.load_uncached(
        &ptxlab::modules::KERNELS,
        cubin,
        ptxlab::runtime::entry!(kernels_gpu::vector::vector_add::<f32>),
    ) {
        Ok(_) => assert!(
            vector::check::<f32>(&dev, 1 << 20, Rung::Wide, 3)
                .unwrap()
                .mismatches
                == 0
        ),
        Err(e) => assert!(e.to_string().contains("cubins were built for"), "{e}"),
    }
}

/// The planted out-of-bounds write, run only under the sanitizer script
/// (`PTXLAB_PLANTED=1`), which expects memcheck to report it.
#[test]
fn gpu_planted_out_of_bounds_write() {
    if std::env::var("PTXLAB_PLANTED").is_err() {
        println!("skipped: set PTXLAB_PLANTED=1 (sanitize.sh does, under memcheck)");
        return;
    }
    let Some(dev) = gpu_or_skip() else { return };
    let _ = ptxlab::workloads::demo::planted_oob_write(&dev, 1000);
}

#[test]
fn the_bench_checks_then_times_every_rung_on_one_set_of_inputs() {
    // The bench's own path (inputs drawn and uploaded once per length, each
    // rung checked bitwise, then timed) on the simulator, at a length that
    // is no multiple of any block.
    let dev = Device::sim();
    let opts = vector::Bench {
        sizes: vec![4099],
        reps: 2,
        warmup: 1,
        cpu: true,
    };
    let rows = vector::bench::<f32>(&dev, &opts).unwrap();
    let gpu: Vec<_> = rows.iter().filter(|r| r.backend == "sim").collect();
    assert_eq!(gpu.len(), Rung::ALL.len(), "{rows:?}");
    for r in gpu {
        assert!(matches!(r.status, ptxlab::report::Status::Ok), "{r:?}");
        // Bitwise equal to the CPU's f32 sum; against the f64 sum, f32 rounding.
        assert!(
            r.rel_err.is_some_and(|e| e < 1e-7),
            "{}: {:?}",
            r.variant,
            r.rel_err
        );
        assert!(
            r.timing.as_ref().is_some_and(|t| t.reps == 2),
            "{}",
            r.variant
        );
    }
    // The prepared check compares: one wrong element of the reference is
    // one mismatch.
    let mut p = vector::prepare::<f32>(&dev, 1001, 5).unwrap();
    assert_eq!(
        vector::check_prepared(&dev, &p, Rung::ALL[0])
            .unwrap()
            .mismatches,
        0
    );
    p.want[17] += 1.0;
    let c = vector::check_prepared(&dev, &p, Rung::ALL[0]).unwrap();
    assert_eq!(c.mismatches, 1);
}
