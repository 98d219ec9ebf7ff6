//! The FP8 GEMM against the f64 reference: random inputs quantised to
//! E4M3 with per-tensor scales (or DeepGEMM's block scales), the output
//! poisoned with NaN first, and the result compared by norm with the f64
//! products of the dequantised inputs (`scale_a a_code` times `scale_b
//! b_code`, each scale its block's with block scaling, summed in f64).

use super::check::{first_unwritten, verify};
use super::cpu::inputs;
use super::fp8::{
    Fp8BlockScales, Fp8Kernel, Fp8Scales, gemm_fp8, gemm_fp8_blockscaled, transpose_fp8,
};
use super::tensor::Half;
use super::tensor_check::{POISON_16, widen};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::rng::{SplitMix64, rel_err_norm};
use ptxlab_common::runtime::Device;
use ptxlab_device::fp8::E4m3;
use ptxlab_device::sim::SimOptions;
use rayon::prelude::*;

/// Relative error bound (by norm) of the FP8 GEMM against the f64
/// reference on the same quantised inputs: the output's rounding to BF16
/// (at most `2^-8` of each element, round to nearest with 8 significant
/// bits) plus the f32 sums of 128-deep partial products, with a margin.
/// The same as the BF16 rungs' ([`Half::tol`]).
pub fn fp8_tol() -> f64 {
    Half::Bf16.tol()
}

/// The usual per-tensor scale of `x`: its largest magnitude over E4M3's
/// largest finite value (448), so the quantised codes use the format's
/// whole range; 1 when `x` is all zeros (or holds no finite value).
pub fn e4m3_scale(x: &[f32]) -> f32 {
    let amax = x
        .iter()
        .filter(|v| v.is_finite())
        .fold(0f32, |m, v| m.max(v.abs()));
    if amax > 0.0 {
        amax / E4m3::MAX.to_f32()
    } else {
        1.0
    }
}

/// `x / scale` rounded to E4M3 (nearest even, saturating at 448: `cvt`'s
/// rule), the codes whose values times `scale` approximate `x`.
pub fn quantize_e4m3(x: &[f32], scale: f32) -> Vec<E4m3> {
    x.par_iter().map(|v| E4m3::from_f32(v / scale)).collect()
}

/// The inputs of one FP8 product: `A` (`m x k`) and `B^T` (`n x k`) as
/// E4M3 codes, and their scales: per tensor ([`Fp8Scales`], the default)
/// or per block ([`Fp8BlockInputs`]).
#[derive(Debug, Clone)]
pub struct Fp8Inputs<S = Fp8Scales> {
    /// `A`'s codes, `m x k` row-major.
    pub a: Vec<E4m3>,
    /// `B^T`'s codes, `n x k` row-major.
    pub bt: Vec<E4m3>,
    /// The scales.
    pub scales: S,
}

/// Random `A` and `B` in `[-1, 1)` (the f32 inputs of the other precisions,
/// [`inputs`]), quantised with the scales given or, for `None`, each with
/// its own [`e4m3_scale`]; `B` is transposed to `B^T` on the host.
pub fn fp8_inputs(
    m: usize,
    n: usize,
    kk: usize,
    seed: u64,
    (scale_a, scale_b): (Option<f32>, Option<f32>),
) -> Result<Fp8Inputs> {
    let (fa, fb) = inputs(m, n, kk, seed);
    let scales = Fp8Scales {
        a: scale_a.unwrap_or_else(|| e4m3_scale(&fa)),
        b: scale_b.unwrap_or_else(|| e4m3_scale(&fb)),
    };
    scales.product()?;
    let a = quantize_e4m3(&fa, scales.a);
    let bt = transpose_fp8(&quantize_e4m3(&fb, scales.b), kk, n)?;
    Ok(Fp8Inputs { a, bt, scales })
}

/// The exact values of E4M3 codes, as f32.
pub fn widen_e4m3(x: &[E4m3]) -> Vec<f32> {
    x.iter().map(|v| v.to_f32()).collect()
}

/// `D[i, j] = scale_a scale_b sum_p A[i, p] B^T[j, p]` in f64 for the
/// `cells` given (every element, row by row, for `None`).
fn reference_cells(
    inp: &Fp8Inputs,
    (m, n, kk): (usize, usize, usize),
    cells: Option<&[(usize, usize)]>,
) -> Vec<f64> {
    let value = e4m3_values();
    let (a, bt) = (&inp.a, &inp.bt);
    let s = inp.scales.a as f64 * inp.scales.b as f64;
    each_cell(cells, (m, n), |i, j| {
        let (ra, rb) = (&a[i * kk..(i + 1) * kk], &bt[j * kk..(j + 1) * kk]);
        s * exact_dot(&value, ra, rb)
    })
}

