//! Rungs 1-8: the material's direct kernel and its source-level variants
//! (launch bounds, shared memory).

use super::*;

/// One (sample, frequency) pair of the direct kernels: `sincos` of the phase
/// ([`pair_phase`]: `w x`, or the split phase of the `_long` kernels) and the
/// five sums.
#[inline(always)]
fn pair<T: Phase, const SPLIT: bool>(
    w: (T, T),
    xj: T,
    xl: T,
    yj: T,
    acc: &mut [T; 5],
    k: &T::Consts,
) {
    let (s, c) = pair_phase::<T, SPLIT>(w.0, w.1, xj, xl).sincos_with(k);
    acc[0] = yj.mul_add(c, acc[0]);
    acc[1] = yj.mul_add(s, acc[1]);
    acc[2] = c.mul_add(c, acc[2]);
    acc[3] = s.mul_add(s, acc[3]);
    acc[4] = c.mul_add(s, acc[4]);
}

/// The direct body: one frequency per thread at a time, grid-stride, the
/// samples through [`Samples`]. `SPLIT`: the `_long` kernels (times and
/// frequencies in two parts, [`phase`]).
#[inline(always)]
fn direct<T: Pack4, const SPLIT: bool>(
    samples: Samples<T, SPLIT>,
    fr: Freqs<T, SPLIT>,
    out: DeviceSliceMut<T>,
    scale: T,
) {
    let nf = freq_count(&fr.hi, &out);
    // The sincos constants in registers for the whole kernel (f64: see
    // `precise::SinCos64Consts`).
    let k = T::trig_consts();
    for i in thread::grid_stride(nf) {
        // SAFETY: `i < nf <= freqs.len()`.
        let w = unsafe { fr.get(i) };
        let mut acc = [T::ZERO; 5];
        samples.for_each(|xj, xl, yj| pair::<T, SPLIT>(w, xj, xl, yj, &mut acc, &k));
        let [xc, xs, cc, ss, cs] = acc;
        // SAFETY: `i < nf <= out.len()`.
        unsafe { out.set_unchecked(i, finish(xc, xs, cc, ss, cs, scale)) };
    }
}

/// Rungs 1-6: the material's kernel. Thread `t` of the grid computes
/// frequencies `t, t + T, t + 2T, ...` (`T` threads in the grid), each with a
/// loop over all samples: one `sincos` (precise, pure Rust:
/// `precise::sincos_f32` / `sincos_f64`) and 5 FMAs per (sample, frequency),
/// then `atan2` and one more `sincos` per frequency. No shared memory. Rung
/// 3 is the f64 instance: in Rust nothing is promoted implicitly, so the f32
/// instance has no f64 instruction (constants come in through
/// `Real::from_f64`).
///
/// The build-time rungs launch this same kernel: JIT on every call, from the
/// cached module, from the fast-math module (the f32 `sincos` becomes
/// `sin.approx`/`cos.approx` on the SFU, the divisions `div.approx`), under a
/// register cap (`.maxnreg` in the PTX) and from the precompiled cubin.
#[kernel(instances(f32, f64))]
pub fn lomb_direct<T: Pack4>(
    x: DeviceSlice<T>,
    y: DeviceSlice<T>,
    freqs: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    scale: T,
) {
    direct::<_, false>(Samples::new(x, x, y), Freqs::new(freqs, freqs), out, scale);
}

/// Rung 7: [`lomb_direct`](fn@lomb_direct) with `launch_bounds(128)` (`.maxntid 128`).
/// What changed: ptxas knows no block is larger than 128 threads, so it may
/// use up to 255 registers without limiting occupancy below what 128-thread
/// blocks allow (and, with the fast-math module, it schedules for it). Must
/// be launched with at most 128 threads per block (checked by the host).
#[kernel(launch_bounds(128), instances(f32, f64))]
pub fn lomb_bounds<T: Pack4>(
    x: DeviceSlice<T>,
    y: DeviceSlice<T>,
    freqs: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    scale: T,
) {
    direct::<_, false>(Samples::new(x, x, y), Freqs::new(freqs, freqs), out, scale);
}

