//! The public host functions called directly: every bad input is an error
//! whose text names what was wrong (no panic), valid edges work.

mod diffusion_matmul_fusion;
mod lomb;
mod poisson;
mod primitives;
mod runtime;
mod vector;

#[track_caller]
pub(super) fn err<T, E: std::fmt::Display>(r: Result<T, E>) -> String {
    match r {
        Ok(_) => panic!("expected an error, got Ok"),
        Err(e) => e.to_string(),
    }
}

#[track_caller]
pub(super) fn has(text: &str, needles: &[&str]) {
    for n in needles {
        assert!(text.contains(n), "expected `{n}` in: {text}");
    }
}
