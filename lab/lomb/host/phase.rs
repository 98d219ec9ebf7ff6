//! Host side of the long-span kernels: centred times, operands split in two
//! parts of the kernel's type, phases reduced modulo 2 pi in f64, and the
//! choice between the plain and the `_long` kernels
//! (`kernels_gpu::lomb::phase` explains the device side).

use ptxlab_device::math::Real;

/// Which kernels a run uses for its phases (`--phases`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Phases {
    /// The plain kernels where `max |w| max |x - x0|` is at most the type's
    /// plain limit (`Elem::PLAIN_PHASE_MAX` (`launch.rs`)), the `_long` ones beyond.
    #[default]
    Auto,
    /// Always the plain kernels (one product per phase; inaccurate in f32
    /// beyond the plain limit).
    Plain,
    /// Always the `_long` kernels (split phases).
    #[value(alias = "split")]
    Long,
}

/// The centre `x0 = (min + max) / 2` of the sample times and the centred
/// times `u = x - x0` (the periodogram does not change under a time shift,
/// and centring halves the largest phase).
pub fn centre(x: &[f64]) -> (f64, Vec<f64>) {
    let (lo, hi) = x
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    let x0 = if lo <= hi { 0.5 * (lo + hi) } else { 0.0 };
    (x0, x.iter().map(|v| v - x0).collect())
}

/// The largest phase a kernel sees: `max |w| max |u|`.
pub fn max_phase(u: &[f64], freqs: &[f64]) -> f64 {
    let amax = |v: &[f64]| v.iter().fold(0.0f64, |m, a| m.max(a.abs()));
    amax(u) * amax(freqs)
}

/// `v` in two parts of `T`: `hi = T(v)`, `lo = T(v - hi)` (48 bits together
/// in f32; `lo = 0` in f64).
pub fn split<T: Real>(v: f64) -> (T, T) {
    let hi = T::from_f64(v);
    (hi, T::from_f64(v - hi.to_f64()))
}

/// `v - 2 pi round(v / 2 pi)`, in `[-pi, pi]` (f64, with the 2 pi tail).
pub fn mod_2pi(v: f64) -> f64 {
    const TAU_LO: f64 = 2.449_293_598_294_706_4e-16;
    let n = (v / std::f64::consts::TAU).round();
    (-n).mul_add(TAU_LO, (-n).mul_add(std::f64::consts::TAU, v))
}

/// `(alpha, beta)` of sample time `u` on the grid `start + k step`, reduced
/// to `[-pi, pi]`: the anchor phase of index `k` is `alpha + k beta`.
pub fn anchor_parts(u: f64, start: f64, step: f64) -> (f64, f64) {
    (mod_2pi(start * u), mod_2pi(step * u))
}

/// The four split values `(alpha_hi, alpha_lo, beta_hi, beta_lo)` of a long
/// table entry.
pub fn anchor_split<T: Real>(alpha: f64, beta: f64) -> [T; 4] {
    let (ah, al) = split::<T>(alpha);
    let (bh, bl) = split::<T>(beta);
    [ah, al, bh, bl]
}
