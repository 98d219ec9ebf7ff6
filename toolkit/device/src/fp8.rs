//! FP8: the two 8-bit floating-point formats of the tensor cores from
//! sm_89 (Ada) and sm_90 (Hopper) on, [`E4m3`] and [`E5m2`], and their
//! pairs [`E4m3x2`] and [`E5m2x2`] (what one `cvt` instruction converts).
//!
//! | format | bits (sign, exponent, mantissa) | bias | largest finite | smallest normal | smallest subnormal | infinity | NaN codes |
//! |---|---|---|---|---|---|---|---|
//! | [`E4m3`] | 1, 4, 3 | 7 | 448 (`0x7e`) | 2^-6 (`0x08`) | 2^-9 (`0x01`) | none | `0x7f`, `0xff` |
//! | [`E5m2`] | 1, 5, 2 | 15 | 57344 (`0x7b`) | 2^-14 (`0x04`) | 2^-16 (`0x01`) | `0x7c`, `0xfc` | `0x7d..=0x7f`, `0xfd..=0xff` |
//!
//! E4M3 (the "FN" variant of the OCP FP8 specification) gives up infinity
//! and all but one NaN to reach 448 with its 4-bit exponent: the all-ones
//! exponent holds ordinary values except for mantissa `111`. E5M2 is IEEE
//! binary16 with the low 8 bits cut off: the same exponent, so it keeps
//! infinities and NaNs, and widening it to f16 is a shift. E4M3 has the
//! precision (3 mantissa bits: values 1, 1.125, ..., 1.875 between powers
//! of two) for weights and activations, E5M2 the range for gradients.
//!
//! # Conversions, bit-exact with PTX's `cvt`
//! * f32 to FP8 ([`E4m3::from_f32`], [`E4m3x2::from_f32`]) is
//!   `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32`: round to nearest, ties to
//!   even; a value past the largest finite one (infinity included)
//!   *saturates* to it with its sign (`.satfinite`, which PTX requires for
//!   these types: E5M2 never produces infinity from a conversion either);
//!   every NaN, whatever its sign and payload, becomes the canonical FP8
//!   NaN `0x7f` in both formats (what an H200 gives: `tests/fp8.rs`
//!   compares every NaN class there); a value too small for the smallest
//!   subnormal rounds to a zero of its sign.
//! * FP8 to f32 ([`E4m3::to_f32`], [`E4m3x2::to_f32`]) is exact: every FP8
//!   value is an f16 value, and the hardware widens through f16
//!   (`cvt.rn.f16x2.{e4m3x2,e5m2x2}`, then `cvt.f32.f16`). A NaN code of
//!   either sign gives the f16 NaN `0x7fff`, which widens to the canonical
//!   f32 NaN `0x7fffffff`.
//! * bf16 ([`E4m3::from_bf16_bits`], [`E4m3::to_bf16_bits`]) goes through
//!   f32: widening bf16 is exact, so the one rounding is the FP8 one; every
//!   FP8 value is a bf16 value, so narrowing back is exact (a NaN gives
//!   the canonical [`CANONICAL_NAN_16`]).
//!
//! On the GPU each conversion is one or two instructions of inline PTX,
//! which `ptxas` accepts from sm_89 on: ptxlab's portable modules target
//! sm_80, so kernels that use them live in the `sm_90a` module with the
//! other Hopper kernels (`kernels_gpu::fp8`). On the host and in the
//! simulator the same functions run a software conversion, bit for bit the
//! hardware's, that is also usable in `const` context
//! ([`E4m3::from_f32_soft`], [`E4m3::to_f32_soft`]).
//!
//! FP8 operands of `wgmma` (`k = 32` per instruction, f32 accumulators) are
//! in [`wgmma`](crate::wgmma): [`wgmma_m64n128k32`](crate::wgmma::wgmma_m64n128k32).
//!
//! ```
//! use ptxlab_device::fp8::{E4m3, E5m2};
//!
//! assert_eq!(E4m3::from_f32(1.0).to_bits(), 0x38);
//! assert_eq!(E4m3::from_f32(1e9), E4m3::MAX); // saturates to 448
//! assert_eq!(E4m3::MAX.to_f32(), 448.0);
//! assert_eq!(E5m2::from_f32(f32::INFINITY).to_f32(), 57344.0);
//! // 1.0625 lies halfway between 1 and 1.125: ties go to the even code (1).
//! assert_eq!(E4m3::from_f32(1.0625).to_f32(), 1.0);
//! assert!(E4m3::from_f32(f32::NAN).is_nan());
//! ```

