//! How the slabs talk: a small [`Transport`] trait (one batch of halo sends
//! and receives, and a sum over ranks), with the in-process implementation
//! [`LocalTransport`] for several simulated devices. The NCCL implementation
//! is in [`super::nccl`].
//!
//! A transfer names its memory with [`Rows`]: a run of elements of one slab
//! buffer, made from a borrow of that buffer (so it cannot outlive it) and
//! bounds-checked when it is made. Only this module tree can make one.

use crate::error::{Error, Result};
use crate::runtime::{Buffer, KernelArg};
use ptxlab_device::mem::DeviceCopy;
use std::marker::PhantomData;

/// Element type of a transfer (what NCCL calls the datatype).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    /// 4-byte IEEE float.
    F32,
    /// 8-byte IEEE float.
    F64,
}

impl Dtype {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Dtype::F32 => 4,
            Dtype::F64 => 8,
        }
    }
}

/// Where the memory of a [`Rows`] lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backing {
    /// Host memory of a simulated device.
    Sim,
    /// Device memory of a GPU (a `CUdeviceptr`).
    Gpu,
}

/// A run of `count` elements of one slab buffer, starting at element
/// `start`: a halo row, a slab's owned rows, or the one-`f64` accumulator of
/// the residual. It borrows the buffer for `'a`.
#[derive(Debug, Clone, Copy)]
pub struct Rows<'a> {
    addr: u64,
    count: usize,
    dtype: Dtype,
    backing: Backing,
    _buf: PhantomData<&'a ()>,
}

impl<'a> Rows<'a> {
    /// Elements `start .. start + count` of `buf` (an error when they are
    /// not all inside it).
    pub(crate) fn of<T: DeviceCopy>(
        buf: &'a Buffer<T>,
        start: usize,
        count: usize,
        dtype: Dtype,
    ) -> Result<Self> {
        if std::mem::size_of::<T>() != dtype.size() {
            return Err(Error::input(
                "halo transfer",
                format!(
                    "elements of {} bytes labelled {dtype:?}",
                    std::mem::size_of::<T>()
                ),
            ));
        }
        if start.checked_add(count).is_none_or(|end| end > buf.len()) {
            return Err(Error::input(
                "halo transfer",
                format!(
                    "elements {start}..{} of a buffer of {}",
                    start.saturating_add(count),
                    buf.len()
                ),
            ));
        }
        let (base, backing) = match buf.cuda_slice() {
            Some(s) => {
                let (p, _sync) = cudarc::driver::DevicePtr::device_ptr(s, s.stream());
                (p, Backing::Gpu)
            }
            None => (KernelArg::sim_value(buf).as_ptr() as u64, Backing::Sim),
        };
        Ok(Self {
            addr: base + (start * dtype.size()) as u64,
            count,
            dtype,
            backing,
            _buf: PhantomData,
        })
    }
    /// Address of the first element (device pointer or host pointer).
    pub fn addr(&self) -> u64 {
        self.addr
    }
    /// Elements.
    pub fn count(&self) -> usize {
        self.count
    }
    /// Element type.
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }
    /// Where the memory lives.
    pub fn backing(&self) -> Backing {
        self.backing
    }
    fn bytes(&self) -> usize {
        self.count * self.dtype.size()
    }
    fn overlaps(&self, o: &Rows<'_>) -> bool {
        self.backing == o.backing
            && self.addr < o.addr + o.bytes() as u64
            && o.addr < self.addr + self.bytes() as u64
    }
}

/// One transfer of a batch. `local` is the index of the slab among those this
/// process drives ([`Transport::local_ranks`]); `peer` is a global rank.
#[derive(Debug, Clone, Copy)]
pub enum HaloOp<'a> {
    /// Send `rows` of local slab `local` to rank `peer`.
    Send {
        /// Index of the sending slab in this process.
        local: usize,
        /// Receiving rank.
        peer: usize,
        /// What is sent.
        rows: Rows<'a>,
    },
    /// Receive from rank `peer` into `rows` of local slab `local`.
    Recv {
        /// Index of the receiving slab in this process.
        local: usize,
        /// Sending rank.
        peer: usize,
        /// Where the data lands.
        rows: Rows<'a>,
    },
}

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

fn sim_only(r: &Rows<'_>) -> Result<()> {
    if r.backing != Backing::Sim {
        return Err(Error::Runtime(crate::runtime::Error::Unsupported {
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
            if from.count != to.count || from.dtype != to.dtype {
                return Err(Error::input(
                    "halo exchange",
                    format!(
                        "rank {src} sends {} {:?} to rank {dst}, which expects {} {:?}",
                        from.count, from.dtype, to.count, to.dtype
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
                    from.addr as *const u8,
                    to.addr as *mut u8,
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
            if a.count != 1 || a.dtype != Dtype::F64 {
                return Err(Error::input("all-reduce", "one f64 per rank is summed"));
            }
        }
        let mut total = 0.0f64;
        for a in accs {
            // SAFETY: `a` is one f64 of a live simulator buffer (checked when
            // it was made, and its type above); no launch runs and no reference
            // to it exists (see `exchange`). The buffer's elements are aligned.
            total += unsafe { (a.addr as *const f64).read() };
        }
        for a in accs {
            // SAFETY: as above, for a write.
            unsafe { (a.addr as *mut f64).write(total) };
        }
        Ok(())
    }
    fn describe(&self) -> String {
        format!("in-process copies, {} rank(s)", self.ranks.len())
    }
}
