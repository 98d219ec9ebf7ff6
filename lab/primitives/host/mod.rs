//! Parallel primitives: the sum-reduction ladder (f32, f64, i32), the
//! 256-bin histogram (global atomics vs privatised shared-memory bins) and
//! Monte-Carlo pi. Typed launchers, CPU baselines (one thread and rayon),
//! checks against CPU references, the benchmark and the three subcommands.
//!
//! Float sums are checked against an f64 sum `S` with the bound
//! `|s - S| <= gamma_h * A + n * 2^-53 * A`, `A = sum |x_i|`,
//! `gamma_h = h u / (1 - h u)`: `u` is the unit roundoff of the type and `h`
//! the depth of the rung's summation tree ([`SumPlan::depth`]), the longest
//! chain of additions any element goes through (a standard result for any
//! summation order, Higham, *Accuracy and Stability of Numerical Algorithms*,
//! 4.2). The second term covers the f64 reference itself. Integer sums wrap
//! modulo 2^32 everywhere and must be equal.
//!
//! | file | what it holds |
//! |---|---|
//! | `reduce.rs` | the reduction ladder: [`ReduceRung`], [`SumElement`], [`SumPlan`] (launch shapes, scratch, passes), [`sum`] |
//! | `histogram.rs` | the histogram rungs: [`HistRung`], [`HistKey`], [`histogram_into`], [`histogram`] |
//! | `pi.rs` | Monte-Carlo pi: [`PiLayout`], [`pi_into`], [`pi_hits`], [`estimate`] |
//! | `cpu.rs` | CPU baselines (one thread, rayon), the f64 sum reference, random inputs and keys |
//! | `check.rs` | the error bound of a sum, [`SumCheck`], the input checks and [`sim_check`] |
//! | `bench.rs` | the benchmark rows ([`bench()`]) |
//! | `cli.rs` | `ptxlab reduce`, `ptxlab histogram`, `ptxlab monte-carlo-pi` |
// Checks are written `!(err < tol)` on purpose: a NaN error must fail them.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod bench;
mod check;
mod cli;
mod cpu;
mod histogram;
mod pi;
mod reduce;

pub use bench::bench;
pub use check::{
    SumCheck, check, check_buffer, check_histogram, check_values, sim_check, sum_bound,
};
pub use cli::{
    HistogramArgs, KeyType, PiArgs, ReduceArgs, SumPrecision, cli_histogram, cli_pi, cli_reduce,
    parse_count,
};
pub use cpu::{
    SumRef, cpu_histogram_rayon, cpu_histogram_serial, cpu_pi_rayon, cpu_pi_serial, cpu_sum_rayon,
    cpu_sum_serial, random_inputs, random_keys, reference,
};
pub use histogram::{
    HistKey, HistRung, MAX_KEYS, histogram, histogram_into, launch_rung as launch_histogram,
    validate_bins,
};
pub use pi::{MAX_PI_BLOCKS, PiLayout, estimate, pi_hits, pi_into};
pub use reduce::{ReduceRung, SumElement, SumPlan, launch_rung as launch_sum, sum};

use ptxlab_common::report::Row;
use ptxlab_common::runtime::Device;
/// Blocks the simulator uses for the fixed-grid kernels (its checks run
/// small problems, which the GPU's grid would leave mostly idle).
pub(crate) const SIM_BLOCKS: u32 = 4;
/// Threads per block of every launch on the simulator.
pub(crate) const SIM_BLOCK: u32 = 64;

pub(crate) fn block_for(dev: &Device, gpu_block: u32) -> u32 {
    if dev.is_sim() { SIM_BLOCK } else { gpu_block }
}

/// Blocks of a fixed grid that fills the device: 2048 resident threads per SM.
pub(crate) fn fill_grid(dev: &Device, block: u32) -> u32 {
    match dev.as_gpu() {
        Some(g) => g.info().sm_count * (2048 / block).max(1),
        None => SIM_BLOCKS,
    }
}

pub(crate) fn size_label(n: u64) -> String {
    if n.is_power_of_two() {
        format!("2^{} ({n})", n.trailing_zeros())
    } else {
        format!("{n}")
    }
}

pub(crate) fn resources(dev: &Device, row: &mut Row, kernel: &str) {
    if let Some(g) = dev.as_gpu()
        && let Some(r) = ptxlab_common::modules::resource(kernel, &g.info().arch(), false)
    {
        row.registers = Some(r.registers);
        row.spills = Some(r.spill_stores + r.spill_loads);
    }
}
