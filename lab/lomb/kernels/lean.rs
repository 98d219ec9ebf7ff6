//! Rung 4c: fast math, lean.

use super::*;

/// Frequencies per thread of the lean kernels (rung 4c).
pub const LEAN_FREQS: usize = 2;
/// Threads per block the host launches the lean kernels with (rung 4c).
pub const LEAN_BLOCK: u32 = 512;

/// One (sample, frequency) pair of the lean kernels: `sincos` of the phase
/// ([`pair_phase`]) and four sums (`SS` is `n - CC`).
#[inline(always)]
fn pair4<T: Phase, const SPLIT: bool>(
    w: (T, T),
    xj: T,
    xl: T,
    yj: T,
    acc: &mut [T; 4],
    k: &T::Consts,
) {
    let (s, c) = pair_phase::<T, SPLIT>(w.0, w.1, xj, xl).sincos_with(k);
    acc[0] = yj.mul_add(c, acc[0]);
    acc[1] = yj.mul_add(s, acc[1]);
    acc[2] = c.mul_add(c, acc[2]);
    acc[3] = c.mul_add(s, acc[3]);
}

/// The lean body: `F` consecutive frequencies per thread, grid-stride over
/// groups of `F`, the samples through [`Samples`], see [`lomb_lean`](fn@lomb_lean).
/// `SPLIT`: the `_long` kernels ([`phase`]).
#[inline(always)]
fn lean<T: Pack4, const F: usize, const SPLIT: bool>(
    samples: Samples<T, SPLIT>,
    fr: Freqs<T, SPLIT>,
    out: DeviceSliceMut<T>,
    scale: T,
) {
    let nf = freq_count(&fr.hi, &out);
    let nt = T::from_f64(samples.len() as f64);
    let k = T::trig_consts();
    for g in thread::grid_stride(nf.div_ceil(F)) {
        let i0 = g * F;
        // The last group may be partial: its missing frequencies repeat the
        // last one (computed, not stored), so the loop stays branch-free.
        let mut w = [(T::ZERO, T::ZERO); F];
        unroll16!(f, {
            if f < F {
                let i = if i0 + f < nf { i0 + f } else { nf - 1 };
                // SAFETY: `i < nf <= freqs.len()`.
                w[f] = unsafe { fr.get(i) };
            }
        });
        let mut acc = [[T::ZERO; 4]; F];
        // One chunk of four samples per loop iteration: unrolling further
        // (by hand: two chunks) takes 40 registers, 12 blocks per SM instead
        // of 16, and measured 2% slower.
        samples.for_each(|xj, xl, yj| {
            unroll16!(f, {
                if f < F {
                    pair4::<T, SPLIT>(w[f], xj, xl, yj, &mut acc[f], &k);
                }
            });
        });
        unroll16!(f, {
            if f < F && i0 + f < nf {
                let [xc, xs, cc, cs] = acc[f];
                // SAFETY: `i0 + f < nf <= out.len()`.
                unsafe { out.set_unchecked(i0 + f, finish_ls(xc, xs, cc, nt - cc, cs, scale)) };
            }
        });
    }
}

/// Rung 4c (launched from the fast-math module): rung 4b made lean for
/// the SFU.
///
/// Thread mapping: thread `g` of the grid takes frequencies `2g` and
/// `2g + 1` ([`LEAN_FREQS`]) in one pass over the samples (four at a time,
/// 16-byte loads, a broadcast: every lane reads the same `x_j`, `y_j`); the
/// host launches `ceil(nf / 2)` threads in blocks of [`LEAN_BLOCK`], so the
/// grid-stride loop runs once. No shared memory. Few enough registers that
/// an SM holds 2048 threads, as many as it can (4 blocks of 512; the block
/// size sweep is in `docs/book/src/workloads/lomb-scargle.md`, rung 4c).
///
/// Why it is faster than rung 4b: the loop
/// is SFU-bound (two `MUFU` per pair, 16 cycles of a sub-partition's SFU
/// per warp and pair) but every other instruction competes with them for
/// the one issue slot per cycle.
/// - Per pair rung 4b issues `FMUL`, `FMUL.RZ`, two `MUFU`, five `FFMA` and
///   half a load. Here `SS` is `n - CC` (`c^2 + s^2 = 1`), so four `FFMA`,
///   and each load serves two frequencies.
/// - Per frequency, [`finish_ls`] replaces the `atan2`, the `sincos` and the
///   two divisions (five SFU operations and about fifty instructions, a
///   twentieth of a 114-sample frequency) with one division.
///
/// The figures, and the variants measured and rejected, are in
/// `docs/book/src/workloads/lomb-scargle.md` (rung 4c).
///
/// f64: the same kernel (the fast-math module leaves f64 `sincos` precise:
/// what changes for f64 is the finish and the sums).
#[kernel(instances(f32, f64))]
pub fn lomb_lean<T: Pack4>(
    x: DeviceSlice<T>,
    y: DeviceSlice<T>,
    freqs: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    scale: T,
) {
    lean::<T, LEAN_FREQS, false>(Samples::new(x, x, y), Freqs::new(freqs, freqs), out, scale);
}

/// Rung 4c for long time spans: [`lomb_lean`](fn@lomb_lean) with split
/// phases (the times' and frequencies' low parts in `x_lo` and `freqs_lo`,
/// the phase reduced modulo 2 pi before the SFU `sin.approx`/`cos.approx`,
/// whose own reduction loses `|w x| 2^-24` beyond a turn; see `phase`).
/// Span in f32: up to `|w (x - x0)| <=` [`SPLIT_PHASE_MAX_F32`]; the host
/// runs it beyond [`PLAIN_PHASE_MAX_F32`]. f64: the phase reduced modulo 2
/// pi first, as in [`lomb_direct_long`](fn@lomb_direct_long).
#[kernel(instances(f32, f64))]
pub fn lomb_lean_long<T: Pack4>(
    x: DeviceSlice<T>,
    x_lo: DeviceSlice<T>,
    y: DeviceSlice<T>,
    freqs: DeviceSlice<T>,
    freqs_lo: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    scale: T,
) {
    lean::<T, LEAN_FREQS, true>(
        Samples::new(x, x_lo, y),
        Freqs::new(freqs, freqs_lo),
        out,
        scale,
    );
}
