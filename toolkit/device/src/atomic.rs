//! Atomic read-modify-write on global or shared memory.
//!
//! On the GPU these are `atom.add`/`atom.cas` on a generic address, so one
//! function serves global and shared memory (the hardware resolves the state
//! space). In the simulator they are real `std` atomics (float adds by a
//! compare-and-swap loop), so an atomic counter over many blocks is exact.
//!
//! Prefer the methods on [`DeviceSliceMut`](crate::DeviceSliceMut) and
//! [`SharedSlice`](crate::SharedSlice), which check the index; the raw
//! functions here are for pointers you already know are valid.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Types with a hardware atomic add.
pub trait AtomicAdd: Copy {
    /// `*p += v` atomically; returns the old value (relaxed ordering, device scope).
    ///
    /// # Safety
    /// `p` must be valid, aligned, and point to global or shared memory.
    unsafe fn atomic_add(p: *mut Self, v: Self) -> Self;

    /// `*p += v` atomically on **global** memory, the old value not read
    /// back: a `red.global.add` where the type has one (the reduction is
    /// fire-and-forget: no register waits for the memory system, and no
    /// generic-address test picks between shared and global), otherwise
    /// [`Self::atomic_add`] with its result dropped. The simulator adds
    /// exactly as [`Self::atomic_add`] does.
    ///
    /// # Safety
    /// `p` must be valid, aligned, and point to global memory (a device
    /// buffer, never shared memory).
    #[inline(always)]
    unsafe fn red_add_global(p: *mut Self, v: Self) {
        // SAFETY: forwarded from the caller (global memory is also valid
        // for the generic form).
        unsafe { Self::atomic_add(p, v) };
    }
}

impl AtomicAdd for u32 {
    #[inline(always)]
    unsafe fn atomic_add(p: *mut u32, v: u32) -> u32 {
        // SAFETY: caller guarantees a valid aligned pointer.
        unsafe { AtomicU32::from_ptr(p) }.fetch_add(v, Ordering::Relaxed)
    }
}
impl AtomicAdd for i32 {
    #[inline(always)]
    unsafe fn atomic_add(p: *mut i32, v: i32) -> i32 {
        // SAFETY: caller guarantees a valid aligned pointer; i32 and u32 share layout.
        unsafe { AtomicU32::from_ptr(p as *mut u32) }.fetch_add(v as u32, Ordering::Relaxed) as i32
    }
}
impl AtomicAdd for u64 {
    #[inline(always)]
    unsafe fn atomic_add(p: *mut u64, v: u64) -> u64 {
        // SAFETY: caller guarantees a valid aligned pointer.
        unsafe { AtomicU64::from_ptr(p) }.fetch_add(v, Ordering::Relaxed)
    }
}

#[cfg(target_arch = "nvptx64")]
impl AtomicAdd for f32 {
    #[inline(always)]
    unsafe fn atomic_add(p: *mut f32, v: f32) -> f32 {
        let old: f32;
        // SAFETY: caller guarantees `p` is a valid generic address of an f32.
        unsafe {
            core::arch::asm!("atom.add.f32 {o}, [{p}], {v};",
                o = out(reg32) old, p = in(reg64) p, v = in(reg32) v)
        };
        old
    }
    #[inline(always)]
    unsafe fn red_add_global(p: *mut f32, v: f32) {
        // SAFETY: caller guarantees `p` is a valid generic address of an
        // f32 in global memory, which `cvta.to.global` turns into its
        // global-window address.
        unsafe {
            core::arch::asm!("{{ .reg .b64 g; cvta.to.global.u64 g, {p}; red.global.add.f32 [g], {v}; }}",
                p = in(reg64) p, v = in(reg32) v, options(nostack))
        };
    }
}
#[cfg(target_arch = "nvptx64")]
impl AtomicAdd for f64 {
    #[inline(always)]
    unsafe fn atomic_add(p: *mut f64, v: f64) -> f64 {
        let old: f64;
        // SAFETY: caller guarantees `p` is a valid generic address of an f64 (sm_60+).
        unsafe {
            core::arch::asm!("atom.add.f64 {o}, [{p}], {v};",
                o = out(reg64) old, p = in(reg64) p, v = in(reg64) v)
        };
        old
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl AtomicAdd for f32 {
    unsafe fn atomic_add(p: *mut f32, v: f32) -> f32 {
        // SAFETY: caller guarantees a valid aligned pointer; f32 and u32 share layout.
        let a = unsafe { AtomicU32::from_ptr(p as *mut u32) };
        let old = a
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                Some((f32::from_bits(b) + v).to_bits())
            })
            .unwrap_or_else(|b| b);
        f32::from_bits(old)
    }
}
#[cfg(not(target_arch = "nvptx64"))]
impl AtomicAdd for f64 {
    unsafe fn atomic_add(p: *mut f64, v: f64) -> f64 {
        // SAFETY: caller guarantees a valid aligned pointer; f64 and u64 share layout.
        let a = unsafe { AtomicU64::from_ptr(p as *mut u64) };
        let old = a
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                Some((f64::from_bits(b) + v).to_bits())
            })
            .unwrap_or_else(|b| b);
        f64::from_bits(old)
    }
}

/// `atomicCAS` on a `u32`: if `*p == expected`, store `new`; returns the old value.
///
/// # Safety
/// `p` must be valid and aligned, in global or shared memory.
#[inline(always)]
pub unsafe fn cas_u32(p: *mut u32, expected: u32, new: u32) -> u32 {
    // SAFETY: forwarded from the caller.
    let a = unsafe { AtomicU32::from_ptr(p) };
    match a.compare_exchange(expected, new, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(v) => v,
        Err(v) => {
            cas_failed();
            v
        }
    }
}

/// In the simulator a failed compare-and-swap is a scheduling point: a
/// thread spinning on a lock held by another thread of its block lets that
/// thread run (on the GPU, independent thread scheduling does the same).
#[inline(always)]
fn cas_failed() {
    #[cfg(not(target_arch = "nvptx64"))]
    crate::sim::yield_point();
}

/// `atomicCAS` on a `u64`.
///
/// # Safety
/// `p` must be valid and aligned, in global or shared memory.
#[inline(always)]
pub unsafe fn cas_u64(p: *mut u64, expected: u64, new: u64) -> u64 {
    // SAFETY: forwarded from the caller.
    let a = unsafe { AtomicU64::from_ptr(p) };
    match a.compare_exchange(expected, new, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(v) => v,
        Err(v) => {
            cas_failed();
            v
        }
    }
}

/// `atomicAdd` through a raw pointer.
///
/// # Safety
/// `p` must be valid and aligned, in global or shared memory.
#[inline(always)]
pub unsafe fn add<T: AtomicAdd>(p: *mut T, v: T) -> T {
    // SAFETY: forwarded from the caller.
    unsafe { T::atomic_add(p, v) }
}
