//! Checks against the f64 reference, and every kernel on the simulator.

use super::colsum::{Colsum, ColsumBufs, FusedPlan, bench_plans, colsum_of_product, fused_colsum};
use super::cpu::{colsum_reference, inputs, reference_f64};
use super::launch::gemm;
use super::rung::Rung;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::rng::{SplitMix64, rel_err_norm};
use ptxlab_common::runtime::{Buffer, Device};

/// The random inputs `A` (`m x kk`) and `B` (`kk x n`) of `seed`, on the
/// host and on `dev`.
pub(super) type Uploaded = (Vec<f32>, Vec<f32>, Buffer<f32>, Buffer<f32>);

/// [`inputs`] of `seed`, kept on the host and uploaded to `dev`.
pub(super) fn uploaded_inputs(
    dev: &Device,
    m: usize,
    n: usize,
    kk: usize,
    seed: u64,
) -> Result<Uploaded> {
    let (ha, hb) = inputs(m, n, kk, seed);
    let (a, b) = (dev.upload(&ha)?, dev.upload(&hb)?);
    Ok((ha, hb, a, b))
}

/// `buf` downloaded from `dev`, widened to f64 for the comparison.
pub(super) fn download_f64(dev: &Device, buf: &Buffer<f32>) -> Result<Vec<f64>> {
    Ok(dev.download(buf)?.into_iter().map(f64::from).collect())
}

/// Relative error of `rung` at `m x n x k` against the f64 reference (output
/// poisoned with NaN first).
pub fn check_rung(
    dev: &Device,
    rung: Rung,
    m: usize,
    n: usize,
    kk: usize,
    seed: u64,
) -> Result<f64> {
    let (ha, hb, a, b) = uploaded_inputs(dev, m, n, kk, seed)?;
    let mut c = dev.alloc_filled(m * n, f32::NAN)?;
    gemm(dev, rung, &a, &b, &mut c, m, n, kk)?;
    let got = download_f64(dev, &c)?;
    Ok(rel_err_norm(&got, &reference_f64(&ha, &hb, m, n, kk)))
}

/// Relative error of the column sum (`how`) at `m x n x k` against f64.
pub fn check_colsum(
    dev: &Device,
    how: Colsum,
    m: usize,
    n: usize,
    kk: usize,
    seed: u64,
) -> Result<f64> {
    let (ha, hb, a, b) = uploaded_inputs(dev, m, n, kk, seed)?;
    let mut bufs = ColsumBufs::new(dev, how, m, n, kk)?;
    colsum_of_product(dev, how, &a, &b, &mut bufs, m, n, kk)?;
    let got = download_f64(dev, &bufs.out)?;
    Ok(rel_err_norm(&got, &colsum_reference(&ha, &hb, m, n, kk)))
}

/// Relative error of the fused column sum with `plan` at `m x n x k` against
/// f64, computed twice on the same (poisoned) buffers: the second call checks
/// that each call clears what the previous one left. A one-launch plan must
/// also report no spin-wait timeout.
pub fn check_fused(
    dev: &Device,
    plan: &FusedPlan,
    m: usize,
    n: usize,
    kk: usize,
    seed: u64,
) -> Result<f64> {
    let (ha, hb, a, b) = uploaded_inputs(dev, m, n, kk, seed)?;
    let want = colsum_reference(&ha, &hb, m, n, kk);
    let mut bufs = ColsumBufs::new(dev, Colsum::Fused, m, n, kk)?;
    let mut worst = 0.0f64;
    for _ in 0..2 {
        fused_colsum(dev, plan, &a, &b, &mut bufs, m, n, kk)?;
        if plan.one_launch {
            bufs.check_no_timeout(dev)?;
        }
        let e = rel_err_norm(&download_f64(dev, &bufs.out)?, &want);
        // NaN (a poisoned slot never written) must win over any number.
        worst = if e.is_nan() { e } else { worst.max(e) };
    }
    Ok(worst)
}

/// Tolerance of the SGEMM checks (f32 sums of up to a few thousand terms).
pub const TOL: f64 = 1e-4;

pub(super) fn verify(what: String, err: f64, tol: f64) -> Result<f64> {
    if err.is_finite() && err <= tol {
        Ok(err)
    } else {
        Err(Error::Verification {
            what,
            detail: format!("relative error {err:.2e} > {tol:.0e}"),
        })
    }
}

/// Why `c` (`rows x n`, row-major) fails the full-output scan: its first
/// element that is not finite (a NaN poison never overwritten, or an
/// overflow), named by row and column; `None` when every element is finite.
pub(super) fn first_unwritten(c: &[f32], n: usize) -> Option<String> {
    let i = c.iter().position(|v| !v.is_finite())?;
    Some(format!(
        "C[{}, {}] is {} (never written, or overflow)",
        i / n.max(1),
        i % n.max(1),
        c[i]
    ))
}

/// Sampled check of a big product: 64 random entries of `C` against f64 dots.
pub(super) fn sample_check(c: &[f32], a: &[f32], b: &[f32], m: usize, n: usize, kk: usize) -> f64 {
    let mut r = SplitMix64(99);
    let (mut got, mut want) = (Vec::new(), Vec::new());
    for _ in 0..64 {
        let i = (r.next_u64() % m as u64) as usize;
        let j = (r.next_u64() % n as u64) as usize;
        let s: f64 = (0..kk)
            .map(|p| a[i * kk + p] as f64 * b[p * n + j] as f64)
            .sum();
        got.push(c[i * n + j] as f64);
        want.push(s);
    }
    rel_err_norm(&got, &want)
}

/// Every SGEMM and column-sum kernel on the simulator at small odd sizes
/// (the crate's `sim_check` adds the tensor-core ladder).
pub fn sim_check_f32() -> Result<()> {
    let dev = Device::sim();
    // 37x29x41: nothing is a multiple of a tile or of 4 (scalar edge paths);
    // 33x36x44: k and n multiples of 4 (the 16-byte paths of rung 4) but m ragged.
    for (m, n, kk) in [(37, 29, 41), (33, 36, 44)] {
        for rung in Rung::ALL {
            let e = check_rung(&dev, rung, m, n, kk, 5)?;
            verify(
                format!("matmul {} {m}x{n}x{kk} (simulator)", rung.label()),
                e,
                TOL,
            )?;
        }
    }
    // Column sums: 130x29x41, three row chunks of 64 (the last of 2 rows);
    // 301x36x44, five chunks (the last of 45 rows: the 4-row loop and its tail).
    for (m, n, kk) in [(130, 29, 41), (301, 36, 44)] {
        for how in [Colsum::Fused, Colsum::Direct] {
            let e = check_colsum(&dev, how, m, n, kk, 11)?;
            verify(
                format!("column sum {how:?} {m}x{n}x{kk} (simulator)"),
                e,
                1e-4,
            )?;
        }
    }
    // Every fused plan the benchmark times, at a shape where A has two
    // blocks of columns (k = 300 > 256) and B a ragged one, and no chunk
    // size divides a row count (the 8-row loop and its tail).
    let (m, n, kk) = (301, 37, 300);
    for plan in bench_plans(&dev, m, n, kk)? {
        let e = check_fused(&dev, &plan, m, n, kk, 12)?;
        verify(
            format!("{} {m}x{n}x{kk} (simulator)", plan.label()),
            e,
            1e-4,
        )?;
    }
    Ok(())
}
