//! Fuzz target `lomb_batch`: see `checks::lomb_batch`.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::lomb_batch(data));
