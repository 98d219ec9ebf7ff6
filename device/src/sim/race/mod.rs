//! The race detector: every access through a kernel view
//! ([`DeviceSlice`](crate::DeviceSlice), [`DeviceSliceMut`](crate::DeviceSliceMut),
//! [`SharedSlice`](crate::SharedSlice)) is checked against a shadow record of
//! the 4-byte words it touches. Atomics, and the raw accessors
//! [`sim::mem`](super::mem), are not recorded.
//!
//! * **Shared memory** ([`shared::SharedRace`], one per block): between two barriers,
//!   a word written by one thread and read or written by another is a race,
//!   unless both threads are lanes of one warp and took part together in a
//!   warp collective (shuffle, vote) after the first access: that orders
//!   them, as on Volta and later GPUs.
//! * **Global memory** ([`global::GlobalShadow`], one per launch): a word written by
//!   one block and read or written by another block of the same launch is a
//!   race; blocks of a launch are not ordered. Accesses of one block to its
//!   own words are not checked.
//!
//! The report names both threads (block and thread index), both source
//! lines and the interval: [`Fault::Race`](super::Fault::Race).

pub(crate) mod global;
pub(crate) mod shared;

use super::error::{Fault, Race, RaceAccess};
use super::sched;
use std::boxed::Box;
use std::panic::Location;
use std::string::ToString;

/// Records a shared-memory access of `size` bytes at `addr` by the current
/// thread (from a [`SharedSlice`](crate::SharedSlice)); a race stops the
/// launch with [`Fault::Race`].
#[inline]
pub(crate) fn shared_access(
    addr: usize,
    size: usize,
    write: bool,
    loc: &'static Location<'static>,
) {
    let conflict = sched::try_with_block(|t, b| {
        let r = b.race.as_ref()?;
        let off = addr.wrapping_sub(b.shared_base as usize);
        let lane = (t.rank % 32) as usize;
        let warp = b.warps[(t.rank / 32) as usize].borrow();
        for word in off / 4..=(off + size.max(1) - 1) / 4 {
            if let Err(other) = r.access(word, t.rank, write, loc, &warp.last, &warp.joint[lane]) {
                let fault = Fault::Race(Box::new(Race {
                    space: "shared memory",
                    word: std::format!("word {word} (byte offset {})", word * 4),
                    first: RaceAccess {
                        block: b.idx,
                        thread: b.thread_of(other.rank as u32),
                        write: other.write,
                        location: other.loc.map_or_else(Default::default, |l| l.to_string()),
                    },
                    second: RaceAccess {
                        block: b.idx,
                        thread: t.thread_idx,
                        write,
                        location: loc.to_string(),
                    },
                    interval: r.interval(),
                }));
                return Some(fault);
            }
        }
        None
    });
    if let Some(Some(fault)) = conflict {
        sched::fail_at(fault, loc)
    }
}

/// Records a global-memory access of `size` bytes at `addr` (element
/// `index` of its view) by the current thread; a race with another block
/// stops the launch with [`Fault::Race`].
#[inline]
pub(crate) fn global_access(
    addr: usize,
    size: usize,
    index: usize,
    write: bool,
    loc: &'static Location<'static>,
) {
    let conflict = sched::try_with_block(|t, b| {
        let g = b.launch.global.as_ref()?;
        let me = b.id + 1;
        for word in addr / 4..=(addr + size.max(1) - 1) / 4 {
            let shadow = b.gcache.word(g, word);
            if let Err(other) = shadow.access(me, write, t.rank, loc) {
                let spec = b.launch.spec;
                let gx = spec.grid.x as u64;
                let gy = spec.grid.y as u64;
                let ob = other.block;
                let bd = spec.block;
                let first = RaceAccess {
                    block: crate::dim3::Dim3::new(
                        (ob % gx) as u32,
                        ((ob / gx) % gy) as u32,
                        (ob / (gx * gy)) as u32,
                    ),
                    thread: match other.rank {
                        Some(r) => {
                            crate::dim3::Dim3::new(r % bd.x, (r / bd.x) % bd.y, r / (bd.x * bd.y))
                        }
                        None => crate::dim3::Dim3::default(),
                    },
                    write: other.write,
                    location: other
                        .loc
                        .map_or_else(|| "(line not recorded)".into(), |l| l.to_string()),
                };
                return Some(Fault::Race(Box::new(Race {
                    space: "global memory",
                    word: std::format!("element {index} (address {addr:#x})"),
                    first,
                    second: RaceAccess {
                        block: b.idx,
                        thread: t.thread_idx,
                        write,
                        location: loc.to_string(),
                    },
                    interval: "in one launch: the blocks of a launch run in no fixed order \
                               (write to another buffer, or split the work into two launches)"
                        .into(),
                })));
            }
        }
        None
    });
    if let Some(Some(fault)) = conflict {
        sched::fail_at(fault, loc)
    }
}
