//! Hopper's asynchronous machinery (sm_90, and sm_90a for `setmaxnreg`):
//! shared-memory barriers with transaction counts, the tensor memory
//! accelerator (TMA: `cp.async.bulk.tensor`), the proxy fences between
//! them, and register reallocation between warpgroups.
//!
//! | item | PTX | PTX ISA section (9.0) |
//! |---|---|---|
//! | [`Mbarrier`] | `mbarrier.init`, `mbarrier.arrive`, `mbarrier.arrive.expect_tx`, `mbarrier.try_wait.parity` | 9.7.13.15 "Parallel Synchronization and Communication Instructions: mbarrier" |
//! | [`tma_load_2d`] | `cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes` | 9.7.9.25.5.1 "cp.async.bulk.tensor"; tensor maps 5.5 "Tensor" |
//! | [`tma_load_2d_multicast`] | `cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster` | 9.7.9.25.5.1 (`.multicast::cluster`, `ctaMask`) |
//! | [`Mbarrier::arrive_remote`] | `mapa.shared::cluster`, `mbarrier.arrive.release.cluster.shared::cluster` | 9.7.9.21 "mapa", 9.7.13.15.13 "mbarrier.arrive" |
//! | [`tma_store_2d`] | `cp.async.bulk.tensor.2d.global.shared::cta.bulk_group` | 9.7.9.25.5.1 |
//! | [`bulk_commit_group`], [`bulk_wait_group_read`], [`bulk_wait_group`] | `cp.async.bulk.commit_group`, `cp.async.bulk.wait_group[.read]` | 9.7.9.25.6 "cp.async.bulk.commit_group", 9.7.9.25.7 "cp.async.bulk.wait_group" |
//! | [`fence_proxy_async_shared`] | `fence.proxy.async.shared::cta` | 9.7.13.4 "membar/fence" |
//! | [`fence_mbarrier_init`] | `fence.mbarrier_init.release.cluster` | 9.7.13.4 |
//! | [`fence_tensormap_acquire`] | `fence.proxy.tensormap::generic.acquire.sys` | 9.7.13.4 |
//! | [`setmaxnreg_inc`], [`setmaxnreg_dec`] | `setmaxnreg.{inc,dec}.sync.aligned.u32` | 9.7.19.4 "setmaxnreg" (sm_90a) |
//!
//! # The simulator's model
//! The simulator runs these operations asynchronously, as the PTX ISA
//! defines them (see `ptxlab_device::sim`'s "Asynchronous operations"):
//! * An mbarrier is a record of the block (not its shared-memory word):
//!   the init count, the arrivals and transaction bytes pending in the
//!   current phase, and the number of phases completed. A phase completes
//!   when both counts reach zero; `try_wait.parity(p)` is true once the
//!   phase of parity `p` has completed, and [`Mbarrier::wait`] blocks the
//!   thread until then (a wait that can never end is a deadlock report).
//!   Using a barrier before its init is visible, more arrivals than its
//!   count, or a TMA load on a barrier whose init was not fenced
//!   ([`fence_mbarrier_init`]) are errors.
//! * A TMA load is in flight from its issue: it lands (copies its box,
//!   zero-filling what lies outside the tensor, swizzled) at its issue in
//!   order, or later under a random schedule, then completes its bytes on
//!   the barrier. Its destination may be read only by a thread that has
//!   seen that phase complete.
//! * A TMA multicast is one such load per block of its mask, each in
//!   that block's shared memory and completing that block's barrier (the
//!   reports name the issuing block); a remote arrive counts on the peer's
//!   barrier. A mask outside the cluster, a destination block that has
//!   exited, or a peer's barrier used before a cluster barrier published
//!   its init, is an error; so is a wait that only a multicast leaving the
//!   waiting block out of its mask could complete (the deadlock report
//!   names that multicast).
//! * A TMA store reads its source until [`bulk_wait_group_read`] covers
//!   it; what it reads must have been fenced ([`fence_proxy_async_shared`])
//!   by the threads that wrote it with ordinary stores.
//! * `setmaxnreg` sizes registers the simulator does not model; it does
//!   nothing there, and neither does [`fence_tensormap_acquire`].

use crate::mem::DeviceSlice;
use crate::mma::shared_addr;
use crate::shared::SharedSlice;

