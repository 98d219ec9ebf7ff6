//! Each periodogram's peak, found where the periodograms are: a batch of
//! `rows` periodograms of `width` frequencies each (the batch kernels'
//! output, curves by rows) is reduced to two values per row, so a caller
//! that wants the best periods copies `2 rows` values back instead of
//! `rows x width`.
//!
//! Thread mapping: one warp per row, four rows per block of 128 threads
//! (`row = 4 block + warp`). Lane `l` scans the row's elements `l, l + 32,
//! ...` in order, keeping the highest finite value and its index (a later
//! equal value does not replace it, so each lane holds its first maximum);
//! five `shfl.bfly` steps then merge the lanes' pairs, the higher value
//! winning and the lower index breaking a tie: the row's first highest
//! finite value, as NumPy's `argmax` over the finite values finds it. No
//! shared memory, no barrier: the lanes of a row only meet in the shuffles.
//! Reads are coalesced (a warp reads 32 neighbouring elements per step).

use ptxlab_device::prelude::*;

/// Threads per block: four warps, four rows.
pub const PEAKS_BLOCK: u32 = 128;

/// Lane `l`'s candidate against the one `m` lanes away: the higher value,
/// the lower index on a tie (an empty candidate has index `u32::MAX` and
/// value `-inf`, so any real one wins).
#[inline(always)]
fn merge(v: f64, i: u32, m: u32) -> (f64, u32) {
    let ov = warp::shfl_xor(FULL_MASK, v, m);
    let oi = warp::shfl_xor(FULL_MASK, i, m);
    if ov > v || (ov == v && oi < i) {
        (ov, oi)
    } else {
        (v, i)
    }
}

/// The peaks of `rows` rows of `width` values of `power` (row-major):
/// `peaks[r]` is the index of row `r`'s first highest finite value (as an
/// f64, exact below 2^53; -1 for a row without a finite value), and
/// `peaks[rows + r]` that value (NaN without one). Launch with
/// [`PEAKS_BLOCK`] threads and `rows.div_ceil(4)` blocks.
#[kernel(launch_bounds(128), instances(f32, f64))]
pub fn lomb_row_peaks<T: Real>(
    power: DeviceSlice<T>,
    mut peaks: DeviceSliceMut<f64>,
    rows: u32,
    width: u32,
) {
    let lane = thread::thread_idx_x() % WARP_SIZE;
    let row =
        thread::block_idx_x() * (PEAKS_BLOCK / WARP_SIZE) + thread::thread_idx_x() / WARP_SIZE;
    // The whole warp leaves together (the shuffles need every lane).
    if row >= rows {
        return;
    }
    let base = row as usize * width as usize;
    let (mut v, mut i) = (f64::NEG_INFINITY, u32::MAX);
    let mut k = lane;
    while k < width {
        let x = power[base + k as usize].to_f64();
        if x.is_finite() && (i == u32::MAX || x > v) {
            v = x;
            i = k;
        }
        k += WARP_SIZE;
    }
    let mut m = 16;
    while m > 0 {
        (v, i) = merge(v, i, m);
        m /= 2;
    }
    if lane == 0 {
        let r = row as usize;
        if i == u32::MAX {
            peaks[r] = -1.0;
            peaks[rows as usize + r] = f64::NAN;
        } else {
            peaks[r] = i as f64;
            peaks[rows as usize + r] = v;
        }
    }
}
