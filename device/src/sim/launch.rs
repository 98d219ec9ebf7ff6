//! A launch: its checks, and the grid's blocks handed out in index order to
//! the CPU cores (rayon), each block run by [`super::sched`] with the
//! asynchronous engine ([`AsyncEngine`]) passed down to it.

use super::asyncs::AsyncEngine;
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
    lock(&LAUNCHED).insert(spec.kernel);
    super::record::launched(spec.kernel);
    if let Err(detail) = validate(spec) {
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
    };
    let workers = (rayon::current_num_threads() as u64).clamp(1, nblocks);
    let next = AtomicU64::new(0);
    let work = || sched::run_worker(&state, &AsyncEngine, &next);
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
