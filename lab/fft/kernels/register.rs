//! Rung 3: register-resident radix-16 butterflies, one launch per axis.
//!
//! What changed from rung 2: each thread holds [`POINTS`] complex values in
//! registers for the whole of a pass and runs a radix-16 butterfly on them
//! there (a 4 x 4 split: four radix-4 DFTs, twelve constant twiddles, four
//! radix-4 DFTs, so four radix-2 stages with no memory traffic between
//! them). Shared memory is touched only between passes. The first pass
//! loads straight from global memory into registers and the last one stores
//! straight from registers to global memory, so there is no copy-in or
//! copy-out loop and one shared buffer suffices (rung 2 keeps two). A
//! length-4096 transform is three passes (radix 16 three times) and four
//! barriers, against four passes of rung 2. A block takes several lines at
//! once, so short lines still fill a block.
//!
//! The same kernel reads and writes lines of any stride: the rows of a
//! matrix, its columns (a block takes adjacent columns and its threads are
//! mapped column-fastest, so every load and store is row-contiguous: no
//! transpose kernel), and the two launches of a four-step split of a long
//! line (the split's twiddle folded into the first launch's stores, its
//! transpose into the second's: rows read as rows, written as columns).

use super::{C, MAX_RADIX, dft_small, dft4, load, store, twiddle};
use core::ops::Mul;
use ptxlab_device::prelude::*;
use ptxlab_device::unroll;

/// Complex values each thread holds in registers (the largest radix).
pub const POINTS: usize = 16;

/// Shortest line the kernel takes (one radix-16 pass).
pub const REG_MIN_LEN: usize = POINTS;

/// Longest line the kernel takes: 256 threads of [`POINTS`] values.
pub const REG_MAX_LEN: usize = 4096;

/// Most threads per block (the kernel's launch bound: at most 128
/// registers per thread, room for 16 complex f64 values and their
/// addresses).
pub const REG_MAX_THREADS: usize = 512;

/// Complex slots of one line in shared memory: one padding slot after every
/// 32 (so the stride-16 stores of a radix-16 pass land in distinct banks)
/// and one more at the end (so the same position of neighbouring lines
/// lands in neighbouring banks).
pub const fn register_line_slots(n: usize) -> usize {
    n + n / 32 + 1
}

/// Dynamic shared memory of [`fft_register`]: `lines` lines of length `n`,
/// real parts then imaginary parts, elements of `elem_bytes` bytes.
pub const fn register_shared_bytes(n: usize, lines: usize, elem_bytes: usize) -> usize {
    2 * lines * register_line_slots(n) * elem_bytes
}

/// How the lines of one launch of [`fft_register`] (or of rung 4's
/// [`super::coalesced::fft_coalesced`]) sit in memory.
///
/// Line `g` is line `g mod lines_per_mat` of matrix `g / lines_per_mat`;
/// its element `p` is read from complex element
/// `(g / lines_per_mat) mat_stride + (g mod lines_per_mat) in_line_stride
/// + p in_elem_stride` of `src` and written to the same place of `dst` with
/// the `out_` strides.
#[derive(Debug, Clone, Copy, PartialEq, KernelParams)]
#[repr(C)]
pub struct Lines {
    /// `log2` of the line length `n` (`n` from [`REG_MIN_LEN`] to
    /// [`REG_MAX_LEN`]; rung 4: [`super::coalesced::min_len`] to
    /// [`super::coalesced::max_len`]).
    pub log2n: u32,
    /// Lines in all.
    pub lines: u32,
    /// Lines per block (the block has `lines_per_block n / POINTS` threads;
    /// rung 4: `n / super::coalesced::points`, and a power of two).
    pub lines_per_block: u32,
    /// Lines per matrix.
    pub lines_per_mat: u32,
    /// Complex elements between consecutive matrices.
    pub mat_stride: u32,
    /// Complex elements between consecutive lines of the input.
    pub in_line_stride: u32,
    /// Complex elements between consecutive elements of an input line.
    pub in_elem_stride: u32,
    /// Complex elements between consecutive lines of the output.
    pub out_line_stride: u32,
    /// Complex elements between consecutive elements of an output line.
    pub out_elem_stride: u32,
    /// `log2 N` of the four-step twiddle (0: none): output `p` of line `g`
    /// is multiplied by `exp(-+2 pi i ((g mod lines_per_mat) p mod N) / N)`.
    pub four_step_bits: u32,
    /// `log2 S` of the four-step twiddle's two-level table: `S` fine
    /// entries `exp(-2 pi i m / N)` (`m < S`), then `N / S` coarse ones
    /// `exp(-2 pi i m S / N)`.
    pub split_bits: u32,
    /// Map the first pass's threads line-fastest (for inputs whose lines
    /// are columns) instead of element-fastest.
    pub in_lines_fastest: bool,
    /// The same for the last pass and the output.
    pub out_lines_fastest: bool,
    /// Inverse transform (`exp(+2 pi i jk / n)`).
    pub inverse: bool,
}

