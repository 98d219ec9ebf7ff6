//! Kernel debug output: [`println!`](crate::println), the same line on the
//! GPU (`vprintf`, CUDA's `printf`) and in the simulator.
//!
//! ```ignore
//! ptxlab_device::println!("block {} thread {}: x = {:.3}, bits {:#x}", b, t, x, x.to_bits());
//! ```
//!
//! The format is Rust's, restricted to what `printf` prints the same way:
//! `{}` / `{:?}` for integers and floats, `{:x}` / `{:X}` / `{:#x}` /
//! `{:#X}` for integers, `{:.N}` for floats; positional arguments only.
//! Integers print as 64-bit values (so `{:x}` of a negative `i32` shows 16
//! digits on both backends), floats with six decimals unless a precision
//! is given (`printf`'s `%f`), NaN and infinities as `nan`, `inf`, `-inf`.
//! On the GPU the output appears when the kernel has finished (the
//! driver's `printf` buffer, 1 MiB by default: lines past it are lost);
//! in the simulator each line is written at once, whole.
//!
//! This module holds the pieces the macro expands to; kernels only call
//! the macro.

/// How an argument's bits are to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A signed integer, sign-extended to 64 bits.
    Signed,
    /// An unsigned integer, zero-extended to 64 bits.
    Unsigned,
    /// A float, as an `f64`'s bits.
    Float,
}

/// The form of a placeholder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `{}` or `{:?}`.
    Plain,
    /// `{:x}`, `{:X}`, `{:#x}`, `{:#X}`.
    Hex {
        /// `X`.
        upper: bool,
        /// `#`.
        alt: bool,
    },
    /// `{:.N}`.
    Precision(u32),
}

/// A value a kernel's `println!` can print: integers and floats.
pub trait PrintfArg: Copy {
    /// How its bits are read.
    const KIND: Kind;
    /// Its value as 64 bits (the `vprintf` argument word).
    fn bits(self) -> u64;
}

macro_rules! printf_int {
    ($kind:ident: $($t:ty),*) => {$(
        impl PrintfArg for $t {
            const KIND: Kind = Kind::$kind;
            #[inline(always)]
            fn bits(self) -> u64 {
                printf_int!(@bits $kind, self)
            }
        }
    )*};
    (@bits Signed, $v:expr) => { $v as i64 as u64 };
    (@bits Unsigned, $v:expr) => { $v as u64 };
}
printf_int!(Signed: i8, i16, i32, i64, isize);
printf_int!(Unsigned: u8, u16, u32, u64, usize);

impl PrintfArg for f32 {
    const KIND: Kind = Kind::Float;
    #[inline(always)]
    fn bits(self) -> u64 {
        (self as f64).to_bits()
    }
}

impl PrintfArg for f64 {
    const KIND: Kind = Kind::Float;
    #[inline(always)]
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// Appends `s` to `out` at `*at`.
const fn put(out: &mut [u8], at: &mut usize, s: &[u8]) {
    let mut i = 0;
    while i < s.len() {
        out[*at] = s[i];
        *at += 1;
        i += 1;
    }
}

/// The C format string of a `println!`: `pieces` between the placeholders
/// `specs` (kind of the argument, form), NUL-terminated, in `N` bytes.
/// Refuses (at compile time) a form `printf` would print differently.
pub const fn c_format<const N: usize>(pieces: &[&str], specs: &[(Kind, Form)]) -> [u8; N] {
    let mut out = [0u8; N];
    let mut at = 0;
    let mut i = 0;
    while i < pieces.len() {
        put(&mut out, &mut at, pieces[i].as_bytes());
        if i < specs.len() {
            let (kind, form) = specs[i];
            match (kind, form) {
                (Kind::Signed, Form::Plain) => put(&mut out, &mut at, b"%lld"),
                (Kind::Unsigned, Form::Plain) => put(&mut out, &mut at, b"%llu"),
                (Kind::Float, Form::Plain) => put(&mut out, &mut at, b"%f"),
                (Kind::Float, Form::Precision(p)) => {
                    put(&mut out, &mut at, b"%.");
                    if p >= 10 {
                        put(&mut out, &mut at, &[b'0' + (p / 10) as u8]);
                    }
                    put(&mut out, &mut at, &[b'0' + (p % 10) as u8, b'f']);
                }
                (Kind::Float, Form::Hex { .. }) => {
                    panic!(
                        "println!: {{:x}} is for integers (print f.to_bits() for a float's bits)"
                    )
                }
                (_, Form::Precision(_)) => {
                    panic!("println!: {{:.N}} is for floats (printf pads integers with it)")
                }
                (_, Form::Hex { upper, alt }) => put(
                    &mut out,
                    &mut at,
                    match (upper, alt) {
                        (false, false) => b"%llx",
                        (true, false) => b"%llX",
                        (false, true) => b"%#llx",
                        (true, true) => b"%#llX",
                    },
                ),
            }
        }
        i += 1;
    }
    out
}

/// Prints one line on the GPU: `vprintf(fmt, words)`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn gpu<const N: usize>(fmt: &'static [u8; N], words: &[u64]) {
    unsafe extern "C" {
        fn vprintf(format: *const u8, args: *const u8) -> i32;
    }
    // SAFETY: `fmt` is a NUL-terminated C format string whose conversions
    // (`%lld`, `%llu`, `%llx`, `%f`, each reading 8 bytes) match `words`,
    // 8-byte aligned 64-bit values, one per conversion, as `vprintf`
    // reads its argument buffer.
    unsafe {
        vprintf(fmt.as_ptr(), words.as_ptr() as *const u8);
    }
}

