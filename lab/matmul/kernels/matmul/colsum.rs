//! The column sum of a product, `colsum(A B) = colsum(A) B`: the column
//! reduction of a matrix ([`matmul_colsum`]) and the vector-matrix product
//! ([`matmul_vecmat`]), after [`matmul_zero2_f32`] clears their
//! accumulators; and both halves in one ticketed launch
//! ([`matmul_colsum_product_f32`] after [`matmul_zero3_f32`]).

use super::*;
use core::sync::atomic::{AtomicU32, Ordering, fence};

/// The sum over rows `r0..r1` of column `col` of a row-major matrix `x` with
/// `cols` columns, each row weighted by `w(r)` when `WEIGHTED`. `U` independent
/// partial sums: each step issues `U` loads (rows `r..r+U`, all in flight at
/// once) before it adds them; the partial sums are combined pairwise at the
/// end (`(s0 + s1) + (s2 + s3)` for `U = 4`).
///
/// The caller guarantees `r1 <= rows` of `x` and `col < cols`.
#[inline(always)]
fn column_partial<const U: usize, const WEIGHTED: bool>(
    x: DeviceSlice<f32>,
    cols: usize,
    col: usize,
    r0: usize,
    r1: usize,
    w: impl Fn(usize) -> f32,
) -> f32 {
    const { assert!(U.is_power_of_two()) };
    let mut s = [0.0f32; U];
    let mut r = r0;
    while r + U <= r1 {
        let mut v = [0.0f32; U];
        for q in 0..U {
            // SAFETY: `r + q < r1 <= rows` and `col < cols` (caller), so the
            // index is inside the `rows x cols` matrix the launcher checked.
            v[q] = unsafe { x.get_unchecked((r + q) * cols + col) };
        }
        for q in 0..U {
            s[q] = if WEIGHTED {
                w(r + q).mul_add(v[q], s[q])
            } else {
                s[q] + v[q]
            };
        }
        r += U;
    }
    while r < r1 {
        let v = x.get(r * cols + col);
        s[0] = if WEIGHTED {
            w(r).mul_add(v, s[0])
        } else {
            s[0] + v
        };
        r += 1;
    }
    let mut width = U;
    while width > 1 {
        for i in 0..width / 2 {
            s[i] = s[2 * i] + s[2 * i + 1];
        }
        width /= 2;
    }
    s[0]
}

/// One block of the column-sum kernels: the column of this thread
/// (`blockIdx.x * 256 + threadIdx.x`) over the rows of chunk `blockIdx.y`
/// (`chunk` rows), added into `out[col]` with one atomic.
#[inline(always)]
fn column_chunk<const U: usize, const WEIGHTED: bool>(
    w: DeviceSlice<f32>,
    x: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    rows: usize,
    cols: usize,
    chunk: usize,
) {
    let col = thread::index_1d();
    if col >= cols {
        return;
    }
    let r0 = thread::block_idx_y() as usize * chunk;
    let r1 = if r0 + chunk < rows { r0 + chunk } else { rows };
    if r0 < r1 {
        let s = column_partial::<U, WEIGHTED>(x, cols, col, r0, r1, |r| w.get(r));
        out.atomic_add(col, s);
    }
}

/// Column sum of a row-major `rows x cols` matrix: `out[j] += sum_i x[i, j]`,
/// with `U` loads in flight per thread: `<4>` is `matmul_colsum_f32`, `<8>`
/// `matmul_colsum8_f32`.
///
/// Thread mapping: `x` = column (consecutive threads read consecutive words of
/// a row: coalesced), `blockIdx.y` = a chunk of `chunk` rows (a run-time
/// parameter; the default is [`COLSUM_ROWS`]). A thread sums its column over
/// the chunk with `U` independent accumulators (`U` loads in flight), then
/// adds the partial sum into `out[j]` with one atomic. Splitting the rows is
/// what makes the grid large enough to fill the GPU (one thread per column,
/// the material's mapping, gives only `cols` threads). `out` must be zeroed
/// first ([`matmul_zero2_f32`]). Memory-bound: 4 bytes read per element.
///
/// The chunk length trades the atomics (one per column and chunk) against
/// the tail of the grid: a thread's chunk is `chunk / U` dependent round
/// trips to memory, and the last blocks of the grid run alone for that long.
/// One column per thread keeps many threads in flight (the variants tried
/// and measured are in `docs/book/src/workloads/matmul.md`, "The column sum").
///
/// Why eight partial sums are faster than four: a chunk is half as many
/// dependent round trips to memory (the tail of the grid is shorter) and a
/// resident block keeps twice as many bytes in flight, and the registers
/// still leave room for eight blocks of 256 threads per SM (counts:
/// `docs/book/src/workloads/matmul.md`).
#[kernel(
    launch_bounds(256),
    instances(<4> => (name = "matmul_colsum_f32"), <8> => (name = "matmul_colsum8_f32"))
)]
pub fn matmul_colsum<const U: usize>(
    x: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    rows: u32,
    cols: u32,
    chunk: u32,
) {
    column_chunk::<U, false>(x, x, out, rows as usize, cols as usize, chunk as usize);
}

