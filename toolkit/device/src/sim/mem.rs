//! Raw memory accesses of the simulator: relaxed atomic loads and stores
//! of an element's bits, so a racy kernel stays defined behaviour on the
//! host. The race detector does not see them: the kernel views
//! ([`DeviceSlice`](crate::DeviceSlice), [`SharedSlice`](crate::SharedSlice))
//! record their accesses before calling these; device code that models
//! asynchronous hardware copies (TMA, `wgmma` operand reads) calls them
//! directly.

use core::mem::{MaybeUninit, align_of, size_of};
use core::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering::Relaxed};

macro_rules! chunked {
    ($p:expr, $t:ty, |$chunk:ident, $atomic:ident, $bits:ident, $off:ident| $body:block) => {{
        let size = size_of::<$t>();
        let align = align_of::<$t>();
        if size % 8 == 0 && align >= 8 {
            for $off in (0..size).step_by(8) {
                type $atomic = AtomicU64;
                type $bits = u64;
                let $chunk = 8;
                let _ = $chunk;
                $body
            }
        } else if size % 4 == 0 && align >= 4 {
            for $off in (0..size).step_by(4) {
                type $atomic = AtomicU32;
                type $bits = u32;
                let $chunk = 4;
                let _ = $chunk;
                $body
            }
        } else if size % 2 == 0 && align >= 2 {
            for $off in (0..size).step_by(2) {
                type $atomic = AtomicU16;
                type $bits = u16;
                let $chunk = 2;
                let _ = $chunk;
                $body
            }
        } else {
            for $off in 0..size {
                type $atomic = AtomicU8;
                type $bits = u8;
                let $chunk = 1;
                let _ = $chunk;
                $body
            }
        }
    }};
}

/// Reads `*p` as relaxed atomic loads of its bits.
///
/// # Safety
/// `p` valid for reads and aligned.
pub unsafe fn read<T: Copy>(p: *const T) -> T {
    let mut out = MaybeUninit::<T>::uninit();
    let dst = out.as_mut_ptr() as *mut u8;
    let src = p as *const u8;
    chunked!(p, T, |chunk, A, B, off| {
        // SAFETY: `off` is inside `T`, aligned to the chunk width because
        // `T`'s alignment is at least that width; `p` is valid (caller).
        unsafe {
            let v = A::from_ptr(src.add(off) as *mut B).load(Relaxed);
            (dst.add(off) as *mut B).write(v);
        }
    });
    // SAFETY: every byte of `out` was written above.
    unsafe { out.assume_init() }
}

/// Writes `*p = v` as relaxed atomic stores of its bits.
///
/// # Safety
/// `p` valid for writes and aligned.
pub unsafe fn write<T: Copy>(p: *mut T, v: T) {
    let src = &v as *const T as *const u8;
    let dst = p as *mut u8;
    chunked!(p, T, |chunk, A, B, off| {
        // SAFETY: as in `read`.
        unsafe {
            let bits = (src.add(off) as *const B).read();
            A::from_ptr(dst.add(off) as *mut B).store(bits, Relaxed);
        }
    });
}
