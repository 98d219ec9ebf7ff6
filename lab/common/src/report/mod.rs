//! The report layer: plain result rows and what is made of them (the
//! summary page, a page per workload, Markdown tables, the environment
//! block, charts, the HTML page, the files of a run). It depends on nothing
//! in the workloads: a workload hands it [`Row`]s.
//!
//! | file | what it holds |
//! |---|---|
//! | `row.rs` | [`Row`], [`Status`], [`Ceilings`]: the plain data |
//! | `problem.rs` | [`Problem`]: what makes two rows comparable (shape, qualifiers such as `causal`, precision, tolerance, measure) |
//! | `run.rs` | [`Run`], [`Section`]: a run's environment, workloads and peers; read back from `results.json` |
//! | `group.rs` | [`Group`]: the charted rows of one problem; row kinds |
//! | `compare.rs` | [`Comparison`]: each problem's best rung against its best peer; a workload's headline problem |
//! | `units.rs` | times and throughputs for people (`3.495 ms`, `684.6 TFLOP/s`) |
//! | `table.rs` | the Markdown table and the [`Environment`] block |
//! | `markdown.rs` | `report.md` (the summary), `summary.md`, a page per workload |
//! | `charts.rs`, `charts/` | the charts of a run ([`charts()`]): ladders and peers, scaling, convergence, roofline |
//! | `plot.rs`, `axis.rs` | chart layouts (bars, lines, roofline) and their axes |
//! | `figure.rs`, `font.rs` | [`Figure`]: shapes to SVG, and to PNG with `tiny-skia` and the embedded DejaVu Sans Condensed |
//! | `html.rs` | `report.html`, self-contained: the summary, then a section per workload |
//! | `summary.rs` | `summary.json`: every problem's rows, best rung, best peer and ratio (the README's table is made from it) |
//! | `write.rs` | the folder: the pages, `report.html`, `results.json`, `results.csv`, charts |
//! | `progress.rs` | the progress lines on stderr |

mod axis;
pub mod charts;
pub mod compare;
pub mod figure;
pub mod font;
pub mod group;
mod html;
mod markdown;
mod plot;
pub mod problem;
mod progress;
mod row;
mod run;
pub mod summary;
mod table;
pub mod units;
mod write;

pub use axis::fmt_num;
pub use charts::{Chart, charts};
pub use compare::{Comparison, comparisons, headline};
pub use figure::{Figure, decode_png, encode_png};
pub use group::{Group, Kind, groups, kind};
pub use html::html;
pub use markdown::{markdown, page_file, summary_table, workload_page};
pub use problem::{Problem, problems, size_key};
pub use progress::{
    fmt_elapsed, progress_clear, progress_note, progress_row_done, progress_step,
    progress_workload, set_quiet,
};
pub use row::{Ceilings, PeerLine, Row, Status, fmt_ms};
pub use run::{Run, Section};
pub use summary::{SUMMARY_SCHEMA, summary_json};
pub use table::{Environment, resource_table, table};
pub use units::{fmt_throughput, fmt_time};
pub use write::{Written, write_outputs};
