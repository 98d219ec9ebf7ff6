//! The `cp.async` planted bugs (sm_80): a matrix-vector product through a
//! three-stage copy ring, and an in-place smoothing pass with a prefetch.

use ptxlab_device::mem::F32x4;
use ptxlab_device::prelude::*;

/// Threads of a ring block (four warps).
pub const RING_THREADS: u32 = 128;
/// Rows of `A` per block.
pub const RING_ROWS: usize = 32;
/// Columns of `A` per tile: 32 floats, eight 16-byte chunks per row.
pub const RING_TK: usize = 32;
/// Stages of the ring.
pub const RING_STAGES: usize = 3;
/// 16-byte chunks per tile (256: two per thread).
const RING_CHUNKS: usize = RING_ROWS * RING_TK / 4;

/// Dynamic shared memory of the ring kernels: [`RING_STAGES`] tiles of
/// `RING_ROWS x RING_TK` floats.
pub const fn ring_shared_bytes() -> usize {
    shared::shared_bytes::<F32x4>(0, RING_STAGES * RING_CHUNKS)
}

/// The mistakes of [`gemv_ring`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ring {
    Correct,
    MissingWait,
    WaitTooShallow,
    StageOffByOne,
    MissingBarrier,
}

/// `y = A x` for a row-major `m x k` matrix `A` (`k` a multiple of 4),
/// through a ring of [`RING_STAGES`] shared-memory tiles filled by
/// `cp.async`.
///
/// Thread mapping: a block of [`RING_THREADS`] threads owns rows
/// `32 b .. 32 b + 32`; thread `t` copies chunks `t` and `t + 128` of each
/// tile (row `c / 8`, columns `4 (c % 8)..+4`), and computes row `t / 4`
/// over columns `8 (t % 4)..+8` of each tile, the four partial sums of a
/// row meeting in two `shfl_xor`.
///
/// Pipeline: tiles `0..S-1` in flight, one commit group each; per tile:
/// wait until at most `S - 2` groups are pending (the tile has landed),
/// a barrier (every thread's copies of it are visible, and everyone has
/// finished the previous tile), copy tile `t + S - 1` into the stage tile
/// `t - 1` used, commit, compute.
#[inline(always)]
fn gemv_ring(
    a: DeviceSlice<f32>,
    x: DeviceSlice<f32>,
    y: DeviceSliceMut<f32>,
    m: u32,
    k: u32,
    mistake: Ring,
) {
    const S: usize = RING_STAGES;
    let (m, k) = (m as usize, k as usize);
    if a.len() < m * k || x.len() < k || y.len() < m || !k.is_multiple_of(4) {
        ptxlab_device::trap("gemv ring: lengths must match m x k, k a multiple of 4");
    }
    let sm = shared::dynamic_shared::<F32x4>(0, S * RING_CHUNKS);
    let t = thread::thread_idx_x() as usize;
    let row0 = thread::block_idx_x() as usize * RING_ROWS;
    let issue = |stage: usize, tile: usize| {
        for j in 0..RING_CHUNKS / RING_THREADS as usize {
            let c = t + j * RING_THREADS as usize;
            let (row, col) = (row0 + c / 8, tile * RING_TK + 4 * (c % 8));
            let valid = row < m && col < k;
            let g = if valid { (row * k + col) / 4 } else { 0 };
            // SAFETY: `stage * RING_CHUNKS + c` is inside `sm`; when
            // `valid`, `col + 4 <= k` (both multiples of 4), so the group is
            // inside `a` and 16-byte aligned. Nothing touches the element
            // until the wait and barrier that complete the copy (in the
            // correct pipeline).
            unsafe { sm.copy_async(stage * RING_CHUNKS + c, a, g, valid) };
        }
    };
    let ntiles = k.div_ceil(RING_TK);
    for s in 0..S - 1 {
        if s < ntiles {
            issue(s, s);
        }
        shared::commit_async_copies();
    }
    let (r, q) = (t / 4, t % 4);
    let mut acc = 0.0f32;
    for tile in 0..ntiles {
        match mistake {
            Ring::MissingWait => {}
            Ring::WaitTooShallow => shared::wait_async_copies::<{ (RING_STAGES - 1) as u32 }>(),
            _ => shared::wait_async_copies::<{ (RING_STAGES - 2) as u32 }>(),
        }
        if mistake != Ring::MissingBarrier {
            sync_threads();
        }
        let next = tile + S - 1;
        if next < ntiles {
            let stage = if mistake == Ring::StageOffByOne {
                (next + 1) % S
            } else {
                next % S
            };
            issue(stage, next);
        }
        shared::commit_async_copies();
        let at = (tile % S) * RING_CHUNKS + r * 8 + 2 * q;
        let (v0, v1) = (sm.get(at).0, sm.get(at + 1).0);
        let col = tile * RING_TK + 8 * q;
        for i in 0..4 {
            if col + i < k {
                acc = v0[i].mul_add(x.get(col + i), acc);
            }
            if col + 4 + i < k {
                acc = v1[i].mul_add(x.get(col + 4 + i), acc);
            }
        }
    }
    acc += warp::shfl_xor(FULL_MASK, acc, 1);
    acc += warp::shfl_xor(FULL_MASK, acc, 2);
    if q == 0 && row0 + r < m {
        y.set(row0 + r, acc);
    }
}

