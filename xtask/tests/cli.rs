//! The `xtask` binary's answers to a bad command line: clap's error and
//! exit code 2, the command list after an unknown command, and a help of
//! the command's own on `--help`. Nothing here builds or runs a job.

use std::process::{Command, Output};

fn xtask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .output()
        .expect("running the xtask binary")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn an_unknown_flag_is_refused_with_exit_code_2() {
    for args in [
        &["build-ptx", "--bogus"][..],
        &["inspect", "--bogus"],
        &["ptx-diff", "--bogus"],
        &["new-kernel-crate", "/tmp/x", "--bogus"],
        &["bundle", "--bogus"],
    ] {
        let o = xtask(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = text(&o.stderr);
        assert!(
            err.contains("unexpected argument '--bogus'"),
            "{args:?}: {err}"
        );
        assert!(
            err.contains(&format!("Usage: cargo xtask {}", args[0])),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn an_unknown_command_lists_the_commands() {
    let o = xtask(&["biuld-ptx"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("unrecognized subcommand 'biuld-ptx'"), "{err}");
    assert!(err.contains("the commands are:"), "{err}");
    for c in [
        "build-and-bench",
        "build-ptx",
        "inspect",
        "ptx-diff",
        "package-check",
        "book",
    ] {
        assert!(err.contains(&format!("\n  {c} ")), "{c} missing: {err}");
    }
}

#[test]
fn a_command_help_is_its_own() {
    let o = xtask(&["ptx-diff", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    let out = text(&o.stdout);
    assert!(out.contains("Usage: cargo xtask ptx-diff"), "{out}");
    assert!(out.contains("--base") && out.contains("--files"), "{out}");
    assert!(!out.contains("build-and-bench"), "{out}");
    let o = xtask(&["new-kernel-crate", "--help"]);
    let out = text(&o.stdout);
    assert!(
        out.contains("Usage: cargo xtask new-kernel-crate [OPTIONS] <PATH>"),
        "{out}"
    );
    assert!(
        out.contains("- git:") && out.contains("[default: path]"),
        "{out}"
    );
    // No command: the overall help, every command named, exit code 2.
    let o = xtask(&[]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("inspect") && err.contains("package-check"),
        "{err}"
    );
}