pub use crate::tensor_map::{SimTensorMap, Swizzle};

/// The simulator's tensor map in `map` (its 16 words, read through the
/// view's checked accessor at the caller's line).
#[cfg(not(target_arch = "nvptx64"))]
#[track_caller]
fn sim_map(map: DeviceSlice<u64>) -> SimTensorMap {
    let mut words = [0u64; SimTensorMap::WORDS];
    for (i, w) in words.iter_mut().enumerate() {
        *w = map.get(i);
    }
    crate::sim::async_tma::read_map(&words)
}

/// A 64-bit barrier object in shared memory with an arrival count and a
/// transaction (byte) count: threads arrive, asynchronous copies complete
/// bytes, and waiters spin on the phase parity. Made from a slot of a
/// `SharedSlice<u64>` that nothing else reads or writes.
#[derive(Debug, Clone, Copy)]
pub struct Mbarrier {
    addr: u32,
}

impl Mbarrier {
    /// The barrier in slot `i` of `view`.
    #[inline(always)]
    #[track_caller]
    pub fn at(view: SharedSlice<u64>, i: usize) -> Self {
        if i >= view.len() {
            crate::trap("mbarrier slot outside its view");
        }
        Self {
            addr: shared_addr(view.as_mut_ptr().wrapping_add(i)),
        }
    }
    /// Its shared-memory address.
    #[inline(always)]
    pub fn addr(self) -> u32 {
        self.addr
    }
    /// `mbarrier.init.shared::cta.b64 [bar], count`: phase 0, `count`
    /// arrivals expected per phase. One thread initialises; make it visible
    /// with [`fence_mbarrier_init`] and a block barrier before any use.
    #[inline(always)]
    #[track_caller]
    pub fn init(self, count: u32) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: writes the barrier's own shared-memory word.
        unsafe {
            core::arch::asm!("mbarrier.init.shared::cta.b64 [{a}], {c};", a = in(reg32) self.addr,
                c = in(reg32) count, options(nostack));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        crate::sim::async_mbar::init(self.addr, count, core::panic::Location::caller());
    }
    /// `mbarrier.arrive.shared::cta.b64`: this thread's arrival.
    #[inline(always)]
    #[track_caller]
    pub fn arrive(self) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: an atomic update of the barrier's shared-memory word.
        unsafe {
            core::arch::asm!("{{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [{a}]; }}",
                a = in(reg32) self.addr, options(nostack));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        crate::sim::async_mbar::arrive(self.addr, 1, 0, core::panic::Location::caller());
    }
    /// [`arrive`](Self::arrive) when `pred` holds, as one predicated
    /// instruction: no branch, so the compiler keeps a loop that arrives
    /// on all but its first turn as one loop (a peeled first turn would
    /// copy `wgmma` accumulators still being written).
    #[inline(always)]
    #[track_caller]
    pub fn arrive_if(self, pred: bool) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: as `arrive`.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred p; .reg .b64 st; setp.ne.b32 p, {c}, 0; \
                 @p mbarrier.arrive.shared::cta.b64 st, [{a}]; }}",
                a = in(reg32) self.addr, c = in(reg32) pred as u32, options(nostack));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        if pred {
            crate::sim::async_mbar::arrive(self.addr, 1, 0, core::panic::Location::caller());
        }
    }
    /// `mbarrier.arrive.expect_tx.shared::cta.b64 [bar], bytes`: raises the
    /// phase's transaction count by `bytes` (the copies this thread starts
    /// will complete them), then arrives.
    #[inline(always)]
    #[track_caller]
    pub fn arrive_expect_tx(self, bytes: u32) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: as `arrive`.
        unsafe {
            core::arch::asm!(
                "{{ .reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [{a}], {b}; }}",
                a = in(reg32) self.addr, b = in(reg32) bytes, options(nostack));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        crate::sim::async_mbar::arrive(self.addr, 1, bytes, core::panic::Location::caller());
    }
    /// One arrival on the barrier at the same shared offset in block `rank`
    /// of the cluster: `mapa.shared::cluster` maps the address, then
    /// `mbarrier.arrive.release.cluster.shared::cluster.b64` arrives there
    /// (release at cluster scope: this thread's earlier shared-memory reads
    /// and writes are ordered before whatever the peer does once the phase
    /// completes). `rank` may be this block's own rank (an ordinary arrival).
    ///
    /// The peer's barrier counts remote arrivals like local ones, so its
    /// init count includes them. It must be initialised, fenced with
    /// [`fence_mbarrier_init`] and published by a
    /// [`cluster::sync`](crate::cluster::sync) before the first remote
    /// arrival, and the peer must not exit while arrivals may still come
    /// (end the kernel with a cluster barrier). The usual use: a consumer
    /// releases a stage that a peer's [`tma_load_2d_multicast`] fills, by
    /// arriving on that peer's `empty` barrier. Stops the kernel if `rank`
    /// is not below [`cluster::num_blocks`](crate::cluster::num_blocks).
    #[inline(always)]
    #[track_caller]
    pub fn arrive_remote(self, rank: u32) {
        if rank >= crate::cluster::num_blocks() {
            crate::trap("mbarrier.arrive.shared::cluster: block rank outside the cluster");
        }
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: `rank` is a block of the cluster (checked above), whose
        // barrier at this offset exists (same kernel, same shared layout);
        // the arrive is an atomic update of that word.
        unsafe {
            core::arch::asm!(
                "{{ .reg .b32 ra; mapa.shared::cluster.u32 ra, {a}, {r}; \
                 mbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra]; }}",
                a = in(reg32) self.addr, r = in(reg32) rank, options(nostack));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        crate::sim::async_mbar::arrive_remote(self.addr, rank, core::panic::Location::caller());
    }
    /// `mbarrier.try_wait.parity.shared::cta.b64`: whether the phase of
    /// parity `parity` (0 or 1) has completed.
    #[inline(always)]
    #[track_caller]
    pub fn try_wait(self, parity: u32) -> bool {
        #[cfg(target_arch = "nvptx64")]
        {
            let done: u32;
            // SAFETY: reads the barrier's word (it may suspend the thread
            // for a bounded time, as the ISA allows).
            unsafe {
                core::arch::asm!(
                    "{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [{a}], {q}; \
                     selp.u32 {d}, 1, 0, p; }}",
                    a = in(reg32) self.addr, q = in(reg32) parity, d = out(reg32) done,
                    options(nostack));
            }
            done != 0
        }
        #[cfg(not(target_arch = "nvptx64"))]
        crate::sim::async_mbar::try_wait(self.addr, parity, core::panic::Location::caller())
    }
    /// Spins until the phase of parity `parity` has completed. On the GPU
    /// the loop is inside one `asm` block (as CUTLASS writes it), so the
    /// compiler sees a single instruction and no divergent loop before the
    /// `wgmma` that follow; the simulator blocks the thread until the
    /// barrier's phase changes (and reports a wait that can never end).
    #[inline(always)]
    #[track_caller]
    // PTX labels are local to the `{ }` block they are in, so the named
    // labels stay unique however often this is inlined (PTX has no
    // numeric local labels, the lint's advice).
    #[allow(named_asm_labels)]
    pub fn wait(self, parity: u32) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: reads the barrier's word until its phase flips.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred p; WAIT: mbarrier.try_wait.parity.shared::cta.b64 p, [{a}], {q}; \
                 @p bra DONE; bra WAIT; DONE: }}",
                a = in(reg32) self.addr, q = in(reg32) parity, options(nostack));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        crate::sim::async_mbar::wait(self.addr, parity, core::panic::Location::caller());
    }
}