/// `gemv_ring`; with `bug != 0` the wait before each tile is missing,
/// so the tile is read while its copies are in flight.
#[kernel(launch_bounds(128))]
pub fn pipe_missing_wait(
    a: DeviceSlice<f32>,
    x: DeviceSlice<f32>,
    y: DeviceSliceMut<f32>,
    m: u32,
    k: u32,
    bug: u32,
) {
    let mistake = if bug != 0 {
        Ring::MissingWait
    } else {
        Ring::Correct
    };
    gemv_ring(a, x, y, m, k, mistake);
}

/// `gemv_ring`; with `bug != 0` the wait leaves `S - 1` groups in flight
/// (one too many): the tile about to be read is one of them.
#[kernel(launch_bounds(128))]
pub fn pipe_wait_too_shallow(
    a: DeviceSlice<f32>,
    x: DeviceSlice<f32>,
    y: DeviceSliceMut<f32>,
    m: u32,
    k: u32,
    bug: u32,
) {
    let mistake = if bug != 0 {
        Ring::WaitTooShallow
    } else {
        Ring::Correct
    };
    gemv_ring(a, x, y, m, k, mistake);
}

/// `gemv_ring`; with `bug != 0` tile `t + S - 1` is copied into stage
/// `(t + S) % S`, the stage of tile `t`, which the block is reading.
#[kernel(launch_bounds(128))]
pub fn pipe_stage_off_by_one(
    a: DeviceSlice<f32>,
    x: DeviceSlice<f32>,
    y: DeviceSliceMut<f32>,
    m: u32,
    k: u32,
    bug: u32,
) {
    let mistake = if bug != 0 {
        Ring::StageOffByOne
    } else {
        Ring::Correct
    };
    gemv_ring(a, x, y, m, k, mistake);
}

/// `gemv_ring`; with `bug != 0` the barrier after the wait is missing: a
/// thread's wait covers only its own copies, so it reads rows other
/// threads copied before they are known to have landed (and refills a
/// stage others may still read).
#[kernel(launch_bounds(128))]
pub fn pipe_missing_barrier(
    a: DeviceSlice<f32>,
    x: DeviceSlice<f32>,
    y: DeviceSliceMut<f32>,
    m: u32,
    k: u32,
    bug: u32,
) {
    let mistake = if bug != 0 {
        Ring::MissingBarrier
    } else {
        Ring::Correct
    };
    gemv_ring(a, x, y, m, k, mistake);
}

/// Threads of [`pipe_inplace_prefetch`] (two warps).
pub const INPLACE_THREADS: u32 = 64;
/// Floats per tile of [`pipe_inplace_prefetch`]: one 16-byte chunk per thread.
pub const INPLACE_TILE: usize = 4 * INPLACE_THREADS as usize;
/// Chunks per stage: the tile and one halo chunk on each side.
const INPLACE_CHUNKS: usize = INPLACE_TILE / 4 + 2;

