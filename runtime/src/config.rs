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
}

impl Limits {
    /// The simulator's limits (those of a Hopper GPU).
    pub const SIM: Limits = Limits {
        max_threads_per_block: sim::MAX_THREADS_PER_BLOCK,
        max_block: Dim3::new(1024, 1024, 64),
        max_grid: Dim3::new(i32::MAX as u32, 65535, 65535),
        max_shared_optin: sim::MAX_SHARED_BYTES,
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
