//! Rung 4: coalesced lines, register passes that fit the register file.
//!
//! The data path is rung 3's: a thread holds [`points`] complex values in
//! registers, runs one radix butterfly on them per pass, and exchanges them
//! through one shared buffer between passes; the first pass reads global
//! memory straight into registers and the last writes straight from them,
//! so a line of up to [`max_len`] values costs one read and one write of
//! global memory. A block takes several lines: rows, tiles of adjacent
//! columns (read and written in place, no transpose kernel), or the rows of
//! a four-step split written as columns.
//!
//! What changed from rung 3, and why it is faster:
//!
//! * **Every thread touches `u + i n / P` and nothing else in global
//!   memory** (`u` its rank, `i < P`, `P` points per thread): Stockham's
//!   first pass reads those positions whatever its radix, and the last pass
//!   writes them. Consecutive ranks touch consecutive elements of a row, and
//!   with the column mapping (lines fastest) the lanes of a warp cover `L`
//!   adjacent columns of `32 / L` rows: the host picks `L` so that a row of
//!   the tile is a whole 32-byte sector (4 columns in f32, 2 in f64), and
//!   every load and store instruction uses every byte of the sectors it
//!   touches. Loads and stores move one complex value per instruction
//!   (`ld.global.v2`).
//! * **The register budget is part of the design.** `P` is 16 in f32 and 8
//!   in f64, the same 32 registers of data, and the kernel's launch bound
//!   (1024 threads) caps ptxas at 64 registers: no spills in either type,
//!   and the four-column f32 tile of a 4096-long column (1024 threads) fits
//!   one block. Rung 3 keeps 16 f64 values (64 registers of data alone)
//!   under a 128-register cap and spills; its 512-thread blocks at 128
//!   registers let one block run per SM, so an SM idled its memory system
//!   while its single block computed.
//! * **Index arithmetic is 32-bit shifts and masks.** Lengths, threads per
//!   line and lines per block are powers of two, each thread's line and
//!   rank are decoded once per line group, and global indices are checked
//!   once at entry against the launch's extent instead of on every access
//!   (rung 3 divides 64-bit integers in every pass and bounds-checks every
//!   load). Each loop recomputes its sixteen offsets from the thread's rank
//!   passed through an opaque register move: hoisted out of the loops, they
//!   would hold sixteen registers each for the whole kernel (that alone
//!   made the first version spill). Every register array is indexed by
//!   constants of unrolled loops, so none of it lives in local memory.
//! * **The first pass has no twiddles** (its `ns` is 1) and its butterflies
//!   read their inputs from the registers the loads filled, whatever the
//!   first radix (`2^b`, the rest of `log2 n` after the radix-`P` passes).
//!
//! The launch description ([`super::register::Lines`]), the twiddle tables
//! and the four-step twiddle's two-level table are rung 3's.

use super::register::{Lines, dft16};
use super::{C, MAX_RADIX, dft_small};
use core::ops::Mul;
use ptxlab_device::mem::{DeviceCopy, F32x2, F64x2};
use ptxlab_device::prelude::*;
use ptxlab_device::unroll;

/// Repeats `$body` for the constants `$i = 0..16` that are below `$bound`
/// (a constant of the instance): every register array the kernel indexes
/// is indexed by such a constant, so it stays in registers whatever LLVM's
/// unrolling heuristics decide (a run-time index would move it to local
/// memory).
macro_rules! upto {
    ($i:ident < $bound:expr => $body:block) => {
        unroll!($i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            if $i < $bound $body
        })
    };
}

/// Most threads per block: the kernel's launch bound, which caps ptxas at
/// 64 registers per thread.
pub const COAL_MAX_THREADS: usize = 1024;

/// Complex values each thread holds for elements of `elem_bytes` bytes:
/// 16 in f32, 8 in f64 (32 registers of data either way).
pub const fn points(elem_bytes: usize) -> usize {
    if elem_bytes <= 4 { 16 } else { 8 }
}

