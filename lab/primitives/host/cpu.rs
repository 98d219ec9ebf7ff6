//! CPU baselines of the three primitives (one thread and rayon), the f64
//! reference of a sum, and the random inputs and keys (deterministic for a
//! seed).

use super::{HistKey, PiLayout, SumElement};
use kernels_gpu::montecarlo as mc;
use ptxlab_common::error::Result;
use ptxlab_common::rng::SplitMix64;
use rayon::prelude::*;
/// CPU baseline, one thread: a sequential sum in the element type (wrapping for i32).
pub fn cpu_sum_serial<T: SumElement>(x: &[T]) -> T {
    x.iter().fold(T::ZERO, |a, &v| a.add(v))
}

/// CPU baseline, rayon on all cores.
pub fn cpu_sum_rayon<T: SumElement>(x: &[T]) -> T {
    x.par_iter()
        .fold(|| T::ZERO, |a, &v| a.add(v))
        .reduce(|| T::ZERO, |a, b| a.add(b))
}

/// Reference of a sum: the f64 sum `S`, `A = sum |x|`, and for integers the
/// exact wrapped sum.
#[derive(Debug, Clone, Copy)]
pub struct SumRef {
    /// f64 sum (for integers: the exact sum wrapped to i32, as f64).
    pub sum: f64,
    /// Sum of absolute values.
    pub abs_sum: f64,
}

/// The f64 reference of `x`, computed in fixed chunks so it is deterministic.
pub fn reference<T: SumElement>(x: &[T]) -> SumRef {
    let parts: Vec<(f64, f64, i64)> = x
        .par_chunks(1 << 16)
        .map(|c| {
            let mut s = 0.0f64;
            let mut a = 0.0f64;
            let mut i = 0i64;
            for &v in c {
                let f = v.as_f64();
                s += f;
                a += f.abs();
                i = i.wrapping_add(f as i64);
            }
            (s, a, i)
        })
        .collect();
    let (s, a, i) = parts.iter().fold((0.0, 0.0, 0i64), |(s, a, i), p| {
        (s + p.0, a + p.1, i.wrapping_add(p.2))
    });
    if T::UNIT_ROUNDOFF == 0.0 {
        SumRef {
            sum: i as i32 as f64,
            abs_sum: a,
        }
    } else {
        SumRef { sum: s, abs_sum: a }
    }
}
/// Random inputs (deterministic for a seed), generated in parallel chunks.
pub fn random_inputs<T: SumElement>(n: usize, seed: u64) -> Vec<T> {
    let mut v = vec![T::ZERO; n];
    v.par_chunks_mut(1 << 16).enumerate().for_each(|(c, ch)| {
        let mut r = SplitMix64(seed ^ (c as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
        for e in ch {
            *e = T::from_unit(r.next_f64());
        }
    });
    v
}
/// CPU baseline, one thread. `bins` must be a power of two (see
/// [`validate_bins`](super::validate_bins)); 0 bins give an empty histogram.
pub fn cpu_histogram_serial<K: HistKey>(keys: &[K], bins: u32) -> Vec<u32> {
    if bins == 0 {
        return Vec::new();
    }
    let mask = bins - 1;
    let mut h = vec![0u32; bins as usize];
    for &k in keys {
        h[(k.to_u32() & mask) as usize] += 1;
    }
    h
}

/// CPU baseline, rayon: a private histogram per chunk, then merged.
pub fn cpu_histogram_rayon<K: HistKey>(keys: &[K], bins: u32) -> Vec<u32> {
    keys.par_chunks(1 << 16)
        .map(|c| cpu_histogram_serial(c, bins))
        .reduce(
            || vec![0u32; bins as usize],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(&b) {
                    *x += y;
                }
                a
            },
        )
}

/// Random keys (uniform bits), deterministic for a seed.
pub fn random_keys<K: HistKey>(n: usize, seed: u64) -> Vec<K> {
    let mut v = vec![K::default(); n];
    v.par_chunks_mut(1 << 16).enumerate().for_each(|(c, ch)| {
        let mut r = SplitMix64(seed ^ (c as u64).wrapping_mul(0xA24B_AED4_963E_E407));
        for e in ch {
            *e = K::from_bits(r.next_u64());
        }
    });
    v
}
/// CPU baseline, one thread: the same streams and per-thread counts as the GPU.
pub fn cpu_pi_serial(layout: PiLayout, samples: u64, seed: u64) -> Result<u64> {
    layout.validate(samples)?;
    let t = layout.threads();
    // Streams past the `samples`-th draw nothing.
    Ok((0..t.min(samples))
        .map(|id| mc::thread_hits(seed, id, mc::samples_for_thread(samples, t, id) as u32) as u64)
        .sum())
}

/// CPU baseline, rayon: streams spread over the cores.
pub fn cpu_pi_rayon(layout: PiLayout, samples: u64, seed: u64) -> Result<u64> {
    layout.validate(samples)?;
    let t = layout.threads();
    // Streams past the `samples`-th draw nothing.
    Ok((0..t.min(samples))
        .into_par_iter()
        .map(|id| mc::thread_hits(seed, id, mc::samples_for_thread(samples, t, id) as u32) as u64)
        .sum())
}
