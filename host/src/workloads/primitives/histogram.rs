//! The histogram rungs (global atomics, privatised shared-memory bins), the
//! key types and the launchers.

use super::{block_for, fill_grid};
use crate::error::{Error, Result};
use crate::launch;
use crate::runtime::{Buffer, Device, LaunchConfig};
use cudarc::driver::DeviceRepr;
use kernels_gpu::histogram::{self as hk, Key};
/// The histogram rungs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
}

impl std::str::FromStr for HistRung {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "global" => Ok(HistRung::Global),
            "shared" => Ok(HistRung::Shared),
            _ => Err(Error::input(
                "--variant",
                format!("`{s}`; allowed: global, shared, all"),
            )),
        }
    }
}

/// Key types of the histogram kernels.
pub trait HistKey:
    Key + DeviceRepr + Send + Sync + Copy + Default + ndarray_npy::ReadableElement + 'static
{
    /// `u8` / `u32`.
    const NAME: &'static str;
    /// Largest bin count for this key type.
    const MAX_BINS: u32;
    /// Kernel name of `rung`.
    fn kernel(rung: HistRung) -> &'static str;
    /// Launches `rung`.
    fn launch(
        dev: &Device,
        cfg: LaunchConfig,
        rung: HistRung,
        keys: &Buffer<Self>,
        hist: &mut Buffer<u32>,
        bins: u32,
        offset: u32,
    ) -> Result<()>;
    /// A key from 64 random bits.
    fn from_bits(b: u64) -> Self;
}

macro_rules! hist_key {
    ($t:ty, $name:literal, $max:expr, $global:ident, $shared:ident) => {
        impl HistKey for $t {
            const NAME: &'static str = $name;
            const MAX_BINS: u32 = $max;
            fn kernel(rung: HistRung) -> &'static str {
                match rung {
                    HistRung::Global => stringify!($global),
                    HistRung::Shared => stringify!($shared),
                }
            }
            fn launch(
                dev: &Device,
                cfg: LaunchConfig,
                rung: HistRung,
                keys: &Buffer<$t>,
                hist: &mut Buffer<u32>,
                bins: u32,
                offset: u32,
            ) -> Result<()> {
                match rung {
                    HistRung::Global => {
                        launch!(dev, cfg, histogram::$global(keys, hist, bins, offset))
                    }
                    HistRung::Shared => {
                        launch!(dev, cfg, histogram::$shared(keys, hist, bins, offset))
                    }
                }
            }
            fn from_bits(b: u64) -> Self {
                (b >> 32) as $t
            }
        }
    };
}
hist_key!(u8, "u8", 256, histogram_global_u8, histogram_shared_u8);
hist_key!(
    u32,
    "u32",
    hk::MAX_BINS,
    histogram_global_u32,
    histogram_shared_u32
);

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
    K::launch(dev, cfg, rung, keys, hist, bins, offset as u32)
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
