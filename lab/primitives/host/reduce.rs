//! The reduction ladder: rungs, element types, the typed launcher
//! [`launch_rung`] and [`SumPlan`], which fixes the launch shapes and
//! allocates the scratch of the multi-pass rungs once.

use super::{block_for, fill_grid};
use kernels_gpu::reduce::{self as rk, SumElem};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::{Buffer, Device, LaunchConfig};
/// The rungs of the reduction ladder, in order (`--variant`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReduceRung {
    /// Shared-memory tree, one partial per block, multi-pass.
    Tree,
    /// Warp shuffles, one shared slot per warp, multi-pass.
    Shuffle,
    /// One atomic per element (the anti-pattern).
    AtomicThread,
    /// Warp sum, one atomic per warp.
    AtomicWarp,
    /// Fixed grid, 16-byte loads, one atomic per block, single pass.
    #[value(name = "gridstride")]
    GridStride,
}

impl ReduceRung {
    /// All rungs in ladder order.
    pub const ALL: [ReduceRung; 5] = [
        ReduceRung::Tree,
        ReduceRung::Shuffle,
        ReduceRung::AtomicThread,
        ReduceRung::AtomicWarp,
        ReduceRung::GridStride,
    ];
    /// Label for reports.
    pub fn label(&self) -> &'static str {
        match self {
            ReduceRung::Tree => "1 shared-memory tree (multi-pass)",
            ReduceRung::Shuffle => "2 warp shuffles (multi-pass)",
            ReduceRung::AtomicThread => "3 atomic per thread",
            ReduceRung::AtomicWarp => "4 warp-aggregated atomics",
            ReduceRung::GridStride => "5 grid-stride, 16-byte loads, 1 atomic/block",
        }
    }
    /// Name on the command line.
    pub fn name(&self) -> String {
        ptxlab_common::cli::value_name(self)
    }
    /// `true` for rungs that add into `out[slot]` (which must start at zero);
    /// the multi-pass rungs overwrite it.
    pub fn accumulates(&self) -> bool {
        !matches!(self, ReduceRung::Tree | ReduceRung::Shuffle)
    }
}

/// Element types of the reductions.
pub trait SumElement:
    SumElem
    + ptxlab_common::runtime::Element
    + Send
    + Sync
    + PartialEq
    + std::fmt::Debug
    + ndarray_npy::ReadableElement
    + rk::reduce_tree::Built
    + rk::reduce_shuffle::Built
    + rk::reduce_atomic_thread::Built
    + rk::reduce_atomic_warp::Built
    + rk::reduce_gridstride::Built
    + 'static
{
    /// `f32`, `f64`, `i32`.
    const NAME: &'static str;
    /// Unit roundoff (0 for integers: exact).
    const UNIT_ROUNDOFF: f64;
    /// Output poison for the multi-pass rungs (NaN for floats).
    const POISON: Self;
    /// The value as f64 (exact).
    fn as_f64(self) -> f64;
    /// A test input from a uniform number in [0, 1): floats in [-0.5, 1),
    /// integers in [-1000, 1000].
    fn from_unit(v: f64) -> Self;
}

impl SumElement for f32 {
    const NAME: &'static str = "f32";
    const UNIT_ROUNDOFF: f64 = 1.0 / (1u64 << 24) as f64;
    const POISON: Self = f32::NAN;
    fn as_f64(self) -> f64 {
        self as f64
    }
    fn from_unit(v: f64) -> Self {
        (1.5 * v - 0.5) as f32
    }
}

impl SumElement for f64 {
    const NAME: &'static str = "f64";
    const UNIT_ROUNDOFF: f64 = 1.0 / (1u64 << 53) as f64;
    const POISON: Self = f64::NAN;
    fn as_f64(self) -> f64 {
        self
    }
    fn from_unit(v: f64) -> Self {
        1.5 * v - 0.5
    }
}

