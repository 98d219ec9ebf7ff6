//! Multi-GPU Poisson: the Jacobi sweep of [`super`] (the single-device workload) on a grid split
//! into row slabs, one per device, with a halo exchange every sweep; and
//! multigrid and multigrid-preconditioned CG to a tolerance on the same
//! slabs ([`mg`], see "Multigrid" below).
//!
//! # Decomposition
//! The global grid has `ny` rows; rows `0` and `ny - 1` are Dirichlet
//! boundary. The `ny - 2` interior rows are dealt out in contiguous blocks,
//! as evenly as possible ([`Decomp`]): rank `r` owns rows `r0 .. r1`
//! (`m = r1 - r0` of them) and stores rows `r0 - 1 ..= r1`: its own rows plus
//! one *halo row* on each side, `m + 2` rows in all. To the single-GPU sweep
//! kernels such a slab is just a grid whose first and last rows are boundary
//! (copied, never updated), which is exactly how a halo row must behave. So the
//! kernels run unchanged on slabs, and a slab sweep computes every owned cell
//! from the same four neighbours with the same arithmetic (explicit `.rn`
//! roundings, no contraction) as the whole-grid sweep: the result is the same
//! bit for bit, provided the halo rows hold the neighbours' current rows.
//!
//! # Halo exchange
//! After each sweep rank `r` sends its first owned row to rank `r - 1` (which
//! stores it as its bottom halo) and its last owned row to rank `r + 1`, and
//! receives their edge rows into its own halo rows: NCCL point-to-point
//! (`ncclSend`/`ncclRecv`), all four calls of every local slab in one group.
//! The ranks at the ends have the global boundary row in place of one halo;
//! it never changes, so it is never exchanged (both ping-pong buffers start
//! with it). The residual norm is a local reduction per slab (over its owned
//! rows, whose neighbours are all present) followed by an NCCL all-reduce.
//!
//! # Overlap
//! Without overlap a sweep is: update the whole slab, then exchange. The
//! exchange then sits on the critical path every sweep. With overlap
//! (the default) each slab uses two streams:
//!
//! * stream A (high priority): the two edge rows first, each as a 3-row grid
//!   (halo, edge, next row) written into a small scratch buffer; then the NCCL
//!   group sends those rows and receives the neighbours' into the halo rows;
//! * stream B (normal priority): the interior rows `2 ..= m - 1` as one
//!   `m`-row grid (owned rows `1 ..= m`, whose first and last are copied),
//!   at the same time;
//! * then A waits for B (an event) and copies the two edge rows from the
//!   scratch buffer into place, over the stale copies B wrote.
//!
//! All of them are the same sweep kernels launched on sub-ranges of the
//! buffers: a launch takes a pointer and a length, so a pointer offset by
//! `row * nx` elements with `rows * nx` elements is a smaller grid. The
//! transfer of 2 rows hides behind the update of `m - 2`.
//!
//! # Rungs
//! The rungs of depth 1 (naive, tiled, register) are decomposed. The temporal
//! rung is not: a pass of depth `d` needs `d` halo rows per side and an
//! exchange every `d` sweeps; asking for it with several devices is an error
//! that says so.
//!
//! # Where the devices are
//! A [`Team`] is the devices this process drives and the [`Transport`] between
//! all ranks of the job: [`Team::sim`] (several simulated devices, in-process
//! copies: what CI tests), [`Team::gpus`] (one process driving N GPUs of a
//! host, NCCL), [`Team::from_launcher`] (one process per GPU started by
//! mpirun, torchrun or srun, joined through an NCCL unique id passed in a
//! file or a variable; runs across hosts). [`Team::place`] puts a problem on a
//! team ([`Placed`]), which iterates, computes the residual, solves, compares
//! with a single-device result and gathers the field.
//!
//! # Multigrid
//! [`PlacedMg`] runs the cycles of [`super::mg::cycle`] through an `Ops`
//! implementation over the team, and the single-device outer loop
//! (`mg/outer.rs`), so it does one device's arithmetic in one device's order:
//! the field is the same bits, the residual history the same to the
//! rounding of the norm's sum.
//!
//! * Rank and thread mapping: one rank per device; one host thread drives
//!   every device of the process, launching each slab's kernels and its
//!   halo transfers on the device's stream A (no host synchronisation inside
//!   a cycle; the residual is read once per cycle).
//! * Levels ([`MgSplit`]): level 0 is dealt like the Jacobi slabs; each
//!   coarser level's rows follow the fine rows they restrict from; a level
//!   stays split while every rank keeps at least `min_rows` rows
//!   ([`MIN_ROWS_GPU`] on GPUs). The first level that is not split and all
//!   coarser ones are replicated: every rank holds them whole and runs the
//!   single-device code on them, after an all-gather of the restricted rows;
//!   each rank then prolongs from its own copy (no scatter).
//! * Halos: a split level stores as many rows per side as its smoother,
//!   restriction and prolongation read ([`SplitLevel::halo`]).
//! * Halo schedule per split level: after each red-black half-sweep the
//!   correction's first row per side; after the last half-sweep of a
//!   smoothing call and after a prolongation, the whole halo; after a
//!   restriction, the coarse right-hand side's halo (or the all-gather); after
//!   the outer step, level 0's right-hand side halo and an all-reduce of the
//!   residual. The field itself is never exchanged: the outer step's slab
//!   kernel writes its halo rows corrected.
//! * PCG: one device's iteration, step by step (shift, one V-cycle of the
//!   team from a zero correction, dot product, direction, update), with each
//!   scalar's per-slab sum over owned rows all-reduced in place on the
//!   device; the direction is computed on one row past each edge too
//!   (`mg_cg_dir_slab`), so only the residual's halo is exchanged. The
//!   history is one device's to round-off (the dot products' order moves
//!   `alpha` and `beta` in their last bits), not bit for bit.
//! * Only the red-black smoother runs on slabs; other options are refused
//!   with what is allowed ([`mg::check_options`]).
//!
//! # Files
//! `element.rs` (what a slab needs of an element type), `decomp.rs` (which
//! rows each rank owns), `team.rs` (devices, streams, transport),
//! `span.rs` (sub-range views and launches on a stream), `slab.rs` (one
//! rank's sweep, halo operations and residual), `placed.rs` (a problem on a
//! team: iterate, solve, compare, gather), `mg/` (multigrid and PCG on a
//! team: `mod.rs` places and solves, `ops.rs` is the cycle's operations
//! over the slabs), `gather.rs` (the whole field on rank 0, for both),
//! `transport.rs`, `nccl.rs` and `tcp.rs` (how ranks exchange rows; the
//! TCP rendezvous of a job of several processes), `args.rs`,
//! `run.rs`, `mgrun.rs` and `scaling.rs` (the subcommands).

pub mod args;
/// The launcher's variables and the NCCL unique id ([`ptxlab_common::distributed`]).
pub use ptxlab_common::distributed::bootstrap;
pub mod decomp;
pub mod element;
pub mod gather;
pub mod mg;
pub mod mgrun;
pub mod nccl;
pub mod placed;
pub mod rows;
pub mod run;
pub mod scaling;
mod slab;
mod span;
pub mod tcp;
pub mod team;
pub mod transport;

pub use args::{GpuArgs, ScalingArgs, disable_nvls_in_env};
pub use bootstrap::RankEnv;
pub use decomp::Decomp;
pub use element::SlabElement;
pub use mg::{MIN_ROWS_GPU, MgSplit, PlacedMg, SplitLevel, team_options};
pub use mgrun::{MIN_ROWS_SIM, cli_mg_scaling, mg_scaling_table};
pub use nccl::NcclTransport;
pub use placed::{Comparison, Placed, single_device, solve_multi};
pub use rows::ScalingRow;
pub use run::{SIM_MAX_CELLS, SIM_MAX_WORK, cli};
pub use scaling::{cli_scaling, scaling_table};
pub use team::{Member, Team, visible_gpus};
pub use transport::{Dtype, HaloOp, LocalTransport, Rows, Transport};
