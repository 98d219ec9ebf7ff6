//! `ptxlab sim-fuzz [--seeds K] [--first-seed S] -- <command> <args>`:
//! runs a `ptxlab` command on the simulator once in order and then under
//! K random schedules (seeds S, S+1, ...), each in a process of its own,
//! and reports the first run that fails or reads back other data than the
//! in-order run, with the seed that reproduces it
//! (`ptxlab --sim-schedule random --sim-seed N <command> <args>`).

use anyhow::{Context, Result, anyhow, bail};
use ptxlab::sim_fuzz::{self, Run};
use ptxlab_device::sim::{Schedule, read_record};
use std::process::Command;

/// The values of the global `--sim-schedule` flag (defined with the rest
/// of the command line in the library).
pub use ptxlab::command_line::ScheduleArg;

/// Applies the global `--sim-schedule` / `--sim-seed` flags (they override
/// `PTXLAB_SIM_SCHEDULE` / `PTXLAB_SIM_SEED`).
pub fn apply_schedule(schedule: Option<ScheduleArg>, seed: Option<u64>) {
    let s = match (schedule, seed) {
        (Some(ScheduleArg::InOrder), _) => Schedule::InOrder,
        (Some(ScheduleArg::Random), seed) => Schedule::Random {
            seed: seed.unwrap_or(0),
        },
        (None, Some(seed)) => Schedule::Random { seed },
        (None, None) => return,
    };
    ptxlab_device::sim::set_schedule(Some(s));
}

/// `ptxlab sim-fuzz` arguments (defined with the rest of the command line
/// in the library).
pub use ptxlab::command_line::SimFuzzArgs as Args;

/// Runs the command once under `schedule` in a child process.
fn run_once(exe: &std::path::Path, command: &[String], schedule: Schedule, n: usize) -> Run {
    let record =
        std::env::temp_dir().join(format!("ptxlab-sim-fuzz-{}-{n}.bin", std::process::id()));
    let _ = std::fs::remove_file(&record);
    let (name, seed) = match schedule {
        Schedule::InOrder => ("in-order", 0),
        Schedule::Random { seed } => ("random", seed),
    };
    let out = Command::new(exe)
        .args(command)
        .env("PTXLAB_SIM_SCHEDULE", name)
        .env("PTXLAB_SIM_SEED", seed.to_string())
        .env("PTXLAB_SIM_RECORD", &record)
        .output();
    let mut run = Run::default();
    match out {
        Err(e) => run.error = Some(format!("could not start {}: {e}", exe.display())),
        Ok(o) => {
            if !o.status.success() {
                let stderr = String::from_utf8_lossy(&o.stderr);
                let stdout = String::from_utf8_lossy(&o.stdout);
                let last = stderr
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .or_else(|| stdout.lines().rev().find(|l| !l.trim().is_empty()))
                    .unwrap_or("");
                // `ExitStatus`'s Display already reads "exit status: N"
                // (or names the signal).
                run.error = Some(format!("{}: {last}", o.status));
            }
        }
    }
    match read_record(&record) {
        Ok(d) => run.downloads = d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            run.error
                .get_or_insert(format!("record {}: {e}", record.display()));
        }
    }
    let _ = std::fs::remove_file(&record);
    run
}

/// `ptxlab sim-fuzz`.
pub fn run(args: &Args) -> Result<()> {
    let exe = std::env::current_exe().context("finding the ptxlab executable")?;
    let command = sim_fuzz::on_simulator(&args.command).map_err(|e| anyhow!("sim-fuzz: {e}"))?;
    let last_seed = args.first_seed.checked_add(args.seeds.saturating_sub(1));
    let Some(last_seed) = last_seed else {
        bail!(
            "sim-fuzz: --first-seed {} with --seeds {} runs past the largest seed ({})",
            args.first_seed,
            args.seeds,
            u64::MAX
        );
    };
    let shown = command.join(" ");
    if args.seeds == 0 {
        println!("sim-fuzz: `ptxlab {shown}` in order only (--seeds 0: no random schedules)");
    } else {
        println!(
            "sim-fuzz: `ptxlab {shown}` in order, then under {} random schedules (seeds {}..={})",
            args.seeds, args.first_seed, last_seed
        );
    }
    let seeds = (args.seeds > 0).then_some(args.first_seed..=last_seed);
    let mut n = 0;
    let (tried, finding) = sim_fuzz::fuzz(
        seeds.into_iter().flatten(),
        |s| {
            n += 1;
            run_once(&exe, &command, s, n)
        },
        |seed, r| match seed {
            None => println!(
                "  in order: {} ({} downloads)",
                if r.error.is_some() { "fails" } else { "ok" },
                r.downloads.len()
            ),
            Some(s) => println!(
                "  seed {s}: {} ({} downloads)",
                if r.error.is_some() { "fails" } else { "ok" },
                r.downloads.len()
            ),
        },
    );
    match finding {
        None if tried == 0 => {
            println!("sim-fuzz: the in-order run passes (no random schedules tried: --seeds 0)");
            Ok(())
        }
        None => {
            println!(
                "sim-fuzz: no divergence and no error in {tried} random schedules (the in-order \
                 run read back the same data)"
            );
            Ok(())
        }
        Some(f) => {
            println!("sim-fuzz: {f}");
            if let Some(seed) = f.seed() {
                println!("reproduce: ptxlab --sim-schedule random --sim-seed {seed} {shown}");
            }
            if f.schedule_dependent() {
                bail!("sim-fuzz found a schedule-dependent result or error")
            }
            bail!(
                "sim-fuzz: `ptxlab {shown}` fails on the simulator whatever the schedule (see its error above); fix the command first"
            )
        }
    }
}
