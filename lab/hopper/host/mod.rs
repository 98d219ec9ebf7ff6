//! Hopper's toolbox on the host: the thread-block cluster kernels'
//! launchers, launch shapes and f64 references ([`cluster`]), and the FP8
//! conversions checked bit for bit against the device layer's software ones
//! ([`fp8`]).
#![allow(clippy::too_many_arguments)]
// Checks are written `!(err < tol)` on purpose: a NaN error must fail them.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod cluster;
pub mod fp8;
