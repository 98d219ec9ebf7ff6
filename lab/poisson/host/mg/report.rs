//! What a multigrid or PCG solve reports.

/// The outcome of a solve to a tolerance.
#[derive(Debug, Clone)]
pub struct MgReport {
    /// Cycles (PCG: iterations) done.
    pub cycles: usize,
    /// Final `||b - lap_h p||^2` over the interior.
    pub residual_sq: f64,
    /// Final `||b - lap_h p|| / ||b||`.
    pub rel_residual: f64,
    /// The tolerance was reached.
    pub converged: bool,
    /// Wall time of the solve: the first residual, every cycle, and the
    /// residual read back after each (ms).
    pub ms: f64,
    /// `(ms since the start, relative residual)`: the start, then after each cycle.
    pub history: Vec<(f64, f64)>,
}

impl MgReport {
    /// A report from the loop's results.
    pub fn new(
        cycles: usize,
        residual_sq: f64,
        rel_residual: f64,
        converged: bool,
        ms: f64,
        history: Vec<(f64, f64)>,
    ) -> Self {
        Self {
            cycles,
            residual_sq,
            rel_residual,
            converged,
            ms,
            history,
        }
    }
    /// Mean residual reduction per cycle: `(r_k / r_0)^(1 / k)`.
    pub fn factor(&self) -> Option<f64> {
        let (first, last) = (self.history.first()?.1, self.history.last()?.1);
        (self.cycles > 0 && first > 0.0).then(|| (last / first).powf(1.0 / self.cycles as f64))
    }
    /// Wall time per cycle (ms), the start excluded.
    pub fn ms_per_cycle(&self) -> Option<f64> {
        let start = self.history.first()?.0;
        (self.cycles > 0).then(|| (self.ms - start) / self.cycles as f64)
    }
}
