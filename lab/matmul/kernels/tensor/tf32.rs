// 3xTF32: an f32-accurate GEMM from TF32 tensor-core products
// (`matmul_tf32x3_f32`), and the operand splits into a TF32 high part and
// remainder that the `wgmma` rung reads (`matmul_split_tf32_f32`,
// `matmul_split_tf32_t_f32`). Included into `tensor` (see its module doc).

/// [`copy_chunk16`] for f32 matrices: 4 values per chunk, rows aligned
/// when `cols % 4 == 0`.
#[inline(always)]
fn copy_chunk32(dst: SharedSlice<U32x4>, i: usize, src: RowMajor<f32>, row: usize, col: usize) {
    let RowMajor {
        x,
        rows,
        cols,
        aligned,
    } = src;
    if aligned {
        let valid = row < rows && col < cols;
        // SAFETY: as in `copy_chunk16`, with groups of 4 f32.
        unsafe { dst.copy_async(i, x, (row * cols + col) / 4, valid) };
    } else {
        let mut w = [0u32; 4];
        for q in 0..4 {
            if row < rows && col + q < cols {
                w[q] = x.get(row * cols + col + q).to_bits();
            }
        }
        dst.set(i, U32x4(w));
    }
}
/// Stores a 16 x 8 f32 accumulator tile at `C[row0.., col0..]` (pairs as
/// 8-byte stores when aligned).
#[inline(always)]
fn store_frag32(c: DeviceSliceMut<f32>, acc: &FragC, row0: usize, col0: usize, m: usize, n: usize) {
    let lane = warp::lane_id();
    for h in 0..2 {
        let (r, cc) = FragC::coord(lane, 2 * h);
        let (row, col) = (row0 + r, col0 + cc);
        if row >= m {
            continue;
        }
        if n.is_multiple_of(2) && col + 1 < n {
            // SAFETY: inside `C` and 8-byte aligned, as in `store_frag16`.
            unsafe {
                c.set_vec_unchecked((row * n + col) / 2, F32x2([acc.0[2 * h], acc.0[2 * h + 1]]))
            };
        } else {
            for q in 0..2 {
                if col + q < n {
                    c.set(row * n + col + q, acc.0[2 * h + q]);
                }
            }
        }
    }
}

