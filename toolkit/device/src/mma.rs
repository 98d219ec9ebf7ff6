//! Tensor cores, one warp at a time (sm_80 and newer): `mma.sync`,
//! `ldmatrix`, and the conversions that feed them.
//!
//! A warp-level matrix multiply-accumulate is one instruction executed by
//! all 32 lanes of a warp together: each lane holds a few elements of the
//! operands (its *fragments*) in registers, and the tensor core computes
//! `D = A B + C` for the whole tile. Which lane holds which element is fixed
//! by the PTX ISA; the fragment types below name those layouts, and their
//! `coord` functions are the single source of truth that the kernels, the
//! simulator and the tests share.
//!
//! | item | PTX | PTX ISA section (9.0) |
//! |---|---|---|
//! | [`mma_m16n8k16`] | `mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32` | 9.7.14.5.14 "mma"; fragments 9.7.14.5.8 "Matrix Fragments for mma.m16n8k16 with floating point type" |
//! | [`mma_m16n8k8_tf32`] | `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32` | 9.7.14.5.14; fragments 9.7.14.5.7 "Matrix Fragments for mma.m16n8k8" |
//! | [`ldmatrix_x1`], [`ldmatrix_x2`], [`ldmatrix_x4`] (and `_trans`) | `ldmatrix.sync.aligned.m8n8.x{1,2,4}{,.trans}.shared.b16` | 9.7.14.5.15 "ldmatrix" |
//! | [`pack_rn`] | `cvt.rn.{bf16x2,f16x2}.f32` | 9.7.9.21 "cvt" |
//! | [`tf32_rna`] | `cvt.rna.tf32.f32` | 9.7.9.21 "cvt" |
//!
//! Notation (as in the ISA): `gid = lane / 4` (the *group*), `tig = lane % 4`
//! (the thread in the group).
//!
//! # Rounding, emulated bit-exactly in the simulator
//! * 16-bit inputs are stored as their bits (`u16`); [`Half16::from_f32`]
//!   rounds to nearest even (`cvt.rn`), the same on the host, the simulator
//!   and the GPU. Products of two BF16 or two FP16 values are exact in f32.
//! * TF32 operands are f32 bit patterns of which the tensor core reads the
//!   top 19 bits (sign, 8 exponent, 10 mantissa): the low 13 bits are
//!   ignored, which the simulator reproduces by clearing them
//!   ([`tf32_trunc`]). [`tf32_rna`] is `cvt.rna.tf32.f32` (nearest, ties
//!   away from zero), what a kernel uses to round on purpose.
//! * The simulator accumulates `C + sum(a b)` in f64 and rounds once to f32;
//!   the hardware's internal order differs in the last bits, so tests
//!   compare against an f64 reference with a tolerance.

use crate::mem::U32x4;
use crate::shared::SharedSlice;

/// A 16-bit floating-point input type of the tensor cores, stored as its
/// bits (`u16`): [`Bf16`] or [`F16`]. Kernels are generic over it through
/// `#[inline(always)]` bodies, with one `#[kernel]` per type.
pub trait Half16: Copy + Send + Sync + 'static {
    /// `true` for BF16 (selects the instruction's type suffix).
    const IS_BF16: bool;
    /// `"bf16"` or `"f16"`.
    const NAME: &'static str;
    /// `x` rounded to nearest even (`cvt.rn`), as bits.
    fn from_f32(x: f32) -> u16;
    /// The exact f32 value of `bits`.
    fn to_f32(bits: u16) -> f32;
}

/// bfloat16: 8 exponent bits (f32's range), 7 mantissa bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bf16;
/// IEEE binary16: 5 exponent bits, 10 mantissa bits (largest 65504).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct F16;

impl Half16 for Bf16 {
    const IS_BF16: bool = true;
    const NAME: &'static str = "bf16";
    #[inline(always)]
    fn from_f32(x: f32) -> u16 {
        bf16_from_f32(x)
    }
    #[inline(always)]
    fn to_f32(bits: u16) -> f32 {
        f32::from_bits((bits as u32) << 16)
    }
}

impl Half16 for F16 {
    const IS_BF16: bool = false;
    const NAME: &'static str = "f16";
    #[inline(always)]
    fn from_f32(x: f32) -> u16 {
        f16_from_f32(x)
    }
    #[inline(always)]
    fn to_f32(bits: u16) -> f32 {
        f16_to_f32(bits)
    }
}

/// The canonical NaN that `cvt` returns for a NaN input (both 16-bit types).
pub const CANONICAL_NAN_16: u16 = 0x7fff;