/// `fence.mbarrier_init.release.cluster`: makes barrier initialisations
/// visible to the asynchronous proxy (the TMA unit) and to other threads
/// after the next block barrier. In a cluster whose blocks complete each
/// other's barriers ([`tma_load_2d_multicast`], [`Mbarrier::arrive_remote`])
/// the initialising thread fences, then every thread of the cluster runs
/// [`cluster::sync`](crate::cluster::sync) before any block uses a peer's
/// barrier: the fence releases the inits at cluster scope and the cluster
/// barrier publishes them to every block.
#[inline(always)]
pub fn fence_mbarrier_init() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a fence; no operands.
    unsafe {
        core::arch::asm!("fence.mbarrier_init.release.cluster;", options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::sim::async_mbar::fence_init();
}

/// `fence.proxy.async.shared::cta`: orders this thread's ordinary
/// shared-memory accesses before later accesses of the asynchronous proxy
/// (`wgmma` operand reads, TMA), e.g. after writing a tile by hand.
#[inline(always)]
pub fn fence_proxy_async_shared() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a fence; no operands.
    unsafe {
        core::arch::asm!("fence.proxy.async.shared::cta;", options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::sim::proxy_fence();
}

/// `fence.proxy.tensormap::generic.acquire.sys [map], 128`: a tensor map
/// written into global memory by a host copy is safe to use by this thread
/// after it (once per block, by the threads that issue the copies).
#[inline(always)]
pub fn fence_tensormap_acquire(map: DeviceSlice<u64>) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a fence on the 128 bytes at `map` (a live device buffer).
    unsafe {
        core::arch::asm!("fence.proxy.tensormap::generic.acquire.sys [{p}], 128;",
            p = in(reg64) map.as_ptr(), options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = map;
}

/// Starts a TMA load of the box at column `x`, row `y` of the 2D tensor
/// described by `map` (a 128-byte device buffer holding a tensor map, see
/// [`SimTensorMap`]) into shared memory at `dst` (a shared address aligned
/// to 128 bytes, to 1024 with a swizzle), completing its bytes on `bar`.
/// Elements outside the tensor are written as zeros. Issue it from one
/// thread, after [`Mbarrier::arrive_expect_tx`] for the box's bytes.
#[inline(always)]
#[track_caller]
pub fn tma_load_2d(dst: u32, map: DeviceSlice<u64>, x: i32, y: i32, bar: Mbarrier) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the copy engine writes the box's bytes at `dst` (the
    // caller's shared tile) and reads global memory through the tensor
    // map, whose bounds it enforces.
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes \
             [{d}], [{m}, {{{x}, {y}}}], [{b}];",
            d = in(reg32) dst, m = in(reg64) map.as_ptr(), x = in(reg32) x, y = in(reg32) y,
            b = in(reg32) bar.addr, options(nostack));
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let t = sim_map(map);
        crate::sim::async_tma::load(t, dst, x, y, bar.addr, core::panic::Location::caller());
    }
}

