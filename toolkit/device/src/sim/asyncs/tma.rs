//! TMA (`cp.async.bulk.tensor`, PTX ISA 9.7.9.25.5.1): a load copies a
//! box of a 2D tensor into shared memory and completes its bytes on an
//! mbarrier; a store copies a box from shared memory into the tensor and
//! is completed by `cp.async.bulk.wait_group[.read]`.
//!
//! A load's destination is in flight until it lands (at its issue in
//! order, later under a random schedule); then it is tagged with the
//! barrier phase its bytes completed, and a thread may touch it only once
//! it has seen that phase complete (its own wait, or another thread's
//! published by a block barrier). A store reads its source asynchronously
//! until `bulk_wait_group_read` covers it: the source must not be written
//! before, and what it reads must be fenced (`fence.proxy.async`) if
//! ordinary stores wrote it.

use super::copy::check_target;
use super::{CHUNK, OpKind, Reads, check_async_read, defer, issue_op, land, mbar, misuse, state};
use crate::sim::block::{self, Block};
use crate::sim::error::Fault;
use crate::sim::state::asyncs::{Multicast, add_readers, drop_readers};
use crate::tensor_map::{SimTensorMap, Swizzle};
use std::format;
use std::panic::Location;
use std::vec::Vec;

/// Checks a tensor map, the box's column `x` and a shared address for a
/// box copy; returns the box's bytes.
fn check_box(
    b: &Block<'_>,
    t: &SimTensorMap,
    (smem, x): (u32, i32),
    rank: u32,
    what: &'static str,
    loc: &'static Location<'static>,
) -> Result<usize, Fault> {
    // The hardware stops a box whose start in the innermost dimension is
    // not 16-byte aligned (CUDA_ERROR_ILLEGAL_INSTRUCTION on an H200).
    if (x as i64 * t.elem_bytes as i64).rem_euclid(16) != 0 {
        return Err(misuse(
            b,
            what,
            rank,
            loc,
            format!(
                "cp.async.bulk.tensor: the box starts at column {x}, {} bytes into its row of \
                 {}-byte elements; the start must be a multiple of 16 bytes (column a multiple \
                 of {}), or the GPU stops the copy with an illegal instruction",
                x as i64 * t.elem_bytes as i64,
                t.elem_bytes,
                (16 / t.elem_bytes).max(1)
            ),
        ));
    }
    let align = if t.swizzle == Swizzle::None {
        128
    } else {
        1024
    };
    if !smem.is_multiple_of(align) {
        return Err(Fault::Misaligned {
            addr: smem as usize,
            align: align as usize,
        });
    }
    let row_bytes = t.box_dims[0] as usize * t.elem_bytes as usize;
    if t.swizzle != Swizzle::None && row_bytes != t.swizzle.span() as usize {
        return Err(misuse(
            b,
            what,
            rank,
            loc,
            format!(
                "cp.async.bulk.tensor: a {row_bytes}-byte box row with a {}-byte swizzle (the \
                 simulator needs them equal)",
                t.swizzle.span()
            ),
        ));
    }
    let bytes = t.box_bytes() as usize;
    let need = smem as usize + bytes;
    let have = b.launch.spec.shared_bytes;
    if need > have {
        return Err(Fault::SharedTooSmall {
            needed: need,
            available: have,
        });
    }
    Ok(bytes)
}

/// The tensor map that `words` (the 16 words of a simulated device
/// buffer) hold; a trap at the caller's line when they hold none.
#[track_caller]
pub(crate) fn read_map(words: &[u64; SimTensorMap::WORDS]) -> SimTensorMap {
    match SimTensorMap::from_words(words) {
        Some(t) => t,
        None => block::fail(Fault::Trap {
            reason: "cp.async.bulk.tensor: the tensor-map buffer holds no simulator tensor map \
                     (make it with the runtime's tensor-map constructor on the simulator)"
                .into(),
        }),
    }
}

