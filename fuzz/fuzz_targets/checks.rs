//! What each fuzz target checks, as plain functions of the input bytes, so
//! the same checks also run without libFuzzer: `tests/fuzz_corpus.rs` in the
//! main workspace replays every corpus file through them in `cargo test`.
//!
//! The rules: nothing panics, nothing allocates what the input does not
//! hold (the fuzzer's memory limit catches that), and every error names its
//! source (the file, or the file and the entry).

#![allow(dead_code)]

use ptxlab::workloads::lomb;
use ptxlab::{command_line, npy, npz};
use std::path::PathBuf;

/// A scratch file of this process and thread for `target`, rewritten for
/// every input.
fn scratch(target: &str, ext: &str) -> PathBuf {
    let thread = format!("{:?}", std::thread::current().id())
        .chars()
        .filter(char::is_ascii_digit)
        .collect::<String>();
    std::env::temp_dir().join(format!(
        "ptxlab-fuzz-{target}-{}-{thread}.{ext}",
        std::process::id()
    ))
}

/// Writes `data` to a scratch file and returns its path.
fn as_file(target: &str, ext: &str, data: &[u8]) -> PathBuf {
    let path = scratch(target, ext);
    std::fs::write(&path, data).expect("the scratch file is writable");
    path
}

/// The value, or `None` after checking that the error's text names
/// `source` and says something besides.
fn names<T>(r: Result<T, ptxlab::Error>, source: &str) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            let text = e.to_string();
            assert!(
                text.contains(source),
                "an error that does not name `{source}`: {text}"
            );
            assert!(
                text.len() > source.len() + 8,
                "an error that says nothing: {text}"
            );
            None
        }
    }
}

/// `.npy`: the in-memory parsers (`npy::parse_1d`, `parse_2d`,
/// `inspect_bytes`) and the file readers (`npy::inspect`, `read_1d`,
/// `read_2d`) on the same bytes; where both read an array, they agree.
pub fn npy(data: &[u8]) {
    const WHAT: &str = "fuzz-input.npy";
    let _ = npy::inspect_bytes(data);
    let m1 = names(npy::parse_1d::<f32>(data, WHAT), WHAT);
    names(npy::parse_1d::<f64>(data, WHAT), WHAT);
    names(npy::parse_1d::<u8>(data, WHAT), WHAT);
    names(npy::parse_1d::<i64>(data, WHAT), WHAT);
    let m2 = names(npy::parse_2d::<f64>(data, WHAT), WHAT);
    names(npy::parse_2d::<u32>(data, WHAT), WHAT);

    let path = as_file("npy", "npy", data);
    let name = path.display().to_string();
    names(npy::inspect(&path), &name);
    let f1 = names(npy::read_1d::<f32>(&path, "float32"), &name);
    names(npy::read_1d::<i32>(&path, "int32"), &name);
    let f2 = names(npy::read_2d::<f64>(&path, "float64"), &name);
    names(npy::read_2d::<u8>(&path, "uint8"), &name);
    let _ = std::fs::remove_file(&path);
    if let (Some(a), Some(b)) = (&m1, &f1) {
        assert!(
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()),
            "parse_1d and read_1d disagree"
        );
    }
    if let (Some(a), Some(b)) = (&m2, &f2) {
        assert!(
            a.0 == b.0
                && a.1 == b.1
                && a.2
                    .iter()
                    .zip(&b.2)
                    .all(|(x, y)| x.to_bits() == y.to_bits()),
            "parse_2d and read_2d disagree"
        );
    }
}

/// `.npz`: `npz::parse` in memory and `npz::read` from a file (they agree),
/// then every entry through the `.npy` parser.
pub fn npz(data: &[u8]) {
    let parsed = npz::parse(data);
    if let Err(d) = &parsed {
        assert!(!d.is_empty(), "an empty error");
    }
    let path = as_file("npz", "npz", data);
    let name = path.display().to_string();
    let read = names(npz::read(&path), &name);
    let _ = std::fs::remove_file(&path);
    let Some(entries) = read else {
        assert!(parsed.is_err(), "parse and read disagree");
        return;
    };
    assert_eq!(Ok(&entries), parsed.as_ref(), "parse and read disagree");
    for (key, bytes) in &entries {
        let what = format!("{name}: {key}");
        names(npy::parse_1d::<f64>(bytes, &what), &what);
        names(npy::parse_1d::<i64>(bytes, &what), &what);
    }
}

/// The Lomb-Scargle batch reader: `lomb::parse_npz` on the bytes and
/// `lomb::read_batch` on them as an `.npz` file: an error that names the
/// file, or a validated batch whose every curve can be taken.
pub fn lomb_batch(data: &[u8]) {
    const NAME: &str = "fuzz-batch.npz";
    if let Some(b) = names(lomb::parse_npz(data, NAME), NAME) {
        b.validate().expect("parse_npz returns validated batches");
        for c in 0..b.curves() {
            let (t, y, dy) = b.curve(c);
            assert!(t.len() >= 2 && t.len() == y.len());
            assert!(dy.is_none_or(|d| d.len() == t.len()));
        }
    }
    let path = as_file("lomb_batch", "npz", data);
    let name = path.display().to_string();
    if let Some(b) = names(lomb::read_batch(&path), &name) {
        b.validate().expect("read_batch returns validated batches");
    }
    let _ = std::fs::remove_file(&path);
}

/// The `ptxlab` command line: the input, split at NUL bytes, is the argument
/// list after the program name; every subcommand's clap parser
/// (`command_line::parse_from`, the binary's entry point), then, for what
/// parses, the checks that need no device or file (`command_line::check`).
pub fn cli(data: &[u8]) {
    let mut args = vec!["ptxlab".to_string()];
    if !data.is_empty() {
        args.extend(
            data.split(|&b| b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned()),
        );
    }
    match command_line::parse_from(&args) {
        Ok(cli) => {
            if let Err(e) = command_line::check(&cli) {
                assert!(!e.to_string().is_empty());
            }
        }
        Err(e) => {
            let _ = e.render().to_string();
        }
    }
}
