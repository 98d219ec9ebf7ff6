//! Poisson to a tolerance: geometric multigrid and multigrid-preconditioned
//! conjugate gradients, a rung of the Poisson ladder that changes the
//! algorithm instead of the memory traffic (kernels:
//! `lab/poisson/kernels/multigrid/`).
//!
//! # Files, from the bottom up
//! `levels.rs` (the hierarchy of any grid shape, the options, the bytes of
//! one cycle), `launch.rs` (where a launch goes, straight or into a CUDA
//! graph, the configuration of each launch shape, the length checks and the
//! slabs' rows; the solvers launch the kernels with `launch!`),
//! `cycle.rs` (V, W and FMG, written once over [`cycle::Ops`]), `outer.rs`
//! (the loop to a tolerance, shared with the multi-device solve), `report.rs`,
//! `device.rs` (the solver on a GPU or the simulator), `cpu.rs` (the same
//! solver on the CPU with rayon: reference and baseline).

pub mod bench;
pub mod check;
pub mod compare;
pub mod cpu;
pub mod cycle;
pub mod device;
pub mod launch;
pub mod levels;
pub(crate) mod outer;
pub mod report;
pub mod run;

pub use device::MgDevice;
pub use launch::MgElement;
pub use levels::{Cycle, Hierarchy, Level, Method, MgOptions, Smoother, cycle_bytes};
pub use report::MgReport;
