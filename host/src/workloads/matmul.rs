//! SGEMM ladder and the column sum of a product: typed launchers, CPU
//! baselines (ndarray `dot` on one thread, a rayon blocked kernel), checks
//! against an f64 reference, the benchmark and the `ptxlab matmul` CLI.
//!
//! Shapes everywhere: `A` is `m x k`, `B` is `k x n`, `C = A B` is `m x n`,
//! row-major f32.

use super::BenchCtx;
use crate::error::{Error, Result};
use crate::launch;
use crate::report::{Row, Status, fmt_ms};
use crate::rng::{SplitMix64, rel_err_norm, uniform_vec};
use crate::runtime::{Buffer, Device, LaunchConfig, ModuleKey, Timing};
use kernels_gpu::matmul as k;
use ptxlab_device::Dim3;
use rayon::prelude::*;

/// The rungs of the SGEMM ladder, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rung {
    /// One thread per output, operands from global memory.
    Naive,
    /// 32x32 shared-memory tiles.
    Tiled,
    /// 64x64 block tile, 4x4 outputs per thread.
    Regblock,
    /// 128x128 block tile, 8x8 per thread, 16-byte loads, transposed `As`.
    Vec,
    /// Rung 4 with `launch_bounds(256)` only: more registers, no spill, one
    /// block per SM.
    Vec1,
    /// Rung 4b with tiles 16 deep: one barrier per 1024 FMAs per thread.
    Vec16,
    /// Rung 4c with `launch_bounds(256, 2)`: two blocks per SM, 128 registers.
    Vec16x2,
    /// Rung 4c with grouped block order (8 block rows per group, for L2 reuse).
    Vec16s,
    /// Rung 4b with a fast path for interior blocks: unchecked 16-byte loads
    /// and stores, no branch in the `k` loop; edge blocks run rung 4b's body.
    Vecf,
    /// Rung 4f with `launch_bounds(256, 2)`: two blocks per SM.
    Vecf2,
    /// Rung 4b's tile fed by `cp.async`, four stages, `A` row-major in shared memory.
    Async,
    /// Rung 5 with `launch_bounds(256, 2)`: two blocks per SM.
    Async2,
    /// Rung 5 with `A` read per step (scalar shared loads, padded rows) and
    /// `launch_bounds(256, 2)`.
    Asyncs2,
    /// Rung 5c with one block per SM.
    Asyncs,
}

impl Rung {
    /// Every rung in ladder order.
    pub const ALL: [Rung; 14] = [
        Rung::Naive,
        Rung::Tiled,
        Rung::Regblock,
        Rung::Vec,
        Rung::Vec1,
        Rung::Vec16,
        Rung::Vec16x2,
        Rung::Vec16s,
        Rung::Vecf,
        Rung::Vecf2,
        Rung::Async,
        Rung::Async2,
        Rung::Asyncs2,
        Rung::Asyncs,
    ];
    /// The fastest rung (used by the direct column sum): 4g, measured on an
    /// H100 at 45.9 TFLOP/s against rung 4's 37.8 in the same run.
    pub const BEST: Rung = Rung::Vecf2;
    /// Label for reports.
    pub fn label(&self) -> &'static str {
        match self {
            Rung::Naive => "1 naive",
            Rung::Tiled => "2 shared tiles 32x32",
            Rung::Regblock => "3 register blocking 64x64, 4x4/thread",
            Rung::Vec => "4 128x128, 8x8/thread, 16-byte loads, transposed As",
            Rung::Vec1 => "4b as 4, launch_bounds(256): 1 block/SM, no spill",
            Rung::Vec16 => "4c as 4b, k tile 16: 1 barrier per 1024 FMAs",
            Rung::Vec16x2 => "4d as 4c, launch_bounds(256,2): 2 blocks/SM",
            Rung::Vec16s => "4e as 4c, grouped block order (8 block rows)",
            Rung::Vecf => "4f as 4b, interior blocks: no bounds checks in the k loop",
            Rung::Vecf2 => "4g as 4f, launch_bounds(256,2): 2 blocks/SM",
            Rung::Async => "5 as 4b, cp.async 4 stages, As row-major",
            Rung::Async2 => "5b as 5, launch_bounds(256,2): 2 blocks/SM",
            Rung::Asyncs2 => "5c as 5b, A per step (8 regs): 2 blocks/SM",
            Rung::Asyncs => "5d as 5c, launch_bounds(256): 1 block/SM",
        }
    }
    /// Short name: the `--variant` spelling (`vec16`).
    pub fn name(&self) -> &'static str {
        match self {
            Rung::Naive => "naive",
            Rung::Tiled => "tiled",
            Rung::Regblock => "regblock",
            Rung::Vec => "vec",
            Rung::Vec1 => "vec1",
            Rung::Vec16 => "vec16",
            Rung::Vec16x2 => "vec16x2",
            Rung::Vec16s => "vec16s",
            Rung::Vecf => "vecf",
            Rung::Vecf2 => "vecf2",
            Rung::Async => "async",
            Rung::Async2 => "async2",
            Rung::Asyncs2 => "asyncs2",
            Rung::Asyncs => "asyncs",
        }
    }
    /// Kernel name (for the resource report).
    pub fn kernel(&self) -> &'static str {
        match self {
            Rung::Naive => "matmul_naive_f32",
            Rung::Tiled => "matmul_tiled_f32",
            Rung::Regblock => "matmul_regblock_f32",
            Rung::Vec => "matmul_vec_f32",
            Rung::Vec1 => "matmul_vec1_f32",
            Rung::Vec16 => "matmul_vec16_f32",
            Rung::Vec16x2 => "matmul_vec16x2_f32",
            Rung::Vec16s => "matmul_vec16s_f32",
            Rung::Vecf => "matmul_vecf_f32",
            Rung::Vecf2 => "matmul_vecf2_f32",
            Rung::Async => "matmul_async_f32",
            Rung::Async2 => "matmul_async2_f32",
            Rung::Asyncs2 => "matmul_asyncs2_f32",
            Rung::Asyncs => "matmul_asyncs_f32",
        }
    }
    /// The launch of this rung for `C` of `m x n`.
    pub fn config(&self, m: usize, n: usize) -> Result<LaunchConfig> {
        let blocks =
            |tile_n: usize, tile_m: usize, threads: u32, shared: usize| -> Result<LaunchConfig> {
                let (gx, gy) = (n.div_ceil(tile_n), m.div_ceil(tile_m));
                if gx > i32::MAX as usize || gy > 65535 {
                    return Err(Error::input(
                        "matmul",
                        format!(
                            "C of {m}x{n} needs a grid of {gx}x{gy} blocks; y is limited to 65535"
                        ),
                    ));
                }
                Ok(LaunchConfig {
                    grid: Dim3::xy(gx as u32, gy as u32),
                    block: Dim3::x(threads),
                    shared_bytes: shared,
                    module: ModuleKey::default(),
                })
            };
        match self {
            Rung::Naive => LaunchConfig::for_2d(n, m, k::NAIVE_BLOCK.0, k::NAIVE_BLOCK.1),
            Rung::Tiled => Ok(
                LaunchConfig::for_2d(n, m, k::TILED_T as u32, k::TILED_T as u32)?
                    .with_shared(k::tiled_shared_bytes()),
            ),
            Rung::Regblock => blocks(
                k::RB_BN,
                k::RB_BM,
                k::RB_THREADS,
                k::regblock_shared_bytes(),
            ),
            Rung::Vec | Rung::Vec1 | Rung::Vecf | Rung::Vecf2 => {
                blocks(k::VEC_BN, k::VEC_BM, k::VEC_THREADS, k::vec_shared_bytes())
            }
            Rung::Vec16 | Rung::Vec16x2 | Rung::Vec16s => blocks(
                k::VEC_BN,
                k::VEC_BM,
                k::VEC_THREADS,
                k::vec16_shared_bytes(),
            ),
            Rung::Async | Rung::Async2 => blocks(
                k::VEC_BN,
                k::VEC_BM,
                k::VEC_THREADS,
                k::async_shared_bytes(k::ASYNC_AS_LD),
            ),
            Rung::Asyncs2 | Rung::Asyncs => blocks(
                k::VEC_BN,
                k::VEC_BM,
                k::VEC_THREADS,
                k::async_shared_bytes(k::ASYNC_AS_LD_SCALAR),
            ),
        }
    }
}

