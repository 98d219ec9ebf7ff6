//! Precise math in pure Rust, for f32 and f64, on the GPU and on the host
//! alike: `sin`, `cos`, `sincos`, `atan2` and `ln` in this file; `exp`,
//! `exp2`, `exp10`, `exp_m1`, `log2`, `log10`, `ln_1p`, `powf`, `powi`,
//! `cbrt`, `hypot`, `sinh`, `cosh`, `tanh`, `asin`, `acos`, `atan`, `erf`
//! and `erfc` in the submodules (one generic algorithm per function over
//! f32 and f64, each computing in its own type; `docs/book/src/math.md` has the
//! algorithms, the choice of pure Rust over libdevice and the measured
//! errors). Kernels reach them as methods of [`Real`] (`x.exp()`); the
//! typed functions here (`exp_f32`, `powf_f64`, ...) are the same code,
//! callable on the host too, which is how the tests check them.
//!
//! `core` has no transcendental functions and the `libm` crate is not an
//! option on the GPU (its functions keep arrays on the stack: about 600 bytes
//! of local memory per thread). Everything here is straight-line code on
//! registers: a range reduction, two short polynomials and a quadrant swap.
//! The only table is the 1280 bits of 2/pi (20 `u64`, read from global
//! memory) that the huge-argument path needs.
//!
//! # Range reduction
//! `x = k * pi/2 + r`, `|r| <= pi/4`, `k = round(x * 2/pi)`:
//! * f32, `|x| <= F32_CW_MAX` (1e5): Cody-Waite in f32 with a 3-part pi/2
//!   (24 + 24 + 24 bits) and FMA. The first FMA is exact (the result is a
//!   multiple of ulp(pi/2) below 2), the next two round once each.
//! * f64, `|x| <= F64_CW_MAX` (2^20): Cody-Waite in f64 with fdlibm's 3-part
//!   pi/2 (33 + 33 + 33 bits, so `k * part` is exact for `k < 2^20`); the
//!   pi/2 left out is 8.5e-32, i.e. below 1e-25 at `k = 2^20`.
//! * beyond (and f32 beyond 1e5, which is widened to f64 exactly): Payne-Hanek.
//!   `x = m * 2^e` with a 53-bit integer `m`; the 192 bits of 2/pi that can
//!   reach the quadrant and the fraction are multiplied by `m` in integer
//!   arithmetic (u128), the quadrant is read from bits 190-191, the 128-bit
//!   fraction is turned into a double-double and multiplied by pi/2. It is
//!   correct for every finite f64, 1e300 included. It is a cold,
//!   `#[inline(never)]` path so it does not cost registers in the hot loop.
//!
//! # Polynomials
//! On `[-pi/4, pi/4]`: fdlibm's minimax kernels for f64 (degree 13 for sin,
//! 14 for cos), Cephes' for f32 (degree 7 and 8). `atan2` reduces to
//! `atan(t)`, `t = min(|x|,|y|) / max(|x|,|y|)` in `[0, 1]`, then fdlibm's
//! breakpoints 7/16, 11/16, 19/16 and its degree-23 odd polynomial (f64), or
//! Cephes' reduction at tan(pi/8) and degree-9 polynomial (f32).
//!
//! # Error bounds (tested against the host's `std` f64 functions)
//! `tests/lomb.rs` checks, over 200 000+ points each:
//!
//! | function | points tested | stated bound |
//! |---|---|---|
//! | f64 `sin`/`cos` | `|x| <= 4`, `|x| <= 1e6`, log-uniform 1e-300..1e6 and 1e6..1e300 | `|err| <= 2^-51`; `<= 3 ulp` where `|f| >= 2^-10` |
//! | f64 `atan2` | all quadrants, `|x|, |y|` in 1e-30..1e30 and in [-10, 10], IEEE special cases | `<= 3 ulp` |
//! | f32 `sin`/`cos` | `|x| <= 4`, `|x| <= 1e4`, 1e4..1e7, 1e7..1e30 | `|err| <= 2^-23`; `<= 3 ulp` where `|f| >= 2^-10` |
//! | f32 `atan2` | as f64 | `<= 3 ulp` |
//!
//! The errors measured against these bounds are in
//! `docs/book/src/workloads/lomb-scargle.md` ("Precise math in pure Rust").
//!
//! (The absolute form is the one that matters for sums such as Lomb-Scargle's,
//! and it is the only meaningful one next to a zero of sin or cos, where the
//! reduced argument itself cancels.)
//!
//! # The fast-math build
//! [`Trig`] is how generic kernels reach these functions. In the fast-math
//! module (`--features fast-math`) the f32 `sin`, `cos` and `sincos` of
//! [`Trig`] are the SFU approximations (`sin.approx.f32`, [`crate::sfu`]);
//! everything else (f64, `atan2`) stays precise.

// The coefficients are written as published (fdlibm, Cephes), digits beyond
// the type's precision included, so they can be compared with the source.
#![allow(clippy::excessive_precision)]

use crate::real::Real;

pub(crate) mod atrig;
pub(crate) mod erf;
pub(crate) mod exp;
pub(crate) mod fp;
pub(crate) mod log;
pub(crate) mod pow;
pub(crate) mod root;

