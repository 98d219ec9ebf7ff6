//! Launch shapes and the checks every launch goes through, on both
//! backends: the device's limits and the kernel's own `launch_bounds`.

use crate::error::{Error, Result};
use crate::module::ModuleKey;
use ptxlab_device::Dim3;
use ptxlab_device::sim;

/// Grid, block, dynamic shared memory and module of one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks.
    pub grid: Dim3,
    /// Threads per block.
    pub block: Dim3,
    /// Dynamic shared memory per block, bytes.
    pub shared_bytes: usize,
    /// Which module the kernel comes from (GPU only).
    pub module: ModuleKey,
    /// Thread-block clusters: blocks per cluster in each dimension, or
    /// `None` for a launch without clusters (see [`LaunchConfig::with_cluster`]).
    pub cluster: Option<Dim3>,
}

impl LaunchConfig {
    /// A 1D launch covering `threads` threads with `block` threads per block.
    pub fn for_threads(threads: usize, block: u32) -> Result<Self> {
        if block == 0 {
            return Err(Error::input(
                "block size",
                "0 threads per block; use 32..=1024",
            ));
        }
        if threads == 0 {
            return Err(Error::input(
                "launch size",
                "0 threads requested; the problem is empty",
            ));
        }
        let blocks = threads.div_ceil(block as usize);
        if blocks > i32::MAX as usize {
            return Err(Error::input(
                "launch size",
                format!(
                    "{threads} threads need {blocks} blocks of {block}; at most {} blocks",
                    i32::MAX
                ),
            ));
        }
        Ok(Self {
            grid: Dim3::x(blocks as u32),
            block: Dim3::x(block),
            shared_bytes: 0,
            module: ModuleKey::default(),
            cluster: None,
        })
    }
    /// A 2D launch covering `nx` x `ny` threads with `bx` x `by` blocks.
    pub fn for_2d(nx: usize, ny: usize, bx: u32, by: u32) -> Result<Self> {
        if nx == 0 || ny == 0 || bx == 0 || by == 0 {
            return Err(Error::input(
                "launch size",
                format!("{nx}x{ny} threads in {bx}x{by} blocks: no dimension may be 0"),
            ));
        }
        let gx = nx.div_ceil(bx as usize);
        let gy = ny.div_ceil(by as usize);
        if gx > i32::MAX as usize || gy > 65535 {
            return Err(Error::input(
                "launch size",
                format!("grid {gx}x{gy}: x is limited to 2^31-1 and y to 65535"),
            ));
        }
        Ok(Self {
            grid: Dim3::xy(gx as u32, gy as u32),
            block: Dim3::xy(bx, by),
            shared_bytes: 0,
            module: ModuleKey::default(),
            cluster: None,
        })
    }
    /// The same launch with `bytes` of dynamic shared memory.
    pub fn with_shared(mut self, bytes: usize) -> Self {
        self.shared_bytes = bytes;
        self
    }
    /// The same launch from another module.
    pub fn with_module(mut self, module: ModuleKey) -> Self {
        self.module = module;
        self
    }
    /// The same launch in thread-block clusters of `x` x `y` x `z` blocks
    /// (sm_90 and newer; see `ptxlab_device::cluster`): the blocks of a
    /// cluster run at the same time on one GPC, can read and write each
    /// other's shared memory and meet at the cluster barrier. Every launch
    /// checks that the device has clusters, that the cluster has at most
    /// [`Limits::max_cluster_blocks`] blocks (8, the portable size) and
    /// that each grid dimension is a multiple of the cluster's; on a GPU
    /// the launch goes through `cuLaunchKernelEx` with the cluster
    /// dimension attribute.
    pub fn with_cluster(mut self, x: u32, y: u32, z: u32) -> Self {
        self.cluster = Some(Dim3::new(x, y, z));
        self
    }
}

/// Limits a launch is checked against.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Threads per block.
    pub max_threads_per_block: u32,
    /// Block dimension limits.
    pub max_block: Dim3,
    /// Grid dimension limits.
    pub max_grid: Dim3,
    /// Dynamic shared memory per block with opt-in.
    pub max_shared_optin: usize,
    /// Blocks per thread-block cluster (the portable size, 8, on sm_90
    /// and newer); 0 on a device without clusters.
    pub max_cluster_blocks: u32,
}

