//! Reductions, histogram and Monte-Carlo pi: the simulator against the CPU
//! references on odd sizes, the error bound of float sums, exact integer
//! results, identical Monte-Carlo counts on the simulator and the CPU, bad
//! input ending in clear errors, and the GPU where there is one.

use ptxlab::runtime::Device;
use ptxlab::runtime::testing::gpu_or_skip;
use ptxlab::workloads::primitives::{
    self as p, HistRung, PiLayout, ReduceRung, SumElement, SumPlan, check, check_histogram,
    cpu_histogram_rayon, cpu_histogram_serial, cpu_pi_rayon, cpu_pi_serial, cpu_sum_rayon,
    cpu_sum_serial, pi_hits, random_inputs, random_keys, reference,
};

fn sim_sums<T: SumElement>(sizes: &[usize], rungs: &[ReduceRung]) {
    let dev = Device::sim();
    for &n in sizes {
        for &rung in rungs {
            let c = check::<T>(&dev, rung, n, 1000 + n as u64).unwrap();
            assert!(
                c.ok(),
                "{} {rung:?} n={n}: error {:e} > bound {:e}",
                T::NAME,
                c.err,
                c.bound
            );
            if T::UNIT_ROUNDOFF == 0.0 {
                assert_eq!(
                    c.got,
                    c.reference.sum,
                    "{} {rung:?} n={n}: integer sums are exact",
                    T::NAME
                );
            }
        }
    }
}

#[test]
fn simulator_sums_every_rung_within_the_bound_f32() {
    sim_sums::<f32>(&[1, 33, 4097], &ReduceRung::ALL);
    sim_sums::<f32>(&[100_003], &[ReduceRung::GridStride, ReduceRung::Tree]);
}

#[test]
fn simulator_sums_every_rung_within_the_bound_f64() {
    sim_sums::<f64>(&[5, 4097], &ReduceRung::ALL);
    sim_sums::<f64>(&[100_003], &[ReduceRung::GridStride]);
}

#[test]
fn simulator_integer_sums_are_exact() {
    sim_sums::<i32>(&[2, 4097], &ReduceRung::ALL);
    sim_sums::<i32>(&[100_003], &[ReduceRung::GridStride, ReduceRung::Shuffle]);
}

#[test]
fn integer_sums_wrap_like_two_s_complement() {
    // Values near i32::MAX overflow any order of summation; wrapping keeps
    // every order equal to the exact sum modulo 2^32.
    let dev = Device::sim();
    let x: Vec<i32> = (0..4099).map(|i| i32::MAX - (i % 7)).collect();
    let want = x.iter().fold(0i32, |a, &v| a.wrapping_add(v));
    assert_eq!(cpu_sum_serial(&x), want);
    assert_eq!(cpu_sum_rayon(&x), want);
    assert_eq!(reference(&x).sum, want as f64);
    let b = dev.upload(&x).unwrap();
    for rung in ReduceRung::ALL {
        assert_eq!(p::sum(&dev, rung, &b).unwrap(), want, "{rung:?}");
    }
}

#[test]
fn the_float_bound_is_tight_for_tree_rungs_and_holds_on_the_cpu() {
    // Depth of the multi-pass rungs is log2-like, so their bound is small.
    let dev = Device::sim();
    let n = 100_003;
    let plan = SumPlan::<f32>::new(&dev, ReduceRung::Tree, n).unwrap();
    assert!(plan.depth() <= 30.0, "depth {}", plan.depth());
    let x = random_inputs::<f32>(n, 5);
    let r = reference(&x);
    let tight = p::sum_bound::<f32>(plan.depth(), n, &r);
    assert!(
        tight / r.abs_sum < 2e-6,
        "relative bound {}",
        tight / r.abs_sum
    );
    // The sequential CPU sum has depth n - 1 and must satisfy its own bound.
    let serial = cpu_sum_serial(&x) as f64;
    assert!((serial - r.sum).abs() <= p::sum_bound::<f32>(n as f64, n, &r));
    let par = cpu_sum_rayon(&x) as f64;
    assert!((par - r.sum).abs() <= p::sum_bound::<f32>(n as f64, n, &r));
    // A wrong sum (one element missing) is caught by the tree bound.
    let wrong = r.sum - x[17] as f64;
    assert!(
        (wrong - r.sum).abs() > tight,
        "a missing element must exceed the bound"
    );
}

#[test]
fn simulator_histograms_are_exact() {
    let dev = Device::sim();
    for rung in HistRung::ALL {
        for (n, bins) in [(1usize, 256u32), (4097, 256), (100_003, 256), (4099, 2)] {
            let keys = random_keys::<u8>(n, n as u64);
            assert_eq!(
                check_histogram(&dev, rung, &keys, bins).unwrap(),
                0,
                "u8 {rung:?} n={n} bins={bins}"
            );
        }
        for (n, bins) in [(3usize, 256u32), (4097, 256), (100_003, 1024), (5000, 1)] {
            let keys = random_keys::<u32>(n, n as u64);
            assert_eq!(
                check_histogram(&dev, rung, &keys, bins).unwrap(),
                0,
                "u32 {rung:?} n={n} bins={bins}"
            );
        }
        // Worst contention: every key in one bin.
        let same = vec![7u8; 20_001];
        let b = dev.upload(&same).unwrap();
        let h = p::histogram(&dev, rung, &b, 256).unwrap();
        assert_eq!(h[7], 20_001);
        assert_eq!(h.iter().map(|&c| c as u64).sum::<u64>(), 20_001);
    }
}

