//! SGEMM ladder, `C = A B` (f32, row-major, any `m`, `n`, `k`), and the
//! column sum of a product, `colsum(A B)`, two ways.
//!
//! Shapes: `A` is `m x k`, `B` is `k x n`, `C` is `m x n`, all row-major.
//! Axis convention: `x` is the column (fastest-varying), `y` the row.
//!
//! The ladder, in order (each rung says what changed and what it buys):
//!
//! 1. [`matmul_naive_f32`]: one thread per output, operands from global memory.
//! 2. [`matmul_tiled_f32`]: 32x32 shared-memory tiles, one output per thread.
//! 3. [`matmul_regblock_f32`]: 64x64 block tile, 4x4 outputs per thread in
//!    registers.
//! 4. [`matmul_vec`]: 128x128 block tile, 8x8 outputs per thread, 16-byte
//!    loads, `A` transposed (and padded) in shared memory, double-buffered.
//!    4b: the same with one block per SM and no spill. 4c: tiles 16 deep
//!    (one barrier per 1024 FMAs per thread); 4d: 4c with two blocks per
//!    SM; 4e: 4c with grouped block order for L2 reuse.
//!    4f [`matmul_vecf`]: 4b with a branch-free fast path for interior
//!    blocks (unchecked 16-byte loads and stores, indices advanced by
//!    constants); 4g: 4f with two blocks per SM.
//! 5. [`matmul_async`]: rung 4b's tile with asynchronous copies
//!    (`cp.async`) four stages deep, `A` row-major in shared memory;
//!    5b: the same with two blocks per SM; 5c: `A` read per step (8
//!    registers, not 32) so two blocks per SM fit without a spill; 5d: 5c
//!    with one block per SM.
//!
//! Rungs that share a body are one kernel with const generic parameters,
//! one instance per rung (the tile depth, the block order, the blocks per
//! SM its launch bounds ask for), each instance keeping its rung's entry
//! name (`matmul_vec16x2_f32` is `matmul_vec::<VEC16_BK, false, 2>`).
//!
//! Every rung handles ragged edges: loads outside the matrices read zero,
//! stores outside are skipped, so `m`, `n`, `k` need not be tile multiples.
//!
//! The column sum: [`matmul_colsum`] (column reduction of a matrix, rows
//! split in chunks, one atomic per column and chunk), [`matmul_vecmat`]
//! (`out += v B`, the same shape of work with a weight per row) and
//! [`matmul_zero2_f32`] (clears the two accumulators first), each of the
//! first two with four or eight loads in flight (the chunk length is a
//! run-time parameter of all four instances); and both halves in one
//! ticketed launch ([`matmul_colsum_product_f32`] after
//! [`matmul_zero3_f32`]).

//!
//! # Files
//! One file per rung family, all re-exported here: `scalar.rs` (rungs 1
//! to 3), `vec.rs` (rungs 4 to 4g, 16-byte loads and 8x8 outputs per
//! thread), `cp_async.rs` (rungs 5 to 5d, `cp.async` stages), `tile.rs`
//! (what rungs 4 and 5 share: the outer product, the group loads and the
//! patch stores) and `colsum.rs` (the column sum of a product). This file
//! holds the launch constants and shared-memory sizes of rungs 1 to 4 and
//! of the column sum.

use ptxlab_device::prelude::*;

mod colsum;
mod cp_async;
mod scalar;
#[macro_use]
mod tile;
mod vec;

pub use colsum::*;
pub use cp_async::*;
pub use scalar::*;
pub use vec::*;

/// A row-major `rows x cols` matrix in global memory, as the 16-byte
/// group copies into shared memory read it (rungs 5 to 5d here, and the
/// tensor-core rungs): `aligned` when every row starts on a 16-byte
/// boundary (`cols` a multiple of `16 / size_of::<T>()`), so that a group
/// inside the matrix can go as one 16-byte copy.
#[derive(Clone, Copy)]
pub(crate) struct RowMajor<'a, T> {
    /// The elements, row after row.
    pub x: DeviceSlice<'a, T>,
    /// Rows of the matrix.
    pub rows: usize,
    /// Columns of the matrix (the row length).
    pub cols: usize,
    /// Every row starts on a 16-byte boundary.
    pub aligned: bool,
}

