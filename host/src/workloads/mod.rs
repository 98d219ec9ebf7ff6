//! One module per workload: typed launchers, CPU baselines, checks, benchmarks.

pub mod vector;
