//! The butterflies of the spectral solver's shared-memory FFT.
//!
//! A pass of radix `R` (Stockham, `ns` points already combined, `N / R`
//! butterflies) gives each thread whole butterflies: it reads the `R`
//! inputs `j + q N / R` of butterfly `j` into registers, multiplies input
//! `q` by the twiddle `W_N^{q k N / (ns R)}` (`k = j mod ns`), runs the
//! length-`R` DFT in registers and writes output `q` to
//! `(j / ns) ns R + k + q ns`. Per point and pass that is one shared load,
//! one shared store and at most one twiddle, where computing every output
//! directly from the `R` inputs (the generic pass of the parent module)
//! costs `R` of each.
//!
//! The DFTs: radix 2, 4 and 8 by their split forms; odd radices 3, 5, 7,
//! 9, 11 and 13 by the symmetric form, which pairs inputs `m` and `R - m`
//! (`s_m = x_m + x_{R-m}`, `d_m = x_m - x_{R-m}`) so that outputs `k` and
//! `R - k` share `A_k = x_0 + sum_m s_m cos(2 pi m k / R)` and
//! `B_k = sum_m d_m sin(2 pi m k / R)`: `X_k = A_k -+ i B_k`,
//! `X_{R-k} = A_k +- i B_k` (forward, inverse). That is `(R - 1)^2` real
//! multiply-adds per butterfly instead of `4 (R - 1)^2`. `R` is a constant
//! in every function here, so the loops unroll and the arrays stay in
//! registers; the roots of unity are constants of the code.

use crate::fft::{C, Complex, MAX_RADIX, dft_small, dft4};
use core::ops::{Add, Mul, Sub};
use ptxlab_device::prelude::*;

const COS3: [f64; 1] = [-0.5];
const SIN3: [f64; 1] = [0.866_025_403_784_438_6];
const COS5: [f64; 2] = [0.309_016_994_374_947_45, -0.809_016_994_374_947_5];
const SIN5: [f64; 2] = [0.951_056_516_295_153_5, 0.587_785_252_292_473_1];
const COS7: [f64; 3] = [
    0.623_489_801_858_733_5,
    -0.222_520_933_956_314_4,
    -0.900_968_867_902_419_1,
];
const SIN7: [f64; 3] = [
    0.781_831_482_468_029_8,
    0.974_927_912_181_823_6,
    0.433_883_739_117_558_1,
];
const COS9: [f64; 4] = [
    0.766_044_443_118_978,
    0.173_648_177_666_930_36,
    -0.5,
    -0.939_692_620_785_908_4,
];
const SIN9: [f64; 4] = [
    0.642_787_609_686_539_4,
    0.984_807_753_012_208,
    0.866_025_403_784_438_6,
    0.342_020_143_325_668_7,
];
const COS11: [f64; 5] = [
    0.841_253_532_831_181_2,
    0.415_415_013_001_886_44,
    -0.142_314_838_273_285_14,
    -0.654_860_733_945_285_1,
    -0.959_492_973_614_497_4,
];
const SIN11: [f64; 5] = [
    0.540_640_817_455_597_6,
    0.909_631_995_354_518_3,
    0.989_821_441_880_932_7,
    0.755_749_574_354_258_3,
    0.281_732_556_841_429_67,
];
const COS13: [f64; 6] = [
    0.885_456_025_653_209_9,
    0.568_064_746_731_155_8,
    0.120_536_680_255_323_05,
    -0.354_604_887_042_535_6,
    -0.748_510_748_171_101_1,
    -0.970_941_817_426_052,
];
const SIN13: [f64; 6] = [
    0.464_723_172_043_768_56,
    0.822_983_865_893_656_4,
    0.992_708_874_098_054,
    0.935_016_242_685_414_8,
    0.663_122_658_240_795_2,
    0.239_315_664_287_557_77,
];

/// Whether [`pass`] has a butterfly for radix `r`.
pub const fn has_butterfly(r: usize) -> bool {
    matches!(r, 2 | 3 | 4 | 5 | 7 | 8 | 9 | 11 | 13)
}

