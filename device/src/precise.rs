//! Precise math in pure Rust (filled in by the Lomb-Scargle work).