/// Dynamic shared memory of [`lomb_shared`](fn@lomb_shared): `x` then `y` chunks of `block`
/// elements each, 16-byte aligned.
pub const fn lomb_shared_bytes<T>(block: usize) -> usize {
    shared::shared_bytes::<T>(lomb_shared_y_offset::<T>(block), block)
}

/// Byte offset of the `y` chunk in the shared buffer.
pub const fn lomb_shared_y_offset<T>(block: usize) -> usize {
    shared::shared_bytes::<T>(0, block)
}

/// Dynamic shared memory of [`lomb_shared_long`](fn@lomb_shared_long): as [`lomb_shared_bytes`],
/// then a chunk of the times' low parts.
pub const fn lomb_shared_long_bytes<T>(block: usize) -> usize {
    shared::shared_bytes::<T>(lomb_shared_bytes::<T>(block), block)
}

/// The body of the shared-memory kernels: the samples staged block by
/// block (see [`lomb_shared`](fn@lomb_shared)). `SPLIT`: the `_long` kernels.
#[inline(always)]
fn shared_body<T: Phase, const SPLIT: bool>(
    pts: Points<T, SPLIT>,
    fr: Freqs<T, SPLIT>,
    out: DeviceSliceMut<T>,
    scale: T,
) {
    let Points { x, xl, y } = pts;
    let n = x.len();
    let nf = freq_count(&fr.hi, &out);
    let bd = thread::block_dim_x() as usize;
    let tid = thread::thread_idx_x() as usize;
    let sx = shared::dynamic_shared::<T>(0, bd);
    let sy = shared::dynamic_shared::<T>(lomb_shared_y_offset::<T>(bd), bd);
    // The low parts' chunk (`SPLIT` only: the plain kernels have no room for it).
    let sl = if SPLIT {
        Some(shared::dynamic_shared::<T>(lomb_shared_bytes::<T>(bd), bd))
    } else {
        None
    };
    let stride = thread::grid_size_1d();
    // Block-uniform loop: every thread of the block runs the same iterations,
    // so the barriers inside are reached by all of them.
    let mut base = thread::block_idx_x() as usize * bd;
    while base < nf {
        let i = base + tid;
        let active = i < nf;
        let w = if active {
            // SAFETY: `i < nf <= freqs.len()` when active.
            unsafe { fr.get(i) }
        } else {
            (T::ZERO, T::ZERO)
        };
        let (mut xc, mut xs, mut cc, mut ss, mut cs) =
            (T::ZERO, T::ZERO, T::ZERO, T::ZERO, T::ZERO);
        let mut j0 = 0;
        while j0 < n {
            let m = if n - j0 < bd { n - j0 } else { bd };
            if tid < m {
                sx.set(tid, x.get(j0 + tid));
                sy.set(tid, y.get(j0 + tid));
                if let Some(sl) = &sl {
                    sl.set(tid, xl.get(j0 + tid));
                }
            }
            sync_threads();
            let mut j = 0;
            while j < m {
                // SAFETY: `j < m <= bd`, the length of both views.
                let (xj, yj) = unsafe { (sx.get_unchecked(j), sy.get_unchecked(j)) };
                let xlj = match &sl {
                    // SAFETY: as above.
                    Some(sl) => unsafe { sl.get_unchecked(j) },
                    None => T::ZERO,
                };
                let (s, c) = pair_phase::<T, SPLIT>(w.0, w.1, xj, xlj).sincos();
                xc = yj.mul_add(c, xc);
                xs = yj.mul_add(s, xs);
                cc = c.mul_add(c, cc);
                ss = s.mul_add(s, ss);
                cs = c.mul_add(s, cs);
                j += 1;
            }
            sync_threads();
            j0 += bd;
        }
        if active {
            out.set(i, finish(xc, xs, cc, ss, cs, scale));
        }
        base += stride;
    }
}

