//! Vector add: typed launchers, CPU baselines, the correctness check and the
//! benchmark (against the device-to-device copy measured in the same run).
//!
//! | file | what it holds |
//! |---|---|
//! | `launch.rs` | [`Rung`], [`Element`], [`config`], [`add`], [`launch_rung`]: the launchers |
//! | `cpu.rs` | CPU baselines and the random inputs |
//! | `check.rs` | [`check`] against the CPU (bitwise) and [`sim_check`] |
//! | `bench.rs` | the copy ceiling, the benchmark rows, module load times |
//! | `cli.rs` | `ptxlab vector-add` |

mod bench;
mod check;
mod cli;
mod cpu;
mod launch;

pub use bench::{Bench, bench, bench_ctx, bytes, copy_bandwidth, module_loads};
pub use check::{Check, Prepared, check, check_prepared, prepare, same_value, sim_check};
pub use cli::{Args, SIM_MAX_N, cli};
pub use cpu::{cpu_rayon, cpu_serial, inputs};
pub use launch::{Element, Rung, add, config, launch_rung};
