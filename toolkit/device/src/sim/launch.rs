//! A launch: its checks, and the grid's blocks handed out in index order to
//! the CPU cores (rayon), each block run by [`super::sched`] with the
//! engines above it ([`LaunchEngines`]: the cluster barrier and the
//! asynchronous engine) passed down to it.

use super::asyncs;
use super::block::{Block, Engines, Wait};
use super::cluster::{self, MAX_CLUSTER_BLOCKS};
use super::error::{Fault, SimError};
use super::sched;
use super::spec::{
    LaunchSpec, LaunchState, MAX_SHARED_BYTES, MAX_THREADS_PER_BLOCK, Schedule, SimOptions, lock,
};
use super::state::global::GlobalShadow;
use crate::dim3::Dim3;
use std::format;
use std::string::{String, ToString};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::vec::Vec;

/// The engines as the scheduler sees them ([`Engines`]): the launch
/// passes them down to every block, so that the scheduler imports none.
struct LaunchEngines;

impl Engines for LaunchEngines {
    fn thread_exit(&self, b: &Block<'_>, rank: u32) -> Option<Fault> {
        cluster::thread_exit(b, rank);
        if b.async_on.get() {
            asyncs::thread_exit(b, rank)
        } else {
            None
        }
    }

    fn land_due(&self, b: &Block<'_>, all: bool) -> bool {
        asyncs::land_due(b, all)
    }

    fn all_spinning(&self, b: &Block<'_>, ranks: &[u32]) -> bool {
        asyncs::mbar::all_spinning(b, ranks)
    }

    fn spin_detail(&self, b: &Block<'_>) -> (u32, String) {
        asyncs::mbar::spin_detail(b)
    }

    fn wait_note(&self, b: &Block<'_>, rank: u32, wait: Wait) -> String {
        match wait {
            Wait::Mbar { site, addr, parity } => {
                asyncs::mbar::deadlock_note(b, rank, site, addr, parity)
            }
            Wait::Wgmma { site, n } => asyncs::wgmma::deadlock_note(b, rank, site, n),
            _ => String::new(),
        }
    }
}

fn validate(spec: &LaunchSpec) -> Result<(), String> {
    let b = spec.block;
    let g = spec.grid;
    if b.x == 0 || b.y == 0 || b.z == 0 || g.x == 0 || g.y == 0 || g.z == 0 {
        return Err(format!(
            "grid {g} and block {b} must have every dimension >= 1"
        ));
    }
    if b.volume() > MAX_THREADS_PER_BLOCK as u64 || b.z > 64 {
        return Err(format!(
            "block {b} has {} threads; at most {MAX_THREADS_PER_BLOCK} per block (z at most 64)",
            b.volume()
        ));
    }
    if g.y > 65535 || g.z > 65535 {
        return Err(format!("grid {g}: y and z are limited to 65535"));
    }
    if spec.shared_bytes > MAX_SHARED_BYTES {
        return Err(format!(
            "{} bytes of dynamic shared memory requested; at most {MAX_SHARED_BYTES} per block",
            spec.shared_bytes
        ));
    }
    Ok(())
}

static LAUNCHED: Mutex<std::collections::BTreeSet<&'static str>> =
    Mutex::new(std::collections::BTreeSet::new());

/// Names of every kernel launched on the simulator by this process so far
/// (the simulator coverage test compares it with `REGISTRY`).
pub fn launched_kernels() -> Vec<&'static str> {
    lock(&LAUNCHED).iter().copied().collect()
}

/// Runs `kernel` (a closure calling the `#[kernel]` function with its
/// arguments) over the launch's grid with the default [`SimOptions`].
pub fn launch<F: Fn() + Sync>(spec: &LaunchSpec, kernel: F) -> Result<(), SimError> {
    launch_with(spec, &SimOptions::default(), kernel)
}

/// Runs `kernel` over the launch's grid: the threads of each block as
/// coroutines on one OS thread, the blocks in index order over the CPU
/// cores. Returns the first fault of any thread.
pub fn launch_with<F: Fn() + Sync>(
    spec: &LaunchSpec,
    options: &SimOptions,
    kernel: F,
) -> Result<(), SimError> {
    launch_cluster(spec, Dim3::new(1, 1, 1), options, kernel)
}

/// Checks a cluster shape against a grid: every dimension at least 1, at
/// most [`MAX_CLUSTER_BLOCKS`] blocks, and the grid a whole number of
/// clusters in each dimension.
pub fn check_cluster(grid: Dim3, cluster: Dim3) -> Result<(), String> {
    if cluster.x == 0 || cluster.y == 0 || cluster.z == 0 {
        return Err(format!("cluster {cluster} must have every dimension >= 1"));
    }
    if cluster.volume() > MAX_CLUSTER_BLOCKS as u64 {
        return Err(format!(
            "cluster {cluster} has {} blocks; at most {MAX_CLUSTER_BLOCKS} (the portable \
             cluster size)",
            cluster.volume()
        ));
    }
    if !grid.x.is_multiple_of(cluster.x)
        || !grid.y.is_multiple_of(cluster.y)
        || !grid.z.is_multiple_of(cluster.z)
    {
        return Err(format!(
            "grid {grid} is not a whole number of clusters {cluster}: each grid dimension \
             must be a multiple of the cluster's"
        ));
    }
    Ok(())
}

/// Runs `kernel` over the launch's grid in thread-block clusters of
/// `cluster` blocks: the blocks of each cluster together on one OS thread
/// (so they can use each other's shared memory and the cluster barrier),
/// the clusters in index order over the CPU cores. `cluster` (1, 1, 1) is
/// a launch without clusters. Returns the first fault of any thread.
pub fn launch_cluster<F: Fn() + Sync>(
    spec: &LaunchSpec,
    cluster: Dim3,
    options: &SimOptions,
    kernel: F,
) -> Result<(), SimError> {
    lock(&LAUNCHED).insert(spec.kernel);
    super::record::launched(spec.kernel);
    if let Err(detail) = validate(spec).and_then(|()| check_cluster(spec.grid, cluster)) {
        return Err(SimError {
            kernel: spec.kernel.to_string(),
            block: Dim3::default(),
            thread: Dim3::default(),
            fault: Fault::InvalidLaunch { detail },
            location: None,
        });
    }
    let nblocks = spec.grid.volume();
    let state = LaunchState {
        spec,
        kernel: &kernel,
        error: Mutex::new(None),
        aborted: AtomicBool::new(false),
        race_shared: options.race_check,
        global: (options.race_check && nblocks < GlobalShadow::MAX_BLOCKS).then(GlobalShadow::new),
        seed: match options.schedule {
            Schedule::InOrder => None,
            Schedule::Random { seed } => Some(seed),
        },
        cluster,
    };
    let nclusters = nblocks / cluster.volume();
    let workers = (rayon::current_num_threads() as u64).clamp(1, nclusters);
    let next = AtomicU64::new(0);
    let work = || sched::run_worker(&state, &LaunchEngines, &next);
    if workers == 1 {
        work();
    } else {
        rayon::scope(|s| {
            for _ in 0..workers {
                s.spawn(|_| work());
            }
        });
    }
    match state.error.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