/// Issues a TMA load of the box at (`x`, `y`) of `t` to shared byte
/// offset `dst`, completing on the mbarrier at `bar`.
pub(crate) fn load(
    t: SimTensorMap,
    dst: u32,
    x: i32,
    y: i32,
    bar: u32,
    loc: &'static Location<'static>,
) {
    issue_op(loc, |tc, b| {
        let bytes = match check_box(b, &t, (dst, x), tc.rank, "TMA load", loc) {
            Ok(n) => n,
            Err(f) => return Some(f),
        };
        let st = state(b);
        let bi = match mbar::for_tma(b, &st, bar, tc.rank, loc) {
            Ok(i) => i,
            Err(f) => return Some(f),
        };
        let (c0, c1) = (dst as usize / CHUNK, (dst as usize + bytes) / CHUNK);
        for c in c0..c1 {
            if let Some(f) = check_target(b, &st, c, tc.rank, c * CHUNK, "a TMA load into it") {
                return Some(f);
            }
        }
        let kind = OpKind::TmaLoad {
            dst,
            map: t,
            x,
            y,
            bar: bi,
            phase: None,
            multicast: None,
        };
        if let Some(op) = push_load(b, st, kind, (dst, bytes), tc.rank, loc) {
            land(b, op);
        }
        None
    });
}

/// Records TMA load `kind` of the `bytes` at shared byte `dst` of `into`
/// (whose state is `st`) and picks when it lands; returns the op when it is
/// to land now, else the box holds neither the old nor the new bytes (0xFF)
/// until it does.
fn push_load(
    into: &Block<'_>,
    mut st: core::cell::RefMut<'_, super::AsyncState>,
    kind: OpKind,
    (dst, bytes): (u32, usize),
    rank: u32,
    loc: &'static Location<'static>,
) -> Option<u32> {
    let op = st.push(kind, rank, loc);
    for c in dst as usize / CHUNK..(dst as usize + bytes) / CHUNK {
        st.set_writer(c, op);
    }
    if !defer(into, st, op) {
        return Some(op);
    }
    // SAFETY: the caller's `check_box` checked the box lies in shared memory
    // of the launch's size, which every block of it has.
    unsafe { core::ptr::write_bytes(into.shared_base.add(dst as usize), 0xFF, bytes) };
    None
}

