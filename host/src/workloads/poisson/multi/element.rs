//! Element types of the decomposition: the Poisson [`Element`]s plus the
//! transfer datatype, the parameter form and the kernels a slab launches on
//! sub-ranges of its buffers.

use super::super::types::{Element, Rung};
use super::transport::Dtype;
use crate::error::Error;
use crate::runtime::Param;
use kernels_gpu::poisson as kp;
use ptxlab_device::{DeviceSlice, DeviceSliceMut};

/// A sweep kernel as the simulator calls it.
pub type SweepFn<T> =
    fn(DeviceSlice<'_, T>, DeviceSlice<'_, T>, DeviceSliceMut<'_, T>, u32, u32, T);
/// The residual kernel as the simulator calls it.
pub type ResidualFn<T> =
    fn(DeviceSlice<'_, T>, DeviceSlice<'_, T>, DeviceSliceMut<'_, f64>, u32, u32, f64);

/// Element types the decomposition runs: the Poisson [`Element`]s plus what a
/// launch on a sub-range and a transfer need.
pub trait SlabElement: Element {
    /// The transfer datatype.
    const DTYPE: Dtype;
    /// The bits, for the bit-for-bit comparison.
    fn bits(self) -> u64;
    /// The value as a GPU kernel parameter.
    fn param(self) -> Param;
    /// Name and simulator function of `rung`'s sweep kernel; `None` for the
    /// temporal rung, which is not decomposed.
    fn sweep_kernel(rung: Rung) -> Option<(&'static str, SweepFn<Self>)>;
    /// Name and simulator function of the residual kernel.
    fn residual_kernel() -> (&'static str, ResidualFn<Self>);
}

impl SlabElement for f32 {
    const DTYPE: Dtype = Dtype::F32;
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
    fn param(self) -> Param {
        Param::F32(self)
    }
    fn sweep_kernel(rung: Rung) -> Option<(&'static str, SweepFn<f32>)> {
        match rung {
            Rung::Naive => Some(("poisson_naive_f32", kp::poisson_naive_f32)),
            Rung::Tiled => Some(("poisson_tiled_f32", kp::poisson_tiled_f32)),
            Rung::Register => Some(("poisson_register_f32", kp::poisson_register_f32)),
            Rung::Temporal => None,
        }
    }
    fn residual_kernel() -> (&'static str, ResidualFn<f32>) {
        ("poisson_residual_f32", kp::poisson_residual_f32)
    }
}

impl SlabElement for f64 {
    const DTYPE: Dtype = Dtype::F64;
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn param(self) -> Param {
        Param::F64(self)
    }
    fn sweep_kernel(rung: Rung) -> Option<(&'static str, SweepFn<f64>)> {
        match rung {
            Rung::Naive => Some(("poisson_naive_f64", kp::poisson_naive_f64)),
            Rung::Tiled => Some(("poisson_tiled_f64", kp::poisson_tiled_f64)),
            Rung::Register => Some(("poisson_register_f64", kp::poisson_register_f64)),
            Rung::Temporal => None,
        }
    }
    fn residual_kernel() -> (&'static str, ResidualFn<f64>) {
        ("poisson_residual_f64", kp::poisson_residual_f64)
    }
}

pub(crate) fn temporal_error() -> Error {
    Error::input(
        "--variant temporal",
        "the temporal rung is not decomposed over devices: a pass of depth d needs d halo rows \
         per side and an exchange every d sweeps; use naive, tiled or register with --gpus",
    )
}