/// 3xTF32 on `mma.sync`: `C = A B` in f32 from TF32 tensor-core products.
///
/// Each operand value `x` is split in registers into `big = rna(x)` and
/// `small = rna(x - big)` ([`mma::tf32_split`]); `big + small` holds about
/// 21 of f32's 24 bits. Per tile the warp computes `small_a big_b +
/// big_a small_b + big_a big_b` (small terms first) and drops
/// `small_a small_b` (about `2^-22` relative): the result has f32 SGEMM
/// accuracy (errors within the SGEMM ladder's bound, against f64), from
/// three TF32 `mma` instead of one.
///
/// Tiling: a block of eight warps (2 x 4) computes 128 x 128; a warp
/// 64 x 32 = 4 x 4 tiles of 16 x 8. Tiles 16 deep (f32: 64 bytes per row
/// of `A`), four `cp.async` stages as in rung 3. Per 8 of depth a warp
/// loads 4 `A` fragments by `ldmatrix.x4` (a 16 x 8 f32 block is four 8x8
/// matrices of 16-bit halves: lane `(gid, tig)` gets f32 `(gid, tig)` of
/// each, exactly [`FragATf32`]) and 4 `B` fragments by scalar loads
/// (`Bs` rows of 136 words: conflict-free), splits them (24 `cvt.rna` +
/// 24 subtractions) and issues 48 `mma.m16n8k8`.
///
/// Accuracy: the tensor core accumulates with truncation, so a chain of
/// accumulating `mma` over all of `k` drifts one way (the error grows
/// linearly with `k`; measured in `docs/book/src/workloads/matmul.md`, "3xTF32").
/// So each 16-deep tile's six products go into fresh accumulators and are
/// added to the running sum with an ordinary f32 add (round to nearest):
/// the biased chains are six long whatever `k`.
///
/// Shared layout per stage (16-byte chunks): `As[128][5]` then `Bs[16][34]`.
#[kernel(launch_bounds(256))]
pub fn matmul_tf32x3_f32(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    const BM: usize = TF32_BM;
    const BN: usize = TF32_BN;
    const BK: usize = TF32_BK;
    // Two `k8` steps per tile (the `kk` unroll below).
    const { assert!(BK == 16) };
    const S: usize = TF32_STAGES;
    const ALD: usize = TF32_A_LD / 4;
    const BLD: usize = TF32_B_LD / 4;
    const ACH: usize = BM * ALD;
    const STAGE: usize = TF32_STAGE / 4;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    check_lengths(a, b, c, m, n, k);
    let sm = shared::dynamic_shared::<U32x4>(0, S * STAGE);
    let sw = shared::dynamic_shared::<f32>(0, 4 * S * STAGE);
    let t = thread::thread_idx_x() as usize;
    let l = warp::lane_id();
    let (gid, tig) = mma::gid_tig(l);
    let w = t / 32;
    let (wm, wn) = (w / 4, w % 4);
    let bm = thread::block_idx_y() as usize * BM;
    let bn = thread::block_idx_x() as usize * BN;
    let (a_al, b_al) = (k.is_multiple_of(4), n.is_multiple_of(4));
    let (a_src, b_src) = RowMajor::operands(a, b, [m, n, k], [a_al, b_al]);
    let issue = |stage: usize, tile: usize| {
        let k0 = tile * BK;
        let base = stage * STAGE;
        for j in 0..2 {
            let ch = t + 256 * j;
            let (r, q) = (ch / (BK / 4), ch % (BK / 4));
            copy_chunk32(sm, base + r * ALD + q, a_src, bm + r, k0 + 4 * q);
            let (r, q) = (ch / (BN / 4), ch % (BN / 4));
            copy_chunk32(sm, base + ACH + r * BLD + q, b_src, k0 + r, bn + 4 * q);
        }
    };
    let mut acc = [[FragC::default(); 4]; 4];
    let pipe = CpAsyncPipeline::<S>::new(k.div_ceil(BK));
    pipe.prologue(issue);
    let mut tile = 0;
    while tile < pipe.tiles() {
        let base = pipe.next_tile(tile, issue) * STAGE;
        let bw = 4 * (base + ACH);
        // Both 8-deep steps' fragments first (A: 2 x 4 x 2 parts, B: 2 x 4
        // x 2 parts), split in registers.
        let lr = l as usize;
        let mut a_big = [[FragATf32::default(); 4]; 2];
        let mut a_small = [[FragATf32::default(); 4]; 2];
        let mut b_big = [[FragBTf32::default(); 4]; 2];
        let mut b_small = [[FragBTf32::default(); 4]; 2];
        unroll!(kk in [0, 1] {
            unroll!(mi in [0, 1, 2, 3] {
                let row = 64 * wm + 16 * mi + lr % 16;
                let r = mma::ldmatrix_x4(sm, base + row * ALD + 2 * kk + lr / 16);
                unroll!(i in [0, 1, 2, 3] {
                    let (hi, lo) = mma::tf32_split(f32::from_bits(r[i]));
                    a_big[kk][mi].0[i] = hi.to_bits();
                    a_small[kk][mi].0[i] = lo.to_bits();
                });
            });
            unroll!(ni in [0, 1, 2, 3] {
                unroll!(i in [0, 1] {
                    let (r, q) = (8 * kk + tig + 4 * i, 32 * wn + 8 * ni + gid);
                    // SAFETY: `r < 16` rows of `TF32_B_LD` words and
                    // `q < 128`: inside the stage's `Bs`, inside `sw`.
                    let v = unsafe { sw.get_unchecked(bw + r * TF32_B_LD + q) };
                    let (hi, lo) = mma::tf32_split(v);
                    b_big[kk][ni].0[i] = hi.to_bits();
                    b_small[kk][ni].0[i] = lo.to_bits();
                });
            });
        });
        // Per 16 x 8 output tile: the tile's 6 products into fresh
        // accumulators, then one rounded f32 add into the running sum.
        unroll!(mi in [0, 1, 2, 3] {
            unroll!(ni in [0, 1, 2, 3] {
                let mut part = FragC::default();
                unroll!(kk in [0, 1] {
                    mma::mma_m16n8k8_tf32(&mut part, &a_small[kk][mi], &b_big[kk][ni]);
                    mma::mma_m16n8k8_tf32(&mut part, &a_big[kk][mi], &b_small[kk][ni]);
                    mma::mma_m16n8k8_tf32(&mut part, &a_big[kk][mi], &b_big[kk][ni]);
                });
                unroll!(i in [0, 1, 2, 3] {
                    acc[mi][ni].0[i] += part.0[i];
                });
            });
        });
        tile += 1;
    }
    unroll!(mi in [0, 1, 2, 3] {
        unroll!(ni in [0, 1, 2, 3] {
            let (r0, c0) = (bm + 64 * wm + 16 * mi, bn + 32 * wn + 8 * ni);
            store_frag32(c, &acc[mi][ni], r0, c0, m, n);
        });
    });
}

