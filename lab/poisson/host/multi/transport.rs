//! How the slabs talk: a small [`Transport`] trait (one batch of halo sends
//! and receives, and a sum over ranks), with the in-process implementation
//! [`LocalTransport`] for several simulated devices. The NCCL implementation
//! is in [`super::nccl`].
//!
//! A transfer names its memory with [`Rows`] (the runtime's): a run of
//! elements of one slab buffer, made from a borrow of that buffer (so it
//! cannot outlive it) and bounds-checked when it is made.

use ptxlab_common::error::{Error, Result};
/// One transfer of a batch (the runtime's point-to-point operation):
/// `local` is the index of the slab among those this process drives
/// ([`Transport::local_ranks`]); `peer` is a global rank.
pub use ptxlab_common::runtime::nccl::P2p as HaloOp;
pub use ptxlab_common::runtime::nccl::{Backing, Dtype, Rows};

/// What the decomposition needs from the machinery between the devices.
///
/// A batch given to [`Transport::exchange`] is one NCCL group: every send
/// and receive of every slab of this process for one halo exchange, matched
/// by (sender, receiver) pair, so each ordered pair appears at most once per
/// batch. On GPUs the transfers are queued on each slab's communication
/// stream; the slab runner keeps the buffers alive and orders its own work
/// around them with events.
pub trait Transport {
    /// Ranks in the whole job (all processes).
    fn world_size(&self) -> usize;
    /// Global ranks of the slabs this process drives, in slab order.
    fn local_ranks(&self) -> &[usize];
    /// One batch of point-to-point transfers.
    fn exchange(&mut self, ops: &[HaloOp<'_>]) -> Result<()>;
    /// Sums one `f64` over all ranks: `accs[i]` is the value of local slab
    /// `i` (one element); each is overwritten with the total.
    fn all_reduce_sum(&mut self, accs: &[Rows<'_>]) -> Result<()>;
    /// Fails on every rank unless every rank of the job describes its
    /// problem as `what` (the ranks of a job of several processes were
    /// started separately, so each made its problem from its own arguments).
    /// A transport whose ranks all live in this process has nothing to
    /// compare.
    fn agree(&mut self, what: &str) -> Result<()> {
        let _ = what;
        Ok(())
    }
    /// A short description for reports (`"NCCL 2.28.5, one process"`).
    fn describe(&self) -> String;
}

/// The in-process transport: every rank lives in this process, so a batch
/// is a set of plain copies, done when [`Transport::exchange`] returns. It
/// serves simulated devices (host memory) and a lone GPU (which exchanges
/// nothing); it refuses to copy GPU memory.
#[derive(Debug)]
pub struct LocalTransport {
    ranks: Vec<usize>,
}

impl LocalTransport {
    /// `world` ranks, all in this process.
    pub fn new(world: usize) -> Self {
        Self {
            ranks: (0..world).collect(),
        }
    }
}

/// Refuses a run of GPU memory (the in-process and TCP transports copy host
/// memory only).
pub(super) fn sim_only(r: &Rows<'_>) -> Result<()> {
    if r.backing() != Backing::Sim {
        return Err(Error::Runtime(ptxlab_common::runtime::Error::Unsupported {
            what: "copying GPU memory between ranks".into(),
            backend: "in-process (simulator) transport".into(),
            hint: "several GPUs exchange halos through NCCL (`Team::gpus`)".into(),
        }));
    }
    Ok(())
}

impl Transport for LocalTransport {
    fn world_size(&self) -> usize {
        self.ranks.len()
    }
    fn local_ranks(&self) -> &[usize] {
        &self.ranks
    }
    fn exchange(&mut self, ops: &[HaloOp<'_>]) -> Result<()> {
        let world = self.ranks.len();
        let mut sends = Vec::new();
        let mut recvs = Vec::new();
        for op in ops {
            let (local, peer, rows) = match *op {
                HaloOp::Send { local, peer, rows } | HaloOp::Recv { local, peer, rows } => {
                    (local, peer, rows)
                }
            };
            if local >= world || peer >= world || local == peer {
                return Err(Error::input(
                    "halo transfer",
                    format!("rank {local} with peer {peer} in a world of {world}"),
                ));
            }
            sim_only(&rows)?;
            match op {
                HaloOp::Send { .. } => sends.push((local, peer, rows)),
                HaloOp::Recv { .. } => recvs.push((local, peer, rows)),
            }
        }
        if sends.len() != recvs.len() {
            return Err(Error::input(
                "halo exchange",
                format!(
                    "{} sends and {} receives in one batch; every send needs its receive",
                    sends.len(),
                    recvs.len()
                ),
            ));
        }
        for &(dst, src, to) in &recvs {
            let matching: Vec<_> = sends
                .iter()
                .filter(|(s, d, _)| *s == src && *d == dst)
                .collect();
            let [&(_, _, from)] = matching[..] else {
                return Err(Error::input(
                    "halo exchange",
                    format!(
                        "rank {dst} receives from rank {src}, which sends it {} messages in this batch",
                        matching.len()
                    ),
                ));
            };
            if from.count() != to.count() || from.dtype() != to.dtype() {
                return Err(Error::input(
                    "halo exchange",
                    format!(
                        "rank {src} sends {} {:?} to rank {dst}, which expects {} {:?}",
                        from.count(),
                        from.dtype(),
                        to.count(),
                        to.dtype()
                    ),
                ));
            }
            if from.overlaps(&to) {
                return Err(Error::input(
                    "halo exchange",
                    "a send and its receive share memory",
                ));
            }
            // SAFETY: both runs were made by `Rows::of` from live simulator
            // buffers (host memory, `UnsafeCell` elements) borrowed for the
            // lifetime of `ops`, and bounds-checked then; they do not overlap
            // (checked above). Simulated launches are synchronous, so no kernel
            // touches the cells during the copy, and no Rust reference to the
            // cells exists (the runtime only reaches them through raw pointers).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    from.addr() as *const u8,
                    to.addr() as *mut u8,
                    from.bytes(),
                );
            }
        }
        Ok(())
    }
    fn all_reduce_sum(&mut self, accs: &[Rows<'_>]) -> Result<()> {
        if accs.len() != self.ranks.len() {
            return Err(Error::input(
                "all-reduce",
                format!(
                    "{} values for {} ranks in this process",
                    accs.len(),
                    self.ranks.len()
                ),
            ));
        }
        if self.ranks.len() == 1 {
            return Ok(());
        }
        for a in accs {
            sim_only(a)?;
            if a.count() != 1 || a.dtype() != Dtype::F64 {
                return Err(Error::input("all-reduce", "one f64 per rank is summed"));
            }
        }
        let mut total = 0.0f64;
        for a in accs {
            // SAFETY: `a` is one f64 of a live simulator buffer (checked when
            // it was made, and its type above); no launch runs and no reference
            // to it exists (see `exchange`). The buffer's elements are aligned.
            total += unsafe { (a.addr() as *const f64).read() };
        }
        for a in accs {
            // SAFETY: as above, for a write.
            unsafe { (a.addr() as *mut f64).write(total) };
        }
        Ok(())
    }
    fn describe(&self) -> String {
        format!("in-process copies, {} rank(s)", self.ranks.len())
    }
}
