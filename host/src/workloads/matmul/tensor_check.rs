//! The tensor-core kernels against the f64 reference: inputs rounded to the
//! 16-bit type (the reference multiplies those exact values), outputs
//! poisoned with NaN first, and every kernel on the simulator at odd shapes.

use super::check::{TOL, verify};
use super::cpu::{inputs, reference_f64};
use super::tensor::{Half, TcRung, Tf32x3, gemm_half, gemm_tf32x3};
use crate::error::Result;
use crate::rng::rel_err_norm;
use crate::runtime::Device;
use ptxlab_device::sim::SimOptions;

/// A NaN in both 16-bit types (all-ones exponent, non-zero mantissa):
/// the poison of 16-bit outputs.
pub const POISON_16: u16 = 0xffff;

/// Random inputs in [-1, 1) rounded to `half`, as bits (never all zero).
pub fn half_inputs(half: Half, m: usize, n: usize, kk: usize, seed: u64) -> (Vec<u16>, Vec<u16>) {
    let (a, b) = inputs(m, n, kk, seed);
    let r = |v: Vec<f32>| v.into_iter().map(|x| half.from_f32(x)).collect();
    (r(a), r(b))
}

/// The exact values of 16-bit bits, as f32.
pub fn widen(half: Half, x: &[u16]) -> Vec<f32> {
    x.iter().map(|v| half.to_f32(*v)).collect()
}

/// Relative error of `rung` with `half` inputs at `m x n x k` against the
/// f64 product of the same rounded inputs (the output poisoned first).
pub fn check_half(
    dev: &Device,
    rung: TcRung,
    half: Half,
    m: usize,
    n: usize,
    kk: usize,
    seed: u64,
) -> Result<f64> {
    let (ha, hb) = half_inputs(half, m, n, kk, seed);
    let a = dev.upload(&ha)?;
    let b = dev.upload(&hb)?;
    let mut c = dev.alloc_filled(m * n, POISON_16)?;
    gemm_half(dev, rung, half, &a, &b, &mut c, m, n, kk)?;
    let got: Vec<f64> = dev
        .download(&c)?
        .into_iter()
        .map(|v| half.to_f32(v) as f64)
        .collect();
    let want = reference_f64(&widen(half, &ha), &widen(half, &hb), m, n, kk);
    Ok(rel_err_norm(&got, &want))
}

/// Relative error of 3xTF32 `variant` at `m x n x k` against the f64
/// reference of the f32 inputs (the output poisoned first).
pub fn check_tf32x3(
    dev: &Device,
    variant: Tf32x3,
    m: usize,
    n: usize,
    kk: usize,
    seed: u64,
) -> Result<f64> {
    let (ha, hb) = inputs(m, n, kk, seed);
    let a = dev.upload(&ha)?;
    let b = dev.upload(&hb)?;
    let mut c = dev.alloc_filled(m * n, f32::NAN)?;
    gemm_tf32x3(dev, variant, &a, &b, &mut c, m, n, kk)?;
    let got: Vec<f64> = dev.download(&c)?.into_iter().map(f64::from).collect();
    Ok(rel_err_norm(&got, &reference_f64(&ha, &hb, m, n, kk)))
}

/// Shapes of the simulator checks for a block tile of `tile` rows and
/// columns: two tiles each way with ragged edges, once with every row
/// 16-byte aligned (`k`, `n` multiples of 8: the asynchronous copies) and
/// once with none (element-by-element copies), `k` not a multiple of the
/// tile depth. `n` stays even: see [`sim_check_tensor`] for odd `n`.
pub fn sim_shapes(tile: usize) -> [(usize, usize, usize); 2] {
    [(tile + 22, tile + 8, 40), (tile + 3, tile + 6, 37)]
}

/// Every tensor-core kernel on the simulator at the shapes of
/// [`sim_shapes`], against the f64 reference, with the race detector on;
/// and each BF16/FP16 rung once at an odd `n` with it off. (With 16-bit
/// outputs and odd `n`, the last element of a row and the first of the
/// next share a 4-byte word, written by two blocks: no race on a GPU,
/// whose stores are byte-granular, but the simulator's detector tracks
/// 4-byte words and would report one.)
pub fn sim_check_tensor() -> Result<()> {
    let dev = &Device::sim();
    let no_race_check = &Device::sim_with(SimOptions { race_check: false });
    for rung in TcRung::ALL {
        let odd_n = (rung.tile() + 3, rung.tile() + 5, 37);
        let runs = sim_shapes(rung.tile())
            .into_iter()
            .enumerate()
            // Both types on the aligned shape, one on the ragged ones.
            .flat_map(|(i, s)| {
                let halves: &[Half] = if i == 0 { &Half::ALL } else { &[Half::Bf16] };
                halves.iter().map(move |h| (dev, *h, s))
            })
            .chain([(no_race_check, Half::F16, odd_n)]);
        for (d, half, (m, n, kk)) in runs {
            let e = check_half(d, rung, half, m, n, kk, 5)?;
            verify(
                format!(
                    "matmul {} {} {m}x{n}x{kk} (simulator)",
                    half.name(),
                    rung.label()
                ),
                e,
                half.tol(),
            )?;
        }
    }
    for variant in Tf32x3::ALL {
        for (m, n, kk) in sim_shapes(kernels_gpu::tensor::TF32_BM) {
            let e = check_tf32x3(dev, variant, m, n, kk, 6)?;
            verify(
                format!("matmul {} {m}x{n}x{kk} (simulator)", variant.label()),
                e,
                TOL,
            )?;
        }
    }
    Ok(())
}