impl SumElement for i32 {
    const NAME: &'static str = "i32";
    const UNIT_ROUNDOFF: f64 = 0.0;
    const POISON: Self = i32::MIN;
    fn as_f64(self) -> f64 {
        self as f64
    }
    fn from_unit(v: f64) -> Self {
        (v * 2001.0).floor() as i32 - 1000
    }
}

impl ReduceRung {
    /// The PTX entry of the rung's kernel for `T` (for the resource report).
    pub fn entry<T: SumElement>(&self) -> &'static str {
        match self {
            ReduceRung::Tree => <T as rk::reduce_tree::Built>::ENTRY,
            ReduceRung::Shuffle => <T as rk::reduce_shuffle::Built>::ENTRY,
            ReduceRung::AtomicThread => <T as rk::reduce_atomic_thread::Built>::ENTRY,
            ReduceRung::AtomicWarp => <T as rk::reduce_atomic_warp::Built>::ENTRY,
            ReduceRung::GridStride => <T as rk::reduce_gridstride::Built>::ENTRY,
        }
    }
}

/// Launches `rung` (`arg` is the offset or slot).
pub fn launch_rung<T: SumElement>(
    dev: &Device,
    cfg: LaunchConfig,
    rung: ReduceRung,
    x: &Buffer<T>,
    out: &mut Buffer<T>,
    arg: u32,
) -> Result<()> {
    match rung {
        ReduceRung::Tree => launch!(dev, cfg, reduce::reduce_tree::<T>(x, out, arg)),
        ReduceRung::Shuffle => launch!(dev, cfg, reduce::reduce_shuffle::<T>(x, out, arg)),
        ReduceRung::AtomicThread => {
            launch!(dev, cfg, reduce::reduce_atomic_thread::<T>(x, out, arg))
        }
        ReduceRung::AtomicWarp => launch!(dev, cfg, reduce::reduce_atomic_warp::<T>(x, out, arg)),
        ReduceRung::GridStride => launch!(dev, cfg, reduce::reduce_gridstride::<T>(x, out, arg)),
    }
}

/// A reduction of `n` elements by one rung on one device: launch shapes and
/// the scratch buffers of the multi-pass rungs, allocated once.
pub struct SumPlan<T> {
    rung: ReduceRung,
    n: usize,
    block: u32,
    grid: u32,
    /// Lengths of the intermediate partial arrays (multi-pass rungs).
    levels: Vec<usize>,
    scratch: Vec<Buffer<T>>,
}

impl<T: SumElement> SumPlan<T> {
    /// Plans `rung` over `n` elements on `dev`. `n = 0` is an input error.
    pub fn new(dev: &Device, rung: ReduceRung, n: usize) -> Result<Self> {
        if n == 0 {
            return Err(Error::input(
                "reduce",
                "the input is empty (n = 0); give at least one element",
            ));
        }
        let block = block_for(dev, rk::BLOCK);
        let per_block_vec = block as usize * T::LANES;
        let grid = fill_grid(dev, block)
            .min(n.div_ceil(per_block_vec).min(u32::MAX as usize) as u32)
            .max(1);
        let mut levels = Vec::new();
        let mut scratch = Vec::new();
        if !rung.accumulates() {
            let mut m = n.div_ceil(rk::per_block_multipass(block));
            while m > 1 {
                levels.push(m);
                scratch.push(dev.alloc_filled(m, T::POISON)?);
                m = m.div_ceil(rk::per_block_multipass(block));
            }
        }
        Ok(Self {
            rung,
            n,
            block,
            grid,
            levels,
            scratch,
        })
    }

    /// Launches per call.
    pub fn passes(&self) -> usize {
        if self.rung.accumulates() {
            1
        } else {
            self.levels.len() + 1
        }
    }

