//! The report layer: plain result rows and what is made of them (Markdown
//! tables, the environment block, charts, the HTML page, the files of a
//! run). It depends on nothing in the workloads: a workload hands it
//! [`Row`]s.
//!
//! | file | what it holds |
//! |---|---|
//! | `row.rs` | [`Row`], [`Status`], [`Ceilings`]: the plain data |
//! | `run.rs` | [`Run`], [`Section`]: a run's environment, workloads and peers; read back from `results.json` |
//! | `table.rs` | the Markdown table and the [`Environment`] block |
//! | `group.rs` | which rows a chart compares: kinds, size keys, [`Group`]s |
//! | `charts.rs` | the charts of a run ([`charts()`]): ladders, peers, scaling, convergence, roofline |
//! | `plot.rs`, `axis.rs` | chart layouts (bars, lines, roofline) and their axes |
//! | `figure.rs`, `font.rs` | [`Figure`]: shapes to SVG, and to PNG with `tiny-skia` and the embedded DejaVu Sans Condensed |
//! | `html.rs` | `report.html`, self-contained |
//! | `write.rs` | the folder: `report.md`, `report.html`, `results.json`, `results.csv`, charts |
//! | `progress.rs` | the progress lines on stderr |

mod axis;
pub mod charts;
pub mod figure;
pub mod font;
pub mod group;
mod html;
mod plot;
mod progress;
mod row;
mod run;
mod table;
mod write;

pub use axis::fmt_num;
pub use charts::{Chart, charts};
pub use figure::{Figure, decode_png, encode_png};
pub use group::{Group, Kind, groups, kind, size_key};
pub use html::html;
pub use progress::{
    fmt_elapsed, progress_clear, progress_note, progress_row_done, progress_step,
    progress_workload, set_quiet,
};
pub use row::{Ceilings, PeerLine, Row, Status, fmt_ms};
pub use run::{Run, Section};
pub use table::{Environment, resource_table, table};
pub use write::{Written, markdown, write_outputs};
