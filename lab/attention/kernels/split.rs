//! Rung 1: attention as three steps through memory.
//!
//! `S = Q K^T` and `O = P V` are ordinary products, done per head by the
//! project's tensor-core GEMM (tensor rung 3d, `mma.sync` with `cp.async`
//! pipelining), which takes row-major `A` (`m x k`) and `B` (`k x n`): `Q`
//! is `A` as it is, but `K^T` is not stored, so [`attn_transpose`] writes
//! it first, for all heads at once. Between the two products,
//! [`attn_softmax`] turns each row of `S` into probabilities in place.
//!
//! The score matrix of a head (`Sq x Skv`, rounded to the 16-bit type by
//! the GEMM) goes to memory and comes back twice: at `Sq = Skv = 8192`
//! that is 128 MiB written and read per step per head, against 4 MiB of
//! `Q`, `K`, `V` and `O`. That traffic, and the rounding of the scores to
//! 8 bits of mantissa (BF16) before the exponential, are what the fused
//! rungs remove.

use super::{LN_2, Lse, log2_approx};
use ptxlab_device::math::{Real, fast};
use ptxlab_device::mma::{Bf16, F16, Half16};
use ptxlab_device::prelude::*;

/// Side of the square tile of [`attn_transpose`].
pub const TRANSPOSE_TILE: u32 = 32;
/// Rows of threads of [`attn_transpose`] (each thread moves 4 values).
pub const TRANSPOSE_ROWS: u32 = 8;
/// Threads of a block of [`attn_softmax`] (one block per row).
pub const SOFTMAX_THREADS: u32 = 256;

/// Dynamic shared memory of [`attn_transpose`]: a 32 x 33 tile of words
/// (the extra column keeps the column reads off one bank).
pub const fn transpose_shared_bytes() -> usize {
    (TRANSPOSE_TILE * (TRANSPOSE_TILE + 1)) as usize * 4
}

/// Dynamic shared memory of [`attn_softmax`]: one f32 per warp.
pub const fn softmax_shared_bytes() -> usize {
    (SOFTMAX_THREADS / 32) as usize * 4
}

/// `K^T` per head: `kt[h][c][r] = k[h][r][c]` for `k` of `heads x rows x
/// cols` 16-bit values (any type: the bits move), rows of `kt` `ld >= rows`
/// values apart (rung 1 pads them to an even length, so that no 4-byte
/// word of `kt` or of the scores holds values of two blocks).
///
/// Thread mapping: blocks of 32 x 8 threads over 32 x 32 tiles, grid
/// `(ceil(rows / 32), ceil(cols / 32), heads)`; thread `(x, y)` reads
/// column `x` of tile rows `y, y + 8, ..` (a warp reads 64 contiguous
/// bytes of a row) and writes tile column `y + 8 i` at row position `x`
/// (a warp writes 64 contiguous bytes of a row of `K^T`). Shared memory:
/// the tile as 32 x 33 words.
#[kernel(launch_bounds(256))]
pub fn attn_transpose(
    k: DeviceSlice<u16>,
    mut kt: DeviceSliceMut<u16>,
    rows: u32,
    cols: u32,
    ld: u32,
) {
    const T: usize = TRANSPOSE_TILE as usize;
    let (rows, cols, ld) = (rows as usize, cols as usize, ld as usize);
    let head = thread::block_idx_z() as usize;
    let per = rows * cols;
    if k.len() < (head + 1) * per || kt.len() < (head + 1) * ld * cols || ld < rows {
        ptxlab_device::trap("attn_transpose: a buffer is shorter than heads x rows x cols");
    }
    let mut tile = shared::dynamic_shared::<u32>(0, T * (T + 1));
    let (x, y) = (
        thread::thread_idx_x() as usize,
        thread::thread_idx_y() as usize,
    );
    let r0 = thread::block_idx_x() as usize * T;
    let c0 = thread::block_idx_y() as usize * T;
    let mut i = y;
    while i < T {
        let (r, c) = (r0 + i, c0 + x);
        if r < rows && c < cols {
            tile[i * (T + 1) + x] = k[head * per + r * cols + c] as u32;
        }
        i += TRANSPOSE_ROWS as usize;
    }
    sync_threads();
    let mut i = y;
    while i < T {
        let (c, r) = (c0 + i, r0 + x);
        if r < rows && c < cols {
            kt[(head * cols + c) * ld + r] = tile[x * (T + 1) + i] as u16;
        }
        i += TRANSPOSE_ROWS as usize;
    }
}