impl Limits {
    /// The simulator's limits (those of a Hopper GPU).
    pub const SIM: Limits = Limits {
        max_threads_per_block: sim::MAX_THREADS_PER_BLOCK,
        max_block: Dim3::new(1024, 1024, 64),
        max_grid: Dim3::new(i32::MAX as u32, 65535, 65535),
        max_shared_optin: sim::MAX_SHARED_BYTES,
        max_cluster_blocks: sim::cluster::MAX_CLUSTER_BLOCKS,
    };
}

/// Checks a launch against the device limits and the kernel's own
/// `launch_bounds`. Shared by both backends, so the simulator rejects what the
/// GPU would.
pub fn check_launch(kernel: &str, cfg: &LaunchConfig, lim: &Limits) -> Result<()> {
    let bad = |what: &str, value: String, limit: String| Error::Launch {
        kernel: kernel.to_string(),
        what: what.to_string(),
        value,
        limit,
    };
    let (b, g) = (cfg.block, cfg.grid);
    if b.x == 0 || b.y == 0 || b.z == 0 {
        return Err(bad(
            "the block",
            b.to_string(),
            "every dimension must be at least 1".into(),
        ));
    }
    if g.x == 0 || g.y == 0 || g.z == 0 {
        return Err(bad(
            "the grid",
            g.to_string(),
            "every dimension must be at least 1".into(),
        ));
    }
    if b.volume() > lim.max_threads_per_block as u64 {
        return Err(bad(
            "the block size",
            format!("{} threads {b}", b.volume()),
            format!(
                "this device allows at most {} threads per block",
                lim.max_threads_per_block
            ),
        ));
    }
    if b.x > lim.max_block.x || b.y > lim.max_block.y || b.z > lim.max_block.z {
        return Err(bad(
            "the block",
            b.to_string(),
            format!("each dimension is limited to {}", lim.max_block),
        ));
    }
    if g.x > lim.max_grid.x || g.y > lim.max_grid.y || g.z > lim.max_grid.z {
        return Err(bad(
            "the grid",
            g.to_string(),
            format!("each dimension is limited to {}", lim.max_grid),
        ));
    }
    if let Some(info) = ptxlab_device::kernel_info(kernel)
        && info.max_threads > 0
        && b.volume() > info.max_threads as u64
    {
        return Err(bad(
            "the block size",
            format!("{} threads", b.volume()),
            format!(
                "the kernel declares launch_bounds({}) and cannot run larger blocks",
                info.max_threads
            ),
        ));
    }
    if let Some(c) = cfg.cluster {
        check_cluster(kernel, c, g, lim)?;
    }
    if cfg.shared_bytes > lim.max_shared_optin {
        return Err(bad(
            "the dynamic shared memory",
            format!("{} bytes", cfg.shared_bytes),
            format!(
                "this device allows at most {} bytes per block",
                lim.max_shared_optin
            ),
        ));
    }
    Ok(())
}

/// The cluster checks of [`check_launch`]: the device has clusters, the
/// cluster fits its limit, and the grid is a whole number of clusters.
fn check_cluster(kernel: &str, c: Dim3, g: Dim3, lim: &Limits) -> Result<()> {
    let bad = |value: String, limit: String| Error::Launch {
        kernel: kernel.to_string(),
        what: "the cluster".to_string(),
        value,
        limit,
    };
    if lim.max_cluster_blocks == 0 {
        return Err(bad(
            c.to_string(),
            "this device has no thread-block clusters: they need compute capability 9.0 \
             (sm_90) or newer; launch without with_cluster"
                .into(),
        ));
    }
    if c.x == 0 || c.y == 0 || c.z == 0 {
        return Err(bad(
            c.to_string(),
            "every dimension must be at least 1".into(),
        ));
    }
    if c.volume() > lim.max_cluster_blocks as u64 {
        return Err(bad(
            format!("{} blocks {c}", c.volume()),
            format!(
                "this device allows at most {} blocks per cluster (the portable cluster size)",
                lim.max_cluster_blocks
            ),
        ));
    }
    if !g.x.is_multiple_of(c.x) || !g.y.is_multiple_of(c.y) || !g.z.is_multiple_of(c.z) {
        return Err(bad(
            format!("{c} for grid {g}"),
            "each grid dimension must be a multiple of the cluster's".into(),
        ));
    }
    Ok(())
}
