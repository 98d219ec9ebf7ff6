//! Dynamic shared memory as typed views.
//!
//! A block has one dynamic shared-memory buffer whose size in bytes is set at
//! launch. Kernels carve it into typed views with [`dynamic_shared`]. The size
//! of every view is a function in the kernel crate (for example
//! `jacobi_tile_shared_bytes(block)`) that the host launcher calls too, so the
//! two can never disagree. Creating a view checks it fits in what the launch
//! provided (`%dynamic_smem_size` on the GPU, the launch record in the
//! simulator).

use crate::mem::{DeviceCopy, read, write};

/// A typed view of (part of) the block's dynamic shared memory.
#[derive(Debug)]
pub struct SharedSlice<T> {
    ptr: *mut T,
    len: usize,
}
impl<T> Clone for SharedSlice<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SharedSlice<T> {}

/// Bytes needed for `len` elements of `T` starting at `offset_bytes`, rounded
/// up to 16 so consecutive views stay aligned for wide accesses.
pub const fn shared_bytes<T>(offset_bytes: usize, len: usize) -> usize {
    let end = offset_bytes + len * core::mem::size_of::<T>();
    end.div_ceil(16) * 16
}

/// The block's dynamic shared memory from `offset_bytes`, as `len` elements of `T`.
///
/// Stops the kernel if the view does not fit in the dynamic shared memory the
/// launch requested, or if `offset_bytes` is not aligned for `T`.
#[inline(always)]
#[track_caller]
pub fn dynamic_shared<T: DeviceCopy>(offset_bytes: usize, len: usize) -> SharedSlice<T> {
    let need = offset_bytes + len * core::mem::size_of::<T>();
    #[cfg(target_arch = "nvptx64")]
    {
        let have: u32;
        // SAFETY: reads a special register; no memory is touched.
        unsafe {
            core::arch::asm!("mov.u32 {r}, %dynamic_smem_size;", r = out(reg32) have);
        }
        if need > have as usize || offset_bytes % core::mem::align_of::<T>() != 0 {
            core::intrinsics::abort()
        }
        let base = core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<u8>();
        // SAFETY: `offset_bytes < need <= have`, so the pointer is inside the block's buffer.
        let ptr = unsafe { base.add(offset_bytes) } as *mut T;
        SharedSlice { ptr, len }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let base = crate::sim::shared_base(need, offset_bytes, core::mem::align_of::<T>());
        // SAFETY: `shared_base` checked `need` bytes exist from `base`.
        let ptr = unsafe { base.add(offset_bytes) } as *mut T;
        SharedSlice { ptr, len }
    }
}

#[inline(always)]
#[track_caller]
fn check(i: usize, len: usize) {
    if i >= len {
        #[cfg(target_arch = "nvptx64")]
        core::intrinsics::abort();
        #[cfg(not(target_arch = "nvptx64"))]
        crate::sim::fail(crate::sim::Fault::OutOfBounds {
            space: "shared memory",
            index: i,
            len,
        })
    }
}

impl<T: DeviceCopy> SharedSlice<T> {
    /// Number of elements in the view.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }
    /// `true` when the view is empty.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Reads element `i` (checked).
    #[inline(always)]
    #[track_caller]
    pub fn get(&self, i: usize) -> T {
        check(i, self.len);
        // SAFETY: in bounds; the view lies inside the block's shared memory.
        unsafe { read(self.ptr.add(i)) }
    }
    /// Writes element `i` (checked).
    #[inline(always)]
    #[track_caller]
    pub fn set(&self, i: usize, v: T) {
        check(i, self.len);
        // SAFETY: in bounds; the view lies inside the block's shared memory.
        unsafe { write(self.ptr.add(i), v) }
    }
    /// Reads element `i`, unchecked on the GPU (checked in the simulator).
    ///
    /// # Safety
    /// `i < self.len()`.
    #[inline(always)]
    #[track_caller]
    pub unsafe fn get_unchecked(&self, i: usize) -> T {
        #[cfg(not(target_arch = "nvptx64"))]
        check(i, self.len);
        // SAFETY: the caller guarantees `i < len`.
        unsafe { read(self.ptr.add(i)) }
    }
    /// Writes element `i`, unchecked on the GPU (checked in the simulator).
    ///
    /// # Safety
    /// `i < self.len()`.
    #[inline(always)]
    #[track_caller]
    pub unsafe fn set_unchecked(&self, i: usize, v: T) {
        #[cfg(not(target_arch = "nvptx64"))]
        check(i, self.len);
        // SAFETY: the caller guarantees `i < len`.
        unsafe { write(self.ptr.add(i), v) }
    }
    /// Raw pointer to the first element.
    #[inline(always)]
    pub fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }
}

impl<T: crate::atomic::AtomicAdd + DeviceCopy> SharedSlice<T> {
    /// Atomic add on shared element `i` (`atom.shared.add`); returns the old value.
    #[inline(always)]
    #[track_caller]
    pub fn atomic_add(&self, i: usize, v: T) -> T {
        check(i, self.len);
        // SAFETY: in bounds, inside the block's shared memory.
        unsafe { T::atomic_add(self.ptr.add(i), v) }
    }
}