/// The rows of one head's scores as [`attn_softmax`] sees them, a kernel
/// parameter by value.
#[derive(Debug, Clone, Copy, PartialEq, KernelParams)]
#[repr(C)]
pub struct SoftmaxRows {
    /// Keys per row, `Skv`.
    pub cols: u32,
    /// Values from one row to the next (`ld >= cols`; the `ld - cols`
    /// after a row's keys become 0).
    pub ld: u32,
    /// `scale log2(e)`.
    pub scale_log2: f32,
    /// 1: causal masking (query `i` sees keys `j <= i`), 0: none.
    pub causal: u32,
    /// The sliding window `W` (keys `|i - j| < W`), 0: none.
    pub window: u32,
}

/// The row softmax of rung 1, in place: row `i` of `s` (`cols` scores of
/// type `H`, from `Q K^T` without the scale, rows `ld` values apart: the
/// `ld - cols` values after them become 0) becomes
/// `p[j] = exp(scale s[j] - m) / l`, with masked keys (`j > i` when
/// causal, `|i - j| >= W` with a window) set to 0, and with
/// [`Lse::Store`] its log-sum-exp goes to `lse[i]`.
///
/// Thread mapping: one block of [`SOFTMAX_THREADS`] per row (grid x =
/// rows); three strided passes over the keys the row sees (maximum, sum,
/// write), each followed by a block reduction (warp shuffles, then one f32
/// per warp in shared memory). The row (at most a few tens of KiB) stays
/// in L1/L2 between the passes.
#[kernel(launch_bounds(256), instances(Bf16, F16))]
pub fn attn_softmax<H: Half16>(
    mut s: DeviceSliceMut<u16>,
    mut lse: DeviceSliceMut<f32>,
    rows: SoftmaxRows,
    lse_out: Lse,
) {
    let want_lse = lse_out as u32;
    let (cols, ld, scale_log2) = (rows.cols as usize, rows.ld as usize, rows.scale_log2);
    let (causal, window) = (rows.causal != 0, rows.window as usize);
    let row = thread::block_idx_x() as usize;
    if s.len() < (row + 1) * ld || ld < cols || (want_lse != 0 && lse.len() <= row) {
        ptxlab_device::trap("attn_softmax: a buffer is shorter than rows x cols");
    }
    let red = shared::dynamic_shared::<f32>(0, (SOFTMAX_THREADS / 32) as usize);
    let t = thread::thread_idx_x() as usize;
    let n = SOFTMAX_THREADS as usize;
    // Keys this row sees, `lo .. hi`: all, 0..=row (torch's top-left
    // causal mask), and with a window those less than W away.
    let lo = if window != 0 {
        row.saturating_sub(window - 1)
    } else {
        0
    };
    let hi = if causal {
        cols.min(row + 1)
    } else if window != 0 {
        cols.min(row + window)
    } else {
        cols
    };
    let at = row * ld;
    let mut m = f32::NEG_INFINITY;
    let mut j = lo + t;
    while j < hi {
        m = m.max(H::to_f32(s[at + j]));
        j += n;
    }
    let m = block_reduce(red, m, |a, b| a.max(b)) * scale_log2;
    let base = if m == f32::NEG_INFINITY { 0.0 } else { m };
    let mut l = 0f32;
    let mut j = lo + t;
    while j < hi {
        l += fast::exp2(Real::mul_add(H::to_f32(s[at + j]), scale_log2, -base));
        j += n;
    }
    let l = block_reduce(red, l, |a, b| a + b);
    let inv = if l > 0.0 { fast::recip(l) } else { 0.0 };
    let mut j = t;
    while j < ld {
        let p = if lo <= j && j < hi {
            fast::exp2(Real::mul_add(H::to_f32(s[at + j]), scale_log2, -base)) * inv
        } else {
            0.0
        };
        s[at + j] = H::from_f32(p);
        j += n;
    }
    if want_lse != 0 && t == 0 {
        lse[row] = (m + log2_approx(l)) * LN_2;
    }
}

/// `v` combined over the block with `op` (warp shuffles, then the warps'
/// results through `red`); every thread gets the result.
#[inline(always)]
fn block_reduce(mut red: SharedSlice<f32>, v: f32, op: impl Fn(f32, f32) -> f32) -> f32 {
    let mut v = v;
    for d in [16, 8, 4, 2, 1] {
        v = op(v, warp::shfl_xor(FULL_MASK, v, d));
    }
    let (w, lane) = (warp::warp_id() as usize, warp::lane_id() as usize);
    // Everyone has read the last reduction's slots before they are reused.
    sync_threads();
    if lane == 0 {
        red[w] = v;
    }
    sync_threads();
    let mut r = red[0];
    for i in 1..(SOFTMAX_THREADS / 32) as usize {
        r = op(r, red[i]);
    }
    r
}