/// Every E4M3 code's exact value, indexed by its bits (a NaN code never
/// comes out of `cvt`'s saturating conversion; it would give NaN here, as
/// on the GPU).
fn e4m3_values() -> Vec<f64> {
    (0..=255u8)
        .map(|c| E4m3::from_bits(c).to_f32() as f64)
        .collect()
}

/// `sum_p x[p] y[p]` in f64 (exact products of two FP8 values), `value`
/// from [`e4m3_values`].
fn exact_dot(value: &[f64], x: &[E4m3], y: &[E4m3]) -> f64 {
    x.iter()
        .zip(y)
        .map(|(x, y)| value[x.to_bits() as usize] * value[y.to_bits() as usize])
        .sum()
}

/// `dot(i, j)` for the `cells` given, or for every cell of the `m x n`
/// result, row by row (`None`), in parallel.
fn each_cell(
    cells: Option<&[(usize, usize)]>,
    (m, n): (usize, usize),
    dot: impl Fn(usize, usize) -> f64 + Sync,
) -> Vec<f64> {
    match cells {
        Some(c) => c.par_iter().map(|&(i, j)| dot(i, j)).collect(),
        None => (0..m * n)
            .into_par_iter()
            .map(|c| dot(c / n, c % n))
            .collect(),
    }
}

/// The full f64 reference of an FP8 product (`m x n`, row-major).
pub fn reference_fp8(inp: &Fp8Inputs, m: usize, n: usize, kk: usize) -> Vec<f64> {
    reference_cells(inp, (m, n, kk), None)
}

/// The relative error by norm of `got` (`D`, BF16 bits, `m x n`) against
/// the f64 reference: over every element (`full`) or 64 sampled ones
/// (large products). Every element must have been written (no NaN left
/// of the poison) and be finite, else a verification error naming the
/// first one that is not.
#[allow(clippy::too_many_arguments)]
pub fn fp8_error(
    what: &str,
    got: &[u16],
    inp: &Fp8Inputs,
    m: usize,
    n: usize,
    kk: usize,
    full: bool,
) -> Result<f64> {
    error_against(what, got, (m, n), full, |cells| {
        reference_cells(inp, (m, n, kk), cells)
    })
}

/// [`fp8_error`]'s comparison with the reference `want` gives for the
/// cells asked (every element, row by row, for `None`).
fn error_against(
    what: &str,
    got: &[u16],
    (m, n): (usize, usize),
    full: bool,
    want: impl Fn(Option<&[(usize, usize)]>) -> Vec<f64>,
) -> Result<f64> {
    let got = widen(Half::Bf16, got);
    if let Some(why) = first_unwritten(&got, n) {
        return Err(Error::Verification {
            what: what.to_string(),
            detail: why.replacen("C[", "D[", 1),
        });
    }
    if full {
        let want = want(None);
        let got: Vec<f64> = got.iter().map(|v| *v as f64).collect();
        return Ok(rel_err_norm(&got, &want));
    }
    let mut r = SplitMix64(99);
    let cells: Vec<(usize, usize)> = (0..64)
        .map(|_| {
            let i = (r.next_u64() % m as u64) as usize;
            (i, (r.next_u64() % n as u64) as usize)
        })
        .collect();
    let want = want(Some(&cells));
    let got: Vec<f64> = cells.iter().map(|&(i, j)| got[i * n + j] as f64).collect();
    Ok(rel_err_norm(&got, &want))
}

/// Relative error of `kernel` at `m x n x k` (inputs of [`fp8_inputs`]
/// with `scales`, or each tensor's own scale for `None`) against the f64
/// reference over every element, the output poisoned first.
pub fn check_fp8(
    dev: &Device,
    kernel: Fp8Kernel,
    (m, n, kk): (usize, usize, usize),
    scales: Option<Fp8Scales>,
    seed: u64,
) -> Result<f64> {
    let inp = fp8_inputs(m, n, kk, seed, (scales.map(|s| s.a), scales.map(|s| s.b)))?;
    let a = dev.upload(&inp.a)?;
    let bt = dev.upload(&inp.bt)?;
    let mut d = dev.alloc_filled(m * n, POISON_16)?;
    gemm_fp8(dev, kernel, &a, &bt, &mut d, (m, n, kk), inp.scales)?;
    let what = format!("matmul {} {m}x{n}x{kk} on {}", kernel.label(), dev.name());
    fp8_error(&what, &dev.download(&d)?, &inp, m, n, kk, true)
}

