//! Kernel views of device buffers.
//!
//! A kernel never receives a Rust slice: `&[T]` promises exclusive or immutable
//! access that thousands of threads sharing one buffer cannot honour. Instead
//! `#[kernel]` turns each [`DeviceSlice`]/[`DeviceSliceMut`] parameter into two
//! PTX parameters (pointer and length) and rebuilds the view inside the kernel.
//! The length lets every access be checked: `get`/`set` check (a `trap` on the
//! GPU, a precise error in the simulator); `get_unchecked`/`set_unchecked` do
//! not on the GPU, but the simulator checks them all the same, so a wrong index
//! in a fast path is still caught in CI.

use core::marker::PhantomData;

/// Element types that can live in device memory: plain-old-data with no
/// padding and no invalid bit patterns.
///
/// # Safety
/// Implementors must be `Copy`, have no padding bytes and accept every bit
/// pattern (the simulator and the GPU move them as raw bits).
pub unsafe trait DeviceCopy: Copy + Send + Sync + 'static {}
macro_rules! device_copy {
    ($($t:ty),*) => {$(
        // SAFETY: primitive numeric types have no padding and accept any bits.
        unsafe impl DeviceCopy for $t {}
    )*};
}
device_copy!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64, usize, isize);
// SAFETY: arrays of POD are POD.
unsafe impl<T: DeviceCopy, const N: usize> DeviceCopy for [T; N] {}

/// A scalar kernel parameter's value, as the GPU receives it.
// A struct's bytes travel inline: the value lives for one launch, on the
// stack, and the device crate has no allocator to box them in.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScalarValue {
    /// `.u32`
    U32(u32),
    /// `.s32`
    I32(i32),
    /// `.u64` (`u64` and `usize`)
    U64(u64),
    /// `.f32`
    F32(f32),
    /// `.f64`
    F64(f64),
    /// `.u8` (a `bool`)
    U8(u8),
    /// `.align A .b8 name[SIZE]`: a `#[repr(C)]` struct (see
    /// [`param`](crate::param)).
    Bytes(crate::param::ParamBytes),
}

/// Types a kernel takes by value: `u32`, `i32`, `u64`, `usize`, `f32`,
/// `f64` (and so every [`Real`](crate::math::Real)), `bool`, and the
/// field-less `#[repr(u32)]` enums and `#[repr(C)]` structs that derive
/// [`KernelParams`](crate::KernelParams). The host passes a value of the
/// same type for such a parameter.
pub trait KernelScalar: Copy + Send + Sync + 'static {
    /// The value as a PTX parameter.
    fn scalar_value(self) -> ScalarValue;
    /// A compile-time check of the type's layout, which every GPU entry
    /// taking the type evaluates (the derive asserts the canonical layout
    /// here; see [`param`](crate::param)).
    #[doc(hidden)]
    const LAYOUT_CHECKED: () = ();
}

macro_rules! kernel_scalar {
    ($($t:ty => $v:ident as $c:ty),*) => {$(
        impl KernelScalar for $t {
            #[inline(always)]
            fn scalar_value(self) -> ScalarValue {
                ScalarValue::$v(self as $c)
            }
        }
    )*};
}
kernel_scalar!(u32 => U32 as u32, i32 => I32 as i32, u64 => U64 as u64, usize => U64 as u64, f32 => F32 as f32, f64 => F64 as f64, bool => U8 as u8);

/// Sixteen bytes of four `f32`, aligned so a load is one `ld.global.v4.f32`.
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct F32x4(pub [f32; 4]);
/// Sixteen bytes of two `f64`, aligned so a load is one `ld.global.v2.f64`.
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct F64x2(pub [f64; 2]);
/// Eight bytes of two `f32`, aligned so a store is one `st.global.v2.f32`.
#[repr(C, align(8))]
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct F32x2(pub [f32; 2]);
// SAFETY: repr(C) array of floats, no padding.
unsafe impl DeviceCopy for F32x2 {}
/// Sixteen bytes of four `u32`, aligned to 16: one `ld.shared.v4.u32`, one
/// `cp.async` chunk, one row of an `ldmatrix` 8x8 matrix of 16-bit values.
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct U32x4(pub [u32; 4]);
// SAFETY: repr(C) arrays of floats, no padding.
unsafe impl DeviceCopy for F32x4 {}
// SAFETY: repr(C) array of integers, no padding.
unsafe impl DeviceCopy for U32x4 {}
// SAFETY: repr(C) arrays of floats, no padding.
unsafe impl DeviceCopy for F64x2 {}

/// Read-only view of a device buffer inside a kernel (pointer + length).
#[repr(C)]
#[derive(Debug)]
pub struct DeviceSlice<'a, T> {
    ptr: *const T,
    len: usize,
    _life: PhantomData<&'a [T]>,
}
impl<T> Clone for DeviceSlice<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DeviceSlice<'_, T> {}
// SAFETY: the view only reads; reads from many threads are fine.
unsafe impl<T: Sync> Sync for DeviceSlice<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Send for DeviceSlice<'_, T> {}

