//! [`Buffer`]: typed memory on a device: a `CudaSlice` on a GPU, cells of
//! host memory on the simulator.

use cudarc::driver::CudaSlice;
use std::cell::UnsafeCell;

pub(crate) enum BufInner<T> {
    Gpu(CudaSlice<T>),
    Sim(Box<[UnsafeCell<T>]>),
}

/// A typed buffer on a [`Device`](crate::Device).
pub struct Buffer<T> {
    pub(crate) inner: BufInner<T>,
}

// SAFETY: simulator cells are only written by kernels through relaxed atomics
// (`ptxlab_device::sim::mem`) or through `&mut Buffer`; GPU slices are handles.
unsafe impl<T: Send> Sync for Buffer<T> {}

impl<T> std::fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Buffer(len {})", self.len())
    }
}

impl<T> Buffer<T> {
    /// Elements.
    pub fn len(&self) -> usize {
        match &self.inner {
            BufInner::Gpu(s) => s.len(),
            BufInner::Sim(s) => s.len(),
        }
    }
    /// `true` when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The GPU allocation, when on a GPU.
    pub fn cuda_slice(&self) -> Option<&CudaSlice<T>> {
        match &self.inner {
            BufInner::Gpu(s) => Some(s),
            BufInner::Sim(_) => None,
        }
    }
    /// The GPU allocation, mutable.
    pub fn cuda_slice_mut(&mut self) -> Option<&mut CudaSlice<T>> {
        match &mut self.inner {
            BufInner::Gpu(s) => Some(s),
            BufInner::Sim(_) => None,
        }
    }
    /// The device address (the host address of the simulator's cells).
    pub(crate) fn device_ptr(&self) -> u64 {
        match &self.inner {
            BufInner::Gpu(s) => {
                let (p, _sync) = cudarc::driver::DevicePtr::device_ptr(s, s.stream());
                p
            }
            BufInner::Sim(s) => s.as_ptr() as u64,
        }
    }
    /// The simulator's cells (null on a GPU).
    pub(crate) fn host_ptr(&self) -> *mut T {
        match &self.inner {
            BufInner::Gpu(_) => std::ptr::null_mut(),
            BufInner::Sim(s) => UnsafeCell::raw_get(s.as_ptr()),
        }
    }
}