impl std::str::FromStr for Rung {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match Rung::ALL.iter().find(|r| r.name() == s) {
            Some(r) => Ok(*r),
            None => Err(Error::input(
                "--variant",
                format!(
                    "`{s}`; allowed: {}, all",
                    Rung::ALL.map(|r| r.name()).join(", ")
                ),
            )),
        }
    }
}

/// Checks a product's shapes: `A` is `a_rows x a_cols`, `B` is
/// `b_rows x b_cols`. Returns `(m, n, k)`.
pub fn check_shapes(
    a_rows: usize,
    a_cols: usize,
    b_rows: usize,
    b_cols: usize,
) -> Result<(usize, usize, usize)> {
    if a_cols != b_rows {
        return Err(Error::input(
            "matmul",
            format!(
                "inner dimensions do not match: A is {a_rows}x{a_cols} and B is {b_rows}x{b_cols}; \
                 A's columns ({a_cols}) must equal B's rows ({b_rows})"
            ),
        ));
    }
    let (m, n, kk) = (a_rows, b_cols, a_cols);
    if m == 0 || n == 0 || kk == 0 {
        return Err(Error::input(
            "matmul",
            format!("zero dimension: m={m}, n={n}, k={kk}; every dimension must be at least 1"),
        ));
    }
    for (name, v) in [("m", m), ("n", n), ("k", kk)] {
        if v > u32::MAX as usize {
            return Err(Error::input(
                "matmul",
                format!("{name}={v} is larger than {}", u32::MAX),
            ));
        }
    }
    Ok((m, n, kk))
}

/// `a * b` as an element count, or an input error naming `what`.
fn elems(what: &str, a: usize, b: usize) -> Result<usize> {
    a.checked_mul(b).ok_or_else(|| {
        Error::input(
            "matmul",
            format!("{what} of {a}x{b} has more elements than memory can address"),
        )
    })
}

fn check_len(what: &str, got: usize, want: usize) -> Result<()> {
    if got != want {
        return Err(Error::input(
            "matmul",
            format!("{what} has {got} elements; the shapes need {want}"),
        ));
    }
    Ok(())
}