use crate::mma::{CANONICAL_NAN_16, f16_from_f32};

/// The bits of one FP8 format, for the shared software conversions.
#[derive(Clone, Copy)]
struct Format {
    /// Mantissa bits.
    man: u32,
    /// Exponent bias.
    bias: i32,
    /// The largest finite value's code (positive).
    max: u8,
    /// Whether the all-ones exponent with a zero mantissa is infinity.
    inf: bool,
}

const E4M3: Format = Format {
    man: 3,
    bias: 7,
    max: 0x7e,
    inf: false,
};
const E5M2: Format = Format {
    man: 2,
    bias: 15,
    max: 0x7b,
    inf: true,
};

/// The canonical NaN of both formats: what every f32 NaN converts to (E4M3's
/// positive NaN, E5M2's positive NaN of the largest payload).
const NAN_CODE: u8 = 0x7f;
/// The f32 that every FP8 NaN widens to: the canonical NaN.
const NAN_F32_BITS: u32 = 0x7fff_ffff;

/// `base` plus one when the dropped `bits`-bit remainder `rem` is more than
/// half, or exactly half and `base` is odd: round to nearest even.
const fn round_nearest_even(base: u32, rem: u32, bits: u32) -> u32 {
    let half = 1 << (bits - 1);
    base + (rem > half || (rem == half && base & 1 == 1)) as u32
}

/// f32 to FP8, `cvt.rn.satfinite`: nearest even, saturating; every NaN
/// to the canonical `0x7f`.
const fn encode(x: f32, f: Format) -> u8 {
    let b = x.to_bits();
    let a = b & 0x7fff_ffff;
    let sign = ((b >> 24) & 0x80) as u8;
    if a > 0x7f80_0000 {
        return NAN_CODE;
    }
    let exp = (a >> 23) as i32 - 127;
    let mant = a & 0x007f_ffff;
    let emin = 1 - f.bias;
    let drop = 23 - f.man;
    let code = if exp >= emin {
        // Normal (infinity too: its huge exponent saturates below). A carry
        // out of the mantissa moves into the exponent, as it should.
        let base = (((exp + f.bias) as u32) << f.man) | (mant >> drop);
        round_nearest_even(base, mant & ((1 << drop) - 1), drop)
    } else {
        // Subnormal: the value is `m 2^(exp - 23)` with the implicit bit,
        // and a subnormal code counts units of `2^(emin - man)`.
        let shift = drop as i32 + emin - exp;
        if shift >= 26 {
            // Under a quarter of the smallest subnormal (f32 subnormals
            // included): zero.
            0
        } else {
            let m = mant | 0x0080_0000;
            let shift = shift as u32;
            round_nearest_even(m >> shift, m & ((1 << shift) - 1), shift)
        }
    };
    let code = if code > f.max as u32 {
        f.max
    } else {
        code as u8
    };
    sign | code
}

/// Whether `c` is a NaN code of format `f`.
const fn is_nan_code(c: u8, f: Format) -> bool {
    let m = c & 0x7f;
    if f.inf { m > 0x7c } else { m == 0x7f }
}