/// Writable view of a device buffer inside a kernel (pointer + length).
///
/// It is `Copy` because every GPU thread holds its own copy of the kernel
/// parameters; which thread writes which element is the kernel's design. The
/// simulator's race detector reports a design in which two blocks of one
/// launch touch the same element and one of them writes it; with detection
/// off, its memory model (relaxed atomics) makes such a design visible as a
/// wrong result rather than as undefined behaviour on the host.
#[repr(C)]
#[derive(Debug)]
pub struct DeviceSliceMut<'a, T> {
    ptr: *mut T,
    len: usize,
    _life: PhantomData<&'a [T]>,
}
impl<T> Clone for DeviceSliceMut<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DeviceSliceMut<'_, T> {}
// SAFETY: element accesses go through `read`/`write` below, which are atomic
// (relaxed) in the simulator and plain loads/stores on the GPU.
unsafe impl<T: Send + Sync> Sync for DeviceSliceMut<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Send for DeviceSliceMut<'_, T> {}

/// Reads one element (element `index` of its view, for reports). On the
/// host the read is recorded by the race detector, then done as a relaxed
/// atomic load of the element's bits, so kernels with deliberate races (the
/// in-place diffusion lesson, with race detection off) stay defined
/// behaviour in the simulator.
///
/// # Safety
/// `p` must be valid for reads of `T` and aligned.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn read<T: Copy>(p: *const T, index: usize) -> T {
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = index;
        // SAFETY: forwarded from the caller.
        unsafe { p.read() }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let loc = core::panic::Location::caller();
        crate::sim::global_access(p as usize, core::mem::size_of::<T>(), index, false, loc);
        // SAFETY: forwarded from the caller.
        unsafe { crate::sim::mem::read(p) }
    }
}

/// Writes one element (recorded by the race detector and checked for
/// `wgmma` accumulator poison, then a relaxed atomic store of its bits on
/// the host).
///
/// # Safety
/// `p` must be valid for writes of `T` and aligned.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn write<T: Copy>(p: *mut T, index: usize, v: T) {
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = index;
        // SAFETY: forwarded from the caller.
        unsafe { p.write(v) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: forwarded from the caller.
    unsafe {
        crate::sim::global_store(p, index, v, core::panic::Location::caller())
    }
}

/// Stops the kernel (trap / simulator error) when `i` is out of bounds of
/// `len` elements of `what` (the memory space, for the simulator's report).
#[inline(always)]
#[track_caller]
pub(crate) fn check(i: usize, len: usize, what: &'static str) {
    if i >= len {
        #[cfg(target_arch = "nvptx64")]
        {
            let _ = what;
            core::intrinsics::abort()
        }
        #[cfg(not(target_arch = "nvptx64"))]
        crate::sim::fail(crate::sim::Fault::OutOfBounds {
            space: what,
            index: i,
            len,
        })
    }
}

/// `len` and `is_empty` of a view or buffer type with a `len` field (`$what`
/// names the type in their docs).
macro_rules! len_methods {
    ($what:literal) => {
        #[doc = concat!("Number of elements in the ", $what, ".")]
        #[inline(always)]
        pub fn len(&self) -> usize {
            self.len
        }
        #[doc = concat!("`true` when the ", $what, " has no elements.")]
        #[inline(always)]
        pub fn is_empty(&self) -> bool {
            self.len == 0
        }
    };
}
pub(crate) use len_methods;

macro_rules! common_methods {
    () => {
        len_methods!("buffer");
        /// Reads element `i`; out of bounds stops the kernel (trap / simulator error).
        #[inline(always)]
        #[track_caller]
        pub fn get(&self, i: usize) -> T {
            check(i, self.len, "device buffer (read)");
            // SAFETY: `i < len` was just checked and the launcher guarantees
            // `ptr` is valid for `len` elements.
            unsafe { read(self.ptr.add(i), i) }
        }
        /// Reads element `i` without a check on the GPU (the simulator still checks).
        ///
        /// # Safety
        /// `i < self.len()`.
        #[inline(always)]
        #[track_caller]
        pub unsafe fn get_unchecked(&self, i: usize) -> T {
            #[cfg(not(target_arch = "nvptx64"))]
            check(i, self.len, "device buffer (read)");
            // SAFETY: the caller guarantees `i < len`.
            unsafe { read(self.ptr.add(i), i) }
        }
        /// Reads the `i`-th group of `size_of::<V>() / size_of::<T>()` elements
        /// as one wide (16-byte) load: `ld.global.v4.f32` for [`F32x4`].
        ///
        /// # Safety
        /// The group must lie inside the buffer and the buffer must be aligned
        /// to `V` (device allocations are 256-byte aligned).
        #[inline(always)]
        #[track_caller]
        pub unsafe fn get_vec_unchecked<V: DeviceCopy>(&self, i: usize) -> V {
            #[cfg(not(target_arch = "nvptx64"))]
            {
                let per = core::mem::size_of::<V>() / core::mem::size_of::<T>();
                check(i * per + per - 1, self.len, "device buffer (wide read)");
                crate::sim::check_align(self.ptr as usize, core::mem::align_of::<V>());
            }
            // SAFETY: the caller guarantees bounds and alignment.
            unsafe {
                read(
                    (self.ptr as *const V).add(i),
                    i * (core::mem::size_of::<V>() / core::mem::size_of::<T>().max(1)),
                )
            }
        }
        /// Raw pointer to the first element (for inline PTX and intrinsics).
        #[inline(always)]
        pub fn as_ptr(&self) -> *const T {
            self.ptr
        }
    };
}

