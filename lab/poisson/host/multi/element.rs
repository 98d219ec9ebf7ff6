//! Element types of the decomposition: the Poisson [`Element`]s plus the
//! transfer datatype.

use super::super::types::{Element, Rung};
use super::transport::Dtype;
use ptxlab_common::error::{Error, Result};

/// Element types the decomposition runs: the Poisson [`Element`]s plus what a
/// transfer and the bit-for-bit comparison need.
pub trait SlabElement: Element {
    /// The transfer datatype.
    const DTYPE: Dtype;
    /// The bits, for the bit-for-bit comparison.
    fn bits(self) -> u64;
}

impl SlabElement for f32 {
    const DTYPE: Dtype = Dtype::F32;
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}

impl SlabElement for f64 {
    const DTYPE: Dtype = Dtype::F64;
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// The rungs a slab can run (all but the temporal one, which is not
/// decomposed): an error for the others.
pub(crate) fn check_rung(rung: Rung) -> Result<()> {
    match rung {
        Rung::Temporal => Err(temporal_error()),
        _ => Ok(()),
    }
}

pub(crate) fn temporal_error() -> Error {
    Error::input(
        "--variant temporal",
        "the temporal rung is not decomposed over devices: a pass of depth d needs d halo rows \
         per side and an exchange every d sweeps; use naive, tiled or register with --gpus",
    )
}
