//! Fuzz target `npy`: see `checks::npy`.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::npy(data));