/// `(cos, sin)` of `2 pi j / r` for an odd radix of the tables.
#[inline(always)]
fn root(r: usize, j: usize) -> (f64, f64) {
    let j = j % r;
    if j == 0 {
        return (1.0, 0.0);
    }
    let (cs, sn): (&[f64], &[f64]) = match r {
        3 => (&COS3, &SIN3),
        5 => (&COS5, &SIN5),
        7 => (&COS7, &SIN7),
        9 => (&COS9, &SIN9),
        11 => (&COS11, &SIN11),
        _ => (&COS13, &SIN13),
    };
    if 2 * j < r {
        (cs[j - 1], sn[j - 1])
    } else {
        (cs[r - j - 1], -sn[r - j - 1])
    }
}

/// `acc + x c` for a complex `x` and a real `c`.
#[inline(always)]
fn fma<T: Real>(acc: C<T>, x: C<T>, c: T) -> C<T> {
    C::new(x.re.mul_add(c, acc.re), x.im.mul_add(c, acc.im))
}

/// Runs `$body` with `$q` bound to each constant below `$bound` (at most
/// 16): a loop that always unrolls, whatever the size of its body.
macro_rules! upto {
    ($q:ident < $bound:expr => $body:block) => {
        ptxlab_device::unroll!($q in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            if $q < $bound $body
        })
    };
}

/// The length-`R` DFT of an odd `R` of the tables, in place, by the
/// symmetric form of the module doc.
#[inline(always)]
fn dft_odd<T: Real, const R: usize>(v: &mut [C<T>; R], inverse: bool) {
    // Exclusive ranges with constant bounds only: they unroll fully (an
    // inclusive range leaves a loop, and the arrays in local memory).
    let h = (R - 1) / 2;
    let mut s = [C::zero(); 6];
    let mut d = [C::zero(); 6];
    for m in 0..h {
        s[m] = v[m + 1].add(v[R - 1 - m]);
        d[m] = v[m + 1].sub(v[R - 1 - m]);
    }
    let x0 = v[0];
    let mut y0 = x0;
    for sm in s.iter().take(h) {
        y0 = y0.add(*sm);
    }
    v[0] = y0;
    for k in 1..h + 1 {
        let (mut a, mut b) = (x0, C::zero());
        for m in 0..h {
            let (c, sn) = root(R, (m + 1) * k);
            a = fma(a, s[m], T::from_f64(c));
            b = fma(b, d[m], T::from_f64(sn));
        }
        // i B; forward X_k = A - i B, inverse X_k = A + i B.
        let ib = b.mul_i(false);
        if inverse {
            v[k] = a.add(ib);
            v[R - k] = a.sub(ib);
        } else {
            v[k] = a.sub(ib);
            v[R - k] = a.add(ib);
        }
    }
}

/// The length-`R` DFT of `v`, in place, forward or inverse (no scaling).
#[inline(always)]
fn dft<T: Real, const R: usize>(v: &mut [C<T>; R], inverse: bool) {
    match R {
        2 => {
            let (a, b) = (v[0], v[1]);
            v[0] = a.add(b);
            v[1] = a.sub(b);
        }
        4 => {
            let x = dft4(v[0], v[1], v[2], v[3], inverse);
            v[..4].copy_from_slice(&x);
        }
        8 => {
            let mut w = [C::zero(); MAX_RADIX];
            w.copy_from_slice(&v[..8]);
            dft_small(&mut w, 8, inverse);
            v[..8].copy_from_slice(&w);
        }
        _ => dft_odd::<T, R>(v, inverse),
    }
}

/// Where a pass reads and writes: shared-memory offsets (in `T`) of the
/// source and destination complex buffers, the FFT length, the points
/// combined so far, and the direction.
#[derive(Clone, Copy)]
pub(super) struct Pass {
    pub nf: usize,
    pub ns: usize,
    pub src: usize,
    pub dst: usize,
    pub inverse: bool,
}

/// Butterflies a thread runs at once in a pass of radix `R`: two for the
/// radices up to 8 in f32 (the second butterfly's loads are in flight while
/// the first one waits), one for 9, 11 and 13 and in f64, whose blocks of 512
/// threads must fit in 128 registers (their warps hide the latency instead).
const fn batch<T>(r: usize) -> usize {
    if r <= 8 && core::mem::size_of::<T>() == 4 { 2 } else { 1 }
}

