//! The command line: each command parses its own options, refuses unknown
//! ones, and has a `--help` of its own.

use crate::cli::{Backend, Cli, Cmd, DepKind, SanitizerTool};
use crate::target::{Arch, Cubins};
use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("xtask").chain(args.iter().copied()))
}

fn cmd(args: &[&str]) -> Cmd {
    match parse(args) {
        Ok(c) => c.cmd,
        Err(e) => panic!("{args:?} did not parse:\n{e}"),
    }
}

/// Every command's name.
fn commands() -> Vec<String> {
    Cli::command()
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect()
}

#[test]
fn every_command_is_there() {
    let want = [
        "build-and-bench",
        "build-ptx",
        "inspect",
        "ptx-diff",
        "doctor",
        "new-kernel-crate",
        "test",
        "bundle",
        "sanitize",
        "book",
        "results-index",
        "package-check",
    ];
    assert_eq!(commands(), want);
    Cli::command().debug_assert();
}

#[test]
fn unknown_flags_are_refused_by_every_command() {
    for c in commands() {
        if c == "test" {
            continue; // its arguments all go to cargo test
        }
        let mut args = vec![c.as_str()];
        // The required positional of the commands that have one.
        if c == "new-kernel-crate" {
            args.push("/tmp/x");
        }
        args.push("--no-such-flag");
        let e = parse(&args).expect_err(&c);
        assert_eq!(e.kind(), ErrorKind::UnknownArgument, "{c}: {e}");
        assert!(e.to_string().contains("--no-such-flag"), "{c}: {e}");
    }
}

#[test]
fn unknown_commands_are_refused() {
    let e = parse(&["build-ptxx"]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidSubcommand);
    let list = crate::command_list();
    for c in commands() {
        assert!(
            list.contains(&format!("  {c} ")),
            "{c} missing from:\n{list}"
        );
    }
}

#[test]
fn each_help_is_its_own() {
    for c in commands() {
        let e = parse(&[c.as_str(), "--help"]).expect_err(&c);
        assert_eq!(e.kind(), ErrorKind::DisplayHelp, "{c}");
        let help = e.to_string();
        assert!(
            help.contains(&format!("Usage: cargo xtask {c}")),
            "{c}'s help:\n{help}"
        );
        // No other command's usage line.
        for other in commands().iter().filter(|o| **o != c) {
            assert!(
                !help.contains(&format!("cargo xtask {other} ")),
                "{c}'s help names {other}:\n{help}"
            );
        }
    }
    let help = parse(&["inspect", "--help"]).unwrap_err().to_string();
    assert!(help.contains("--list") && help.contains("sm_90a"), "{help}");
    let help = parse(&["build-and-bench", "--help"])
        .unwrap_err()
        .to_string();
    assert!(
        help.contains("--update-docs") && help.contains("--peers"),
        "{help}"
    );
}

#[test]
fn bench_options_pass_through() {
    let run = [
        "--quick",
        "--only",
        "poisson",
        "--only",
        "matmul",
        "--backend",
        "sim",
        "--peers",
        "--out",
        "DIR",
    ];
    let Cmd::BuildAndBench(a) = cmd(&[&["build-and-bench"][..], &run].concat()) else {
        panic!()
    };
    assert_eq!(a.backend, Some(Backend::Sim));
    let args: Vec<String> = a
        .bench_args()
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    // The run options come back unchanged, in order.
    assert_eq!(args, run);
    assert!(a.update_docs.is_none());
    assert!(parse(&["build-and-bench", "--backend", "tpu"]).is_err());
    // `--update-docs` with and without its folder; not with run options.
    let Cmd::BuildAndBench(a) = cmd(&["build-and-bench", "--update-docs"]) else {
        panic!()
    };
    assert_eq!(a.update_docs, Some(None));
    let Cmd::BuildAndBench(a) = cmd(&["build-and-bench", "--update-docs", "docs/results/x"]) else {
        panic!()
    };
    assert_eq!(a.update_docs, Some(Some("docs/results/x".into())));
    let e = parse(&["build-and-bench", "--update-docs", "--quick"]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ArgumentConflict);
}