/// Starts a TMA multicast: the box at column `x`, row `y` of the 2D tensor
/// described by `map` is read once and lands at shared offset `dst` (as
/// for [`tma_load_2d`]) in **every block of the cluster whose bit is set
/// in `cta_mask`** (bit `r`: block rank `r`, see
/// [`cluster::block_rank`](crate::cluster::block_rank)), completing the
/// box's bytes on the barrier at `bar`'s offset in each of those blocks
/// (`cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster`).
/// The issuing block need not be in the mask.
///
/// The contract, for a stage that several blocks fill together (each
/// loads a slice of a shared operand and multicasts it to all):
/// * **Bytes.** Every block of the mask receives the whole box, so each
///   destination block's barrier must expect (`arrive_expect_tx`) the
///   bytes of *every* multicast that lands in it in that phase, its own
///   and its peers'; the bytes of one block's load are too few.
/// * **Barriers.** Each destination block initialises its barrier, runs
///   [`fence_mbarrier_init`], and the cluster passes a
///   [`cluster::sync`](crate::cluster::sync) before the first multicast.
/// * **Reuse.** The copy writes the peers' shared memory, so a stage may
///   be refilled only after *every* block of the mask has released it:
///   their consumers arrive on the issuer's `empty` barrier
///   ([`Mbarrier::arrive_remote`]), whose count includes them.
/// * **Exit.** No block of the mask may exit while a multicast into it is
///   in flight or a peer still arrives on its barriers: end the kernel with
///   a cluster barrier.
///
/// Every set bit must be a rank of the cluster: the simulator reports a
/// mask outside it (the GPU's behaviour is undefined). Issue it from one
/// thread.
#[inline(always)]
#[track_caller]
pub fn tma_load_2d_multicast(
    dst: u32,
    map: DeviceSlice<u64>,
    x: i32,
    y: i32,
    bar: Mbarrier,
    cta_mask: u16,
) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the copy engine writes the box's bytes at `dst` in every
    // block of `cta_mask` (the same shared layout in each: same kernel)
    // and reads global memory through the tensor map, whose bounds it
    // enforces; the caller keeps the mask inside the cluster.
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes\
             .multicast::cluster [{d}], [{m}, {{{x}, {y}}}], [{b}], {k};",
            d = in(reg32) dst, m = in(reg64) map.as_ptr(), x = in(reg32) x, y = in(reg32) y,
            b = in(reg32) bar.addr, k = in(reg16) cta_mask, options(nostack));
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let t = sim_map(map);
        crate::sim::async_tma::load_multicast(
            t,
            dst,
            x,
            y,
            bar.addr,
            cta_mask,
            core::panic::Location::caller(),
        );
    }
}