/// Issues a TMA multicast: the box at (`x`, `y`) of `t` lands at shared
/// byte offset `dst` of every block of the cluster in `mask` (bit `r`:
/// rank `r`), each copy completing its bytes on that block's mbarrier at
/// `bar`. Every destination is checked before any copy starts: the mask
/// lies in the cluster, no block of it has exited, each block's barrier is
/// initialised, fenced and (for a peer) made visible by a cluster barrier,
/// and nothing still in flight writes or reads the destination.
pub(crate) fn load_multicast(
    t: SimTensorMap,
    dst: u32,
    x: i32,
    y: i32,
    bar: u32,
    mask: u16,
    loc: &'static Location<'static>,
) {
    issue_op(loc, |tc, b| {
        let c = b.cluster();
        let n = c.size();
        if mask == 0 || (n < 16 && mask >> n != 0) {
            return Some(misuse(
                b,
                "TMA multicast",
                tc.rank,
                loc,
                format!(
                    "TMA multicast with cta_mask {mask:#b} (block ranks {}) in a cluster of {n} \
                     block{}: allowed a nonzero mask of the cluster's ranks, bits 0..{n} \
                     (cta_mask <= {:#b})",
                    crate::sim::state::cluster::ranks(mask),
                    if n == 1 { "" } else { "s" },
                    (1u32 << n) - 1
                ),
            ));
        }
        let bytes = match check_box(b, &t, (dst, x), tc.rank, "TMA multicast", loc) {
            Ok(n) => n,
            Err(f) => return Some(f),
        };
        let (c0, c1) = (dst as usize / CHUNK, (dst as usize + bytes) / CHUNK);
        let mut dests = Vec::new();
        for r in (0..n).filter(|r| mask & (1 << r) != 0) {
            let peer = match c.peer(r) {
                Ok(p) => p,
                Err(last) => {
                    return Some(misuse(
                        b,
                        "TMA multicast",
                        tc.rank,
                        loc,
                        format!(
                            "TMA multicast by thread {} of block {} at {loc} into block {} \
                             (cluster rank {r}), which has exited (its shared memory is \
                             released; its threads last passed the cluster barrier at {}): a \
                             block must not exit while a peer's multicast may still land in it",
                            tc.thread_idx,
                            b.idx,
                            c.index_of(r),
                            last.map_or_else(|| "(never)".into(), |l| format!("{l}")),
                        ),
                    ));
                }
            };
            let st = state(peer);
            let bi = if r == b.crank {
                mbar::for_tma(b, &st, bar, tc.rank, loc)
            } else {
                mbar::remote_usable(peer, &st, bar, b, tc, "a TMA multicast", true, loc)
            };
            let bi = match bi {
                Ok(i) => i,
                Err(f) => return Some(f),
            };
            for ch in c0..c1 {
                let f = if r == b.crank {
                    check_target(b, &st, ch, tc.rank, ch * CHUNK, "a TMA multicast into it")
                } else {
                    peer_target(peer, &st, ch, b, tc, loc)
                };
                if f.is_some() {
                    return f;
                }
            }
            dests.push((r, bi));
        }
        let mut now = Vec::new();
        for (r, bi) in dests {
            let peer = c.block(r);
            let kind = OpKind::TmaLoad {
                dst,
                map: t,
                x,
                y,
                bar: bi,
                phase: None,
                multicast: Some(Multicast {
                    issuer: b.crank,
                    mask,
                }),
            };
            if let Some(op) = push_load(peer, state(peer), kind, (dst, bytes), tc.rank, loc) {
                now.push((r, op));
            }
        }
        c.note_multicast(b.crank, tc.rank, loc, mask, bar);
        for (r, op) in now {
            land(c.block(r), op);
        }
        None
    });
}

/// Whether a multicast by thread `tc` of `b` may write chunk `ch` of
/// `peer`: no load into it is still in flight, and no asynchronous read of
/// the peer (a `wgmma` operand, a TMA store's source) still reads it.
fn peer_target(
    peer: &Block<'_>,
    st: &super::AsyncState,
    ch: usize,
    b: &Block<'_>,
    tc: &block::ThreadCtx,
    loc: &'static Location<'static>,
) -> Option<Fault> {
    let chunk = st.chunks[ch];
    let busy = if chunk.writer != 0 {
        let o = &st.ops[chunk.writer as usize - 1];
        match o.kind {
            OpKind::TmaLoad { phase: None, .. } | OpKind::Copy { landed: false, .. } => Some(o),
            _ => None,
        }
    } else {
        None
    };
    let busy = busy.or_else(|| {
        (chunk.readers > 0)
            .then(|| {
                st.reading
                    .iter()
                    .map(|&r| &st.ops[r as usize])
                    .find(|o| match &o.kind {
                        OpKind::Wgmma { reads } | OpKind::TmaStore { reads, .. } => {
                            reads.chunks.binary_search(&(ch as u32)).is_ok()
                        }
                        _ => false,
                    })
            })
            .flatten()
    });
    let o = busy?;
    Some(misuse(
        b,
        "TMA multicast",
        tc.rank,
        loc,
        format!(
            "TMA multicast by thread {} of block {} at {loc} into shared memory byte {} of block \
             {} while {} by thread {} of that block at {} is still in flight on it: a stage may \
             be refilled only after every block of the mask has released it",
            tc.thread_idx,
            b.idx,
            ch * CHUNK,
            peer.idx,
            o.name(),
            peer.thread_of(o.rank),
            o.loc
        ),
    ))
}