/// The shapes of the simulator checks of the FP8 GEMM (`m x n x k`, and
/// whether `n` is odd): two tile rows with ragged edges and `k` of two
/// stages; a short `m`, `n` and `k` (one stage, one tile); `k` of seven
/// stages, the last one short, over two tiles per block (the four-stage
/// ring wraps, both barrier phases, the producer a tile ahead); and an
/// odd `n` (two-byte stores at row ends).
pub const FP8_SIM_SHAPES: [(usize, usize, usize); 4] = [
    (130, 136, 256),
    (67, 48, 128),
    (200, 264, 784),
    (67, 45, 128),
];

/// The FP8 GEMM on the simulator at [`FP8_SIM_SHAPES`], against the f64
/// reference: with each tensor's own scale, and once with scales far from
/// 1 (codes saturated at 448 in `A`); then with block scales
/// ([`sim_check_fp8_block`]). The race detector is on except at odd `n`,
/// where two blocks' BF16 stores share a 4-byte word (separate bytes on a
/// GPU; the detector tracks words).
pub fn sim_check_fp8() -> Result<()> {
    let strict = &Device::sim();
    let racy = &Device::sim_with(SimOptions {
        race_check: false,
        ..SimOptions::default()
    });
    let odd_scales = Fp8Scales { a: 1.5e-3, b: 37.0 };
    for (i, &(m, n, kk)) in FP8_SIM_SHAPES.iter().enumerate() {
        let dev = if n % 2 == 1 { racy } else { strict };
        let mut runs = vec![None];
        if i == 1 {
            runs.push(Some(odd_scales));
        }
        for scales in runs {
            for kernel in Fp8Kernel::ALL {
                let e = check_fp8(dev, kernel, (m, n, kk), scales, 5)?;
                verify(
                    format!(
                        "matmul {} {m}x{n}x{kk} scales {scales:?} (simulator)",
                        kernel.label()
                    ),
                    e,
                    fp8_tol(),
                )?;
            }
        }
    }
    sim_check_fp8_block()
}

/// The inputs of one block-scaled FP8 product.
pub type Fp8BlockInputs = Fp8Inputs<Fp8BlockScales>;

/// Random inputs for block scaling: `A` and `B` in `[-1, 1)` ([`inputs`])
/// with each scale block multiplied by its own power of two, `2^u` with `u`
/// uniform in `[-8, 8]` (seeded), so that the blocks' magnitudes differ as
/// block scaling expects and a scale applied to the wrong block shows;
/// then quantised with the block scales `given` or, for `None`, each
/// block's largest magnitude over 448 (1 for an all-zero block). The
/// scales are checked ([`Fp8BlockScales::check`]).
pub fn fp8_block_inputs(
    m: usize,
    n: usize,
    kk: usize,
    seed: u64,
    given: Option<Fp8BlockScales>,
) -> Result<Fp8BlockInputs> {
    const B: usize = kernels_gpu::hopper_fp8::FP8_SCALE_BLOCK;
    let ((_, kb), (nb, _)) = Fp8BlockScales::shapes(m, n, kk);
    let (fa, fb) = inputs(m, n, kk, seed);
    let mut r = SplitMix64(seed ^ 0xB10C_5CA1);
    let mut weights = |len: usize| -> Vec<f32> {
        (0..len)
            .map(|_| (r.uniform(-8.0, 8.0).round() as f32).exp2())
            .collect()
    };
    let (wa, wb) = (weights(m * kb), weights(nb * kb));
    // A and B^T with their blocks' weights, as f32 (exact: powers of two).
    let xa: Vec<f32> = (0..m * kk)
        .into_par_iter()
        .map(|c| {
            let (i, p) = (c / kk, c % kk);
            fa[c] * wa[i * kb + p / B]
        })
        .collect();
    let xbt: Vec<f32> = (0..n * kk)
        .into_par_iter()
        .map(|c| {
            let (j, p) = (c / kk, c % kk);
            fb[p * n + j] * wb[(j / B) * kb + p / B]
        })
        .collect();
    let scales = match given {
        Some(s) => s,
        None => {
            let amax = |x: &[f32], rows: usize, row_block: usize| -> Vec<f32> {
                let mut s = vec![0f32; rows.div_ceil(row_block) * kb];
                for (c, v) in x.iter().enumerate() {
                    let (i, p) = (c / kk, c % kk);
                    let at = (i / row_block) * kb + p / B;
                    s[at] = s[at].max(v.abs());
                }
                s.iter()
                    .map(|&a| if a > 0.0 { a / E4m3::MAX.to_f32() } else { 1.0 })
                    .collect()
            };
            Fp8BlockScales {
                a: amax(&xa, m, 1),
                b: amax(&xbt, n, B),
            }
        }
    };
    scales.check(m, n, kk)?;
    let a = (0..m * kk)
        .into_par_iter()
        .map(|c| E4m3::from_f32(xa[c] / scales.a[(c / kk) * kb + (c % kk) / B]))
        .collect();
    let bt = (0..n * kk)
        .into_par_iter()
        .map(|c| E4m3::from_f32(xbt[c] / scales.b[(c / kk / B) * kb + (c % kk) / B]))
        .collect();
    Ok(Fp8BlockInputs { a, bt, scales })
}

