//! Thread-block clusters and distributed shared memory (sm_90).
//!
//! A *cluster* is a group of up to 8 blocks (the portable size) that the
//! GPU schedules at the same time on the SMs of one GPC. The host asks for
//! one with `LaunchConfig::with_cluster(x, y, z)`; the grid must be a whole
//! number of clusters. Inside the kernel:
//!
//! * [`block_rank`] (`%cluster_ctarank`) is the block's linear rank in its
//!   cluster, `0..`[`num_blocks`] (`%cluster_nctarank`), x fastest;
//!   [`block_index`] (`%cluster_ctaid`) is the same as a 3D index and
//!   [`dims`] (`%cluster_nctaid`) the cluster's shape. Block `b` of the grid
//!   is block `b % dims` of cluster `b / dims`, dimension by dimension.
//! * **Distributed shared memory (DSMEM).** Every block of a cluster can
//!   read and write the shared memory of every other one:
//!   [`SharedSlice::in_block`](crate::SharedSlice::in_block) turns a view of
//!   this block's shared memory into [`RemoteShared`], the same view in
//!   block `rank` (`mapa.shared::cluster` maps the address), with loads,
//!   stores and an atomic add (`ld`/`st`/`red.shared::cluster`). The bytes
//!   travel over the SM-to-SM network, without passing through global
//!   memory or L2: a block can hand partial results to a peer, or several
//!   blocks can share one tile.
//! * **The cluster barrier** orders them. [`sync`] is
//!   `barrier.cluster.arrive` (a release: this thread's earlier writes,
//!   shared and DSMEM, become visible) followed by `barrier.cluster.wait`
//!   (an acquire: after it this thread sees what every thread of the
//!   cluster wrote before arriving). [`sync_threads`](crate::thread::sync_threads)
//!   only orders the threads of one block, so a read of a peer's shared
//!   memory needs a cluster barrier after the peer's writes. Two rules
//!   follow:
//!   1. *Before reading a peer*: the peer wrote, then arrived; the reader
//!      waited (a [`sync`] between them).
//!   2. *Before exiting*: a block's shared memory is released when it
//!      exits, so a block whose shared memory peers still read must wait
//!      for them (end the kernel with one more [`sync`]).
//!
//!   [`arrive`] and [`wait`] split the barrier, so independent work can run
//!   between the two halves. Every thread of the cluster that has not
//!   exited must arrive for a phase to complete; each thread alternates
//!   arrive and wait.
//! * **TMA multicast and remote mbarriers.** One TMA load can land in
//!   every block of a cluster
//!   ([`tma_load_2d_multicast`](crate::hopper::tma_load_2d_multicast),
//!   completing each block's mbarrier), and a thread can arrive on a
//!   peer's mbarrier
//!   ([`Mbarrier::arrive_remote`](crate::hopper::Mbarrier::arrive_remote)):
//!   the blocks of a cluster then share one load of a common operand and
//!   release its stages to each other. Their contract (bytes, inits, stage
//!   reuse, exit) is in those items' docs.
//!
//! | item | PTX | PTX ISA section (9.0) |
//! |---|---|---|
//! | [`block_rank`], [`num_blocks`], [`block_index`], [`dims`] | `%cluster_ctarank`, `%cluster_nctarank`, `%cluster_ctaid`, `%cluster_nctaid` | 10.21-10.24 "Special registers" |
//! | [`arrive`], [`wait`], [`sync`] | `barrier.cluster.arrive`, `barrier.cluster.wait` | 9.7.13.3 "barrier.cluster" |
//! | [`SharedSlice::in_block`](crate::SharedSlice::in_block) | `mapa.shared::cluster` | 9.7.9.21 "mapa" |
//! | [`RemoteShared::get`], [`RemoteShared::set`], [`RemoteShared::atomic_add`] | `ld.shared::cluster`, `st.shared::cluster`, `red.shared::cluster.add` | 9.7.9.8, 9.7.9.10, 9.7.13.6 |
//!
//! A launch without clusters is a grid of 1x1x1 clusters: [`num_blocks`]
//! is 1 and [`sync`] is a barrier of the block's threads.
//!
//! # The simulator
//! The blocks of a cluster run together on one OS thread, each with its
//! own shared memory; a DSMEM access reads or writes the peer's buffer. The
//! cluster barrier is modelled with its phases (a wait that can never end
//! is a deadlock report). The race detector records every shared-memory
//! access of a cluster's blocks with the thread's cluster-barrier counts,
//! so a read of a peer's word that no cluster barrier orders after the
//! peer's write (or before its next write) is a data race in "distributed
//! shared memory" naming both accesses; an access to a block that has
//! exited is reported with the last cluster barrier that block passed.