/// An argument on the host, printing as `printf` does on the GPU.
#[cfg(not(target_arch = "nvptx64"))]
pub struct Host<'a, T>(pub &'a T);

#[cfg(not(target_arch = "nvptx64"))]
mod host_impl {
    use super::{Host, Kind, PrintfArg};
    use core::fmt;

    fn float(v: f64, precision: usize, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if v.is_nan() {
            f.write_str(if v.is_sign_negative() { "-nan" } else { "nan" })
        } else if v.is_infinite() {
            f.write_str(if v < 0.0 { "-inf" } else { "inf" })
        } else {
            write!(f, "{v:.precision$}")
        }
    }

    impl<T: PrintfArg> fmt::Display for Host<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let b = self.0.bits();
            match T::KIND {
                Kind::Signed => write!(f, "{}", b as i64),
                Kind::Unsigned => write!(f, "{b}"),
                Kind::Float => float(f64::from_bits(b), f.precision().unwrap_or(6), f),
            }
        }
    }

    impl<T: PrintfArg> fmt::Debug for Host<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            fmt::Display::fmt(self, f)
        }
    }

    /// `%#llx` prints 0 without its `0x`.
    fn hex(b: u64, upper: bool, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (upper, f.alternate() && b != 0) {
            (false, false) => write!(f, "{b:x}"),
            (true, false) => write!(f, "{b:X}"),
            (false, true) => write!(f, "{b:#x}"),
            (true, true) => write!(f, "0X{b:X}"),
        }
    }

    impl<T: PrintfArg> fmt::LowerHex for Host<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            hex(self.0.bits(), false, f)
        }
    }

    impl<T: PrintfArg> fmt::UpperHex for Host<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            hex(self.0.bits(), true, f)
        }
    }
}

/// Prints one line in the simulator: formatted first, written at once, so
/// lines of different threads do not mix.
#[cfg(not(target_arch = "nvptx64"))]
pub fn host(args: core::fmt::Arguments<'_>) {
    let line = std::fmt::format(args);
    std::print!("{line}");
}

#[cfg(test)]
mod tests {
    use super::{Form, Kind, c_format};

    #[test]
    fn c_format_strings() {
        let f: [u8; 40] = c_format(
            &["x = ", ", n = ", ", bits ", " 100%%\n"],
            &[
                (Kind::Float, Form::Precision(3)),
                (Kind::Signed, Form::Plain),
                (
                    Kind::Unsigned,
                    Form::Hex {
                        upper: false,
                        alt: true,
                    },
                ),
            ],
        );
        let end = f.iter().position(|&b| b == 0).unwrap();
        assert_eq!(
            core::str::from_utf8(&f[..end]).unwrap(),
            "x = %.3f, n = %lld, bits %#llx 100%%\n"
        );
    }

    #[test]
    fn host_lines_match_printf() {
        let (x, n, u, z) = (1.5f32, -3i32, 255u32, 0u32);
        let line = std::format!(
            "{} {:.2} {} {:x} {:#x} {:#X} {:x}",
            super::Host(&x),
            super::Host(&x),
            super::Host(&n),
            super::Host(&n),
            super::Host(&u),
            super::Host(&u),
            super::Host(&z)
        );
        // printf("%f %.2f %lld %llx %#llx %#llX %llx", 1.5, 1.5, -3LL, -3LL, 255ULL, 255ULL, 0ULL)
        assert_eq!(line, "1.500000 1.50 -3 fffffffffffffffd 0xff 0XFF 0");
        assert_eq!(std::format!("{:#x}", super::Host(&z)), "0");
        assert_eq!(std::format!("{}", super::Host(&f32::NAN)), "nan");
    }
}
