//! Fuzz target `cli`: see `checks::cli`.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::cli(data));