/// Shortest line the kernel takes (one pass of radix [`points`]).
pub const fn min_len(elem_bytes: usize) -> usize {
    points(elem_bytes)
}

/// Longest line the kernel takes: [`COAL_MAX_THREADS`] threads of
/// [`points`] values (16384 in f32, 8192 in f64).
pub const fn max_len(elem_bytes: usize) -> usize {
    COAL_MAX_THREADS * points(elem_bytes)
}

/// `log2` of the run of slots after which a line in shared memory has one
/// padding slot: 32 for 4-byte elements, 16 for 8-byte ones (a bank row of
/// 128 bytes either way), so the stride-`R` stores of the first pass land
/// in distinct banks.
pub const fn pad_bits(elem_bytes: usize) -> u32 {
    if elem_bytes <= 4 { 5 } else { 4 }
}

/// Slots of one line of length `n` in shared memory: one padding slot
/// after every `2^pad_bits` and one more at the end (so the same position
/// of neighbouring lines lands in neighbouring banks).
pub const fn coalesced_line_slots(n: usize, elem_bytes: usize) -> usize {
    n + (n >> pad_bits(elem_bytes)) + 1
}

/// Dynamic shared memory of [`fft_coalesced`]: `lines` lines of length
/// `n`, real parts then imaginary parts, elements of `elem_bytes` bytes.
pub const fn coalesced_shared_bytes(n: usize, lines: usize, elem_bytes: usize) -> usize {
    2 * lines * coalesced_line_slots(n, elem_bytes) * elem_bytes
}

/// Element types of the kernel: one complex value is one aligned 8- or
/// 16-byte group, so it moves in one `ld.global.v2` / `st.global.v2`.
pub trait Complex: Real {
    /// `[re, im]`, aligned to its size.
    type Pair: DeviceCopy;
    /// The group of `v`.
    fn pair(v: C<Self>) -> Self::Pair;
    /// The complex value of a group.
    fn unpair(p: Self::Pair) -> C<Self>;
}

impl Complex for f32 {
    type Pair = F32x2;
    #[inline(always)]
    fn pair(v: C<f32>) -> F32x2 {
        F32x2([v.re, v.im])
    }
    #[inline(always)]
    fn unpair(p: F32x2) -> C<f32> {
        C::new(p.0[0], p.0[1])
    }
}

impl Complex for f64 {
    type Pair = F64x2;
    #[inline(always)]
    fn pair(v: C<f64>) -> F64x2 {
        F64x2([v.re, v.im])
    }
    #[inline(always)]
    fn unpair(p: F64x2) -> C<f64> {
        C::new(p.0[0], p.0[1])
    }
}

/// `lines.lines` transforms of length `n = 2^log2n` from `src` to `dst`
/// (laid out as [`Lines`] says), output times `scale`; `tw` is the length-`n`
/// twiddle table, `ftw` the four-step table (read only when
/// `four_step_bits != 0`). `n` runs from [`min_len`] to [`max_len`].
///
/// Passes: `log2n = b + (p - 1) log2 P` with `1 <= b <= log2 P`; the first
/// pass has radix `2^b`, the other `p - 1` radix `P`, Stockham's passes of
/// [`super::butterfly`] (twiddles from `tw`, none in the first pass).
///
/// Thread mapping: a block of `L = lines_per_block` lines (a power of two)
/// has `L n / P` threads; thread `t` works on line `l` at rank `u < n / P`,
/// `l = t mod L, u = t / L` when the lines it reads (first pass) or writes
/// (later passes) are columns (`in_lines_fastest`, `out_lines_fastest`) and
/// `u = t mod (n / P), l = t / (n / P)` otherwise. Rank `u` loads elements
/// `u + i n / P` (`i < P`) into registers; the first pass's `P / 2^b`
/// butterflies `j = u + m n / P` find their inputs `j + q n / 2^b` among
/// them. A radix-`P` pass has one butterfly per thread, `j = u`; its inputs
/// are `u + q n / P`, and in the last pass (`ns = n / P`) so are its
/// outputs, which the thread stores. Blocks take groups of `L` lines,
/// `gridDim.x` groups apart.
///
/// Shared memory: `L` lines of [`coalesced_line_slots`] slots, the real
/// parts then the imaginary parts (`f32` pairs would put two threads'
/// values in one bank); position `p` of line `l` is slot
/// `l slots + p + p / 2^pad` ([`pad_bits`]: a padding slot after every bank
/// row spreads the strided stores of a pass over the banks). Each exchange is a barrier
/// (the last reads of the buffer are done), the stores of the pass's
/// outputs, a barrier, and the loads of the next pass's inputs.
/// [`coalesced_shared_bytes`] gives its size.
#[kernel(launch_bounds(1024, 1), instances(f32, f64))]
pub fn fft_coalesced<T: Real + Complex>(
    src: DeviceSlice<T>,
    dst: DeviceSliceMut<T>,
    tw: DeviceSlice<T>,
    ftw: DeviceSlice<T>,
    lines: Lines,
    scale: T,
) {
    // `points` is a constant of each instance: one branch survives.
    if points(size_of::<T>()) == 16 {
        run::<T, 16>(&src, &dst, &tw, &ftw, lines, scale)
    } else {
        run::<T, 8>(&src, &dst, &tw, &ftw, lines, scale)
    }
}