use crate::dim3::Dim3;
use crate::mem::{DeviceCopy, check, len_methods};
use crate::shared::SharedSlice;

/// One function per special register, each a single `mov`.
#[cfg(target_arch = "nvptx64")]
macro_rules! sregs {
    ($($f:ident => $reg:literal),* $(,)?) => {$(
        #[inline(always)]
        fn $f() -> u32 {
            let v: u32;
            // SAFETY: reads a special register; no memory is touched.
            unsafe {
                core::arch::asm!(concat!("mov.u32 {v}, ", $reg, ";"), v = out(reg32) v,
                    options(pure, nomem, nostack))
            };
            v
        }
    )*};
}
#[cfg(target_arch = "nvptx64")]
sregs!(
    ctarank => "%cluster_ctarank",
    nctarank => "%cluster_nctarank",
    ctaid_x => "%cluster_ctaid.x",
    ctaid_y => "%cluster_ctaid.y",
    ctaid_z => "%cluster_ctaid.z",
    nctaid_x => "%cluster_nctaid.x",
    nctaid_y => "%cluster_nctaid.y",
    nctaid_z => "%cluster_nctaid.z",
);

/// The block's linear rank in its cluster (`%cluster_ctarank`):
/// `0..num_blocks()`, x fastest. The rank [`SharedSlice::in_block`] takes.
#[inline(always)]
pub fn block_rank() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        ctarank()
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::sim::cluster::info().0
    }
}

/// Blocks in the cluster (`%cluster_nctarank`): 1 without clusters.
#[inline(always)]
pub fn num_blocks() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        nctarank()
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::sim::cluster::info().1
    }
}

/// The block's 3D index in its cluster (`%cluster_ctaid`).
#[inline(always)]
pub fn block_index() -> Dim3 {
    #[cfg(target_arch = "nvptx64")]
    {
        Dim3::new(ctaid_x(), ctaid_y(), ctaid_z())
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::sim::cluster::info().2
    }
}

/// The cluster's shape in blocks (`%cluster_nctaid`).
#[inline(always)]
pub fn dims() -> Dim3 {
    #[cfg(target_arch = "nvptx64")]
    {
        Dim3::new(nctaid_x(), nctaid_y(), nctaid_z())
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::sim::cluster::info().3
    }
}

