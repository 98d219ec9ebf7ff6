//! What a workload's benchmark gets ([`BenchCtx`]), and the row it returns
//! when it has no GPU to time ([`skipped_gpu`]).
//!
//! It sits below the workloads, which take it, and below the registry
//! (`ptxlab::workloads::all`, in the top crate) that hands it to each of them: a workload
//! imports it from here, never from the registry above it.

use crate::report::{Ceilings, Row};
use crate::runtime::Device;

/// What a workload's benchmark gets.
pub struct BenchCtx<'a> {
    /// The device (GPU or simulator); `None` for a CPU-only run.
    pub dev: Option<&'a Device>,
    /// Smaller sizes and fewer repetitions.
    pub quick: bool,
    /// Ceilings of this run.
    pub ceilings: Ceilings,
    /// Why GPU rows are skipped, when they are.
    pub gpu_skip: Option<String>,
}

impl BenchCtx<'_> {
    /// The GPU device, if this run has one (not the simulator).
    pub fn gpu(&self) -> Option<&Device> {
        self.dev.filter(|d| !d.is_sim())
    }
    /// Timed repetitions to use.
    pub fn reps(&self) -> usize {
        match (self.quick, self.dev.map(|d| d.is_sim())) {
            (_, Some(true)) => 2,
            (true, _) => 10,
            (false, _) => 50,
        }
    }
}

/// A one-row "skipped" result for a workload that needs a GPU.
pub fn skipped_gpu(workload: &str, ctx: &BenchCtx) -> Row {
    Row::skipped(
        workload,
        "GPU variants",
        "gpu",
        ctx.gpu_skip.as_deref().unwrap_or("no GPU in this run"),
    )
}
