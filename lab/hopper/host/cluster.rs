//! The cluster kernels (`kernels_gpu::cluster`): launchers, launch
//! shapes, and f64 references.
//!
//! * The cluster-wide sum: block 0 of each thread-block cluster gathers its
//!   peers' block sums over distributed shared memory, so the kernel writes
//!   one sum per cluster ([`run`]).
//! * The multicast matrix-vector product: `c` vectors times one shared
//!   matrix, the blocks of a cluster of `c` sharing every tile of the
//!   matrix through TMA multicast ([`multicast_run`]).

use kernels_gpu::cluster as k;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::{Buffer, Device, LaunchConfig, TensorMap};
use ptxlab_device::hopper::Swizzle;

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

/// Cluster sizes the multicast matrix-vector product takes (each block
/// loads `32 / c` rows of every 32 x 32 tile).
pub const MULTICAST_CLUSTERS: [u32; 4] = [1, 2, 4, 8];

/// The launch of the multicast matrix-vector product of an `m x k` matrix
/// with clusters of `c` blocks (one vector per block of a cluster): `c`
/// blocks per 32 rows, [`k::MC_THREADS`] threads each.
pub fn multicast_config(m: usize, k_len: usize, c: u32) -> Result<LaunchConfig> {
    if !MULTICAST_CLUSTERS.contains(&c) {
        return Err(Error::input(
            "multicast matvec cluster size",
            format!("{c} blocks; allowed: 1, 2, 4 or 8"),
        ));
    }
    if m == 0 || k_len == 0 || m > u32::MAX as usize / 8 || k_len > u32::MAX as usize / 8 {
        return Err(Error::input(
            "multicast matvec shape",
            format!(
                "a {m}x{k_len} matrix; both sides must be in 1..={}",
                u32::MAX / 8
            ),
        ));
    }
    let blocks = m.div_ceil(k::MC_TILE) * c as usize;
    Ok(
        LaunchConfig::for_threads(blocks * k::MC_THREADS as usize, k::MC_THREADS)?
            .with_shared(k::multicast_matvec_shared_bytes())
            .with_cluster(c, 1, 1),
    )
}

/// The buffers of one multicast matrix-vector product: the matrix (rows
/// padded to a multiple of 4 elements, as TMA needs 16-byte rows), its
/// tensor map's buffer, the `c` vectors, and the `c` results (NaN).
pub struct MulticastBuffers {
    /// The matrix, rows `pitch` elements apart.
    pub a: Buffer<f32>,
    /// The vectors, one after the other.
    pub x: Buffer<f32>,
    /// The results, one after the other, NaN until written.
    pub y: Buffer<f32>,
    /// Rows of the matrix, and columns.
    pub m: usize,
    /// Columns of the matrix (the vectors' length).
    pub k: usize,
    /// Blocks per cluster (and vectors).
    pub c: u32,
    /// Elements between the starts of consecutive rows of `a`.
    pub pitch: usize,
}

impl MulticastBuffers {
    /// Uploads `a` (`m x k`, row-major) and `x` (`c` vectors of length `k`).
    pub fn new(dev: &Device, a: &[f32], x: &[f32], m: usize, k_len: usize, c: u32) -> Result<Self> {
        if a.len() != m * k_len || x.len() != c as usize * k_len {
            return Err(Error::input(
                "multicast matvec operands",
                format!(
                    "a matrix of {} and vectors of {} elements for m {m}, k {k_len}, {c} \
                     vectors; want {} and {}",
                    a.len(),
                    x.len(),
                    m * k_len,
                    c as usize * k_len
                ),
            ));
        }
        let pitch = k_len.next_multiple_of(4);
        let mut padded = vec![0.0f32; m * pitch];
        for (r, row) in a.chunks(k_len).enumerate() {
            padded[r * pitch..r * pitch + k_len].copy_from_slice(row);
        }
        Ok(Self {
            a: dev.upload(&padded)?,
            x: dev.upload(x)?,
            y: dev.alloc_filled(c as usize * m, f32::NAN)?,
            m,
            k: k_len,
            c,
            pitch,
        })
    }

    /// The kernel's operands: the tensor map of the matrix (boxes of 32
    /// columns by `32 / c` rows), the vectors and the results.
    pub fn operands(
        &mut self,
        dev: &Device,
    ) -> Result<(TensorMap<'_>, &Buffer<f32>, &mut Buffer<f32>)> {
        let map = TensorMap::tiled_2d_pitched(
            dev,
            &self.a,
            (self.m, self.k, self.pitch),
            k::multicast_box_rows(self.c),
            k::MC_TILE as u32,
            Swizzle::None,
        )?;
        Ok((map, &self.x, &mut self.y))
    }
}

