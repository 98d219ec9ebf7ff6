//! Pointer-offset runs of buffers ([`Span`]) for the copies between a
//! slab's buffers, and the stream a slab launch goes to. (Launches take
//! typed views of the buffers instead: `Buffer::view`.)

use super::team::Member;
use crate::error::{Error, Result};
use crate::runtime::Buffer;
use cudarc::driver::CudaStream;
use ptxlab_device::mem::DeviceCopy;
use std::marker::PhantomData;
use std::sync::Arc;

/// A run of elements of one buffer by address (device or simulator host
/// memory), for the copies between a slab's buffers. Made from a live
/// buffer and used while it lives.
pub(super) struct Span<T> {
    pub(super) addr: u64,
    pub(super) len: usize,
    pub(super) gpu: bool,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for Span<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Span<T> {}

impl<T: DeviceCopy> Span<T> {
    pub(super) fn of(buf: &Buffer<T>) -> Self {
        match buf.cuda_slice() {
            Some(s) => {
                let (p, _sync) = cudarc::driver::DevicePtr::device_ptr(s, s.stream());
                Self {
                    addr: p,
                    len: buf.len(),
                    gpu: true,
                    _t: PhantomData,
                }
            }
            None => Self {
                addr: buf.address(),
                len: buf.len(),
                gpu: false,
                _t: PhantomData,
            },
        }
    }
    /// Rows `r0 .. r1` of a row-major buffer of width `nx`.
    pub(super) fn rows(self, nx: usize, r0: usize, r1: usize) -> Result<Self> {
        if r0 > r1 || r1 * nx > self.len {
            return Err(Error::input(
                "slab view",
                format!("rows {r0}..{r1} of a buffer of {} rows", self.len / nx),
            ));
        }
        Ok(Self {
            addr: self.addr + (r0 * nx * std::mem::size_of::<T>()) as u64,
            len: (r1 - r0) * nx,
            ..self
        })
    }
    pub(super) fn overlaps<U>(&self, o: &Span<U>) -> bool {
        let (a0, a1) = (
            self.addr,
            self.addr + (self.len * std::mem::size_of::<T>()) as u64,
        );
        let (b0, b1) = (o.addr, o.addr + (o.len * std::mem::size_of::<U>()) as u64);
        self.gpu == o.gpu && a0 < b1 && b0 < a1
    }
}

/// Which stream of a GPU slab a launch goes to.
#[derive(Clone, Copy)]
pub(super) enum Lane {
    A,
    B,
}

/// The stream of `lane` on a GPU member (`None` on the simulator).
pub(super) fn stream_of(mem: &Member, lane: Lane) -> Option<&Arc<CudaStream>> {
    mem.streams.as_ref().map(|s| match lane {
        Lane::A => &s.a,
        Lane::B => &s.b,
    })
}
