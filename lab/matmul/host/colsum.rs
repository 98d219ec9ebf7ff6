//! The column sum of a product, `colsum(A B)`: the direct way (SGEMM then a
//! column reduction) and the fused way `colsum(A) B` with its plans.

use super::launch::{
    Loads, check_len, check_operands, check_shapes, colsum_add, colsum_add_with, elems, gemm,
    memset_zero, vecmat_add_with, zero2, zero3,
};
use super::rung::Rung;
use kernels_gpu::matmul as k;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::{Buffer, Device, LaunchConfig, ModuleKey};
use ptxlab_device::Dim3;

/// How the column sum of `A B` is computed (`--colsum`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Colsum {
    /// SGEMM into `C`, then a column reduction of `C` (`2mnk` FLOP).
    Direct,
    /// `colsum(A) B`: a column reduction of `A`, then `v B` (memory-bound),
    /// with [`FusedPlan::DEFAULT`].
    Fused,
}

/// How the fused column sum `colsum(A) B` runs: the variants the benchmark
/// times side by side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FusedPlan {
    /// Rows of `A` per block (one atomic per column per chunk).
    pub chunk_a: usize,
    /// Rows of `B` per block.
    pub chunk_b: usize,
    /// Loads in flight per thread (the one-launch kernel always has eight).
    pub loads: Loads,
    /// Clear `v` and `out` with the driver's memset (two calls) instead of
    /// the `matmul_zero2_f32` kernel (three-launch plans only).
    pub memset: bool,
    /// One ticketed launch for both halves (`matmul_colsum_product_f32`,
    /// after `matmul_zero3_f32`) instead of two.
    pub one_launch: bool,
    /// The chunks were sized so each kernel's grid is one wave (labels only).
    pub one_wave: bool,
}

impl FusedPlan {
    /// Today's default: chunks of [`COLSUM_ROWS`](k::COLSUM_ROWS) rows, eight
    /// loads in flight, the zero kernel, three launches.
    pub const DEFAULT: FusedPlan = FusedPlan {
        chunk_a: k::COLSUM_ROWS,
        chunk_b: k::COLSUM_ROWS,
        loads: Loads::Eight,
        memset: false,
        one_launch: false,
        one_wave: false,
    };

    /// Three launches with chunks of `chunk` rows on both matrices.
    pub const fn rows(chunk: usize, loads: Loads) -> Self {
        FusedPlan {
            chunk_a: chunk,
            chunk_b: chunk,
            loads,
            memset: false,
            one_launch: false,
            one_wave: false,
        }
    }

    /// One ticketed launch (after the zero kernel) with chunks of `chunk` rows.
    pub const fn one_launch(chunk: usize) -> Self {
        FusedPlan {
            chunk_a: chunk,
            chunk_b: chunk,
            loads: Loads::Eight,
            memset: false,
            one_launch: true,
            one_wave: false,
        }
    }

    /// This plan with the accumulators cleared by the driver's memset.
    pub const fn with_memset(mut self) -> Self {
        self.memset = true;
        self
    }

    /// Three launches whose column-sum grids are each one wave: as many
    /// blocks as the GPU holds at once (`SMs x` resident blocks per SM, from
    /// the driver's occupancy calculator; 8 where it is missing, and 4 SMs
    /// on the simulator), so every block starts at once and none runs in a
    /// tail. Chunks are rounded up to a multiple of 8 rows.
    pub fn one_wave(dev: &Device, loads: Loads, m: usize, n: usize, kk: usize) -> Result<Self> {
        check_shapes(m, kk, kk, n)?;
        let (colsum, vecmat) = loads.entries();
        let resident = |kernel: &str| -> Result<usize> {
            let Some(g) = dev.as_gpu() else {
                return Ok(4 * 8);
            };
            let per_sm = if ptxlab_common::runtime::probe::driver_symbol_present(
                "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
            ) {
                g.function(
                    &ptxlab_common::modules::KERNELS,
                    ModuleKey::default(),
                    kernel,
                )?
                .occupancy_max_active_blocks_per_multiprocessor(k::COLSUM_BLOCK, 0, None)
                .map_err(|e| Error::driver("cuOccupancyMaxActiveBlocksPerMultiprocessor", e))?
            } else {
                8
            };
            Ok(g.info().sm_count.max(1) as usize * per_sm.max(1) as usize)
        };
        let chunk = |rows: usize, cols: usize, resident: usize| -> usize {
            let gx = cols.div_ceil(k::COLSUM_BLOCK as usize);
            let gy = (resident / gx).max(1);
            rows.div_ceil(gy).div_ceil(8) * 8
        };
        Ok(FusedPlan {
            chunk_a: chunk(m, kk, resident(colsum)?),
            chunk_b: chunk(kk, n, resident(vecmat)?),
            loads,
            memset: false,
            one_launch: false,
            one_wave: true,
        })
    }

