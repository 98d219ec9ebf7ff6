//! Tensor-core GEMM ladder, warp level (`mma.sync`, sm_80 and newer):
//! `C = A B` with BF16 or FP16 inputs and f32 accumulators (the output is
//! rounded to the input type, as `torch.matmul` does), and an f32-accurate
//! GEMM from TF32 tensor-core products (3xTF32).
//!
//! Shapes as in [`matmul`](crate::matmul): `A` is `m x k`, `B` is `k x n`,
//! `C` is `m x n`, all row-major; 16-bit values are stored as their bits
//! (`u16`). Any `m`, `n`, `k` works: loads outside the matrices read zero
//! and stores outside are skipped. When a row of `A` or `B` is not 16-byte
//! aligned (`k` or `n` not a multiple of 8 for 16-bit types, of 4 for f32)
//! the tile copies fall back to element-by-element loads.
//!
//! The ladder, in order (the `wgmma` rungs 4 and 5, for sm_90a, are in
//! [`hopper`](crate::hopper)). Each rung is one kernel generic over the
//! 16-bit type (`T: Half16`), built for both (`instances(Bf16, F16)`:
//! entries `matmul_mma_bf16`, `matmul_mma_f16`, and so on):
//!
//! 1. [`matmul_mma`]: `mma.sync.m16n8k16`, operand fragments read from
//!    shared memory one 32-bit word (or 16-bit value) at a time.
//! 2. [`matmul_ldsm`]: fragments by `ldmatrix` from padded shared-memory
//!    rows (no bank conflicts), tiles twice as deep, 16-byte global loads.
//! 3. [`matmul_pipe`]: 128x128 block tiles, 64x64 per warp, fed by
//!    `cp.async` four stages deep; variants 3b ([`matmul_pipek`], tiles 64
//!    deep), 3c ([`matmul_pipew`], 128x256), 3d ([`matmul_pipes`]: lean
//!    tile copies, XOR-swizzled shared memory, fragments loaded a step
//!    ahead, rasterised blocks: the fastest `mma.sync` rung) and 3e
//!    ([`matmul_pipet`], 3d with 256x128 tiles, one block of eight warps
//!    per SM).
//!
//! And [`matmul_tf32x3_f32`]: f32 in, f32 out, each operand split into a
//! TF32 high part and a TF32 remainder, three `mma.m16n8k8.tf32` products
//! summed per tile.
//!
//! # Files
//! One file per rung family: `frag.rs` (what the 16-bit rungs share: the
//! tile copies, a warp's `mma` step and its stores), `mma_ldsm.rs` (rungs 1
//! and 2), `pipe.rs` (rungs 3 to 3c, `cp.async` stages), `pipes.rs` (rungs
//! 3d and 3e: swizzled shared memory, fragments a step ahead, rasterised
//! blocks), `tf32.rs` (3xTF32 and its operand splits) and `pitch.rs` (the
//! staging copy of the TMA rungs). This file holds the launch constants and
//! shared-memory sizes of rungs 1 to 3 and 3xTF32.
//!
//! The files are included into this one module (`include!`), not modules
//! of their own: rustc's MIR inliner decides whether a local generic
//! function may be inlined into its caller by comparing the two items'
//! definition-path hashes, so a path with one more module would compile
//! these kernels to different PTX. One module keeps every item's path
//! `kernels_gpu::tensor::<name>`, and each kernel's PTX with it
//! (`cargo xtask ptx-diff`).

use crate::matmul::RowMajor;
use ptxlab_device::mem::{F32x2, U32x4};
use ptxlab_device::mma::{self, Bf16, F16, FragA16, FragATf32, FragB16, FragBTf32, FragC, Half16};
use ptxlab_device::pipeline::CpAsyncPipeline;
use ptxlab_device::prelude::*;
use ptxlab_device::unroll;

/// Rung 1 block tile rows.
pub const MMA_BM: usize = 64;
/// Rung 1 block tile columns.
pub const MMA_BN: usize = 64;
/// Rung 1 `k` per tile (one `m16n8k16` deep).
pub const MMA_BK: usize = 16;
/// Threads of rungs 1 and 2: four warps, 2 x 2, each a 32 x 32 warp tile.
pub const MMA_THREADS: u32 = 128;