/// `C = A B` with rung `rung` on `dev` (buffer lengths checked against the shapes).
#[allow(clippy::too_many_arguments)]
pub fn gemm(
    dev: &Device,
    rung: Rung,
    a: &Buffer<f32>,
    b: &Buffer<f32>,
    c: &mut Buffer<f32>,
    m: usize,
    n: usize,
    kk: usize,
) -> Result<()> {
    check_shapes(m, kk, kk, n)?;
    check_len("A", a.len(), m * kk)?;
    check_len("B", b.len(), kk * n)?;
    check_len("C", c.len(), m * n)?;
    let cfg = rung.config(m, n)?;
    let (mu, nu, ku) = (m as u32, n as u32, kk as u32);
    match rung {
        Rung::Naive => launch!(dev, cfg, matmul::matmul_naive_f32(a, b, c, mu, nu, ku)),
        Rung::Tiled => launch!(dev, cfg, matmul::matmul_tiled_f32(a, b, c, mu, nu, ku)),
        Rung::Regblock => launch!(dev, cfg, matmul::matmul_regblock_f32(a, b, c, mu, nu, ku)),
        Rung::Vec => launch!(dev, cfg, matmul::matmul_vec_f32(a, b, c, mu, nu, ku)),
        Rung::Vec1 => launch!(dev, cfg, matmul::matmul_vec1_f32(a, b, c, mu, nu, ku)),
        Rung::Vec16 => launch!(dev, cfg, matmul::matmul_vec16_f32(a, b, c, mu, nu, ku)),
        Rung::Vec16x2 => launch!(dev, cfg, matmul::matmul_vec16x2_f32(a, b, c, mu, nu, ku)),
        Rung::Vec16s => launch!(dev, cfg, matmul::matmul_vec16s_f32(a, b, c, mu, nu, ku)),
        Rung::Vecf => launch!(dev, cfg, matmul::matmul_vecf_f32(a, b, c, mu, nu, ku)),
        Rung::Vecf2 => launch!(dev, cfg, matmul::matmul_vecf2_f32(a, b, c, mu, nu, ku)),
        Rung::Async => launch!(dev, cfg, matmul::matmul_async_f32(a, b, c, mu, nu, ku)),
        Rung::Async2 => launch!(dev, cfg, matmul::matmul_async2_f32(a, b, c, mu, nu, ku)),
        Rung::Asyncs2 => launch!(dev, cfg, matmul::matmul_asyncs2_f32(a, b, c, mu, nu, ku)),
        Rung::Asyncs => launch!(dev, cfg, matmul::matmul_asyncs_f32(a, b, c, mu, nu, ku)),
    }
}

/// Zeroes two buffers in one launch.
pub fn zero2(dev: &Device, x: &mut Buffer<f32>, y: &mut Buffer<f32>) -> Result<()> {
    let n = x.len().max(y.len()).max(1);
    let threads = n.min(256 * 1024);
    let cfg = LaunchConfig::for_threads(threads, k::COLSUM_BLOCK)?;
    launch!(dev, cfg, matmul::matmul_zero2_f32(x, y))
}

/// Zeroes two f32 buffers and the counters of the one-launch column sum.
fn zero3(
    dev: &Device,
    x: &mut Buffer<f32>,
    y: &mut Buffer<f32>,
    z: &mut Buffer<u32>,
) -> Result<()> {
    let n = x.len().max(y.len()).max(z.len()).max(1);
    let threads = n.min(256 * 1024);
    let cfg = LaunchConfig::for_threads(threads, k::COLSUM_BLOCK)?;
    launch!(dev, cfg, matmul::matmul_zero3_f32(x, y, z))
}

/// `true` when the driver exports `cuMemsetD8Async` (looked up once).
fn memset_available() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(|| crate::runtime::driver_symbol_present("cuMemsetD8Async"))
}

/// Zeroes `x` with the driver's memset on the stream every launch goes to
/// (on the simulator: a host write of zeros).
fn memset_zero(dev: &Device, x: &mut Buffer<f32>) -> Result<()> {
    match (dev.as_gpu(), x.cuda_slice_mut()) {
        (Some(g), Some(s)) => {
            if !memset_available() {
                return Err(Error::Unsupported {
                    what: "cuMemsetD8Async".into(),
                    backend: "gpu".into(),
                    hint: "this driver does not export it; use the zero kernel (the default plan)"
                        .into(),
                });
            }
            g.stream()
                .memset_zeros(s)
                .map_err(|e| Error::driver("cuMemsetD8Async", e))
        }
        _ => {
            let zeros = vec![0.0f32; x.len()];
            dev.write(x, &zeros)
        }
    }
}

fn chunk_config(rows: usize, cols: usize, chunk: usize) -> Result<LaunchConfig> {
    if chunk == 0 || chunk > u32::MAX as usize {
        return Err(Error::input(
            "column sum",
            format!("{chunk} rows per chunk; allowed 1..={}", u32::MAX),
        ));
    }
    let gx = cols.div_ceil(k::COLSUM_BLOCK as usize);
    let gy = rows.div_ceil(chunk);
    if gy > 65535 {
        return Err(Error::input(
            "column sum",
            format!("{rows} rows need {gy} chunks of {chunk}; at most 65535"),
        ));
    }
    Ok(LaunchConfig {
        grid: Dim3::xy(gx as u32, gy as u32),
        block: Dim3::x(k::COLSUM_BLOCK),
        shared_bytes: 0,
        module: ModuleKey::default(),
    })
}

/// Loads in flight per thread of the column-sum kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loads {
    /// Four partial sums (`matmul_colsum_f32`, `matmul_vecmat_f32`).
    Four,
    /// Eight partial sums (`matmul_colsum8_f32`, `matmul_vecmat8_f32`).
    Eight,
}

impl Loads {
    fn count(self) -> usize {
        match self {
            Loads::Four => 4,
            Loads::Eight => 8,
        }
    }
}

/// `out[j] += sum_i x[i, j]` for a `rows x cols` matrix (`out` zeroed first),
/// in chunks of [`COLSUM_ROWS`](k::COLSUM_ROWS) rows, eight loads in flight.
pub fn colsum_add(
    dev: &Device,
    x: &Buffer<f32>,
    out: &mut Buffer<f32>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    colsum_add_with(dev, x, out, rows, cols, k::COLSUM_ROWS, Loads::Eight)
}

