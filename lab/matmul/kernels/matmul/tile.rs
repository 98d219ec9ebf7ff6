//! What rungs 4 and 5 share: the 8x8 outer product of one step from shared
//! memory, the zero-filled group loads (`load_group!`, and `copy_group`
//! into shared memory, by `cp.async` where it can), and the stores of a
//! thread's 8x8 patch.

use super::*;
use ptxlab_device::mem::F32x4;

#[inline(always)]
pub(super) fn ld4(s: SharedSlice<F32x4>, i: usize) -> [f32; 4] {
    // SAFETY: callers pass `i` inside the view (indices derived from the tile
    // constants); the simulator checks it anyway.
    unsafe { s.get_unchecked(i).0 }
}

/// The 8x8 outer product of one step of rungs 4 and 5: this thread's 8 `A`
/// values `af` times the two float4 of `Bs` row `brow` (float4 index of the
/// row's start) it owns, columns `4tx..4tx+4` and `64+4tx..+4`, into `acc`.
#[inline(always)]
pub(super) fn outer8(
    acc: &mut [[f32; 8]; 8],
    af: [f32; 8],
    sb4: SharedSlice<F32x4>,
    brow: usize,
    tx: usize,
) {
    let b0 = ld4(sb4, brow + tx);
    let b1 = ld4(sb4, brow + 16 + tx);
    let bf = [b0[0], b0[1], b0[2], b0[3], b1[0], b1[1], b1[2], b1[3]];
    for i in 0..8 {
        for j in 0..8 {
            acc[i][j] = af[i].mul_add(bf[j], acc[i][j]);
        }
    }
}

/// `x[row, col..col+4]` of a row-major `rows x cols` matrix, zero outside
/// it: one 16-byte load when the group is inside and `vec_ok` (`cols % 4 ==
/// 0`, so the group is aligned), element by element otherwise. A macro, not
/// a function, so rung 4's loads expand to exactly the code that was
/// measured (as a function, ptxas spilled more; see
/// `docs/book/src/workloads/matmul.md`).
macro_rules! load_group {
    ($x:ident, $row:ident, $rows:ident, $col:ident, $cols:ident, $vec_ok:expr) => {
        if $row < $rows && $col + 4 <= $cols && $vec_ok {
            // SAFETY: the group `x[row, col..col+4]` is inside `x` (checked
            // above) and starts at a multiple of 4 because `cols % 4 == 0`
            // and callers pass `col % 4 == 0`.
            unsafe { $x.get_vec_unchecked::<F32x4>(($row * $cols + $col) / 4).0 }
        } else {
            let mut v = [0.0f32; 4];
            for q in 0..4 {
                if $row < $rows && $col + q < $cols {
                    v[q] = $x.get($row * $cols + $col + q);
                }
            }
            v
        }
    };
}

/// Puts `src[row, col..col+4]` (zero outside the matrix, as `load_group!`)
/// into float4 `i` of shared memory: by `cp.async` when the rows are
/// aligned, else loaded element by element and stored at once. `col % 4 ==
/// 0`.
#[inline(always)]
pub(super) fn copy_group(
    dst: SharedSlice<F32x4>,
    i: usize,
    src: RowMajor<f32>,
    row: usize,
    col: usize,
) {
    let RowMajor {
        x,
        rows,
        cols,
        aligned,
    } = src;
    if aligned {
        let valid = row < rows && col < cols;
        let j = if valid { (row * cols + col) / 4 } else { 0 };
        // SAFETY: callers pass `i` inside `dst`; when `valid`, `col < cols`
        // with both multiples of 4 gives `col + 4 <= cols`, so the group is
        // inside `x` and 16-byte aligned; callers read float4 `i` only after
        // the wait and barrier that complete the copy.
        unsafe { dst.copy_async(i, x, j, valid) };
    } else {
        let v = load_group!(x, row, rows, col, cols, false);
        // SAFETY: callers pass `i` inside `dst`.
        unsafe { dst.set_unchecked(i, F32x4(v)) };
    }
}

/// One shared stage of the `A` and `B` tiles as the steps of rungs 4 and 5
/// read it: the `A` view (float4, or f32 for the scalar reads of rungs 5c
/// and 5d) with the stage's first index in it, and the `B` view (float4)
/// with the stage's first float4.
#[derive(Clone, Copy)]
pub(super) struct Stage<A> {
    /// The `A` tiles.
    pub a: SharedSlice<A>,
    /// The stage's first index in `a`.
    pub a0: usize,
    /// The `B` tiles, as float4.
    pub b: SharedSlice<F32x4>,
    /// The stage's first float4 in `b`.
    pub b0: usize,
}

/// Stores a thread's 8x8 patch of rungs 4 and 5: rows `row0..row0+4` and
/// `row0+64..+4`, columns `col0..col0+4` and `col0+64..+4`. One call per
/// row with a constant index, so `acc` is never indexed dynamically and
/// stays in registers.
#[inline(always)]
pub(super) fn store_patch(
    c: DeviceSliceMut<f32>,
    row0: usize,
    col0: usize,
    m: usize,
    n: usize,
    acc: &[[f32; 8]; 8],
) {
    store_row(c, row0, col0, m, n, acc[0]);
    store_row(c, row0 + 1, col0, m, n, acc[1]);
    store_row(c, row0 + 2, col0, m, n, acc[2]);
    store_row(c, row0 + 3, col0, m, n, acc[3]);
    store_row(c, row0 + 64, col0, m, n, acc[4]);
    store_row(c, row0 + 65, col0, m, n, acc[5]);
    store_row(c, row0 + 66, col0, m, n, acc[6]);
    store_row(c, row0 + 67, col0, m, n, acc[7]);
}

/// Stores `v[0..4]` at `C[r, c0..c0+4]` and `v[4..8]` at `C[r, c0+64..c0+68]`,
/// 16 bytes at a time when in bounds and aligned, element by element otherwise.
#[inline(always)]
fn store_row(c: DeviceSliceMut<f32>, r: usize, c0: usize, m: usize, n: usize, v: [f32; 8]) {
    if r >= m {
        return;
    }
    let halves = [[v[0], v[1], v[2], v[3]], [v[4], v[5], v[6], v[7]]];
    for h in 0..2 {
        let part = halves[h];
        let cc = c0 + h * 64;
        if n.is_multiple_of(4) && cc + 4 <= n {
            // SAFETY: `C[r, cc..cc+4]` is inside `C` (r < m, cc + 4 <= n) and
            // 16-byte aligned (n and cc are multiples of 4).
            unsafe { c.set_vec_unchecked((r * n + cc) / 4, F32x4(part)) };
        } else {
            for q in 0..4 {
                if cc + q < n {
                    c.set(r * n + cc + q, part[q]);
                }
            }
        }
    }
}
