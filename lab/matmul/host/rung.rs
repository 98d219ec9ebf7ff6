//! The rungs of the SGEMM ladder: names, labels, kernels and launch shapes.

use kernels_gpu::matmul as k;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::runtime::{LaunchConfig, ModuleKey};
use ptxlab_device::Dim3;

/// The rungs of the SGEMM ladder, in order (`--variant`: the names in
/// lower case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
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
    /// The `--variant` spelling (`vec16x2`).
    pub fn name(&self) -> String {
        ptxlab_common::cli::value_name(self)
    }
    /// The PTX entry of the rung's kernel (for the resource report).
    pub fn entry(&self) -> &'static str {
        use k::{VEC_BK as B8, VEC16_BK as B16};
        use k::{matmul_async as asy, matmul_vec as vec, matmul_vecf as vecf};
        match self {
            Rung::Naive => <k::matmul_naive_f32::Of as k::matmul_naive_f32::Instance>::ENTRY,
            Rung::Tiled => <k::matmul_tiled_f32::Of as k::matmul_tiled_f32::Instance>::ENTRY,
            Rung::Regblock => {
                <k::matmul_regblock_f32::Of as k::matmul_regblock_f32::Instance>::ENTRY
            }
            Rung::Vec => <vec::Of<B8, false, 2> as vec::Instance>::ENTRY,
            Rung::Vec1 => <vec::Of<B8, false, 1> as vec::Instance>::ENTRY,
            Rung::Vec16 => <vec::Of<B16, false, 1> as vec::Instance>::ENTRY,
            Rung::Vec16x2 => <vec::Of<B16, false, 2> as vec::Instance>::ENTRY,
            Rung::Vec16s => <vec::Of<B16, true, 1> as vec::Instance>::ENTRY,
            Rung::Vecf => <vecf::Of<1> as vecf::Instance>::ENTRY,
            Rung::Vecf2 => <vecf::Of<2> as vecf::Instance>::ENTRY,
            Rung::Async => <asy::Of<false, 1> as asy::Instance>::ENTRY,
            Rung::Async2 => <asy::Of<false, 2> as asy::Instance>::ENTRY,
            Rung::Asyncs2 => <asy::Of<true, 2> as asy::Instance>::ENTRY,
            Rung::Asyncs => <asy::Of<true, 1> as asy::Instance>::ENTRY,
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
                    cluster: None,
                })
            };
        match self {
            Rung::Naive => Ok(LaunchConfig::for_2d(
                n,
                m,
                k::NAIVE_BLOCK.0,
                k::NAIVE_BLOCK.1,
            )?),
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