/// [`colsum_add`] with `chunk` rows per block and `loads` in flight.
pub fn colsum_add_with(
    dev: &Device,
    x: &Buffer<f32>,
    out: &mut Buffer<f32>,
    rows: usize,
    cols: usize,
    chunk: usize,
    loads: Loads,
) -> Result<()> {
    check_shapes(rows, cols, cols, 1)?;
    check_len("the matrix", x.len(), elems("the matrix", rows, cols)?)?;
    check_len("the column sums", out.len(), cols)?;
    let cfg = chunk_config(rows, cols, chunk)?;
    let (r, c, ch) = (rows as u32, cols as u32, chunk as u32);
    match loads {
        Loads::Four => launch!(dev, cfg, matmul::matmul_colsum_f32(x, out, r, c, ch)),
        Loads::Eight => launch!(dev, cfg, matmul::matmul_colsum8_f32(x, out, r, c, ch)),
    }
}

/// `out[j] += sum_i v[i] b[i, j]`, `b` of `kk x n` (`out` zeroed first), in
/// chunks of [`COLSUM_ROWS`](k::COLSUM_ROWS) rows, eight loads in flight.
pub fn vecmat_add(
    dev: &Device,
    v: &Buffer<f32>,
    b: &Buffer<f32>,
    out: &mut Buffer<f32>,
    kk: usize,
    n: usize,
) -> Result<()> {
    vecmat_add_with(dev, v, b, out, kk, n, k::COLSUM_ROWS, Loads::Eight)
}

/// [`vecmat_add`] with `chunk` rows per block and `loads` in flight.
#[allow(clippy::too_many_arguments)]
pub fn vecmat_add_with(
    dev: &Device,
    v: &Buffer<f32>,
    b: &Buffer<f32>,
    out: &mut Buffer<f32>,
    kk: usize,
    n: usize,
    chunk: usize,
    loads: Loads,
) -> Result<()> {
    check_shapes(1, kk, kk, n)?;
    check_len("v", v.len(), kk)?;
    check_len("B", b.len(), elems("B", kk, n)?)?;
    check_len("the output", out.len(), n)?;
    let cfg = chunk_config(kk, n, chunk)?;
    let (kr, nc, ch) = (kk as u32, n as u32, chunk as u32);
    match loads {
        Loads::Four => launch!(dev, cfg, matmul::matmul_vecmat_f32(v, b, out, kr, nc, ch)),
        Loads::Eight => launch!(dev, cfg, matmul::matmul_vecmat8_f32(v, b, out, kr, nc, ch)),
    }
}

/// How the column sum of `A B` is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Colsum {
    /// SGEMM into `C`, then a column reduction of `C` (`2mnk` FLOP).
    Direct,
    /// `colsum(A) B`: a column reduction of `A`, then `v B` (memory-bound),
    /// with [`FusedPlan::DEFAULT`].
    Fused,
}

impl std::str::FromStr for Colsum {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "direct" => Ok(Colsum::Direct),
            "fused" => Ok(Colsum::Fused),
            _ => Err(Error::input(
                "--colsum",
                format!("`{s}`; allowed: direct, fused"),
            )),
        }
    }
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
        let (colsum, vecmat) = match loads {
            Loads::Four => ("matmul_colsum_f32", "matmul_vecmat_f32"),
            Loads::Eight => ("matmul_colsum8_f32", "matmul_vecmat8_f32"),
        };
        let resident = |kernel: &str| -> Result<usize> {
            let Some(g) = dev.as_gpu() else {
                return Ok(4 * 8);
            };
            let per_sm = if crate::runtime::driver_symbol_present(
                "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
            ) {
                g.function(&crate::modules::KERNELS, ModuleKey::default(), kernel)?
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
            check_shapes(m, kk, kk, n)?;
            check_len("A", a.len(), m * kk)?;
            check_len("B", b.len(), kk * n)?;
            check_len("v", bufs.v.len(), kk)?;
            check_len("the output", bufs.out.len(), n)?;
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
    check_shapes(m, kk, kk, n)?;
    check_len("A", a.len(), m * kk)?;
    check_len("B", b.len(), kk * n)?;
    check_len("v", bufs.v.len(), kk)?;
    check_len("the output", bufs.out.len(), n)?;
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
    };
    zero3(dev, &mut bufs.v, &mut bufs.out, &mut bufs.sync)?;
    let (mu, nu, ku) = (m as u32, n as u32, kk as u32);
    let (ca, cb) = (plan.chunk_a as u32, plan.chunk_b as u32);
    launch!(
        dev,
        cfg,
        matmul::matmul_colsum_product_f32(
            a,
            b,
            &mut bufs.v,
            &mut bufs.out,
            &mut bufs.sync,
            mu,
            nu,
            ku,
            ca,
            cb
        )
    )
}

/// Bytes the fused column sum must read: `A` and `B` once.
pub fn colsum_bytes(m: usize, n: usize, kk: usize) -> f64 {
    4.0 * (m * kk + kk * n) as f64
}

/// FLOP of one SGEMM.
pub fn flops(m: usize, n: usize, kk: usize) -> f64 {
    2.0 * m as f64 * n as f64 * kk as f64
}

/// Random inputs in [-1, 1) (never all zero).
pub fn inputs(m: usize, n: usize, kk: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let a = uniform_vec(seed, m * kk, -1.0, 1.0)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    let b = uniform_vec(seed ^ 0x5EED, kk * n, -1.0, 1.0)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    (a, b)
}

/// f64 reference `A B` (small sizes).
pub fn reference_f64(a: &[f32], b: &[f32], m: usize, n: usize, kk: usize) -> Vec<f64> {
    let mut c = vec![0f64; m * n];
    c.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
        for p in 0..kk {
            let aip = a[i * kk + p] as f64;
            for (cj, bj) in row.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                *cj += aip * *bj as f64;
            }
        }
    });
    c
}