/// Vector-matrix product `out[j] += sum_i v[i] B[i, j]`, `B` row-major `k x n`,
/// with `U` loads in flight per thread: `<4>` is `matmul_vecmat_f32`, `<8>`
/// `matmul_vecmat8_f32`.
///
/// The second half of the fused column sum `colsum(A B) = colsum(A) B`: the
/// same mapping as [`matmul_colsum`] (thread = output column, reading `B`
/// row by row, coalesced; `blockIdx.y` = chunk of `chunk` rows, one atomic per
/// column and chunk) with each row weighted by `v[i]` (a broadcast load).
#[kernel(
    launch_bounds(256),
    instances(<4> => (name = "matmul_vecmat_f32"), <8> => (name = "matmul_vecmat8_f32"))
)]
pub fn matmul_vecmat<const U: usize>(
    v: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    out: DeviceSliceMut<f32>,
    k: u32,
    n: u32,
    chunk: u32,
) {
    column_chunk::<U, true>(v, b, out, k as usize, n as usize, chunk as usize);
}

/// Sets two buffers to zero (the accumulators of the column-sum kernels),
/// grid-stride over the longer one: one launch instead of two.
#[kernel(launch_bounds(256))]
pub fn matmul_zero2_f32(x: DeviceSliceMut<f32>, y: DeviceSliceMut<f32>) {
    let n = if x.len() > y.len() { x.len() } else { y.len() };
    for i in thread::grid_stride(n) {
        if i < x.len() {
            x.set(i, 0.0);
        }
        if i < y.len() {
            y.set(i, 0.0);
        }
    }
}

/// [`matmul_zero2_f32`] plus a buffer of `u32` counters: clears `v`, `out`
/// and the counters of [`matmul_colsum_product_f32`] in one launch.
#[kernel(launch_bounds(256))]
pub fn matmul_zero3_f32(x: DeviceSliceMut<f32>, y: DeviceSliceMut<f32>, z: DeviceSliceMut<u32>) {
    let mut n = if x.len() > y.len() { x.len() } else { y.len() };
    if z.len() > n {
        n = z.len();
    }
    for i in thread::grid_stride(n) {
        if i < x.len() {
            x.set(i, 0.0);
        }
        if i < y.len() {
            y.set(i, 0.0);
        }
        if i < z.len() {
            z.set(i, 0);
        }
    }
}

/// Blocks of [`matmul_colsum_product_f32`] for `A` of `m x k`, `B` of `k x n`
/// and chunks of `chunk_a` rows of `A`, `chunk_b` rows of `B`:
/// `(blocks on A, blocks on B)`. The launch must have exactly their sum
/// (the kernel does nothing otherwise). Chunks of 0 rows give `(0, 0)`.
pub const fn colsum_product_blocks(
    m: usize,
    n: usize,
    k: usize,
    chunk_a: usize,
    chunk_b: usize,
) -> (usize, usize) {
    if chunk_a == 0 || chunk_b == 0 {
        return (0, 0);
    }
    let blk = COLSUM_BLOCK as usize;
    (
        k.div_ceil(blk) * m.div_ceil(chunk_a),
        n.div_ceil(blk) * k.div_ceil(chunk_b),
    )
}

/// Length of the counter buffer of [`matmul_colsum_product_f32`] for `k`
/// columns of `A`: the ticket, one completion count per 256 columns of `A`,
/// and a word that counts spin-waits that gave up (always 0 in a correct run).
pub const fn colsum_product_sync_len(k: usize) -> usize {
    k.div_ceil(COLSUM_BLOCK as usize) + 2
}