/// `D[i, j] = sum over k blocks kb of a[i, kb] b[j / 128, kb] sum_{p in kb}
/// A[i, p] B^T[j, p]` in f64 for the `cells` given (every element, row by
/// row, for `None`).
fn block_reference_cells(
    inp: &Fp8BlockInputs,
    (m, n, kk): (usize, usize, usize),
    cells: Option<&[(usize, usize)]>,
) -> Vec<f64> {
    const B: usize = kernels_gpu::hopper_fp8::FP8_SCALE_BLOCK;
    let value = e4m3_values();
    let (a, bt) = (&inp.a, &inp.bt);
    each_cell(cells, (m, n), |i, j| {
        let (ra, rb) = (&a[i * kk..(i + 1) * kk], &bt[j * kk..(j + 1) * kk]);
        ra.chunks(B)
            .zip(rb.chunks(B))
            .enumerate()
            .map(|(kb, (xa, xb))| inp.scales.factor(kk, i, j, kb) * exact_dot(&value, xa, xb))
            .sum()
    })
}

/// The full f64 reference of a block-scaled FP8 product (`m x n`,
/// row-major).
pub fn reference_fp8_block(inp: &Fp8BlockInputs, m: usize, n: usize, kk: usize) -> Vec<f64> {
    block_reference_cells(inp, (m, n, kk), None)
}

/// [`fp8_error`] for a block-scaled product.
#[allow(clippy::too_many_arguments)]
pub fn fp8_block_error(
    what: &str,
    got: &[u16],
    inp: &Fp8BlockInputs,
    m: usize,
    n: usize,
    kk: usize,
    full: bool,
) -> Result<f64> {
    error_against(what, got, (m, n), full, |cells| {
        block_reference_cells(inp, (m, n, kk), cells)
    })
}

/// Relative error of the block-scaled `kernel` at `m x n x k` (inputs of
/// [`fp8_block_inputs`] with each block's own scale) against the f64
/// reference over every element, the output poisoned first.
pub fn check_fp8_block(
    dev: &Device,
    kernel: Fp8Kernel,
    (m, n, kk): (usize, usize, usize),
    seed: u64,
) -> Result<f64> {
    let inp = fp8_block_inputs(m, n, kk, seed, None)?;
    let a = dev.upload(&inp.a)?;
    let bt = dev.upload(&inp.bt)?;
    let mut d = dev.alloc_filled(m * n, POISON_16)?;
    gemm_fp8_blockscaled(dev, kernel, &a, &bt, &mut d, (m, n, kk), &inp.scales)?;
    let what = format!(
        "matmul {} {m}x{n}x{kk} on {}",
        kernel.label_for(super::fp8::Fp8Scaling::Block),
        dev.name()
    );
    fp8_block_error(&what, &dev.download(&d)?, &inp, m, n, kk, true)
}

/// The shapes of the simulator checks of the block-scaled FP8 GEMM (`m x
/// n x k`): two tile rows with ragged edges, two k blocks, `B`'s second
/// column block half full; an odd `n` and `m`, `k` of four blocks the last
/// one 16 deep (a short scale block); `k` of seven blocks over two tiles
/// per block, a column block past `n` in the second tile's half.
pub const FP8_BLOCK_SIM_SHAPES: [(usize, usize, usize); 3] =
    [(130, 136, 256), (67, 45, 400), (200, 264, 784)];

/// The block-scaled FP8 GEMM on the simulator at [`FP8_BLOCK_SIM_SHAPES`],
/// against the f64 reference (the race detector off at odd `n`, as in
/// [`sim_check_fp8`]).
pub fn sim_check_fp8_block() -> Result<()> {
    let strict = &Device::sim();
    let racy = &Device::sim_with(SimOptions {
        race_check: false,
        ..SimOptions::default()
    });
    for &(m, n, kk) in &FP8_BLOCK_SIM_SHAPES {
        let dev = if n % 2 == 1 { racy } else { strict };
        for kernel in Fp8Kernel::ALL {
            let e = check_fp8_block(dev, kernel, (m, n, kk), 6)?;
            verify(
                format!(
                    "matmul {} {m}x{n}x{kk} (simulator)",
                    kernel.label_for(super::fp8::Fp8Scaling::Block)
                ),
                e,
                fp8_tol(),
            )?;
        }
    }
    Ok(())
}
