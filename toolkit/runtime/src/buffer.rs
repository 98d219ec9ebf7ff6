//! [`Buffer`]: typed memory on a device: an allocation of device memory on
//! a GPU, cells of host memory on the simulator.

use cudarc::driver::CudaSlice;
use std::cell::UnsafeCell;

pub(crate) enum BufInner<T> {
    /// The allocation's bytes (`len * size_of::<T>()` of them) and the
    /// number of elements: the element type is the runtime's, not cudarc's
    /// (see `element::Raw`).
    Gpu {
        bytes: CudaSlice<u8>,
        len: usize,
    },
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
            BufInner::Gpu { len, .. } => *len,
            BufInner::Sim(s) => s.len(),
        }
    }
    /// `true` when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The GPU allocation as bytes (`len() * size_of::<T>()`), when on a GPU.
    pub fn cuda_slice(&self) -> Option<&CudaSlice<u8>> {
        match &self.inner {
            BufInner::Gpu { bytes, .. } => Some(bytes),
            BufInner::Sim(_) => None,
        }
    }
    /// The GPU allocation as bytes, mutable.
    pub fn cuda_slice_mut(&mut self) -> Option<&mut CudaSlice<u8>> {
        match &mut self.inner {
            BufInner::Gpu { bytes, .. } => Some(bytes),
            BufInner::Sim(_) => None,
        }
    }
    /// `true` when the buffer is GPU memory (`false`: the simulator's).
    pub fn is_gpu(&self) -> bool {
        matches!(self.inner, BufInner::Gpu { .. })
    }
    /// The buffer's address: the device address on a GPU, the host address
    /// of the simulator's cells. For interop with other libraries (NCCL,
    /// driver copies between devices); a launch takes the buffer itself.
    pub fn address(&self) -> u64 {
        self.device_ptr()
    }
    /// The device address (the host address of the simulator's cells).
    pub(crate) fn device_ptr(&self) -> u64 {
        match &self.inner {
            BufInner::Gpu { bytes, .. } => {
                let (p, _sync) = cudarc::driver::DevicePtr::device_ptr(bytes, bytes.stream());
                p
            }
            BufInner::Sim(s) => s.as_ptr() as u64,
        }
    }
    /// The simulator's cells (null on a GPU).
    pub(crate) fn host_ptr(&self) -> *mut T {
        match &self.inner {
            BufInner::Gpu { .. } => std::ptr::null_mut(),
            BufInner::Sim(s) => UnsafeCell::raw_get(s.as_ptr()),
        }
    }
}

impl<T: ptxlab_device::mem::DeviceCopy> Buffer<T> {
    /// The simulator's kernel view of this buffer (a GPU buffer gives an
    /// empty view: it is never passed to a simulated kernel).
    pub(crate) fn sim_slice(&self) -> ptxlab_device::DeviceSlice<'_, T> {
        let len = if self.host_ptr().is_null() {
            0
        } else {
            self.len()
        };
        // SAFETY: the simulator's cells are live for the borrow and `len`
        // long (0 for a GPU buffer, whose null pointer is then never read);
        // kernels only read through a `DeviceSlice`.
        unsafe { ptxlab_device::DeviceSlice::from_raw_parts(self.host_ptr(), len) }
    }
    /// The simulator's writable kernel view of this buffer.
    pub(crate) fn sim_slice_mut(&mut self) -> ptxlab_device::DeviceSliceMut<'_, T> {
        let len = if self.host_ptr().is_null() {
            0
        } else {
            self.len()
        };
        // SAFETY: the buffer is borrowed mutably for the view's lifetime (the
        // launch), its cells are `len` long (0 on a GPU); simulated writes
        // are relaxed atomics into the cells.
        unsafe { ptxlab_device::DeviceSliceMut::from_raw_parts(self.host_ptr(), len) }
    }
}

/// Elements `start .. start + len` of a [`Buffer`], passed to a kernel's
/// `DeviceSlice<T>` parameter as if they were a buffer of their own
/// ([`Buffer::view`]): a kernel that works on a slab or a block of rows runs
/// on part of a larger allocation.
pub struct View<'a, T> {
    device_ptr: u64,
    host_ptr: *mut T,
    len: usize,
    gpu: bool,
    _buf: std::marker::PhantomData<&'a Buffer<T>>,
}

/// Elements `start .. start + len` of a [`Buffer`], for a kernel's
/// `DeviceSliceMut<T>` parameter ([`Buffer::view_mut`]).
pub struct ViewMut<'a, T> {
    device_ptr: u64,
    host_ptr: *mut T,
    len: usize,
    gpu: bool,
    _buf: std::marker::PhantomData<&'a mut Buffer<T>>,
}

impl<T> Clone for View<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for View<'_, T> {}

impl<T> std::fmt::Debug for View<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "View(len {})", self.len)
    }
}
impl<T> std::fmt::Debug for ViewMut<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ViewMut(len {})", self.len)
    }
}

fn check_range(len: usize, range: &std::ops::Range<usize>) -> crate::Result<()> {
    if range.start > range.end || range.end > len {
        return Err(crate::Error::input(
            "buffer view",
            format!(
                "elements {}..{} of a buffer of {len}; a view lies inside its buffer",
                range.start, range.end
            ),
        ));
    }
    Ok(())
}