/// Rung 2 `k` per tile.
pub const LDSM_BK: usize = 32;
/// Rung 2 (and 3) padded row of the `A` tile, in 16-bit values: 32 + 8 (80
/// bytes, five 16-byte chunks). The eight rows an `ldmatrix` reads start in
/// chunks `5 r mod 8`, all different, so the eight 16-byte reads of one
/// matrix hit all 32 banks once.
pub const LDSM_A_LD: usize = LDSM_BK + 8;
/// Rung 2 padded row of the `B` tile: 64 + 8 values (144 bytes, 9 chunks:
/// chunk `9 r mod 8 = r`, conflict-free for the same reason).
pub const LDSM_B_LD: usize = MMA_BN + 8;

/// Rung 3 block tile rows.
pub const PIPE_BM: usize = 128;
/// Rung 3 block tile columns.
pub const PIPE_BN: usize = 128;
/// Rung 3 `k` per tile.
pub const PIPE_BK: usize = 32;
/// Rung 3 tiles in flight (`cp.async` stages).
pub const PIPE_STAGES: usize = 4;
/// Rung 3 threads: four warps, 2 x 2, each a 64 x 64 warp tile.
pub const PIPE_THREADS: u32 = 128;
/// Rung 3 padded row of the `B` tile: 128 + 8 values (17 chunks, conflict-free).
pub const PIPE_B_LD: usize = PIPE_BN + 8;

/// 3xTF32 block tile rows.
pub const TF32_BM: usize = 128;
/// 3xTF32 block tile columns.
pub const TF32_BN: usize = 128;
/// 3xTF32 `k` per tile (f32: 64 bytes per row of `A`).
pub const TF32_BK: usize = 16;
/// 3xTF32 tiles in flight.
pub const TF32_STAGES: usize = 4;
/// 3xTF32 threads: eight warps, 2 x 4, each a 64 x 32 warp tile.
pub const TF32_THREADS: u32 = 256;
/// 3xTF32 padded row of the `A` tile in f32: 16 + 4 (80 bytes, conflict-free `ldmatrix`).
pub const TF32_A_LD: usize = TF32_BK + 4;
/// 3xTF32 padded row of the `B` tile in f32: 128 + 8. A warp's scalar
/// fragment loads read words `136 tig + gid`, banks `8 tig + gid`: all 32
/// different.
pub const TF32_B_LD: usize = TF32_BN + 8;

/// Dynamic shared memory of rung 1: `As[64][16]` then `Bs[16][64]`, 16-bit.
pub const fn mma_shared_bytes() -> usize {
    shared::shared_bytes::<u16>(0, MMA_BM * MMA_BK + MMA_BK * MMA_BN)
}

/// Dynamic shared memory of rung 2: `As[64][40]` then `Bs[32][72]`, 16-bit.
pub const fn ldsm_shared_bytes() -> usize {
    shared::shared_bytes::<u16>(0, MMA_BM * LDSM_A_LD + LDSM_BK * LDSM_B_LD)
}

/// 16-bit values per stage of rung 3: `As[128][40]` then `Bs[32][136]`.
const PIPE_STAGE: usize = PIPE_BM * LDSM_A_LD + PIPE_BK * PIPE_B_LD;

/// Dynamic shared memory of rung 3: [`PIPE_STAGES`] stages (75,776 bytes).
pub const fn pipe_shared_bytes() -> usize {
    shared::shared_bytes::<u16>(0, PIPE_STAGES * PIPE_STAGE)
}

/// f32 values per stage of 3xTF32: `As[128][20]` then `Bs[16][136]`.
const TF32_STAGE: usize = TF32_BM * TF32_A_LD + TF32_BK * TF32_B_LD;

/// Dynamic shared memory of 3xTF32: [`TF32_STAGES`] stages (75,776 bytes).
pub const fn tf32x3_shared_bytes() -> usize {
    shared::shared_bytes::<f32>(0, TF32_STAGES * TF32_STAGE)
}