#[test]
fn archs_and_cubins_are_typed() {
    let Cmd::BuildPtx(a) = cmd(&["build-ptx", "--arch", "sm_90a", "--cubin", "none"]) else {
        panic!()
    };
    assert_eq!(a.arch, Some(Arch::Sm90a));
    assert_eq!(a.cubin, Some(Cubins(vec![])));
    let e = parse(&["build-ptx", "--arch", "sm_70"]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidValue);
    assert!(e.to_string().contains("sm_90a"), "{e}");
    assert!(parse(&["build-ptx", "--opt-level", "4"]).is_err());
    assert!(parse(&["build-ptx", "--all", "--arch", "sm_90"]).is_err());
    let Cmd::Inspect(a) = cmd(&["inspect", "--arch", "sm_80,sm_90a"]) else {
        panic!()
    };
    assert_eq!(a.arch, [Arch::Sm80, Arch::Sm90a]);
    assert!(a.kernel.is_none() && !a.list);
    let Cmd::Inspect(a) = cmd(&["inspect", "attention_wgmma", "--arch", "sm_90a"]) else {
        panic!()
    };
    assert_eq!(a.kernel.as_deref(), Some("attention_wgmma"));
    assert!(parse(&["inspect", "k", "--list"]).is_err());
}

#[test]
fn ptx_diff_options() {
    let Cmd::PtxDiff(a) = cmd(&["ptx-diff"]) else {
        panic!()
    };
    assert_eq!(a.base, "HEAD");
    assert!(a.arch.is_empty() && a.files.is_none());
    let Cmd::PtxDiff(a) = cmd(&[
        "ptx-diff",
        "--base",
        "main",
        "--arch",
        "sm_90a",
        "--rename",
        "a=b",
        "--rename",
        "c=d",
        "--ignore-numbering",
    ]) else {
        panic!()
    };
    assert_eq!(a.base, "main");
    assert_eq!(a.arch, [Arch::Sm90a]);
    assert_eq!(
        a.rename,
        [("a".into(), "b".into()), ("c".into(), "d".into())]
    );
    assert!(a.ignore_numbering);
    let Cmd::PtxDiff(a) = cmd(&["ptx-diff", "--files", "old.ptx", "new.ptx"]) else {
        panic!()
    };
    assert_eq!(a.files, Some(vec!["old.ptx".into(), "new.ptx".into()]));
    assert!(parse(&["ptx-diff", "--files", "old.ptx"]).is_err());
    assert!(parse(&["ptx-diff", "--rename", "ab"]).is_err());
    assert!(parse(&["ptx-diff", "--files", "a", "b", "--base", "main"]).is_err());
}

#[test]
fn other_commands_parse() {
    let Cmd::NewKernelCrate(a) = cmd(&["new-kernel-crate", "/tmp/k", "--name", "k2"]) else {
        panic!()
    };
    assert_eq!(a.dep, DepKind::Path);
    assert_eq!(a.name.as_deref(), Some("k2"));
    assert!(parse(&["new-kernel-crate"]).is_err());
    assert!(parse(&["new-kernel-crate", "/tmp/k", "--dep", "svn"]).is_err());
    // `test` hands everything on, flags and `--` included.
    let Cmd::Test(a) = cmd(&[
        "test",
        "-p",
        "ptxlab",
        "--test",
        "launch",
        "--",
        "--nocapture",
    ]) else {
        panic!()
    };
    let args: Vec<_> = a.args.iter().map(|s| s.to_string_lossy()).collect();
    assert_eq!(
        args,
        ["-p", "ptxlab", "--test", "launch", "--", "--nocapture"]
    );
    let Cmd::Bundle(a) = cmd(&["bundle", "--tests", "launch,matmul", "--no-benches"]) else {
        panic!()
    };
    assert_eq!(a.tests, ["launch", "matmul"]);
    assert!(a.no_benches && !a.scaffold);
    assert!(parse(&["bundle", "--scaffold", "--tests", "x"]).is_err());
    let Cmd::Sanitize(a) = cmd(&["sanitize", "--tool", "racecheck", "vector"]) else {
        panic!()
    };
    assert_eq!(a.tool, Some(SanitizerTool::Racecheck));
    assert_eq!(a.filter.as_deref(), Some("vector"));
    assert!(parse(&["sanitize", "--tool", "leakcheck"]).is_err());
    let Cmd::Book(a) = cmd(&["book", "--check-links"]) else {
        panic!()
    };
    assert!(a.check_links && a.out.is_none());
    let Cmd::ResultsIndex(a) = cmd(&["results-index", "--check"]) else {
        panic!()
    };
    assert!(a.check);
    assert!(matches!(cmd(&["doctor"]), Cmd::Doctor));
    assert!(parse(&["doctor", "extra"]).is_err());
}