/// Shared-memory rung: `x` and `y` staged in shared memory, one chunk of
/// `blockDim.x` samples at a time (layout: `x[0..block]`, then `y[0..block]`
/// at [`lomb_shared_y_offset`]). Thread mapping as [`lomb_direct`](fn@lomb_direct), but the
/// grid-stride loop is block-uniform (the barriers need every thread).
/// What it should buy: the inner loop reads shared memory (a broadcast, no
/// L1 tag lookups or global-load latency); in practice `x, y` of 114 samples
/// already sit in L1, so expect little.
#[kernel(instances(f32, f64))]
pub fn lomb_shared<T: Phase>(
    x: DeviceSlice<T>,
    y: DeviceSlice<T>,
    freqs: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    scale: T,
) {
    shared_body::<_, false>(Points::new(x, x, y), Freqs::new(freqs, freqs), out, scale);
}

// ---- long spans: the same rungs with split phases ------------------------------

/// Rungs 1-6 for long time spans: [`lomb_direct`](fn@lomb_direct) with the
/// phase of every pair formed from split operands and reduced modulo 2 pi
/// before the `sincos` (`phase`): `x` and `x_lo` are the high and low parts
/// of the centred times `x - x0`, `freqs` and `freqs_lo` those of the
/// frequencies. Same thread mapping; per pair a third 16-byte load per four
/// samples, and about eight more FP32 operations (the exact product, the
/// cross terms, the reduction).
///
/// f32: span any, up to `|w (x - x0)| <=` [`SPLIT_PHASE_MAX_F32`] (2.5e7
/// rad), with f32 accuracy throughout; the host runs it where the plain
/// kernel's single f32 product would not be accurate enough, `max |w| max |x
/// - x0| >` [`PLAIN_PHASE_MAX_F32`]. f64: the low parts are zero (an f64
/// product is accurate enough) and the reduction keeps the precise `sincos`
/// off its Payne-Hanek path, which it would otherwise take on every pair
/// beyond 2^20 rad; the host runs it beyond [`PLAIN_PHASE_MAX_F64`].
#[kernel(instances(f32, f64))]
pub fn lomb_direct_long<T: Pack4>(
    x: DeviceSlice<T>,
    x_lo: DeviceSlice<T>,
    y: DeviceSlice<T>,
    freqs: DeviceSlice<T>,
    freqs_lo: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    scale: T,
) {
    direct::<_, true>(
        Samples::new(x, x_lo, y),
        Freqs::new(freqs, freqs_lo),
        out,
        scale,
    );
}

/// Rung 7 for long spans: [`lomb_bounds`](fn@lomb_bounds) with split
/// phases, as [`lomb_direct_long`](fn@lomb_direct_long).
#[kernel(launch_bounds(128), instances(f32, f64))]
pub fn lomb_bounds_long<T: Pack4>(
    x: DeviceSlice<T>,
    x_lo: DeviceSlice<T>,
    y: DeviceSlice<T>,
    freqs: DeviceSlice<T>,
    freqs_lo: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    scale: T,
) {
    direct::<_, true>(
        Samples::new(x, x_lo, y),
        Freqs::new(freqs, freqs_lo),
        out,
        scale,
    );
}

/// Shared-memory rung for long spans: [`lomb_shared`](fn@lomb_shared) with
/// split phases ([`lomb_direct_long`](fn@lomb_direct_long)); a third chunk
/// holds the times' low parts ([`lomb_shared_long_bytes`]).
#[kernel(instances(f32, f64))]
pub fn lomb_shared_long<T: Phase>(
    x: DeviceSlice<T>,
    x_lo: DeviceSlice<T>,
    y: DeviceSlice<T>,
    freqs: DeviceSlice<T>,
    freqs_lo: DeviceSlice<T>,
    out: DeviceSliceMut<T>,
    scale: T,
) {
    shared_body::<_, true>(
        Points::new(x, x_lo, y),
        Freqs::new(freqs, freqs_lo),
        out,
        scale,
    );
}