/// Threads per block of the split kernels (32 x 8).
pub const SPLIT_BLOCK: (u32, u32) = (32, 8);

/// Dynamic shared memory of [`matmul_split_tf32_t_f32`]: a 32 x 33 tile.
pub const fn split_t_shared_bytes() -> usize {
    shared::shared_bytes::<f32>(0, 32 * 33)
}

/// 3xTF32's operand split, for the `wgmma` kernel
/// ([`matmul_tf32x3w_f32`](crate::hopper::matmul_tf32x3w_f32)):
/// `hi[i] = rna(x[i])`, `lo[i] = rna(x[i] - hi[i])` ([`mma::tf32_split`]).
/// One thread per element, grid-stride, coalesced: memory-bound (12 bytes
/// per element).
#[kernel(launch_bounds(256))]
pub fn matmul_split_tf32_f32(
    x: DeviceSlice<f32>,
    hi: DeviceSliceMut<f32>,
    lo: DeviceSliceMut<f32>,
) {
    if hi.len() < x.len() || lo.len() < x.len() {
        ptxlab_device::trap("split: an output is shorter than the input");
    }
    for i in thread::grid_stride(x.len()) {
        let (h, l) = mma::tf32_split(x.get(i));
        hi.set(i, h);
        lo.set(i, l);
    }
}

/// [`matmul_split_tf32_f32`] of a `rows x cols` row-major `x` into its
/// transpose: `hi`, `lo` are `cols x rows` (TF32 `wgmma` reads `B` only
/// K-major, so `B` (`k x n`) goes in as `B^T`, `n x k`).
///
/// Thread mapping: blocks of 32 x 8 threads, one 32 x 32 tile each; the
/// tile goes through shared memory (rows padded to 33 floats, so the
/// column reads of the transposed write-out hit 32 banks), both global
/// sides coalesced.
#[kernel(launch_bounds(256))]
pub fn matmul_split_tf32_t_f32(
    x: DeviceSlice<f32>,
    hi: DeviceSliceMut<f32>,
    lo: DeviceSliceMut<f32>,
    rows: u32,
    cols: u32,
) {
    let (rows, cols) = (rows as usize, cols as usize);
    if x.len() < rows * cols || hi.len() < rows * cols || lo.len() < rows * cols {
        ptxlab_device::trap("split: a buffer is shorter than its matrix");
    }
    let s = shared::dynamic_shared::<f32>(0, 32 * 33);
    let (tx, ty) = (
        thread::thread_idx_x() as usize,
        thread::thread_idx_y() as usize,
    );
    let (c0, r0) = (
        thread::block_idx_x() as usize * 32,
        thread::block_idx_y() as usize * 32,
    );
    for j in 0..4 {
        let (r, c) = (r0 + ty + 8 * j, c0 + tx);
        if r < rows && c < cols {
            s.set((ty + 8 * j) * 33 + tx, x.get(r * cols + c));
        }
    }
    sync_threads();
    for j in 0..4 {
        // Output row `c0 + ty + 8j` (a column of `x`), column `r0 + tx`.
        let (orow, ocol) = (c0 + ty + 8 * j, r0 + tx);
        if orow < cols && ocol < rows {
            let (h, l) = mma::tf32_split(s.get(tx * 33 + ty + 8 * j));
            hi.set(orow * rows + ocol, h);
            lo.set(orow * rows + ocol, l);
        }
    }
}