/// f32 to bfloat16 bits, round to nearest even (`cvt.rn.bf16.f32`).
pub const fn bf16_from_f32(x: f32) -> u16 {
    let b = x.to_bits();
    if b & 0x7fff_ffff > 0x7f80_0000 {
        return CANONICAL_NAN_16;
    }
    // Adding 0x7fff plus the lowest kept bit rounds the 16 dropped bits to
    // nearest, ties to even; a carry moves into the exponent (up to inf).
    ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

/// f32 to IEEE binary16 bits, round to nearest even (`cvt.rn.f16.f32`),
/// with subnormals, overflow to infinity and the canonical NaN.
pub const fn f16_from_f32(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let a = b & 0x7fff_ffff;
    if a > 0x7f80_0000 {
        return CANONICAL_NAN_16;
    }
    // 65520 = 65504 + half an ulp: ties to even go up to infinity.
    if a >= 0x477f_f000 {
        return sign | 0x7c00;
    }
    let exp = (a >> 23) as i32 - 127;
    let mant = a & 0x007f_ffff;
    if exp >= -14 {
        // Normal: keep 10 of 23 mantissa bits, round on the other 13; a
        // carry out of the mantissa increments the exponent, as it should.
        let base = (((exp + 15) as u32) << 10) | (mant >> 13);
        let rem = mant & 0x1fff;
        let up = rem > 0x1000 || (rem == 0x1000 && base & 1 == 1);
        return sign | (base + up as u32) as u16;
    }
    if exp < -25 {
        return sign;
    }
    // Subnormal: the value is m * 2^(exp - 23) with the implicit bit, and a
    // subnormal f16 counts units of 2^-24, so shift right by -1 - exp.
    let m = mant | 0x0080_0000;
    let shift = (-1 - exp) as u32;
    let base = m >> shift;
    let rem = m & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    let up = rem > half || (rem == half && base & 1 == 1);
    sign | (base + up as u32) as u16
}

/// The exact f32 value of IEEE binary16 bits.
pub const fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let mant = (h & 0x03ff) as u32;
    let bits = if exp == 0x1f {
        sign | 0x7f80_0000 | (mant << 13)
    } else if exp != 0 {
        sign | ((exp + 112) << 23) | (mant << 13)
    } else if mant == 0 {
        sign
    } else {
        // Subnormal: normalise. `mant < 2^10`, so the leading one is at
        // bit `9 - lz` and the value is mant * 2^-24.
        let lz = mant.leading_zeros() - 22;
        let e = 113 - lz - 1;
        sign | (e << 23) | ((mant << (lz + 1)) & 0x03ff) << 13
    };
    f32::from_bits(bits)
}

/// `cvt.rna.tf32.f32`: `x` rounded to TF32 (10 mantissa bits), nearest with
/// ties away from zero; the result is an f32 whose low 13 bits are zero.
#[inline(always)]
pub fn tf32_rna(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: a register-only conversion.
        unsafe {
            core::arch::asm!("cvt.rna.tf32.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x,
                options(pure, nomem, nostack));
        }
        f32::from_bits(r)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        tf32_rna_bits(x)
    }
}

/// The software form of [`tf32_rna`] (what the simulator and the host use).
pub const fn tf32_rna_bits(x: f32) -> f32 {
    let b = x.to_bits();
    if b & 0x7fff_ffff > 0x7f80_0000 {
        return x;
    }
    // Adding half an ulp to the magnitude bits rounds ties away from zero;
    // a carry moves into the exponent (up to inf).
    f32::from_bits((b + 0x1000) & 0xffff_e000)
}

/// What a TF32 tensor-core operand contributes: the f32 with its low 13
/// mantissa bits cleared (the hardware ignores them).
pub const fn tf32_trunc(x: f32) -> f32 {
    f32::from_bits(x.to_bits() & 0xffff_e000)
}

/// Splits `x` for 3xTF32: `(big, small)` with `big = rna(x)` and
/// `small = rna(x - big)`, so `big + small` carries about 21 bits of `x`.
#[inline(always)]
pub fn tf32_split(x: f32) -> (f32, f32) {
    let big = tf32_rna(x);
    (big, tf32_rna(x - big))
}

/// Two f32 rounded to nearest even into one register of two 16-bit values:
/// `lo` in bits 0..16, `hi` in bits 16..32 (`cvt.rn.bf16x2.f32` or
/// `cvt.rn.f16x2.f32`).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn pack_rn<T: Half16>(lo: f32, hi: f32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: register-only conversions; `cvt.rn.*x2.f32 d, a, b` puts
        // `a` in the upper half and `b` in the lower half.
        unsafe {
            if T::IS_BF16 {
                core::arch::asm!("cvt.rn.bf16x2.f32 {r}, {h}, {l};", r = out(reg32) r,
                    h = in(reg32) hi, l = in(reg32) lo, options(pure, nomem, nostack));
            } else {
                core::arch::asm!("cvt.rn.f16x2.f32 {r}, {h}, {l};", r = out(reg32) r,
                    h = in(reg32) hi, l = in(reg32) lo, options(pure, nomem, nostack));
            }
        }
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::sim::async_wgmma::check_poison(
            &[lo.to_bits(), hi.to_bits()],
            "pack_rn converts",
            core::panic::Location::caller(),
        );
        T::from_f32(lo) as u32 | ((T::from_f32(hi) as u32) << 16)
    }
}