    /// Label for reports (the default keeps the historical one).
    pub fn label(&self) -> String {
        if *self == FusedPlan::DEFAULT {
            return "colsum fused: colsum(A) B (16-row chunks, 8 loads/thread)".into();
        }
        let chunks = if self.chunk_a == self.chunk_b {
            format!("{}-row chunks", self.chunk_a)
        } else {
            format!("chunks {}/{} rows", self.chunk_a, self.chunk_b)
        };
        if self.one_launch {
            return format!("colsum fused, 1 launch (ticketed), {chunks}, 8 loads/thread");
        }
        format!(
            "colsum fused, {chunks}{}, {} loads/thread{}",
            if self.one_wave { " (one wave)" } else { "" },
            self.loads.count(),
            if self.memset { ", memset zero" } else { "" }
        )
    }

    fn validate(&self) -> Result<()> {
        for (what, c) in [("A", self.chunk_a), ("B", self.chunk_b)] {
            if c == 0 || c > u32::MAX as usize {
                return Err(Error::input(
                    "column sum",
                    format!("{c} rows per chunk of {what}; allowed 1..={}", u32::MAX),
                ));
            }
        }
        if self.one_launch && (self.memset || self.loads != Loads::Eight) {
            return Err(Error::input(
                "column sum",
                "the one-launch plan clears with its own kernel and has 8 loads in flight \
                 (use FusedPlan::one_launch)",
            ));
        }
        Ok(())
    }
}

/// Scratch of the column sum: `v` (k), `out` (n), the counters of the
/// one-launch plan, and `C` (m x n) for the direct way.
pub struct ColsumBufs {
    /// `colsum(A)`, length `k`.
    pub v: Buffer<f32>,
    /// The result, length `n`.
    pub out: Buffer<f32>,
    /// Counters of the one-launch plan (ticket, one per 256 columns of `A`,
    /// timeouts), length [`colsum_product_sync_len`](k::colsum_product_sync_len).
    pub sync: Buffer<u32>,
    /// `C = A B` (direct way only).
    pub c: Option<Buffer<f32>>,
}

impl ColsumBufs {
    /// Buffers for shapes `m, n, k` (outputs poisoned with NaN, counters with
    /// `u32::MAX`: every call must clear what it uses).
    pub fn new(dev: &Device, how: Colsum, m: usize, n: usize, kk: usize) -> Result<Self> {
        Ok(Self {
            v: dev.alloc_filled(kk, f32::NAN)?,
            out: dev.alloc_filled(n, f32::NAN)?,
            sync: dev.alloc_filled(k::colsum_product_sync_len(kk), u32::MAX)?,
            c: match how {
                Colsum::Direct => Some(dev.alloc_filled(elems("C", m, n)?, f32::NAN)?),
                Colsum::Fused => None,
            },
        })
    }

    /// Checks the shapes, `A` and `B`, and the lengths of `v` and the
    /// output, before a column sum of `A B`.
    fn check(&self, a: &Buffer<f32>, b: &Buffer<f32>, m: usize, n: usize, kk: usize) -> Result<()> {
        check_operands(a, b, m, n, kk)?;
        check_len("v", self.v.len(), kk)?;
        check_len("the output", self.out.len(), n)
    }

    /// After a one-launch column sum: an error if a spin-wait gave up (the
    /// kernel's guard against a hang; never in a correct run). Synchronises.
    pub fn check_no_timeout(&self, dev: &Device) -> Result<()> {
        let sync = dev.download(&self.sync)?;
        match sync.last() {
            Some(&0) => Ok(()),
            other => Err(Error::Verification {
                what: "one-launch column sum".into(),
                detail: format!(
                    "spin-wait timeouts word is {other:?}, not 0: a block of v B gave up \
                     waiting for the column sums of A"
                ),
            }),
        }
    }
}

/// `colsum(A B)` into `bufs.out`, the direct way or the fused way with
/// [`FusedPlan::DEFAULT`].
#[allow(clippy::too_many_arguments)]
pub fn colsum_of_product(
    dev: &Device,
    how: Colsum,
    a: &Buffer<f32>,
    b: &Buffer<f32>,
    bufs: &mut ColsumBufs,
    m: usize,
    n: usize,
    kk: usize,
) -> Result<()> {
    match how {
        Colsum::Fused => fused_colsum(dev, &FusedPlan::DEFAULT, a, b, bufs, m, n, kk),
        Colsum::Direct => {
            bufs.check(a, b, m, n, kk)?;
            let c = match bufs.c.as_mut() {
                Some(c) => c,
                None => {
                    return Err(Error::input(
                        "column sum",
                        "the direct way needs a C buffer (ColsumBufs::new with Colsum::Direct)",
                    ));
                }
            };
            zero2(dev, &mut bufs.v, &mut bufs.out)?;
            gemm(dev, Rung::BEST, a, b, c, m, n, kk)?;
            colsum_add(dev, c, &mut bufs.out, m, n)
        }
    }
}

