//! Hostile inputs for every `ptxlab` subcommand and for the public host
//! functions: wrong `.npy` dtype, shape, byte order or a truncated file; NaN
//! and infinity; sizes of 0, 1 and far beyond memory; launch shapes over the
//! limits; a missing, broken or too-old driver (the loader pointed at an
//! empty folder, or at a stub `libcuda` built here). Every case asserts the
//! error's text: the input it names, the limit and what to do. None may end
//! in a panic, an abort, a hang (each run has a time limit) or a wrong
//! answer: the valid edge cases (size 1, odd sizes, big-endian files) are
//! checked against known results on `--backend cpu` and `--backend sim`.
//!
//! One test binary, one module per subcommand (its options, `.npy` inputs and
//! valid edge cases), plus `driver` (no, broken or too-old driver) and
//! `library` (the public host functions called directly).

#[path = "../common/mod.rs"]
mod common;

mod command_line;
mod diffusion;
mod driver;
mod fusion;
mod library;
mod lomb;
mod matmul;
mod poisson;
mod primitives;
mod vector;

pub(crate) const CPU: &str = "cpu";
pub(crate) const SIM: &str = "sim";

/// Runs `line` (split at its spaces) on backend `be` and checks that it
/// fails with every one of `needles` in its output.
pub(crate) fn refused(be: &str, line: &str, needles: &[&str]) -> String {
    common::fails_with(&on(be, &common::words(line)), needles)
}

/// `args` with `--backend be` appended.
pub(crate) fn on<'a>(be: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut v = args.to_vec();
    v.extend_from_slice(&["--backend", be]);
    v
}