    /// Depth of the summation tree: the most additions any element goes
    /// through (the `h` of the error bound).
    pub fn depth(&self) -> f64 {
        let n = self.n as f64;
        let log2 = |v: u32| (v as f64).log2().ceil();
        match self.rung {
            // Per pass: the pair add, then log2(B) tree levels or 5 + log2(B/32) shuffle levels.
            ReduceRung::Tree | ReduceRung::Shuffle => {
                self.passes() as f64 * (1.0 + log2(self.block))
            }
            // Every atomic extends one chain through out[slot].
            ReduceRung::AtomicThread => n,
            ReduceRung::AtomicWarp => 5.0 + (n / 32.0).ceil(),
            // Per-thread chain, lanes, tail, block sum, then one atomic per block.
            ReduceRung::GridStride => {
                let threads = self.grid as f64 * self.block as f64;
                (n / threads).ceil() + 4.0 + 5.0 + log2(self.block / 32) + self.grid as f64
            }
        }
    }

    /// The launch configuration of the rung (first pass for the multi-pass rungs).
    fn config(&self, len: usize) -> Result<LaunchConfig> {
        match self.rung {
            ReduceRung::Tree => Ok(LaunchConfig::for_threads(len.div_ceil(2), self.block)?
                .with_shared(rk::tree_shared_bytes::<T>(self.block))),
            ReduceRung::Shuffle => Ok(LaunchConfig::for_threads(len.div_ceil(2), self.block)?
                .with_shared(rk::warp_slots_shared_bytes::<T>(self.block))),
            ReduceRung::AtomicThread => Ok(LaunchConfig::for_threads(len, self.block)?),
            ReduceRung::AtomicWarp => Ok(LaunchConfig::for_threads(len, self.block)?),
            ReduceRung::GridStride => Ok(LaunchConfig::for_threads(
                self.grid as usize * self.block as usize,
                self.block,
            )?
            .with_shared(rk::warp_slots_shared_bytes::<T>(self.block))),
        }
    }

    /// Sums `x` into `out[slot]`. For the atomic rungs (`rung.accumulates()`)
    /// `out[slot]` must be zero before the call; the multi-pass rungs overwrite it.
    pub fn run(
        &mut self,
        dev: &Device,
        x: &Buffer<T>,
        out: &mut Buffer<T>,
        slot: usize,
    ) -> Result<()> {
        if x.len() != self.n {
            return Err(Error::input(
                "reduce",
                format!(
                    "the plan is for {} elements but the input has {}",
                    self.n,
                    x.len()
                ),
            ));
        }
        if slot >= out.len() || slot > u32::MAX as usize {
            return Err(Error::input(
                "reduce",
                format!(
                    "slot {slot} is outside the output of {} elements",
                    out.len()
                ),
            ));
        }
        let rung = self.rung;
        if rung.accumulates() {
            return launch_rung::<T>(dev, self.config(self.n)?, rung, x, out, slot as u32);
        }
        // Multi-pass: x -> scratch[0] -> scratch[1] -> ... -> out[slot].
        let k = self.scratch.len();
        if k == 0 {
            return launch_rung::<T>(dev, self.config(self.n)?, rung, x, out, slot as u32);
        }
        launch_rung::<T>(dev, self.config(self.n)?, rung, x, &mut self.scratch[0], 0)?;
        for i in 1..k {
            let cfg = self.config(self.levels[i - 1])?;
            let (done, rest) = self.scratch.split_at_mut(i);
            launch_rung::<T>(dev, cfg, rung, &done[i - 1], &mut rest[0], 0)?;
        }
        let cfg = self.config(self.levels[k - 1])?;
        launch_rung::<T>(dev, cfg, rung, &self.scratch[k - 1], out, slot as u32)
    }
}

/// The sum of a device buffer by `rung` (allocates the plan and the output).
pub fn sum<T: SumElement>(dev: &Device, rung: ReduceRung, x: &Buffer<T>) -> Result<T> {
    let mut plan = SumPlan::<T>::new(dev, rung, x.len())?;
    let init = if rung.accumulates() {
        T::ZERO
    } else {
        T::POISON
    };
    let mut out = dev.alloc_filled(1, init)?;
    plan.run(dev, x, &mut out, 0)?;
    Ok(dev.download(&out)?[0])
}