/// `y_v = A x_v` for the `c` vectors of `x` on `dev` (`A` is `m x k`
/// row-major, `x` the `c` vectors of length `k` one after the other): the
/// `c` results of length `m`, one after the other, read back from an
/// output filled with NaN beforehand.
pub fn multicast_run(
    dev: &Device,
    a: &[f32],
    x: &[f32],
    m: usize,
    k_len: usize,
    c: u32,
) -> Result<Vec<f32>> {
    let cfg = multicast_config(m, k_len, c)?;
    let mut b = MulticastBuffers::new(dev, a, x, m, k_len, c)?;
    let (mu, ku) = (m as u32, k_len as u32);
    {
        let (map, xs, ys) = b.operands(dev)?;
        launch!(
            dev,
            cfg,
            cluster::cluster_multicast_matvec_f32(map.buffer(), xs, ys, mu, ku)
        )?;
    }
    Ok(dev.download(&b.y)?)
}

/// The reference of [`multicast_run`] in f64, and for each result the sum
/// of the absolute values of its products (the scale of its rounding).
pub fn multicast_reference(
    a: &[f32],
    x: &[f32],
    m: usize,
    k_len: usize,
    c: u32,
) -> (Vec<f64>, Vec<f64>) {
    let mut want = Vec::with_capacity(c as usize * m);
    let mut mag = Vec::with_capacity(c as usize * m);
    for v in 0..c as usize {
        let xv = &x[v * k_len..(v + 1) * k_len];
        for r in 0..m {
            let row = &a[r * k_len..(r + 1) * k_len];
            want.push(row.iter().zip(xv).map(|(&p, &q)| p as f64 * q as f64).sum());
            mag.push(
                row.iter()
                    .zip(xv)
                    .map(|(&p, &q)| (p as f64 * q as f64).abs())
                    .sum(),
            );
        }
    }
    (want, mag)
}

/// Checks `got` against [`multicast_reference`]: each result within
/// `1e-5` of the sum of the absolute values of its products (f32
/// accumulation); the first mismatch, or a NaN left in the output, is an
/// error naming the vector and row.
pub fn multicast_check(
    a: &[f32],
    x: &[f32],
    m: usize,
    k_len: usize,
    c: u32,
    got: &[f32],
) -> Result<()> {
    let (want, mag) = multicast_reference(a, x, m, k_len, c);
    if got.len() != want.len() {
        return Err(Error::Verification {
            what: "multicast matvec".into(),
            detail: format!("{} results for {} vectors of {m}", got.len(), c),
        });
    }
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let err = (*g as f64 - w).abs();
        let tol = 1e-5 * mag[i] + 1e-6;
        if err.is_nan() || err > tol {
            return Err(Error::Verification {
                what: "multicast matvec".into(),
                detail: format!(
                    "vector {}, row {}: got {g}, want {w} (tolerance {tol:.2e})",
                    i / m,
                    i % m
                ),
            });
        }
    }
    Ok(())
}

/// Random operands of the multicast matrix-vector product: the `m x k`
/// matrix and `c` vectors, uniform in [-1, 1).
pub fn multicast_data(seed: u64, m: usize, k_len: usize, c: u32) -> (Vec<f32>, Vec<f32>) {
    let v = |s: u64, n: usize| -> Vec<f32> {
        ptxlab_common::rng::uniform_vec(s, n, -1.0, 1.0)
            .into_iter()
            .map(|v| v as f32)
            .collect()
    };
    (v(seed, m * k_len), v(seed + 1, c as usize * k_len))
}

/// The simulator check of the cluster kernels: the cluster sum on random
/// values at an odd length in clusters of 1, 2 and 3 blocks, against
/// [`reference()`], and the multicast matrix-vector product at odd shapes
/// in clusters of 1, 2, 4 and 8 blocks, against [`multicast_reference`]
/// (outputs start poisoned, so a result left unwritten fails).
pub fn sim_check() -> Result<()> {
    let dev = Device::sim();
    let mut rng = ptxlab_common::rng::SplitMix64(0x005e_edc1);
    let n = 3 * k::CLUSTER_SUM_PER_BLOCK + 77;
    let x: Vec<f32> = (0..n).map(|_| rng.uniform(-1.0, 1.0) as f32).collect();
    for cluster in [1, 2, 3] {
        check(&x, cluster, &run(&dev, &x, cluster)?)?;
    }
    for (c, m, k_len) in [(1, 40, 70), (2, 67, 131), (4, 45, 100), (8, 33, 97)] {
        let (a, x) = multicast_data(40 + c as u64, m, k_len, c);
        let got = multicast_run(&dev, &a, &x, m, k_len, c)?;
        multicast_check(&a, &x, m, k_len, c, &got)?;
    }
    Ok(())
}
