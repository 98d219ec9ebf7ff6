//! What describes a launch: its shape ([`LaunchSpec`]), its options
//! ([`SimOptions`]: race detection) and the state its blocks share while it
//! runs (the first fault, the global-memory race shadow).

use super::error::SimError;
use super::race::global::GlobalShadow;
use crate::dim3::Dim3;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Largest block the simulator accepts (the CUDA limit on every GPU since sm_20).
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;
/// Largest dynamic shared memory per block it accepts (Hopper's opt-in limit).
pub const MAX_SHARED_BYTES: usize = 227 * 1024;

/// One kernel launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchSpec {
    /// Kernel name, for messages.
    pub kernel: &'static str,
    /// Blocks in the grid.
    pub grid: Dim3,
    /// Threads in each block.
    pub block: Dim3,
    /// Dynamic shared memory per block, in bytes.
    pub shared_bytes: usize,
}

/// How the simulator runs a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimOptions {
    /// Report data races (shared memory within a barrier interval, global
    /// memory across the blocks of a launch). It costs time and memory: a
    /// shadow record for every shared-memory word of a block and for every
    /// global word a launch touches (24 bytes per 4-byte word, freed after
    /// the launch); `ptxlab sim-bench` measures the cost per kernel.
    pub race_check: bool,
}

impl Default for SimOptions {
    /// Race detection on, unless [`set_race_check`] or the environment
    /// variable `PTXLAB_SIM_RACECHECK=0` turned it off.
    fn default() -> Self {
        Self {
            race_check: race_check_default(),
        }
    }
}

/// 0: no override, 1: off, 2: on.
static RACE_OVERRIDE: AtomicU8 = AtomicU8::new(0);

/// Sets the process-wide default of [`SimOptions::race_check`] (the
/// `ptxlab --race-check on|off` flag); `None` goes back to the environment
/// variable `PTXLAB_SIM_RACECHECK`, then to on.
pub fn set_race_check(on: Option<bool>) {
    RACE_OVERRIDE.store(
        match on {
            None => 0,
            Some(false) => 1,
            Some(true) => 2,
        },
        Ordering::Relaxed,
    );
}

/// The default of [`SimOptions::race_check`]: [`set_race_check`]'s value if
/// one was set, else `PTXLAB_SIM_RACECHECK` (`0`/`off`/`false` or
/// `1`/`on`/`true`), else on.
pub fn race_check_default() -> bool {
    match RACE_OVERRIDE.load(Ordering::Relaxed) {
        1 => return false,
        2 => return true,
        _ => {}
    }
    static ENV: OnceLock<bool> = OnceLock::new();
    *ENV.get_or_init(|| match std::env::var("PTXLAB_SIM_RACECHECK") {
        Err(_) => true,
        Ok(v) => match v.trim().to_ascii_lowercase().as_str() {
            "0" | "off" | "false" | "no" => false,
            "1" | "on" | "true" | "yes" | "" => true,
            other => {
                std::eprintln!(
                    "warning: PTXLAB_SIM_RACECHECK=`{other}` is not one of 0, off, 1, on; \
                     race detection stays on"
                );
                true
            }
        },
    })
}

/// Shared by every block of one launch.
pub(crate) struct LaunchState<'a> {
    pub(crate) spec: &'a LaunchSpec,
    pub(crate) kernel: &'a (dyn Fn() + Sync),
    pub(crate) error: Mutex<Option<SimError>>,
    pub(crate) aborted: AtomicBool,
    /// Shared-memory race detection.
    pub(crate) race_shared: bool,
    /// Global-memory race detection (absent when off, or when the grid has
    /// more blocks than its shadow words can name).
    pub(crate) global: Option<GlobalShadow>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl LaunchState<'_> {
    /// Keeps the first fault of the launch and stops every block.
    pub(crate) fn record(&self, e: SimError) {
        let mut slot = lock(&self.error);
        if slot.is_none() {
            *slot = Some(e);
        }
        drop(slot);
        self.aborted.store(true, Ordering::SeqCst);
    }
}
