//! What describes a launch: its shape ([`LaunchSpec`]), its options
//! ([`SimOptions`]: race detection, the [`Schedule`]) and the state its
//! blocks share while it runs (the first fault, the global-memory race
//! shadow).

use super::error::SimError;
use super::state::global::GlobalShadow;
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
    /// memory across the blocks of a launch, and the shared-memory traffic
    /// of the asynchronous proxies: see [`super`]'s module docs). It costs
    /// time and memory: a shadow record for every shared-memory word of a
    /// block and for every global word a launch touches (32 bytes per
    /// 4-byte word, freed after the launch); `ptxlab sim-bench` measures
    /// the cost per kernel.
    pub race_check: bool,
    /// The order in which the threads of a block run and where in its
    /// legal window each asynchronous copy lands.
    pub schedule: Schedule,
}

impl Default for SimOptions {
    /// Race detection on, unless [`set_race_check`] or the environment
    /// variable `PTXLAB_SIM_RACECHECK=0` turned it off; the schedule of
    /// [`schedule_default`] (`PTXLAB_SIM_SCHEDULE`, `PTXLAB_SIM_SEED`).
    fn default() -> Self {
        Self {
            race_check: race_check_default(),
            schedule: schedule_default(),
        }
    }
}

/// The order in which the simulator runs the threads of a block, and when
/// the asynchronous operations it models land.
///
/// Whatever the schedule, every check runs: a schedule only changes which
/// of the orders the hardware allows the simulator exhibits, so a bug that
/// one order hides (a read that happens to come after the write it is not
/// ordered with, a copy that happens to land before its source changes)
/// shows under another one. `ptxlab sim-fuzz` runs a command under many.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Schedule {
    /// Threads start in index order and run until they must wait (a
    /// barrier, a warp collective, an mbarrier); every asynchronous copy
    /// lands when it is issued. Deterministic, and the fastest.
    #[default]
    InOrder,
    /// From a seed: the warps of a block start in a random order, a
    /// waiting thread that becomes ready runs at a random turn, threads are
    /// interrupted at random points (asynchronous operations, barriers,
    /// about one memory access in 16), and each asynchronous copy lands at
    /// a random point between its issue and the last moment the program
    /// allows (the wait that covers it, or when every thread waits for
    /// it). The same seed gives the same schedule for every block, on any
    /// number of cores.
    Random {
        /// The seed (`--sim-seed`, `PTXLAB_SIM_SEED`).
        seed: u64,
    },
}

impl Schedule {
    /// Parses the values of `--sim-schedule` / `PTXLAB_SIM_SCHEDULE`
    /// (`in-order`, also written `default`, or `random`) with a seed for
    /// `random`.
    pub fn parse(name: &str, seed: u64) -> Result<Self, std::string::String> {
        match name.trim().to_ascii_lowercase().as_str() {
            "" | "default" | "in-order" | "inorder" => Ok(Schedule::InOrder),
            "random" => Ok(Schedule::Random { seed }),
            other => Err(std::format!(
                "simulator schedule `{other}`; allowed: in-order (the default), random"
            )),
        }
    }
}

impl core::fmt::Display for Schedule {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Schedule::InOrder => f.write_str("in-order"),
            Schedule::Random { seed } => write!(f, "random, seed {seed}"),
        }
    }
}

/// The process-wide schedule override of [`set_schedule`].
static SCHEDULE_OVERRIDE: Mutex<Option<Schedule>> = Mutex::new(None);

/// Sets the process-wide default of [`SimOptions::schedule`] (the
/// `ptxlab --sim-schedule random --sim-seed N` flags); `None` goes back to
/// the environment variables.
pub fn set_schedule(schedule: Option<Schedule>) {
    *lock(&SCHEDULE_OVERRIDE) = schedule;
}

/// The default of [`SimOptions::schedule`]: [`set_schedule`]'s value if one
/// was set, else `PTXLAB_SIM_SCHEDULE` (`in-order` or `random`) with
/// `PTXLAB_SIM_SEED` (a whole number, 0 if unset), else in order. A value
/// it cannot read is named in a warning on stderr, once, and ignored.
pub fn schedule_default() -> Schedule {
    if let Some(s) = *lock(&SCHEDULE_OVERRIDE) {
        return s;
    }
    static ENV: OnceLock<Schedule> = OnceLock::new();
    *ENV.get_or_init(|| {
        let seed = match std::env::var("PTXLAB_SIM_SEED") {
            Err(_) => 0,
            Ok(v) => v.trim().parse::<u64>().unwrap_or_else(|_| {
                std::eprintln!(
                    "warning: PTXLAB_SIM_SEED=`{v}` is not a whole number >= 0; using seed 0"
                );
                0
            }),
        };
        match std::env::var("PTXLAB_SIM_SCHEDULE") {
            Err(_) => Schedule::InOrder,
            Ok(v) => Schedule::parse(&v, seed).unwrap_or_else(|e| {
                std::eprintln!("warning: PTXLAB_SIM_SCHEDULE: {e}; running in order");
                Schedule::InOrder
            }),
        }
    })
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
    /// The schedule's seed, for a random schedule.
    pub(crate) seed: Option<u64>,
    /// Blocks per cluster (1x1x1 for a launch without clusters).
    pub(crate) cluster: Dim3,
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