#[test]
fn cpu_histogram_baselines_agree() {
    let keys = random_keys::<u32>(300_001, 3);
    assert_eq!(
        cpu_histogram_serial(&keys, 256),
        cpu_histogram_rayon(&keys, 256)
    );
    let total: u64 = cpu_histogram_serial(&keys, 64)
        .iter()
        .map(|&c| c as u64)
        .sum();
    assert_eq!(total, 300_001);
}

#[test]
fn monte_carlo_counts_are_identical_on_the_simulator_and_the_cpu() {
    let dev = Device::sim();
    for (samples, seed) in [(1u64, 3u64), (255, 4), (40_009, 5)] {
        let sim = pi_hits(&dev, PiLayout::SIM, samples, seed).unwrap();
        let cpu = cpu_pi_serial(PiLayout::SIM, samples, seed).unwrap();
        assert_eq!(sim, cpu, "samples {samples} seed {seed}");
        assert_eq!(cpu_pi_rayon(PiLayout::SIM, samples, seed).unwrap(), cpu);
    }
    // Another seed gives another count (different streams).
    let a = cpu_pi_serial(PiLayout::SIM, 100_000, 1).unwrap();
    let b = cpu_pi_serial(PiLayout::SIM, 100_000, 2).unwrap();
    assert_ne!(a, b);
}

#[test]
fn monte_carlo_estimate_converges_and_streams_differ() {
    use kernels_gpu::montecarlo::{Xoroshiro128Plus, splitmix64};
    // The kernel's SplitMix64 is the host's.
    let mut z = 12345u64;
    let mut h = ptxlab::rng::SplitMix64(12345);
    for _ in 0..4 {
        assert_eq!(splitmix64(&mut z), h.next_u64());
    }
    // Neighbouring threads get unrelated streams (the material's bug: one
    // seed for every thread gives identical streams).
    let mut a = Xoroshiro128Plus::seeded(1, 0);
    let mut b = Xoroshiro128Plus::seeded(1, 1);
    let sa: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
    let sb: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
    assert!(sa.iter().all(|v| !sb.contains(v)));
    // 4e6 samples: |estimate - pi| is a few times 4 sqrt(p(1-p)/N) ~ 8e-4 at most.
    let layout = PiLayout {
        blocks: 64,
        block: 256,
    };
    let n = 4_000_000;
    let est = p::estimate(cpu_pi_rayon(layout, n, 7).unwrap(), n);
    assert!(
        (est - std::f64::consts::PI).abs() < 5.0 * 8.2e-4,
        "estimate {est}"
    );
}

#[test]
fn known_xoroshiro_sequence() {
    // xoroshiro128+ reference values for the state (1, 2): r = s0 + s1.
    let mut g = kernels_gpu::montecarlo::Xoroshiro128Plus { s0: 1, s1: 2 };
    assert_eq!(g.next_u64(), 3);
    // s1 ^= s0 -> 3; s0 = rotl(1, 24) ^ 3 ^ (3 << 16); s1 = rotl(3, 37).
    assert_eq!(g.s0, (1u64 << 24) ^ 3 ^ (3 << 16));
    assert_eq!(g.s1, 3u64.rotate_left(37));
    assert_eq!(
        g.next_u64(),
        ((1u64 << 24) ^ 3 ^ (3 << 16)).wrapping_add(3u64.rotate_left(37))
    );
}

#[test]
fn bad_input_is_a_clear_error() {
    let dev = Device::sim();
    let empty = dev.upload::<f32>(&[]).unwrap();
    let e = p::sum(&dev, ReduceRung::GridStride, &empty)
        .unwrap_err()
        .to_string();
    assert!(e.contains("the input is empty (n = 0)"), "{e}");
    let e = SumPlan::<i32>::new(&dev, ReduceRung::Tree, 0)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("the input is empty"), "{e}");

    let keys = dev.upload(&[1u8, 2, 3]).unwrap();
    let e = p::histogram(&dev, HistRung::Shared, &keys, 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("0 bins") && e.contains("power of two"), "{e}");
    let e = p::histogram(&dev, HistRung::Global, &keys, 300)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("300 bins") && e.contains("from 1 to 256 for u8 keys"),
        "{e}"
    );
    let k32 = dev.upload(&[1u32]).unwrap();
    let e = p::histogram(&dev, HistRung::Shared, &k32, 1 << 20)
        .unwrap_err()
        .to_string();
    assert!(e.contains("from 1 to 8192 for u32 keys"), "{e}");
    let no_keys = dev.upload::<u8>(&[]).unwrap();
    let e = p::histogram(&dev, HistRung::Shared, &no_keys, 256)
        .unwrap_err()
        .to_string();
    assert!(e.contains("the input is empty (0 keys)"), "{e}");

    let e = pi_hits(&dev, PiLayout::SIM, 0, 1).unwrap_err().to_string();
    assert!(e.contains("0 samples; give at least 1"), "{e}");
    let e = cpu_pi_serial(PiLayout::SIM, u64::MAX, 1)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("per thread; at most 4294967295 per thread"),
        "{e}"
    );

    assert_eq!(p::parse_count("1e9").unwrap(), 1_000_000_000);
    assert_eq!(p::parse_count("12345").unwrap(), 12345);
    let e = p::parse_count("1.5").unwrap_err();
    assert!(e.contains("not a whole non-negative count"), "{e}");
}