/// Dynamic shared memory of [`pipe_inplace_prefetch`]: two stages.
pub const fn inplace_shared_bytes() -> usize {
    shared::shared_bytes::<F32x4>(0, 2 * INPLACE_CHUNKS)
}

/// One in-place smoothing pass `v[i] <- (v[i-1] + 2 v[i] + v[i+1]) / 4`
/// (zero outside `0..n`, every output from the old values), by one block,
/// tile after tile, the next tile prefetched by `cp.async` into the other
/// stage while the current one is computed.
///
/// Thread mapping: thread `t` copies chunk `t` of a tile (4 floats) into
/// element `t + 1` of its stage; thread 0 also copies the left halo (the
/// last chunk of the previous tile) into element 0, thread 1 the right
/// halo (the first chunk of the next tile) into the last element. Thread
/// `t` computes and writes back chunk `t`.
///
/// The hazard: the next tile's left halo is the current tile's last
/// chunk, which this pass overwrites. The correct pipeline waits for every
/// copy (`wait_async_copies::<0>`, then a barrier) before writing back;
/// with `bug != 0` it waits only for the current tile (`<1>`), so the halo
/// copy, issued by thread 0, may still be reading the chunk that thread 63
/// writes back. Whether it reads the old or the new values depends on
/// when the copy lands: in order (each copy at its issue) the result is
/// right, and no check sees the two accesses (one block's own global
/// memory, two different threads); under a random schedule that lands the
/// copy later it is wrong, which `ptxlab sim-fuzz` finds. `n` must be a
/// multiple of 4; one block.
#[kernel(launch_bounds(64))]
pub fn pipe_inplace_prefetch(v: DeviceSliceMut<f32>, bug: u32) {
    let n = v.len();
    if !n.is_multiple_of(4) {
        ptxlab_device::trap("inplace prefetch: n must be a multiple of 4");
    }
    let sm = shared::dynamic_shared::<F32x4>(0, 2 * INPLACE_CHUNKS);
    let t = thread::thread_idx_x() as usize;
    let src = v.as_const();
    let nchunks = n / 4;
    let ntiles = n.div_ceil(INPLACE_TILE);
    let copy = |el: usize, chunk: isize| {
        let valid = chunk >= 0 && (chunk as usize) < nchunks;
        let g = if valid { chunk as usize } else { 0 };
        // SAFETY: `el` is inside `sm`; when `valid` the chunk lies inside
        // `v`, 16-byte aligned (device buffers are 256-byte aligned).
        unsafe { sm.copy_async(el, src, g, valid) };
    };
    let issue = |stage: usize, tile: usize| {
        let base = stage * INPLACE_CHUNKS;
        let first = (tile * INPLACE_TILE / 4) as isize;
        copy(base + 1 + t, first + t as isize);
        if t == 0 {
            copy(base, first - 1);
        }
        if t == 1 {
            copy(base + INPLACE_CHUNKS - 1, first + INPLACE_TILE as isize / 4);
        }
    };
    issue(0, 0);
    shared::commit_async_copies();
    for tile in 0..ntiles {
        if tile + 1 < ntiles {
            issue((tile + 1) % 2, tile + 1);
        }
        shared::commit_async_copies();
        if bug != 0 {
            shared::wait_async_copies::<1>();
        } else {
            shared::wait_async_copies::<0>();
        }
        sync_threads();
        let base = (tile % 2) * INPLACE_CHUNKS + 1 + t;
        let (l, c, r) = (sm.get(base - 1).0, sm.get(base).0, sm.get(base + 1).0);
        let w = [l[3], c[0], c[1], c[2], c[3], r[0]];
        let out = F32x4(core::array::from_fn(|i| {
            0.25 * (w[i] + w[i + 2]) + 0.5 * w[i + 1]
        }));
        let chunk = tile * INPLACE_TILE / 4 + t;
        if chunk < nchunks {
            // SAFETY: `chunk < n / 4`, so the 16 bytes are inside `v`,
            // which is 16-byte aligned.
            unsafe { v.set_vec_unchecked(chunk, out) };
        }
        sync_threads();
    }
}
