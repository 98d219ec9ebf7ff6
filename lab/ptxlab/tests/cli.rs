//! Hostile inputs through the `ptxlab` binary: each ends in an error that
//! names the input and what is allowed, never a panic.

mod common;

use common::*;

#[test]
fn unknown_subcommand_lists_the_valid_ones() {
    fails_with(&["frobnicate"], &["unrecognized subcommand", "vector-add"]);
}

#[test]
fn vector_add_rejects_bad_options() {
    fails_with(
        &words("vector-add --precision f16 --backend cpu"),
        &["'f16'", "possible values: f32, f64"],
    );
    fails_with(
        &["vector-add", "--backend", "tpu"],
        &["'tpu'", "possible values: gpu, sim, cpu"],
    );
    fails_with(&words("vector-add --n 0 --backend cpu"), &["empty"]);
    fails_with(
        &words("vector-add --variant x8 --n 10 --backend sim"),
        &["'x8'", "possible values: all, scalar, wide"],
    );
}

#[test]
fn vector_add_rejects_bad_npy_files() {
    let good = f32_npy("good.npy", &[1.0, 2.0, 3.0, 4.0], false);
    let short = f32_npy("short.npy", &[1.0, 2.0, 3.0], false);
    let wrong_dtype = npy("f8.npy", "<f8", "(2,)", &[0u8; 16]);
    let two_d = npy(
        "2d.npy",
        "<f4",
        "(2, 2)",
        &f32_bytes(&[1.0, 2.0, 3.0, 4.0], false),
    );
    let truncated = npy("trunc.npy", "<f4", "(100,)", &f32_bytes(&[1.0; 10], false));
    let g = good.to_str().unwrap();
    for (bad, needle) in [
        (short.to_str().unwrap(), "a has 4 elements and b has 3"),
        (wrong_dtype.to_str().unwrap(), "not a valid .npy of f32"),
        (two_d.to_str().unwrap(), "not a valid .npy of f32"),
        (truncated.to_str().unwrap(), "not a valid .npy of f32"),
        ("/nonexistent/x.npy", "cannot open"),
    ] {
        fails_with(
            &["vector-add", "--backend", "cpu", "--a", g, "--b", bad],
            &[needle],
        );
    }
    fails_with(
        &["vector-add", "--backend", "cpu", "--a", g],
        &["give both --a and --b"],
    );
}

#[test]
fn big_endian_npy_is_read_correctly() {
    let a = f32_npy("be.npy", &[1.0, 2.0, 3.0, 4.0], true);
    let b = f32_npy("le.npy", &[1.0, 1.0, 1.0, 1.0], false);
    let out = std::env::temp_dir().join(format!("ptxlab-cli-out-{}.npy", std::process::id()));
    let (code, text) = ptxlab(&[
        "vector-add",
        "--backend",
        "sim",
        "--a",
        a.to_str().unwrap(),
        "--b",
        b.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("PASS vector-add f32 16-byte loads n=4"),
        "{text}"
    );
    let bytes = std::fs::read(&out).unwrap();
    let data = &bytes[bytes.len() - 16..];
    let got: Vec<f32> = data
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, vec![2.0, 3.0, 4.0, 5.0]);
}

#[test]
fn missing_driver_is_one_clear_line() {
    if std::path::Path::new("/dev/nvidiactl").exists() {
        println!("skipped: this machine has an NVIDIA driver");
        return;
    }
    fails_with(
        &words("vector-add --backend gpu --n 10"),
        &["no NVIDIA driver", "--backend sim"],
    );
}

#[test]
fn bench_rejects_unknown_workloads() {
    fails_with(
        &words("bench --only nosuch --backend cpu --out /tmp/ptxlab-cli-bench"),
        &["'nosuch'", "possible values:", "poisson", "attention"],
    );
}

#[test]
fn enum_options_are_checked_by_the_parser_with_suggestions() {
    fails_with(
        &words("poisson --variant fancy --backend cpu"),
        &[
            "'fancy'",
            "possible values: all, naive, tiled, register, temporal",
        ],
    );
    fails_with(
        &words("poisson --variant tiles --backend cpu"),
        &["'tiles'", "a similar value exists: 'tiled'"],
    );
    fails_with(
        &words("poisson --precision f16 --backend cpu"),
        &["'f16'", "possible values: f32, f64"],
    );
    fails_with(
        &words("reduce --variant gridstrid --backend cpu"),
        &["a similar value exists: 'gridstride'"],
    );
    fails_with(
        &words("histogram --keys u16 --backend cpu"),
        &["possible values: u8, u32"],
    );
}