impl<'a, T: Copy> DeviceSlice<'a, T> {
    /// Builds a view from a pointer and a length.
    ///
    /// # Safety
    /// `ptr` must be valid for reads of `len` elements of `T` for `'a`, aligned,
    /// and not written by anything during the kernel. `#[kernel]` calls this
    /// with the values the host launcher passed.
    #[inline(always)]
    pub unsafe fn from_raw_parts(ptr: *const T, len: usize) -> Self {
        Self {
            ptr,
            len,
            _life: PhantomData,
        }
    }
    common_methods!();
}

impl<'a, T: Copy> DeviceSliceMut<'a, T> {
    /// Builds a view from a pointer and a length.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `len` elements of `T` for
    /// `'a` and aligned. `#[kernel]` calls this with the launcher's values.
    #[inline(always)]
    pub unsafe fn from_raw_parts(ptr: *mut T, len: usize) -> Self {
        Self {
            ptr,
            len,
            _life: PhantomData,
        }
    }
    common_methods!();

    /// Writes element `i`; out of bounds stops the kernel.
    #[inline(always)]
    #[track_caller]
    pub fn set(&self, i: usize, v: T) {
        check(i, self.len, "device buffer (write)");
        // SAFETY: `i < len` was just checked; the launcher guarantees validity.
        unsafe { write(self.ptr.add(i), i, v) }
    }
    /// Writes element `i` without a check on the GPU (the simulator checks).
    ///
    /// # Safety
    /// `i < self.len()`.
    #[inline(always)]
    #[track_caller]
    pub unsafe fn set_unchecked(&self, i: usize, v: T) {
        #[cfg(not(target_arch = "nvptx64"))]
        check(i, self.len, "device buffer (write)");
        // SAFETY: the caller guarantees `i < len`.
        unsafe { write(self.ptr.add(i), i, v) }
    }
    /// Writes the `i`-th group of elements as one wide store (`st.global.v4.f32`).
    ///
    /// # Safety
    /// As [`Self::get_vec_unchecked`].
    #[inline(always)]
    #[track_caller]
    pub unsafe fn set_vec_unchecked<V: DeviceCopy>(&self, i: usize, v: V) {
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let per = core::mem::size_of::<V>() / core::mem::size_of::<T>();
            check(i * per + per - 1, self.len, "device buffer (wide write)");
            crate::sim::check_align(self.ptr as usize, core::mem::align_of::<V>());
        }
        // SAFETY: the caller guarantees bounds and alignment.
        unsafe {
            write(
                (self.ptr as *mut V).add(i),
                i * (core::mem::size_of::<V>() / core::mem::size_of::<T>().max(1)),
                v,
            )
        }
    }
    /// Read-only view of the same buffer.
    #[inline(always)]
    pub fn as_const(&self) -> DeviceSlice<'a, T> {
        DeviceSlice {
            ptr: self.ptr,
            len: self.len,
            _life: PhantomData,
        }
    }
    /// Raw mutable pointer to the first element.
    #[inline(always)]
    pub fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }
}

impl<T: crate::atomic::AtomicAdd> DeviceSliceMut<'_, T> {
    /// `atomicAdd(&buf[i], v)`: returns the old value. Checked like [`Self::set`].
    #[inline(always)]
    #[track_caller]
    pub fn atomic_add(&self, i: usize, v: T) -> T {
        check(i, self.len, "device buffer (atomic)");
        // SAFETY: in bounds (checked) and valid (launcher contract).
        unsafe { T::atomic_add(self.ptr.add(i), v) }
    }

    /// `buf[i] += v` atomically, the old value not read back
    /// ([`AtomicAdd::red_add_global`](crate::atomic::AtomicAdd::red_add_global):
    /// `red.global.add` for `f32`). Checked like [`Self::set`]. Prefer it to
    /// [`Self::atomic_add`] whenever the result is unused: a kernel that
    /// adds many partial sums (a split-K or attention backward's `dQ`)
    /// issues one instruction per add instead of a state-space test, an
    /// atomic and a wait for its result.
    #[inline(always)]
    #[track_caller]
    pub fn red_add(&self, i: usize, v: T) {
        check(i, self.len, "device buffer (atomic)");
        // SAFETY: in bounds (checked); a device buffer is global memory
        // and valid for the launch (launcher contract).
        unsafe { T::red_add_global(self.ptr.add(i), v) }
    }
}

