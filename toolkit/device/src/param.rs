//! Kernel parameters that are not device slices: scalars, `bool`,
//! field-less `#[repr(u32)]` enums and `#[repr(C)]` structs of them, the
//! last two through [`KernelParams`](crate::KernelParams).
//!
//! A struct parameter travels to the GPU by value, as one aggregate
//! (`.param .align A .b8 name[SIZE]` in the PTX); the host writes its bytes
//! field by field ([`ParamField::write`]) into a [`ParamBytes`]. The layout
//! both sides agree on is the *canonical* one: every field type states its
//! size and alignment as constants ([`ParamField::SIZE`],
//! [`ParamField::ALIGN`]), the same numbers on every target, and the derive
//! asserts at compile time, for the host build and for the `nvptx64` build
//! alike, that the struct's real size, alignment and field offsets are the
//! ones [`Layout`] computes from them by the `#[repr(C)]` rules. Two builds
//! that both match one canonical layout match each other.
//!
//! ```
//! use ptxlab_device::KernelParams;
//!
//! #[derive(Clone, Copy, KernelParams)]
//! #[repr(u32)]
//! pub enum Colour { Red = 0, Black = 1 }
//!
//! #[derive(Clone, Copy, KernelParams)]
//! #[repr(C)]
//! pub struct Sweep<T: ptxlab_device::math::Real> {
//!     pub nx: u32,
//!     pub ny: u32,
//!     pub omega: T,
//!     pub colour: Colour,
//!     pub zero_first: bool,
//! }
//! # use ptxlab_device::mem::KernelScalar;
//! let s = Sweep { nx: 5, ny: 7, omega: 0.5f64, colour: Colour::Black, zero_first: true };
//! let ptxlab_device::mem::ScalarValue::Bytes(b) = s.scalar_value() else { unreachable!() };
//! assert_eq!((b.size, b.align), (24, 8));
//! assert_eq!(&b.bytes[..4], &5u32.to_le_bytes());
//! assert_eq!(&b.bytes[16..21], &[1, 0, 0, 0, 1]);
//! ```

/// The largest struct parameter, in bytes (the driver's limit for all the
/// parameters of one launch is 4 KiB; a struct this size is already far
/// beyond what a kernel should take by value).
pub const PARAM_BYTES_MAX: usize = 256;

/// The bytes of one by-value struct parameter as the GPU receives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, align(16))]
pub struct ParamBytes {
    /// The struct in its canonical layout; bytes past `size`, and padding
    /// between fields, are zero.
    pub bytes: [u8; PARAM_BYTES_MAX],
    /// Size of the struct, bytes.
    pub size: u32,
    /// Alignment of the struct, bytes.
    pub align: u32,
}

impl ParamBytes {
    /// Zeroed bytes for a struct of `size` bytes aligned to `align`.
    pub const fn zeroed(size: usize, align: usize) -> Self {
        assert!(
            size <= PARAM_BYTES_MAX,
            "a struct kernel parameter is at most PARAM_BYTES_MAX (256) bytes"
        );
        Self {
            bytes: [0; PARAM_BYTES_MAX],
            size: size as u32,
            align: align as u32,
        }
    }
}

/// A type that can be a field of a struct kernel parameter, or such a
/// parameter itself.
///
/// # Safety
/// `SIZE` and `ALIGN` must be the type's size and alignment on every target
/// the kernel crate is built for (the host and `nvptx64`), and `write` must
/// store exactly the bytes the GPU reads as this value (little-endian,
/// `SIZE` bytes).
pub unsafe trait ParamField: Copy + Send + Sync + 'static {
    /// Size in bytes, the same on the host and on the device.
    const SIZE: usize;
    /// Alignment in bytes, the same on the host and on the device.
    const ALIGN: usize;
    /// Stores the value's device bytes at the start of `out` (`SIZE`
    /// bytes).
    fn write(&self, out: &mut [u8]);
}

macro_rules! param_field {
    ($($t:ty => $n:literal),*) => {$(
        // SAFETY: a primitive number of $n bytes, aligned to its size on the
        // 64-bit host and on nvptx64; `to_le_bytes` is the device's order.
        unsafe impl ParamField for $t {
            const SIZE: usize = $n;
            const ALIGN: usize = $n;
            #[inline(always)]
            fn write(&self, out: &mut [u8]) {
                out[..$n].copy_from_slice(&self.to_le_bytes());
            }
        }
        const _: () = assert!(
            core::mem::size_of::<$t>() == $n && core::mem::align_of::<$t>() == $n
        );
    )*};
}
param_field!(u8 => 1, i8 => 1, u16 => 2, i16 => 2, u32 => 4, i32 => 4, u64 => 8, i64 => 8,
    usize => 8, isize => 8, f32 => 4, f64 => 8);

// SAFETY: one byte, 0 or 1, on every target.
unsafe impl ParamField for bool {
    const SIZE: usize = 1;
    const ALIGN: usize = 1;
    #[inline(always)]
    fn write(&self, out: &mut [u8]) {
        out[0] = *self as u8;
    }
}

/// The canonical `#[repr(C)]` layout of a struct, field by field, in
/// `const` code (what the `KernelParams` derive asserts against).
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    size: usize,
    align: usize,
}

impl Layout {
    /// An empty struct.
    pub const fn new() -> Self {
        Self { size: 0, align: 1 }
    }
    /// Adds a field of `size` bytes aligned to `align`; its offset.
    pub const fn field(&mut self, size: usize, align: usize) -> usize {
        let off = self.size.next_multiple_of(align);
        self.size = off + size;
        if align > self.align {
            self.align = align;
        }
        off
    }
    /// The struct's size (the end of the last field, rounded up to the
    /// alignment).
    pub const fn size(&self) -> usize {
        self.size.next_multiple_of(self.align)
    }
    /// The struct's alignment (the largest of its fields').
    pub const fn align(&self) -> usize {
        self.align
    }
}

impl Default for Layout {
    fn default() -> Self {
        Self::new()
    }
}