/// Stops the kernel unless the buffers hold the `m x k`, `k x n` and
/// `m x n` matrices the launch names (the launchers pass exactly those):
/// after this the unchecked accesses below are in bounds.
#[inline(always)]
fn check_lengths<T: Copy, U: Copy>(
    a: DeviceSlice<T>,
    b: DeviceSlice<T>,
    c: DeviceSliceMut<U>,
    m: usize,
    n: usize,
    k: usize,
) {
    if a.len() < m * k || b.len() < k * n || c.len() < m * n {
        ptxlab_device::trap("matmul: a buffer is shorter than its matrix");
    }
}

include!("frag.rs");
include!("mma_ldsm.rs");
include!("pipe.rs");
include!("pipes.rs");
include!("tf32.rs");
include!("pitch.rs");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_memory_sizes() {
        assert_eq!(mma_shared_bytes(), 4096);
        assert_eq!(ldsm_shared_bytes(), 64 * 80 + 32 * 144);
        assert_eq!(pipe_shared_bytes(), 4 * (128 * 80 + 32 * 272));
        assert_eq!(tf32x3_shared_bytes(), 4 * (128 * 80 + 16 * 544));
        assert!(pipe_shared_bytes() <= 227 * 1024);
        assert_eq!(pipes_shared_bytes(), 3 * (128 * 128 + 64 * 256));
        assert!(2 * pipes_shared_bytes() <= 227 * 1024);
        // Rung 3e: 256 x 64 and 64 x 128 per stage, four stages, one block.
        assert_eq!(pipet_shared_bytes(), 4 * (256 * 128 + 64 * 256));
        assert!(pipet_shared_bytes() <= 227 * 1024);
        // The kernels' `launch_bounds` say 128 and 256.
        assert_eq!((PIPES_THREADS, PIPET_THREADS), (128, 256));
    }

    #[test]
    fn swizzle_spreads_every_ldmatrix_matrix_and_copied_line_over_all_banks() {
        // An `ldmatrix` matrix: rows r0..r0 + 8 (r0 a multiple of 8, as in
        // the kernel) at one logical chunk; the bank group of a chunk is its
        // position in its 128-byte line (rows are whole lines).
        for r0 in [0, 8, 56] {
            for q in 0..16 {
                let mut seen = [false; 8];
                for r in r0..r0 + 8 {
                    let p = swizzle(r, q);
                    assert_eq!(p / 8, q / 8, "a chunk stays in its line");
                    seen[p % 8] = true;
                }
                assert!(seen.iter().all(|s| *s), "rows {r0}.. chunk {q}");
            }
        }
        // A copied line (one row's eight chunks) is a permutation.
        for r in 0..16 {
            let mut seen = [false; 8];
            for q in 0..8 {
                seen[swizzle(r, q)] = true;
            }
            assert!(seen.iter().all(|s| *s), "row {r}");
        }
        assert_eq!(swizzle(3, 1), 2);
        assert_eq!(swizzle(9, 9), 8);
    }

    #[test]
    fn raster_visits_every_tile_once() {
        for (gx, gy) in [(1, 1), (5, 3), (3, 17), (64, 64), (55, 79)] {
            let mut seen = [0u8; 64 * 79];
            for bid in 0..gx * gy {
                let (r, c) = raster(bid, gx, gy, PIPES_GROUP);
                assert!(r < gy && c < gx, "{gx}x{gy} block {bid}: ({r}, {c})");
                seen[r * gx + c] += 1;
            }
            assert!(seen[..gx * gy].iter().all(|v| *v == 1), "{gx}x{gy}");
        }
        // Consecutive blocks walk down a group of 8 rows, then move right.
        assert_eq!(raster(0, 64, 64, 8), (0, 0));
        assert_eq!(raster(7, 64, 64, 8), (7, 0));
        assert_eq!(raster(8, 64, 64, 8), (0, 1));
        assert_eq!(raster(8 * 64, 64, 64, 8), (8, 0));
        // The last, shorter group of 79 = 9 x 8 + 7 rows.
        assert_eq!(raster(72 * 55 + 7, 55, 79, 8), (72, 1));
    }
}
