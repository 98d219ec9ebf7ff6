//! Placeholder, replaced by the workload's implementation.
use super::BenchCtx;
use crate::error::{Error, Result};
use crate::report::Row;

/// Benchmark rows.
pub fn bench(_ctx: &BenchCtx) -> Result<Vec<Row>> {
    Ok(Vec::new())
}
/// Simulator check.
pub fn sim_check() -> Result<()> {
    Ok(())
}
/// `ptxlab reduce` arguments.
#[derive(Debug, clap::Args)]
pub struct ReduceArgs {}
/// `ptxlab reduce`.
pub fn cli_reduce(_args: &ReduceArgs) -> Result<()> {
    Err(Error::input("reduce", "not implemented yet"))
}
/// `ptxlab histogram` arguments.
#[derive(Debug, clap::Args)]
pub struct HistogramArgs {}
/// `ptxlab histogram`.
pub fn cli_histogram(_args: &HistogramArgs) -> Result<()> {
    Err(Error::input("histogram", "not implemented yet"))
}
/// `ptxlab monte-carlo-pi` arguments.
#[derive(Debug, clap::Args)]
pub struct PiArgs {}
/// `ptxlab monte-carlo-pi`.
pub fn cli_pi(_args: &PiArgs) -> Result<()> {
    Err(Error::input("monte-carlo-pi", "not implemented yet"))
}