/// CPU baseline, one thread: ndarray's `dot` (matrixmultiply's f32 kernel).
pub fn cpu_ndarray(a: &[f32], b: &[f32], m: usize, n: usize, kk: usize) -> Vec<f32> {
    let av = ndarray::ArrayView2::from_shape((m, kk), a).expect("shape matches the length");
    let bv = ndarray::ArrayView2::from_shape((kk, n), b).expect("shape matches the length");
    av.dot(&bv).into_iter().collect()
}

/// CPU baseline, rayon: blocks of 32 rows of `C` in parallel; inside a block
/// the `k` loop is split in panels of 256 so a panel of `B` stays in cache,
/// and the innermost loop (`c_row += a_ip * b_row`) vectorises.
pub fn cpu_rayon(a: &[f32], b: &[f32], m: usize, n: usize, kk: usize) -> Vec<f32> {
    const ROWS: usize = 32;
    const PANEL: usize = 256;
    let mut c = vec![0f32; m * n];
    c.par_chunks_mut(ROWS * n)
        .enumerate()
        .for_each(|(blk, cb)| {
            let r0 = blk * ROWS;
            let rows = cb.len() / n;
            let mut p0 = 0;
            while p0 < kk {
                let p1 = (p0 + PANEL).min(kk);
                for i in 0..rows {
                    let crow = &mut cb[i * n..(i + 1) * n];
                    for p in p0..p1 {
                        let aip = a[(r0 + i) * kk + p];
                        for (cj, bj) in crow.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                            *cj += aip * *bj;
                        }
                    }
                }
                p0 = p1;
            }
        });
    c
}

/// f64 reference of `colsum(A B)` computed as `colsum(A) B`.
pub fn colsum_reference(a: &[f32], b: &[f32], m: usize, n: usize, kk: usize) -> Vec<f64> {
    let mut v = vec![0f64; kk];
    for i in 0..m {
        for (vp, ap) in v.iter_mut().zip(&a[i * kk..(i + 1) * kk]) {
            *vp += *ap as f64;
        }
    }
    let mut out = vec![0f64; n];
    for (p, vp) in v.iter().enumerate() {
        for (o, bj) in out.iter_mut().zip(&b[p * n..(p + 1) * n]) {
            *o += vp * *bj as f64;
        }
    }
    out
}

/// Relative error of `rung` at `m x n x k` against the f64 reference (output
/// poisoned with NaN first).
pub fn check_rung(
    dev: &Device,
    rung: Rung,
    m: usize,
    n: usize,
    kk: usize,
    seed: u64,
) -> Result<f64> {
    let (ha, hb) = inputs(m, n, kk, seed);
    let a = dev.upload(&ha)?;
    let b = dev.upload(&hb)?;
    let mut c = dev.alloc_filled(m * n, f32::NAN)?;
    gemm(dev, rung, &a, &b, &mut c, m, n, kk)?;
    let got: Vec<f64> = dev.download(&c)?.into_iter().map(f64::from).collect();
    Ok(rel_err_norm(&got, &reference_f64(&ha, &hb, m, n, kk)))
}

/// Relative error of the column sum (`how`) at `m x n x k` against f64.
pub fn check_colsum(
    dev: &Device,
    how: Colsum,
    m: usize,
    n: usize,
    kk: usize,
    seed: u64,
) -> Result<f64> {
    let (ha, hb) = inputs(m, n, kk, seed);
    let a = dev.upload(&ha)?;
    let b = dev.upload(&hb)?;
    let mut bufs = ColsumBufs::new(dev, how, m, n, kk)?;
    colsum_of_product(dev, how, &a, &b, &mut bufs, m, n, kk)?;
    let got: Vec<f64> = dev
        .download(&bufs.out)?
        .into_iter()
        .map(f64::from)
        .collect();
    Ok(rel_err_norm(&got, &colsum_reference(&ha, &hb, m, n, kk)))
}

