//! Parallel primitives: the sum-reduction ladder (f32, f64, i32), the
//! 256-bin histogram (global atomics vs privatised shared-memory bins) and
//! Monte-Carlo pi. Typed launchers, CPU baselines (one thread and rayon),
//! checks against CPU references, the benchmark and the three subcommands.
//!
//! Float sums are checked against an f64 sum `S` with the bound
//! `|s - S| <= gamma_h * A + n * 2^-53 * A`, `A = sum |x_i|`,
//! `gamma_h = h u / (1 - h u)`: `u` is the unit roundoff of the type and `h`
//! the depth of the rung's summation tree ([`SumPlan::depth`]), the longest
//! chain of additions any element goes through (a standard result for any
//! summation order, Higham, *Accuracy and Stability of Numerical Algorithms*,
//! 4.2). The second term covers the f64 reference itself. Integer sums wrap
//! modulo 2^32 everywhere and must be equal.

use super::BenchCtx;
use crate::error::{Error, Result};
use crate::launch;
use crate::report::{Row, Status};
use crate::rng::SplitMix64;
use crate::runtime::{Buffer, Device, LaunchConfig, Timing};
use cudarc::driver::DeviceRepr;
use kernels_gpu::histogram::{self as hk, Key};
use kernels_gpu::montecarlo as mc;
use kernels_gpu::reduce::{self as rk, SumElem};
use rayon::prelude::*;

/// Blocks the simulator uses for the fixed-grid kernels (it runs one OS
/// thread per GPU thread, so grids stay small there).
const SIM_BLOCKS: u32 = 4;
/// Threads per block of every launch on the simulator.
const SIM_BLOCK: u32 = 64;

fn block_for(dev: &Device, gpu_block: u32) -> u32 {
    if dev.is_sim() { SIM_BLOCK } else { gpu_block }
}

/// Blocks of a fixed grid that fills the device: 2048 resident threads per SM.
fn fill_grid(dev: &Device, block: u32) -> u32 {
    match dev.as_gpu() {
        Some(g) => g.info().sm_count * (2048 / block).max(1),
        None => SIM_BLOCKS,
    }
}

fn size_label(n: u64) -> String {
    if n.is_power_of_two() {
        format!("2^{} ({n})", n.trailing_zeros())
    } else {
        format!("{n}")
    }
}

fn resources(dev: &Device, row: &mut Row, kernel: &str) {
    if let Some(g) = dev.as_gpu()
        && let Some(r) = crate::modules::resource(kernel, &g.info().arch(), false)
    {
        row.registers = Some(r.registers);
        row.spills = Some(r.spill_stores + r.spill_loads);
    }
}

// ---------------------------------------------------------------------------
// Reductions
// ---------------------------------------------------------------------------

/// The rungs of the reduction ladder, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    pub fn name(&self) -> &'static str {
        match self {
            ReduceRung::Tree => "tree",
            ReduceRung::Shuffle => "shuffle",
            ReduceRung::AtomicThread => "atomic-thread",
            ReduceRung::AtomicWarp => "atomic-warp",
            ReduceRung::GridStride => "gridstride",
        }
    }
    /// `true` for rungs that add into `out[slot]` (which must start at zero);
    /// the multi-pass rungs overwrite it.
    pub fn accumulates(&self) -> bool {
        !matches!(self, ReduceRung::Tree | ReduceRung::Shuffle)
    }
}

impl std::str::FromStr for ReduceRung {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        ReduceRung::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| {
                Error::input(
                    "--variant",
                    format!(
                        "`{s}`; allowed: tree, shuffle, atomic-thread, atomic-warp, gridstride, all"
                    ),
                )
            })
    }
}

/// Element types of the reductions.
pub trait SumElement:
    SumElem
    + DeviceRepr
    + Send
    + Sync
    + PartialEq
    + std::fmt::Debug
    + ndarray_npy::ReadableElement
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
    /// Kernel name of `rung`.
    fn kernel(rung: ReduceRung) -> &'static str;
    /// Launches `rung` (`arg` is the offset or slot).
    fn launch(
        dev: &Device,
        cfg: LaunchConfig,
        rung: ReduceRung,
        x: &Buffer<Self>,
        out: &mut Buffer<Self>,
        arg: u32,
    ) -> Result<()>;
}

macro_rules! sum_element {
    ($t:ty, $name:literal, $u:expr, $poison:expr, |$v:ident| $from:expr,
     [$tree:ident, $shuffle:ident, $at:ident, $aw:ident, $gs:ident]) => {
        impl SumElement for $t {
            const NAME: &'static str = $name;
            const UNIT_ROUNDOFF: f64 = $u;
            const POISON: Self = $poison;
            fn as_f64(self) -> f64 {
                self as f64
            }
            fn from_unit($v: f64) -> Self {
                $from
            }
            fn kernel(rung: ReduceRung) -> &'static str {
                match rung {
                    ReduceRung::Tree => stringify!($tree),
                    ReduceRung::Shuffle => stringify!($shuffle),
                    ReduceRung::AtomicThread => stringify!($at),
                    ReduceRung::AtomicWarp => stringify!($aw),
                    ReduceRung::GridStride => stringify!($gs),
                }
            }
            fn launch(
                dev: &Device,
                cfg: LaunchConfig,
                rung: ReduceRung,
                x: &Buffer<$t>,
                out: &mut Buffer<$t>,
                arg: u32,
            ) -> Result<()> {
                match rung {
                    ReduceRung::Tree => launch!(dev, cfg, reduce::$tree(x, out, arg)),
                    ReduceRung::Shuffle => launch!(dev, cfg, reduce::$shuffle(x, out, arg)),
                    ReduceRung::AtomicThread => launch!(dev, cfg, reduce::$at(x, out, arg)),
                    ReduceRung::AtomicWarp => launch!(dev, cfg, reduce::$aw(x, out, arg)),
                    ReduceRung::GridStride => launch!(dev, cfg, reduce::$gs(x, out, arg)),
                }
            }
        }
    };
}

