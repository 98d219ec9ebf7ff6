//! The tensor-core kernels against the f64 reference: inputs rounded to the
//! 16-bit type (the reference multiplies those exact values), outputs
//! poisoned with NaN first, and every kernel on the simulator at odd shapes.

use super::check::{TOL, uploaded_inputs, verify};
use super::cpu::{inputs, reference_f64};
use super::tensor::{Half, TcRung, Tf32x3, gemm_half, gemm_tf32x3};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::rng::{SplitMix64, rel_err_norm};
use ptxlab_common::runtime::Device;
use ptxlab_device::sim::SimOptions;
use rayon::prelude::*;

/// Unit roundoff of f32, `2^-24`.
pub const U_F32: f64 = 1.0 / 16_777_216.0;

/// `k` per tile of a 3xTF32 variant: the depth of the tensor-core chains
/// that start from fresh accumulators (16 on `mma.sync`, 32 on `wgmma`).
pub fn tf32x3_depth(variant: Tf32x3) -> usize {
    match variant {
        Tf32x3::Mma => kernels_gpu::tensor::TF32_BK,
        Tf32x3::Wgmma => kernels_gpu::hopper::TF32W_BK,
    }
}

/// The constant `c` of the element-wise 3xTF32 bound
/// `|C - A B|_ij <= c u (|A| |B|)_ij` (`u` = [`U_F32`], `C - A B` against
/// the exact product of the f32 inputs), for depth `k`:
///
/// `c = 1.01 (12 + 20 (3 T / 8) + ceil(k / T))`, `T` = [`tf32x3_depth`].
///
/// * `12`: the split. Each f32 `x` is `hi + lo + e` with `hi = rna(x)`,
///   `lo = rna(x - hi)` (TF32, 11 significant bits; `x - hi` is exact),
///   `|lo| <= 2^-11 |x|`, `|e| <= 2^-22 |x|`. The three products kept,
///   `lo_a hi_b + hi_a lo_b + hi_a hi_b`, miss `lo_a lo_b + (hi_a + lo_a)
///   e_b + e_a b`: at most `3 * 2^-22 |a||b| = 12 u |a||b|` per product.
///   The products themselves are exact (11 x 11 bits).
/// * `20 (3 T / 8)`: the tensor-core chain of one tile, `3 T / 8`
///   instructions (three products per 8 of depth) accumulating into fresh
///   f32 registers. Each instruction adds 8 exact products to the
///   accumulator, aligned to the largest and truncated (the behaviour
///   measured by Fasi, Higham, Mikaitis and Pranesh, 2021): at most
///   `9 * 2^-23` of the sum of its addends' magnitudes, rounded up to
///   `20 u`, and each addend is at most the tile's whole sum of
///   magnitudes.
/// * `ceil(k / T)`: the running sum over the tiles, one f32 add (round to
///   nearest, `u`) per tile.
/// * `1.01` covers the `(1 + O(2^-10))` factors dropped above.
///
/// `mma` (T = 16): `c = 1.01 (132 + ceil(k / 16))`; `wgmma` (T = 32): `c =
/// 1.01 (252 + ceil(k / 32))`. For `k >= T` this is below `9 k` and `8 k`:
/// the usual `c k u` form, with the chains' constant made explicit.
/// Derivation and numbers: `docs/book/src/workloads/matmul.md`, "The 3xTF32 bound".
pub fn tf32x3_c(variant: Tf32x3, k: usize) -> f64 {
    let t = tf32x3_depth(variant);
    1.01 * (12.0 + 20.0 * (3 * t / 8) as f64 + k.div_ceil(t) as f64)
}