/// Every subcommand of `ptxlab` (clap's `help` left out), built so the
/// global options are on each.
fn subcommands() -> Vec<clap::Command> {
    use clap::CommandFactory;
    let mut cli = ptxlab::command_line::Cli::command();
    cli.build();
    cli.get_subcommands()
        .filter(|c| c.get_name() != "help")
        .cloned()
        .collect()
}

/// The options of `cmd` that belong to it (not `--help`).
fn options(cmd: &clap::Command) -> Vec<&clap::Arg> {
    cmd.get_arguments()
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
        .collect()
}

/// The `--flag`s a text names.
fn flags_in(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 2 < b.len() {
        let starts = b[i] == b'-'
            && b[i + 1] == b'-'
            && b[i + 2].is_ascii_lowercase()
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'-'));
        if starts {
            let mut j = i + 2;
            while j < b.len()
                && (b[j].is_ascii_lowercase() || b[j].is_ascii_digit() || b[j] == b'-')
            {
                j += 1;
            }
            out.push(text[i + 2..j].trim_end_matches('-').to_string());
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

#[test]
fn every_subcommand_and_option_has_help_and_names_only_real_options() {
    let subs = subcommands();
    assert!(subs.len() >= 20, "{} subcommands", subs.len());
    let all_longs: Vec<String> = subs
        .iter()
        .flat_map(|c| options(c).into_iter().filter_map(|a| a.get_long()))
        .map(str::to_string)
        .collect();
    for cmd in &subs {
        let name = cmd.get_name();
        let about = cmd.get_about().map(|s| s.to_string()).unwrap_or_default();
        assert!(!about.trim().is_empty(), "`ptxlab {name}` has no help text");
        let mut texts = vec![about];
        for a in options(cmd) {
            let help = a
                .get_long_help()
                .or(a.get_help())
                .map(|s| s.to_string())
                .unwrap_or_default();
            assert!(
                !help.trim().is_empty(),
                "`ptxlab {name}`: option {:?} has no help text",
                a.get_id()
            );
            texts.push(help);
            // The choices of the project's `ValueEnum`s (not a bool's
            // true/false, nor the shell names of clap_complete).
            let foreign = [
                std::any::TypeId::of::<bool>(),
                std::any::TypeId::of::<clap_complete::Shell>(),
            ];
            let boolean = foreign.iter().any(|t| a.get_value_parser().type_id() == *t);
            for v in a.get_possible_values() {
                if !v.is_hide_set() && !boolean {
                    let h = v.get_help().map(|s| s.to_string()).unwrap_or_default();
                    assert!(
                        !h.trim().is_empty(),
                        "`ptxlab {name}`: value `{}` of {:?} has no help text",
                        v.get_name(),
                        a.get_id()
                    );
                    texts.push(h);
                }
            }
        }
        // Every option a help text names exists: in this subcommand, or
        // (a pointer to another command) in another one.
        let own: Vec<&str> = options(cmd).iter().filter_map(|a| a.get_long()).collect();
        for text in &texts {
            for f in flags_in(text) {
                assert!(
                    own.contains(&f.as_str()) || all_longs.contains(&f),
                    "`ptxlab {name}`'s help names --{f}, which no subcommand has:\n{text}"
                );
            }
        }
        // The rendered help works (clap checks its own consistency here).
        let mut c = cmd.clone();
        let long = c.render_long_help().to_string();
        assert!(long.contains("Usage:"), "{name}: {long}");
    }
}

/// Subcommands that take `--backend` but print no measured rows: `bench`
/// writes its own `results.json`; `sim-fuzz` and `pipeline-bugs` check
/// schedules and bugs, they time nothing.
const NOT_MEASURING: [&str; 3] = ["bench", "sim-fuzz", "pipeline-bugs"];

#[test]
fn every_measuring_subcommand_prints_its_rows_with_json() {
    let subs = subcommands();
    let mut measuring = 0;
    for cmd in &subs {
        let name = cmd.get_name();
        let longs: Vec<&str> = options(cmd).iter().filter_map(|a| a.get_long()).collect();
        let measures = longs.contains(&"backend") && !NOT_MEASURING.contains(&name);
        if measures {
            measuring += 1;
            assert!(
                longs.contains(&"json"),
                "`ptxlab {name}` measures (it takes --backend) but has no --json"
            );
        }
    }
    assert!(measuring >= 12, "{measuring} measuring subcommands");
    // Every exemption still names a real subcommand.
    for n in NOT_MEASURING {
        assert!(subs.iter().any(|c| c.get_name() == n), "no subcommand {n}");
    }
}

#[test]
fn bench_only_lists_exactly_the_registry_s_workloads() {
    let subs = subcommands();
    let bench = subs.iter().find(|c| c.get_name() == "bench").unwrap();
    let only = options(bench)
        .into_iter()
        .find(|a| a.get_long() == Some("only"))
        .expect("bench --only");
    let listed: Vec<String> = only
        .get_possible_values()
        .iter()
        .map(|v| v.get_name().to_string())
        .collect();
    let registry: Vec<String> = ptxlab::workloads::all()
        .iter()
        .map(|w| w.name.to_string())
        .collect();
    assert_eq!(listed, registry);
    let help = succeeds(&["bench", "--help"]);
    for w in &registry {
        assert!(
            help.contains(&format!("- {w}:")),
            "{w} missing from:\n{help}"
        );
    }
}

#[test]
fn one_flag_name_has_one_type_and_meaning_in_every_subcommand() {
    use std::any::TypeId;
    use std::collections::BTreeMap;
    let subs = subcommands();
    let mut by_name: BTreeMap<String, Vec<(String, clap::Arg)>> = BTreeMap::new();
    for c in &subs {
        for a in options(c) {
            if let Some(l) = a.get_long() {
                by_name
                    .entry(l.to_string())
                    .or_default()
                    .push((c.get_name().to_string(), a.clone()));
            }
        }
    }
    let values = |a: &clap::Arg| -> Vec<String> {
        a.get_possible_values()
            .iter()
            .map(|v| v.get_name().to_string())
            .collect()
    };
    let defaults = |a: &clap::Arg| -> Vec<String> {
        a.get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect()
    };
    for (flag, uses) in &by_name {
        // One ladder per workload: each `--variant` and `--precision` has
        // its own rungs or types; the rules for them are checked below.
        if flag == "variant" || flag == "precision" {
            continue;
        }
        let (first_cmd, first) = &uses[0];
        for (cmd, a) in &uses[1..] {
            assert!(
                a.get_value_parser().type_id() == first.get_value_parser().type_id(),
                "--{flag}: `{cmd}` parses {:?}, `{first_cmd}` {:?}",
                a.get_value_parser().type_id(),
                first.get_value_parser().type_id()
            );
            assert_eq!(values(a), values(first), "--{flag}: {cmd} vs {first_cmd}");
        }
    }
    let seed = ptxlab::cli::DEFAULT_SEED.to_string();
    let reps = ptxlab::cli::DEFAULT_REPS.to_string();
    for (cmd, a) in &by_name["seed"] {
        assert!(
            a.get_value_parser().type_id() == TypeId::of::<u64>(),
            "{cmd} --seed"
        );
        assert_eq!(defaults(a), vec![seed.clone()], "{cmd} --seed");
    }
    for (cmd, a) in &by_name["reps"] {
        assert!(
            a.get_value_parser().type_id() == TypeId::of::<usize>(),
            "{cmd} --reps"
        );
        assert_eq!(defaults(a), vec![reps.clone()], "{cmd} --reps");
    }
    assert!(by_name["reps"].len() >= 8 && by_name["seed"].len() >= 4);
    for (cmd, a) in &by_name["variant"] {
        assert!(
            values(a).contains(&"all".to_string()),
            "{cmd} --variant: {:?}",
            values(a)
        );
        assert_eq!(defaults(a), vec!["all".to_string()], "{cmd} --variant");
    }
    for (cmd, a) in &by_name["backend"] {
        assert_eq!(values(a), ["gpu", "sim", "cpu"], "{cmd} --backend");
    }
    for (cmd, a) in &by_name["precision"] {
        assert!(!values(a).is_empty(), "{cmd} --precision is not a choice");
    }
    for flag in ["size", "out", "md", "n", "json"] {
        assert!(by_name.contains_key(flag), "no subcommand has --{flag}");
    }
    assert!(
        by_name["size"][0].1.get_value_parser().type_id() == TypeId::of::<ptxlab::cli::GridSize>()
    );
    // No free-text option stands for a choice: every option that takes a
    // string is one of these, and every other choice is a `ValueEnum`.
    let free_text = ["kernel", "functions", "only"];
    for c in &subs {
        for a in options(c) {
            let string = a.get_value_parser().type_id() == TypeId::of::<String>();
            if string && a.get_long().is_some() && a.get_possible_values().is_empty() {
                assert!(
                    free_text.contains(&a.get_long().unwrap()),
                    "`{}` --{}: a string option; make it a ValueEnum",
                    c.get_name(),
                    a.get_long().unwrap()
                );
            }
        }
    }
}

#[test]
fn grids_parse_as_n_or_nx_by_ny_everywhere() {
    use ptxlab::cli::GridSize;
    assert_eq!(GridSize::parse("2000"), Ok(GridSize { nx: 2000, ny: 2000 }));
    assert_eq!(
        GridSize::parse("1999x1237"),
        Ok(GridSize { nx: 1999, ny: 1237 })
    );
    assert_eq!(
        GridSize::parse("1e3x2_000"),
        Ok(GridSize { nx: 1000, ny: 2000 })
    );
    for bad in ["", "x5", "5x", "5x5x5", "-3", "2.5", "axb"] {
        let e = GridSize::parse(bad).unwrap_err();
        assert!(
            e.contains("NXxNY") && e.contains(&format!("`{bad}`")),
            "{bad}: {e}"
        );
    }
    for cmd in ["poisson", "diffusion"] {
        fails_with(
            &[cmd, "--size", "7x", "--backend", "cpu"],
            &["--size", "`7x`", "NXxNY"],
        );
    }
    fails_with(
        &words("poisson-scaling --size 64x32 --backend sim"),
        &["--size", "64x32", "square"],
    );
}

#[test]
fn completions_name_every_subcommand() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let run = ptxlab_env(&["completions", shell], &[]);
        assert_eq!(run.code, 0, "{shell}: {}", run.stderr);
        for sub in ["vector-add", "poisson", "matmul", "sim-fuzz", "completions"] {
            assert!(run.stdout.contains(sub), "{shell} script lacks {sub}");
        }
    }
    fails_with(&["completions", "tcsh"], &["'tcsh'", "bash"]);
}