/// Lane `lane`'s group (`lane / 4`) and thread in group (`lane % 4`).
#[inline(always)]
pub const fn gid_tig(lane: u32) -> (usize, usize) {
    ((lane / 4) as usize, (lane % 4) as usize)
}

/// Operand `A` of `mma.m16n8k16` (16 x 16, BF16 or FP16): four registers
/// of two values each, element `2r` in the low half of register `r`.
///
/// Element `i` (0..8) of lane `(gid, tig)` is `A[row][col]` with
/// `row = gid + 8 * ((i / 2) % 2)` and `col = 2 tig + i % 2 + 8 * (i / 4)`:
/// registers 0 and 1 cover columns 0..8 (rows `gid`, `gid + 8`), 2 and 3
/// columns 8..16.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FragA16(pub [u32; 4]);

impl FragA16 {
    /// `(row, col)` of element `i` (0..8) held by `lane`.
    pub const fn coord(lane: u32, i: usize) -> (usize, usize) {
        let (gid, tig) = gid_tig(lane);
        (gid + 8 * ((i / 2) % 2), 2 * tig + i % 2 + 8 * (i / 4))
    }
}

/// Operand `B` of `mma.m16n8k16` (16 x 8, "col": each lane holds values of
/// one column): two registers of two values each.
///
/// Element `i` (0..4) of lane `(gid, tig)` is `B[row][col]` with
/// `row = 2 tig + i % 2 + 8 * (i / 2)`, `col = gid`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FragB16(pub [u32; 2]);

impl FragB16 {
    /// `(row, col)` of element `i` (0..4) held by `lane`.
    pub const fn coord(lane: u32, i: usize) -> (usize, usize) {
        let (gid, tig) = gid_tig(lane);
        (2 * tig + i % 2 + 8 * (i / 2), gid)
    }
}

/// Operand `A` of `mma.m16n8k8` with TF32 (16 x 8): four registers, one
/// value each. Element `i` of lane `(gid, tig)` is `A[gid + 8 (i % 2)][tig + 4 (i / 2)]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FragATf32(pub [u32; 4]);

impl FragATf32 {
    /// `(row, col)` of element `i` (0..4) held by `lane`.
    pub const fn coord(lane: u32, i: usize) -> (usize, usize) {
        let (gid, tig) = gid_tig(lane);
        (gid + 8 * (i % 2), tig + 4 * (i / 2))
    }
}

/// Operand `B` of `mma.m16n8k8` with TF32 (8 x 8): two registers. Element
/// `i` of lane `(gid, tig)` is `B[tig + 4 i][gid]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FragBTf32(pub [u32; 2]);

impl FragBTf32 {
    /// `(row, col)` of element `i` (0..2) held by `lane`.
    pub const fn coord(lane: u32, i: usize) -> (usize, usize) {
        let (gid, tig) = gid_tig(lane);
        (tig + 4 * i, gid)
    }
}

/// Accumulator `C`/`D` of `mma.m16n8k*` (16 x 8, f32): element `i` (0..4) of
/// lane `(gid, tig)` is `C[gid + 8 (i / 2)][2 tig + i % 2]`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FragC(pub [f32; 4]);

impl FragC {
    /// `(row, col)` of element `i` (0..4) held by `lane`.
    pub const fn coord(lane: u32, i: usize) -> (usize, usize) {
        let (gid, tig) = gid_tig(lane);
        (gid + 8 * (i / 2), 2 * tig + i % 2)
    }
}