/// Dynamic shared memory of [`matmul_colsum_product_f32`]: the block's
/// ticket (16 bytes, for alignment), then the `chunk_b` weights `v[r0..r1]`.
pub const fn colsum_product_shared_bytes(chunk_b: usize) -> usize {
    shared::shared_bytes::<f32>(16, chunk_b)
}

/// Polls of one spin-wait on the GPU before it gives up and counts a timeout
/// (tens of seconds; a correct launch waits at most one block's run time).
pub const SPIN_LIMIT: u32 = 1 << 26;

/// A relaxed (strong, L1-bypassing on the GPU) load of `s[i]`'s bits.
#[inline(always)]
fn load_relaxed(s: DeviceSliceMut<u32>, i: usize) -> u32 {
    if i >= s.len() {
        return 0;
    }
    // SAFETY: `i < len` (checked), the launcher guarantees the buffer is
    // valid and 4-byte aligned for the whole launch, and every concurrent
    // access to it is atomic or a relaxed access of the same width
    // (the simulator's plain accesses are relaxed atomics too).
    unsafe { AtomicU32::from_ptr(s.as_mut_ptr().add(i)) }.load(Ordering::Relaxed)
}

/// A relaxed load of `s[i]` (an f32 read through its bits).
#[inline(always)]
fn load_relaxed_f32(s: DeviceSliceMut<f32>, i: usize) -> f32 {
    if i >= s.len() {
        return 0.0;
    }
    // SAFETY: as in `load_relaxed`; f32 and u32 have the same size and
    // alignment, and every other access to `s` is an atomic add or a store
    // of the same width.
    let bits =
        unsafe { AtomicU32::from_ptr(s.as_mut_ptr().add(i) as *mut u32) }.load(Ordering::Relaxed);
    f32::from_bits(bits)
}

/// The shape of one launch of [`matmul_colsum_product_f32`]: the product
/// `A B` (`A` is `m x k`, `B` is `k x n`, both row-major) and the rows per
/// block of each half ([`colsum_product_blocks`] counts the blocks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, KernelParams)]
#[repr(C)]
pub struct ColsumProduct {
    /// Rows of `A`.
    pub m: u32,
    /// Columns of `B` (the length of the output).
    pub n: u32,
    /// Columns of `A` and rows of `B` (the length of `v`).
    pub k: u32,
    /// Rows of `A` per block of the column sum of `A` (with 0 the launch
    /// does nothing).
    pub chunk_a: u32,
    /// Rows of `B` per block of `v B` (with 0 the launch does nothing); a
    /// block keeps their weights in shared memory
    /// ([`colsum_product_shared_bytes`]).
    pub chunk_b: u32,
}

