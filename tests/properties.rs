//! Property-based tests: random shapes through the CPU and simulator paths
//! must either give the CPU's answer or a clear error, never a panic or a
//! silently truncated result.

use proptest::prelude::*;
use ptxlab::runtime::{Device, LaunchConfig, config::check_launch, launch};
use ptxlab::workloads::vector::{self, Rung};
use ptxlab_device::prelude::*;

/// Writes, for every thread of a 2D launch, its global (x, y) into a row-major
/// nx x ny output when inside it.
#[kernel]
pub fn p_index_2d(out: DeviceSliceMut<u32>, nx: u32, ny: u32) {
    let (x, y) = thread::index_2d();
    if x < nx as usize && y < ny as usize {
        out.set(y * nx as usize + x, (y as u32) << 16 | x as u32);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn vector_add_matches_cpu_for_any_length_and_rung(n in 1usize..3000, wide in any::<bool>(), seed in any::<u64>()) {
        let rung = if wide { Rung::Wide } else { Rung::Scalar };
        let c = vector::check::<f32>(&Device::sim(), n, rung, seed).unwrap();
        prop_assert_eq!(c.mismatches, 0);
    }

    #[test]
    fn every_cell_of_a_2d_launch_is_written_once(nx in 1u32..70, ny in 1u32..40, bx in 1u32..40, by in 1u32..20) {
        let dev = Device::sim();
        let mut out = dev.alloc_filled((nx * ny) as usize, u32::MAX).unwrap();
        let cfg = LaunchConfig::for_2d(nx as usize, ny as usize, bx, by).unwrap();
        // A kernel of this test crate, on the simulator (which never reads
        // the embedded modules, so the lab's serve as the `Kernels`).
        launch!(&dev, &ptxlab::modules::KERNELS, cfg, p_index_2d(&mut out, nx, ny)).unwrap();
        let got = dev.download(&out).unwrap();
        for y in 0..ny {
            for x in 0..nx {
                prop_assert_eq!(got[(y * nx + x) as usize], y << 16 | x);
            }
        }
    }

    #[test]
    fn launch_checks_accept_exactly_the_valid_shapes(bx in 0u32..2100, by in 0u32..4, shared in 0usize..300_000) {
        let mut cfg = LaunchConfig::for_threads(1000, 32).unwrap().with_shared(shared);
        cfg.block.x = bx;
        cfg.block.y = by;
        let lim = Device::sim().limits();
        let ok = bx >= 1 && by >= 1 && bx * by <= 1024 && shared <= lim.max_shared_optin;
        match check_launch("p_index_2d", &cfg, &lim) {
            Ok(()) => prop_assert!(ok),
            Err(e) => {
                prop_assert!(!ok, "valid launch rejected: {}", e);
                let t = e.to_string();
                prop_assert!(t.contains("invalid launch of `p_index_2d`") && (t.contains("at most") || t.contains("at least 1")), "{}", t);
            }
        }
    }
}

// More workloads through the CPU and simulator paths, at random shapes.
// Sizes stay small and the case counts low, so CI stays fast.
mod workloads {
    use proptest::prelude::*;
    use ptxlab::runtime::{Device, LaunchConfig};
    use ptxlab::workloads::{diffusion, poisson, primitives};

    fn reduce_rung() -> impl Strategy<Value = primitives::ReduceRung> {
        (0usize..5).prop_map(|i| primitives::ReduceRung::ALL[i])
    }

    fn poisson_rung() -> impl Strategy<Value = poisson::Rung> {
        (0usize..4).prop_map(|i| poisson::Rung::ALL[i])
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

        #[test]
        fn reductions_stay_within_their_bound_at_any_length(
            n in 1usize..3000,
            rung in reduce_rung(),
            seed in any::<u64>(),
        ) {
            let dev = Device::sim();
            let c = primitives::check::<f32>(&dev, rung, n, seed).unwrap();
            prop_assert!(c.ok(), "f32 {:?} n={}: {:?}", rung, n, c);
            let c = primitives::check::<i32>(&dev, rung, n, seed).unwrap();
            prop_assert!(c.ok() && c.err == 0.0, "i32 {:?} n={}: {:?}", rung, n, c);
            // The CPU baselines agree with the same reference.
            let x = primitives::random_inputs::<i32>(n, seed);
            prop_assert_eq!(primitives::cpu_sum_serial(&x), primitives::cpu_sum_rayon(&x));
        }

        #[test]
        fn poisson_sweeps_match_the_f64_reference_on_odd_grids(
            hx in 1usize..20,
            hy in 1usize..15,
            rung in poisson_rung(),
            depth in 1u32..5,
            seed in any::<u64>(),
        ) {
            // Odd sizes 3..=41 x 3..=31: never a multiple of a tile.
            let grid = poisson::Grid::new(2 * hx + 1, 2 * hy + 1).unwrap();
            let case = poisson::CheckCase::new::<f32>(grid, seed, &[1, 3]);
            let e = poisson::verify::<f32>(&Device::sim(), rung, depth, &case);
            prop_assert!(e.is_ok(), "{:?} depth {} on {}: {}", rung, depth, grid.label(), e.unwrap_err());
            // The three CPU baselines give the same sweep, bit for bit.
            let (p, b) = poisson::random_inputs(grid, seed);
            let k = poisson::k_of_h(0.5);
            let mut o1 = vec![0.0; grid.cells()];
            let mut o2 = o1.clone();
            let mut o3 = o1.clone();
            poisson::cpu_sweep(&p, &b, &mut o1, grid, k);
            poisson::cpu_sweep_rayon(&p, &b, &mut o2, grid, k);
            poisson::cpu_sweep_nd(&p, &b, &mut o3, grid, k).unwrap();
            prop_assert_eq!(&o1, &o2);
            prop_assert_eq!(&o1, &o3);
        }

        #[test]
        fn histograms_are_exact_at_any_size_and_bin_count(
            n in 1usize..4000,
            log_bins in 0u32..9,
            shared in any::<bool>(),
            wide_keys in any::<bool>(),
            seed in any::<u64>(),
        ) {
            let dev = Device::sim();
            let bins = 1u32 << log_bins;
            let rung = if shared { primitives::HistRung::Shared } else { primitives::HistRung::Global };
            let bad = if wide_keys {
                let keys = primitives::random_keys::<u32>(n, seed);
                prop_assert_eq!(
                    primitives::cpu_histogram_serial(&keys, bins),
                    primitives::cpu_histogram_rayon(&keys, bins)
                );
                primitives::check_histogram(&dev, rung, &keys, bins).unwrap()
            } else {
                let keys = primitives::random_keys::<u8>(n, seed);
                primitives::check_histogram(&dev, rung, &keys, bins).unwrap()
            };
            prop_assert_eq!(bad, 0, "{:?} n={} bins={}", rung, n, bins);
        }

        #[test]
        fn monte_carlo_counts_equal_the_cpu_for_any_layout(
            blocks in 1u32..5,
            warps in 1u32..3,
            samples in 1u64..20_000,
            seed in any::<u64>(),
        ) {
            let layout = primitives::PiLayout { blocks, block: 32 * warps };
            let got = primitives::pi_hits(&Device::sim(), layout, samples, seed).unwrap();
            prop_assert_eq!(got, primitives::cpu_pi_serial(layout, samples, seed).unwrap());
            prop_assert_eq!(got, primitives::cpu_pi_rayon(layout, samples, seed).unwrap());
        }

        #[test]
        fn diffusion_matches_the_cpu_on_random_grids(
            nx in 3usize..40,
            ny in 3usize..30,
            iters in 1usize..6,
            alpha in 0.0f32..0.25,
            seed in any::<u64>(),
        ) {
            let c = diffusion::check(&Device::sim(), diffusion::Variant::Pingpong, nx, ny, iters, alpha, seed).unwrap();
            prop_assert_eq!(c.mismatches, 0, "{}x{} {} steps: {:?}", nx, ny, iters, c);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

        /// Hostile shapes through the public constructors: an error whose text
        /// names the shape and the limit, or a valid object, never a panic.
        #[test]
        fn hostile_shapes_are_refused_by_name(
            nx in prop_oneof![0usize..6, Just(usize::MAX), Just(1usize << 40)],
            ny in prop_oneof![0usize..6, Just(usize::MAX), Just(600_000usize)],
            bx in 0u32..3,
        ) {
            match poisson::Grid::new(nx, ny) {
                Ok(g) => prop_assert!(nx >= 3 && ny >= 3 && g.cells() == nx * ny),
                Err(e) => {
                    let t = e.to_string();
                    prop_assert!(t.contains(&format!("{nx}x{ny}")), "{}", t);
                    prop_assert!(t.contains("smaller than 3x3") || t.contains("at most 2147483647 cells"), "{}", t);
                }
            }
            match diffusion::check_params(nx, ny, 0.1) {
                Ok(()) => prop_assert!(nx >= 3 && ny >= 3),
                Err(e) => {
                    let t = e.to_string();
                    prop_assert!(t.contains(&format!("{nx}x{ny}")), "{}", t);
                    prop_assert!(t.contains("at least 3") || t.contains("too large"), "{}", t);
                }
            }
            match LaunchConfig::for_2d(nx, ny, bx * 16, 8) {
                Ok(c) => prop_assert!(c.grid.x >= 1 && c.grid.y <= 65535),
                Err(e) => {
                    let t = e.to_string();
                    prop_assert!(t.contains("launch size"), "{}", t);
                    prop_assert!(t.contains("no dimension may be 0") || t.contains("limited to"), "{}", t);
                }
            }
        }
    }
}
