//! The cluster-wide sum (`kernels_gpu::cluster`): launchers, the launch
//! shape, and the f64 reference. Block 0 of each thread-block cluster
//! gathers its peers' block sums over distributed shared memory, so the
//! kernel writes one sum per cluster.

use crate::error::{Error, Result};
use crate::launch;
use crate::runtime::{Device, LaunchConfig};
use kernels_gpu::cluster as k;

/// Largest `n` the kernel takes (its index is a `u32`).
pub const MAX_LEN: usize = u32::MAX as usize;

/// Clusters the sum of `n` elements needs with `cluster` blocks per
/// cluster: one block per [`k::CLUSTER_SUM_PER_BLOCK`] elements, rounded up
/// to whole clusters.
pub fn clusters(n: usize, cluster: u32) -> usize {
    n.div_ceil(k::CLUSTER_SUM_PER_BLOCK)
        .div_ceil(cluster.max(1) as usize)
}

/// The launch of the cluster sum of `n` elements in clusters of `cluster`
/// blocks (along x). A cluster the device cannot run (0 blocks, more than
/// its limit, a device without clusters) is refused by the launch itself
/// with an error naming the limit.
pub fn config(n: usize, cluster: u32) -> Result<LaunchConfig> {
    if n == 0 || n > MAX_LEN {
        return Err(Error::input(
            "cluster sum length",
            format!("{n} elements; allowed: 1..={MAX_LEN}"),
        ));
    }
    let blocks = clusters(n, cluster) * cluster.max(1) as usize;
    Ok(LaunchConfig::for_threads(
        blocks * k::CLUSTER_SUM_THREADS as usize,
        k::CLUSTER_SUM_THREADS,
    )?
    .with_shared(k::cluster_sum_shared_bytes())
    .with_cluster(cluster, 1, 1))
}

/// The sum of each cluster's slice of `x`, in f64: the reference of
/// [`run`].
pub fn reference(x: &[f32], cluster: u32) -> Vec<f64> {
    let per = k::CLUSTER_SUM_PER_BLOCK * cluster.max(1) as usize;
    x.chunks(per)
        .map(|c| c.iter().map(|&v| v as f64).sum())
        .collect()
}

/// Runs `cluster_sum_f32` on `dev` with `cfg` (from [`config`], or a
/// deliberately wrong one); the per-cluster sums, read back from an output
/// filled with NaN beforehand.
pub fn run_with(dev: &Device, x: &[f32], cfg: LaunchConfig) -> Result<Vec<f32>> {
    let cluster = cfg.cluster.map_or(1, |c| c.volume() as u32);
    let xs = dev.upload(x)?;
    let mut out = dev.alloc_filled(clusters(x.len(), cluster).max(1), f32::NAN)?;
    launch!(
        dev,
        cfg,
        cluster::cluster_sum_f32(&xs, &mut out, x.len() as u32)
    )?;
    Ok(dev.download(&out)?)
}

/// The per-cluster sums of `x` in clusters of `cluster` blocks.
pub fn run(dev: &Device, x: &[f32], cluster: u32) -> Result<Vec<f32>> {
    run_with(dev, x, config(x.len(), cluster)?)
}

/// Checks `got` against [`reference()`]: each sum within `1e-5` of the sum
/// of the absolute values of its slice (f32 rounding over at most 8192
/// terms); the first mismatch, or a NaN left in the output, is an error.
pub fn check(x: &[f32], cluster: u32, got: &[f32]) -> Result<()> {
    let want = reference(x, cluster);
    let per = k::CLUSTER_SUM_PER_BLOCK * cluster.max(1) as usize;
    if got.len() != want.len() {
        return Err(Error::Verification {
            what: "cluster sum".into(),
            detail: format!("{} sums for {} clusters", got.len(), want.len()),
        });
    }
    for (c, (g, w)) in got.iter().zip(&want).enumerate() {
        let mag: f64 = x[c * per..((c + 1) * per).min(x.len())]
            .iter()
            .map(|v| v.abs() as f64)
            .sum();
        let err = (*g as f64 - w).abs();
        if err.is_nan() || err > 1e-5 * mag + 1e-6 {
            return Err(Error::Verification {
                what: "cluster sum".into(),
                detail: format!(
                    "cluster {c}: got {g}, want {w} (tolerance {:.2e})",
                    1e-5 * mag
                ),
            });
        }
    }
    Ok(())
}

/// The simulator check of the cluster kernel: random values at an odd
/// length, clusters of 1, 2 and 3 blocks, against [`reference()`] (the output
/// starts poisoned, so a sum left unwritten fails).
pub fn sim_check() -> Result<()> {
    let dev = Device::sim();
    let mut rng = crate::rng::SplitMix64(0x005e_edc1);
    let n = 3 * k::CLUSTER_SUM_PER_BLOCK + 77;
    let x: Vec<f32> = (0..n).map(|_| rng.uniform(-1.0, 1.0) as f32).collect();
    for cluster in [1, 2, 3] {
        check(&x, cluster, &run(&dev, &x, cluster)?)?;
    }
    Ok(())
}