impl DeviceSliceMut<'_, f32> {
    /// `buf[i] += v[0]` and `buf[i + 1] += v[1]`, each atomically, the old
    /// values not read back: one `red.global.add.v2.f32` (sm_90 and newer;
    /// ptxas refuses it in a kernel of a portable sm_80 module), half the
    /// instructions of two [`Self::red_add`]. `i` must be even (the pair
    /// is 8-byte aligned in a device allocation); both indices are checked
    /// like [`Self::set`]. The simulator adds the two as [`Self::red_add`]
    /// does.
    #[inline(always)]
    #[track_caller]
    pub fn red_add_pair(&self, i: usize, v: [f32; 2]) {
        check(i + 1, self.len, "device buffer (atomic pair)");
        if !i.is_multiple_of(2) {
            crate::trap("red_add_pair: the index of a pair must be even");
        }
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: `i + 1 < len` (checked) and `i` even, so the pair lies in
        // the buffer, 8-byte aligned (device allocations are 256-byte
        // aligned); a device buffer is global memory, which `cvta.to.global`
        // turns into its global-window address.
        unsafe {
            core::arch::asm!(
                "{{ .reg .b64 g; cvta.to.global.u64 g, {p}; red.global.add.v2.f32 [g], {{{a}, {b}}}; }}",
                p = in(reg64) self.ptr.add(i),
                a = in(reg32) v[0],
                b = in(reg32) v[1],
                options(nostack)
            )
        };
        #[cfg(not(target_arch = "nvptx64"))]
        {
            self.red_add(i, v[0]);
            self.red_add(i + 1, v[1]);
        }
    }
}

/// Records an indexed access for the simulator's race detector and checks
/// its bounds (a `trap` on the GPU, a precise error in the simulator); the
/// access itself is the caller's plain load or store through the returned
/// reference.
#[inline(always)]
#[track_caller]
fn index_access<T>(ptr: *const T, i: usize, len: usize, write: bool) -> *const T {
    check(
        i,
        len,
        if write {
            "device buffer (write)"
        } else {
            "device buffer (read)"
        },
    );
    // SAFETY: `i < len` was just checked, and the view's pointer is valid
    // for `len` elements (the launcher's contract).
    let p = unsafe { ptr.add(i) };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::sim::global_access(
        p as usize,
        core::mem::size_of::<T>(),
        i,
        write,
        core::panic::Location::caller(),
    );
    p
}

/// `x[i]`: a checked read, as [`DeviceSlice::get`] (and recorded by the
/// simulator's race detector the same way).
impl<T: Copy> core::ops::Index<usize> for DeviceSlice<'_, T> {
    type Output = T;
    #[inline(always)]
    #[track_caller]
    fn index(&self, i: usize) -> &T {
        // SAFETY: `index_access` checked `i < len`; the element is valid
        // for reads for the kernel's duration (launcher contract) and
        // nothing writes a `DeviceSlice`'s buffer during the kernel.
        unsafe { &*index_access(self.ptr, i, self.len, false) }
    }
}

/// `y[i]`: a checked read of a writable buffer.
impl<T: Copy> core::ops::Index<usize> for DeviceSliceMut<'_, T> {
    type Output = T;
    #[inline(always)]
    #[track_caller]
    fn index(&self, i: usize) -> &T {
        // SAFETY: in bounds (checked); valid for the kernel's duration.
        // Which thread writes which element is the kernel's design, which
        // the simulator's race detector checks.
        unsafe { &*index_access(self.ptr, i, self.len, false) }
    }
}

/// `y[i] = v` and `y[i] += v`: a checked write, as [`DeviceSliceMut::set`]
/// (recorded as a write by the simulator's race detector; a compound
/// assignment reads the element first).
impl<T: Copy> core::ops::IndexMut<usize> for DeviceSliceMut<'_, T> {
    #[inline(always)]
    #[track_caller]
    fn index_mut(&mut self, i: usize) -> &mut T {
        // SAFETY: in bounds (checked); the element is valid for writes for
        // the kernel's duration. Elements written by one thread and touched
        // by another in the same launch are a kernel bug the simulator's
        // race detector reports.
        unsafe { &mut *(index_access(self.ptr, i, self.len, true) as *mut T) }
    }
}
