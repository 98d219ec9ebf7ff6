//! The simulator's asynchronous checks on the planted bugs of
//! `kernels_gpu::pipeline_bugs`: every mistake is caught with a one-line
//! report naming the kernel, the block and thread, and both source lines;
//! the correct pipelines run clean in order and under random schedules;
//! the in-place prefetch bug is found only off the default schedule, by
//! the same search `ptxlab sim-fuzz` runs. On a GPU, the same runs give
//! the comparison table of `docs/results/` (skipped without a driver).

use ptxlab::pipeline_bugs::{self, Bug, Outcome};
use ptxlab::runtime::{Device, SimOptions};
use ptxlab::sim_fuzz::{self, Finding, Run};
use ptxlab_device::sim::{Download, Schedule};

fn sim(schedule: Schedule) -> Device {
    Device::sim_with(SimOptions {
        schedule,
        ..SimOptions::default()
    })
}

#[test]
fn every_planted_bug_is_caught_with_a_one_line_report() {
    let dev = sim(Schedule::InOrder);
    for bug in Bug::ALL {
        let Some(want) = pipeline_bugs::expected_report(bug) else {
            continue;
        };
        let got = pipeline_bugs::run(&dev, bug, true).unwrap();
        let Outcome::Caught(e) = got else {
            panic!("{}: not caught: {got}", bug.kernel());
        };
        let line = e.to_string();
        println!("{}: {line}", bug.kernel());
        assert!(
            line.contains(want),
            "{}: expected `{want}` in: {line}",
            bug.kernel()
        );
        assert!(
            !line.contains('\n'),
            "{}: not one line: {line}",
            bug.kernel()
        );
        assert!(
            line.starts_with(&format!("kernel `{}`, block (", bug.kernel())),
            "{line}"
        );
        assert!(line.contains(", thread ("), "{line}");
        let lines = line.matches("lab/pipeline-bugs/kernels/").count();
        assert!(
            lines >= 2,
            "{}: both source lines expected: {line}",
            bug.kernel()
        );
    }
}

#[test]
fn the_correct_pipelines_run_clean_in_order_and_under_random_schedules() {
    let schedules = [Schedule::InOrder]
        .into_iter()
        .chain((1..=3).map(|seed| Schedule::Random { seed }));
    for s in schedules {
        let dev = sim(s);
        for bug in Bug::ALL {
            let got = pipeline_bugs::run(&dev, bug, false).unwrap();
            assert!(
                matches!(got, Outcome::Right { .. }),
                "{} (correct pipeline, schedule {s}): {got}",
                bug.kernel()
            );
        }
    }
}

#[test]
fn the_planted_bugs_are_caught_under_random_schedules_too() {
    // Eight seeds: besides catching the bugs, these runs abort blocks while
    // others wait on mbarriers and wgmma groups, which is where a stale
    // wake-up once resumed a finished thread (`Block::wake`).
    for seed in 1..=8 {
        let dev = sim(Schedule::Random { seed });
        for bug in Bug::ALL {
            if bug == Bug::InplacePrefetch {
                continue;
            }
            let got = pipeline_bugs::run(&dev, bug, true).unwrap();
            assert!(
                matches!(got, Outcome::Caught(_)),
                "{} (seed {seed}): {got}",
                bug.kernel()
            );
        }
    }
}

/// One run of the in-place prefetch under `schedule`, as sim-fuzz sees it.
fn inplace(schedule: Schedule, planted: bool) -> Run {
    match pipeline_bugs::inplace_run(&sim(schedule), planted) {
        Err(e) => Run {
            error: Some(e.to_string()),
            downloads: Vec::new(),
        },
        Ok((got, _)) => Run {
            error: None,
            downloads: vec![Download {
                after: "pipe_inplace_prefetch".into(),
                elem_bytes: 4,
                bytes: got.iter().flat_map(|v| v.to_le_bytes()).collect(),
            }],
        },
    }
}

#[test]
fn sim_fuzz_finds_the_inplace_prefetch_bug_only_off_the_default_schedule() {
    // In order the planted bug gives the right result: no check sees it.
    let dev = sim(Schedule::InOrder);
    assert!(matches!(
        pipeline_bugs::run(&dev, Bug::InplacePrefetch, true).unwrap(),
        Outcome::Right { .. }
    ));
    let (tried, finding) = sim_fuzz::fuzz(1..=20, |s| inplace(s, true), |_, _| {});
    let Some(Finding::Divergence { seed, detail }) = finding else {
        panic!("no divergence in {tried} random schedules: {finding:?}");
    };
    println!("seed {seed}: {detail}");
    assert!(detail.contains("pipe_inplace_prefetch"), "{detail}");
    // The seed reproduces it: the same wrong result again.
    let dev = sim(Schedule::Random { seed });
    assert!(matches!(
        pipeline_bugs::run(&dev, Bug::InplacePrefetch, true).unwrap(),
        Outcome::Wrong { .. }
    ));
    let again = inplace(Schedule::Random { seed }, true);
    let first = inplace(Schedule::Random { seed }, true);
    assert_eq!(again.downloads, first.downloads);
    // The correct pipeline reads back the same data under every schedule.
    let (tried, finding) = sim_fuzz::fuzz(1..=20, |s| inplace(s, false), |_, _| {});
    assert_eq!((tried, finding), (20, None));
}

#[test]
fn gpu_planted_bugs() {
    let Some(dev) = ptxlab::runtime::testing::gpu_or_skip() else {
        return;
    };
    // Under compute-sanitizer one bug per process: PTXLAB_BUG names it
    // (`MissingWait`, ...), PTXLAB_PLANTED=1 runs only the planted mistake,
    // 0 only the correct pipeline (both by default).
    let only = std::env::var("PTXLAB_BUG").ok();
    let which: &[bool] = match std::env::var("PTXLAB_PLANTED").as_deref() {
        Ok("1") => &[true],
        Ok("0") => &[false],
        _ => &[false, true],
    };
    for bug in Bug::ALL {
        let name = format!("{bug:?}");
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        for &planted in which {
            let got = pipeline_bugs::run(&dev, bug, planted);
            let what = if planted { "planted" } else { "correct" };
            match got {
                Ok(o) => println!("GPU {} {what}: {o}", bug.kernel()),
                Err(e) => println!("GPU {} {what}: error: {e}", bug.kernel()),
            }
        }
    }
}
