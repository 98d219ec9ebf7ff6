//! Rungs 1 to 3 of the SGEMM ladder, scalar loads throughout: one thread
//! per output ([`matmul_naive_f32`]), 32x32 shared-memory tiles
//! ([`matmul_tiled_f32`]) and a 64x64 block tile with 4x4 outputs per
//! thread in registers ([`matmul_regblock_f32`]).

use super::*;

/// Rung 1: naive. One thread per output `C[row, col]`; the `k` loop reads a
/// row of `A` (the same address for a whole warp: a broadcast) and a column
/// of `B` (consecutive threads read consecutive columns: coalesced).
///
/// Thread mapping: `x` = column, `y` = row; 32 x 8 blocks. Every operand is
/// fetched from L1/L2 `k` times per output: the kernel is bound by the load
/// path, not by the FMA units (about 2 FLOP per 4-byte load at best).
#[kernel(launch_bounds(256))]
pub fn matmul_naive_f32(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    let (col, row) = thread::index_2d();
    let (m, n, k) = (m as usize, n as usize, k as usize);
    if row >= m || col >= n {
        return;
    }
    let mut acc = 0.0f32;
    let mut p = 0;
    while p < k {
        acc = a.get(row * k + p).mul_add(b.get(p * n + col), acc);
        p += 1;
    }
    c.set(row * n + col, acc);
}

/// Rung 2: shared-memory tiles of 32x32, one output per thread.
///
/// What changed: the block (32x32 threads) copies a 32x32 tile of `A` and of
/// `B` into shared memory once per step of 32 along `k`, then every thread
/// reads its row of the `A` tile and its column of the `B` tile from shared
/// memory. What it buys: each global element is loaded once per block instead
/// of 32 times, so global traffic drops 32x; the kernel becomes bound by
/// shared-memory loads (2 loads per FMA).
///
/// Shared layout: `As[ty][p]` at `ty*32 + p`, `Bs[p][tx]` at `1024 + p*32 + tx`.
/// `As` reads are broadcasts (one address per warp), `Bs` reads are 32
/// consecutive words: no bank conflicts. Out-of-range elements are stored as 0.
#[kernel(launch_bounds(1024))]
pub fn matmul_tiled_f32(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    const T: usize = TILED_T;
    let s = shared::dynamic_shared::<f32>(0, 2 * T * T);
    let (tx, ty) = (
        thread::thread_idx_x() as usize,
        thread::thread_idx_y() as usize,
    );
    let col = thread::block_idx_x() as usize * T + tx;
    let row = thread::block_idx_y() as usize * T + ty;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let mut acc = 0.0f32;
    let mut k0 = 0;
    while k0 < k {
        let ak = k0 + tx;
        let av = if row < m && ak < k {
            a.get(row * k + ak)
        } else {
            0.0
        };
        let bk = k0 + ty;
        let bv = if bk < k && col < n {
            b.get(bk * n + col)
        } else {
            0.0
        };
        s.set(ty * T + tx, av);
        s.set(T * T + ty * T + tx, bv);
        sync_threads();
        let mut p = 0;
        while p < T {
            // SAFETY: `ty*T + p < T*T` and `T*T + p*T + tx < 2*T*T` = the view's length.
            unsafe {
                acc = s
                    .get_unchecked(ty * T + p)
                    .mul_add(s.get_unchecked(T * T + p * T + tx), acc);
            }
            p += 1;
        }
        sync_threads();
        k0 += T;
    }
    if row < m && col < n {
        c.set(row * n + col, acc);
    }
}

/// Rung 3: register blocking. 64x64 block tile, 16 deep, 256 threads, each
/// computing a 4x4 patch of `C` in registers.
///
/// What changed: a thread now owns 16 outputs. Per step of `p` it loads 4
/// values of `A` and 4 of `B` from shared memory into registers and does
/// 16 FMAs with them (outer product), so shared-memory traffic per FMA drops
/// from 2 loads to 0.5. What it buys: the FMA units, not the shared-memory
/// pipe, start to set the pace.
///
/// Thread mapping: `tx = rank % 16` owns columns `4tx..4tx+4`, `ty = rank / 16`
/// rows `4ty..4ty+4` of the block tile. Loads: each thread copies 4 elements
/// of the `A` tile (64x16) and 4 of the `B` tile (16x64), coalesced along rows.
/// Shared layout: `As[r][p]` at `r*16 + p`, then `Bs[p][c]` at `1024 + p*64 + c`.
#[kernel(launch_bounds(256))]
pub fn matmul_regblock_f32(
    a: DeviceSlice<f32>,
    b: DeviceSlice<f32>,
    c: DeviceSliceMut<f32>,
    m: u32,
    n: u32,
    k: u32,
) {
    const BM: usize = RB_BM;
    const BN: usize = RB_BN;
    const BK: usize = RB_BK;
    const TM: usize = RB_TM;
    const NT: usize = RB_THREADS as usize;
    let s = shared::dynamic_shared::<f32>(0, BM * BK + BK * BN);
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let t = thread::thread_rank() as usize;
    let tx = t % (BN / TM);
    let ty = t / (BN / TM);
    let bm = thread::block_idx_y() as usize * BM;
    let bn = thread::block_idx_x() as usize * BN;
    let mut acc = [[0.0f32; TM]; TM];
    let mut k0 = 0;
    while k0 < k {
        // A tile: 64 rows x 16 columns = 1024 elements, 4 per thread.
        let mut q = 0;
        while q < (BM * BK) / NT {
            let e = t + q * NT;
            let (r, p) = (e / BK, e % BK);
            let (gr, gp) = (bm + r, k0 + p);
            let v = if gr < m && gp < k {
                a.get(gr * k + gp)
            } else {
                0.0
            };
            s.set(r * BK + p, v);
            q += 1;
        }
        // B tile: 16 rows x 64 columns, 4 per thread.
        let mut q = 0;
        while q < (BK * BN) / NT {
            let e = t + q * NT;
            let (p, cc) = (e / BN, e % BN);
            let (gp, gc) = (k0 + p, bn + cc);
            let v = if gp < k && gc < n {
                b.get(gp * n + gc)
            } else {
                0.0
            };
            s.set(BM * BK + p * BN + cc, v);
            q += 1;
        }
        sync_threads();
        let mut p = 0;
        while p < BK {
            let mut af = [0.0f32; TM];
            let mut bf = [0.0f32; TM];
            for i in 0..TM {
                // SAFETY: `(4ty + i)*16 + p < 64*16` and
                // `1024 + p*64 + 4tx + i < 1024 + 16*64`: inside the view.
                unsafe {
                    af[i] = s.get_unchecked((ty * TM + i) * BK + p);
                    bf[i] = s.get_unchecked(BM * BK + p * BN + tx * TM + i);
                }
            }
            for i in 0..TM {
                for j in 0..TM {
                    acc[i][j] = af[i].mul_add(bf[j], acc[i][j]);
                }
            }
            p += 1;
        }
        sync_threads();
        k0 += BK;
    }
    for i in 0..TM {
        let r = bm + ty * TM + i;
        for j in 0..TM {
            let cc = bn + tx * TM + j;
            if r < m && cc < n {
                c.set(r * n + cc, acc[i][j]);
            }
        }
    }
}