/// The exact f32 value of FP8 code `c` (a NaN code gives the canonical f32
/// NaN, what `cvt.f32.f16` makes of the f16 NaN that `cvt.rn.f16x2`
/// produces).
const fn decode(c: u8, f: Format) -> f32 {
    if is_nan_code(c, f) {
        return f32::from_bits(NAN_F32_BITS);
    }
    let sign = ((c & 0x80) as u32) << 24;
    let e = ((c & 0x7f) >> f.man) as i32;
    let m = (c as u32) & ((1 << f.man) - 1);
    let bits = if f.inf && e == 31 {
        sign | 0x7f80_0000
    } else if e != 0 {
        sign | (((e - f.bias + 127) as u32) << 23) | (m << (23 - f.man))
    } else if m == 0 {
        sign
    } else {
        // Subnormal `m 2^(emin - man)`: normalise around m's leading one at
        // bit `p`, which becomes the implicit bit.
        let p = 31 - m.leading_zeros();
        let e = p as i32 + 1 - f.bias - f.man as i32;
        sign | (((e + 127) as u32) << 23) | ((m ^ (1 << p)) << (23 - p))
    };
    f32::from_bits(bits)
}

/// An FP8 format as a type parameter: [`E4m3`] or [`E5m2`]. Kernels and
/// the `wgmma` wrappers are generic over it.
pub trait Fp8: Copy + Send + Sync + 'static + crate::mem::DeviceCopy {
    /// `"e4m3"` or `"e5m2"`: the PTX type name.
    const NAME: &'static str;
    /// `true` for E4M3 (selects the instruction's type suffix).
    const IS_E4M3: bool;
    /// The largest finite value.
    const MAX: Self;
    /// The value with code `bits`.
    fn from_bits(bits: u8) -> Self;
    /// The code.
    fn to_bits(self) -> u8;
    /// `x` rounded to nearest even, saturating (`cvt.rn.satfinite`).
    fn from_f32(x: f32) -> Self;
    /// The exact value (NaN for a NaN code).
    fn to_f32(self) -> f32;
    /// Two f32 rounded as [`Fp8::from_f32`] rounds, in one instruction
    /// (the pair type's `from_f32`): the codes of `lo` (bits 0..8) and
    /// `hi` (bits 8..16).
    fn pair_bits(lo: f32, hi: f32) -> u16;
}

