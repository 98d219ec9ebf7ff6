//! Dynamic shared memory as typed views.
//!
//! A block has one dynamic shared-memory buffer whose size in bytes is set at
//! launch. Kernels carve it into typed views with [`dynamic_shared`]. The size
//! of every view is a function in the kernel crate (for example
//! `jacobi_tile_shared_bytes(block)`) that the host launcher calls too, so the
//! two can never disagree. Creating a view checks it fits in what the launch
//! provided (`%dynamic_smem_size` on the GPU, the launch record in the
//! simulator).

use crate::mem::{DeviceCopy, check, len_methods};

/// Reads a shared-memory element (recorded by the race detector on the host).
///
/// # Safety
/// `p` must be valid for reads of `T` and aligned.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn read<T: Copy>(p: *const T) -> T {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: forwarded from the caller.
        unsafe { p.read() }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let loc = core::panic::Location::caller();
        crate::sim::shared_access(p as usize, core::mem::size_of::<T>(), false, loc);
        // SAFETY: forwarded from the caller.
        unsafe { crate::sim::mem::read(p) }
    }
}

/// Writes a shared-memory element (recorded by the race detector on the host).
///
/// # Safety
/// `p` must be valid for writes of `T` and aligned.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
unsafe fn write<T: Copy>(p: *mut T, v: T) {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: forwarded from the caller.
        unsafe { p.write(v) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let loc = core::panic::Location::caller();
        crate::sim::shared_access(p as usize, core::mem::size_of::<T>(), true, loc);
        // SAFETY: forwarded from the caller.
        unsafe { crate::sim::mem::write(p, v) }
    }
}

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

