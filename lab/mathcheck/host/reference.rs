//! The functions under test, their reference values and the distance in
//! ulps.
//!
//! The reference is binary128 (`f128`, 113-bit significand): Rust's `f128`
//! methods call the C library's `*f128` functions (glibc's `expf128`,
//! `powf128`, `erfcf128`, ...), whose documented errors are a few ulps of
//! binary128, that is about 2^-110 relatively: below 2^-57 of an f64 ulp
//! and 2^-86 of an f32 ulp, so the measured errors are the functions'
//! own. `exp10` has no binary128 function in Rust; it is `powf(10, x)`
//! (10 is exact, so that is the same function).

use kernels_gpu::mathcheck::NAMES;
use ptxlab_common::rng::SplitMix64;

/// A function of [`crate`]: its number is the
/// `func` argument of the kernel (`kernels_gpu::mathcheck`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Func {
    /// The name, as the method of `Real`.
    pub name: &'static str,
    /// The kernel's function number.
    pub id: u32,
    /// Two arguments (`powf`, `powi`, `hypot`).
    pub binary: bool,
}

/// Every function the kernel evaluates, in the kernel's order
/// (`kernels_gpu::mathcheck::NAMES`).
pub fn funcs() -> impl Iterator<Item = Func> {
    NAMES.iter().enumerate().map(|(i, &name)| Func {
        name,
        id: i as u32,
        binary: matches!(name, "powf" | "powi" | "hypot"),
    })
}

/// Looks a function up by name.
pub fn func(name: &str) -> Option<Func> {
    funcs().find(|f| f.name == name)
}

/// The exact (binary128) value of `f(x, y)`; `y` is ignored by unary
/// functions and is an integer for `powi`.
pub fn reference(f: Func, x: f64, y: f64) -> f128 {
    let (x, y) = (x as f128, y as f128);
    match f.name {
        "exp" => x.exp(),
        "exp2" => x.exp2(),
        "exp10" => 10.0_f128.powf(x),
        "exp_m1" => x.exp_m1(),
        "ln" => x.ln(),
        "log2" => x.log2(),
        "log10" => x.log10(),
        "ln_1p" => x.ln_1p(),
        "powf" | "powi" => x.powf(y),
        "cbrt" => x.cbrt(),
        "hypot" => x.hypot(y),
        "sinh" => x.sinh(),
        "cosh" => x.cosh(),
        "tanh" => x.tanh(),
        "asin" => x.asin(),
        "acos" => x.acos(),
        "atan" => x.atan(),
        "erf" => x.erf(),
        "erfc" => x.erfc(),
        _ => unreachable!("no reference for {}", f.name),
    }
}

/// f32 or f64, as far as the measurement is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    /// binary32.
    F32,
    /// binary64.
    F64,
}

impl Ty {
    /// Significand bits (with the implicit one).
    pub fn precision(self) -> i32 {
        match self {
            Ty::F32 => 24,
            Ty::F64 => 53,
        }
    }
    /// The smallest normal exponent.
    pub fn emin(self) -> i32 {
        match self {
            Ty::F32 => -126,
            Ty::F64 => -1022,
        }
    }
    /// Rounds a reference value to this type (nearest, ties to even;
    /// overflow to infinity).
    pub fn round(self, v: f128) -> f64 {
        match self {
            Ty::F32 => v as f32 as f64,
            Ty::F64 => v as f64,
        }
    }
    /// The name.
    pub fn name(self) -> &'static str {
        match self {
            Ty::F32 => "f32",
            Ty::F64 => "f64",
        }
    }
}

/// `2^e` in binary128, for `|e| < 16000`.
fn pow2_128(e: i32) -> f128 {
    f128::from_bits(((e + 16383) as u128) << 112)
}

