//! Decoding over a paged key/value cache (`ptxlab attention-decode`): a few
//! new query rows per sequence attend to everything the sequence has
//! cached, which vLLM-style serving keeps in fixed-size pages listed by a
//! block table. The kernels ([`kernels_gpu::attention::decode`]) split each
//! sequence's keys over many blocks (FlashDecoding) and merge the splits by
//! the log-sum-exp rule; the step is bound by memory, so rows report GB/s
//! against the GPU's bandwidth.
//!
//! | file | holds |
//! |---|---|
//! | `problem.rs` | [`DecodeShape`], the generated cache and block table, their checks, the f64 [`reference()`] |
//! | `launch.rs` | [`DecodePlan`]: the split length, the partial results, the two launches |
//! | `check.rs` | error measures and bounds, [`check_decode`], [`sim_check`] |
//! | `bench.rs` | the benchmark rows |
//! | `cli.rs` | `ptxlab attention-decode` |

mod bench;
mod check;
mod cli;
mod launch;
mod problem;

pub use bench::{BENCH_PAGE, BenchShape, NAME, VARIANT, bench, bench_shape, bench_shapes};
pub use check::{
    Errors, POISON, SIM_SHAPES, bound, check_decode, errors, lse_bound, run_checked, sim_check,
    sim_shape, verify,
};
pub use cli::{Args, FULL_CHECK_WORK, KvLens, SIM_MAX_WORK, cli};
pub use launch::{
    DecodeInputs, DecodePlan, MAX_SPLITS, MIN_SPLIT_TILES, WAVES, entry, plan_split, rows_per_block,
};
pub use problem::{
    DecodeShape, HostInputs, MAX_CACHE_ELEMENTS, Reference, RowId, all_rows, check_inputs,
    generate, hashed_bits, reference, sample_rows, scatter_multiplier, scatter_table,
};