/// `x`, through a register move the compiler cannot look through, so the
/// values computed from it are computed where they are used. Without it
/// LLVM hoists each thread's sixteen element offsets (global and shared)
/// out of the line-group and pass loops, and the registers they hold for
/// the whole kernel push the data out to local memory.
#[inline(always)]
fn opaque(x: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let y: u32;
        // SAFETY: a move between registers; no memory is touched. The asm
        // is not `pure`, so it stays in the loop that uses it.
        unsafe {
            core::arch::asm!(
                "mov.u32 {y}, {x};",
                x = in(reg32) x,
                y = out(reg32) y,
                options(nomem, nostack, preserves_flags)
            );
        }
        y
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x
    }
}

/// A thread's place in its block: line `l` of the group, rank `u`.
#[derive(Clone, Copy)]
struct Rank {
    l: u32,
    u: u32,
}

impl Rank {
    #[inline(always)]
    fn new(tid: u32, lines_fastest: bool, lpb: u32, ltpl: u32) -> Self {
        if lines_fastest {
            Rank {
                l: tid & ((1 << lpb) - 1),
                u: tid >> lpb,
            }
        } else {
            Rank {
                l: tid >> ltpl,
                u: tid & ((1 << ltpl) - 1),
            }
        }
    }
}

/// Where line `l` of group `group` starts (complex elements), its index
/// within its matrix, and whether it exists.
#[derive(Clone, Copy)]
struct Line {
    base: u32,
    within: u32,
    valid: bool,
}

impl Line {
    #[inline(always)]
    fn new(lines: &Lines, group: u32, l: u32, line_stride: u32) -> Self {
        let g = group * lines.lines_per_block + l;
        if g >= lines.lines {
            return Line {
                base: 0,
                within: 0,
                valid: false,
            };
        }
        let mat = g / lines.lines_per_mat;
        let within = g - mat * lines.lines_per_mat;
        Line {
            base: mat * lines.mat_stride + within * line_stride,
            within,
            valid: true,
        }
    }
}

/// The block's shared buffer (see [`fft_coalesced`]).
#[derive(Clone, Copy)]
struct Shared<T> {
    re: SharedSlice<T>,
    im: SharedSlice<T>,
    slots: u32,
    pad: u32,
}

