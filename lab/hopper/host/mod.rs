//! Hopper's toolbox on the host: the thread-block cluster kernels'
//! launchers, launch shapes and f64 references ([`cluster`]), and the FP8
//! conversions checked bit for bit against the device layer's software ones
//! ([`fp8`]).

pub mod cluster;
pub mod fp8;
