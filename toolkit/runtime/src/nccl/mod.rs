//! NCCL between the GPUs of a job, loaded at run time.
//!
//! * [`load`] finds `libnccl.so.2`: `PTXLAB_NCCL` (the file, or the folder
//!   holding it), then the dynamic loader's search (`LD_LIBRARY_PATH`, the
//!   ldconfig cache) for `libnccl.so.2` and `libnccl.so`, then the NCCL wheel
//!   of the `python3` on the `PATH` (`nvidia-nccl-cu12`/`-cu13`, which
//!   PyTorch installs). Nothing NCCL is needed to build.
//! * [`Comms`] are the communicators of the GPUs one process drives, each
//!   with the [`Stream`](crate::Stream) its transfers are queued on: every
//!   GPU of a host in one process (`ncclCommInitAll`), or one GPU per
//!   process joined through a [`UniqueId`] (`ncclCommInitRank`). They move
//!   [`Rows`]: runs of elements of [`Buffer`] values, borrowed and
//!   bounds-checked when made.
//! * [`share_pools`] lets the GPUs of one process reach each other's
//!   allocations, which NCCL's direct path between them needs.
//!
//! Why the loader is the runtime's own: cudarc's `nccl` feature supplies the
//! C types used here, but its loader tries `libnccl.so`, `libnccl.so.12`,
//! `.11`, ... and never `libnccl.so.2`, the only name NCCL's packages and
//! wheels install, and it panics when nothing is found. Resolving the dozen
//! symbols here gives the search above and an error instead of a panic.
//!
//! NVLink SHARP (NVLS, multicast) stays off: [`require_nvls_off`] refuses to
//! start NCCL unless `NCCL_NVLS_ENABLE=0` is in the environment. On shared
//! multi-GPU hosts a program that uses multicast can take the host's GPUs
//! out of service for everyone, and point-to-point transfers gain nothing
//! from it.

mod loader;
mod team;

pub use loader::{
    INSTALL_HINT, LIB_NAME, NVLS_ENV, Nccl, UniqueId, candidates, load, load_from, require_nvls_off,
};
pub use team::{Comms, share_pools};

use crate::buffer::Buffer;
use crate::error::{Error, Result};
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
    /// Device memory of a GPU.
    Gpu,
}

/// A run of `count` elements of one buffer, starting at element `start`
/// (rows of a row-major grid, or a single value to reduce). It borrows the
/// buffer for `'a`, so it cannot outlive it, and lies inside it.
#[derive(Debug, Clone, Copy)]
pub struct Rows<'a> {
    addr: u64,
    count: usize,
    dtype: Dtype,
    backing: Backing,
    _buf: PhantomData<&'a ()>,
}

impl<'a> Rows<'a> {
    /// Elements `start .. start + count` of `buf`, labelled `dtype` (an
    /// error when they are not all inside it, or `T` is not `dtype`'s size).
    pub fn of<T>(buf: &'a Buffer<T>, start: usize, count: usize, dtype: Dtype) -> Result<Self> {
        if std::mem::size_of::<T>() != dtype.size() {
            return Err(Error::input(
                "transfer",
                format!(
                    "elements of {} bytes labelled {dtype:?}",
                    std::mem::size_of::<T>()
                ),
            ));
        }
        if start.checked_add(count).is_none_or(|end| end > buf.len()) {
            return Err(Error::input(
                "transfer",
                format!(
                    "elements {start}..{} of a buffer of {}",
                    start.saturating_add(count),
                    buf.len()
                ),
            ));
        }
        let backing = if buf.is_gpu() {
            Backing::Gpu
        } else {
            Backing::Sim
        };
        Ok(Self {
            addr: buf.address() + (start * dtype.size()) as u64,
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
    /// Bytes.
    pub fn bytes(&self) -> usize {
        self.count * self.dtype.size()
    }
    /// `true` when the two runs share memory.
    pub fn overlaps(&self, o: &Rows<'_>) -> bool {
        self.backing == o.backing
            && self.addr < o.addr + o.bytes() as u64
            && o.addr < self.addr + self.bytes() as u64
    }
}

/// One point-to-point transfer of a batch ([`Comms::exchange`]). `local`
/// is the index of the communicator among those of this process
/// ([`Comms::local_ranks`]); `peer` is a global rank.
#[derive(Debug, Clone, Copy)]
pub enum P2p<'a> {
    /// Send `rows` of local rank `local` to rank `peer`.
    Send {
        /// Index of the sender in this process.
        local: usize,
        /// Receiving rank.
        peer: usize,
        /// What is sent.
        rows: Rows<'a>,
    },
    /// Receive from rank `peer` into `rows` of local rank `local`.
    Recv {
        /// Index of the receiver in this process.
        local: usize,
        /// Sending rank.
        peer: usize,
        /// Where the data lands.
        rows: Rows<'a>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Device;

    #[test]
    fn rows_lie_inside_their_buffer_and_know_their_overlaps() {
        let dev = Device::sim();
        let buf = dev.upload(&[0.0f64; 8]).unwrap();
        let a = Rows::of(&buf, 0, 4, Dtype::F64).unwrap();
        let b = Rows::of(&buf, 3, 5, Dtype::F64).unwrap();
        let c = Rows::of(&buf, 4, 4, Dtype::F64).unwrap();
        assert_eq!((a.backing(), a.bytes()), (Backing::Sim, 32));
        assert!(a.overlaps(&b) && !a.overlaps(&c));
        let e = Rows::of(&buf, 6, 3, Dtype::F64).unwrap_err().to_string();
        assert!(e.contains("elements 6..9 of a buffer of 8"), "{e}");
        let e = Rows::of(&buf, 0, 1, Dtype::F32).unwrap_err().to_string();
        assert!(e.contains("8 bytes labelled F32"), "{e}");
    }

    #[test]
    fn unique_ids_travel_as_hex() {
        let mut id = UniqueId { internal: [0; 128] };
        for (i, b) in id.internal.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37) as _;
        }
        let hex = id.to_hex();
        assert_eq!(hex.len(), 256);
        assert_eq!(UniqueId::from_hex(&hex).unwrap(), id);
        let e = UniqueId::from_hex("abc").unwrap_err().to_string();
        assert!(e.contains("256 hex digits"), "{e}");
    }

    #[test]
    fn a_missing_library_names_what_was_tried_and_how_to_get_it() {
        let e = load_from(&["/nonexistent/libnccl.so.2".to_string()])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("libnccl.so.2 could not be loaded")
                && e.contains("/nonexistent/libnccl.so.2")
                && e.contains("pip install nvidia-nccl-cu12"),
            "{e}"
        );
    }
}