/// Typed entry points of the generic algorithms: `name_f32`, `name_f64`.
macro_rules! typed {
    ($($(#[$doc:meta])* $f32:ident, $f64:ident => $path:path;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $f32(x: f32) -> f32 {
            $path(x)
        }
        $(#[$doc])*
        #[inline(always)]
        pub fn $f64(x: f64) -> f64 {
            $path(x)
        }
    )*};
}

typed! {
    /// `e^x`: within 1 ulp (`docs/book/src/math.md` has the measured errors).
    exp_f32, exp_f64 => exp::exp;
    /// `2^x`, exact at integers.
    exp2_f32, exp2_f64 => exp::exp2;
    /// `10^x`.
    exp10_f32, exp10_f64 => exp::exp10;
    /// `e^x - 1`, accurate near 0.
    exp_m1_f32, exp_m1_f64 => exp::exp_m1;
    /// `log2 x`, exact at powers of two.
    log2_f32, log2_f64 => log::log2;
    /// `log10 x`.
    log10_f32, log10_f64 => log::log10;
    /// `ln(1 + x)`, accurate near 0.
    ln_1p_f32, ln_1p_f64 => log::ln_1p;
    /// Cube root, `cbrt(-x) = -cbrt(x)`.
    cbrt_f32, cbrt_f64 => root::cbrt;
    /// Hyperbolic sine.
    sinh_f32, sinh_f64 => exp::sinh;
    /// Hyperbolic cosine.
    cosh_f32, cosh_f64 => exp::cosh;
    /// Hyperbolic tangent.
    tanh_f32, tanh_f64 => exp::tanh;
    /// Arcsine, NaN outside `[-1, 1]`.
    asin_f32, asin_f64 => atrig::asin;
    /// Arccosine, NaN outside `[-1, 1]`.
    acos_f32, acos_f64 => atrig::acos;
    /// Arctangent.
    atan_f32, atan_f64 => atrig::atan;
    /// The error function.
    erf_f32, erf_f64 => erf::erf;
    /// The complementary error function `1 - erf x`, relatively accurate in
    /// its right tail.
    erfc_f32, erfc_f64 => erf::erfc;
}

/// `x^y` (IEEE 754 special cases: `powf(x, 0) = 1` and `powf(1, y) = 1`
/// even for NaN, NaN for a negative `x` and a non-integer `y`).
#[inline(always)]
pub fn powf_f32(x: f32, y: f32) -> f32 {
    pow::powf(x, y)
}
/// `x^y` (see [`powf_f32`]).
#[inline(always)]
pub fn powf_f64(x: f64, y: f64) -> f64 {
    pow::powf(x, y)
}
/// `x^n`, within an ulp or so for every `n` (not repeated multiplication).
#[inline(always)]
pub fn powi_f32(x: f32, n: i32) -> f32 {
    pow::powi(x, n)
}
/// `x^n` (see [`powi_f32`]).
#[inline(always)]
pub fn powi_f64(x: f64, n: i32) -> f64 {
    pow::powi(x, n)
}
/// `sqrt(x^2 + y^2)` without undue overflow or underflow.
#[inline(always)]
pub fn hypot_f32(x: f32, y: f32) -> f32 {
    root::hypot(x, y)
}
/// `sqrt(x^2 + y^2)` (see [`hypot_f32`]).
#[inline(always)]
pub fn hypot_f64(x: f64, y: f64) -> f64 {
    root::hypot(x, y)
}

/// Largest `|x|` of the f32 Cody-Waite path.
pub const F32_CW_MAX: f32 = 1.0e5;
/// Largest `|x|` of the f64 Cody-Waite path.
pub const F64_CW_MAX: f64 = 1_048_576.0;

// ---- f64 ------------------------------------------------------------------

const TWO_OVER_PI: f64 = f64::from_bits(0x3FE4_5F30_6DC9_C883);
/// 1.5 * 2^52: adding it rounds a double below 2^51 in magnitude to an integer.
const ROUND_MAGIC: f64 = 6_755_399_441_055_744.0;
const PIO2_1: f64 = f64::from_bits(0x3FF9_21FB_5440_0000);
const PIO2_2: f64 = f64::from_bits(0x3DD0_B461_1A60_0000);
const PIO2_3: f64 = f64::from_bits(0x3BA3_198A_2E00_0000);
const PIO2_HI: f64 = f64::from_bits(0x3FF9_21FB_5444_2D18);
const PIO2_LO: f64 = f64::from_bits(0x3C91_A626_3314_5C07);
const PI_HI: f64 = f64::from_bits(0x4009_21FB_5444_2D18);
const PI_LO: f64 = f64::from_bits(0x3CA1_A626_3314_5C07);

const S1: f64 = -1.666_666_666_666_663_243_48e-01;
const S2: f64 = 8.333_333_333_322_489_461_24e-03;
const S3: f64 = -1.984_126_982_985_794_931_34e-04;
const S4: f64 = 2.755_731_370_707_006_767_89e-06;
const S5: f64 = -2.505_076_025_340_686_341_95e-08;
const S6: f64 = 1.589_690_995_211_550_102_21e-10;
const C1: f64 = 4.166_666_666_666_660_190_37e-02;
const C2: f64 = -1.388_888_888_887_410_957_49e-03;
const C3: f64 = 2.480_158_728_947_672_941_78e-05;
const C4: f64 = -2.755_731_435_139_066_330_35e-07;
const C5: f64 = 2.087_572_321_298_174_827_90e-09;
const C6: f64 = -1.135_964_755_778_819_482_65e-11;

/// Bits 1..1280 of the fraction of 2/pi, most significant first.
static TWO_OVER_PI_BITS: [u64; 20] = [
    0xA2F9_836E_4E44_1529,
    0xFC27_57D1_F534_DDC0,
    0xDB62_9599_3C43_9041,
    0xFE51_63AB_DEBB_C561,
    0xB724_6E3A_424D_D2E0,
    0x0649_2EEA_09D1_921C,
    0xFE1D_EB1C_B129_A73E,
    0xE882_35F5_2EBB_4484,
    0xE99C_7026_B45F_7E41,
    0x3991_D639_8353_39F4,
    0x9C84_5F8B_BDF9_283B,
    0x1FF8_97FF_DE05_980F,
    0xEF2F_118B_5A0A_6D1F,
    0x6D36_7ECF_27CB_09B7,
    0x4F46_3F66_9E5F_EA2D,
    0x7527_BAC7_EBE5_F17B,
    0x3D07_39F7_8A52_92EA,
    0x6BFB_5FB1_1F8D_5D08,
    0x5603_3046_FC7B_6BAB,
    0xF0CF_BC20_9AF4_361D,
];

#[inline(always)]
fn fma64(a: f64, b: f64, c: f64) -> f64 {
    a.mul_add(b, c)
}

/// sin on `[-pi/4, pi/4]` of `x + y` (`y` a small correction, 0 on the fast path).
#[inline(always)]
fn k_sin64(x: f64, y: f64) -> f64 {
    let z = x * x;
    let v = z * x;
    let r = fma64(z, fma64(z, fma64(z, fma64(z, S6, S5), S4), S3), S2);
    x - ((z * (0.5 * y - v * r) - y) - v * S1)
}

/// cos on `[-pi/4, pi/4]` of `x + y`.
#[inline(always)]
fn k_cos64(x: f64, y: f64) -> f64 {
    let z = x * x;
    let r = z * fma64(
        z,
        fma64(z, fma64(z, fma64(z, fma64(z, C6, C5), C4), C3), C2),
        C1,
    );
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    w + (((1.0 - w) - hz) + (z * r - x * y))
}

#[inline(always)]
fn quadrant<T: Real>(q: i32, s: T, c: T) -> (T, T) {
    let (s1, c1) = if q & 1 != 0 { (c, -s) } else { (s, c) };
    if q & 2 != 0 { (-s1, -c1) } else { (s1, c1) }
}

/// 64 bits of the fraction of 2/pi from bit `p + 1` on (bits before the
/// binary point, `p < 0`, are zeros).
#[inline(always)]
fn two_over_pi_bits(p: i32) -> u64 {
    if p < 0 {
        let sh = (-p) as u32;
        if sh >= 64 {
            0
        } else {
            TWO_OVER_PI_BITS[0] >> sh
        }
    } else {
        let w = (p / 64) as usize;
        let sh = (p % 64) as u32;
        let a = if w < 20 { TWO_OVER_PI_BITS[w] } else { 0 };
        if sh == 0 {
            a
        } else {
            let b = if w + 1 < 20 {
                TWO_OVER_PI_BITS[w + 1]
            } else {
                0
            };
            (a << sh) | (b >> (64 - sh))
        }
    }
}

/// Payne-Hanek reduction of a finite `x`: `(q, r_hi, r_lo)` with
/// `x = (4n + q) pi/2 + r_hi + r_lo`, `|r| <= pi/4`.
#[inline(never)]
#[cold]
pub fn rem_pio2_large(x: f64) -> (i32, f64, f64) {
    let bits = x.to_bits();
    let neg = bits >> 63 != 0;
    let bexp = ((bits >> 52) & 0x7ff) as i32;
    let (m, e) = if bexp == 0 {
        (bits & ((1u64 << 52) - 1), -1074)
    } else {
        ((bits & ((1u64 << 52) - 1)) | (1u64 << 52), bexp - 1075)
    };
    // x * 2/pi mod 4 = m * W * 2^-190 mod 4, W = bits s+1 .. s+192 of 2/pi.
    let s = e - 2;
    let w0 = two_over_pi_bits(s);
    let w1 = two_over_pi_bits(s + 64);
    let w2 = two_over_pi_bits(s + 128);
    let p2 = m as u128 * w2 as u128;
    let p1 = m as u128 * w1 as u128;
    let p0 = m.wrapping_mul(w0);
    let lo = p2 as u64;
    let t = (p2 >> 64) + (p1 as u64 as u128);
    let mid = t as u64;
    let hi = p0
        .wrapping_add((p1 >> 64) as u64)
        .wrapping_add((t >> 64) as u64);
    let mut q = (hi >> 62) as i32;
    let fh = (hi << 2) | (mid >> 62);
    let fl = (mid << 2) | (lo >> 62);
    let mut f = ((fh as u128) << 64) | fl as u128;
    let mut fneg = false;
    if fh >> 63 != 0 {
        // fraction >= 1/2: round the quadrant up, fraction - 1 (negative)
        q = (q + 1) & 3;
        f = (!f).wrapping_add(1);
        fneg = true;
    }
    let (mut rh, mut rl) = if f == 0 {
        (0.0, 0.0)
    } else {
        let lz = f.leading_zeros() as i32;
        let fnorm = f << lz;
        let a = (fnorm >> 75) as u64;
        let b = ((fnorm >> 22) as u64) & ((1u64 << 53) - 1);
        let scale = f64::from_bits(((-53 - lz + 1023) as u64) << 52);
        let h = a as f64 * scale;
        let l = b as f64 * (scale * f64::from_bits(0x3CA0_0000_0000_0000)); // 2^-53
        let ph = h * PIO2_HI;
        let pe = fma64(h, PIO2_HI, -ph);
        let pl = pe + fma64(h, PIO2_LO, l * PIO2_HI);
        let sh = ph + pl;
        (sh, pl - (sh - ph))
    };
    if fneg {
        rh = -rh;
        rl = -rl;
    }
    if neg {
        q = (4 - q) & 3;
        rh = -rh;
        rl = -rl;
    }
    (q, rh, rl)
}

/// The constants of the f64 fast path of `sincos` (2/pi, the three parts of
/// pi/2, fdlibm's sin and cos coefficients), as [`sincos_f64_with`] takes
/// them.
///
/// Why a loop should hoist them ([`Trig::trig_consts`]): written as
/// literals, each 64-bit constant of a `DFMA` is rebuilt by ptxas (sm_90)
/// with two `UMOV`s at every use, 26 extra instructions per `sincos`, which
/// makes an f64 loop around it issue-bound (about 75 issue slots per pair
/// against 50 cycles of the FP64 pipe). Loaded once from a table before the
/// loop ([`sincos64_consts`]), they sit in 32 registers instead.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub struct SinCos64Consts(pub [f64; 16]);

/// The literal table ([`sincos_f64`] uses it; constant-folded).
const SINCOS64: SinCos64Consts = SinCos64Consts([
    TWO_OVER_PI,
    PIO2_1,
    PIO2_2,
    PIO2_3,
    S1,
    S2,
    S3,
    S4,
    S5,
    S6,
    C1,
    C2,
    C3,
    C4,
    C5,
    C6,
]);

/// The same table in memory, for [`sincos64_consts`].
static SINCOS64_MEM: SinCos64Consts = SINCOS64;

/// [`SinCos64Consts`] as values LLVM and ptxas cannot fold back into
/// literals: on the GPU the table's address goes through an empty `mov`
/// (inline PTX), so the 16 values are loaded from global memory; call it
/// before a loop. On the host it is the literal table.
#[inline(always)]
pub fn sincos64_consts() -> SinCos64Consts {
    #[cfg(target_arch = "nvptx64")]
    {
        let p: *const SinCos64Consts = &SINCOS64_MEM;
        let q: *const SinCos64Consts;
        // SAFETY: a register move; no memory access, no side effect.
        unsafe {
            core::arch::asm!("mov.b64 {q}, {p};", q = out(reg64) q, p = in(reg64) p,
                options(pure, nomem, nostack, preserves_flags));
        }
        // SAFETY: `q` is the address of the static table: valid, aligned,
        // never written.
        unsafe { core::ptr::read(q) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        SINCOS64_MEM
    }
}

/// sin on `[-pi/4, pi/4]` (no correction term: fdlibm's `iy = 0` form);
/// `k` is [`SinCos64Consts`].
#[inline(always)]
fn k_sin64_0(x: f64, k: &[f64; 16]) -> f64 {
    let z = x * x;
    let v = z * x;
    let r = fma64(
        z,
        fma64(z, fma64(z, fma64(z, k[9], k[8]), k[7]), k[6]),
        k[5],
    );
    fma64(v, fma64(z, r, k[4]), x)
}

/// cos on `[-pi/4, pi/4]` (no correction term): `1 + z (-1/2 + z P(z))`
/// as two FMAs after the Horner chain. fdlibm splits `1 - z/2` to keep its
/// low bits (a 1-ulp kernel); here the inner `-1/2 + z P` is rounded once
/// (at most 2^-55 absolute, times `z <= 0.62`) and the outer FMA once, so
/// the result (in `[0.70, 1]`) stays within 1 ulp plus the polynomial's own
/// 2^-58, and the kernel costs 7 double operations instead of 11.
#[inline(always)]
fn k_cos64_0(x: f64, k: &[f64; 16]) -> f64 {
    let z = x * x;
    let p = fma64(
        z,
        fma64(
            z,
            fma64(z, fma64(z, fma64(z, k[15], k[14]), k[13]), k[12]),
            k[11],
        ),
        k[10],
    );
    fma64(z, fma64(z, p, -0.5), 1.0)
}

/// [`quadrant`] for f64 with the sign changes as XORs of the sign bit
/// (integer `LOP3`s on the high word) instead of negations (which ptxas
/// emits as `DADD`s on the FP64 pipe).
#[inline(always)]
fn quadrant64(q: i32, s: f64, c: f64) -> (f64, f64) {
    let (s1, c1) = if q & 1 != 0 { (c, s) } else { (s, c) };
    // sin changes sign in quadrants 2 and 3; cos in quadrants 1 and 2.
    let ssign = ((q as u64 >> 1) & 1) << 63;
    let csign = (((q ^ (q >> 1)) as u64) & 1) << 63;
    (
        f64::from_bits(s1.to_bits() ^ ssign),
        f64::from_bits(c1.to_bits() ^ csign),
    )
}

/// The huge-argument path of [`sincos_f64`]: Payne-Hanek, then the kernels
/// with the reduced argument's low part as a correction.
#[inline(never)]
#[cold]
fn sincos_f64_large(x: f64) -> (f64, f64) {
    let (q, r, rl) = rem_pio2_large(x);
    quadrant(q, k_sin64(r, rl), k_cos64(r, rl))
}

/// `(sin x, cos x)` in f64. NaN for NaN and infinities.
#[inline(always)]
pub fn sincos_f64(x: f64) -> (f64, f64) {
    sincos_f64_with(x, &SINCOS64)
}

/// The Cody-Waite path of [`sincos_f64`] (no UB for any `x`; meaningless
/// beyond `F64_CW_MAX`).
#[inline(always)]
fn cw64(x: f64, c: &[f64; 16]) -> (f64, f64) {
    // Round to nearest with the 1.5 * 2^52 trick: `t` has no bits below
    // 2^0, so `t - MAGIC` is `round(x 2/pi)` exactly and the low word of
    // `t` holds it as a two's complement integer (`2^51` vanishes mod
    // 2^32). Two double operations instead of `cvt.rni` and `cvt.rzi`,
    // which run on the quarter-rate conversion unit.
    let t = fma64(x, c[0], ROUND_MAGIC);
    let kf = t - ROUND_MAGIC;
    let k = t.to_bits() as u32 as i32;
    let r = fma64(-kf, c[1], x);
    let r = fma64(-kf, c[2], r);
    let r = fma64(-kf, c[3], r);
    quadrant64(k & 3, k_sin64_0(r, c), k_cos64_0(r, c))
}

/// [`sincos_f64`] with its constants passed in (see [`SinCos64Consts`]).
#[inline(always)]
pub fn sincos_f64_with(x: f64, consts: &SinCos64Consts) -> (f64, f64) {
    if x.abs() <= F64_CW_MAX {
        cw64(x, &consts.0)
    } else if x.is_finite() {
        sincos_f64_large(x)
    } else {
        (f64::NAN, f64::NAN)
    }
}

/// `sin x` in f64.
#[inline(always)]
pub fn sin_f64(x: f64) -> f64 {
    sincos_f64(x).0
}

/// `cos x` in f64.
#[inline(always)]
pub fn cos_f64(x: f64) -> f64 {
    sincos_f64(x).1
}

const ATANHI: [f64; 4] = [
    4.636_476_090_008_060_935_15e-01,
    core::f64::consts::FRAC_PI_4,
    9.827_937_232_473_290_540_82e-01,
    core::f64::consts::FRAC_PI_2,
];
const ATANLO: [f64; 4] = [
    2.269_877_745_296_168_709_24e-17,
    3.061_616_997_868_383_017_93e-17,
    1.390_331_103_123_099_845_16e-17,
    6.123_233_995_736_766_035_87e-17,
];
const AT: [f64; 11] = [
    3.333_333_333_333_293_180_27e-01,
    -1.999_999_999_987_648_324_76e-01,
    1.428_571_427_250_346_637_11e-01,
    -1.111_111_040_546_235_578_80e-01,
    9.090_887_133_436_506_561_96e-02,
    -7.691_876_205_044_829_994_95e-02,
    6.661_073_137_387_531_206_69e-02,
    -5.833_570_133_790_573_486_45e-02,
    4.976_877_994_615_932_360_17e-02,
    -3.653_157_274_421_691_552_70e-02,
    1.628_582_011_536_578_236_23e-02,
];

/// atan(t) for `t` in `[0, 1]` (fdlibm's reduction and polynomial; the
/// constants are picked by comparisons, never by a run-time index).
#[inline(always)]
fn atan01_f64(t: f64) -> f64 {
    let (x, hi, lo, reduced) = if t < 0.4375 {
        (t, 0.0, 0.0, false)
    } else if t < 0.6875 {
        ((2.0 * t - 1.0) / (2.0 + t), ATANHI[0], ATANLO[0], true)
    } else {
        ((t - 1.0) / (t + 1.0), ATANHI[1], ATANLO[1], true)
    };
    let z = x * x;
    let w = z * z;
    let s1 = z * fma64(
        w,
        fma64(
            w,
            fma64(w, fma64(w, fma64(w, AT[10], AT[8]), AT[6]), AT[4]),
            AT[2],
        ),
        AT[0],
    );
    let s2 = w * fma64(
        w,
        fma64(w, fma64(w, fma64(w, AT[9], AT[7]), AT[5]), AT[3]),
        AT[1],
    );
    if reduced {
        hi - ((x * (s1 + s2) - lo) - x)
    } else {
        x - x * (s1 + s2)
    }
}

/// `atan2(y, x)` in f64 (IEEE special cases for zeros, infinities and NaN).
#[inline(always)]
pub fn atan2_f64(y: f64, x: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    let (ax, ay) = (x.abs(), y.abs());
    let x_neg = x.to_bits() >> 63 != 0;
    let a = if ay == 0.0 {
        if x_neg { PI_HI } else { 0.0 }
    } else if ax == f64::INFINITY && ay == f64::INFINITY {
        if x_neg { 3.0 * ATANHI[1] } else { ATANHI[1] }
    } else {
        let swap = ay > ax;
        let t = if swap { ax / ay } else { ay / ax };
        let mut a = atan01_f64(t);
        if swap {
            a = (PIO2_HI - a) + PIO2_LO;
        }
        if x_neg { (PI_HI - a) + PI_LO } else { a }
    };
    if y.to_bits() >> 63 != 0 { -a } else { a }
}

// ---- f32 ------------------------------------------------------------------

const TWO_OVER_PI_F32: f32 = core::f32::consts::FRAC_2_PI;
const PIO2_F1: f32 = f32::from_bits(0x3FC9_0FDB);
const PIO2_F2: f32 = f32::from_bits(0xB33B_BD2E);
const PIO2_F3: f32 = f32::from_bits(0xA6F7_2CED);
const PI_F32: f32 = core::f32::consts::PI;
const PIO2_F32: f32 = core::f32::consts::FRAC_PI_2;
const PIO4_F32: f32 = core::f32::consts::FRAC_PI_4;

#[inline(always)]
fn fma32(a: f32, b: f32, c: f32) -> f32 {
    a.mul_add(b, c)
}

#[inline(always)]
fn k_sin32(r: f32) -> f32 {
    let z = r * r;
    let p = fma32(fma32(-1.951_529_6e-4, z, 8.332_161e-3), z, -1.666_665_5e-1);
    fma32(p * z, r, r)
}

#[inline(always)]
fn k_cos32(r: f32) -> f32 {
    let z = r * r;
    let p = fma32(fma32(2.443_315_7e-5, z, -1.388_731_6e-3), z, 4.166_664_6e-2);
    fma32(p * z, z, fma32(-0.5, z, 1.0))
}

/// The f32 huge-argument path: widen (exact), reduce and evaluate in f64.
#[inline(never)]
#[cold]
fn sincos_f32_large(x: f32) -> (f32, f32) {
    let (s, c) = sincos_f64(x as f64);
    (s as f32, c as f32)
}

/// `(sin x, cos x)` in f32. NaN for NaN and infinities.
#[inline(always)]
pub fn sincos_f32(x: f32) -> (f32, f32) {
    if x.abs() <= F32_CW_MAX {
        let kf = core::intrinsics::round_ties_even_f32(x * TWO_OVER_PI_F32);
        // SAFETY: `|kf| <= 1e5 * 2/pi + 1`, an integer well inside i32.
        let k = unsafe { kf.to_int_unchecked::<i32>() };
        cw32(x, kf, k)
    } else if x.is_finite() {
        sincos_f32_large(x)
    } else {
        (f32::NAN, f32::NAN)
    }
}

/// The Cody-Waite path of [`sincos_f32`] after the quadrant `k = kf`.
#[inline(always)]
fn cw32(x: f32, kf: f32, k: i32) -> (f32, f32) {
    let r = fma32(-kf, PIO2_F1, x);
    let r = fma32(-kf, PIO2_F2, r);
    let r = fma32(-kf, PIO2_F3, r);
    quadrant(k & 3, k_sin32(r), k_cos32(r))
}

/// The branch-free part of [`sincos_f32`]: correct (same bound) for
/// `|x| <= F32_CW_MAX`, a meaningless value (no UB) otherwise. For loops that
/// compute it ahead, in the same basic block as other work, and fix the rare
/// large argument afterwards (see [`Trig::sincos_cw`]).
#[inline(always)]
pub fn sincos_f32_cw(x: f32) -> (f32, f32) {
    let kf = core::intrinsics::round_ties_even_f32(x * TWO_OVER_PI_F32);
    cw32(x, kf, kf as i32)
}

/// The branch-free part of [`sincos_f64`], as [`sincos_f32_cw`]: correct for
/// `|x| <= F64_CW_MAX`, meaningless otherwise.
#[inline(always)]
pub fn sincos_f64_cw(x: f64) -> (f64, f64) {
    cw64(x, &SINCOS64.0)
}

/// `sin x` in f32.
#[inline(always)]
pub fn sin_f32(x: f32) -> f32 {
    sincos_f32(x).0
}

/// `cos x` in f32.
#[inline(always)]
pub fn cos_f32(x: f32) -> f32 {
    sincos_f32(x).1
}

/// atan(t), `t` in `[0, 1]`, f32 (Cephes: reduction at tan(pi/8)).
#[inline(always)]
fn atan01_f32(t: f32) -> f32 {
    let big = t > 0.414_213_57;
    let x = if big { (t - 1.0) / (t + 1.0) } else { t };
    let z = x * x;
    let p = fma32(
        fma32(fma32(8.053_744_5e-2, z, -1.387_768_6e-1), z, 1.997_771_1e-1),
        z,
        -3.333_295e-1,
    );
    let a = fma32(p * z, x, x);
    if big { a + PIO4_F32 } else { a }
}

/// `atan2(y, x)` in f32 (IEEE special cases for zeros, infinities and NaN).
#[inline(always)]
pub fn atan2_f32(y: f32, x: f32) -> f32 {
    if x.is_nan() || y.is_nan() {
        return f32::NAN;
    }
    let (ax, ay) = (x.abs(), y.abs());
    let x_neg = x.to_bits() >> 31 != 0;
    let a = if ay == 0.0 {
        if x_neg { PI_F32 } else { 0.0 }
    } else if ax == f32::INFINITY && ay == f32::INFINITY {
        if x_neg { 3.0 * PIO4_F32 } else { PIO4_F32 }
    } else {
        let swap = ay > ax;
        let t = if swap { ax / ay } else { ay / ax };
        let mut a = atan01_f32(t);
        if swap {
            a = PIO2_F32 - a;
        }
        if x_neg { PI_F32 - a } else { a }
    };
    if y.to_bits() >> 31 != 0 { -a } else { a }
}

// ---- the trait ------------------------------------------------------------

/// Trigonometry for generic kernels (`T: Real + Trig`). Precise everywhere,
/// except f32 `sin`/`cos`/`sincos` in the fast-math build, which are the SFU
/// approximations there (that is the point of the fast-math rung).
pub trait Trig: Real {
    /// `sin self`.
    fn sin(self) -> Self;
    /// `cos self`.
    fn cos(self) -> Self;
    /// `(sin self, cos self)`, sharing the range reduction.
    fn sincos(self) -> (Self, Self);
    /// `atan2(self, x)`: the angle of the point `(x, self)`.
    fn atan2(self, x: Self) -> Self;
    /// Constants of `sincos` that a loop should load once, before it
    /// (f64: [`SinCos64Consts`]; f32: nothing, its constants are 32-bit
    /// immediates of the instructions).
    type Consts: Copy;
    /// The constants for [`Trig::sincos_with`]; call it outside the loop.
    fn trig_consts() -> Self::Consts;
    /// [`Trig::sincos`] with hoisted constants.
    fn sincos_with(self, consts: &Self::Consts) -> (Self, Self);
    /// Largest `|x|` for which [`Trig::sincos_cw`] is [`Trig::sincos`].
    const CW_MAX: Self;
    /// The branch-free Cody-Waite part of `sincos`: the same value for
    /// `|self| <= CW_MAX`, meaningless (but no UB) beyond; callers check
    /// and fall back to [`Trig::sincos`].
    fn sincos_cw(self) -> (Self, Self);
}

impl Trig for f64 {
    #[inline(always)]
    fn sin(self) -> Self {
        sin_f64(self)
    }
    #[inline(always)]
    fn cos(self) -> Self {
        cos_f64(self)
    }
    #[inline(always)]
    fn sincos(self) -> (Self, Self) {
        sincos_f64(self)
    }
    #[inline(always)]
    fn atan2(self, x: Self) -> Self {
        atan2_f64(self, x)
    }
    type Consts = SinCos64Consts;
    #[inline(always)]
    fn trig_consts() -> SinCos64Consts {
        sincos64_consts()
    }
    #[inline(always)]
    fn sincos_with(self, consts: &SinCos64Consts) -> (Self, Self) {
        sincos_f64_with(self, consts)
    }
    const CW_MAX: f64 = F64_CW_MAX;
    #[inline(always)]
    fn sincos_cw(self) -> (Self, Self) {
        sincos_f64_cw(self)
    }
}

impl Trig for f32 {
    #[inline(always)]
    fn sin(self) -> Self {
        #[cfg(feature = "fast-math")]
        {
            crate::sfu::sin(self)
        }
        #[cfg(not(feature = "fast-math"))]
        {
            sin_f32(self)
        }
    }
    #[inline(always)]
    fn cos(self) -> Self {
        #[cfg(feature = "fast-math")]
        {
            crate::sfu::cos(self)
        }
        #[cfg(not(feature = "fast-math"))]
        {
            cos_f32(self)
        }
    }
    #[inline(always)]
    fn sincos(self) -> (Self, Self) {
        #[cfg(feature = "fast-math")]
        {
            (crate::sfu::sin(self), crate::sfu::cos(self))
        }
        #[cfg(not(feature = "fast-math"))]
        {
            sincos_f32(self)
        }
    }
    #[inline(always)]
    fn atan2(self, x: Self) -> Self {
        atan2_f32(self, x)
    }
    type Consts = ();
    #[inline(always)]
    fn trig_consts() {}
    #[inline(always)]
    fn sincos_with(self, _: &()) -> (Self, Self) {
        self.sincos()
    }
    const CW_MAX: f32 = F32_CW_MAX;
    #[inline(always)]
    fn sincos_cw(self) -> (Self, Self) {
        #[cfg(feature = "fast-math")]
        {
            self.sincos()
        }
        #[cfg(not(feature = "fast-math"))]
        {
            sincos_f32_cw(self)
        }
    }
}

// ---- natural logarithm ----------------------------------------------------

const LN2_HI: f64 = 6.931_471_803_691_238_164_90e-01;
const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;
const LG1: f64 = 6.666_666_666_666_735_130e-01;
const LG2: f64 = 3.999_999_999_940_941_908e-01;
const LG3: f64 = 2.857_142_874_366_239_149e-01;
const LG4: f64 = 2.222_219_843_214_978_396e-01;
const LG5: f64 = 1.818_357_216_161_805_012e-01;
const LG6: f64 = 1.531_383_769_920_937_332e-01;
const LG7: f64 = 1.479_819_860_511_658_591e-01;

/// `ln x` in f64 (fdlibm's `e_log.c`): `x = 2^k m` with `m` in
/// `[sqrt(2)/2, sqrt(2))`, `f = m - 1`, `s = f / (2 + f)`, and `ln m = 2
/// atanh(s)` as `f - s (f - R(s^2))` with fdlibm's degree-14 minimax `R`;
/// `k ln 2` in two parts. `NaN` for `x < 0` or NaN, `-inf` at 0, `inf` at
/// `inf`. Within 1 ulp (`tests/lomb.rs` checks 2 against `std`).
#[inline(always)]
pub fn ln_f64(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x == f64::INFINITY {
        return x;
    }
    let (mut bits, mut k) = (x.to_bits(), 0i32);
    if bits < 0x0010_0000_0000_0000 {
        // Subnormal: scale by 2^54 into the normal range.
        bits = (x * 18_014_398_509_481_984.0).to_bits();
        k = -54;
    }
    let hx = (bits >> 32) as u32;
    k += (hx >> 20) as i32 - 1023;
    let hm = hx & 0x000f_ffff;
    // `i` is the exponent bit when the mantissa is above sqrt(2): then `m`
    // is halved (exponent 0x3fe) and `k` counts it.
    let i = (hm + 0x95f64) & 0x0010_0000;
    let m = f64::from_bits((((hm | (i ^ 0x3ff0_0000)) as u64) << 32) | (bits & 0xffff_ffff));
    k += (i >> 20) as i32;
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * fma64(w, fma64(w, LG6, LG4), LG2);
    let t2 = z * fma64(w, fma64(w, fma64(w, LG7, LG5), LG3), LG1);
    let r = t2 + t1;
    let hfsq = 0.5 * f * f;
    let dk = k as f64;
    dk * LN2_HI - ((hfsq - fma64(s, hfsq + r, dk * LN2_LO)) - f)
}

const LN2_HI_F32: f32 = f32::from_bits(0x3f31_7180);
const LN2_LO_F32: f32 = f32::from_bits(0x3717_f7d1);
const LG1_F32: f32 = 11_184_810.0 / 16_777_216.0; // 0xaaaaaa.0p-24
const LG2_F32: f32 = 13_421_075.0 / 33_554_432.0; // 0xccce13.0p-25
const LG3_F32: f32 = 9_562_606.0 / 33_554_432.0; // 0x91e9ee.0p-25
const LG4_F32: f32 = 16_293_414.0 / 67_108_864.0; // 0xf89e26.0p-26

/// `ln x` in f32 (FreeBSD's `e_logf.c`, the same scheme as [`ln_f64`] with a
/// degree-8 `R`). Within 1 ulp (`tests/lomb.rs` checks 2 against `std`).
#[inline(always)]
pub fn ln_f32(x: f32) -> f32 {
    if x.is_nan() || x < 0.0 {
        return f32::NAN;
    }
    if x == 0.0 {
        return f32::NEG_INFINITY;
    }
    if x == f32::INFINITY {
        return x;
    }
    let (mut ix, mut k) = (x.to_bits(), 0i32);
    if ix < 0x0080_0000 {
        // Subnormal: scale by 2^25.
        ix = (x * 33_554_432.0).to_bits();
        k = -25;
    }
    k += (ix >> 23) as i32 - 127;
    let im = ix & 0x007f_ffff;
    let i = (im + (0x95f64 << 3)) & 0x0080_0000;
    let m = f32::from_bits(im | (i ^ 0x3f80_0000));
    k += (i >> 23) as i32;
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * fma32(w, LG4_F32, LG2_F32);
    let t2 = z * fma32(w, LG3_F32, LG1_F32);
    let r = t2 + t1;
    let hfsq = 0.5 * f * f;
    let dk = k as f32;
    dk * LN2_HI_F32 - ((hfsq - fma32(s, hfsq + r, dk * LN2_LO_F32)) - f)
}

/// Kept so that existing `T: Real + Ln` bounds still compile: `ln` is now a
/// method of [`Real`] itself (the same [`ln_f32`]/[`ln_f64`] on the GPU),
/// and every `Real` is `Ln`. New code needs only `T: Real`.
pub trait Ln: Real {}

impl<T: Real> Ln for T {}

#[cfg(test)]
mod tests;
