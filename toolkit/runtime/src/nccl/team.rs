//! [`Comms`]: the NCCL communicators of the GPUs one process drives, and
//! [`share_pools`], which lets those GPUs reach each other's memory.

use super::loader::{Nccl, UniqueId};
use super::{Backing, Dtype, P2p, Rows};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::stream::Stream;
use cudarc::driver::sys::{
    CUmemAccess_flags, CUmemAccessDesc, CUmemLocation, CUmemLocationType, CUmemoryPool, CUresult,
};
use cudarc::nccl::sys::{cudaStream_t, ncclComm_t, ncclDataType_t, ncclRedOp_t};
use std::ffi::{c_int, c_void};

fn dtype(d: Dtype) -> ncclDataType_t {
    match d {
        Dtype::F32 => ncclDataType_t::ncclFloat32,
        Dtype::F64 => ncclDataType_t::ncclFloat64,
    }
}

/// Communicators of the GPUs this process drives, each with the stream its
/// transfers are queued on. Dropping them waits for those streams, then
/// releases the communicators.
pub struct Comms {
    lib: &'static Nccl,
    comms: Vec<ncclComm_t>,
    streams: Vec<Stream>,
    ranks: Vec<usize>,
    world: usize,
    per_process: bool,
}

impl std::fmt::Debug for Comms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Comms")
            .field("ranks", &self.ranks)
            .field("world", &self.world)
            .finish()
    }
}

impl Comms {
    /// One process driving every GPU of the job: `streams[i]` is the stream
    /// of rank `i` (on its GPU); `ncclCommInitAll`.
    pub fn init_all(lib: &'static Nccl, streams: Vec<Stream>) -> Result<Self> {
        super::require_nvls_off()?;
        let n = streams.len();
        let ordinals: Vec<c_int> = streams.iter().map(|s| s.ordinal() as c_int).collect();
        let mut comms = vec![std::ptr::null_mut(); n];
        // SAFETY: `comms` has room for `n` communicators and `ordinals` holds
        // `n` device ordinals; NCCL initialises one communicator per device.
        let r = unsafe { (lib.comm_init_all)(comms.as_mut_ptr(), n as c_int, ordinals.as_ptr()) };
        lib.check("ncclCommInitAll", r)?;
        Ok(Self {
            lib,
            comms,
            streams,
            ranks: (0..n).collect(),
            world: n,
            per_process: false,
        })
    }

    /// One rank of a job of `world` processes (one GPU each), joined through
    /// the shared unique `id`: `ncclCommInitRank` on the stream's GPU.
    pub fn init_rank(
        lib: &'static Nccl,
        stream: Stream,
        rank: usize,
        world: usize,
        id: UniqueId,
    ) -> Result<Self> {
        super::require_nvls_off()?;
        stream.bind()?;
        let mut comm = std::ptr::null_mut();
        // SAFETY: `comm` is a valid out-pointer; the current context is the
        // rank's GPU (bound above), which ncclCommInitRank uses.
        let r =
            unsafe { (lib.comm_init_rank)(&mut comm, world as c_int, id.to_nccl(), rank as c_int) };
        lib.check("ncclCommInitRank", r)?;
        Ok(Self {
            lib,
            comms: vec![comm],
            streams: vec![stream],
            ranks: vec![rank],
            world,
            per_process: true,
        })
    }

    /// Ranks in the whole job (all processes).
    pub fn world_size(&self) -> usize {
        self.world
    }
    /// Global ranks of this process's communicators, in order.
    pub fn local_ranks(&self) -> &[usize] {
        &self.ranks
    }

    fn grouped(&self, f: impl FnOnce() -> Result<()>) -> Result<()> {
        // SAFETY: no arguments; opens a group that is closed below on every path.
        let r = unsafe { (self.lib.group_start)() };
        self.lib.check("ncclGroupStart", r)?;
        let inner = f();
        // SAFETY: closes the group opened above.
        let r = unsafe { (self.lib.group_end)() };
        inner.and(self.lib.check("ncclGroupEnd", r))
    }