/// The fused column sum `colsum(A B) = colsum(A) B` in ONE launch: blocks
/// that reduce columns of `A` into `v`, then blocks that compute `out += v B`,
/// ordered by a ticket so that the second kind never waits for a block that
/// has not started.
///
/// Why: the three-launch version ([`matmul_zero2_f32`], [`matmul_colsum`],
/// [`matmul_vecmat`]) drains the GPU twice: the last blocks of the
/// column sum of `A` run with the SMs half empty, then the launch of `v B`
/// waits for all of them. Here the blocks of `v B` fill the SMs as soon as
/// the blocks of `A` leave, and start as soon as the part of `v` they need
/// is complete.
///
/// How (all counters in `sync`, zeroed by [`matmul_zero3_f32`] first):
/// * Thread 0 takes a ticket (`atomicAdd(&sync[0], 1)`) and shares it through
///   shared memory. The grid is 1D, [`colsum_product_blocks`] blocks; a grid
///   of another size returns at once (no block would wait forever).
/// * Tickets `0..na` reduce `A`, column-block-major: ticket `t` takes the
///   256 columns `cb = t / ya` and row chunk `t % ya` (`ya` chunks of
///   `chunk_a` rows), adds its sums into `v` with one atomic per column,
///   then (after a barrier, then a fence by thread 0) counts itself in
///   `sync[1 + cb]`. Column-block-major means `v[0..256]` is complete first,
///   then `v[256..512]`, and so on.
/// * Tickets `na..na+nb` compute `v B`, row-chunk-major: ticket `na + u`
///   takes row chunk `u / gb` of `B` (`chunk_b` rows) and the 256 columns
///   `u % gb`. Thread 0 spins until `sync[1 + c] = ya` for the column blocks
///   `c` of `A` that cover those rows (relaxed loads), fences, and after a
///   barrier the block copies `v[r0..r1]` to shared memory with relaxed
///   loads (not cached in L1) and runs the weighted column sum.
///
/// Why it cannot deadlock: a block only takes its ticket once it runs, so
/// every ticket below a waiting block's belongs to a block that is resident
/// or finished; the blocks it waits for (tickets below `na`) never wait
/// themselves, so they finish. No assumption on how many blocks fit on the
/// GPU at once or in which order the hardware dispatches them. (The fence
/// pattern is that of cooperative groups' grid barrier.) As a guard on the
/// GPU only, a spin gives up after [`SPIN_LIMIT`] polls and counts that in
/// the last word of `sync`; the host checks that word when it verifies.
///
/// Eight loads in flight per thread (as `matmul_colsum::<8>`).
/// `launch_bounds(256, 8)` caps the body at 32 registers, so eight blocks
/// (64 warps, full occupancy) fit per SM as for the three-launch kernels
/// (without the cap ptxas takes more and only six fit; counts in
/// `docs/book/src/workloads/matmul.md`).
#[kernel(launch_bounds(256, 8))]
pub fn matmul_colsum_product_f32(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    v: DeviceSliceMut<f32>,
    out: DeviceSliceMut<f32>,
    sync: DeviceSliceMut<u32>,
    shape: ColsumProduct,
) {
    let (m, n, k) = (shape.m as usize, shape.n as usize, shape.k as usize);
    let (ca, cb) = (shape.chunk_a as usize, shape.chunk_b as usize);
    let blk = COLSUM_BLOCK as usize;
    let (na, nb) = colsum_product_blocks(m, n, k, ca, cb);
    if ca == 0
        || cb == 0
        || na == 0
        || thread::grid_dim_x() as usize != na + nb
        || sync.len() < colsum_product_sync_len(k)
    {
        return;
    }
    // Both are at least 1 here (`na > 0` needs `m, k >= 1`, and `n >= 1` on
    // every launch); `max(1)` tells the compiler so (no panic path).
    let ya = m.div_ceil(ca).max(1);
    let gb = n.div_ceil(blk).max(1);
    let t = thread::thread_idx_x() as usize;
    let ticket_sh = shared::dynamic_shared::<u32>(0, 1);
    let wsh = shared::dynamic_shared::<f32>(16, cb);
    if t == 0 {
        ticket_sh.set(0, sync.atomic_add(0, 1));
    }
    sync_threads();
    let ticket = ticket_sh.get(0) as usize;
    if ticket < na {
        // Column sums of A: 256 columns, one chunk of rows.
        let (cblk, ch) = (ticket / ya, ticket % ya);
        let col = cblk * blk + t;
        let r0 = ch * ca;
        let r1 = if r0 + ca < m { r0 + ca } else { m };
        if col < k {
            let s = column_partial::<8, false>(a, k, col, r0, r1, |_| 1.0);
            v.atomic_add(col, s);
        }
        // Every thread's atomic is ordered before the barrier; thread 0's
        // fence then makes them visible before the count.
        sync_threads();
        if t == 0 {
            fence(Ordering::SeqCst);
            sync.atomic_add(1 + cblk, 1);
        }
    } else if ticket < na + nb {
        // `out += v B` over one chunk of rows of B and 256 columns.
        let u = ticket - na;
        let (rc, cblk) = (u / gb, u % gb);
        let r0 = rc * cb;
        let r1 = if r0 + cb < k { r0 + cb } else { k };
        if t == 0 {
            let mut c = r0 / blk;
            while c <= (r1 - 1) / blk {
                let mut polls = 0u32;
                while load_relaxed(sync, 1 + c) < ya as u32 {
                    polls += 1;
                    if cfg!(target_arch = "nvptx64") && polls >= SPIN_LIMIT {
                        sync.atomic_add(sync.len() - 1, 1);
                        break;
                    }
                    core::hint::spin_loop();
                }
                c += 1;
            }
            fence(Ordering::SeqCst);
        }
        sync_threads();
        let mut i = t;
        while i < r1 - r0 {
            wsh.set(i, load_relaxed_f32(v, r0 + i));
            i += blk;
        }
        sync_threads();
        let col = cblk * blk + t;
        if col < n {
            let s = column_partial::<8, true>(b, n, col, r0, r1, |r| wsh.get(r - r0));
            out.atomic_add(col, s);
        }
    }
}
