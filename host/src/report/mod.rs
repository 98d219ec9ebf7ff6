//! The report layer: plain result rows and what is made of them (Markdown
//! tables, the environment block, plots, the files of a run). It depends on
//! nothing in the workloads: a workload hands it [`Row`]s.
//!
//! | file | what it holds |
//! |---|---|
//! | `row.rs` | [`Row`], [`Status`], [`Ceilings`]: the plain data |
//! | `table.rs` | the Markdown table and the [`Environment`] block |
//! | `figure.rs`, `plot.rs` | figures (SVG + PNG, no plotting dependency) and the charts |
//! | `write.rs` | `report.md`, `results.json`, `results.csv`, plots |
//! | `progress.rs` | the progress line on stderr |

pub mod figure;
pub mod plot;
mod progress;
mod row;
mod table;
mod write;

pub use progress::{progress_clear, progress_workload};
pub use row::{Ceilings, Row, Status, fmt_ms};
pub use table::{Environment, resource_table, table};
pub use write::write_outputs;