    /// One batch of sends and receives, as one NCCL group: each is queued on
    /// its communicator's stream. The caller keeps the buffers alive and
    /// orders its own work on them around those streams.
    pub fn exchange(&self, ops: &[P2p<'_>]) -> Result<()> {
        for op in ops {
            let (P2p::Send { local, peer, rows } | P2p::Recv { local, peer, rows }) = *op;
            if local >= self.comms.len() || peer >= self.world {
                return Err(Error::input(
                    "transfer",
                    format!(
                        "local communicator {local} of {}, peer {peer}, world {}",
                        self.comms.len(),
                        self.world
                    ),
                ));
            }
            if rows.backing() != Backing::Gpu {
                return Err(Error::input(
                    "transfer",
                    "NCCL moves GPU memory; this buffer is on the simulator",
                ));
            }
        }
        self.grouped(|| {
            for op in ops {
                let (P2p::Send { local, peer, rows } | P2p::Recv { local, peer, rows }) = *op;
                let (comm, stream) = (self.comms[local], &self.streams[local]);
                stream.bind()?;
                let s = stream.raw() as cudaStream_t;
                let (call, r) = match op {
                    // SAFETY: `rows` is a bounds-checked run of a live device
                    // buffer (made by `Rows::of`, which borrows it); `comm` is
                    // initialised and `s` is a stream of its GPU. The caller
                    // keeps the buffer alive and orders its own accesses
                    // around the stream.
                    P2p::Send { .. } => ("ncclSend", unsafe {
                        (self.lib.send)(
                            rows.addr() as *const c_void,
                            rows.count(),
                            dtype(rows.dtype()),
                            peer as c_int,
                            comm,
                            s,
                        )
                    }),
                    // SAFETY: as for the send; the receiver writes `count`
                    // elements into the run, which nothing else touches until
                    // the stream passes this point.
                    P2p::Recv { .. } => ("ncclRecv", unsafe {
                        (self.lib.recv)(
                            rows.addr() as *mut c_void,
                            rows.count(),
                            dtype(rows.dtype()),
                            peer as c_int,
                            comm,
                            s,
                        )
                    }),
                };
                self.lib.check(call, r)?;
            }
            Ok(())
        })
    }

    /// Sums over all ranks in place: `accs[i]` is the run of local
    /// communicator `i` (runs of one length and type on every rank); each is
    /// overwritten with the elementwise total, queued on its stream.
    pub fn all_reduce_sum(&self, accs: &[Rows<'_>]) -> Result<()> {
        if accs.len() != self.comms.len() {
            return Err(Error::input(
                "all-reduce",
                format!(
                    "{} runs for {} local communicators; one each",
                    accs.len(),
                    self.comms.len()
                ),
            ));
        }
        if let Some(a) = accs.iter().find(|a| a.backing() != Backing::Gpu) {
            return Err(Error::input(
                "all-reduce",
                format!(
                    "a run of {} on the simulator; NCCL sums GPU memory",
                    a.count()
                ),
            ));
        }
        self.grouped(|| {
            for (i, a) in accs.iter().enumerate() {
                self.streams[i].bind()?;
                // SAFETY: `a` is a bounds-checked run of a live device buffer
                // on this communicator's GPU (made by `Rows::of`); the
                // reduction is in place (send and receive buffers equal, which
                // NCCL allows); the stream is the same GPU's.
                let r = unsafe {
                    (self.lib.all_reduce)(
                        a.addr() as *const c_void,
                        a.addr() as *mut c_void,
                        a.count(),
                        dtype(a.dtype()),
                        ncclRedOp_t::ncclSum,
                        self.comms[i],
                        self.streams[i].raw() as cudaStream_t,
                    )
                };
                self.lib.check("ncclAllReduce", r)?;
            }
            Ok(())
        })
    }

    /// A short description for reports (`"NCCL 2.28.5 (path), one process,
    /// 2 GPUs"`).
    pub fn describe(&self) -> String {
        format!(
            "NCCL {} ({}), {}",
            self.lib.version(),
            self.lib.path(),
            if self.per_process {
                format!("rank {} of {} processes", self.ranks[0], self.world)
            } else {
                format!("one process, {} GPUs", self.world)
            }
        )
    }
}

impl Drop for Comms {
    fn drop(&mut self) {
        for s in &self.streams {
            let _ = s.synchronize();
        }
        for &c in &self.comms {
            // SAFETY: `c` was initialised by NCCL and is released exactly once,
            // here; its streams were synchronised above, so no operation of it
            // is in flight. Abort (rather than destroy) cannot wait on a peer
            // that has already failed.
            let _ = unsafe { (self.lib.comm_abort)(c) };
        }
    }
}

/// Lets every GPU of `gpus` read and write the others' stream-ordered
/// allocations. The runtime's buffers come from each device's default memory
/// pool (`cuMemAllocAsync`), which other GPUs cannot reach unless the pool
/// grants them access, and NCCL, between GPUs of one process, may read or
/// write the peer's buffers directly ("P2P/direct pointer"). Where two GPUs
/// cannot reach each other at all NCCL does not take that path, and nothing
/// is granted; a failed grant only leaves NCCL without the direct path.
pub fn share_pools(gpus: &[&Gpu]) -> Result<()> {
    let devs = gpus
        .iter()
        .map(|g| {
            cudarc::driver::result::device::get(g.ordinal() as i32)
                .map_err(|e| Error::driver("cuDeviceGet", e))
        })
        .collect::<Result<Vec<_>>>()?;
    for (g, &dev) in gpus.iter().zip(&devs) {
        g.context()
            .bind_to_thread()
            .map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
        let mut pool: CUmemoryPool = std::ptr::null_mut();
        // SAFETY: `pool` is a valid out-pointer and `dev` a device handle
        // from cuDeviceGet.
        let r = unsafe { cudarc::driver::sys::cuDeviceGetDefaultMemPool(&mut pool, dev) };
        if r != CUresult::CUDA_SUCCESS {
            continue;
        }
        for (peer, &peer_dev) in gpus.iter().zip(&devs) {
            if peer.ordinal() == g.ordinal() {
                continue;
            }
            let mut can = 0;
            // SAFETY: `can` is a valid out-pointer; both are device handles.
            let r = unsafe { cudarc::driver::sys::cuDeviceCanAccessPeer(&mut can, peer_dev, dev) };
            if r != CUresult::CUDA_SUCCESS || can == 0 {
                continue;
            }
            let desc = CUmemAccessDesc {
                location: CUmemLocation {
                    type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                    id: peer.ordinal() as i32,
                },
                flags: CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
            };
            // SAFETY: `pool` is the owner's default pool, `desc` one valid
            // access descriptor (count 1) naming a peer device that can access
            // the owner. A failure only leaves NCCL without direct access.
            let _ = unsafe { cudarc::driver::sys::cuMemPoolSetAccess(pool, &desc, 1) };
        }
    }
    Ok(())
}