macro_rules! fp8_type {
    (
        $(#[$meta:meta])*
        $t:ident, $pair:ident, $fmt:ident, $name:literal,
        min_positive = $minp:literal, one = $one:literal
    ) => {
        $(#[$meta])*
        ///
        /// The derived `==` compares codes: `+0` and `-0` differ, and a NaN
        /// code equals itself. Compare [`to_f32`](Self::to_f32) values for
        /// IEEE equality.
        #[repr(transparent)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $t(u8);

        impl $t {
            /// `+0`.
            pub const ZERO: Self = Self(0);
            /// `1`.
            pub const ONE: Self = Self($one);
            /// The largest finite value (see the module's table).
            pub const MAX: Self = Self($fmt.max);
            /// The most negative finite value, `-MAX`.
            pub const MIN: Self = Self($fmt.max | 0x80);
            /// The smallest positive normal value.
            pub const MIN_POSITIVE: Self = Self($minp);
            /// The smallest positive subnormal value (code `0x01`).
            pub const MIN_POSITIVE_SUBNORMAL: Self = Self(1);
            /// The canonical NaN (`0x7f`): what every f32 NaN converts to.
            pub const NAN: Self = Self(NAN_CODE);

            /// The value with code `bits` (any of the 256 is valid).
            #[inline(always)]
            pub const fn from_bits(bits: u8) -> Self {
                Self(bits)
            }

            /// The code.
            #[inline(always)]
            pub const fn to_bits(self) -> u8 {
                self.0
            }

            /// Whether the code is a NaN.
            #[inline(always)]
            pub const fn is_nan(self) -> bool {
                is_nan_code(self.0, $fmt)
            }

            /// `x` rounded to nearest even, saturating to `±MAX`, a NaN to
            /// the canonical [`Self::NAN`] (see the module docs):
            #[doc = concat!("`cvt.rn.satfinite.", $name, "x2.f32`")]
            /// on the GPU, [`Self::from_f32_soft`] elsewhere.
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub fn from_f32(x: f32) -> Self {
                Self($pair::from_f32(x, x).0 as u8)
            }

            /// The software form of [`Self::from_f32`], bit for bit the
            /// same (what the host and the simulator run).
            pub const fn from_f32_soft(x: f32) -> Self {
                Self(encode(x, $fmt))
            }

            /// The exact value; a NaN code gives the canonical f32 NaN
            /// `0x7fffffff`
            #[doc = concat!("(`cvt.rn.f16x2.", $name, "x2`")]
            /// then `cvt.f32.f16` on the GPU).
            #[inline(always)]
            pub fn to_f32(self) -> f32 {
                $pair::from_bits(self.0 as u16).to_f32().0
            }

            /// The software form of [`Self::to_f32`], bit for bit the same.
            pub const fn to_f32_soft(self) -> f32 {
                decode(self.0, $fmt)
            }

            /// The exact value as IEEE binary16 bits (every FP8 value is an
            /// f16 value; a NaN code gives `0x7fff`): what the hardware's
            /// `cvt.rn.f16x2` produces.
            pub const fn to_f16_bits(self) -> u16 {
                if self.is_nan() {
                    CANONICAL_NAN_16
                } else {
                    f16_from_f32(decode(self.0, $fmt))
                }
            }

            /// bf16 bits (the `u16` of [`Bf16`](crate::mma::Bf16)) rounded
            /// as [`Self::from_f32`] rounds: widening bf16 to f32 is exact,
            /// so this is one rounding of the bf16 value.
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub fn from_bf16_bits(bits: u16) -> Self {
                Self::from_f32(f32::from_bits((bits as u32) << 16))
            }

            /// The exact value as bf16 bits (every FP8 value is a bf16
            /// value); a NaN code gives [`CANONICAL_NAN_16`].
            #[inline(always)]
            pub fn to_bf16_bits(self) -> u16 {
                if self.is_nan() {
                    CANONICAL_NAN_16
                } else {
                    (self.to_f32().to_bits() >> 16) as u16
                }
            }
        }

        impl Fp8 for $t {
            const NAME: &'static str = $name;
            const IS_E4M3: bool = !$fmt.inf;
            const MAX: Self = Self($fmt.max);
            #[inline(always)]
            fn from_bits(bits: u8) -> Self {
                Self(bits)
            }
            #[inline(always)]
            fn to_bits(self) -> u8 {
                self.0
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn from_f32(x: f32) -> Self {
                $t::from_f32(x)
            }
            #[inline(always)]
            fn to_f32(self) -> f32 {
                $t::to_f32(self)
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            fn pair_bits(lo: f32, hi: f32) -> u16 {
                $pair::from_f32(lo, hi).to_bits()
            }
        }

        // SAFETY: `#[repr(transparent)]` around a `u8`: one byte, no
        // padding, every bit pattern a valid value.
        unsafe impl crate::mem::DeviceCopy for $t {}

        /// Two
        #[doc = concat!("[`", stringify!($t), "`]")]
        /// values in one 16-bit register, the unit of PTX's FP8 `cvt`: the
        /// first (`lo`) in bits 0..8, the second (`hi`) in bits 8..16, so an
        /// array of pairs has the memory layout of the array of values.
        #[repr(transparent)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $pair(u16);

        impl $pair {
            /// The pair `(lo, hi)`.
            #[inline(always)]
            pub const fn new(lo: $t, hi: $t) -> Self {
                Self(lo.0 as u16 | (hi.0 as u16) << 8)
            }

            /// The pair whose register holds `bits`.
            #[inline(always)]
            pub const fn from_bits(bits: u16) -> Self {
                Self(bits)
            }

            /// The register's bits.
            #[inline(always)]
            pub const fn to_bits(self) -> u16 {
                self.0
            }

            /// The first value (bits 0..8).
            #[inline(always)]
            pub const fn lo(self) -> $t {
                $t(self.0 as u8)
            }

            /// The second value (bits 8..16).
            #[inline(always)]
            pub const fn hi(self) -> $t {
                $t((self.0 >> 8) as u8)
            }

            /// Two f32 rounded as
            #[doc = concat!("[`", stringify!($t), "::from_f32`]")]
            /// rounds, in one instruction:
            #[doc = concat!("`cvt.rn.satfinite.", $name, "x2.f32 d, hi, lo`")]
            /// (the first source goes to the upper half).
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            pub fn from_f32(lo: f32, hi: f32) -> Self {
                #[cfg(target_arch = "nvptx64")]
                {
                    let r: u16;
                    // SAFETY: a register-only conversion (sm_89+; see the
                    // module docs for where kernels using it are built).
                    unsafe {
                        core::arch::asm!(
                            concat!("cvt.rn.satfinite.", $name, "x2.f32 {r}, {h}, {l};"),
                            r = out(reg16) r,
                            h = in(reg32) hi,
                            l = in(reg32) lo,
                            options(pure, nomem, nostack),
                        );
                    }
                    Self(r)
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    crate::sim::async_wgmma::check_poison(
                        &[lo.to_bits(), hi.to_bits()],
                        concat!(stringify!($pair), "::from_f32 converts"),
                        core::panic::Location::caller(),
                    );
                    Self::new($t::from_f32_soft(lo), $t::from_f32_soft(hi))
                }
            }

            /// Both values, exactly, as `(lo, hi)`:
            #[doc = concat!("`cvt.rn.f16x2.", $name, "x2`")]
            /// and two `cvt.f32.f16`.
            #[inline(always)]
            pub fn to_f32(self) -> (f32, f32) {
                #[cfg(target_arch = "nvptx64")]
                {
                    let (lo, hi): (f32, f32);
                    // SAFETY: register-only conversions (sm_89+); `mov.b32
                    // {l, h}` splits the f16x2 into its low and high halves.
                    unsafe {
                        core::arch::asm!(
                            "{{",
                            ".reg .b32 w;",
                            ".reg .b16 l, h;",
                            concat!("cvt.rn.f16x2.", $name, "x2 w, {p};"),
                            "mov.b32 {{l, h}}, w;",
                            "cvt.f32.f16 {lo}, l;",
                            "cvt.f32.f16 {hi}, h;",
                            "}}",
                            p = in(reg16) self.0,
                            lo = out(reg32) lo,
                            hi = out(reg32) hi,
                            options(pure, nomem, nostack),
                        );
                    }
                    (lo, hi)
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    (self.lo().to_f32_soft(), self.hi().to_f32_soft())
                }
            }
        }

        // SAFETY: `#[repr(transparent)]` around a `u16`: two bytes, no
        // padding, every bit pattern a valid value.
        unsafe impl crate::mem::DeviceCopy for $pair {}
    };
}

fp8_type!(
    /// FP8 E4M3: 1 sign, 4 exponent (bias 7) and 3 mantissa bits; largest
    /// finite value 448, smallest normal 2^-6, smallest subnormal 2^-9; no
    /// infinity, and one NaN per sign (`0x7f`, `0xff`). The tensor cores'
    /// format for weights and activations.
    E4m3, E4m3x2, E4M3, "e4m3", min_positive = 0x08, one = 0x38
);

fp8_type!(
    /// FP8 E5M2: 1 sign, 5 exponent (bias 15) and 2 mantissa bits, the top
    /// byte of an IEEE binary16; largest finite value 57344, smallest
    /// normal 2^-14, smallest subnormal 2^-16; infinities `0x7c` and
    /// `0xfc`, NaNs the codes above them. The tensor cores' format for
    /// gradients (range before precision).
    E5m2, E5m2x2, E5M2, "e5m2", min_positive = 0x04, one = 0x3c
);

impl E5m2 {
    /// `+inf` (code `0x7c`). No conversion from f32 produces it
    /// (`.satfinite`), but a kernel may store it.
    pub const INFINITY: Self = Self(0x7c);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_have_their_documented_values() {
        assert_eq!(E4m3::MAX.to_f32(), 448.0);
        assert_eq!(E4m3::MIN.to_f32(), -448.0);
        assert_eq!(E4m3::MIN_POSITIVE.to_f32(), 2f32.powi(-6));
        assert_eq!(E4m3::MIN_POSITIVE_SUBNORMAL.to_f32(), 2f32.powi(-9));
        assert_eq!(E4m3::ONE.to_f32(), 1.0);
        assert_eq!(E5m2::MAX.to_f32(), 57344.0);
        assert_eq!(E5m2::MIN_POSITIVE.to_f32(), 2f32.powi(-14));
        assert_eq!(E5m2::MIN_POSITIVE_SUBNORMAL.to_f32(), 2f32.powi(-16));
        assert_eq!(E5m2::ONE.to_f32(), 1.0);
        assert_eq!(E5m2::INFINITY.to_f32(), f32::INFINITY);
        assert!(E4m3::NAN.is_nan() && E5m2::NAN.is_nan());
        const { assert!(<E4m3 as Fp8>::IS_E4M3 && !<E5m2 as Fp8>::IS_E4M3) };
    }

    #[test]
    fn e5m2_is_the_top_byte_of_f16() {
        for c in 0..=255u8 {
            let e = E5m2::from_bits(c);
            if !e.is_nan() {
                assert_eq!(e.to_f16_bits(), (c as u16) << 8, "{c:#04x}");
            }
        }
    }

    #[test]
    fn pairs_keep_the_first_value_in_the_low_byte() {
        let p = E4m3x2::from_f32(1.0, -2.0);
        assert_eq!(p.lo(), E4m3::ONE);
        assert_eq!(p.hi().to_f32(), -2.0);
        assert_eq!(p.to_f32(), (1.0, -2.0));
        assert_eq!(p, E4m3x2::new(p.lo(), p.hi()));
        assert_eq!(E5m2x2::from_bits(0x3c7c).to_f32(), (f32::INFINITY, 1.0));
    }

    #[test]
    fn bf16_conversions_round_once_and_widen_exactly() {
        for c in 0..=255u8 {
            let e = E4m3::from_bits(c);
            if !e.is_nan() {
                assert_eq!(E4m3::from_bf16_bits(e.to_bf16_bits()), e, "{c:#04x}");
            }
        }
        // 1 + 2^-4 (a tie in E4M3) is exact in bf16: it goes to the even 1.
        assert_eq!(E4m3::from_bf16_bits(0x3f88), E4m3::ONE);
        assert_eq!(E4m3::NAN.to_bf16_bits(), CANONICAL_NAN_16);
    }
}

/// One FP8 `wgmma` tile on the simulator against an f64 reference.
#[cfg(test)]
mod wgmma_tests {
    use super::*;
    use crate::hopper::{Swizzle, fence_proxy_async_shared};
    use crate::mem::DeviceSliceMut;
    use crate::mma::shared_addr;
    use crate::shared::dynamic_shared;
    use crate::sim::{LaunchSpec, launch};
    use crate::thread::{Dim3, sync_threads, thread_idx_x};
    use crate::wgmma::{
        SmemDesc, acc_coord, wgmma_commit_group, wgmma_fence, wgmma_m64n128k32, wgmma_wait_group,
    };
    use std::vec::Vec;

    const M: usize = 64;
    const N: usize = 128;
    const K: usize = 32;
    /// No-swizzle K-major layout: 8 x 16-byte core matrices, the two
    /// 16-byte halves of `k` `LBO` apart, 8-row groups `SBO` apart.
    const LBO: u32 = 128;
    const SBO: u32 = 256;
    /// `B` (`N` rows of `k`) after `A` (`M` rows).
    const B_AT: u32 = (M as u32 / 8) * SBO;

    /// `D = A B^T` for `A` `M x K` and `B^T` `N x K` (codes of `T`,
    /// row-major), with one `m64n128k32` from operands stored by hand in
    /// the no-swizzle layout; `descriptor_sbo` is the `SBO` the descriptors
    /// claim (a wrong one must give a wrong product).
    fn tile_on_sim<T: Fp8>(a: &[u8], bt: &[u8], descriptor_sbo: u32) -> Vec<f32> {
        let mut out = std::vec![f32::NAN; M * N];
        // SAFETY: `out` outlives the launch; thread `t` writes its own
        // accumulator elements.
        let o = unsafe { DeviceSliceMut::from_raw_parts(out.as_mut_ptr(), out.len()) };
        let spec = LaunchSpec {
            kernel: "wgmma_fp8_test",
            grid: Dim3::x(1),
            block: Dim3::x(128),
            shared_bytes: (B_AT + (N as u32 / 8) * SBO) as usize,
        };
        launch(&spec, || {
            let t = thread_idx_x() as usize;
            // Each thread stores whole words: four codes of one row, `k`
            // contiguous inside a 16-byte chunk.
            let smem = dynamic_shared::<u32>(0, spec.shared_bytes / 4);
            let d = SmemDesc::new(0, LBO, SBO, Swizzle::None);
            for (src, rows, at) in [(a, M, 0), (bt, N, B_AT)] {
                for w in (t..rows * K / 4).step_by(128) {
                    let (r, k) = (w / (K / 4), 4 * (w % (K / 4)));
                    let i = r * K + k;
                    let word = u32::from_le_bytes([src[i], src[i + 1], src[i + 2], src[i + 3]]);
                    let off = at + d.k_major_offset(r as u32, k as u32, 1);
                    smem.set(off as usize / 4, word);
                }
            }
            fence_proxy_async_shared();
            sync_threads();
            let base = shared_addr(smem.as_mut_ptr());
            let da = SmemDesc::new(base, LBO, descriptor_sbo, Swizzle::None);
            let db = SmemDesc::new(base + B_AT, LBO, descriptor_sbo, Swizzle::None);
            let mut acc = [0f32; 64];
            wgmma_fence();
            wgmma_m64n128k32::<T>(&mut acc, da, db, false);
            wgmma_commit_group();
            wgmma_wait_group::<0>();
            for (i, v) in acc.iter().enumerate() {
                let (r, c) = acc_coord(t as u32, i);
                o.set(r * N + c, *v);
            }
        })
        .unwrap();
        out
    }

    fn check<T: Fp8>() {
        // Small values every format holds exactly (halves in [-3.5, 3.5],
        // integers in [-4, 4]), so every sum of products is exact in f32.
        let a: Vec<u8> = (0..M * K)
            .map(|i| T::from_f32(((i * 7 + i / K * 3) % 15) as f32 * 0.5 - 3.5).to_bits())
            .collect();
        let bt: Vec<u8> = (0..N * K)
            .map(|i| T::from_f32(((i * 5 + i / K) % 9) as f32 - 4.0).to_bits())
            .collect();
        let value = |c: u8| T::from_bits(c).to_f32() as f64;
        let mut want = std::vec![0f64; M * N];
        for i in 0..M {
            for j in 0..N {
                want[i * N + j] = (0..K)
                    .map(|p| value(a[i * K + p]) * value(bt[j * K + p]))
                    .sum();
            }
        }
        let got = tile_on_sim::<T>(&a, &bt, SBO);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(*g as f64, *w, "{} ({}, {})", T::NAME, i / N, i % N);
        }
        assert!(want.iter().any(|w| *w != 0.0));
        // The same operands read through a descriptor with the wrong
        // stride between 8-row groups: a different product.
        let wrong = tile_on_sim::<T>(&a, &bt, SBO / 2);
        let diff = wrong
            .iter()
            .zip(&want)
            .filter(|(g, w)| **g as f64 != **w)
            .count();
        assert!(diff > M * N / 2, "{}: only {diff} outputs changed", T::NAME);
    }

    #[test]
    fn one_wgmma_tile_of_each_format_matches_the_f64_product() {
        check::<E4m3>();
        check::<E5m2>();
    }
}
