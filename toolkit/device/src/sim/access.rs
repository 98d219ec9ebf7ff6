//! What every access through a kernel view goes through under the
//! simulator ([`SharedSlice`](crate::SharedSlice) for shared memory,
//! [`DeviceSlice`](crate::DeviceSlice) and
//! [`DeviceSliceMut`](crate::DeviceSliceMut) for global memory): first the
//! asynchronous engine ([`asyncs`]: does an operation in flight still own
//! these bytes?), then the race detector ([`race`]), then, under a random
//! schedule, perhaps an interruption. A DSMEM access ([`remote_access`])
//! is the cluster's checks ([`cluster`]), then, on the thread's own block,
//! those of a shared access. It sits above the three engines, which are
//! independent of each other but for the asynchronous engine's own records
//! of the writes it lands and the cluster barrier, which is a block
//! barrier for the other two.

use super::asyncs;
use super::block::{self, Block, ThreadCtx};
use super::cluster::{self, RemoteKind};
use super::error::Fault;
use super::mem;
use super::race;
use std::panic::Location;

/// Records a shared-memory access of `size` bytes at `addr` by the current
/// thread (from a [`SharedSlice`](crate::SharedSlice)); a race, or an
/// access to bytes an asynchronous operation still owns
/// ([`asyncs::generic_access`]), stops the
/// launch with [`Fault::Race`] or [`Fault::Async`].
#[inline]
pub(crate) fn shared_access(
    addr: usize,
    size: usize,
    write: bool,
    loc: &'static Location<'static>,
) {
    let outcome = block::try_with_block(|t, b| {
        let off = addr.wrapping_sub(b.shared_base as usize);
        if b.async_on.get()
            && let Some(f) = asyncs::generic_access(b, t.rank, off, size, write)
        {
            return Err(f);
        }
        race::shared_check(t, b, off, size, write, loc)?;
        if b.launch.race_shared {
            cluster::local_access(t, b, off, size, write, loc)?;
        }
        Ok(b.preempts())
    });
    match outcome {
        Some(Ok(true)) => block::maybe_preempt_access(),
        Some(Err(fault)) => block::fail_at(fault, loc),
        _ => {}
    }
}

/// A DSMEM access of `size` bytes of `kind` by the current thread:
/// translates `addr`, an address in the current block's shared memory, to
/// the same offset in the shared memory of block `rank` of the cluster
/// (`mapa.shared::cluster`), after the cluster's checks
/// ([`cluster::remote_target`]: the rank exists, the block has not exited,
/// no unordered access of another block touched the words). Block `rank`
/// may be the current block: that is an ordinary shared access
/// ([`shared_access`], atomics excepted).
pub(crate) fn remote_access(
    addr: usize,
    size: usize,
    rank: u32,
    kind: RemoteKind,
    loc: &'static Location<'static>,
) -> usize {
    let outcome =
        block::with_block(|t, b| cluster::remote_target(t, b, addr, size, rank, kind, loc));
    match outcome {
        Ok((p, true)) => {
            if kind != RemoteKind::Atomic {
                shared_access(p, size, kind == RemoteKind::Write, loc);
            }
            p
        }
        Ok((p, false)) => p,
        Err(f) => block::fail_at(f, loc),
    }
}

/// Records a global-memory access of `size` bytes at `addr` (element
/// `index` of its view) by the current thread; a race with another block
/// stops the launch with [`Fault::Race`], and so does (with
/// [`Fault::Async`]) a write of the source of one of
/// the thread's own `cp.async` copies in flight.
#[inline]
pub(crate) fn global_access(
    addr: usize,
    size: usize,
    index: usize,
    write: bool,
    loc: &'static Location<'static>,
) {
    let outcome = block::try_with_block(|t, b| global_check(t, b, addr, size, index, write, loc));
    match outcome {
        Some(Ok(true)) => block::maybe_preempt_access(),
        Some(Err(fault)) => block::fail_at(fault, loc),
        _ => {}
    }
}

/// The checks of a global access: the thread's own `cp.async` sources in
/// flight (a write), then the race shadow; `Ok(true)` when a random
/// schedule interrupts the thread here.
#[inline]
fn global_check(
    t: &ThreadCtx,
    b: &Block<'_>,
    addr: usize,
    size: usize,
    index: usize,
    write: bool,
    loc: &'static Location<'static>,
) -> Result<bool, Fault> {
    if write
        && b.async_on.get()
        && let Some(f) = asyncs::copy::source_write(b, t.rank, addr, size)
    {
        return Err(f);
    }
    race::global_check(t, b, addr, size, index, write, loc)?;
    Ok(b.preempts())
}

/// A global store of `v` at `p` (element `index` of its view) by the
/// current thread: the checks of [`global_access`], a check that `v` holds
/// no `wgmma` accumulator poison (in a block that issued a `wgmma`), then
/// the relaxed store.
///
/// # Safety
/// `p` valid for writes of `T` and aligned.
#[inline]
pub(crate) unsafe fn global_store<T: Copy>(
    p: *mut T,
    index: usize,
    v: T,
    loc: &'static Location<'static>,
) {
    let size = core::mem::size_of::<T>();
    let outcome = block::try_with_block(|t, b| {
        let r = global_check(t, b, p as usize, size, index, true, loc);
        if r.is_ok()
            && b.async_on.get()
            && size.is_multiple_of(4)
            && core::mem::align_of::<T>() >= 4
        {
            // SAFETY: `T` is `Copy`, its size a multiple of 4 and its
            // alignment at least 4: its bytes read as whole `u32` words.
            let words =
                unsafe { core::slice::from_raw_parts(&v as *const T as *const u32, size / 4) };
            if let Some(f) = asyncs::wgmma::check_value(b, t.rank, words, "a global store writes") {
                return Err(f);
            }
        }
        r
    });
    match outcome {
        Some(Ok(true)) => block::maybe_preempt_access(),
        Some(Err(fault)) => block::fail_at(fault, loc),
        _ => {}
    }
    // SAFETY: forwarded from the caller.
    unsafe { mem::write(p, v) }
}
