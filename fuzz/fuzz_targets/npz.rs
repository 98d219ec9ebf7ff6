//! Fuzz target `npz`: see `checks::npz`.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::npz(data));