/// `C` (`m x n`) of a 3xTF32 product of `a` (`m x k`) and `b` (`k x n`)
/// against the element-wise bound of [`tf32x3_c`], every element (`full`)
/// or 64 sampled ones (the sequence of `super::check::sample_check`).
/// Every element must be written (no NaN). Returns the relative error by
/// norm over the elements checked, or a verification error naming the
/// worst element: its value, the f64 reference, its error and its bound.
#[allow(clippy::too_many_arguments)]
pub fn verify_tf32x3(
    what: &str,
    variant: Tf32x3,
    got: &[f32],
    a: &[f32],
    b: &[f32],
    m: usize,
    n: usize,
    kk: usize,
    full: bool,
) -> Result<f64> {
    let fail = |detail: String| Error::Verification {
        what: what.to_string(),
        detail,
    };
    if got.len() != m * n || a.len() != m * kk || b.len() != kk * n {
        return Err(fail(format!(
            "C has {}, A {}, B {} elements; {m}x{n}x{kk} needs {}, {} and {}",
            got.len(),
            a.len(),
            b.len(),
            m * n,
            m * kk,
            kk * n
        )));
    }
    if let Some(i) = got.iter().position(|v| !v.is_finite()) {
        return Err(fail(format!(
            "C[{}, {}] is {} (never written, or overflow)",
            i / n,
            i % n,
            got[i]
        )));
    }
    let cu = tf32x3_c(variant, kk) * U_F32;
    let cells: Vec<(usize, usize)> = if full {
        (0..m * n).map(|i| (i / n, i % n)).collect()
    } else {
        let mut r = SplitMix64(99);
        (0..64)
            .map(|_| {
                let i = (r.next_u64() % m as u64) as usize;
                let j = (r.next_u64() % n as u64) as usize;
                (i, j)
            })
            .collect()
    };
    // Per cell: (value, reference, error / bound, bound).
    let per: Vec<(f64, f64, f64, f64)> = cells
        .par_iter()
        .map(|&(i, j)| {
            let (mut s, mut abs) = (0.0f64, 0.0f64);
            for p in 0..kk {
                let x = a[i * kk + p] as f64 * b[p * n + j] as f64;
                s += x;
                abs += x.abs();
            }
            let v = got[i * n + j] as f64;
            let bound = cu * abs;
            let e = (v - s).abs();
            let ratio = if bound > 0.0 {
                e / bound
            } else if e == 0.0 {
                0.0
            } else {
                f64::INFINITY
            };
            (v, s, ratio, bound)
        })
        .collect();
    let (w, worst) =
        per.iter().enumerate().fold(
            (0, 0.0f64),
            |(w, r), (i, p)| if p.2 > r { (i, p.2) } else { (w, r) },
        );
    if worst > 1.0 {
        let (v, s, _, bound) = per[w];
        let (i, j) = cells[w];
        let over = per.iter().filter(|p| p.2 > 1.0).count();
        return Err(fail(format!(
            "C[{i}, {j}] = {v:e} against {s:e}: error {:.2e} > bound {bound:.2e} = c u (|A||B|)_ij \
             with c = {:.1} (k = {kk}), {worst:.1}x the bound; {over} of {} elements checked \
             are over",
            (v - s).abs(),
            tf32x3_c(variant, kk),
            cells.len()
        )));
    }
    let (gv, wv): (Vec<f64>, Vec<f64>) = per.iter().map(|p| (p.0, p.1)).unzip();
    Ok(rel_err_norm(&gv, &wv))
}

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

/// Relative error (by norm) of 3xTF32 `variant` at `m x n x k` against
/// the f64 reference of the f32 inputs (the output poisoned first), after
/// every element passed the element-wise bound ([`verify_tf32x3`]; its
/// error otherwise).
pub fn check_tf32x3(
    dev: &Device,
    variant: Tf32x3,
    m: usize,
    n: usize,
    kk: usize,
    seed: u64,
) -> Result<f64> {
    let (ha, hb, a, b) = uploaded_inputs(dev, m, n, kk, seed)?;
    let mut c = dev.alloc_filled(m * n, f32::NAN)?;
    gemm_tf32x3(dev, variant, &a, &b, &mut c, m, n, kk)?;
    let got = dev.download(&c)?;
    let what = format!("matmul {} {m}x{n}x{kk} on {}", variant.label(), dev.name());
    verify_tf32x3(&what, variant, &got, &ha, &hb, m, n, kk, true)
}

/// Shapes of the simulator checks of `rung`: two block tiles each way
/// (for rung 5's 128 x 256 tiles, two tile rows and two columns over a
/// persistent grid of two blocks) with ragged edges, and:
/// * without TMA: once with every row 16-byte aligned (`k`, `n` multiples
///   of 8: the asynchronous copies) and once with none (element-by-element
///   copies), `k` not a multiple of the tile depth; `n` stays even (see
///   [`sim_check_tensor`] for odd `n`);
/// * with TMA: `k` of 6 tiles (more than the stages: every stage
///   refilled, both barrier phases), and an odd `m` with a short `k`;
///   `n` a multiple of 8 but not of 64, so `B` is staged
///   ([`Staging::auto`](super::Staging::auto)) and `A` read in
///   place.
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
        // Odd n and k (the TMA rungs stage both operands).
        let odd_n = Some((rung.tile() + 3, rung.tile() + 5, 37));
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
