//! The histogram rungs (global atomics, privatised shared-memory bins), the
//! key types and the typed launcher.

use super::{block_for, fill_grid};
use kernels_gpu::histogram::{self as hk, Key};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::{Buffer, Device, LaunchConfig};
/// The histogram rungs (`--variant`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HistRung {
    /// One global atomic per key.
    Global,
    /// Privatised shared-memory bins per block.
    Shared,
}

impl HistRung {
    /// Both rungs in order.
    pub const ALL: [HistRung; 2] = [HistRung::Global, HistRung::Shared];
    /// Label for reports.
    pub fn label(&self) -> &'static str {
        match self {
            HistRung::Global => "1 global atomics",
            HistRung::Shared => "2 shared-memory privatised bins",
        }
    }
    /// The PTX entry of the rung's kernel for key type `K` (for reports).
    pub fn entry<K: HistKey>(&self) -> &'static str {
        match self {
            HistRung::Global => <K as hk::histogram_global::Built>::ENTRY,
            HistRung::Shared => <K as hk::histogram_shared::Built>::ENTRY,
        }
    }
}

/// Key types of the histogram kernels: `u8` and `u32`, for which both rungs
/// were built.
pub trait HistKey:
    Key
    + ptxlab_common::runtime::Element
    + Send
    + Sync
    + Copy
    + Default
    + ndarray_npy::ReadableElement
    + hk::histogram_global::Built
    + hk::histogram_shared::Built
    + 'static
{
    /// `u8` / `u32`.
    const NAME: &'static str;
    /// Largest bin count for this key type.
    const MAX_BINS: u32;
    /// A key from 64 random bits.
    fn from_bits(b: u64) -> Self;
}

impl HistKey for u8 {
    const NAME: &'static str = "u8";
    const MAX_BINS: u32 = 256;
    fn from_bits(b: u64) -> Self {
        (b >> 32) as u8
    }
}

impl HistKey for u32 {
    const NAME: &'static str = "u32";
    const MAX_BINS: u32 = hk::MAX_BINS;
    fn from_bits(b: u64) -> Self {
        (b >> 32) as u32
    }
}

/// Launches `rung` over `keys` into `hist[offset .. offset + bins]`.
pub fn launch_rung<K: HistKey>(
    dev: &Device,
    cfg: LaunchConfig,
    rung: HistRung,
    keys: &Buffer<K>,
    hist: &mut Buffer<u32>,
    (bins, offset): (u32, u32),
) -> Result<()> {
    match rung {
        HistRung::Global => launch!(
            dev,
            cfg,
            histogram::histogram_global::<K>(keys, hist, bins, offset)
        ),
        HistRung::Shared => launch!(
            dev,
            cfg,
            histogram::histogram_shared::<K>(keys, hist, bins, offset)
        ),
    }
}

/// Checks a bin count for key type `K`: a power of two in `1..=K::MAX_BINS`.
pub fn validate_bins<K: HistKey>(bins: u32) -> Result<()> {
    if bins == 0 || bins > K::MAX_BINS || !bins.is_power_of_two() {
        return Err(Error::input(
            "--bins",
            format!(
                "{bins} bins; allowed: a power of two from 1 to {} for {} keys (bin = key & (bins - 1))",
                K::MAX_BINS,
                K::NAME
            ),
        ));
    }
    Ok(())
}

/// Adds the histogram of `keys` into `hist[offset .. offset + bins]` (which
/// must be zero before the call for a plain histogram).
pub fn histogram_into<K: HistKey>(
    dev: &Device,
    rung: HistRung,
    keys: &Buffer<K>,
    hist: &mut Buffer<u32>,
    bins: u32,
    offset: usize,
) -> Result<()> {
    if keys.is_empty() {
        return Err(Error::input(
            "histogram",
            "the input is empty (0 keys); give at least one key",
        ));
    }
    validate_bins::<K>(bins)?;
    if keys.len() > MAX_KEYS {
        return Err(Error::input(
            "histogram",
            format!(
                "{} keys; at most {MAX_KEYS} (the counters are u32 and would wrap): split the input",
                keys.len()
            ),
        ));
    }
    let end = offset.checked_add(bins as usize);
    if end.is_none_or(|e| e > hist.len()) || offset > u32::MAX as usize {
        return Err(Error::input(
            "histogram",
            format!(
                "bins {offset}..{offset}+{bins} do not fit in the output of {} counters",
                hist.len()
            ),
        ));
    }
    let block = block_for(dev, hk::BLOCK);
    let groups = keys.len().div_ceil(K::PER_GROUP);
    let grid = fill_grid(dev, block)
        .min(groups.div_ceil(block as usize) as u32)
        .max(1);
    let mut cfg = LaunchConfig::for_threads(grid as usize * block as usize, block)?;
    if rung == HistRung::Shared {
        cfg = cfg.with_shared(hk::histogram_shared_bytes(bins));
    }
    launch_rung(dev, cfg, rung, keys, hist, (bins, offset as u32))
}

/// The histogram of `keys` on `dev` by `rung`.
pub fn histogram<K: HistKey>(
    dev: &Device,
    rung: HistRung,
    keys: &Buffer<K>,
    bins: u32,
) -> Result<Vec<u32>> {
    validate_bins::<K>(bins)?;
    let mut hist = dev.alloc_filled(bins as usize, 0u32)?;
    histogram_into(dev, rung, keys, &mut hist, bins, 0)?;
    Ok(dev.download(&hist)?)
}

/// Most keys of one histogram: every count must fit its u32 counter.
pub const MAX_KEYS: usize = u32::MAX as usize;