/// The error of `got` against the exact `want`, in ulps of the result type
/// at `want` (the spacing of that type's numbers around `want`, the
/// subnormal spacing below the normal range). 0 when `got` is `want`
/// rounded (including signed zeros and infinities); infinite when
/// `got` is NaN and `want` is not, or the reverse, or when `got` or `want`
/// rounded is infinite and the other is not (a missed or a spurious
/// overflow); for a NaN reference, 0 if `got` is NaN.
pub fn ulp_error(ty: Ty, got: f64, want: f128) -> f64 {
    if want.is_nan() || got.is_nan() {
        return if want.is_nan() && got.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    let rounded = ty.round(want);
    if got == rounded && (got != 0.0 || got.is_sign_negative() == rounded.is_sign_negative()) {
        return 0.0;
    }
    if got == rounded {
        // A zero of the wrong sign: count it as half an ulp of the
        // smallest subnormal, visible but not a failure of accuracy.
        return 0.5;
    }
    if got.is_infinite() || rounded.is_infinite() {
        return f64::INFINITY;
    }
    let a = want.abs();
    let e = if a == 0.0 {
        ty.emin()
    } else {
        let bits = a.to_bits();
        (((bits >> 112) & 0x7fff) as i32 - 16383).max(ty.emin())
    };
    let ulp = pow2_128(e - ty.precision() + 1);
    ((got as f128 - want).abs() / ulp) as f64
}

/// A value with a random significand and an exponent drawn uniformly in
/// `[e0, e1)`, positive (log-uniform magnitudes), rounded to the type.
fn log_uniform(r: &mut SplitMix64, ty: Ty, e0: f64, e1: f64) -> f64 {
    let v = r.uniform(e0, e1).exp2();
    ty.round(v as f128)
}

fn signed(r: &mut SplitMix64, v: f64) -> f64 {
    if r.next_u64() & 1 == 0 { v } else { -v }
}

fn uni(r: &mut SplitMix64, ty: Ty, lo: f64, hi: f64) -> f64 {
    ty.round(r.uniform(lo, hi) as f128)
}

/// `n` deterministic arguments `(x, y)` for `f` in `ty`, chosen to cover
/// its domain: uniform over the range where the result is neither 0 nor
/// infinite and log-uniform magnitudes (tiny to huge, subnormals
/// included), plus the places where algorithms break: near 0, near the
/// overflow and underflow thresholds, near 1 for logarithms and powers,
/// integer exponents, near ±1 for asin and acos. The values are exact in
/// `ty`. The first points are special values ([`specials`]).
pub fn points(f: Func, ty: Ty, n: usize, seed: u64) -> Vec<(f64, f64)> {
    let mut r = SplitMix64(seed ^ (f.id as u64) << 32 ^ ty.precision() as u64);
    let f32 = ty == Ty::F32;
    // log2 of the largest finite value and of the smallest subnormal.
    let (emax, esub) = if f32 {
        (128.0, -149.0)
    } else {
        (1024.0, -1074.0)
    };
    // ln of the largest finite value and of the smallest subnormal.
    let (lmax, lsub) = if f32 {
        (88.72283905206835, -103.27892990343184)
    } else {
        (709.782712893384, -744.4400719213812)
    };
    let mut out: Vec<(f64, f64)> = specials(f, ty);
    while out.len() < n {
        let k = out.len() % 8;
        let p = match f.name {
            "exp" | "exp_m1" | "sinh" | "cosh" => match k {
                0..=2 => uni(&mut r, ty, lsub - 2.0, lmax + 2.0),
                3 => uni(&mut r, ty, lmax - 1.0, lmax + 1.0),
                4 => uni(&mut r, ty, lsub - 1.0, lsub + 1.0),
                5 => uni(&mut r, ty, -5.0, 5.0),
                _ => {
                    let v = log_uniform(&mut r, ty, esub, 2.0);
                    signed(&mut r, v)
                }
            },
            "exp2" => match k {
                0..=2 => uni(&mut r, ty, esub - 2.0, emax + 2.0),
                3 => uni(&mut r, ty, emax - 1.0, emax + 1.0),
                4 => uni(&mut r, ty, esub - 1.0, esub + 1.0),
                5 => uni(&mut r, ty, -5.0, 5.0),
                _ => {
                    let v = log_uniform(&mut r, ty, esub, 2.0);
                    signed(&mut r, v)
                }
            },
            "exp10" => {
                let s = std::f64::consts::LOG10_E;
                match k {
                    0..=2 => uni(&mut r, ty, (lsub - 2.0) * s, (lmax + 2.0) * s),
                    3 => uni(&mut r, ty, lmax * s - 1.0, lmax * s + 1.0),
                    4 => uni(&mut r, ty, lsub * s - 1.0, lsub * s + 1.0),
                    5 => uni(&mut r, ty, -5.0, 5.0),
                    _ => {
                        let v = log_uniform(&mut r, ty, esub, 2.0);
                        signed(&mut r, v)
                    }
                }
            }
            "tanh" => match k {
                0..=3 => uni(&mut r, ty, -25.0, 25.0),
                4 => uni(&mut r, ty, -2.0, 2.0),
                _ => {
                    let v = log_uniform(&mut r, ty, esub, 6.0);
                    signed(&mut r, v)
                }
            },
            "ln" | "log2" | "log10" => match k {
                0..=3 => log_uniform(&mut r, ty, esub, emax),
                4 | 5 => {
                    // 1 + d, d down to a few ulps of 1.
                    let d = log_uniform(&mut r, ty, -(ty.precision() as f64), -1.0);
                    ty.round((1.0 + signed(&mut r, d)) as f128)
                }
                _ => uni(&mut r, ty, 0.0, 4.0),
            },
            "ln_1p" => match k {
                0..=2 => log_uniform(&mut r, ty, esub, emax),
                3 | 4 => {
                    let v = log_uniform(&mut r, ty, esub, 0.0);
                    if v >= 1.0 { -0.5 } else { -v }
                }
                5 => ty.round(
                    (-1.0 + log_uniform(&mut r, ty, -(ty.precision() as f64), -1.0)) as f128,
                ),
                _ => uni(&mut r, ty, -1.0, 4.0),
            },
            "atan" => match k {
                0..=2 => uni(&mut r, ty, -4.0, 4.0),
                3 | 4 => {
                    let v = log_uniform(&mut r, ty, -30.0, 30.0);
                    signed(&mut r, v)
                }
                _ => {
                    let v = log_uniform(&mut r, ty, esub, emax);
                    signed(&mut r, v)
                }
            },
            "cbrt" => {
                let v = if k == 7 {
                    // perfect cubes of small integers, and their neighbours
                    let i = (r.next_u64() % 2000) as f64;
                    ty.round((i * i * i) as f128)
                } else {
                    log_uniform(&mut r, ty, esub, emax)
                };
                signed(&mut r, v)
            }
            "asin" | "acos" => match k {
                0..=3 => uni(&mut r, ty, -1.0, 1.0),
                4 | 5 => {
                    let d = log_uniform(&mut r, ty, -(ty.precision() as f64) - 1.0, -1.0);
                    signed(&mut r, ty.round((1.0 - d) as f128))
                }
                _ => {
                    let v = log_uniform(&mut r, ty, esub, -1.0);
                    signed(&mut r, v)
                }
            },
            "erf" | "erfc" => match k {
                0..=3 => uni(&mut r, ty, -7.0, if f32 { 11.0 } else { 28.0 }),
                4 => uni(&mut r, ty, -1.5, 1.5),
                5 => uni(
                    &mut r,
                    ty,
                    if f32 { 8.0 } else { 25.0 },
                    if f32 { 11.0 } else { 28.0 },
                ),
                _ => {
                    let v = log_uniform(&mut r, ty, esub, 1.0);
                    signed(&mut r, v)
                }
            },
            "hypot" => {
                let x = log_uniform(&mut r, ty, esub, emax);
                let gap = if k < 4 {
                    r.uniform(0.0, 4.0)
                } else {
                    r.uniform(0.0, 70.0)
                };
                let y = ty.round((x as f128) * (-gap).exp2() as f128 * r.uniform(0.5, 2.0) as f128);
                let (x, y) = (signed(&mut r, x), signed(&mut r, y));
                out.push(if k & 1 == 0 { (x, y) } else { (y, x) });
                continue;
            }
            "powf" | "powi" => {
                // |x| log-uniform, and y such that y ln|x| sweeps the range
                // of finite results (or small integers / reals).
                let x = match k {
                    0..=3 => log_uniform(&mut r, ty, esub, emax),
                    4 | 5 => {
                        let d = log_uniform(&mut r, ty, -(ty.precision() as f64), -1.0);
                        ty.round((1.0 + signed(&mut r, d)) as f128)
                    }
                    _ => uni(&mut r, ty, 0.0, 4.0),
                };
                let lx = x.ln();
                let t = r.uniform(lsub - 2.0, lmax + 2.0);
                let int = f.name == "powi" || k == 6;
                let mut y = if k == 7 && !int {
                    uni(&mut r, ty, -40.0, 40.0)
                } else {
                    t / lx
                };
                if int {
                    // An integer the type holds (and, for powi, an i32).
                    // powi's exponent is an i32 (passed as such to the
                    // kernel); powf's an integer the type holds.
                    let powi = f.name == "powi";
                    let lim = if powi {
                        2_147_483_647.0
                    } else {
                        2f64.powi(ty.precision())
                    };
                    y = y.round().clamp(-lim, lim);
                    if !powi {
                        y = ty.round(y as f128);
                    }
                    if y == 0.0 {
                        y = (r.next_u64() % 64) as f64 - 32.0;
                    }
                } else {
                    y = ty.round(y as f128);
                }
                if !y.is_finite() {
                    y = 1.5;
                }
                // A negative base where the exponent is an integer.
                let x = if y == y.trunc() { signed(&mut r, x) } else { x };
                out.push((x, y));
                continue;
            }
            _ => unreachable!("no points for {}", f.name),
        };
        out.push((p, 0.0));
    }
    out.truncate(n.max(1));
    out
}

/// The special values every run includes for `f`: zeros, infinities, NaN,
/// the edges of the domain, the overflow and underflow thresholds and
/// exact cases (powers of two for `exp2`/`log2`, `hypot(3, 4)`, ...).
pub fn specials(f: Func, ty: Ty) -> Vec<(f64, f64)> {
    let inf = f64::INFINITY;
    let (max, min_sub, min_norm) = if ty == Ty::F32 {
        (
            f32::MAX as f64,
            f32::from_bits(1) as f64,
            f32::MIN_POSITIVE as f64,
        )
    } else {
        (f64::MAX, f64::from_bits(1), f64::MIN_POSITIVE)
    };
    let common = [
        0.0,
        -0.0,
        inf,
        -inf,
        f64::NAN,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        -2.0,
        min_sub,
        -min_sub,
        min_norm,
        max,
        -max,
    ];
    let mut v: Vec<(f64, f64)> = common.iter().map(|&x| (x, 0.0)).collect();
    let extra: &[f64] = match (f.name, ty) {
        ("exp", Ty::F64) => &[
            709.782712893384,
            709.7827128933841,
            -745.1332191019411,
            -745.1332191019412,
            -708.3964185322641,
        ],
        ("exp", Ty::F32) => &[88.72283, 88.72284, -103.97208, -103.97209, -87.33655],
        ("exp2", _) | ("log2", _) => &[
            3.0, -3.0, 10.0, 1023.0, 1024.0, -1022.0, -1074.0, -1075.0, 127.0, 128.0, -126.0,
            -149.0, -150.0, 0.25, 1024.5,
        ],
        ("exp10", _) => &[
            1.0, 3.0, 10.0, 22.0, -3.0, 308.25, 308.26, -323.3, 38.5, -45.0,
        ],
        ("log10", _) => &[10.0, 100.0, 1000.0, 1e22, 0.1, 0.01],
        ("cbrt", _) => &[27.0, -27.0, 8.0, 1e-30, 1e30, 3.0],
        ("asin", _) | ("acos", _) => &[1.0000001, -1.0000001, 0.9999999, 0.49999997, 0.50000006],
        ("erfc", _) => &[26.5, 27.0, 27.2, 27.3, 9.1, 9.2, 10.0, 10.1, -6.0],
        ("ln_1p", _) => &[-0.9999999, 1e-30, -1e-30, 1e30],
        _ => &[],
    };
    v.extend(extra.iter().map(|&x| (ty.round(x as f128), 0.0)));
    let two: &[(f64, f64)] = match f.name {
        "powf" | "powi" => &[
            (0.0, -1.0),
            (-0.0, -1.0),
            (0.0, 3.0),
            (-0.0, 3.0),
            (-0.0, 2.0),
            (-0.0, -2.0),
            (inf, -2.0),
            (-inf, 3.0),
            (-inf, -3.0),
            (-inf, 2.0),
            (-1.0, 5.0),
            (-1.0, 4.0),
            (2.0, 10.0),
            (-2.0, 3.0),
            (10.0, 22.0),
            (3.0, -7.0),
            (1.0, 1e9),
            (2.0, -1074.0),
            (2.0, 1023.0),
            (2.0, 1024.0),
            (0.5, 1075.0),
            (f64::NAN, 0.0),
            (f64::NAN, 2.0),
            (1.5, 2.0),
            (1.5, -1.0),
            (1.5, 1.0),
            (0.0, 0.0),
        ],
        "hypot" => &[
            (3.0, 4.0),
            (-3.0, 4.0),
            (inf, f64::NAN),
            (f64::NAN, -inf),
            (f64::NAN, 1.0),
            (0.0, 0.0),
            (-0.0, 0.0),
            (1e308, 1e308),
            (5e-324, 5e-324),
            (1e-300, 1e-300),
            (3e38, 3e38),
            (1e-45, 1e-45),
            (1.0, 1e-20),
        ],
        _ => &[],
    };
    if f.binary {
        // The unary special values as the first argument, against a few
        // second arguments (powi: odd and even, both signs).
        let seconds: &[f64] = match f.name {
            "powi" => &[3.0, -3.0, 2.0, -2.0],
            "powf" => &[1.5, -2.0, 3.0, 0.5],
            _ => &[1.5, 0.0],
        };
        v = v
            .iter()
            .flat_map(|&(x, _)| seconds.iter().map(move |&y| (x, y)))
            .collect();
        v.extend(two.iter().copied());
        if f.name == "powf" {
            v.extend([
                (2.0, inf),
                (0.5, inf),
                (2.0, -inf),
                (0.5, -inf),
                (-1.0, inf),
                (1.0, f64::NAN),
                (-8.0, 1.0 / 3.0),
                (-2.0, 0.5),
            ]);
        }
        if f.name == "powi" {
            // powi's exponent is an i32.
            v.retain(|&(_, y)| y == y.trunc() && y.abs() <= 2_147_483_647.0);
            v.extend([
                (1.0000001, 2_000_000_000.0),
                (0.9999999, -2_000_000_000.0),
                (-1.0, -2_147_483_648.0),
                (-1.0, 2_147_483_647.0),
                (1.0000001, 123_456_789.0),
            ]);
        }
    }
    // Exact in the type (powi's exponent is an i32, exact in f64).
    let powi = f.name == "powi";
    v.into_iter()
        .map(|(x, y)| {
            (
                ty.round(x as f128),
                if powi { y } else { ty.round(y as f128) },
            )
        })
        .collect()
}