/// `lines.lines` transforms of length `n = 2^log2n` from `src` to `dst`
/// (laid out as [`Lines`] says), output times `scale`; `tw` is the length-`n`
/// twiddle table, `ftw` the four-step table (read only when
/// `four_step_bits != 0`).
///
/// Passes: `log2n = 4 (p - 1) + b`; the first pass has radix `2^b` (2, 4,
/// 8 or 16), the other `p - 1` radix 16: Stockham's passes of
/// [`super::butterfly`], with up to 15 twiddles per butterfly from `tw`.
///
/// Thread mapping: a block of `L = lines_per_block` lines has `L n /
/// POINTS` threads; thread `t` works on line `l` at rank `u` (`u < n /
/// POINTS`), with `l = t mod L, u = t / L` when the pass's lines are
/// columns (line-fastest: a warp touches `L` neighbouring columns of a few
/// rows) and `u = t mod (n / POINTS), l = t / (n / POINTS)` otherwise. In a
/// radix-`R` pass thread rank `u` does the `POINTS / R` butterflies
/// `j = u + m n / POINTS` (`m < POINTS / R`), whose inputs are the `R`
/// positions `j + q n / R`: in the first pass consecutive ranks read
/// consecutive elements, and in the last (`ns = n / R`) they write them
/// (output position `j + q n / R` as well). Blocks take groups of `L` lines,
/// `gridDim.x` groups apart.
///
/// Shared memory: one buffer, `L` lines of [`register_line_slots`]`(n)`
/// slots, the real parts then the imaginary parts (`f32` pairs would put
/// two threads' values in one bank); position `p` of line `l` is slot
/// `l slots + p + p / 32`. Between passes every thread stores its outputs
/// after a barrier (the previous pass's loads are done) and loads its next
/// inputs after a second one: registers hold the data in between, so one
/// buffer is enough. [`register_shared_bytes`] gives its size.
#[kernel(launch_bounds(512), instances(f32, f64))]
pub fn fft_register<T: Real>(
    src: DeviceSlice<T>,
    dst: DeviceSliceMut<T>,
    tw: DeviceSlice<T>,
    ftw: DeviceSlice<T>,
    lines: Lines,
    scale: T,
) {
    if lines.log2n < REG_MIN_LEN.trailing_zeros() || lines.log2n > REG_MAX_LEN.trailing_zeros() {
        ptxlab_device::trap("fft_register: line length out of range");
    }
    let n = 1usize << lines.log2n;
    let tpl = n / POINTS;
    let per_block = lines.lines_per_block as usize;
    if per_block == 0
        || thread::block_dim_x() as usize != per_block * tpl
        || tw.len() != 2 * n
        || lines.lines_per_mat == 0
    {
        ptxlab_device::trap("fft_register: block shape, line count or twiddle table");
    }
    let slots = register_line_slots(n);
    let sh = Shared {
        re: shared::dynamic_shared::<T>(0, per_block * slots),
        im: shared::dynamic_shared::<T>(per_block * slots * size_of::<T>(), per_block * slots),
        slots,
    };
    let passes = lines.log2n.div_ceil(4);
    let first_radix = 1usize << (lines.log2n - 4 * (passes - 1));
    let ctx = Ctx {
        src: &src,
        dst: &dst,
        tw: &tw,
        ftw: &ftw,
        lines,
        n,
        tpl,
        per_block,
        scale,
        sh,
    };
    let total = lines.lines as usize;
    let tid = thread::thread_idx_x() as usize;
    let mut group = thread::block_idx_x() as usize;
    // Every thread of a block runs the same groups and passes: the barriers
    // inside `pass` are reached by all of them.
    while group * per_block < total {
        let mut ns = 1;
        for p in 0..passes {
            let first = p == 0;
            let last = p + 1 == passes;
            let r = if first { first_radix } else { POINTS };
            let at = At {
                group,
                tid,
                ns,
                first,
                last,
            };
            match r {
                2 => pass::<T, 2>(&ctx, at),
                4 => pass::<T, 4>(&ctx, at),
                8 => pass::<T, 8>(&ctx, at),
                _ => pass::<T, 16>(&ctx, at),
            }
            ns *= r;
        }
        group += thread::grid_dim_x() as usize;
    }
}

