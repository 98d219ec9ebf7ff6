//! The CPU reference: the same transforms with `rustfft` in f64 (NumPy's
//! conventions), and the random inputs.

use super::problem::Spec;
use ptxlab_common::rng::uniform_vec;
use rustfft::FftPlanner;
use rustfft::num_complex::Complex64;

/// Interleaved values to complex numbers.
fn to_c(x: &[f64]) -> Vec<Complex64> {
    x.chunks_exact(2)
        .map(|p| Complex64::new(p[0], p[1]))
        .collect()
}

/// Complex numbers to interleaved values.
fn from_c(x: &[Complex64]) -> Vec<f64> {
    x.iter().flat_map(|z| [z.re, z.im]).collect()
}

/// In-place transforms of the `rows` contiguous rows of `x` (length `n`
/// each), scaled by `1/n` when `inverse`.
fn rows_c2c(p: &mut FftPlanner<f64>, x: &mut [Complex64], n: usize, inverse: bool) {
    let f = if inverse {
        p.plan_fft_inverse(n)
    } else {
        p.plan_fft_forward(n)
    };
    for row in x.chunks_exact_mut(n) {
        f.process(row);
        if inverse {
            for v in row.iter_mut() {
                *v /= n as f64;
            }
        }
    }
}

/// The transforms of the columns of a row-major `rows x cols` matrix.
fn cols_c2c(p: &mut FftPlanner<f64>, x: &mut [Complex64], rows: usize, cols: usize, inverse: bool) {
    let mut t = vec![Complex64::new(0.0, 0.0); rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = x[r * cols + c];
        }
    }
    rows_c2c(p, &mut t, rows, inverse);
    for r in 0..rows {
        for c in 0..cols {
            x[r * cols + c] = t[c * rows + r];
        }
    }
}

/// Real-to-complex transforms of the real rows of `x` (length `n`): the
/// first `n / 2 + 1` outputs of each.
fn rows_r2c(p: &mut FftPlanner<f64>, x: &[f64], n: usize) -> Vec<Complex64> {
    let mut z: Vec<Complex64> = x.iter().map(|v| Complex64::new(*v, 0.0)).collect();
    rows_c2c(p, &mut z, n, false);
    z.chunks_exact(n)
        .flat_map(|row| row[..n / 2 + 1].to_vec())
        .collect()
}

/// Complex-to-real transforms of rows of `n / 2 + 1` values into real rows
/// of `n` (the imaginary parts of the first, and for even `n` the last,
/// value ignored, as NumPy does), scaled by `1/n`.
fn rows_c2r(p: &mut FftPlanner<f64>, x: &[Complex64], n: usize) -> Vec<f64> {
    let h1 = n / 2 + 1;
    let mut out = Vec::with_capacity(x.len() / h1 * n);
    for row in x.chunks_exact(h1) {
        let mut full: Vec<Complex64> = (0..n)
            .map(|k| if k < h1 { row[k] } else { row[n - k].conj() })
            .collect();
        full[0].im = 0.0;
        if n.is_multiple_of(2) {
            full[n / 2].im = 0.0;
        }
        rows_c2c(p, &mut full, n, true);
        out.extend(full.iter().map(|z| z.re));
    }
    out
}

/// The transform of `spec` on `input` (interleaved when complex), in f64,
/// with rustfft: the reference of every check.
pub fn reference(spec: &Spec, input: &[f64]) -> Vec<f64> {
    let mut p = FftPlanner::<f64>::new();
    let (rows, n) = (spec.rows, spec.n);
    match (spec.real, spec.inverse) {
        (false, inv) => {
            let mut z = to_c(input);
            if spec.two_d && inv {
                cols_c2c(&mut p, &mut z, rows, n, true);
                rows_c2c(&mut p, &mut z, n, true);
            } else {
                rows_c2c(&mut p, &mut z, n, inv);
                if spec.two_d {
                    cols_c2c(&mut p, &mut z, rows, n, false);
                }
            }
            from_c(&z)
        }
        (true, false) => {
            let mut z = rows_r2c(&mut p, input, n);
            if spec.two_d {
                cols_c2c(&mut p, &mut z, rows, n / 2 + 1, false);
            }
            from_c(&z)
        }
        (true, true) => {
            let mut z = to_c(input);
            if spec.two_d {
                cols_c2c(&mut p, &mut z, rows, n / 2 + 1, true);
            }
            rows_c2r(&mut p, &z, n)
        }
    }
}

/// Random input of `spec`: uniform in [-1, 1) from `seed`, interleaved
/// when complex.
pub fn random_input(spec: &Spec, seed: u64) -> Vec<f64> {
    uniform_vec(seed, spec.input_len(), -1.0, 1.0)
}

/// Times `reps` runs of the reference on one core (its own planner each:
/// the plan is part of rustfft's work too, as it is of ours).
pub fn time_reference(spec: &Spec, input: &[f64], reps: usize) -> ptxlab_common::runtime::Timing {
    ptxlab_common::runtime::Timing::host(0, reps, || {
        std::hint::black_box(reference(spec, input));
    })
}