/// Relative error of the fused column sum with `plan` at `m x n x k` against
/// f64, computed twice on the same (poisoned) buffers: the second call checks
/// that each call clears what the previous one left. A one-launch plan must
/// also report no spin-wait timeout.
pub fn check_fused(
    dev: &Device,
    plan: &FusedPlan,
    m: usize,
    n: usize,
    kk: usize,
    seed: u64,
) -> Result<f64> {
    let (ha, hb) = inputs(m, n, kk, seed);
    let a = dev.upload(&ha)?;
    let b = dev.upload(&hb)?;
    let want = colsum_reference(&ha, &hb, m, n, kk);
    let mut bufs = ColsumBufs::new(dev, Colsum::Fused, m, n, kk)?;
    let mut worst = 0.0f64;
    for _ in 0..2 {
        fused_colsum(dev, plan, &a, &b, &mut bufs, m, n, kk)?;
        if plan.one_launch {
            bufs.check_no_timeout(dev)?;
        }
        let got: Vec<f64> = dev
            .download(&bufs.out)?
            .into_iter()
            .map(f64::from)
            .collect();
        let e = rel_err_norm(&got, &want);
        // NaN (a poisoned slot never written) must win over any number.
        worst = if e.is_nan() { e } else { worst.max(e) };
    }
    Ok(worst)
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

/// Tolerance of the SGEMM checks (f32 sums of up to a few thousand terms).
pub const TOL: f64 = 1e-4;

fn verify(what: String, err: f64, tol: f64) -> Result<f64> {
    if err.is_finite() && err <= tol {
        Ok(err)
    } else {
        Err(Error::Verification {
            what,
            detail: format!("relative error {err:.2e} > {tol:.0e}"),
        })
    }
}

/// Sampled check of a big product: 64 random entries of `C` against f64 dots.
fn sample_check(c: &[f32], a: &[f32], b: &[f32], m: usize, n: usize, kk: usize) -> f64 {
    let mut r = SplitMix64(99);
    let (mut got, mut want) = (Vec::new(), Vec::new());
    for _ in 0..64 {
        let i = (r.next_u64() % m as u64) as usize;
        let j = (r.next_u64() % n as u64) as usize;
        let s: f64 = (0..kk)
            .map(|p| a[i * kk + p] as f64 * b[p * n + j] as f64)
            .sum();
        got.push(c[i * n + j] as f64);
        want.push(s);
    }
    rel_err_norm(&got, &want)
}

/// Every matmul kernel on the simulator at small odd sizes.
pub fn sim_check() -> Result<()> {
    let dev = Device::sim();
    // 37x29x41: nothing is a multiple of a tile or of 4 (scalar edge paths);
    // 33x36x44: k and n multiples of 4 (the 16-byte paths of rung 4) but m ragged.
    for (m, n, kk) in [(37, 29, 41), (33, 36, 44)] {
        for rung in Rung::ALL {
            let e = check_rung(&dev, rung, m, n, kk, 5)?;
            verify(
                format!("matmul {} {m}x{n}x{kk} (simulator)", rung.label()),
                e,
                TOL,
            )?;
        }
    }
    // Column sums: 130x29x41, three row chunks of 64 (the last of 2 rows);
    // 301x36x44, five chunks (the last of 45 rows: the 4-row loop and its tail).
    for (m, n, kk) in [(130, 29, 41), (301, 36, 44)] {
        for how in [Colsum::Fused, Colsum::Direct] {
            let e = check_colsum(&dev, how, m, n, kk, 11)?;
            verify(
                format!("column sum {how:?} {m}x{n}x{kk} (simulator)"),
                e,
                1e-4,
            )?;
        }
    }
    // Every fused plan the benchmark times, at a shape where A has two
    // blocks of columns (k = 300 > 256) and B a ragged one, and no chunk
    // size divides a row count (the 8-row loop and its tail).
    let (m, n, kk) = (301, 37, 300);
    for plan in bench_plans(&dev, m, n, kk)? {
        let e = check_fused(&dev, &plan, m, n, kk, 12)?;
        verify(
            format!("{} {m}x{n}x{kk} (simulator)", plan.label()),
            e,
            1e-4,
        )?;
    }
    Ok(())
}

fn cpu_rows(ctx: &BenchCtx, rows: &mut Vec<Row>) -> f64 {
    let s = if ctx.quick { 256 } else { 512 };
    let (a, b) = inputs(s, s, s, 1);
    let t1 = Timing::host(0, 2, || {
        std::hint::black_box(cpu_ndarray(&a, &b, s, s, s));
    });
    let rs = if ctx.quick { 512 } else { 1024 };
    let (ra, rb) = inputs(rs, rs, rs, 2);
    let tr = Timing::host(0, 2, || {
        std::hint::black_box(cpu_rayon(&ra, &rb, rs, rs, rs));
    });
    let g1 = flops(s, s, s) / (t1.median_ms * 1e-3) / 1e9;
    let gr = flops(rs, rs, rs) / (tr.median_ms * 1e-3) / 1e9;
    for (name, size, t, g) in [
        ("CPU 1 thread (ndarray dot)", format!("{s}^3"), t1, g1),
        ("CPU rayon blocked", format!("{rs}^3"), tr, gr),
    ] {
        let mut r = Row::new("matmul", name, "cpu", &size, "f32");
        r.throughput = Some(g);
        r.unit = "GFLOP/s".into();
        r.speedup = Some(g / g1);
        r.timing = Some(t);
        rows.push(r);
    }
    g1
}

/// Timed repetitions for a call that took `ms` once: about 2 s per row at most.
fn reps_for(ms: f64, max: usize) -> usize {
    ((2000.0 / ms.max(1e-3)) as usize).clamp(3, max.max(3))
}

/// The benchmark: SGEMM GFLOP/s per rung at 4096^3 and at the material's
/// shape (quick: 2048^3), and the column sum both ways at the material's shape.
pub fn bench(ctx: &BenchCtx) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let g1 = cpu_rows(ctx, &mut rows);
    let Some(dev) = ctx.gpu() else {
        rows.push(super::skipped_gpu("matmul", ctx));
        return Ok(rows);
    };
    let arch = dev.as_gpu().map(|g| g.info().arch()).unwrap_or_default();
    // Correctness of every rung at an odd size first.
    let mut ok = Vec::new();
    for rung in Rung::ALL {
        let r = check_rung(dev, rung, 517, 389, 301, 3)
            .and_then(|e| verify(format!("matmul {} 517x389x301", rung.label()), e, TOL));
        ok.push((rung, r));
    }
    let shapes: Vec<(usize, usize, usize)> = if ctx.quick {
        vec![(2048, 2048, 2048)]
    } else {
        vec![(4096, 4096, 4096), (10000, 7000, 5000)]
    };
    for &(m, n, kk) in &shapes {
        let size = if m == n && n == kk {
            format!("{m}^3")
        } else {
            format!("({m}x{kk})({kk}x{n})")
        };
        let (ha, hb) = inputs(m, n, kk, 7);
        let a = dev.upload(&ha)?;
        let b = dev.upload(&hb)?;
        let mut c = dev.alloc_filled(m * n, f32::NAN)?;
        for (rung, checked) in &ok {
            let mut row = Row::new("matmul", rung.label(), "gpu", &size, "f32");
            if let Some(res) = crate::modules::resource(rung.kernel(), &arch, false) {
                row.registers = Some(res.registers);
                row.spills = Some(res.spill_stores + res.spill_loads);
            }
            match checked {
                Ok(e) => row.rel_err = Some(*e),
                Err(e) => {
                    row.status = Status::Failed(e.to_string());
                    rows.push(row);
                    continue;
                }
            }
            dev.write(&mut c, &vec![f32::NAN; m * n])?;
            let t0 = std::time::Instant::now();
            gemm(dev, *rung, &a, &b, &mut c, m, n, kk)?;
            dev.synchronize()?;
            let first = t0.elapsed().as_secs_f64() * 1e3;
            row.first_ms = Some(first);
            let got = dev.download(&c)?;
            let e = sample_check(&got, &ha, &hb, m, n, kk);
            if !(e <= 1e-3) {
                row.status =
                    Status::Failed(format!("64 sampled entries: relative error {e:.2e} > 1e-3"));
                rows.push(row);
                continue;
            }
            if *rung == Rung::Naive && first > 2000.0 {
                row.status =
                    Status::Skipped(format!("one call took {first:.0} ms (> 2 s); not timed"));
                rows.push(row);
                continue;
            }
            let t = dev.time(1, reps_for(first, ctx.reps()), |_| {
                gemm(dev, *rung, &a, &b, &mut c, m, n, kk)
            })?;
            let g = flops(m, n, kk) / (t.median_ms * 1e-3) / 1e9;
            row.throughput = Some(g);
            row.unit = "GFLOP/s".into();
            row.pct_of_ceiling = ctx.ceilings.fp32_flops.map(|f| 100.0 * g * 1e9 / f);
            row.speedup = Some(g / g1);
            row.timing = Some(t);
            rows.push(row);
        }
    }
    // The material's column sum, both ways.
    let (m, n, kk) = if ctx.quick {
        (4000, 3000, 2000)
    } else {
        (10000, 7000, 5000)
    };
    let size = format!("({m}x{kk})({kk}x{n})");
    let (ha, hb) = inputs(m, n, kk, 13);
    let want = colsum_reference(&ha, &hb, m, n, kk);
    let a = dev.upload(&ha)?;
    let b = dev.upload(&hb)?;
    let bytes = colsum_bytes(m, n, kk);
    // The direct way, then every fused plan (the default first, with its
    // historical label). A plan that fails gives a failed row, not an
    // aborted benchmark.
    let mut ways: Vec<(String, Option<FusedPlan>)> = vec![(
        "colsum direct: SGEMM (rung 4g) + column sum".to_string(),
        None,
    )];
    match bench_plans(dev, m, n, kk) {
        Ok(plans) => ways.extend(plans.into_iter().map(|p| (p.label(), Some(p)))),
        Err(e) => {
            ways.push((FusedPlan::DEFAULT.label(), Some(FusedPlan::DEFAULT)));
            let mut row = Row::new("matmul", "colsum fused plans", "gpu", &size, "f32");
            row.status = Status::Failed(format!("could not size the one-wave plans: {e}"));
            rows.push(row);
        }
    }
    for (label, plan) in ways {
        let how = if plan.is_some() {
            Colsum::Fused
        } else {
            Colsum::Direct
        };
        let mut row = Row::new("matmul", &label, "gpu", &size, "f32");
        if plan.is_some_and(|p| p.one_launch)
            && let Some(res) = crate::modules::resource("matmul_colsum_product_f32", &arch, false)
        {
            row.registers = Some(res.registers);
            row.spills = Some(res.spill_stores + res.spill_loads);
        }
        let mut bufs = ColsumBufs::new(dev, how, m, n, kk)?;
        let call = |bufs: &mut ColsumBufs| match &plan {
            Some(p) => fused_colsum(dev, p, &a, &b, bufs, m, n, kk),
            None => colsum_of_product(dev, how, &a, &b, bufs, m, n, kk),
        };
        let t0 = std::time::Instant::now();
        let first = call(&mut bufs).and_then(|()| dev.synchronize());
        if let Err(e) = first {
            row.status = Status::Failed(e.to_string());
            rows.push(row);
            continue;
        }
        let first = t0.elapsed().as_secs_f64() * 1e3;
        row.first_ms = Some(first);
        if plan.is_some_and(|p| p.one_launch)
            && let Err(e) = bufs.check_no_timeout(dev)
        {
            row.status = Status::Failed(e.to_string());
            rows.push(row);
            continue;
        }
        let got: Vec<f64> = dev
            .download(&bufs.out)?
            .into_iter()
            .map(f64::from)
            .collect();
        let e = rel_err_norm(&got, &want);
        row.rel_err = Some(e);
        if !(e <= 1e-3) {
            row.status = Status::Failed(format!("relative error {e:.2e} > 1e-3"));
            rows.push(row);
            continue;
        }
        let t = match dev.time(2, reps_for(first, ctx.reps()), |_| call(&mut bufs)) {
            Ok(t) => t,
            Err(e) => {
                row.status = Status::Failed(e.to_string());
                rows.push(row);
                continue;
            }
        };
        // Throughput against the fused way's floor (A and B read once), so
        // every row compares with the copy bandwidth.
        let gbs = bytes / (t.median_ms * 1e-3) / 1e9;
        row.throughput = Some(gbs);
        row.unit = "GB/s".into();
        row.pct_of_ceiling = ctx.ceilings.copy_gbs.map(|c| 100.0 * gbs / c);
        row.timing = Some(t);
        rows.push(row);
    }
    Ok(rows)
}