impl<T: Real> Shared<T> {
    #[inline(always)]
    fn slot(&self, l: u32, p: u32) -> usize {
        (l * self.slots + p + (p >> self.pad)) as usize
    }
    /// Position `p` of line `l`; `l < L`, `p < n`.
    #[inline(always)]
    fn get(&self, l: u32, p: u32) -> C<T> {
        let s = self.slot(l, p);
        // SAFETY: `l < L` and `p < n` (every caller's indices are ranks and
        // positions of the block's own lines), so `s < L slots`, the length
        // of both views.
        unsafe { C::new(self.re.get_unchecked(s), self.im.get_unchecked(s)) }
    }
    /// Writes position `p` of line `l`; `l < L`, `p < n`.
    #[inline(always)]
    fn set(&self, l: u32, p: u32, v: C<T>) {
        let s = self.slot(l, p);
        // SAFETY: as in `get`.
        unsafe {
            self.re.set_unchecked(s, v.re);
            self.im.set_unchecked(s, v.im);
        }
    }
}

/// The extent of one launch: `log2` of the line length, of the threads per
/// line, of the lines per block, and the direction.
#[derive(Clone, Copy)]
struct Geom {
    log2n: u32,
    ltpl: u32,
    inverse: bool,
}

/// The largest complex index `base + p elem_stride` of any line, plus one
/// (in u64: the check must not wrap).
#[inline(always)]
fn extent(lines: &Lines, line_stride: u32, elem_stride: u32) -> u64 {
    let per_mat = lines.lines_per_mat as u64;
    let mats = (lines.lines as u64).div_ceil(per_mat);
    let n = 1u64 << lines.log2n;
    (mats - 1) * lines.mat_stride as u64
        + (per_mat.min(lines.lines as u64) - 1) * line_stride as u64
        + (n - 1) * elem_stride as u64
        + 1
}