sum_element!(
    f32,
    "f32",
    1.0 / (1u64 << 24) as f64,
    f32::NAN,
    |v| (1.5 * v - 0.5) as f32,
    [
        reduce_tree_f32,
        reduce_shuffle_f32,
        reduce_atomic_thread_f32,
        reduce_atomic_warp_f32,
        reduce_gridstride_f32
    ]
);
sum_element!(
    f64,
    "f64",
    1.0 / (1u64 << 53) as f64,
    f64::NAN,
    |v| 1.5 * v - 0.5,
    [
        reduce_tree_f64,
        reduce_shuffle_f64,
        reduce_atomic_thread_f64,
        reduce_atomic_warp_f64,
        reduce_gridstride_f64
    ]
);
sum_element!(
    i32,
    "i32",
    0.0,
    i32::MIN,
    |v| (v * 2001.0).floor() as i32 - 1000,
    [
        reduce_tree_i32,
        reduce_shuffle_i32,
        reduce_atomic_thread_i32,
        reduce_atomic_warp_i32,
        reduce_gridstride_i32
    ]
);

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
            ReduceRung::AtomicThread => LaunchConfig::for_threads(len, self.block),
            ReduceRung::AtomicWarp => LaunchConfig::for_threads(len, self.block),
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
            return T::launch(dev, self.config(self.n)?, rung, x, out, slot as u32);
        }
        // Multi-pass: x -> scratch[0] -> scratch[1] -> ... -> out[slot].
        let k = self.scratch.len();
        if k == 0 {
            return T::launch(dev, self.config(self.n)?, rung, x, out, slot as u32);
        }
        T::launch(dev, self.config(self.n)?, rung, x, &mut self.scratch[0], 0)?;
        for i in 1..k {
            let cfg = self.config(self.levels[i - 1])?;
            let (done, rest) = self.scratch.split_at_mut(i);
            T::launch(dev, cfg, rung, &done[i - 1], &mut rest[0], 0)?;
        }
        let cfg = self.config(self.levels[k - 1])?;
        T::launch(dev, cfg, rung, &self.scratch[k - 1], out, slot as u32)
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

/// CPU baseline, one thread: a sequential sum in the element type (wrapping for i32).
pub fn cpu_sum_serial<T: SumElement>(x: &[T]) -> T {
    x.iter().fold(T::ZERO, |a, &v| a.add(v))
}

/// CPU baseline, rayon on all cores.
pub fn cpu_sum_rayon<T: SumElement>(x: &[T]) -> T {
    x.par_iter()
        .fold(|| T::ZERO, |a, &v| a.add(v))
        .reduce(|| T::ZERO, |a, b| a.add(b))
}

/// Reference of a sum: the f64 sum `S`, `A = sum |x|`, and for integers the
/// exact wrapped sum.
#[derive(Debug, Clone, Copy)]
pub struct SumRef {
    /// f64 sum (for integers: the exact sum wrapped to i32, as f64).
    pub sum: f64,
    /// Sum of absolute values.
    pub abs_sum: f64,
}

/// The f64 reference of `x`, computed in fixed chunks so it is deterministic.
pub fn reference<T: SumElement>(x: &[T]) -> SumRef {
    let parts: Vec<(f64, f64, i64)> = x
        .par_chunks(1 << 16)
        .map(|c| {
            let mut s = 0.0f64;
            let mut a = 0.0f64;
            let mut i = 0i64;
            for &v in c {
                let f = v.as_f64();
                s += f;
                a += f.abs();
                i = i.wrapping_add(f as i64);
            }
            (s, a, i)
        })
        .collect();
    let (s, a, i) = parts.iter().fold((0.0, 0.0, 0i64), |(s, a, i), p| {
        (s + p.0, a + p.1, i.wrapping_add(p.2))
    });
    if T::UNIT_ROUNDOFF == 0.0 {
        SumRef {
            sum: i as i32 as f64,
            abs_sum: a,
        }
    } else {
        SumRef { sum: s, abs_sum: a }
    }
}

/// Error bound of a float sum of depth `h` (0 for integers).
pub fn sum_bound<T: SumElement>(h: f64, n: usize, r: &SumRef) -> f64 {
    let u = T::UNIT_ROUNDOFF;
    if u == 0.0 {
        return 0.0;
    }
    let hu = h * u;
    // For h u >= 1/2 the a-priori bound says nothing useful; keep a finite
    // (vacuous, but NaN-catching) value.
    let gamma = if hu < 0.5 { hu / (1.0 - hu) } else { 2.0 * hu };
    gamma * r.abs_sum + n as f64 * (1.0 / (1u64 << 53) as f64) * r.abs_sum
}

