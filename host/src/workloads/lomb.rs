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
/// CLI arguments.
#[derive(Debug, clap::Args)]
pub struct Args {}
/// CLI entry.
pub fn cli(_args: &Args) -> Result<()> {
    Err(Error::input("lomb", "not implemented yet"))
}
