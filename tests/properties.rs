//! Property-based tests: random shapes through the CPU and simulator paths
//! must either give the CPU's answer or a clear error, never a panic or a
//! silently truncated result.

use proptest::prelude::*;
use ptxlab::runtime::{Device, KernelArg, LaunchConfig, check_launch, sim_launch};
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
        let o = (&mut out).sim_value();
        sim_launch("p_index_2d", &cfg, || p_index_2d(o, nx, ny)).unwrap();
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