/// The elements of the box at (`x`, `y`) of `t` held from shared byte
/// `smem`, row by row: each one's shared byte offset (the swizzle applied)
/// and its address in the tensor, `None` when it lies outside the tensor.
fn box_elems(
    t: &SimTensorMap,
    smem: u32,
    x: i32,
    y: i32,
) -> impl Iterator<Item = (usize, Option<usize>)> + '_ {
    let eb = t.elem_bytes as usize;
    let row_bytes = t.box_dims[0] as usize * eb;
    (0..t.box_dims[1] as usize).flat_map(move |r| {
        (0..t.box_dims[0] as usize).map(move |c| {
            let (gx, gy) = (x as i64 + c as i64, y as i64 + r as i64);
            let inside = gx >= 0 && gy >= 0 && (gx as u64) < t.dims[0] && (gy as u64) < t.dims[1];
            let logical = smem + (r * row_bytes + c * eb) as u32;
            let at = inside
                .then(|| t.addr as usize + gy as usize * t.row_stride as usize + gx as usize * eb);
            (t.swizzle.apply(logical) as usize, at)
        })
    })
}

/// Lands TMA load `i`: copies the box (zeros outside the tensor, the
/// swizzle applied), then completes its bytes on its barrier.
pub(crate) fn land_load(b: &Block<'_>, i: u32) {
    let (t, dst, x, y, bar, rank, loc) = {
        let st = b.asyncs.borrow();
        let o = &st.ops[i as usize];
        match o.kind {
            OpKind::TmaLoad {
                map,
                dst,
                x,
                y,
                bar,
                phase: None,
                ..
            } => (map, dst, x, y, bar, o.rank, o.loc),
            _ => return,
        }
    };
    let eb = t.elem_bytes as usize;
    let base = b.shared_base;
    for (phys, from) in box_elems(&t, dst, x, y) {
        for q in 0..eb {
            let v = match from {
                // SAFETY: the element is inside the tensor the host
                // described, whose bytes are a live simulator buffer.
                Some(from) => unsafe { crate::sim::mem::read((from + q) as *const u8) },
                None => 0,
            };
            // SAFETY: `phys` stays inside the box's bytes (the swizzle
            // permutes 16-byte chunks within aligned spans), which
            // `check_box` checked lie in the block's shared memory.
            unsafe { crate::sim::mem::write(base.add(phys + q), v) };
        }
    }
    let wake = {
        let mut st = b.asyncs.borrow_mut();
        let (phase, wake) = mbar::complete_tx(&mut st, bar, t.box_bytes(), rank, loc, i);
        if let OpKind::TmaLoad { phase: p, .. } = &mut st.ops[i as usize].kind {
            *p = Some(phase);
        }
        wake
    };
    for f in wake {
        b.wake(f);
    }
}

/// Issues a TMA store of the box at shared offset `src` to (`x`, `y`) of
/// the tensor `t`.
pub(crate) fn store(t: SimTensorMap, src: u32, x: i32, y: i32, loc: &'static Location<'static>) {
    issue_op(loc, |tc, b| {
        let bytes = match check_box(b, &t, (src, x), tc.rank, "TMA store", loc) {
            Ok(n) => n,
            Err(f) => return Some(f),
        };
        let mut st = state(b);
        let chunks: Vec<u32> = (src as usize / CHUNK..(src as usize + bytes) / CHUNK)
            .map(|c| c as u32)
            .collect();
        let sources =
            match check_async_read(b, &st, &chunks, tc.rank, "TMA store", "a TMA store", loc) {
                Ok(s) => s,
                Err(f) => return Some(f),
            };
        if let Some(f) = super::wgmma::poisoned_source(b, &st, src as usize, bytes, tc.rank, loc) {
            return Some(f);
        }
        let group = st.threads[tc.rank as usize].bulk_committed;
        let op = st.push(
            OpKind::TmaStore {
                reads: Reads {
                    chunks: Vec::new(),
                    group,
                    sources,
                },
                map: t,
                x,
                y,
                src,
                landed: false,
            },
            tc.rank,
            loc,
        );
        add_readers(&mut st, op, &chunks);
        if let OpKind::TmaStore { reads, .. } = &mut st.ops[op as usize].kind {
            reads.chunks = chunks;
        }
        st.threads[tc.rank as usize].stores.push_back(op);
        if !defer(b, st, op) {
            land(b, op);
        }
        None
    });
}