/// Starts a TMA store of the box at shared address `src` (aligned as for
/// [`tma_load_2d`]) to column `x`, row `y` of the 2D tensor described by
/// `map`; elements outside the tensor are not written. The store reads
/// `src` asynchronously: close its group with [`bulk_commit_group`] and
/// wait with [`bulk_wait_group_read`] before writing `src` again (and
/// before the block ends). Data written to `src` by ordinary stores needs
/// [`fence_proxy_async_shared`] by the writing threads, then a block
/// barrier, before the store is issued.
#[inline(always)]
#[track_caller]
pub fn tma_store_2d(map: DeviceSlice<u64>, x: i32, y: i32, src: u32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the copy engine reads the box's bytes at `src` (the caller's
    // shared tile) and writes global memory through the tensor map, whose
    // bounds it enforces.
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [{m}, {{{x}, {y}}}], [{s}];",
            m = in(reg64) map.as_ptr(), x = in(reg32) x, y = in(reg32) y, s = in(reg32) src,
            options(nostack));
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let t = sim_map(map);
        crate::sim::async_tma::store(t, src, x, y, core::panic::Location::caller());
    }
}

/// `cp.async.bulk.commit_group`: closes the group of this thread's bulk
/// copies (TMA stores) issued since the last commit.
#[inline(always)]
pub fn bulk_commit_group() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no operands.
    unsafe {
        core::arch::asm!("cp.async.bulk.commit_group;", options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::sim::async_tma::commit();
}

/// `cp.async.bulk.wait_group.read N`: waits until at most `N` of this
/// thread's bulk groups still read their shared-memory source (their
/// global writes may still be in flight).
#[inline(always)]
pub fn bulk_wait_group_read<const N: u32>() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no operands besides the immediate; a compiler barrier for
    // memory, so later writes of the source stay after it.
    unsafe {
        core::arch::asm!("cp.async.bulk.wait_group.read {n};", n = const N, options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::sim::async_tma::wait(N);
}

/// `cp.async.bulk.wait_group N`: waits until at most `N` of this thread's
/// bulk groups are pending, their global writes included.
#[inline(always)]
pub fn bulk_wait_group<const N: u32>() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: as `bulk_wait_group_read`.
    unsafe {
        core::arch::asm!("cp.async.bulk.wait_group {n};", n = const N, options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::sim::async_tma::wait(N);
}

/// `setmaxnreg.inc.sync.aligned.u32 N` (sm_90a): this warpgroup takes `N`
/// registers per thread from the pool others released. Every thread of
/// the warpgroup executes it; the kernel needs a register cap at entry
/// (`launch_bounds(threads, 1)`).
#[inline(always)]
pub fn setmaxnreg_inc<const N: u32>() {
    const { assert!(N >= 24 && N <= 256 && N.is_multiple_of(8)) };
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: register reallocation; no memory.
    unsafe {
        core::arch::asm!("setmaxnreg.inc.sync.aligned.u32 {n};", n = const N, options(nostack))
    };
}

/// `setmaxnreg.dec.sync.aligned.u32 N` (sm_90a): this warpgroup gives its
/// registers above `N` back to the pool (a producer that only issues copies).
#[inline(always)]
pub fn setmaxnreg_dec<const N: u32>() {
    const { assert!(N >= 24 && N <= 256 && N.is_multiple_of(8)) };
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: register reallocation; no memory.
    unsafe {
        core::arch::asm!("setmaxnreg.dec.sync.aligned.u32 {n};", n = const N, options(nostack))
    };
}
