//! The math functions of `Real` (`exp`, `powf`, `erf`, ...): their error
//! in ulps, measured on the GPU, on the simulator and as pure Rust on the
//! CPU, against a binary128 reference (`ptxlab math-accuracy`,
//! `docs/book/src/math.md`). Not a benchmark workload: it has no timed rows, and
//! its simulator check runs from `tests/coverage.rs` and `tests/math.rs`.
//!
//! | file | what it holds |
//! |---|---|
//! | `reference.rs` | [`funcs`], the binary128 [`reference()`], [`ulp_error`], the test [`points`] |
//! | `launch.rs` | [`MathElem`] and [`eval`]: the `math_eval` launcher, the pure-Rust functions per type |
//! | `check.rs` | [`measure`], [`measure_all`], [`table`], [`sim_check`] |
//! | `cli.rs` | `ptxlab math-accuracy` |
#![feature(f128)]
// Checks are written `!(err < tol)` on purpose: a NaN error must fail them.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod check;
mod cli;
mod launch;
mod reference;

pub use check::{Measure, Worst, bound, measure, measure_all, sim_check, table};
pub use cli::{Args, Backend, MAX_POINTS, Precision, cli};
pub use launch::{MathElem, eval};
pub use reference::{Func, Ty, func, funcs, points, reference, specials, ulp_error};
