//! CPU baselines (one thread, rayon) and the random inputs of the checks.

use super::Element;
use ptxlab_common::rng::uniform_vec;
use rayon::prelude::*;

/// CPU baseline, one thread.
pub fn cpu_serial<T: Element>(a: &[T], b: &[T], c: &mut [T]) {
    for ((c, a), b) in c.iter_mut().zip(a).zip(b) {
        *c = *a + *b;
    }
}

/// CPU baseline, rayon on all cores.
pub fn cpu_rayon<T: Element>(a: &[T], b: &[T], c: &mut [T]) {
    c.par_iter_mut()
        .zip(a.par_iter())
        .zip(b.par_iter())
        .for_each(|((c, a), b)| *c = *a + *b);
}

/// Inputs for the checks: uniform in [-1, 1), from a seed.
pub fn inputs<T: Element>(n: usize, seed: u64) -> (Vec<T>, Vec<T>) {
    let a = uniform_vec(seed, n, -1.0, 1.0)
        .into_iter()
        .map(T::from_f64)
        .collect();
    let b = uniform_vec(seed ^ 0xABCD, n, -1.0, 1.0)
        .into_iter()
        .map(T::from_f64)
        .collect();
    (a, b)
}
