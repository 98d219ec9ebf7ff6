//! CPU side: random inputs, f64 references, the CPU baselines (ndarray
//! `dot` on one thread, a rayon blocked kernel) and operation counts.

use ptxlab_common::rng::uniform_vec;
use rayon::prelude::*;

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