/// `ptxlab matmul` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Rows of A and C.
    #[arg(long, default_value_t = 1024, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub m: usize,
    /// Columns of B and C.
    #[arg(long, default_value_t = 1024, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub n: usize,
    /// Columns of A, rows of B.
    #[arg(long, default_value_t = 1024, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub k: usize,
    /// naive, tiled, regblock, vec, vec1, vec16, vec16x2, vec16s, vecf, vecf2, async, async2, asyncs2, asyncs or all.
    #[arg(long, default_value = "all")]
    pub variant: String,
    /// Also compute colsum(A B): direct or fused.
    #[arg(long)]
    pub colsum: Option<String>,
    /// gpu, sim or cpu.
    #[arg(long, default_value = "gpu")]
    pub backend: String,
    /// Timed repetitions (1..=10000).
    #[arg(long, default_value_t = 10, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
}

/// Most multiply-adds (`m n k`) of a simulated run.
pub const SIM_MAX_MNK: usize = 1 << 21;
/// Most multiply-adds of a `--backend cpu` run (its one-thread baseline).
pub const CPU_MAX_MNK: usize = 1 << 36;

/// `ptxlab matmul`.
pub fn cli(args: &Args) -> Result<()> {
    let backend: crate::Backend = args.backend.parse()?;
    let (m, n, kk) = check_shapes(args.m, args.k, args.k, args.n)?;
    let rungs: Vec<Rung> = if args.variant == "all" {
        Rung::ALL.to_vec()
    } else {
        vec![args.variant.parse()?]
    };
    let colsum: Option<Colsum> = args.colsum.as_deref().map(str::parse).transpose()?;
    crate::cli::check_reps(args.reps)?;
    if backend == crate::Backend::Sim && m.saturating_mul(n).saturating_mul(kk) > SIM_MAX_MNK {
        return Err(Error::input(
            "matmul",
            format!(
                "{m}x{n}x{kk} is too large for the simulator; use m*n*k <= 2^21 (e.g. --m 128 --n 128 \
                 --k 128), or --backend cpu"
            ),
        ));
    }
    // A, B, C (and the f64 reference of C, and the device's copies).
    let host_elems = [elems("A", m, kk)?, elems("B", kk, n)?, elems("C", m, n)?]
        .iter()
        .try_fold(0usize, |a, &b| a.checked_add(b))
        .ok_or_else(|| {
            Error::input(
                "--m/--n/--k",
                "A, B and C together overflow the address space",
            )
        })?;
    crate::cli::check_host_arrays("--m/--n/--k", host_elems, 4, 4)?;
    if backend == crate::Backend::Cpu && m.saturating_mul(n).saturating_mul(kk) > CPU_MAX_MNK {
        return Err(Error::input(
            "matmul",
            format!(
                "{m}x{n}x{kk} = {} multiply-adds is too large for the one-thread CPU baseline; at \
                 most 2^36 (about a minute): use smaller --m/--n/--k, or --backend gpu",
                m.saturating_mul(n).saturating_mul(kk)
            ),
        ));
    }
    // Before the inputs are made: a missing driver is reported at once.
    let dev = crate::cli::open_device(backend)?;
    let (ha, hb) = inputs(m, n, kk, 42);
    let dev = match dev {
        Some(d) => d,
        None => {
            let t1 = Timing::host(0, 1, || {
                std::hint::black_box(cpu_ndarray(&ha, &hb, m, n, kk));
            });
            let tr = Timing::host(0, args.reps.min(3), || {
                std::hint::black_box(cpu_rayon(&ha, &hb, m, n, kk));
            });
            for (name, t) in [("ndarray dot, 1 thread", t1), ("rayon blocked", tr)] {
                println!(
                    "{name}: {} ms, {:.1} GFLOP/s",
                    fmt_ms(t.median_ms),
                    flops(m, n, kk) / (t.median_ms * 1e-3) / 1e9
                );
            }
            return Ok(());
        }
    };
    let a = dev.upload(&ha)?;
    let b = dev.upload(&hb)?;
    let mut c = dev.alloc_filled(m * n, f32::NAN)?;
    let small = m * n * kk <= 1 << 27;
    let want = if small {
        Some(reference_f64(&ha, &hb, m, n, kk))
    } else {
        None
    };
    let reps = if dev.is_sim() { 1 } else { args.reps };
    for rung in rungs {
        dev.write(&mut c, &vec![f32::NAN; m * n])?;
        gemm(&dev, rung, &a, &b, &mut c, m, n, kk)?;
        let got = dev.download(&c)?;
        let e = match &want {
            Some(w) => rel_err_norm(&got.iter().map(|v| *v as f64).collect::<Vec<_>>(), w),
            None => sample_check(&got, &ha, &hb, m, n, kk),
        };
        verify(
            format!("matmul {} {m}x{n}x{kk}", rung.label()),
            e,
            if small { TOL } else { 1e-3 },
        )?;
        let t = dev.time(1, reps, |_| gemm(&dev, rung, &a, &b, &mut c, m, n, kk))?;
        println!(
            "PASS {} on {}: rel err {e:.1e}, median {} ms, {:.1} GFLOP/s",
            rung.label(),
            dev.name(),
            fmt_ms(t.median_ms),
            flops(m, n, kk) / (t.median_ms * 1e-3) / 1e9
        );
    }
    if let Some(how) = colsum {
        let e = check_colsum(&dev, how, m, n, kk, 42)?;
        verify(format!("column sum {how:?}"), e, 1e-3)?;
        let mut bufs = ColsumBufs::new(&dev, how, m, n, kk)?;
        let t = dev.time(1, reps, |_| {
            colsum_of_product(&dev, how, &a, &b, &mut bufs, m, n, kk)
        })?;
        println!(
            "PASS column sum {how:?}: rel err {e:.1e}, median {} ms, {:.1} GB/s of the {:.0} MB floor",
            fmt_ms(t.median_ms),
            colsum_bytes(m, n, kk) / (t.median_ms * 1e-3) / 1e9,
            colsum_bytes(m, n, kk) / 1e6
        );
    }
    Ok(())
}