/// Lands TMA store `i`: writes the box into the tensor (elements outside
/// it are skipped), each word a write of the issuing thread for the
/// global race detector.
pub(crate) fn land_store(b: &Block<'_>, i: u32) {
    let (t, src, x, y, rank, loc) = {
        let mut st = b.asyncs.borrow_mut();
        let o = &mut st.ops[i as usize];
        let (rank, loc) = (o.rank, o.loc);
        match &mut o.kind {
            OpKind::TmaStore {
                map,
                src,
                x,
                y,
                landed,
                ..
            } if !*landed => {
                *landed = true;
                (*map, *src, *x, *y, rank, loc)
            }
            _ => return,
        }
    };
    let eb = t.elem_bytes as usize;
    let base = b.shared_base;
    for (phys, to) in box_elems(&t, src, x, y) {
        let Some(to) = to else {
            continue;
        };
        crate::sim::race::global_write_by(b, rank, to, eb, loc);
        for q in 0..eb {
            // SAFETY: the box lies in the block's shared memory (checked at
            // issue) and the element inside the tensor the host described,
            // a live simulator buffer.
            unsafe {
                let v: u8 = crate::sim::mem::read(base.add(phys + q));
                crate::sim::mem::write((to + q) as *mut u8, v);
            }
        }
    }
}

/// `cp.async.bulk.commit_group`.
pub(crate) fn commit() {
    block::with_block(|t, b| {
        let mut st = state(b);
        st.threads[t.rank as usize].bulk_committed += 1;
        st.tick += 1;
    });
}

/// `cp.async.bulk.wait_group[.read] n`: the stores of every bulk group but
/// the `n` most recent have read their source (and, without `.read`,
/// written the tensor).
pub(crate) fn wait(n: u32) {
    block::with_block(|t, b| {
        if !b.async_on.get() {
            return;
        }
        let done: Vec<u32> = {
            let mut st = b.asyncs.borrow_mut();
            let limit = st.threads[t.rank as usize].bulk_committed.saturating_sub(n);
            let mut done = Vec::new();
            while let Some(&op) = st.threads[t.rank as usize].stores.front() {
                let g = match &st.ops[op as usize].kind {
                    OpKind::TmaStore { reads, .. } => reads.group,
                    _ => u32::MAX,
                };
                if g >= limit {
                    break;
                }
                st.threads[t.rank as usize].stores.pop_front();
                done.push(op);
            }
            done
        };
        for op in done {
            release_store(b, op);
        }
    });
    block::maybe_preempt();
}

/// Lands TMA store `op` and releases its source.
fn release_store(b: &Block<'_>, op: u32) {
    land(b, op);
    let mut st = b.asyncs.borrow_mut();
    let chunks = match &mut st.ops[op as usize].kind {
        OpKind::TmaStore { reads, .. } => core::mem::take(&mut reads.chunks),
        _ => return,
    };
    drop_readers(&mut st, op, &chunks);
}

/// A thread ended: its stores complete.
pub(crate) fn exit(b: &Block<'_>, rank: u32) {
    let ops: Vec<u32> = {
        let mut st = b.asyncs.borrow_mut();
        st.threads[rank as usize].stores.drain(..).collect()
    };
    for op in ops {
        release_store(b, op);
    }
}