/// `ptxlab <args> --json`: stdout parses as the JSON rows, and holds
/// nothing else.
fn json_rows(args: &[&str]) -> Vec<serde_json::Value> {
    let mut all = args.to_vec();
    all.push("--json");
    let run = ptxlab_env(&all, &[]);
    assert_eq!(run.code, 0, "{args:?}: {}", run.text());
    let v: serde_json::Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: stdout is not JSON ({e}):\n{}", run.stdout));
    let rows = v.as_array().expect("an array of rows").clone();
    assert!(!rows.is_empty(), "{args:?}: no rows");
    for r in &rows {
        for k in [
            "workload",
            "variant",
            "backend",
            "size",
            "precision",
            "status",
            "problem",
        ] {
            assert!(r.get(k).is_some(), "{args:?}: row without {k}: {r}");
        }
        // Each row reads back as a row of results.json.
        assert!(ptxlab::report::Row::from_json(r).is_some(), "{r}");
    }
    rows
}

#[test]
fn json_prints_the_measured_rows_alone_on_stdout() {
    let rows = json_rows(&words("vector-add --backend sim --n 1000 --reps 2"));
    let sim: Vec<_> = rows.iter().filter(|r| r["backend"] == "sim").collect();
    let variants: Vec<&str> = sim.iter().map(|r| r["variant"].as_str().unwrap()).collect();
    assert_eq!(variants, ["1 element/thread", "16-byte loads"], "{rows:?}");
    for r in &sim {
        assert_eq!(r["workload"], "vector-add");
        assert_eq!(r["status"]["kind"], "ok");
        assert!(r["timing"]["median_ms"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(r["unit"], "GB/s");
    }
    let rows = json_rows(&words(
        "reduce --backend sim --n 5000 --variant tree --reps 1",
    ));
    assert!(
        rows.iter()
            .any(|r| r["workload"] == "reduce" && r["backend"] == "sim"),
        "{rows:?}"
    );
    let rows = json_rows(&words(
        "matmul --backend sim --m 33 --n 17 --k 9 --variant tiled",
    ));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(rows[0]["rel_err"].as_f64().unwrap() < 1e-5, "{rows:?}");
    let rows = json_rows(&words(
        "lomb-scargle --backend sim --variant baseline --reps 1",
    ));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["unit"], "Gpairs/s", "{rows:?}");
    assert_eq!(rows[0]["size"], "114 samples x 2^20 freqs", "{rows:?}");
    let rows = json_rows(&words(
        "math-accuracy --backend sim --n 64 --precision f32 --functions exp",
    ));
    let who: Vec<&str> = rows
        .iter()
        .map(|r| r["backend"].as_str().unwrap())
        .collect();
    assert_eq!(who, ["sim", "cpu"], "{rows:?}");
    assert_eq!(rows[0]["unit"], "ulp", "{rows:?}");
    let rows = json_rows(&words(
        "poisson --method multigrid --backend sim --size 65 --precision f64",
    ));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["workload"], "poisson-mg");
    assert_eq!(rows[0]["problem"]["tolerance"], "1e-8", "{rows:?}");
    let rows = json_rows(&words(
        "poisson --method spectral --backend sim --size 33x47 --precision f64 --reps 1",
    ));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(rows[0]["rel_err"].as_f64().unwrap() < 1e-10, "{rows:?}");
    assert!(
        rows[0]["variant"].as_str().unwrap().contains("direct"),
        "{rows:?}"
    );
    let rows = json_rows(&words(
        "diffusion --backend cpu --size 64 --iters 5 --reps 3",
    ));
    assert_eq!(rows[0]["timing"]["reps"], 3, "{rows:?}");
    // poisson-scaling: its table's rows (one device: whole grid and slab
    // code; two simulated devices: overlapped and not), ms per sweep.
    let rows = json_rows(&words(
        "poisson-scaling --backend sim --size 17 --gpus 2 --variant tiled --iters 2 --reps 1 --warmup 1 --no-weak --no-check",
    ));
    assert_eq!(rows.len(), 4, "{rows:?}");
    assert_eq!(rows[3]["variant"], "tiled on 2 GPUs, not overlapped");
    assert_eq!(rows[3]["unit"], "GCells/s");
    assert!(
        rows[3]["note"]
            .as_str()
            .unwrap()
            .starts_with("strong scaling"),
        "{rows:?}"
    );
    // Without --json the same command prints its lines on stdout.
    let run = ptxlab_env(&words("vector-add --backend sim --n 100"), &[]);
    assert!(run.stdout.contains("PASS vector-add"), "{}", run.stdout);
}

