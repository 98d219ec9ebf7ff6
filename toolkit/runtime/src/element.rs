//! [`Element`]: the types a [`Buffer`](crate::Buffer) holds and the runtime
//! copies between host and device memory as raw bytes.

use ptxlab_device::mem::{DeviceCopy, F32x2, F32x4, F64x2, U32x4};

/// An element type of device memory: what [`Device::upload`](crate::Device::upload),
/// [`Device::download`](crate::Device::download), the stream copies of
/// [`OnStream`](crate::device::OnStream) and NCCL move, byte for byte.
///
/// Generic host code names this one bound for data it puts on a device; the
/// device-side contract ([`DeviceCopy`]) comes with it.
///
/// # Safety
/// Implement it only for a type that
/// * has no padding bytes and no niche: every bit pattern of its size is a
///   valid value (the runtime reads device memory, which may hold anything,
///   as `Self`, including memory that was only zeroed);
/// * means the same bytes on the host and on the device: no pointers,
///   references or handles, nothing with `Drop` (it is `Copy`);
/// * has a layout fixed by `#[repr(C)]`, `#[repr(transparent)]` or a
///   primitive type, with an alignment of at most 256 bytes (the alignment
///   of every device allocation).
pub unsafe trait Element: DeviceCopy {}

macro_rules! element {
    ($($t:ty),* $(,)?) => {$(
        // SAFETY: a primitive integer or float: no padding, every bit pattern
        // valid, the same bytes on host and device, alignment at most 8.
        unsafe impl Element for $t {}
    )*};
}
element!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64, usize, isize);

// SAFETY: `#[repr(C, align(8))]` around `[f32; 2]`: 8 bytes, no padding,
// every bit pattern valid.
unsafe impl Element for F32x2 {}
// SAFETY: `#[repr(C, align(16))]` around `[f32; 4]`: 16 bytes, no padding,
// every bit pattern valid.
unsafe impl Element for F32x4 {}
// SAFETY: `#[repr(C, align(16))]` around `[u32; 4]`: 16 bytes, no padding,
// every bit pattern valid.
unsafe impl Element for U32x4 {}
// SAFETY: `#[repr(C, align(16))]` around `[f64; 2]`: 16 bytes, no padding,
// every bit pattern valid.
unsafe impl Element for F64x2 {}
// SAFETY: `#[repr(transparent)]` around `u8`: one byte, every bit pattern
// a valid FP8 code (the NaN codes included).
unsafe impl Element for ptxlab_device::fp8::E4m3 {}
// SAFETY: as for `E4m3`.
unsafe impl Element for ptxlab_device::fp8::E5m2 {}
// SAFETY: an array of elements has no padding between them (its size is
// `N * size_of::<T>()`), every bit pattern of each is valid, and its
// alignment is `T`'s.
unsafe impl<T: Element, const N: usize> Element for [T; N] {}

/// An element as cudarc sees it: the runtime's copies go through cudarc's
/// typed calls, which take their own trait for the same contract.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub(crate) struct Raw<T>(pub(crate) T);

// SAFETY: `Raw<T>` is `T` (`repr(transparent)`), and `T: Element` promises
// what `DeviceRepr` asks: plain bytes, valid for every pattern, the same
// on host and device.
unsafe impl<T: Element> cudarc::driver::DeviceRepr for Raw<T> {}

/// `data` as a slice of [`Raw`] (the same memory).
pub(crate) fn raw<T: Element>(data: &[T]) -> &[Raw<T>] {
    // SAFETY: `Raw<T>` is `repr(transparent)` over `T`: same size, alignment
    // and validity; the length and lifetime are `data`'s.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<Raw<T>>(), data.len()) }
}

/// `data` as its elements (the same memory).
pub(crate) fn unraw<T: Element>(data: Vec<Raw<T>>) -> Vec<T> {
    let mut data = std::mem::ManuallyDrop::new(data);
    let (ptr, len, cap) = (data.as_mut_ptr(), data.len(), data.capacity());
    // SAFETY: the allocation was made by a `Vec<Raw<T>>`, and `Raw<T>` has
    // `T`'s size and alignment, so it is a valid `Vec<T>` allocation of the
    // same length and capacity; the original is not dropped.
    unsafe { Vec::from_raw_parts(ptr.cast::<T>(), len, cap) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_views_are_the_same_memory() {
        let v = vec![1.5f32, -2.0, 3.25];
        assert_eq!(raw(&v).len(), 3);
        assert_eq!(raw(&v)[1].0, -2.0);
        let back = unraw(vec![Raw(1u16), Raw(9)]);
        assert_eq!(back, [1, 9]);
    }
}