/// The first half of the cluster barrier (`barrier.cluster.arrive`, release
/// semantics): this thread's earlier shared and distributed-shared writes
/// become visible to every thread that completes the matching [`wait`].
/// The thread goes on at once; it must call [`wait`] before it arrives
/// again.
#[inline(always)]
#[track_caller]
pub fn arrive() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no operands; the asm is a compiler barrier for memory (no
    // `nomem`), so no access moves across it.
    unsafe {
        core::arch::asm!("barrier.cluster.arrive;", options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::sim::cluster::arrive(core::panic::Location::caller());
}

/// The second half of the cluster barrier (`barrier.cluster.wait`, acquire
/// semantics): waits until every thread of the cluster that has not exited
/// has arrived at the phase of this thread's last [`arrive`]; afterwards
/// this thread sees everything they wrote before arriving.
#[inline(always)]
#[track_caller]
pub fn wait() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no operands; a compiler barrier for memory, so no read after
    // it is hoisted above it.
    unsafe {
        core::arch::asm!("barrier.cluster.wait;", options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::sim::cluster::wait(core::panic::Location::caller());
}

/// The whole cluster barrier: [`arrive`] then [`wait`]. Every thread of
/// every block of the cluster calls it; afterwards each sees what all of
/// them wrote before it, in its own and its peers' shared memory.
#[inline(always)]
#[track_caller]
pub fn sync() {
    arrive();
    wait();
}

/// An element type that distributed shared memory moves as one 32- or
/// 64-bit word (`ld`/`st.shared::cluster.b32`/`.b64`).
pub trait DsmemElem: DeviceCopy {
    /// The bits of the value, in the low `size_of::<Self>()` bytes.
    fn to_bits(self) -> u64;
    /// The value of those bits.
    fn from_bits(bits: u64) -> Self;
}

macro_rules! dsmem_elem {
    ($($t:ty => $via:ty),*) => {$(
        impl DsmemElem for $t {
            #[inline(always)]
            fn to_bits(self) -> u64 {
                <$via>::from_ne_bytes(self.to_ne_bytes()) as u64
            }
            #[inline(always)]
            fn from_bits(bits: u64) -> Self {
                <$t>::from_ne_bytes((bits as $via).to_ne_bytes())
            }
        }
    )*};
}
dsmem_elem!(u32 => u32, i32 => u32, f32 => u32, u64 => u64, i64 => u64, f64 => u64);

/// An element type with an atomic add in distributed shared memory
/// (`red.shared::cluster.add`).
pub trait DsmemAdd: DsmemElem {
    /// `red.shared::cluster.add` of `v` at the `shared::cluster` address
    /// `addr` (GPU).
    ///
    /// # Safety
    /// `addr` is an aligned element of a cluster block's shared memory.
    #[doc(hidden)]
    #[cfg(target_arch = "nvptx64")]
    unsafe fn red_cluster(addr: u32, v: Self);
    /// Adds `v` to the value at `p` (simulator): a `std` atomic.
    ///
    /// # Safety
    /// `p` valid and aligned.
    #[doc(hidden)]
    #[cfg(not(target_arch = "nvptx64"))]
    unsafe fn add_at(p: *mut Self, v: Self);
}

macro_rules! dsmem_add {
    ($($t:ty, $ptx:literal, $reg:ident, $bits:ty);*) => {$(
        impl DsmemAdd for $t {
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            unsafe fn red_cluster(addr: u32, v: Self) {
                // SAFETY: forwarded from the caller; the type suffix is `$t`'s.
                unsafe {
                    core::arch::asm!(concat!("red.shared::cluster.add.", $ptx, " [{a}], {v};"),
                        a = in(reg32) addr, v = in($reg) v.to_bits() as $bits, options(nostack))
                };
            }
            #[cfg(not(target_arch = "nvptx64"))]
            #[inline(always)]
            unsafe fn add_at(p: *mut Self, v: Self) {
                // SAFETY: forwarded from the caller.
                unsafe { <$t as crate::atomic::AtomicAdd>::atomic_add(p, v) };
            }
        }
    )*};
}
dsmem_add!(u32, "u32", reg32, u32; i32, "s32", reg32, u32; f32, "f32", reg32, u32;
    u64, "u64", reg64, u64);

/// A view of the same range of shared memory in another block of the
/// cluster (made by [`SharedSlice::in_block`]): element `i` is the element
/// `i` that block sees in its own view. Reads and writes go over the
/// cluster's SM-to-SM network; order them with [`sync`] (see the module
/// docs).
#[derive(Debug)]
pub struct RemoteShared<T> {
    /// The view in this block (its offsets are the peer's).
    local: *mut T,
    len: usize,
    rank: u32,
    /// The peer's `shared::cluster` address of element 0 (GPU).
    #[cfg(target_arch = "nvptx64")]
    remote: u32,
}

impl<T> Clone for RemoteShared<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for RemoteShared<T> {}

impl<T: DeviceCopy> SharedSlice<T> {
    /// The same view in the shared memory of block `rank` of the cluster
    /// (`mapa.shared::cluster`): distributed shared memory. `rank` may be
    /// this block's own [`block_rank`]. Stops the kernel if `rank` is not
    /// below [`num_blocks`].
    #[inline(always)]
    #[track_caller]
    pub fn in_block(&self, rank: u32) -> RemoteShared<T> {
        if rank >= num_blocks() {
            crate::trap("distributed shared memory: block rank outside the cluster");
        }
        #[cfg(target_arch = "nvptx64")]
        {
            let local = crate::mma::shared_addr(self.as_mut_ptr());
            let remote: u32;
            // SAFETY: address arithmetic only: maps a shared::cta address
            // of this block to the shared::cluster address of the same
            // offset in block `rank` (checked to exist above).
            unsafe {
                core::arch::asm!("mapa.shared::cluster.u32 {r}, {a}, {k};", r = out(reg32) remote,
                    a = in(reg32) local, k = in(reg32) rank, options(pure, nomem, nostack));
            }
            RemoteShared {
                local: self.as_mut_ptr(),
                len: self.len(),
                rank,
                remote,
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        RemoteShared {
            local: self.as_mut_ptr(),
            len: self.len(),
            rank,
        }
    }
}

impl<T: DsmemElem> RemoteShared<T> {
    len_methods!("view");
    /// The block of the cluster whose shared memory this is.
    #[inline(always)]
    pub fn rank(&self) -> u32 {
        self.rank
    }

    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    fn addr(&self, i: usize) -> u32 {
        self.remote + (i * core::mem::size_of::<T>()) as u32
    }

    #[cfg(not(target_arch = "nvptx64"))]
    #[track_caller]
    fn sim_ptr(&self, i: usize, kind: crate::sim::cluster::RemoteKind) -> *mut T {
        let local = self.local.wrapping_add(i) as usize;
        crate::sim::remote_access(
            local,
            core::mem::size_of::<T>(),
            self.rank,
            kind,
            core::panic::Location::caller(),
        ) as *mut T
    }

    /// Reads element `i` of the peer's view (`ld.shared::cluster`), checked.
    #[inline(always)]
    #[track_caller]
    pub fn get(&self, i: usize) -> T {
        const { assert!(core::mem::size_of::<T>() == 4 || core::mem::size_of::<T>() == 8) };
        check(i, self.len, "distributed shared memory");
        #[cfg(target_arch = "nvptx64")]
        {
            let a = self.addr(i);
            if core::mem::size_of::<T>() == 4 {
                let v: u32;
                // SAFETY: `i < len`, so the address lies in the peer's
                // view, which has the layout of this block's (same kernel,
                // same dynamic shared memory size).
                unsafe {
                    core::arch::asm!("ld.shared::cluster.b32 {v}, [{a}];", v = out(reg32) v,
                        a = in(reg32) a, options(nostack))
                };
                T::from_bits(v as u64)
            } else {
                let v: u64;
                // SAFETY: as above.
                unsafe {
                    core::arch::asm!("ld.shared::cluster.b64 {v}, [{a}];", v = out(reg64) v,
                        a = in(reg32) a, options(nostack))
                };
                T::from_bits(v)
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let p = self.sim_ptr(i, crate::sim::cluster::RemoteKind::Read);
            // SAFETY: `p` is element `i` of the same view in the peer's
            // shared-memory buffer, which has this block's size.
            unsafe { crate::sim::mem::read(p) }
        }
    }

    /// Writes element `i` of the peer's view (`st.shared::cluster`), checked.
    #[inline(always)]
    #[track_caller]
    pub fn set(&self, i: usize, v: T) {
        const { assert!(core::mem::size_of::<T>() == 4 || core::mem::size_of::<T>() == 8) };
        check(i, self.len, "distributed shared memory");
        #[cfg(target_arch = "nvptx64")]
        {
            let a = self.addr(i);
            if core::mem::size_of::<T>() == 4 {
                // SAFETY: as in `get`.
                unsafe {
                    core::arch::asm!("st.shared::cluster.b32 [{a}], {v};", a = in(reg32) a,
                        v = in(reg32) v.to_bits() as u32, options(nostack))
                };
            } else {
                // SAFETY: as in `get`.
                unsafe {
                    core::arch::asm!("st.shared::cluster.b64 [{a}], {v};", a = in(reg32) a,
                        v = in(reg64) v.to_bits(), options(nostack))
                };
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let p = self.sim_ptr(i, crate::sim::cluster::RemoteKind::Write);
            // SAFETY: as in `get`.
            unsafe { crate::sim::mem::write(p, v) }
        }
    }
}

impl<T: DsmemAdd> RemoteShared<T> {
    /// Atomically adds `v` to element `i` of the peer's view
    /// (`red.shared::cluster.add`; no value comes back). Atomic adds from
    /// any blocks of the cluster never race with each other; the peer reads
    /// the total after a [`sync`].
    #[inline(always)]
    #[track_caller]
    pub fn atomic_add(&self, i: usize, v: T) {
        check(i, self.len, "distributed shared memory");
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: as in `get`.
        unsafe {
            T::red_cluster(self.addr(i), v)
        };
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let p = self.sim_ptr(i, crate::sim::cluster::RemoteKind::Atomic);
            // SAFETY: as in `get`.
            unsafe { T::add_at(p, v) }
        }
    }
}