impl<'a, T> RowMajor<'a, T> {
    /// The operands of `C = A B`: `a` (`m x k`) and `b` (`k x n`) for
    /// `mnk = [m, n, k]`, with the row alignments `[a_aligned, b_aligned]`.
    #[inline(always)]
    pub(crate) fn operands(
        a: DeviceSlice<'a, T>,
        b: DeviceSlice<'a, T>,
        mnk: [usize; 3],
        aligned: [bool; 2],
    ) -> (Self, Self) {
        let [m, n, k] = mnk;
        (
            Self {
                x: a,
                rows: m,
                cols: k,
                aligned: aligned[0],
            },
            Self {
                x: b,
                rows: k,
                cols: n,
                aligned: aligned[1],
            },
        )
    }
}

/// Rung 1 block: 32 columns x 8 rows of threads.
pub const NAIVE_BLOCK: (u32, u32) = (32, 8);

/// Rung 2 tile edge (outputs and `k` per tile).
pub const TILED_T: usize = 32;

/// Rung 3 block tile (`BM x BN` outputs), `k` depth per tile, outputs per thread edge.
pub const RB_BM: usize = 64;
/// Rung 3 block tile columns.
pub const RB_BN: usize = 64;
/// Rung 3 `k` per tile.
pub const RB_BK: usize = 16;
/// Rung 3 outputs per thread along each axis (4x4).
pub const RB_TM: usize = 4;
/// Rung 3 threads per block: `(64/4) * (64/4)`.
pub const RB_THREADS: u32 = ((RB_BM / RB_TM) * (RB_BN / RB_TM)) as u32;

/// Rung 4 block tile rows.
pub const VEC_BM: usize = 128;
/// Rung 4 block tile columns.
pub const VEC_BN: usize = 128;
/// Rung 4 `k` per tile.
pub const VEC_BK: usize = 8;
/// Rung 4 padded row of the transposed `A` tile (132 floats: the transposed
/// stores of one warp hit 32 different banks, and rows stay 16-byte aligned).
pub const VEC_AS_LD: usize = VEC_BM + 4;
/// Rung 4 threads per block (16 x 16, 8x8 outputs each).
pub const VEC_THREADS: u32 = 256;

/// Threads per block of the column-sum kernels.
pub const COLSUM_BLOCK: u32 = 256;
/// Rows each block of the column-sum kernels reduces by default (one atomic
/// per column per chunk). Small chunks give many short-lived blocks and
/// keep every SM streaming to the end; the chunk-length sweep that chose 16
/// is in `docs/book/src/workloads/matmul.md` ("The column sum").
pub const COLSUM_ROWS: usize = 16;

/// Dynamic shared memory of rung 2: one `A` tile and one `B` tile of 32x32 f32.
pub const fn tiled_shared_bytes() -> usize {
    shared::shared_bytes::<f32>(0, 2 * TILED_T * TILED_T)
}

/// Dynamic shared memory of rung 3: `As[BM][BK]` then `Bs[BK][BN]`.
pub const fn regblock_shared_bytes() -> usize {
    shared::shared_bytes::<f32>(0, RB_BM * RB_BK + RB_BK * RB_BN)
}

const VEC_AS_LEN: usize = 2 * VEC_BK * VEC_AS_LD;
const VEC_BS_LEN: usize = 2 * VEC_BK * VEC_BN;

/// Dynamic shared memory of rung 4: two stages of `As[BK][132]` (transposed)
/// then two stages of `Bs[BK][BN]`.
pub const fn vec_shared_bytes() -> usize {
    shared::shared_bytes::<f32>(0, VEC_AS_LEN + VEC_BS_LEN)
}

/// Rungs 4c to 4e: `k` per tile.
pub const VEC16_BK: usize = 16;

/// Dynamic shared memory of rungs 4c to 4e: rung 4's layout with tiles
/// [`VEC16_BK`] deep (33,280 bytes).
pub const fn vec16_shared_bytes() -> usize {
    shared::shared_bytes::<f32>(0, 2 * VEC16_BK * VEC_AS_LD + 2 * VEC16_BK * VEC_BN)
}