/// The block's shared buffer (see [`fft_register`]).
#[derive(Clone, Copy)]
struct Shared<T> {
    re: SharedSlice<T>,
    im: SharedSlice<T>,
    slots: usize,
}

impl<T: Real> Shared<T> {
    #[inline(always)]
    fn slot(&self, l: usize, p: usize) -> usize {
        l * self.slots + p + (p >> 5)
    }
    #[inline(always)]
    fn get(&self, l: usize, p: usize) -> C<T> {
        let s = self.slot(l, p);
        C::new(self.re.get(s), self.im.get(s))
    }
    #[inline(always)]
    fn set(&self, l: usize, p: usize, v: C<T>) {
        let s = self.slot(l, p);
        self.re.set(s, v.re);
        self.im.set(s, v.im);
    }
}

/// What every pass of one launch shares.
struct Ctx<'a, 'b, T> {
    src: &'a DeviceSlice<'b, T>,
    dst: &'a DeviceSliceMut<'b, T>,
    tw: &'a DeviceSlice<'b, T>,
    ftw: &'a DeviceSlice<'b, T>,
    lines: Lines,
    n: usize,
    tpl: usize,
    per_block: usize,
    scale: T,
    sh: Shared<T>,
}

/// Where one pass runs: the block's line group, the thread, the points
/// already combined (`ns`), and whether it reads global memory (`first`)
/// or writes it (`last`).
#[derive(Clone, Copy)]
struct At {
    group: usize,
    tid: usize,
    ns: usize,
    first: bool,
    last: bool,
}

/// One radix-`R` pass of the thread's `POINTS / R` butterflies.
#[inline(always)]
fn pass<T: Real, const R: usize>(c: &Ctx<'_, '_, T>, at: At) {
    let lines = c.lines;
    // A single pass reads and writes with the input's mapping (its
    // registers hold what that mapping loaded).
    let lines_fastest = if at.first {
        lines.in_lines_fastest
    } else if at.last {
        lines.out_lines_fastest
    } else {
        false
    };
    let (l, u) = if lines_fastest {
        (at.tid % c.per_block, at.tid / c.per_block)
    } else {
        (at.tid / c.tpl, at.tid % c.tpl)
    };
    let g = at.group * c.per_block + l;
    let valid = g < lines.lines as usize;
    let (mat, within) = (
        g / lines.lines_per_mat as usize,
        g % lines.lines_per_mat as usize,
    );
    let base = mat * lines.mat_stride as usize;
    let per = c.n / R;
    let mut v = [C::<T>::zero(); POINTS];
    for m in 0..POINTS / R {
        let j = u + m * c.tpl;
        for q in 0..R {
            let p = j + q * per;
            v[m * R + q] = if !at.first {
                c.sh.get(l, p)
            } else if valid {
                let i = base + within * lines.in_line_stride as usize;
                load(c.src, i + p * lines.in_elem_stride as usize)
            } else {
                C::zero()
            };
        }
    }
    for m in 0..POINTS / R {
        let j = u + m * c.tpl;
        let k = j % at.ns;
        if at.ns > 1 {
            let step = c.n / (at.ns * R);
            for q in 1..R {
                v[m * R + q] = v[m * R + q].mul(twiddle(c.tw, q * k * step, lines.inverse));
            }
        }
        dft::<T, R>(&mut v, m * R, lines.inverse);
    }
    if at.last {
        if valid {
            let o = base + within * lines.out_line_stride as usize;
            for m in 0..POINTS / R {
                // The last pass's outputs land on its own input positions.
                let j = u + m * c.tpl;
                for q in 0..R {
                    let p = j + q * per;
                    let mut x = v[m * R + q].scale(c.scale);
                    if lines.four_step_bits != 0 {
                        x = x.mul(four_step(c.ftw, lines, within, p));
                    }
                    store(c.dst, o + p * lines.out_elem_stride as usize, x);
                }
            }
        }
        // The next group's first pass stores into the buffer this pass read.
        sync_threads();
    } else {
        sync_threads();
        for m in 0..POINTS / R {
            let j = u + m * c.tpl;
            let k = j % at.ns;
            let o = (j / at.ns) * at.ns * R + k;
            for q in 0..R {
                c.sh.set(l, o + q * at.ns, v[m * R + q]);
            }
        }
        sync_threads();
    }
}

