//! How one solve's result compares with another's: residual histories and
//! fields, with the round-off each method allows. The multi-device run
//! (`multi::mgrun`) and the simulator checks (`check.rs`) both judge by
//! these.

use super::levels::Method;
use super::report::MgReport;
use ptxlab_common::error::{Error, Result};

/// The largest relative difference between two residual histories, cycle
/// by cycle (`want`'s values in the denominator; equal values count 0).
pub fn history_gap(got: &MgReport, want: &MgReport) -> f64 {
    got.history
        .iter()
        .zip(&want.history)
        .map(|(a, b)| {
            if a.1 == b.1 {
                0.0
            } else {
                ((a.1 - b.1) / b.1).abs()
            }
        })
        .fold(0.0, f64::max)
}

/// The largest relative difference between two residual histories, or an
/// error when their cycle counts differ.
pub fn history_difference(what: &str, got: &MgReport, want: &MgReport) -> Result<f64> {
    if got.cycles != want.cycles {
        return Err(Error::Verification {
            what: what.to_string(),
            detail: format!(
                "{} cycles against {} on one device: the residual histories part",
                got.cycles, want.cycles
            ),
        });
    }
    Ok(history_gap(got, want))
}

/// How far a team's field lies from one device's: the cells that differ
/// in bits, and the largest difference relative to the largest `|value|`.
pub fn field_difference(got: &[f64], want: &[f64]) -> (usize, f64) {
    let bits = got
        .iter()
        .zip(want)
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .count();
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let diff = got
        .iter()
        .zip(want)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f64, f64::max);
    let rel = if scale > 0.0 { diff / scale } else { diff };
    (bits, rel)
}

/// Whether a team's field is one device's, as the method promises:
/// multigrid bit for bit (the slab kernels do one device's arithmetic in
/// its order); PCG to round-off (its dot products are summed in another
/// order, which moves `alpha` and `beta` in the last bits), within `1e-9`
/// of the largest value. An error says which.
pub fn check_field(what: &str, method: Method, got: &[f64], want: &[f64]) -> Result<String> {
    let (bits, rel) = field_difference(got, want);
    let ok = match method {
        Method::Multigrid => bits == 0,
        Method::Pcg => rel <= 1e-9,
    };
    if !ok {
        return Err(Error::Verification {
            what: what.to_string(),
            detail: format!(
                "{bits} of {} cells differ from the single-device field (largest difference                  {rel:.2e} of the largest value)",
                got.len()
            ),
        });
    }
    Ok(match method {
        Method::Multigrid => "the same field bit for bit".to_string(),
        Method::Pcg => format!(
            "the same field to round-off ({bits} cells differ in bits, by {rel:.1e} of the largest value at most: the dot products' summation order)"
        ),
    })
}

/// The largest relative difference between a team's residual history and
/// one device's that is still round-off: `1e-9` where the team does one
/// device's arithmetic and only sums in another order (multigrid; PCG with
/// f64 cycles); `1e-5` for PCG with f32 cycles, whose right-hand side is
/// the f64 residual rounded to f32, so a last-bit change of the residual
/// (from `alpha`, which the reordered dot products move) can flip an f32
/// bit of the cycle's input and move `z` by f32's round-off.
pub fn history_tolerance(method: Method, elem_bytes: usize) -> f64 {
    if method == Method::Pcg && elem_bytes == 4 {
        1e-5
    } else {
        1e-9
    }
}
