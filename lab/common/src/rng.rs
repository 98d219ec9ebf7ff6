//! Small deterministic random generators for inputs and for Monte-Carlo
//! (the same algorithms as the device side, so CPU and GPU agree bit for bit).

/// SplitMix64: seeds other generators and fills test inputs.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1) with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next_f64()
    }
}

/// `n` uniform values in [lo, hi) from `seed`.
pub fn uniform_vec(seed: u64, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    let mut r = SplitMix64(seed);
    (0..n).map(|_| r.uniform(lo, hi)).collect()
}

/// Relative error by norm, `||a - b|| / ||b||`, in f64. NaN anywhere gives NaN
/// (so a check against a tolerance fails), and an all-zero reference compares
/// the absolute norm.
pub fn rel_err_norm(a: &[f64], reference: &[f64]) -> f64 {
    if a.len() != reference.len() {
        return f64::NAN;
    }
    rel_err_norm_pairs(a.iter().copied().zip(reference.iter().copied()))
}

/// [`rel_err_norm`] of `(value, reference)` pairs as they come, for
/// results too large to copy into two more f64 vectors.
pub fn rel_err_norm_pairs(pairs: impl IntoIterator<Item = (f64, f64)>) -> f64 {
    let mut num = 0.0f64;
    let mut den = 0.0f64;
    for (x, r) in pairs {
        if !x.is_finite() {
            return f64::NAN;
        }
        num += (x - r) * (x - r);
        den += r * r;
    }
    if den == 0.0 {
        num.sqrt()
    } else {
        (num / den).sqrt()
    }
}