/// Random inputs (deterministic for a seed), generated in parallel chunks.
pub fn random_inputs<T: SumElement>(n: usize, seed: u64) -> Vec<T> {
    let mut v = vec![T::ZERO; n];
    v.par_chunks_mut(1 << 16).enumerate().for_each(|(c, ch)| {
        let mut r = SplitMix64(seed ^ (c as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
        for e in ch {
            *e = T::from_unit(r.next_f64());
        }
    });
    v
}

/// Outcome of a reduction check.
#[derive(Debug, Clone)]
pub struct SumCheck {
    /// The device's sum.
    pub got: f64,
    /// The reference.
    pub reference: SumRef,
    /// `|got - S|`.
    pub err: f64,
    /// The bound it must stay within (0: exact).
    pub bound: f64,
    /// Depth used for the bound.
    pub depth: f64,
}

impl SumCheck {
    /// `true` when within the bound (false for NaN).
    pub fn ok(&self) -> bool {
        self.err <= self.bound
    }
    /// The a-priori bound says nothing (`h u >= 1/2`, for example 2^28
    /// sequential f32 atomic adds) and the sum is off by more than 1e-3
    /// relative: the rung "passes" only because its bound is vacuous.
    pub fn inaccurate(&self, unit_roundoff: f64) -> bool {
        self.depth * unit_roundoff >= 0.5 && self.rel_err() > 1e-3
    }
    /// `|got - S| / |S|`.
    pub fn rel_err(&self) -> f64 {
        self.err / self.reference.sum.abs().max(f64::MIN_POSITIVE)
    }
    fn verify(&self, what: &str) -> Result<()> {
        if self.ok() {
            Ok(())
        } else {
            Err(Error::Verification {
                what: what.to_string(),
                detail: format!(
                    "sum {} against reference {}: error {:.3e} exceeds the bound {:.3e} (depth {})",
                    self.got, self.reference.sum, self.err, self.bound, self.depth
                ),
            })
        }
    }
}

/// Runs `rung` on `x` (already on the device) and compares with its reference.
pub fn check_buffer<T: SumElement>(
    dev: &Device,
    rung: ReduceRung,
    hx: &[T],
    x: &Buffer<T>,
) -> Result<SumCheck> {
    let plan = SumPlan::<T>::new(dev, rung, hx.len())?;
    let depth = plan.depth();
    drop(plan);
    let got = sum(dev, rung, x)?.as_f64();
    let r = reference(hx);
    Ok(SumCheck {
        got,
        reference: r,
        err: (got - r.sum).abs(),
        bound: sum_bound::<T>(depth, hx.len(), &r),
        depth,
    })
}

/// Checks an input of a float sum: every value finite, and `sum |x|` within
/// the type's range (otherwise a partial sum overflows to inf). Integer sums
/// wrap by definition and need no check.
pub fn check_values<T: SumElement>(x: &[T]) -> Result<()> {
    if T::UNIT_ROUNDOFF == 0.0 {
        return Ok(());
    }
    if let Some(i) = x.iter().position(|v| !v.as_f64().is_finite()) {
        return Err(Error::input(
            "reduce input",
            format!(
                "element {i} is {:?}; every value must be finite (a sum with NaN or inf has no \
                 error bound to check): remove or replace it",
                x[i]
            ),
        ));
    }
    let max = if std::mem::size_of::<T>() == 4 {
        f32::MAX as f64
    } else {
        f64::MAX
    };
    let abs: f64 = x.iter().map(|v| v.as_f64().abs()).sum();
    if !(abs <= max) {
        return Err(Error::input(
            "reduce input",
            format!(
                "sum |x| = {abs:.3e} is beyond the largest {} ({max:.3e}): partial sums would \
                 overflow to inf; scale the input down{}",
                T::NAME,
                if std::mem::size_of::<T>() == 4 {
                    " or use --precision f64"
                } else {
                    ""
                }
            ),
        ));
    }
    Ok(())
}

/// Random input of length `n`, summed by `rung` on `dev`, against the reference.
pub fn check<T: SumElement>(
    dev: &Device,
    rung: ReduceRung,
    n: usize,
    seed: u64,
) -> Result<SumCheck> {
    let hx = random_inputs::<T>(n, seed);
    let x = dev.upload(&hx)?;
    check_buffer(dev, rung, &hx, &x)
}

// ---------------------------------------------------------------------------
// Histogram
// ---------------------------------------------------------------------------

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
    dev.download(&hist)
}

/// Most keys of one histogram: every count must fit its u32 counter.
pub const MAX_KEYS: usize = u32::MAX as usize;

/// CPU baseline, one thread. `bins` must be a power of two (see
/// [`validate_bins`]); 0 bins give an empty histogram.
pub fn cpu_histogram_serial<K: HistKey>(keys: &[K], bins: u32) -> Vec<u32> {
    if bins == 0 {
        return Vec::new();
    }
    let mask = bins - 1;
    let mut h = vec![0u32; bins as usize];
    for &k in keys {
        h[(k.to_u32() & mask) as usize] += 1;
    }
    h
}

/// CPU baseline, rayon: a private histogram per chunk, then merged.
pub fn cpu_histogram_rayon<K: HistKey>(keys: &[K], bins: u32) -> Vec<u32> {
    keys.par_chunks(1 << 16)
        .map(|c| cpu_histogram_serial(c, bins))
        .reduce(
            || vec![0u32; bins as usize],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(&b) {
                    *x += y;
                }
                a
            },
        )
}

/// Random keys (uniform bits), deterministic for a seed.
pub fn random_keys<K: HistKey>(n: usize, seed: u64) -> Vec<K> {
    let mut v = vec![K::default(); n];
    v.par_chunks_mut(1 << 16).enumerate().for_each(|(c, ch)| {
        let mut r = SplitMix64(seed ^ (c as u64).wrapping_mul(0xA24B_AED4_963E_E407));
        for e in ch {
            *e = K::from_bits(r.next_u64());
        }
    });
    v
}

/// Runs `rung` on `keys` and counts the bins that differ from the CPU.
pub fn check_histogram<K: HistKey>(
    dev: &Device,
    rung: HistRung,
    keys: &[K],
    bins: u32,
) -> Result<usize> {
    let b = dev.upload(keys)?;
    let got = histogram(dev, rung, &b, bins)?;
    let want = cpu_histogram_serial(keys, bins);
    Ok(got.iter().zip(&want).filter(|(g, w)| g != w).count())
}

// ---------------------------------------------------------------------------
// Monte-Carlo pi
// ---------------------------------------------------------------------------

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
            return Err(Error::input("--samples", "0 samples; give at least 1"));
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
                "--samples",
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

/// CPU baseline, one thread: the same streams and per-thread counts as the GPU.
pub fn cpu_pi_serial(layout: PiLayout, samples: u64, seed: u64) -> Result<u64> {
    layout.validate(samples)?;
    let t = layout.threads();
    // Streams past the `samples`-th draw nothing.
    Ok((0..t.min(samples))
        .map(|id| mc::thread_hits(seed, id, mc::samples_for_thread(samples, t, id) as u32) as u64)
        .sum())
}

/// CPU baseline, rayon: streams spread over the cores.
pub fn cpu_pi_rayon(layout: PiLayout, samples: u64, seed: u64) -> Result<u64> {
    layout.validate(samples)?;
    let t = layout.threads();
    // Streams past the `samples`-th draw nothing.
    Ok((0..t.min(samples))
        .into_par_iter()
        .map(|id| mc::thread_hits(seed, id, mc::samples_for_thread(samples, t, id) as u32) as u64)
        .sum())
}

/// `4 hits / samples`.
pub fn estimate(hits: u64, samples: u64) -> f64 {
    4.0 * hits as f64 / samples as f64
}

/// Parses a sample count: an integer or a float like `1e9` with an integral value.
pub fn parse_count(s: &str) -> std::result::Result<u64, String> {
    if let Ok(v) = s.parse::<u64>() {
        return Ok(v);
    }
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f < 1.8e19 => Ok(f as u64),
        _ => Err(format!(
            "`{s}` is not a whole non-negative count (examples: 100000000, 1e9)"
        )),
    }
}

// ---------------------------------------------------------------------------
// Simulator check
// ---------------------------------------------------------------------------