impl<T> Buffer<T> {
    /// Elements `range` as a read-only kernel argument; a range outside the
    /// buffer is an error.
    pub fn view(&self, range: std::ops::Range<usize>) -> crate::Result<View<'_, T>> {
        check_range(self.len(), &range)?;
        let off = range.start;
        Ok(View {
            device_ptr: self.device_ptr() + (off * std::mem::size_of::<T>()) as u64,
            host_ptr: self.host_ptr().wrapping_add(off),
            len: range.end - range.start,
            gpu: self.is_gpu(),
            _buf: std::marker::PhantomData,
        })
    }
    /// Elements `range` as a writable kernel argument (the buffer stays
    /// borrowed mutably while the view lives); a range outside the buffer is
    /// an error.
    pub fn view_mut(&mut self, range: std::ops::Range<usize>) -> crate::Result<ViewMut<'_, T>> {
        check_range(self.len(), &range)?;
        let off = range.start;
        Ok(ViewMut {
            device_ptr: self.device_ptr() + (off * std::mem::size_of::<T>()) as u64,
            host_ptr: self.host_ptr().wrapping_add(off),
            len: range.end - range.start,
            gpu: self.is_gpu(),
            _buf: std::marker::PhantomData,
        })
    }
}

/// The accessors [`View`] and [`ViewMut`] share (their fields are the same).
macro_rules! view_accessors {
    () => {
        /// Elements.
        pub fn len(&self) -> usize {
            self.len
        }
        /// `true` when empty.
        pub fn is_empty(&self) -> bool {
            self.len == 0
        }
        pub(crate) fn device_ptr(&self) -> u64 {
            self.device_ptr
        }
        /// `true` when the view is of GPU memory.
        pub(crate) fn is_gpu(&self) -> bool {
            self.gpu
        }
        /// The first simulator cell (meaningless on a GPU).
        pub(crate) fn host_ptr(&self) -> *mut T {
            self.host_ptr
        }
    };
}

impl<'a, T: ptxlab_device::mem::DeviceCopy> View<'a, T> {
    view_accessors!();
    pub(crate) fn sim_slice(&self) -> ptxlab_device::DeviceSlice<'a, T> {
        let len = if self.host_ptr.is_null() { 0 } else { self.len };
        // SAFETY: the view lies inside a live simulator buffer borrowed for
        // 'a (checked when it was made), or is empty on a GPU.
        unsafe { ptxlab_device::DeviceSlice::from_raw_parts(self.host_ptr, len) }
    }
}

impl<'a, T: ptxlab_device::mem::DeviceCopy> ViewMut<'a, T> {
    view_accessors!();
    pub(crate) fn sim_slice_mut(self) -> ptxlab_device::DeviceSliceMut<'a, T> {
        let len = if self.host_ptr.is_null() { 0 } else { self.len };
        // SAFETY: the view lies inside a simulator buffer borrowed mutably
        // for 'a (checked when it was made), or is empty on a GPU.
        unsafe { ptxlab_device::DeviceSliceMut::from_raw_parts(self.host_ptr, len) }
    }
}

impl<T> Buffer<T> {
    /// A buffer over GPU memory that another library owns (a torch or CuPy
    /// tensor, reached through `__cuda_array_interface__` or DLPack), for
    /// launches on `dev` without a copy. Give it back with
    /// [`Buffer::release_borrowed`]: dropping it instead frees the owner's
    /// memory. The simulator has no foreign device memory: an error there.
    ///
    /// # Safety
    /// `ptr` is an allocation of `dev`'s CUDA context (the primary context
    /// of its device, which torch and CuPy share) holding at least
    /// `len * size_of::<T>()` bytes, aligned for `T`, that stays allocated
    /// until the buffer is released; while the buffer lives, the owner
    /// neither frees the memory nor touches it out of stream order with the
    /// launches made on it; and the buffer is released with
    /// [`Buffer::release_borrowed`], never dropped.
    pub unsafe fn borrow_device_ptr(
        dev: &crate::Device,
        ptr: u64,
        len: usize,
    ) -> crate::Result<Self> {
        let Some(gpu) = dev.as_gpu() else {
            return Err(crate::Error::input(
                "device pointer",
                "the simulator runs on host memory; a borrowed device allocation needs a GPU device",
            ));
        };
        if ptr == 0 || !ptr.is_multiple_of(std::mem::align_of::<T>() as u64) {
            return Err(crate::Error::input(
                "device pointer",
                format!(
                    "{ptr:#x}; a borrowed allocation must be non-null and aligned to {} bytes",
                    std::mem::align_of::<T>()
                ),
            ));
        }
        let n_bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
            crate::Error::input(
                "device pointer",
                format!("{len} elements overflow the address space"),
            )
        })?;
        // SAFETY: the caller guarantees that `ptr` is a live allocation of
        // this context of `len` elements of `T` (`n_bytes` bytes) that
        // outlives the buffer, and that the buffer is released (leaked),
        // never freed by its drop.
        let bytes = unsafe { gpu.stream().upgrade_device_ptr::<u8>(ptr, n_bytes) };
        Ok(Buffer {
            inner: BufInner::Gpu { bytes, len },
        })
    }

    /// Gives back a buffer made by [`Buffer::borrow_device_ptr`] without
    /// freeing its memory (after the work queued on it, as for any buffer's
    /// drop) and returns its address. Called on a buffer the runtime
    /// allocated, it leaks that allocation.
    pub fn release_borrowed(self) -> u64 {
        match self.inner {
            BufInner::Gpu { bytes, .. } => bytes.leak(),
            BufInner::Sim(s) => Box::leak(s).as_ptr() as u64,
        }
    }
}