/// One radix-`R` Stockham pass of the block over the complex buffers of
/// `p` in `sh`, twiddles `W_N^e = (tw[2e], tw[2e + 1])`. Each thread takes
/// [`batch`] butterflies `j, j + threads, ...` per step: all their loads,
/// then their twiddles and DFTs, then their stores. Every thread of the
/// block calls it; the caller puts a barrier after it.
#[inline(always)]
fn pass_r<T: Complex, const R: usize>(sh: &SharedSlice<T>, tw: &DeviceSlice<T>, p: Pass) {
    if p.src.max(p.dst) + 2 * p.nf > sh.len() || 2 * p.nf > tw.len() || p.nf > u32::MAX as usize
    {
        ptxlab_device::trap("spectral: a pass's buffers or twiddles are too short");
    }
    // The index arithmetic in 32 bits (`nf` fits, checked above): a 64-bit
    // add or multiply is two instructions, and a division by the runtime
    // `ns` a long sequence, once per butterfly.
    let (nf, ns, r) = (p.nf as u32, p.ns as u32, R as u32);
    let per = nf / r;
    let step = nf / (ns * r);
    let threads = thread::block_dim_x();
    let nb = batch::<T>(R);
    let at = |base: usize, i: u32| base + i as usize;
    let mut j0 = thread::thread_idx_x();
    while j0 < per {
        let mut v = [[C::zero(); R]; 2];
        ptxlab_device::unroll!(b in [0, 1] {
            let j = j0 + b as u32 * threads;
            if b < nb && j < per {
                upto!(q < R => {
                    let i = at(p.src, j + q as u32 * per);
                    // SAFETY: `j + q per < R per = nf`, so `i + nf < src + 2
                    // nf`, inside the shared memory (checked above).
                    v[b][q] = unsafe { C::new(sh.get_unchecked(i), sh.get_unchecked(i + p.nf)) };
                });
            }
        });
        ptxlab_device::unroll!(b in [0, 1] {
            let j = j0 + b as u32 * threads;
            if b < nb && j < per {
                let (jd, k) = (j / ns, j % ns);
                if ns > 1 {
                    upto!(q < R => {
                        // The first input's twiddle is 1.
                        if q != 0 {
                            let e = (q as u32 * k * step) as usize;
                            // SAFETY: `e < R ns step = nf`: the table holds
                            // `nf` complex values (checked above), each pair
                            // aligned to its size (a device allocation).
                            let w = unsafe { T::unpair(tw.get_vec_unchecked::<T::Pair>(e)) };
                            v[b][q] = v[b][q].mul(if p.inverse { w.conj() } else { w });
                        }
                    });
                }
                dft::<T, R>(&mut v[b], p.inverse);
                let o = jd * ns * r + k;
                upto!(q < R => {
                    let i = at(p.dst, o + q as u32 * ns);
                    // SAFETY: `o + q ns < nf` (Stockham's output positions
                    // are a permutation of `0..nf`), so `i + nf < dst + 2 nf`.
                    unsafe {
                        sh.set_unchecked(i, v[b][q].re);
                        sh.set_unchecked(i + p.nf, v[b][q].im);
                    }
                });
            }
        });
        j0 += nb as u32 * threads;
    }
}

/// One pass of radix `r` ([`has_butterfly`] must hold).
#[inline(always)]
pub(super) fn pass<T: Complex>(sh: &SharedSlice<T>, tw: &DeviceSlice<T>, r: usize, p: Pass) {
    match r {
        2 => pass_r::<T, 2>(sh, tw, p),
        3 => pass_r::<T, 3>(sh, tw, p),
        4 => pass_r::<T, 4>(sh, tw, p),
        5 => pass_r::<T, 5>(sh, tw, p),
        7 => pass_r::<T, 7>(sh, tw, p),
        8 => pass_r::<T, 8>(sh, tw, p),
        9 => pass_r::<T, 9>(sh, tw, p),
        11 => pass_r::<T, 11>(sh, tw, p),
        13 => pass_r::<T, 13>(sh, tw, p),
        _ => ptxlab_device::trap("spectral: no butterfly for this radix"),
    }
}