/// `colsum(A B) = colsum(A) B` into `bufs.out` with `plan`.
#[allow(clippy::too_many_arguments)]
pub fn fused_colsum(
    dev: &Device,
    plan: &FusedPlan,
    a: &Buffer<f32>,
    b: &Buffer<f32>,
    bufs: &mut ColsumBufs,
    m: usize,
    n: usize,
    kk: usize,
) -> Result<()> {
    bufs.check(a, b, m, n, kk)?;
    plan.validate()?;
    if plan.one_launch {
        return one_launch_colsum(dev, plan, a, b, bufs, m, n, kk);
    }
    if plan.memset {
        memset_zero(dev, &mut bufs.v)?;
        memset_zero(dev, &mut bufs.out)?;
    } else {
        zero2(dev, &mut bufs.v, &mut bufs.out)?;
    }
    colsum_add_with(dev, a, &mut bufs.v, m, kk, plan.chunk_a, plan.loads)?;
    vecmat_add_with(
        dev,
        &bufs.v,
        b,
        &mut bufs.out,
        kk,
        n,
        plan.chunk_b,
        plan.loads,
    )
}

/// The one-launch plan: `matmul_zero3_f32`, then `matmul_colsum_product_f32`
/// on a 1D grid of exactly [`colsum_product_blocks`](k::colsum_product_blocks)
/// blocks (shapes, lengths and the plan checked by the caller).
#[allow(clippy::too_many_arguments)]
fn one_launch_colsum(
    dev: &Device,
    plan: &FusedPlan,
    a: &Buffer<f32>,
    b: &Buffer<f32>,
    bufs: &mut ColsumBufs,
    m: usize,
    n: usize,
    kk: usize,
) -> Result<()> {
    check_len(
        "the counters",
        bufs.sync.len(),
        k::colsum_product_sync_len(kk),
    )?;
    let (na, nb) = k::colsum_product_blocks(m, n, kk, plan.chunk_a, plan.chunk_b);
    let blocks = na + nb;
    if blocks > i32::MAX as usize {
        return Err(Error::input(
            "column sum",
            format!(
                "the one-launch plan needs {blocks} blocks; at most {}",
                i32::MAX
            ),
        ));
    }
    let cfg = LaunchConfig {
        grid: Dim3::x(blocks as u32),
        block: Dim3::x(k::COLSUM_BLOCK),
        shared_bytes: k::colsum_product_shared_bytes(plan.chunk_b),
        module: ModuleKey::default(),
        cluster: None,
    };
    zero3(dev, &mut bufs.v, &mut bufs.out, &mut bufs.sync)?;
    let shape = k::ColsumProduct {
        m: m as u32,
        n: n as u32,
        k: kk as u32,
        chunk_a: plan.chunk_a as u32,
        chunk_b: plan.chunk_b as u32,
    };
    launch!(
        dev,
        cfg,
        matmul::matmul_colsum_product_f32(a, b, &mut bufs.v, &mut bufs.out, &mut bufs.sync, shape)
    )
}

/// The fused plans the benchmark times at the material's shape, the default
/// first. The sweep is centred where H100 runs of a wider one (8 to 256
/// rows, 4 and 8 loads, one wave, memset, one launch) put the best: small
/// chunks with eight loads in flight; one wave and one launch stay as the
/// lessons they are.
pub fn bench_plans(dev: &Device, m: usize, n: usize, kk: usize) -> Result<Vec<FusedPlan>> {
    let mut plans = vec![FusedPlan::DEFAULT];
    let mut push = |p: FusedPlan| {
        if !plans.contains(&p) {
            plans.push(p);
        }
    };
    for chunk in [8, 16, 24, 32, 48] {
        push(FusedPlan::rows(chunk, Loads::Eight));
    }
    // 64 rows and four loads: the default before that run.
    for chunk in [16, 64] {
        push(FusedPlan::rows(chunk, Loads::Four));
    }
    push(FusedPlan::rows(16, Loads::Eight).with_memset());
    push(FusedPlan::rows(32, Loads::Eight).with_memset());
    push(FusedPlan::one_wave(dev, Loads::Eight, m, n, kk)?);
    push(FusedPlan::one_launch(64));
    Ok(plans)
}