#[test]
fn the_cli_rejects_bad_input_with_clear_errors() {
    let a = p::ReduceArgs {
        n: 0,
        precision: p::SumPrecision::F32,
        variant: ptxlab::cli::OneOrAll::One(p::ReduceRung::GridStride),
        backend: ptxlab::Backend::Cpu,
        reps: 1,
        seed: 1,
        input: None,
        json: false,
    };
    let e = p::cli_reduce(&a).unwrap_err().to_string();
    assert!(e.contains("0 elements; the input is empty"), "{e}");
    let h = p::HistogramArgs {
        n: 100,
        keys: p::KeyType::U8,
        bins: 0,
        variant: ptxlab::cli::OneOrAll::One(p::HistRung::Shared),
        backend: ptxlab::Backend::Cpu,
        reps: 1,
        seed: 1,
        input: None,
        out: None,
        json: false,
    };
    let e = p::cli_histogram(&h).unwrap_err().to_string();
    assert!(e.contains("--bins") && e.contains("0 bins"), "{e}");
    let pi = p::PiArgs {
        n: 0,
        seed: 1,
        blocks: Some(4),
        backend: ptxlab::Backend::Cpu,
        reps: 1,
        json: false,
    };
    let e = p::cli_pi(&pi).unwrap_err().to_string();
    assert!(e.contains("0 samples"), "{e}");
}

#[test]
fn sim_check_passes() {
    let t = std::time::Instant::now();
    p::sim_check().unwrap();
    println!("primitives sim_check in {:.1} s", t.elapsed().as_secs_f64());
}

#[test]
fn gpu_sums_within_bounds_at_large_and_odd_sizes() {
    let Some(dev) = gpu_or_skip() else { return };
    for n in [1usize, 4097, 100_003, (1 << 24) + 3] {
        for rung in ReduceRung::ALL {
            let c = check::<f32>(&dev, rung, n, 21).unwrap();
            assert!(c.ok(), "f32 {rung:?} n={n}: {c:?}");
            let c = check::<f64>(&dev, rung, n, 22).unwrap();
            assert!(c.ok(), "f64 {rung:?} n={n}: {c:?}");
            let c = check::<i32>(&dev, rung, n, 23).unwrap();
            assert!(c.ok() && c.err == 0.0, "i32 {rung:?} n={n}: {c:?}");
        }
    }
    let c = check::<f32>(&dev, ReduceRung::GridStride, 1 << 28, 24).unwrap();
    assert!(c.ok(), "f32 gridstride 2^28: {c:?}");
}

#[test]
fn gpu_histograms_are_exact() {
    let Some(dev) = gpu_or_skip() else { return };
    for rung in HistRung::ALL {
        for n in [1usize, 4097, (1 << 24) + 5] {
            let keys = random_keys::<u8>(n, 8);
            assert_eq!(
                check_histogram(&dev, rung, &keys, 256).unwrap(),
                0,
                "u8 {rung:?} n={n}"
            );
            let keys = random_keys::<u32>(n, 9);
            assert_eq!(
                check_histogram(&dev, rung, &keys, 256).unwrap(),
                0,
                "u32 {rung:?} n={n}"
            );
            assert_eq!(
                check_histogram(&dev, rung, &keys, 8192).unwrap(),
                0,
                "u32 8192 bins {rung:?} n={n}"
            );
        }
    }
}

#[test]
fn gpu_monte_carlo_equals_the_cpu_for_the_same_seed() {
    let Some(dev) = gpu_or_skip() else { return };
    for (samples, seed) in [(1u64, 1u64), (1_000_003, 2), (100_000_000, 3)] {
        let g = pi_hits(&dev, PiLayout::DEFAULT, samples, seed).unwrap();
        let c = cpu_pi_rayon(PiLayout::DEFAULT, samples, seed).unwrap();
        assert_eq!(g, c, "samples {samples} seed {seed}");
    }
    let n = 1_000_000_000;
    let est = p::estimate(pi_hits(&dev, PiLayout::DEFAULT, n, 4).unwrap(), n);
    assert!((est - std::f64::consts::PI).abs() < 3e-4, "estimate {est}");
}