/// Every kernel of the workload on the simulator at small odd sizes: sums
/// within their bounds (integers exact), histograms exact, and Monte-Carlo
/// counts equal to the CPU's for the same seed and layout.
pub fn sim_check() -> Result<()> {
    let dev = Device::sim();
    fn sums<T: SumElement>(dev: &Device) -> Result<()> {
        for rung in ReduceRung::ALL {
            for n in [1usize, 4097] {
                check::<T>(dev, rung, n, n as u64 ^ 5)?.verify(&format!(
                    "reduce {} {} n={n} (simulator)",
                    T::NAME,
                    rung.name()
                ))?;
            }
        }
        check::<T>(dev, ReduceRung::GridStride, 100_003, 9)?.verify(&format!(
            "reduce {} gridstride n=100003 (simulator)",
            T::NAME
        ))
    }
    sums::<f32>(&dev)?;
    sums::<f64>(&dev)?;
    sums::<i32>(&dev)?;
    fn hists<K: HistKey>(dev: &Device) -> Result<()> {
        for rung in HistRung::ALL {
            for (n, bins) in [(4097usize, 256u32), (100_003, 64)] {
                let keys = random_keys::<K>(n, n as u64);
                let bad = check_histogram(dev, rung, &keys, bins)?;
                if bad != 0 {
                    return Err(Error::Verification {
                        what: format!(
                            "histogram {} {} n={n} bins={bins} (simulator)",
                            K::NAME,
                            rung.label()
                        ),
                        detail: format!("{bad} bins differ from the CPU"),
                    });
                }
            }
        }
        Ok(())
    }
    hists::<u8>(&dev)?;
    hists::<u32>(&dev)?;
    for (samples, seed) in [(25_601u64, 1u64), (1000, 99)] {
        let got = pi_hits(&dev, PiLayout::SIM, samples, seed)?;
        let want = cpu_pi_serial(PiLayout::SIM, samples, seed)?;
        if got != want {
            return Err(Error::Verification {
                what: format!("monte-carlo-pi {samples} samples seed {seed} (simulator)"),
                detail: format!("{got} hits on the simulator, {want} on the CPU"),
            });
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Benchmark
// ---------------------------------------------------------------------------

fn timed_row(
    row: &mut Row,
    t: Timing,
    bytes: Option<f64>,
    copy_gbs: Option<f64>,
    cpu1_ms: Option<f64>,
) {
    if let Some(b) = bytes {
        let gbs = b / (t.median_ms * 1e-3) / 1e9;
        row.throughput = Some(gbs);
        row.unit = "GB/s".into();
        row.pct_of_ceiling = copy_gbs.map(|c| 100.0 * gbs / c);
    }
    row.speedup = cpu1_ms.map(|c| c / t.median_ms);
    row.timing = Some(t);
}

/// CPU rows of a sum of `n` elements; returns them and the one-thread median.
fn reduce_cpu_rows<T: SumElement>(hx: &[T], reps: usize) -> (Vec<Row>, f64) {
    let n = hx.len();
    let size = size_label(n as u64);
    let bytes = std::mem::size_of_val(hx) as f64;
    let mut sink = T::ZERO;
    let t1 = Timing::host(1, reps, || sink = std::hint::black_box(cpu_sum_serial(hx)));
    let tr = Timing::host(1, reps.max(3), || {
        sink = std::hint::black_box(cpu_sum_rayon(hx))
    });
    let _ = sink;
    let mut rows = Vec::new();
    for (name, t) in [("CPU 1 thread", t1.clone()), ("CPU rayon all cores", tr)] {
        let mut r = Row::new("reduce", name, "cpu", &size, T::NAME);
        timed_row(&mut r, t, Some(bytes), None, Some(t1.median_ms));
        rows.push(r);
    }
    (rows, t1.median_ms)
}

/// Checks, then times, every rung in `rungs` at `n` elements on `dev`.
fn reduce_rows<T: SumElement>(
    dev: &Device,
    ctx: &BenchCtx,
    n: usize,
    rungs: &[ReduceRung],
    cpu: bool,
) -> Result<Vec<Row>> {
    let backend = if dev.is_sim() { "sim" } else { "gpu" };
    let size = size_label(n as u64);
    let bytes = (n * std::mem::size_of::<T>()) as f64;
    let hx = random_inputs::<T>(n, 3);
    let x = dev.upload(&hx)?;
    let mut rows = Vec::new();
    let cpu1 = if cpu {
        let (r, t1) = reduce_cpu_rows(&hx, if n >= 1 << 26 { 2 } else { 3 });
        rows.extend(r);
        Some(t1)
    } else {
        None
    };
    for &rung in rungs {
        let mut row = Row::new("reduce", rung.label(), backend, &size, T::NAME);
        resources(dev, &mut row, T::kernel(rung));
        let t0 = std::time::Instant::now();
        match check_buffer(dev, rung, &hx, &x) {
            Ok(c) if c.ok() => {
                row.rel_err = Some(c.rel_err());
                if c.inaccurate(T::UNIT_ROUNDOFF) {
                    row.status = Status::Inaccurate(format!(
                        "relative error {:.1e}: {} chained {} additions (h u = {:.1}) leave no usable error bound",
                        c.rel_err(),
                        c.depth,
                        T::NAME,
                        c.depth * T::UNIT_ROUNDOFF
                    ));
                }
            }
            Ok(c) => {
                row.status = Status::Failed(format!(
                    "error {:.3e} exceeds the bound {:.3e}",
                    c.err, c.bound
                ));
                rows.push(row);
                continue;
            }
            Err(e) => {
                row.status = Status::Failed(e.to_string());
                rows.push(row);
                continue;
            }
        }
        row.first_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
        let (warmup, reps) = if rung == ReduceRung::AtomicThread && n >= 1 << 24 {
            (1, 3)
        } else {
            (3, ctx.reps())
        };
        let mut plan = SumPlan::<T>::new(dev, rung, n)?;
        let init = if rung.accumulates() {
            T::ZERO
        } else {
            T::POISON
        };
        let mut out = dev.alloc_filled(warmup + reps, init)?;
        let t = dev.time(warmup, reps, |i| plan.run(dev, &x, &mut out, i))?;
        timed_row(&mut row, t, Some(bytes), ctx.ceilings.copy_gbs, cpu1);
        rows.push(row);
    }
    Ok(rows)
}

fn hist_cpu_rows<K: HistKey>(keys: &[K], bins: u32, reps: usize) -> (Vec<Row>, f64) {
    let size = size_label(keys.len() as u64);
    let bytes = std::mem::size_of_val(keys) as f64;
    let t1 = Timing::host(1, reps, || {
        std::hint::black_box(cpu_histogram_serial(keys, bins));
    });
    let tr = Timing::host(1, reps.max(3), || {
        std::hint::black_box(cpu_histogram_rayon(keys, bins));
    });
    let mut rows = Vec::new();
    for (name, t) in [("CPU 1 thread", t1.clone()), ("CPU rayon all cores", tr)] {
        let mut r = Row::new("histogram", name, "cpu", &size, K::NAME);
        timed_row(&mut r, t, Some(bytes), None, Some(t1.median_ms));
        rows.push(r);
    }
    (rows, t1.median_ms)
}

fn hist_rows<K: HistKey>(dev: &Device, ctx: &BenchCtx, n: usize, bins: u32) -> Result<Vec<Row>> {
    let backend = if dev.is_sim() { "sim" } else { "gpu" };
    let size = size_label(n as u64);
    let keys = random_keys::<K>(n, 17);
    let bytes = std::mem::size_of_val(keys.as_slice()) as f64;
    let (mut rows, cpu1) = hist_cpu_rows(&keys, bins, 3);
    let want = cpu_histogram_serial(&keys, bins);
    let kb = dev.upload(&keys)?;
    for rung in HistRung::ALL {
        let mut row = Row::new(
            "histogram",
            &format!("{} ({bins} bins)", rung.label()),
            backend,
            &size,
            K::NAME,
        );
        resources(dev, &mut row, K::kernel(rung));
        let t0 = std::time::Instant::now();
        match histogram(dev, rung, &kb, bins) {
            Ok(got) => {
                let bad = got.iter().zip(&want).filter(|(g, w)| g != w).count();
                if bad != 0 {
                    row.status =
                        Status::Failed(format!("{bad} of {bins} bins differ from the CPU"));
                    rows.push(row);
                    continue;
                }
                row.rel_err = Some(0.0);
            }
            Err(e) => {
                row.status = Status::Failed(e.to_string());
                rows.push(row);
                continue;
            }
        }
        row.first_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
        let (warmup, reps) = (2, ctx.reps());
        let mut hist = dev.alloc_filled((warmup + reps) * bins as usize, 0u32)?;
        let t = dev.time(warmup, reps, |i| {
            histogram_into(dev, rung, &kb, &mut hist, bins, i * bins as usize)
        })?;
        timed_row(&mut row, t, Some(bytes), ctx.ceilings.copy_gbs, Some(cpu1));
        rows.push(row);
    }
    Ok(rows)
}

fn pi_row(
    variant: &str,
    backend: &str,
    samples: u64,
    hits: u64,
    t: Timing,
    cpu1_ns_per_sample: Option<f64>,
) -> Row {
    let mut r = Row::new(
        "monte-carlo-pi",
        variant,
        backend,
        &format!("{samples:.0e} samples"),
        "u64 hits",
    );
    let est = estimate(hits, samples);
    r.rel_err = Some((est - std::f64::consts::PI).abs() / std::f64::consts::PI);
    r.throughput = Some(samples as f64 / (t.median_ms * 1e-3) / 1e9);
    r.unit = "Gsamples/s".into();
    r.speedup = cpu1_ns_per_sample.map(|ns| ns * samples as f64 * 1e-6 / t.median_ms);
    r.timing = Some(t);
    r
}

fn pi_cpu_rows(layout: PiLayout, samples: u64) -> Result<(Vec<Row>, f64)> {
    let mut h1 = 0;
    let mut hr = 0;
    let mut err = None;
    let t1 = Timing::host(0, 2, || match cpu_pi_serial(layout, samples, 1) {
        Ok(h) => h1 = h,
        Err(e) => err = Some(e),
    });
    let tr = Timing::host(1, 3, || match cpu_pi_rayon(layout, samples, 1) {
        Ok(h) => hr = h,
        Err(e) => err = Some(e),
    });
    if let Some(e) = err {
        return Err(e);
    }
    let ns = t1.median_ms * 1e6 / samples as f64;
    Ok((
        vec![
            pi_row(
                "CPU 1 thread (same streams)",
                "cpu",
                samples,
                h1,
                t1,
                Some(ns),
            ),
            pi_row(
                "CPU rayon all cores (same streams)",
                "cpu",
                samples,
                hr,
                tr,
                Some(ns),
            ),
        ],
        ns,
    ))
}

fn pi_rows(dev: &Device, ctx: &BenchCtx) -> Result<Vec<Row>> {
    let layout = PiLayout::DEFAULT;
    let check_samples = if ctx.quick { 10_000_000 } else { 100_000_000 };
    let (mut rows, cpu_ns) = pi_cpu_rows(layout, check_samples)?;
    let label = format!(
        "xoroshiro128+ per thread, {} x {} threads, 1 atomic/block",
        layout.blocks, layout.block
    );
    let mut check_row = Row::new(
        "monte-carlo-pi",
        &label,
        "gpu",
        &format!("{check_samples:.0e} samples"),
        "u64 hits",
    );
    resources(dev, &mut check_row, "montecarlo_pi");
    let t0 = std::time::Instant::now();
    let got = pi_hits(dev, layout, check_samples, 1)?;
    let first_ms = t0.elapsed().as_secs_f64() * 1e3;
    let want = cpu_pi_rayon(layout, check_samples, 1)?;
    if got != want {
        check_row.status = Status::Failed(format!(
            "{got} hits on the GPU, {want} on the CPU with the same seed and layout"
        ));
        rows.push(check_row);
        return Ok(rows);
    }
    let mut sizes = vec![1_000_000_000u64];
    if !ctx.quick {
        sizes.insert(0, check_samples);
    }
    let mut i = 0;
    while i < sizes.len() {
        let samples = sizes[i];
        let (warmup, reps) = if samples >= 10_000_000_000 {
            (1, 5)
        } else {
            (2, ctx.reps().min(20))
        };
        let mut hits = dev.alloc_filled(warmup + reps, 0u64)?;
        let t = dev.time(warmup, reps, |s| {
            pi_into(dev, layout, samples, 1 + s as u64, &mut hits, s)
        })?;
        let counts = dev.download(&hits)?;
        let mut row = pi_row(
            &label,
            "gpu",
            samples,
            counts[warmup],
            t.clone(),
            Some(cpu_ns),
        );
        row.registers = check_row.registers;
        row.spills = check_row.spills;
        if i == 0 {
            row.first_ms = Some(first_ms);
        }
        rows.push(row);
        if samples == 1_000_000_000 && t.median_ms * 10.0 < 1000.0 {
            sizes.push(10_000_000_000);
        }
        i += 1;
    }
    Ok(rows)
}

/// Benchmark rows of the three primitives. Without a GPU: CPU baselines and
/// a skipped row; on the simulator: small sizes.
pub fn bench(ctx: &BenchCtx) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    match ctx.dev {
        None => {
            rows.push(super::skipped_gpu("monte-carlo-pi", ctx));
            let n = if ctx.quick { 1 << 20 } else { 1 << 24 };
            rows.extend(reduce_cpu_rows(&random_inputs::<f32>(n, 3), 3).0);
            rows.extend(hist_cpu_rows(&random_keys::<u8>(n, 17), hk::BINS, 3).0);
            rows.extend(
                pi_cpu_rows(
                    PiLayout::DEFAULT,
                    if ctx.quick { 1_000_000 } else { 10_000_000 },
                )?
                .0,
            );
        }
        Some(dev) if dev.is_sim() => {
            rows.extend(reduce_rows::<f32>(dev, ctx, 4097, &ReduceRung::ALL, true)?);
            rows.extend(hist_rows::<u8>(dev, ctx, 4097, hk::BINS)?);
            let layout = PiLayout::SIM;
            let samples = 25_601;
            let want = cpu_pi_serial(layout, samples, 1)?;
            let t = dev.time(0, 2, |_| {
                let got = pi_hits(dev, layout, samples, 1)?;
                if got != want {
                    return Err(Error::Verification {
                        what: "monte-carlo-pi (simulator)".into(),
                        detail: format!("{got} hits on the simulator, {want} on the CPU"),
                    });
                }
                Ok(())
            })?;
            rows.push(pi_row(
                "xoroshiro128+ per thread",
                "sim",
                samples,
                want,
                t,
                None,
            ));
        }
        Some(dev) => {
            let sizes: Vec<usize> = if ctx.quick {
                vec![1 << 24]
            } else {
                vec![1 << 20, 1 << 24, (1 << 24) + 3, 1 << 28]
            };
            for &n in &sizes {
                let rungs: &[ReduceRung] = if n == (1 << 24) + 3 {
                    &[ReduceRung::GridStride]
                } else {
                    &ReduceRung::ALL
                };
                rows.extend(reduce_rows::<f32>(dev, ctx, n, rungs, n != (1 << 24) + 3)?);
            }
            rows.extend(reduce_rows::<f64>(
                dev,
                ctx,
                1 << 24,
                &ReduceRung::ALL,
                !ctx.quick,
            )?);
            rows.extend(reduce_rows::<i32>(
                dev,
                ctx,
                1 << 24,
                &ReduceRung::ALL,
                !ctx.quick,
            )?);
            rows.extend(hist_rows::<u8>(dev, ctx, 1 << 24, hk::BINS)?);
            rows.extend(hist_rows::<u32>(dev, ctx, 1 << 24, hk::BINS)?);
            rows.extend(pi_rows(dev, ctx)?);
        }
    }
    Ok(rows)
}

// ---------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------

fn open_device(backend: crate::Backend) -> Result<Option<Device>> {
    Ok(match backend {
        crate::Backend::Gpu => Some(Device::gpu(0)?),
        crate::Backend::Sim => Some(Device::sim()),
        crate::Backend::Cpu => None,
    })
}

/// Largest problem the simulator accepts from the command line (it runs one
/// OS thread per GPU thread).
const SIM_MAX_N: usize = 1 << 20;
/// Largest problem of the one-element-per-thread rungs on the simulator.
const SIM_MAX_N_PER_ELEMENT: usize = 1 << 16;

fn print_timing(what: &str, dev: &str, t: &Timing, extra: &str) {
    use crate::report::fmt_ms;
    println!(
        "{what} ({dev}): median {} ms (min {}, max {}, {} reps){extra}",
        fmt_ms(t.median_ms),
        fmt_ms(t.min_ms),
        fmt_ms(t.max_ms),
        t.reps
    );
}

/// `ptxlab reduce` arguments.
#[derive(Debug, clap::Args)]
pub struct ReduceArgs {
    /// Number of elements (ignored with --input).
    #[arg(long, default_value_t = 1 << 24, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub n: usize,
    /// f32, f64 or i32.
    #[arg(long, default_value = "f32")]
    pub precision: String,
    /// tree, shuffle, atomic-thread, atomic-warp, gridstride, or all.
    #[arg(long, default_value = "gridstride")]
    pub variant: String,
    /// gpu, sim or cpu.
    #[arg(long, default_value = "gpu")]
    pub backend: String,
    /// Timed repetitions (1..=10000).
    #[arg(long, default_value_t = 20, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
    /// Seed of the random input.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Input (.npy, 1-D, float32 / float64 / int32 matching --precision).
    #[arg(long)]
    pub input: Option<std::path::PathBuf>,
}

/// `ptxlab reduce`.
pub fn cli_reduce(args: &ReduceArgs) -> Result<()> {
    let backend: crate::Backend = args.backend.parse()?;
    crate::cli::check_reps(args.reps)?;
    match args.precision.as_str() {
        "f32" => cli_reduce_typed::<f32>(args, backend),
        "f64" => cli_reduce_typed::<f64>(args, backend),
        "i32" => cli_reduce_typed::<i32>(args, backend),
        p => Err(Error::input(
            "--precision",
            format!("`{p}`; allowed: f32, f64, i32"),
        )),
    }
}

fn cli_reduce_typed<T: SumElement>(args: &ReduceArgs, backend: crate::Backend) -> Result<()> {
    let rungs: Vec<ReduceRung> = if args.variant == "all" {
        ReduceRung::ALL.to_vec()
    } else {
        vec![args.variant.parse()?]
    };
    // The simulator's limit for these rungs (one OS thread per GPU thread).
    let sim_limit = if rungs.iter().all(|r| *r == ReduceRung::GridStride) {
        SIM_MAX_N
    } else {
        SIM_MAX_N_PER_ELEMENT
    };
    let sim_flag = |n: usize, flag: &str| -> Result<()> {
        if backend == crate::Backend::Sim && n > sim_limit {
            return Err(Error::input(
                flag,
                format!(
                    "{n} elements with --variant {} on the simulator; at most {sim_limit} (one OS \
                     thread per GPU thread): use a smaller input, or --backend cpu",
                    args.variant
                ),
            ));
        }
        Ok(())
    };
    if args.input.is_none() {
        if args.n == 0 {
            return Err(Error::input(
                "--n",
                "0 elements; the input is empty, give at least one element",
            ));
        }
        sim_flag(args.n, "--n")?;
        crate::cli::check_host_arrays("--n", args.n, std::mem::size_of::<T>(), 2)?;
    }
    // Before the input is made: a missing driver is reported at once.
    let dev = open_device(backend)?;
    let hx: Vec<T> = match &args.input {
        Some(p) => crate::npy::read_1d::<T>(p, T::NAME)?,
        None => random_inputs::<T>(args.n, args.seed),
    };
    let n = hx.len();
    if n == 0 {
        return Err(Error::input(
            "reduce",
            "the input is empty (n = 0); give at least one element",
        ));
    }
    sim_flag(n, "--input")?;
    check_values(&hx)?;
    let r = reference(&hx);
    println!(
        "reduce {} n={n}: f64 reference sum {} (sum |x| = {})",
        T::NAME,
        r.sum,
        r.abs_sum
    );
    let t1 = Timing::host(0, 3, || {
        std::hint::black_box(cpu_sum_serial(&hx));
    });
    println!(
        "CPU 1 thread: {} ms, sum {:?}",
        crate::report::fmt_ms(t1.median_ms),
        cpu_sum_serial(&hx)
    );
    let Some(dev) = dev else {
        let tr = Timing::host(1, args.reps, || {
            std::hint::black_box(cpu_sum_rayon(&hx));
        });
        println!(
            "CPU rayon: {} ms, sum {:?}",
            crate::report::fmt_ms(tr.median_ms),
            cpu_sum_rayon(&hx)
        );
        return Ok(());
    };
    let x = dev.upload(&hx)?;
    for rung in rungs {
        let c = check_buffer(&dev, rung, &hx, &x)?;
        c.verify(&format!("reduce {} {} n={n}", T::NAME, rung.name()))?;
        println!(
            "PASS reduce {} {} n={n} on {}: sum {} (error {:.2e}, bound {:.2e})",
            T::NAME,
            rung.name(),
            dev.name(),
            c.got,
            c.err,
            c.bound
        );
        let reps = if dev.is_sim() {
            args.reps.min(2)
        } else {
            args.reps
        };
        let mut plan = SumPlan::<T>::new(&dev, rung, n)?;
        let init = if rung.accumulates() {
            T::ZERO
        } else {
            T::POISON
        };
        let mut out = dev.alloc_filled(reps + 2, init)?;
        let t = dev.time(2, reps, |i| plan.run(&dev, &x, &mut out, i))?;
        let gbs = (n * std::mem::size_of::<T>()) as f64 / (t.median_ms * 1e-3) / 1e9;
        print_timing(
            rung.label(),
            &dev.name(),
            &t,
            &format!(
                ", {gbs:.1} GB/s read, {:.1}x CPU 1 thread",
                t1.median_ms / t.median_ms
            ),
        );
    }
    Ok(())
}

/// `ptxlab histogram` arguments.
#[derive(Debug, clap::Args)]
pub struct HistogramArgs {
    /// Number of keys (ignored with --input).
    #[arg(long, default_value_t = 1 << 24, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub n: usize,
    /// Key type: u8 or u32.
    #[arg(long, default_value = "u8")]
    pub keys: String,
    /// Bins: a power of two (key k goes to bin k & (bins - 1)).
    #[arg(long, default_value_t = 256, value_parser = crate::cli::parse_whole::<u32>, allow_negative_numbers = true)]
    pub bins: u32,
    /// global, shared, or all.
    #[arg(long, default_value = "shared")]
    pub variant: String,
    /// gpu, sim or cpu.
    #[arg(long, default_value = "gpu")]
    pub backend: String,
    /// Timed repetitions (1..=10000).
    #[arg(long, default_value_t = 20, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
    /// Seed of the random keys.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Keys (.npy, 1-D, uint8 / uint32 matching --keys).
    #[arg(long)]
    pub input: Option<std::path::PathBuf>,
    /// Write the histogram here (.npy, uint32).
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
}

/// `ptxlab histogram`.
pub fn cli_histogram(args: &HistogramArgs) -> Result<()> {
    let backend: crate::Backend = args.backend.parse()?;
    crate::cli::check_reps(args.reps)?;
    match args.keys.as_str() {
        "u8" => cli_histogram_typed::<u8>(args, backend),
        "u32" => cli_histogram_typed::<u32>(args, backend),
        k => Err(Error::input("--keys", format!("`{k}`; allowed: u8, u32"))),
    }
}

fn cli_histogram_typed<K: HistKey>(args: &HistogramArgs, backend: crate::Backend) -> Result<()> {
    validate_bins::<K>(args.bins)?;
    let bins = args.bins;
    let rungs: Vec<HistRung> = if args.variant == "all" {
        HistRung::ALL.to_vec()
    } else {
        vec![args.variant.parse()?]
    };
    let check_n = |n: usize, flag: &str| -> Result<()> {
        if n == 0 {
            return Err(Error::input(
                "histogram",
                "the input is empty (0 keys); give at least one key",
            ));
        }
        if n > MAX_KEYS {
            return Err(Error::input(
                flag,
                format!("{n} keys; at most {MAX_KEYS} (the counters are u32): use fewer keys"),
            ));
        }
        if backend == crate::Backend::Sim {
            crate::cli::check_sim_limit(flag, n, SIM_MAX_N, "keys")?;
        }
        Ok(())
    };
    if args.input.is_none() {
        check_n(args.n, "--n")?;
        crate::cli::check_host_arrays("--n", args.n, std::mem::size_of::<K>(), 2)?;
    }
    // Before the keys are made: a missing driver is reported at once.
    let dev = open_device(backend)?;
    let keys: Vec<K> = match &args.input {
        Some(p) => crate::npy::read_1d::<K>(p, K::NAME).map_err(|e| {
            Error::input(
                "--input",
                format!(
                    "{e} (--keys {} reads {} keys; --keys u8 takes uint8 files, --keys u32 uint32)",
                    K::NAME,
                    K::NAME
                ),
            )
        })?,
        None => random_keys::<K>(args.n, args.seed),
    };
    let n = keys.len();
    check_n(n, "--input")?;
    let t1 = Timing::host(0, 3, || {
        std::hint::black_box(cpu_histogram_serial(&keys, bins));
    });
    println!("CPU 1 thread: {} ms", crate::report::fmt_ms(t1.median_ms));
    let want = cpu_histogram_serial(&keys, bins);
    let Some(dev) = dev else {
        let tr = Timing::host(1, args.reps, || {
            std::hint::black_box(cpu_histogram_rayon(&keys, bins));
        });
        println!("CPU rayon: {} ms", crate::report::fmt_ms(tr.median_ms));
        if let Some(out) = &args.out {
            crate::npy::write_1d(out, &want)?;
            println!("wrote {}", out.display());
        }
        return Ok(());
    };
    let kb = dev.upload(&keys)?;
    let mut last = Vec::new();
    for rung in rungs {
        let got = histogram(&dev, rung, &kb, bins)?;
        let bad = got.iter().zip(&want).filter(|(g, w)| g != w).count();
        if bad != 0 {
            return Err(Error::Verification {
                what: format!("histogram {} {} n={n} bins={bins}", K::NAME, rung.label()),
                detail: format!("{bad} bins differ from the CPU"),
            });
        }
        println!(
            "PASS histogram {} {} n={n} bins={bins} on {}: equal to the CPU",
            K::NAME,
            rung.label(),
            dev.name()
        );
        let reps = if dev.is_sim() {
            args.reps.min(2)
        } else {
            args.reps
        };
        let mut hist = dev.alloc_filled((reps + 2) * bins as usize, 0u32)?;
        let t = dev.time(2, reps, |i| {
            histogram_into(&dev, rung, &kb, &mut hist, bins, i * bins as usize)
        })?;
        let gbs = std::mem::size_of_val(keys.as_slice()) as f64 / (t.median_ms * 1e-3) / 1e9;
        print_timing(
            rung.label(),
            &dev.name(),
            &t,
            &format!(
                ", {gbs:.1} GB/s, {:.1}x CPU 1 thread",
                t1.median_ms / t.median_ms
            ),
        );
        last = got;
    }
    if let Some(out) = &args.out {
        crate::npy::write_1d(out, &last)?;
        println!("wrote {}", out.display());
    }
    Ok(())
}

/// `ptxlab monte-carlo-pi` arguments.
#[derive(Debug, clap::Args)]
pub struct PiArgs {
    /// Samples (an integer or e.g. 1e9).
    #[arg(long, default_value = "1e9", value_parser = parse_count, allow_negative_numbers = true)]
    pub samples: u64,
    /// Seed: each thread's generator is SplitMix64(SplitMix64(seed) ^ thread id).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Blocks of 256 threads (the layout fixes the streams; keep it to compare
    /// runs). Default 4224; on the simulator 4 blocks of 64 (at most 64 blocks).
    #[arg(long, value_parser = crate::cli::parse_whole::<u32>, allow_negative_numbers = true)]
    pub blocks: Option<u32>,
    /// gpu, sim or cpu.
    #[arg(long, default_value = "gpu")]
    pub backend: String,
    /// Timed repetitions (each with its own seed, seed + i; 1..=10000).
    #[arg(long, default_value_t = 10, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
}

/// `ptxlab monte-carlo-pi`.
pub fn cli_pi(args: &PiArgs) -> Result<()> {
    let backend: crate::Backend = args.backend.parse()?;
    crate::cli::check_reps(args.reps)?;
    let mut layout = PiLayout {
        blocks: args.blocks.unwrap_or(mc::DEFAULT_BLOCKS),
        block: mc::BLOCK,
    };
    if backend == crate::Backend::Sim {
        layout = PiLayout {
            blocks: args.blocks.unwrap_or(SIM_BLOCKS),
            block: SIM_BLOCK,
        };
        if layout.threads() > 4096 {
            return Err(Error::input(
                "--blocks",
                format!(
                    "{} blocks on the simulator; at most {} (one OS thread per GPU thread)",
                    layout.blocks,
                    4096 / SIM_BLOCK
                ),
            ));
        }
        if args.samples > 100_000_000 {
            return Err(Error::input(
                "--samples",
                format!("{} samples on the simulator; at most 1e8", args.samples),
            ));
        }
    }
    layout.validate(args.samples)?;
    let samples = args.samples;
    let dev = open_device(backend)?;
    let report = |what: &str, hits: u64, t: &Timing| {
        let est = estimate(hits, samples);
        println!(
            "{what}: {hits} hits of {samples}: pi ~ {est:.9}, error {:.3e}; median {} ms, {:.3e} samples/s",
            est - std::f64::consts::PI,
            crate::report::fmt_ms(t.median_ms),
            samples as f64 / (t.median_ms * 1e-3)
        );
    };
    let Some(dev) = dev else {
        let mut hits = 0;
        let t = Timing::host(0, args.reps.clamp(1, 3), || {
            hits = cpu_pi_rayon(layout, samples, args.seed).unwrap_or(0)
        });
        report(
            &format!("CPU rayon, {} streams", layout.threads()),
            hits,
            &t,
        );
        return Ok(());
    };
    let t0 = std::time::Instant::now();
    let got = pi_hits(&dev, layout, samples, args.seed)?;
    let first = t0.elapsed().as_secs_f64() * 1e3;
    let tc = std::time::Instant::now();
    let want = cpu_pi_rayon(layout, samples, args.seed)?;
    let cpu_ms = tc.elapsed().as_secs_f64() * 1e3;
    if got != want {
        return Err(Error::Verification {
            what: format!("monte-carlo-pi {samples} samples seed {}", args.seed),
            detail: format!(
                "{got} hits on {}, {want} on the CPU with the same streams",
                dev.name()
            ),
        });
    }
    println!(
        "PASS monte-carlo-pi on {}: {got} hits, equal to the CPU (rayon, {cpu_ms:.1} ms) for seed {}; first call {first:.1} ms",
        dev.name(),
        args.seed
    );
    let reps = if dev.is_sim() {
        args.reps.min(2)
    } else {
        args.reps.max(1)
    };
    let mut hits = dev.alloc_filled(reps + 1, 0u64)?;
    let t = dev.time(1, reps, |i| {
        pi_into(
            &dev,
            layout,
            samples,
            args.seed.wrapping_add(i as u64),
            &mut hits,
            i,
        )
    })?;
    report(
        &format!(
            "{} (seed {}; timed calls use seeds {}..)",
            dev.name(),
            args.seed,
            args.seed
        ),
        got,
        &t,
    );
    Ok(())
}