/// Bytes of dynamic shared memory the launch gave the block
/// (`%dynamic_smem_size`): a kernel whose extra buffer is optional checks
/// here whether the host asked for it.
#[inline(always)]
pub fn dynamic_shared_bytes() -> usize {
    #[cfg(target_arch = "nvptx64")]
    {
        let have: u32;
        // SAFETY: reads a special register; no memory is touched.
        unsafe {
            core::arch::asm!("mov.u32 {r}, %dynamic_smem_size;", r = out(reg32) have);
        }
        have as usize
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::sim::shared_available()
    }
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
        if need > dynamic_shared_bytes() || offset_bytes % core::mem::align_of::<T>() != 0 {
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

impl<T: DeviceCopy> SharedSlice<T> {
    len_methods!("view");
    /// Reads element `i` (checked).
    #[inline(always)]
    #[track_caller]
    pub fn get(&self, i: usize) -> T {
        check(i, self.len, "shared memory");
        // SAFETY: in bounds; the view lies inside the block's shared memory.
        unsafe { read(self.ptr.add(i)) }
    }
    /// Writes element `i` (checked).
    #[inline(always)]
    #[track_caller]
    pub fn set(&self, i: usize, v: T) {
        check(i, self.len, "shared memory");
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
        check(i, self.len, "shared memory");
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
        check(i, self.len, "shared memory");
        // SAFETY: the caller guarantees `i < len`.
        unsafe { write(self.ptr.add(i), v) }
    }
    /// Raw pointer to the first element.
    #[inline(always)]
    pub fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }
}

impl<V: DeviceCopy> SharedSlice<V> {
    /// Starts an asynchronous 16-byte copy of group `j` of `src` (the `j`-th
    /// `V` of it, as [`DeviceSlice::get_vec_unchecked`](crate::mem::DeviceSlice::get_vec_unchecked) reads it) into
    /// element `i` of this view: `cp.async.cg.shared.global` (sm_80+), which
    /// moves the bytes from L2 to shared memory without passing through
    /// registers. With `valid == false` nothing is read and the element is
    /// filled with zeros (the instruction's `src-size` is 0), for groups
    /// outside the matrix.
    ///
    /// The copy is complete, for this thread, once a
    /// [`wait_async_copies`] has covered the group it was committed in
    /// ([`commit_async_copies`]); other threads see it after that wait and a
    /// barrier. The simulator keeps it in flight until then: any access to
    /// element `i` before the wait (by any thread), another copy into it,
    /// or a write of the source by this thread stops the launch with an
    /// error naming the copy; the landing of its bytes is this thread's
    /// write at the wait for the race detector. In order the bytes move at
    /// the issue; a random schedule moves them to a random point up to the
    /// wait.
    ///
    /// # Safety
    /// `size_of::<V>() == 16`; `i < self.len()`; when `valid`, group `j` lies
    /// inside `src` and `src` is 16-byte aligned (device allocations are
    /// 256-byte aligned). Nothing may read or write element `i` between this
    /// call and the wait that completes it.
    #[inline(always)]
    #[track_caller]
    pub unsafe fn copy_async<T: DeviceCopy>(
        &self,
        i: usize,
        src: crate::mem::DeviceSlice<'_, T>,
        j: usize,
        valid: bool,
    ) {
        const { assert!(core::mem::size_of::<V>() == 16) };
        #[cfg(target_arch = "nvptx64")]
        {
            // SAFETY: the caller guarantees `i < len` (so `dst` is inside
            // the block's shared memory) and, when `valid`, that the 16
            // bytes at `from` are inside `src` and aligned; with
            // `valid == false` the source size is 0 and nothing is read.
            unsafe {
                let dst = self.ptr.add(i);
                let from = if valid {
                    (src.as_ptr() as *const V).add(j)
                } else {
                    src.as_ptr() as *const V
                };
                let bytes: u32 = if valid { 16 } else { 0 };
                core::arch::asm!(
                    "{{ .reg .u64 sd, gs; cvta.to.shared.u64 sd, {d}; cvta.to.global.u64 gs, {g}; \
                     cp.async.cg.shared.global [sd], [gs], 16, {n}; }}",
                    d = in(reg64) dst,
                    g = in(reg64) from,
                    n = in(reg32) bytes,
                );
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            check(i, self.len, "shared memory");
            let from = if valid {
                // Bounds, alignment and the global race detector's read
                // record (the value itself moves when the copy lands).
                // SAFETY: the caller guarantees the group is inside `src` and
                // aligned (the simulator checks both).
                let _ = unsafe { src.get_vec_unchecked::<V>(j) };
                (src.as_ptr() as *const V).wrapping_add(j) as usize
            } else {
                0
            };
            crate::sim::async_copy::issue(
                self.ptr.wrapping_add(i) as usize,
                from,
                valid,
                core::panic::Location::caller(),
            );
        }
    }
}

/// Closes the group of [`SharedSlice::copy_async`] copies this thread has
/// started since the last commit (`cp.async.commit_group`). A commit with no
/// copies makes an empty group, which keeps group counting uniform in a
/// pipeline's last iterations.
#[inline(always)]
pub fn commit_async_copies() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no operands; the asm is a compiler barrier for memory (no
    // `nomem`), so no shared access moves across it.
    unsafe {
        core::arch::asm!("cp.async.commit_group;")
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::sim::async_copy::commit();
}

/// Waits until at most `N` of this thread's committed copy groups are still
/// in flight (`cp.async.wait_group N`): with `S` stages and one group per
/// stage, `N = S - 2` means the oldest tile has landed. Follow it with a
/// barrier before other threads read what this thread copied.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn wait_async_copies<const N: u32>() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no operands besides the immediate; the asm is a compiler
    // barrier for memory, so shared reads after it are not hoisted above it.
    unsafe {
        core::arch::asm!("cp.async.wait_group {n};", n = const N)
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::sim::async_copy::wait(N, core::panic::Location::caller());
}

impl<T: crate::atomic::AtomicAdd + DeviceCopy> SharedSlice<T> {
    /// Atomic add on shared element `i` (`atom.shared.add`); returns the old value.
    #[inline(always)]
    #[track_caller]
    pub fn atomic_add(&self, i: usize, v: T) -> T {
        check(i, self.len, "shared memory");
        // SAFETY: in bounds, inside the block's shared memory.
        unsafe { T::atomic_add(self.ptr.add(i), v) }
    }
}

/// Checks an indexed shared-memory access and records it for the race
/// detector; the access itself is the caller's, through the reference.
#[inline(always)]
#[track_caller]
fn index_access<T>(ptr: *mut T, i: usize, len: usize, write: bool) -> *mut T {
    check(i, len, "shared memory");
    // SAFETY: `i < len` was just checked; the view lies inside the block's
    // shared memory.
    let p = unsafe { ptr.add(i) };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::sim::shared_access(
        p as usize,
        core::mem::size_of::<T>(),
        write,
        core::panic::Location::caller(),
    );
    #[cfg(target_arch = "nvptx64")]
    let _ = write;
    p
}

/// `s[i]`: a checked shared-memory read, as [`SharedSlice::get`].
impl<T: DeviceCopy> core::ops::Index<usize> for SharedSlice<T> {
    type Output = T;
    #[inline(always)]
    #[track_caller]
    fn index(&self, i: usize) -> &T {
        // SAFETY: in bounds (checked), inside the block's shared memory,
        // which lives as long as the block; ordering against other threads'
        // writes is the kernel's barriers', which the simulator checks.
        unsafe { &*index_access(self.ptr, i, self.len, false) }
    }
}

/// `s[i] = v`, `s[i] += v`: a checked shared-memory write, as [`SharedSlice::set`].
impl<T: DeviceCopy> core::ops::IndexMut<usize> for SharedSlice<T> {
    #[inline(always)]
    #[track_caller]
    fn index_mut(&mut self, i: usize) -> &mut T {
        // SAFETY: as `index`; a write raced by another thread is a kernel
        // bug the simulator's race detector reports.
        unsafe { &mut *index_access(self.ptr, i, self.len, true) }
    }
}