/// `D = A B + D` on a 16 x 8 x 16 tile, BF16 or FP16 inputs, f32
/// accumulators: `mma.sync.aligned.m16n8k16.row.col.f32.T.T.f32`. Every
/// lane of the warp must call it (`.sync.aligned`).
#[inline(always)]
#[track_caller]
pub fn mma_m16n8k16<T: Half16>(d: &mut FragC, a: &FragA16, b: &FragB16) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a register-only warp instruction; the kernel's contract (all
    // 32 lanes execute it, converged) is the caller's, as in CUDA.
    unsafe {
        if T::IS_BF16 {
            core::arch::asm!(
                "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {{{d0}, {d1}, {d2}, {d3}}}, \
                 {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{d0}, {d1}, {d2}, {d3}}};",
                d0 = inout(reg32) d.0[0], d1 = inout(reg32) d.0[1],
                d2 = inout(reg32) d.0[2], d3 = inout(reg32) d.0[3],
                a0 = in(reg32) a.0[0], a1 = in(reg32) a.0[1],
                a2 = in(reg32) a.0[2], a3 = in(reg32) a.0[3],
                b0 = in(reg32) b.0[0], b1 = in(reg32) b.0[1],
                options(pure, nomem, nostack),
            );
        } else {
            core::arch::asm!(
                "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {{{d0}, {d1}, {d2}, {d3}}}, \
                 {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{d0}, {d1}, {d2}, {d3}}};",
                d0 = inout(reg32) d.0[0], d1 = inout(reg32) d.0[1],
                d2 = inout(reg32) d.0[2], d3 = inout(reg32) d.0[3],
                a0 = in(reg32) a.0[0], a1 = in(reg32) a.0[1],
                a2 = in(reg32) a.0[2], a3 = in(reg32) a.0[3],
                b0 = in(reg32) b.0[0], b1 = in(reg32) b.0[1],
                options(pure, nomem, nostack),
            );
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    sim::mma_m16n8k16::<T>(d, a, b);
}

/// `D = A B + D` on a 16 x 8 x 8 tile, TF32 inputs (f32 bit patterns of
/// which the top 19 bits count), f32 accumulators:
/// `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`.
#[inline(always)]
#[track_caller]
pub fn mma_m16n8k8_tf32(d: &mut FragC, a: &FragATf32, b: &FragBTf32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: as for `mma_m16n8k16`.
    unsafe {
        core::arch::asm!(
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {{{d0}, {d1}, {d2}, {d3}}}, \
             {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{d0}, {d1}, {d2}, {d3}}};",
            d0 = inout(reg32) d.0[0], d1 = inout(reg32) d.0[1],
            d2 = inout(reg32) d.0[2], d3 = inout(reg32) d.0[3],
            a0 = in(reg32) a.0[0], a1 = in(reg32) a.0[1],
            a2 = in(reg32) a.0[2], a3 = in(reg32) a.0[3],
            b0 = in(reg32) b.0[0], b1 = in(reg32) b.0[1],
            options(pure, nomem, nostack),
        );
    }
    #[cfg(not(target_arch = "nvptx64"))]
    sim::mma_m16n8k8_tf32(d, a, b);
}

/// The 32-bit shared-memory address (the `.shared` window) of `p`, a
/// pointer into the block's shared memory. In the simulator: the byte
/// offset from the start of the block's dynamic shared memory.
#[inline(always)]
#[track_caller]
pub fn shared_addr<T>(p: *const T) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u64;
        // SAFETY: address arithmetic only (`cvta.to.shared`); `pure` lets
        // LLVM share one conversion of a base between many uses.
        unsafe {
            core::arch::asm!("cvta.to.shared.u64 {r}, {p};", r = out(reg64) r, p = in(reg64) p,
                options(pure, nomem, nostack));
        }
        r as u32
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let base = crate::sim::shared_base(0, 0, 1) as usize;
        (p as usize).wrapping_sub(base) as u32
    }
}

