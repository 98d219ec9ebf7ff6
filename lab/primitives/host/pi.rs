//! Monte-Carlo pi: the thread layout (which fixes the random streams), the
//! launcher and the estimate.

use super::{SIM_BLOCK, SIM_BLOCKS};
use kernels_gpu::montecarlo as mc;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::{Buffer, Device, LaunchConfig};
/// Most blocks of a Monte-Carlo layout (2^20 blocks of 256 threads).
pub const MAX_PI_BLOCKS: u32 = 1 << 20;

/// The thread layout of a Monte-Carlo run: it fixes which samples each
/// stream draws, so the same seed and layout give the same count anywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PiLayout {
    /// Blocks.
    pub blocks: u32,
    /// Threads per block (a multiple of 32, at most 256).
    pub block: u32,
}

impl PiLayout {
    /// [`mc::DEFAULT_BLOCKS`] blocks of [`mc::BLOCK`] threads.
    pub const DEFAULT: PiLayout = PiLayout {
        blocks: mc::DEFAULT_BLOCKS,
        block: mc::BLOCK,
    };
    /// A small layout for the simulator.
    pub const SIM: PiLayout = PiLayout {
        blocks: SIM_BLOCKS,
        block: SIM_BLOCK,
    };
    /// Threads (streams).
    pub fn threads(&self) -> u64 {
        self.blocks as u64 * self.block as u64
    }
    /// Checks `samples` against the layout: at least one, at most 2^32 - 1 per
    /// thread, and at most [`MAX_PI_BLOCKS`] blocks.
    pub fn validate(&self, samples: u64) -> Result<()> {
        if samples == 0 {
            return Err(Error::input("--n", "0 samples; give at least 1"));
        }
        if self.blocks > MAX_PI_BLOCKS {
            return Err(Error::input(
                "--blocks",
                format!(
                    "{} blocks; at most {MAX_PI_BLOCKS} (the default, {}, fills every SM of a large GPU)",
                    self.blocks,
                    mc::DEFAULT_BLOCKS
                ),
            ));
        }
        if self.blocks == 0
            || self.block == 0
            || !self.block.is_multiple_of(32)
            || self.block > mc::BLOCK
        {
            return Err(Error::input(
                "thread layout",
                format!(
                    "{} blocks of {} threads; need at least one block of a multiple of 32 threads, at most {}",
                    self.blocks,
                    self.block,
                    mc::BLOCK
                ),
            ));
        }
        let per = samples.div_ceil(self.threads());
        if per > u32::MAX as u64 {
            return Err(Error::input(
                "--n",
                format!(
                    "{samples} samples over {} threads is {per} per thread; at most {} per thread",
                    self.threads(),
                    u32::MAX
                ),
            ));
        }
        Ok(())
    }
}

/// Adds the hit count of `samples` samples to `hits[slot]` (zero before).
pub fn pi_into(
    dev: &Device,
    layout: PiLayout,
    samples: u64,
    seed: u64,
    hits: &mut Buffer<u64>,
    slot: usize,
) -> Result<()> {
    layout.validate(samples)?;
    if slot >= hits.len() || slot > u32::MAX as usize {
        return Err(Error::input(
            "monte-carlo-pi",
            format!(
                "slot {slot} is outside the output of {} counters",
                hits.len()
            ),
        ));
    }
    let cfg = LaunchConfig::for_threads(layout.threads() as usize, layout.block)?
        .with_shared(mc::pi_shared_bytes(layout.block));
    launch!(
        dev,
        cfg,
        montecarlo::montecarlo_pi(hits, slot as u32, seed, samples)
    )
}

/// The hit count of `samples` samples on `dev`.
pub fn pi_hits(dev: &Device, layout: PiLayout, samples: u64, seed: u64) -> Result<u64> {
    let mut hits = dev.alloc_filled(1, 0u64)?;
    pi_into(dev, layout, samples, seed, &mut hits, 0)?;
    Ok(dev.download(&hits)?[0])
}
/// `4 hits / samples`.
pub fn estimate(hits: u64, samples: u64) -> f64 {
    4.0 * hits as f64 / samples as f64
}