/// The four-step twiddle `exp(-+2 pi i (a p mod N) / N)` from the two-level
/// table: the product of a fine and a coarse entry, each rounded once from
/// f64.
#[inline(always)]
fn four_step<T: Real>(ftw: &DeviceSlice<T>, lines: Lines, a: usize, p: usize) -> C<T> {
    let e = (a * p) & ((1usize << lines.four_step_bits) - 1);
    let fine = 1usize << lines.split_bits;
    let lo = e & (fine - 1);
    let hi = e >> lines.split_bits;
    twiddle(ftw, lo, lines.inverse).mul(twiddle(ftw, fine + hi, lines.inverse))
}

/// `cos(2 pi e / 16)` and `sin(2 pi e / 16)` for `e < 10` (the exponents
/// `b k1` of the radix-16 butterfly's inner twiddles).
const COS16: [f64; 10] = [
    1.0,
    0.923_879_532_511_286_7,
    core::f64::consts::FRAC_1_SQRT_2,
    0.382_683_432_365_089_8,
    0.0,
    -0.382_683_432_365_089_8,
    -core::f64::consts::FRAC_1_SQRT_2,
    -0.923_879_532_511_286_7,
    -1.0,
    -0.923_879_532_511_286_7,
];
const SIN16: [f64; 10] = [
    0.0,
    0.382_683_432_365_089_8,
    core::f64::consts::FRAC_1_SQRT_2,
    0.923_879_532_511_286_7,
    1.0,
    0.923_879_532_511_286_7,
    core::f64::consts::FRAC_1_SQRT_2,
    0.382_683_432_365_089_8,
    0.0,
    -0.382_683_432_365_089_8,
];

/// The length-`R` DFT of `v[off..off + R]` in place (`R` 2, 4, 8 or 16).
#[inline(always)]
fn dft<T: Real, const R: usize>(v: &mut [C<T>; POINTS], off: usize, inverse: bool) {
    if R == 16 {
        let mut x = [C::<T>::zero(); 16];
        x.copy_from_slice(&v[off..off + 16]);
        v[off..off + 16].copy_from_slice(&dft16(x, inverse));
    } else {
        let mut a = [C::<T>::zero(); MAX_RADIX];
        a[..R].copy_from_slice(&v[off..off + R]);
        dft_small(&mut a, R, inverse);
        v[off..off + R].copy_from_slice(&a[..R]);
    }
}

/// The length-16 DFT of `v` in registers: index `b + 4a` in, `k1 + 4 k2`
/// out; radix-4 DFTs over `a`, the twiddle `w16^(b k1)`, radix-4 DFTs over
/// `b` (four radix-2 stages, twelve constant twiddles).
#[inline(always)]
pub(crate) fn dft16<T: Real>(v: [C<T>; 16], inverse: bool) -> [C<T>; 16] {
    let mut y = [[C::<T>::zero(); 4]; 4];
    unroll!(b in [0, 1, 2, 3] {
        y[b] = dft4(v[b], v[4 + b], v[8 + b], v[12 + b], inverse);
    });
    let sg = if inverse { 1.0 } else { -1.0 };
    unroll!(b in [1, 2, 3] {
        unroll!(k1 in [1, 2, 3] {
            let e = b * k1;
            y[b][k1] = y[b][k1].mul(C::new(T::from_f64(COS16[e]), T::from_f64(sg * SIN16[e])));
        });
    });
    let mut out = [C::<T>::zero(); 16];
    unroll!(k1 in [0, 1, 2, 3] {
        let x = dft4(y[0][k1], y[1][k1], y[2][k1], y[3][k1], inverse);
        unroll!(k2 in [0, 1, 2, 3] {
            out[k1 + 4 * k2] = x[k2];
        });
    });
    out
}