#[inline(always)]
fn run<T: Real + Complex, const P: usize>(
    src: &DeviceSlice<T>,
    dst: &DeviceSliceMut<T>,
    tw: &DeviceSlice<T>,
    ftw: &DeviceSlice<T>,
    lines: Lines,
    scale: T,
) {
    let lp = P.trailing_zeros();
    let log2n = lines.log2n;
    if log2n < lp || log2n > (COAL_MAX_THREADS * P).trailing_zeros() {
        ptxlab_device::trap("fft_coalesced: line length out of range");
    }
    let ltpl = log2n - lp;
    let per_block = lines.lines_per_block;
    if !per_block.is_power_of_two()
        || thread::block_dim_x() != per_block << ltpl
        || tw.len() != 2 << log2n
        || lines.lines_per_mat == 0
        || lines.lines == 0
    {
        ptxlab_device::trap("fft_coalesced: block shape, line count or twiddle table");
    }
    // Every global index below is `base + p stride` of a valid line, so
    // these checks bound all of them.
    if 2 * extent(&lines, lines.in_line_stride, lines.in_elem_stride) > src.len() as u64
        || 2 * extent(&lines, lines.out_line_stride, lines.out_elem_stride) > dst.len() as u64
    {
        ptxlab_device::trap("fft_coalesced: a line reaches past its buffer");
    }
    let fs = lines.four_step_bits;
    if fs > 30 {
        ptxlab_device::trap("fft_coalesced: four-step length above 2^30");
    }
    if fs != 0
        && (lines.split_bits > fs
            || (ftw.len() as u64)
                < 2 * ((1u64 << lines.split_bits) + (1u64 << (fs - lines.split_bits))))
    {
        ptxlab_device::trap("fft_coalesced: four-step table too short");
    }
    let lpb = per_block.trailing_zeros();
    let slots = coalesced_line_slots(1usize << log2n, size_of::<T>());
    let len = per_block as usize * slots;
    let sh = Shared {
        re: shared::dynamic_shared::<T>(0, len),
        im: shared::dynamic_shared::<T>(len * size_of::<T>(), len),
        slots: slots as u32,
        pad: pad_bits(size_of::<T>()),
    };
    let g = Geom {
        log2n,
        ltpl,
        inverse: lines.inverse,
    };
    let passes = log2n.div_ceil(lp);
    let b0 = log2n - lp * (passes - 1);
    let tid = thread::thread_idx_x();
    let rin = Rank::new(tid, lines.in_lines_fastest, lpb, ltpl);
    // One pass reads and writes with the input's mapping (its registers
    // hold what that mapping loaded); later passes use the output's.
    let rout = if passes == 1 {
        rin
    } else {
        Rank::new(tid, lines.out_lines_fastest, lpb, ltpl)
    };
    let groups = lines.lines.div_ceil(per_block);
    let mut group = thread::block_idx_x();
    // Every thread of a block runs the same groups and passes: the barriers
    // of the exchanges are reached by all of them.
    while group < groups {
        let li = Line::new(&lines, group, rin.l, lines.in_line_stride);
        let mut v = [C::<T>::zero(); P];
        if li.valid {
            let u = opaque(rin.u);
            upto!(i < P => {
                let p = u + ((i as u32) << ltpl);
                let at = li.base + p * lines.in_elem_stride;
                // SAFETY: `at` is an element of a valid line, below the
                // extent checked against `src` at entry; device allocations
                // are aligned to the pair's 8 or 16 bytes.
                v[i] = T::unpair(unsafe { src.get_vec_unchecked::<T::Pair>(at as usize) });
            });
        }
        match b0 {
            1 => first::<T, P, 2>(&mut v, g.inverse),
            2 => first::<T, P, 4>(&mut v, g.inverse),
            3 => first::<T, P, 8>(&mut v, g.inverse),
            _ => first::<T, P, 16>(&mut v, g.inverse),
        }
        if passes > 1 {
            // The first pass's outputs (ns = 1) through shared memory.
            sync_threads();
            match b0 {
                1 => put::<T, P, 2>(&sh, rin, &v, 0, g),
                2 => put::<T, P, 4>(&sh, rin, &v, 0, g),
                3 => put::<T, P, 8>(&sh, rin, &v, 0, g),
                _ => put::<T, P, 16>(&sh, rin, &v, 0, g),
            }
            sync_threads();
            let mut lns = b0;
            for s in 1..passes {
                let u = opaque(rout.u);
                upto!(q < P => {
                    v[q] = sh.get(rout.l, u + ((q as u32) << ltpl));
                });
                middle::<T, P>(&mut v, tw, rout.u, lns, g);
                if s + 1 < passes {
                    sync_threads();
                    put::<T, P, P>(&sh, rout, &v, lns, g);
                    sync_threads();
                }
                lns += lp;
            }
        }
        let lo = Line::new(&lines, group, rout.l, lines.out_line_stride);
        if lo.valid {
            let u = opaque(rout.u);
            upto!(i < P => {
                let p = u + ((i as u32) << ltpl);
                let mut y = v[i].scale(scale);
                if fs != 0 {
                    y = y.mul(four_step::<T>(ftw, &lines, lo.within, p));
                }
                let at = lo.base + p * lines.out_elem_stride;
                // SAFETY: as for the loads, against `dst`'s extent.
                unsafe { dst.set_vec_unchecked::<T::Pair>(at as usize, T::pair(y)) };
            });
        }
        group += thread::grid_dim_x();
    }
}

/// The length-`R` DFT of `a` in place (`R` 2, 4, 8 or 16).
#[inline(always)]
fn dft_r<T: Real, const R: usize>(a: &mut [C<T>; R], inverse: bool) {
    if R == 16 {
        let mut x = [C::<T>::zero(); 16];
        upto!(q < R => {
            x[q] = a[q];
        });
        let y = dft16(x, inverse);
        upto!(q < R => {
            a[q] = y[q];
        });
    } else {
        // `R <= MAX_RADIX` here: the indices stop at 7.
        let mut b = [C::<T>::zero(); MAX_RADIX];
        unroll!(q in [0, 1, 2, 3, 4, 5, 6, 7] {
            if q < R {
                b[q] = a[q];
            }
        });
        dft_small(&mut b, R, inverse);
        unroll!(q in [0, 1, 2, 3, 4, 5, 6, 7] {
            if q < R {
                a[q] = b[q];
            }
        });
    }
}

