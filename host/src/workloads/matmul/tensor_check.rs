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

/// Shapes of the simulator checks of `rung`: two block tiles each way
/// (for rung 5's 128 x 256 tiles, two tile rows and two columns over a
/// persistent grid of two blocks) with ragged edges, and:
/// * without TMA: once with every row 16-byte aligned (`k`, `n` multiples
///   of 8: the asynchronous copies) and once with none (element-by-element
///   copies), `k` not a multiple of the tile depth; `n` stays even (see
///   [`sim_check_tensor`] for odd `n`);
/// * with TMA (rows must be 16-byte aligned): `k` of 6 tiles (more than
///   the stages: every stage refilled, both barrier phases), and an odd
///   `m` with a short `k`.
pub fn sim_shapes(rung: TcRung) -> [(usize, usize, usize); 2] {
    let t = rung.tile();
    match rung {
        TcRung::Wgmma => [(t + 22, t + 8, 328), (t + 3, 2 * t + 8, 72)],
        TcRung::Ws => [(t + 22, 2 * t + 8, 328), (t + 3, t + 8, 72)],
        // Two 256-column tiles; k of 3 and 2 tiles of 64.
        TcRung::PipeW => [(t + 22, 2 * t + 8, 72), (t + 3, 2 * t + 6, 37)],
        TcRung::PipeK => [(t + 22, t + 8, 136), (t + 3, t + 6, 37)],
        // k of 4 tiles of 64 (the third stage refilled, the last tile short).
        TcRung::PipeS => [(t + 22, t + 8, 200), (t + 3, t + 6, 37)],
        // 256-row tiles, four stages: k of 5 tiles, the last short (every
        // stage refilled).
        TcRung::PipeT => [(t + 22, 136, 296), (t + 3, 134, 37)],
        _ => [(t + 22, t + 8, 40), (t + 3, t + 6, 37)],
    }
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
    let no_race_check = &Device::sim_with(SimOptions {
        race_check: false,
        ..SimOptions::default()
    });
    for rung in TcRung::ALL {
        // TMA rungs need even n (16-byte rows): no odd-n case for them.
        let odd_n = (!rung.uses_tma()).then_some((rung.tile() + 3, rung.tile() + 5, 37));
        let runs = sim_shapes(rung)
            .into_iter()
            .enumerate()
            // Both types on the aligned shape, one on the ragged ones.
            .flat_map(|(i, s)| {
                let halves: &[Half] = if i == 0 { &Half::ALL } else { &[Half::Bf16] };
                halves.iter().map(move |h| (dev, *h, s))
            })
            .chain(odd_n.map(|s| (no_race_check, Half::F16, s)));
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
        // wgmma: k of 4 tiles of 32 (more than its 3 stages), a multiple of 4.
        let t = variant.tile();
        let shapes = match variant {
            Tf32x3::Mma => [(t + 22, t + 8, 40), (t + 3, t + 6, 37)],
            Tf32x3::Wgmma => [(t + 22, t + 8, 100), (t + 3, t + 5, 36)],
        };
        for (m, n, kk) in shapes {
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
