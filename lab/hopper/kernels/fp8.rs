//! FP8 conversions on the GPU (sm_90a module): f32 to E4M3 and E5M2 and
//! back with PTX's `cvt`, the kernels that check the device layer's
//! software conversions ([`ptxlab_device::fp8`]) against the hardware bit
//! for bit.
//!
//! FP8 `cvt` needs sm_89 or newer, so these kernels build into the `sm_90a`
//! module with the Hopper ones (the portable modules target sm_80); the
//! simulator runs them with the software conversions.
//!
//! Launch shape (both kernels): 1D, [`BLOCK`] threads per block, one thread
//! per pair of values (one `cvt` of each kind), no shared memory. Pairs are
//! stored as `u16` registers: value `2 i` in the low byte of element `i`,
//! `2 i + 1` in the high byte, the memory layout of an array of single
//! FP8 values.

use ptxlab_device::fp8::{E4m3x2, E5m2x2};
use ptxlab_device::prelude::*;

/// Threads per block used by the host launchers.
pub const BLOCK: u32 = 256;

/// Rounds `x` to both FP8 formats and widens the results back: thread `i`
/// converts `x[2 i]` and `x[2 i + 1]` with one
/// `cvt.rn.satfinite.e4m3x2.f32` (and one `e5m2x2`), stores the pairs in
/// `e4m3[i]` and `e5m2[i]`, and their exact values (`cvt.rn.f16x2.*x2`,
/// `cvt.f32.f16`) in `back_e4m3[2 i..2 i + 2]` and `back_e5m2[2 i..2 i + 2]`.
///
/// Contract: `x`, `back_e4m3` and `back_e5m2` hold `2 n` values and the
/// pair outputs `n`; threads past `n` do nothing, and indexing is checked,
/// so a wrong length stops the kernel instead of writing out of bounds.
#[kernel(launch_bounds(256))]
pub fn fp8_convert(
    x: DeviceSlice<f32>,
    mut e4m3: DeviceSliceMut<u16>,
    mut e5m2: DeviceSliceMut<u16>,
    mut back_e4m3: DeviceSliceMut<f32>,
    mut back_e5m2: DeviceSliceMut<f32>,
) {
    let i = thread::index_1d();
    if i < e4m3.len() {
        let (lo, hi) = (x[2 * i], x[2 * i + 1]);
        let p = E4m3x2::from_f32(lo, hi);
        let q = E5m2x2::from_f32(lo, hi);
        e4m3[i] = p.to_bits();
        e5m2[i] = q.to_bits();
        let (a, b) = p.to_f32();
        back_e4m3[2 * i] = a;
        back_e4m3[2 * i + 1] = b;
        let (a, b) = q.to_f32();
        back_e5m2[2 * i] = a;
        back_e5m2[2 * i + 1] = b;
    }
}

/// Widens codes: thread `i` reads the pair `codes[i]` as E4M3 values
/// into `e4m3[2 i..2 i + 2]` and as E5M2 values into `e5m2[2 i..2 i + 2]`
/// (one `cvt.rn.f16x2.*x2` each, then `cvt.f32.f16`).
///
/// Contract: the outputs hold `2 codes.len()` values; threads past
/// `codes.len()` do nothing, and indexing is checked.
#[kernel(launch_bounds(256))]
pub fn fp8_decode(
    codes: DeviceSlice<u16>,
    mut e4m3: DeviceSliceMut<f32>,
    mut e5m2: DeviceSliceMut<f32>,
) {
    let i = thread::index_1d();
    if i < codes.len() {
        let c = codes[i];
        let (a, b) = E4m3x2::from_bits(c).to_f32();
        e4m3[2 * i] = a;
        e4m3[2 * i + 1] = b;
        let (a, b) = E5m2x2::from_bits(c).to_f32();
        e5m2[2 * i] = a;
        e5m2[2 * i + 1] = b;
    }
}