/// The first pass (`ns = 1`, no twiddles): the `P / R` butterflies
/// `j = u + m n / P` take their inputs `v[m + q P / R]` (the loads put
/// element `u + i n / P` in `v[i]`) and leave output `q` of butterfly `m`
/// in `v[m R + q]`.
#[inline(always)]
fn first<T: Real, const P: usize, const R: usize>(v: &mut [C<T>; P], inverse: bool) {
    if R > P {
        ptxlab_device::trap("fft_coalesced: first radix above the points per thread");
    }
    let per = P / R;
    let mut out = [C::<T>::zero(); P];
    upto!(m < per => {
        let mut a = [C::<T>::zero(); R];
        upto!(q < R => {
            a[q] = v[m + q * per];
        });
        dft_r::<T, R>(&mut a, inverse);
        upto!(q < R => {
            out[m * R + q] = a[q];
        });
    });
    *v = out;
}

/// A radix-`P` pass after `2^lns` points are combined: butterfly `j = u`,
/// inputs `v[q]` (position `u + q n / P`), times the twiddles
/// `w^(q k)`, `k = u mod 2^lns`, `w = exp(-+2 pi i / (2^lns P))`, then the
/// DFT; output `q` stays in `v[q]`.
#[inline(always)]
fn middle<T: Real + Complex, const P: usize>(
    v: &mut [C<T>; P],
    tw: &DeviceSlice<T>,
    u: u32,
    lns: u32,
    g: Geom,
) {
    let k = u & ((1 << lns) - 1);
    // n / (2^lns P): the table's step for w.
    let sbits = g.log2n - lns - P.trailing_zeros();
    upto!(q < P => {
        if q != 0 {
            // `q k 2^sbits < P 2^lns n / (2^lns P) = n`: inside the table.
            let e = ((q as u32) * k) << sbits;
            v[q] = v[q].mul(table::<T>(tw, e, g.inverse));
        }
    });
    dft_r::<T, P>(v, g.inverse);
}

/// Stores the outputs of a radix-`R` pass after `2^lns` combined points:
/// butterfly `m` (`j = u + m n / P`) writes output `q` (`v[m R + q]`) to
/// position `o + q 2^lns`, `o = (j >> lns) 2^lns R + j mod 2^lns`.
#[inline(always)]
fn put<T: Real, const P: usize, const R: usize>(
    sh: &Shared<T>,
    r: Rank,
    v: &[C<T>; P],
    lns: u32,
    g: Geom,
) {
    let lr = R.trailing_zeros();
    let u = opaque(r.u);
    upto!(m < P / R => {
        let j = u + ((m as u32) << g.ltpl);
        let o = ((j >> lns) << (lns + lr)) + (j & ((1 << lns) - 1));
        upto!(q < R => {
            sh.set(r.l, o + ((q as u32) << lns), v[m * R + q]);
        });
    });
}

/// Entry `e < n` of the interleaved table `tw` (`exp(-2 pi i e / n)`),
/// conjugated for an inverse transform.
#[inline(always)]
fn table<T: Real + Complex>(tw: &DeviceSlice<T>, e: u32, inverse: bool) -> C<T> {
    // SAFETY: every caller's `e` is below the table's length in complex
    // values (checked at entry: `tw` holds `n` of them, the four-step table
    // its fine and coarse parts); device allocations are aligned to the
    // pair.
    let w = T::unpair(unsafe { tw.get_vec_unchecked::<T::Pair>(e as usize) });
    if inverse { w.conj() } else { w }
}

/// The four-step twiddle `exp(-+2 pi i (a p mod N) / N)` from the two-level
/// table: the product of a fine and a coarse entry, each rounded once from
/// f64.
#[inline(always)]
fn four_step<T: Real + Complex>(ftw: &DeviceSlice<T>, lines: &Lines, a: u32, p: u32) -> C<T> {
    let e = a.wrapping_mul(p) & ((1u32 << lines.four_step_bits) - 1);
    let fine = 1u32 << lines.split_bits;
    let lo = e & (fine - 1);
    let hi = e >> lines.split_bits;
    table(ftw, lo, lines.inverse).mul(table(ftw, fine + hi, lines.inverse))
}