#[test]
fn poisson_on_several_devices_runs_with_its_defaults() {
    let text = succeeds(&words(
        "poisson --gpus 2 --method multigrid --backend sim --size 33",
    ));
    assert!(text.to_lowercase().contains("converged"), "{text}");
    assert!(text.contains("tile smoother"), "{text}");
    let rb = succeeds(&words(
        "poisson --gpus 2 --method multigrid --smoother rb --backend sim --size 33",
    ));
    assert!(rb.contains("rb smoother") && rb.contains("PASS"), "{rb}");
    let help = succeeds(&["poisson", "--help"]);
    assert!(help.contains("Default: tile, with --gpus too"), "{help}");
}

#[test]
fn sim_fuzz_runs_on_the_simulator_and_tells_failing_from_schedule_dependent() {
    // No --backend given: sim-fuzz adds --backend sim (vector-add's default
    // is gpu, which would fail here for want of a driver).
    let text = succeeds(&words("sim-fuzz --seeds 1 -- vector-add --n 64 --reps 1"));
    assert!(text.contains("vector-add --backend sim --n 64"), "{text}");
    assert!(
        text.contains("no divergence and no error in 1 random schedules"),
        "{text}"
    );
    // --seeds 0: the in-order run alone, and it says so.
    let text = succeeds(&words("sim-fuzz --seeds 0 -- vector-add --n 64 --reps 1"));
    assert!(text.contains("in order only"), "{text}");
    assert!(!text.contains("seeds 1..=1"), "{text}");
    // Another backend is refused before anything runs.
    fails_with(
        &words("sim-fuzz -- vector-add --backend gpu"),
        &["--backend gpu", "does not run on the simulator"],
    );
    // A command that fails whatever the schedule is a failing command.
    let text = fails_with(
        &words("sim-fuzz --seeds 2 -- vector-add --n 0"),
        &[
            "fails in order and under all 2 random schedules",
            "does not depend on the schedule",
            "empty",
        ],
    );
    assert!(!text.contains("schedule-dependent result"), "{text}");
    assert!(!text.contains("exit status exit status"), "{text}");
    fails_with(
        &words("sim-fuzz --seeds 0 -- vector-add --n 0"),
        &["fails in order (no random schedules tried)"],
    );
}
