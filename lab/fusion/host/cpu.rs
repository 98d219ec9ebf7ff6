//! CPU baselines of the pipeline (one thread, rayon), its f64 reference and
//! the random input.

use kernels_gpu::fusion as k;
use ptxlab_common::rng::uniform_vec;
use rayon::prelude::*;

/// CPU baseline, one thread.
pub fn cpu_serial(x: &[f32], w: &mut [f32], a: f32, b: f32, c: f32) {
    for (w, x) in w.iter_mut().zip(x) {
        *w = k::stage3(k::stage2(k::stage1(*x, a, b)), c);
    }
}

/// CPU baseline, rayon.
pub fn cpu_rayon(x: &[f32], w: &mut [f32], a: f32, b: f32, c: f32) {
    w.par_iter_mut()
        .zip(x.par_iter())
        .for_each(|(w, x)| *w = k::stage3(k::stage2(k::stage1(*x, a, b)), c));
}

/// f64 reference.
pub fn reference(x: &[f32], a: f32, b: f32, c: f32) -> Vec<f64> {
    x.iter()
        .map(|v| ((a as f64 * *v as f64 + b as f64).powi(2)).sqrt() + c as f64)
        .collect()
}

/// Input in [-1, 1).
pub fn input(n: usize, seed: u64) -> Vec<f32> {
    uniform_vec(seed, n, -1.0, 1.0)
        .into_iter()
        .map(|v| v as f32)
        .collect()
}