macro_rules! ldmatrix_fn {
    ($(#[$doc:meta])* $name:ident, $n:literal, $trans:literal, $ptx:literal, [$($r:ident),+]) => {
        $(#[$doc])*
        ///
        /// Lane `l` names the 16-byte row `chunk` of `view` it supplies
        /// (lanes `8j..8j+8` give the rows of matrix `j`; the addresses of
        /// lanes past the last matrix are ignored). Every lane of the warp
        /// must call it. The rows must be 16-byte aligned, which `U32x4`
        /// elements are.
        #[inline(always)]
        #[track_caller]
        pub fn $name(view: SharedSlice<U32x4>, chunk: usize) -> [u32; $n] {
            #[cfg(target_arch = "nvptx64")]
            {
                let addr = shared_addr(view.as_mut_ptr()) + 16 * chunk as u32;
                $(let $r: u32;)+
                // SAFETY: a warp-wide shared-memory read; the caller's rows
                // lie inside `view` (checked in the simulator).
                unsafe {
                    core::arch::asm!($ptx, $($r = out(reg32) $r,)+ a = in(reg32) addr,
                        options(readonly, nostack));
                }
                [$($r),+]
            }
            #[cfg(not(target_arch = "nvptx64"))]
            {
                sim::ldmatrix::<$n>(view, chunk, $trans)
            }
        }
    };
}

ldmatrix_fn!(
    /// `ldmatrix.sync.aligned.m8n8.x1.shared.b16`: one 8x8 matrix of 16-bit
    /// values; lane `(gid, tig)` receives row `gid`, columns `2 tig`, `2 tig + 1`.
    ldmatrix_x1, 1, false, "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {{{r0}}}, [{a}];", [r0]
);
ldmatrix_fn!(
    /// `ldmatrix.sync.aligned.m8n8.x2.shared.b16`: two 8x8 matrices, one register each.
    ldmatrix_x2, 2, false, "ldmatrix.sync.aligned.m8n8.x2.shared.b16 {{{r0}, {r1}}}, [{a}];",
    [r0, r1]
);
ldmatrix_fn!(
    /// `ldmatrix.sync.aligned.m8n8.x4.shared.b16`: four 8x8 matrices; with a
    /// row-major 16x16 tile (lane `l` naming row `l % 16`, column half
    /// `l / 16`) the result is the [`FragA16`] of that tile.
    ldmatrix_x4, 4, false,
    "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{r0}, {r1}, {r2}, {r3}}}, [{a}];",
    [r0, r1, r2, r3]
);
ldmatrix_fn!(
    /// `ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16`: one matrix,
    /// transposed: lane `(gid, tig)` receives rows `2 tig`, `2 tig + 1` of
    /// column `gid`.
    ldmatrix_x1_trans, 1, true, "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {{{r0}}}, [{a}];",
    [r0]
);
ldmatrix_fn!(
    /// `ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16`: with the two 8x8
    /// halves of a 16 x 8 `B` stored `k`-major (lane `l` naming row `l % 16`)
    /// the result is the [`FragB16`] of that tile.
    ldmatrix_x2_trans, 2, true,
    "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {{{r0}, {r1}}}, [{a}];", [r0, r1]
);
ldmatrix_fn!(
    /// `ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16`: four transposed
    /// matrices (two [`FragB16`] of neighbouring 8-column blocks).
    ldmatrix_x4_trans, 4, true,
    "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {{{r0}, {r1}, {r2}, {r3}}}, [{a}];",
    [r0, r1, r2, r3]
);

/// The simulator's tensor cores: the fragments of all 32 lanes are gathered
/// with [`warp_exchange`](crate::sim::warp_exchange), placed into dense
/// tiles by the same `coord` functions the kernels use, and each lane
/// computes its own accumulators.
#[cfg(not(target_arch = "nvptx64"))]
mod sim {
    use super::*;
    use crate::sim::warp_exchange;
    use crate::warp::FULL_MASK;

    /// Every lane's registers `r` (as many as the array holds), gathered.
    #[track_caller]
    fn gather<const R: usize>(r: &[u32; R]) -> [[u32; R]; 32] {
        let mut out = [[0u32; R]; 32];
        let mut i = 0;
        while i < R {
            let lo = r[i] as u64;
            let hi = if i + 1 < R {
                (r[i + 1] as u64) << 32
            } else {
                0
            };
            let (all, _) = warp_exchange(FULL_MASK, lo | hi);
            for (lane, v) in all.iter().enumerate() {
                out[lane][i] = *v as u32;
                if i + 1 < R {
                    out[lane][i + 1] = (*v >> 32) as u32;
                }
            }
            i += 2;
        }
        out
    }

    fn lane() -> u32 {
        crate::warp::lane_id()
    }

    fn half(r: u32, i: usize) -> u16 {
        (r >> (16 * (i % 2))) as u16
    }

    #[track_caller]
    pub(super) fn mma_m16n8k16<T: Half16>(d: &mut FragC, a: &FragA16, b: &FragB16) {
        let ga = gather(&a.0);
        let gb = gather(&b.0);
        let mut ma = [[0f64; 16]; 16];
        let mut mb = [[0f64; 8]; 16];
        for l in 0..32u32 {
            for i in 0..8 {
                let (r, c) = FragA16::coord(l, i);
                ma[r][c] = T::to_f32(half(ga[l as usize][i / 2], i)) as f64;
            }
            for i in 0..4 {
                let (r, c) = FragB16::coord(l, i);
                mb[r][c] = T::to_f32(half(gb[l as usize][i / 2], i)) as f64;
            }
        }
        let me = lane();
        for i in 0..4 {
            let (r, c) = FragC::coord(me, i);
            let mut s = d.0[i] as f64;
            for k in 0..16 {
                s += ma[r][k] * mb[k][c];
            }
            d.0[i] = s as f32;
        }
    }

    #[track_caller]
    pub(super) fn mma_m16n8k8_tf32(d: &mut FragC, a: &FragATf32, b: &FragBTf32) {
        let ga = gather(&a.0);
        let gb = gather(&b.0);
        let mut ma = [[0f64; 8]; 16];
        let mut mb = [[0f64; 8]; 8];
        let tf = |bits: u32| tf32_trunc(f32::from_bits(bits)) as f64;
        for l in 0..32u32 {
            for (i, v) in ga[l as usize].iter().enumerate() {
                let (r, c) = FragATf32::coord(l, i);
                ma[r][c] = tf(*v);
            }
            for (i, v) in gb[l as usize].iter().enumerate() {
                let (r, c) = FragBTf32::coord(l, i);
                mb[r][c] = tf(*v);
            }
        }
        let me = lane();
        for i in 0..4 {
            let (r, c) = FragC::coord(me, i);
            let mut s = d.0[i] as f64;
            for k in 0..8 {
                s += ma[r][k] * mb[k][c];
            }
            d.0[i] = s as f32;
        }
    }

    /// `ldmatrix` with `N` matrices: lanes `0..8N` read their rows (checked
    /// accesses of the view, aligned by construction), the rows are
    /// exchanged, and each lane picks its elements.
    #[track_caller]
    pub(super) fn ldmatrix<const N: usize>(
        view: SharedSlice<U32x4>,
        chunk: usize,
        trans: bool,
    ) -> [u32; N] {
        let me = lane();
        let row = if (me as usize) < 8 * N {
            view.get(chunk).0
        } else {
            [0; 4]
        };
        let rows = gather(&row);
        let (gid, tig) = gid_tig(me);
        // Element (r, c) of matrix j: 16-bit half c % 2 of word c / 2 of row 8j + r.
        let elem = |j: usize, r: usize, c: usize| half(rows[8 * j + r][c / 2], c);
        let mut out = [0u32; N];
        for (j, o) in out.iter_mut().enumerate() {
            let (lo, hi) = if trans {
                (elem(j, 2 * tig, gid), elem(j, 2 * tig + 1, gid))
            } else {
                (elem(j, gid, 2 * tig), elem(j, gid, 2 * tig + 1))
            };
            *o = lo as u32 | ((hi as u32) << 16);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::{DeviceSlice, DeviceSliceMut};
    use crate::shared::dynamic_shared;
    use crate::sim::{LaunchSpec, launch};
    use crate::thread::{Dim3, sync_threads};
    use crate::warp::lane_id;
    use std::vec::Vec;

    /// Runs `f` on one warp with `shared` bytes of shared memory.
    fn one_warp(shared: usize, f: impl Fn() + Sync) {
        let spec = LaunchSpec {
            kernel: "mma_test",
            grid: Dim3::x(1),
            block: Dim3::x(32),
            shared_bytes: shared,
        };
        launch(&spec, f).unwrap();
    }

    /// Small integers times powers of two: every product and sum is exact.
    fn tile(rows: usize, cols: usize, seed: usize) -> Vec<f32> {
        (0..rows * cols)
            .map(|i| ((i * 7 + seed * 13) % 17) as f32 / 4.0 - 2.0)
            .collect()
    }

    fn matmul_ref(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
        let mut c = std::vec![0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            }
        }
        c
    }

    /// `D = A B` on one m16n8k16 tile with fragments loaded by `coord`;
    /// `permute` swaps two registers of `A` (a layout bug).
    fn mma16_on_sim<T: Half16>(a: &[f32], b: &[f32], permute: bool) -> Vec<f32> {
        let ah: Vec<u16> = a.iter().map(|v| T::from_f32(*v)).collect();
        let bh: Vec<u16> = b.iter().map(|v| T::from_f32(*v)).collect();
        let mut d = std::vec![f32::NAN; 128];
        // SAFETY: the vectors outlive the launch; each lane writes its own
        // four elements of `d`.
        let (av, bv, dv) = unsafe {
            (
                DeviceSlice::from_raw_parts(ah.as_ptr(), ah.len()),
                DeviceSlice::from_raw_parts(bh.as_ptr(), bh.len()),
                DeviceSliceMut::from_raw_parts(d.as_mut_ptr(), d.len()),
            )
        };
        one_warp(0, || {
            let l = lane_id();
            let mut fa = FragA16::default();
            for i in 0..8 {
                let (r, c) = FragA16::coord(l, i);
                fa.0[i / 2] |= (av.get(r * 16 + c) as u32) << (16 * (i % 2));
            }
            if permute {
                fa.0.swap(1, 2);
            }
            let mut fb = FragB16::default();
            for i in 0..4 {
                let (r, c) = FragB16::coord(l, i);
                fb.0[i / 2] |= (bv.get(r * 8 + c) as u32) << (16 * (i % 2));
            }
            let mut acc = FragC::default();
            mma_m16n8k16::<T>(&mut acc, &fa, &fb);
            for i in 0..4 {
                let (r, c) = FragC::coord(l, i);
                dv.set(r * 8 + c, acc.0[i]);
            }
        });
        d
    }

    #[test]
    fn mma_m16n8k16_computes_the_product_and_a_permuted_fragment_does_not() {
        let (a, b) = (tile(16, 16, 1), tile(16, 8, 2));
        let want = matmul_ref(&a, &b, 16, 8, 16);
        assert_eq!(mma16_on_sim::<Bf16>(&a, &b, false), want);
        assert_eq!(mma16_on_sim::<F16>(&a, &b, false), want);
        let wrong = mma16_on_sim::<Bf16>(&a, &b, true);
        let diff = wrong.iter().zip(&want).filter(|(x, y)| x != y).count();
        assert!(
            diff > 64,
            "a permuted A fragment changed only {diff} of 128 outputs"
        );
    }

    #[test]
    fn mma_tf32_reads_19_bits_of_each_operand() {
        let a = tile(16, 8, 3);
        let mut b = tile(8, 8, 4);
        // Low mantissa bits the tensor core ignores.
        b[0] = f32::from_bits(b[0].to_bits() | 0x0fff);
        let mut d = std::vec![f32::NAN; 128];
        // SAFETY: as in `mma16_on_sim`.
        let (av, bv, dv) = unsafe {
            (
                DeviceSlice::from_raw_parts(a.as_ptr(), a.len()),
                DeviceSlice::from_raw_parts(b.as_ptr(), b.len()),
                DeviceSliceMut::from_raw_parts(d.as_mut_ptr(), d.len()),
            )
        };
        one_warp(0, || {
            let l = lane_id();
            let mut fa = FragATf32::default();
            for i in 0..4 {
                let (r, c) = FragATf32::coord(l, i);
                fa.0[i] = av.get(r * 8 + c).to_bits();
            }
            let mut fb = FragBTf32::default();
            for i in 0..2 {
                let (r, c) = FragBTf32::coord(l, i);
                fb.0[i] = bv.get(r * 8 + c).to_bits();
            }
            let mut acc = FragC([1.0; 4]);
            mma_m16n8k8_tf32(&mut acc, &fa, &fb);
            for i in 0..4 {
                let (r, c) = FragC::coord(l, i);
                dv.set(r * 8 + c, acc.0[i]);
            }
        });
        let bt: Vec<f32> = b.iter().map(|v| tf32_trunc(*v)).collect();
        let want: Vec<f32> = matmul_ref(&a, &bt, 16, 8, 8)
            .iter()
            .map(|v| v + 1.0)
            .collect();
        assert_eq!(d, want);
    }

    #[test]
    #[allow(clippy::needless_range_loop)]
    fn ldmatrix_gives_the_isa_fragments() {
        // A 16x16 tile of distinct 16-bit values, row-major in shared
        // memory (2 chunks of 16 bytes per row), and its fragments three
        // ways: by coordinates, by ldmatrix.x4, and (the tile read as k x n
        // B of two 8-column blocks) by ldmatrix.x4.trans.
        let vals: Vec<u16> = (0..256u16).map(|v| v.wrapping_mul(251)).collect();
        let mut out = std::vec![0u32; 32 * 12];
        // SAFETY: as in `mma16_on_sim`; lane `l` writes `out[12 l..12 l + 12]`.
        let (src, ov) = unsafe {
            (
                DeviceSlice::from_raw_parts(vals.as_ptr(), vals.len()),
                DeviceSliceMut::from_raw_parts(out.as_mut_ptr(), out.len()),
            )
        };
        one_warp(512, || {
            let l = lane_id() as usize;
            let s = dynamic_shared::<u32>(0, 128);
            for w in 0..4 {
                let i = 4 * l + w;
                s.set(i, src.get(2 * i) as u32 | (src.get(2 * i + 1) as u32) << 16);
            }
            sync_threads();
            let chunks = dynamic_shared::<U32x4>(0, 32);
            let a = ldmatrix_x4(chunks, 2 * (l % 16) + l / 16);
            // B blocks: lanes 0-15 name rows k of columns 0..8, lanes 16-31
            // rows k of columns 8..16.
            let b = ldmatrix_x4_trans(chunks, 2 * (l % 16) + l / 16);
            for (j, v) in a.iter().chain(&b).enumerate() {
                ov.set(12 * l + j, *v);
            }
            let x1 = ldmatrix_x1(chunks, 2 * (l % 8));
            let x2t = ldmatrix_x2_trans(chunks, 2 * (l % 16));
            ov.set(12 * l + 8, x1[0]);
            ov.set(12 * l + 9, x2t[0]);
            ov.set(12 * l + 10, x2t[1]);
        });
        let at = |r: usize, c: usize| vals[r * 16 + c] as u32;
        for l in 0..32u32 {
            let o = &out[12 * l as usize..];
            for reg in 0..4 {
                let (r0, c0) = FragA16::coord(l, 2 * reg);
                let (r1, c1) = FragA16::coord(l, 2 * reg + 1);
                assert_eq!(
                    o[reg],
                    at(r0, c0) | at(r1, c1) << 16,
                    "A lane {l} reg {reg}"
                );
            }
            for blk in 0..2 {
                for reg in 0..2 {
                    let (r0, c0) = FragB16::coord(l, 2 * reg);
                    let (r1, c1) = FragB16::coord(l, 2 * reg + 1);
                    let w = at(r0, c0 + 8 * blk) | at(r1, c1 + 8 * blk) << 16;
                    assert_eq!(o[4 + 2 * blk + reg], w, "B lane {l} block {blk} reg {reg}");
                }
            }
            let (gid, tig) = gid_tig(l);
            assert_eq!(o[8], at(gid, 2 * tig) | at(gid, 2 * tig + 1) << 16);
            for reg in 0..2 {
                let (r0, c0) = FragB16::coord(l, 2 * reg);
                let (r1, c1) = FragB16::coord(l, 2 * reg + 1);
                assert_eq!(o[9 + reg], at(r0, c0) | at(r1, c1) << 16);
            }
        }
    }

    #[test]
    fn f16_rounding_matches_the_language() {
        // Every f16 boundary region: the exact values, their midpoints and
        // neighbours, across normals, subnormals and the overflow edge.
        let mut checked = 0;
        for h in 0u16..0x7c00 {
            let v = f16_to_f32(h);
            assert_eq!(v, (v as f16) as f32, "widening of {h:#06x}");
            for x in [
                v,
                f32::from_bits(v.to_bits() + 1),
                f32::from_bits(v.to_bits().wrapping_sub(1)),
                v + (f16_to_f32(h + 1) - v) / 2.0,
            ] {
                for s in [x, -x].into_iter().filter(|s| !s.is_nan()) {
                    assert_eq!(
                        f16_from_f32(s),
                        (s as f16).to_bits(),
                        "{s:e} ({:#010x})",
                        s.to_bits()
                    );
                    checked += 1;
                }
            }
        }
        for x in [
            65504.0f32,
            65519.0,
            65520.0,
            1e10,
            f32::INFINITY,
            5.96e-8,
            2.98e-8,
            1e-30,
        ] {
            assert_eq!(f16_from_f32(x), (x as f16).to_bits(), "{x:e}");
        }
        assert_eq!(f16_from_f32(f32::NAN), CANONICAL_NAN_16);
        assert!(checked > 200_000);
    }

    #[test]
    fn bf16_rounding_is_nearest_even() {
        assert_eq!(bf16_from_f32(1.0), 0x3f80);
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0).
        assert_eq!(bf16_from_f32(1.0 + 1.0 / 256.0), 0x3f80);
        // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up.
        assert_eq!(bf16_from_f32(1.0 + 3.0 / 256.0), 0x3f82);
        assert_eq!(bf16_from_f32(1.0 + 1.0 / 256.0 + 1e-6), 0x3f81);
        assert_eq!(bf16_from_f32(-2.5), 0xc020);
        assert_eq!(bf16_from_f32(f32::MAX), 0x7f80);
        assert_eq!(bf16_from_f32(f32::NAN), CANONICAL_NAN_16);
        // Below the overflow edge (larger values round to inf, as they should).
        for bits in (0u32..0x7f00_0000).step_by(0x3f01) {
            let x = f32::from_bits(bits);
            let r = Bf16::to_f32(bf16_from_f32(x));
            // Within half a bf16 ulp, and exact round trip of bf16 values.
            assert!(
                (r - x).abs() <= x.abs() / 256.0 + f32::MIN_POSITIVE,
                "{x:e} -> {r:e}"
            );
            assert_eq!(bf16_from_f32(r), bf16_from_f32(x));
        }
    }

    #[test]
    fn tf32_rounding_and_split() {
        // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties away (up).
        assert_eq!(tf32_rna_bits(1.0 + 1.0 / 2048.0), 1.0 + 1.0 / 1024.0);
        assert_eq!(tf32_rna_bits(-(1.0 + 1.0 / 2048.0)), -(1.0 + 1.0 / 1024.0));
        assert_eq!(tf32_rna_bits(1.0 + 1.0 / 4096.0), 1.0);
        assert_eq!(
            tf32_trunc(1.0 + 1.0 / 1024.0 + 1.0 / 4096.0),
            1.0 + 1.0 / 1024.0
        );
        let x = core::f32::consts::PI;
        let (big, small) = tf32_split(x);
        assert_eq!(big.to_bits() & 0x1fff, 0);
        assert_eq!(small.to_bits() & 0x1fff, 0);
        // big + small carries about 21 bits: the remainder is below 2^-21 |x|.
        assert!(((big as f64 + small as f64) - x as f64).abs() < x as f64 * 2f64.powi(-21));
        assert!((big as f64 - x as f64).abs() > x as f64 * 2f64.powi(-16));
    }

    #[test]
    fn fragment_layouts_cover_their_tiles_once() {
        let mut a = [[0u8; 16]; 16];
        let mut b = [[0u8; 8]; 16];
        let mut c = [[0u8; 8]; 16];
        let mut at = [[0u8; 8]; 16];
        let mut bt = [[0u8; 8]; 8];
        for l in 0..32 {
            for i in 0..8 {
                let (r, k) = FragA16::coord(l, i);
                a[r][k] += 1;
            }
            for i in 0..4 {
                let (r, k) = FragB16::coord(l, i);
                b[r][k] += 1;
                let (r, k) = FragC::coord(l, i);
                c[r][k] += 1;
                let (r, k) = FragATf32::coord(l, i);
                at[r][k] += 1;
            }
            for i in 0..2 {
                let (r, k) = FragBTf32::coord(l, i);
                bt[r][k] += 1;
            }
        }
        assert!(a.iter().flatten().all(|v| *v == 1));
        assert!(b.iter().flatten().all(|v| *v == 1));
        assert!(c.iter().flatten().all(|v| *v == 1));
        assert!(at.iter().flatten().all(|v| *v == 1));
        assert!(bt.iter().flatten().all(|v| *v == 1));
        // Spot checks against the ISA's figures: lane 5 is (gid 1, tig 1).
        assert_eq!(FragA16::coord(5, 0), (1, 2));
        assert_eq!(FragA16::coord(5, 3), (9, 3));
        assert_eq!(FragA16::coord(5, 4), (1, 10));
        assert_eq!(FragB16::coord(5, 2), (10, 1));
        assert_eq!(FragC::coord(5, 3), (9, 3));
        assert_eq!(FragATf32::coord(5, 3), (9, 5));
        assert_eq!(FragBTf32::coord(5, 1), (5, 1));
    }
}
