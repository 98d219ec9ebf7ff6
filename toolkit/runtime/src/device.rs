//! [`Device`]: one API over two backends, a GPU ([`Gpu`]) or the CPU
//! simulator: buffers, copies, synchronisation and timing.

use crate::buffer::{BufInner, Buffer, View, ViewMut};
use crate::config::Limits;
use crate::element::{Element, Raw, raw, unraw};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::host_mem::host_memory;
use crate::stream::Stream;
use crate::timing::Timing;
use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut};
use ptxlab_device::sim::SimOptions;
use std::cell::UnsafeCell;
use std::sync::Arc;

/// The backend of a [`Device`].
pub enum DeviceKind {
    /// A real GPU.
    Gpu(Box<Gpu>),
    /// The CPU simulator.
    Sim,
}

/// A device to run kernels on: a GPU or the CPU simulator, behind one API.
pub struct Device {
    kind: DeviceKind,
    sim_options: SimOptions,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Device({})", self.name())
    }
}

impl Device {
    /// GPU `ordinal`.
    pub fn gpu(ordinal: usize) -> Result<Self> {
        Ok(Self {
            kind: DeviceKind::Gpu(Box::new(Gpu::new(ordinal)?)),
            sim_options: SimOptions::default(),
        })
    }
    /// The CPU simulator, with race detection unless it was turned off
    /// (`PTXLAB_SIM_RACECHECK=0`, `ptxlab --race-check off`: see
    /// [`SimOptions::default`]).
    pub fn sim() -> Self {
        Self::sim_with(SimOptions::default())
    }
    /// The CPU simulator with these options (for example race detection
    /// off: `SimOptions { race_check: false, ..SimOptions::default() }`).
    pub fn sim_with(options: SimOptions) -> Self {
        Self {
            kind: DeviceKind::Sim,
            sim_options: options,
        }
    }
    /// The simulator options of this device (unused on a GPU).
    pub fn sim_options(&self) -> SimOptions {
        self.sim_options
    }
    /// This device with launches going to `stream` (one of this GPU's
    /// streams; `None`, or the simulator: the device's own), for
    /// [`launch!`](crate::launch!): `launch!(dev.on_stream(Some(&s)), ...)`.
    pub fn on_stream<'a>(&'a self, stream: Option<&'a Stream>) -> OnStream<'a> {
        OnStream { dev: self, stream }
    }
    /// The backend.
    pub fn kind(&self) -> &DeviceKind {
        &self.kind
    }
    /// The GPU, if this is one.
    pub fn as_gpu(&self) -> Option<&Gpu> {
        match &self.kind {
            DeviceKind::Gpu(g) => Some(g),
            DeviceKind::Sim => None,
        }
    }
    /// `true` for the simulator.
    pub fn is_sim(&self) -> bool {
        matches!(self.kind, DeviceKind::Sim)
    }
    /// Name for reports.
    pub fn name(&self) -> String {
        match &self.kind {
            DeviceKind::Gpu(g) => g.info().name.clone(),
            DeviceKind::Sim => "CPU simulator".into(),
        }
    }
    /// Launch limits.
    pub fn limits(&self) -> Limits {
        match &self.kind {
            DeviceKind::Gpu(g) => g.info().limits,
            DeviceKind::Sim => Limits::SIM,
        }
    }

    fn check_alloc<T>(&self, len: usize, what: &str) -> Result<()> {
        let bytes = (len as u128) * std::mem::size_of::<T>() as u128;
        let (free, total) = match &self.kind {
            DeviceKind::Gpu(g) => g.mem_info()?,
            // The simulator's buffers are host memory.
            DeviceKind::Sim => match host_memory() {
                Some(m) => (m.available, m.total),
                None => (isize::MAX as u64, isize::MAX as u64),
            },
        };
        if bytes > free as u128 || bytes > isize::MAX as u128 {
            return Err(Error::OutOfMemory {
                what: what.to_string(),
                requested: bytes.min(u64::MAX as u128) as u64,
                free,
                total,
            });
        }
        Ok(())
    }

    /// Copies host data to a new device buffer.
    pub fn upload<T: Element>(&self, data: &[T]) -> Result<Buffer<T>> {
        self.check_alloc::<T>(data.len(), "an input buffer")?;
        Ok(Buffer {
            inner: match &self.kind {
                DeviceKind::Gpu(g) => {
                    let s = g.stream();
                    // SAFETY: the bytes are unset until the copy just below
                    // overwrites all of them, before anything reads them.
                    let mut bytes = unsafe { s.alloc::<u8>(std::mem::size_of_val(data)) }
                        .map_err(|e| Error::driver("cuMemAllocAsync", e))?;
                    s.memcpy_htod(raw(data), &mut typed_mut::<T>(&mut bytes, data.len())?)
                        .map_err(|e| Error::driver("cuMemcpyHtoD", e))?;
                    BufInner::Gpu {
                        bytes,
                        len: data.len(),
                    }
                }
                DeviceKind::Sim => {
                    BufInner::Sim(data.iter().map(|v| UnsafeCell::new(*v)).collect())
                }
            },
        })
    }

    /// A new buffer of `len` copies of `value` (use a poison value such as NaN
    /// for outputs, so an element the kernel failed to write shows up).
    /// On a GPU the fill is a device memset (no host copy of the buffer):
    /// elements of 1, 2 or 4 bytes in one call, 8-byte elements as two
    /// strided 4-byte fills (the low and the high word).
    pub fn alloc_filled<T: Element>(&self, len: usize, value: T) -> Result<Buffer<T>> {
        self.check_alloc::<T>(len, "an output buffer")?;
        match &self.kind {
            DeviceKind::Gpu(g) if len > 0 && matches!(std::mem::size_of::<T>(), 1 | 2 | 4 | 8) => {
                use cudarc::driver::DevicePtrMut;
                let s = g.stream();
                let size = std::mem::size_of::<T>();
                // SAFETY: the bytes are unset until the fills just below
                // overwrite all of them, before anything reads them.
                let mut bytes = unsafe { s.alloc::<u8>(len * size) }
                    .map_err(|e| Error::driver("cuMemAllocAsync", e))?;
                let mut word = [0u8; 8];
                // SAFETY: `T: Element` is a plain value type of `size` bytes
                // (at most 8 here), so its bytes can be read as `u8`s.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        (&value as *const T).cast::<u8>(),
                        word.as_mut_ptr(),
                        size,
                    )
                };
                let u32_at =
                    |i: usize| u32::from_ne_bytes([word[i], word[i + 1], word[i + 2], word[i + 3]]);
                {
                    let (ptr, _record) = bytes.device_ptr_mut(s);
                    let cu = s.cu_stream();
                    // SAFETY: `ptr` is the start of a live allocation of
                    // `len * size` bytes made above and borrowed exclusively
                    // here; each fill writes inside it: `len` elements of
                    // `size` bytes, or (8-byte elements) `len` rows of one
                    // 4-byte word at a pitch of 8 bytes, from byte 0 and 4.
                    let r = unsafe {
                        use cudarc::driver::sys;
                        match size {
                            1 => sys::cuMemsetD8Async(ptr, word[0], len, cu),
                            2 => sys::cuMemsetD16Async(
                                ptr,
                                u16::from_ne_bytes([word[0], word[1]]),
                                len,
                                cu,
                            ),
                            4 => sys::cuMemsetD32Async(ptr, u32_at(0), len, cu),
                            _ => match sys::cuMemsetD2D32Async(ptr, 8, u32_at(0), 1, len, cu) {
                                sys::CUresult::CUDA_SUCCESS => {
                                    sys::cuMemsetD2D32Async(ptr + 4, 8, u32_at(4), 1, len, cu)
                                }
                                e => e,
                            },
                        }
                        .result()
                    };
                    r.map_err(|e| Error::driver("cuMemsetAsync", e))?;
                }
                Ok(Buffer {
                    inner: BufInner::Gpu { bytes, len },
                })
            }
            DeviceKind::Gpu(_) => self.upload(&vec![value; len]),
            DeviceKind::Sim => Ok(Buffer {
                inner: BufInner::Sim((0..len).map(|_| UnsafeCell::new(value)).collect()),
            }),
        }
    }

    /// Overwrites a buffer with host data of the same length.
    pub fn write<T: Element>(&self, buf: &mut Buffer<T>, data: &[T]) -> Result<()> {
        if buf.len() != data.len() {
            return Err(Error::input(
                "write",
                format!("buffer has {} elements, data {}", buf.len(), data.len()),
            ));
        }
        match (&self.kind, &mut buf.inner) {
            (DeviceKind::Gpu(g), BufInner::Gpu { bytes, len }) => g
                .stream()
                .memcpy_htod(raw(data), &mut typed_mut::<T>(bytes, *len)?)
                .map_err(|e| Error::driver("cuMemcpyHtoD", e)),
            (DeviceKind::Sim, BufInner::Sim(s)) => {
                for (d, v) in s.iter_mut().zip(data) {
                    *d.get_mut() = *v;
                }
                Ok(())
            }
            _ => Err(Error::input(
                "buffer",
                "the buffer belongs to another backend",
            )),
        }
    }

    /// Copies a buffer back to the host (synchronises).
    pub fn download<T: Element>(&self, buf: &Buffer<T>) -> Result<Vec<T>> {
        match (&self.kind, &buf.inner) {
            (DeviceKind::Gpu(g), BufInner::Gpu { bytes, len }) => g
                .stream()
                .clone_dtoh(&typed::<T>(bytes, *len)?)
                .map(unraw)
                .map_err(|e| Error::driver("cuMemcpyDtoH", e)),
            (DeviceKind::Sim, BufInner::Sim(s)) => {
                let v: Vec<T> = s
                    .iter()
                    .map(|c| {
                        // SAFETY: no simulated launch is running (launches are
                        // synchronous), so nothing writes the cells while they are read.
                        unsafe { *c.get() }
                    })
                    .collect();
                if ptxlab_device::sim::recording() {
                    // SAFETY: `DeviceCopy` types have no padding and every
                    // byte of them is initialised; the slice covers `v`.
                    let bytes = unsafe {
                        std::slice::from_raw_parts(
                            v.as_ptr() as *const u8,
                            std::mem::size_of_val(&v[..]),
                        )
                    };
                    ptxlab_device::sim::record_download(bytes, std::mem::size_of::<T>());
                }
                Ok(v)
            }
            _ => Err(Error::input(
                "buffer",
                "the buffer belongs to another backend",
            )),
        }
    }

    /// Waits for queued work (no-op on the simulator, whose launches are synchronous).
    pub fn synchronize(&self) -> Result<()> {
        match &self.kind {
            DeviceKind::Gpu(g) => g.synchronize(),
            DeviceKind::Sim => Ok(()),
        }
    }

    /// Times `f`: device events on a GPU, the wall clock on the simulator.
    /// `f` may return any error type the runtime's [`Error`] converts into.
    pub fn time<E: From<Error>>(
        &self,
        warmup: usize,
        reps: usize,
        mut f: impl FnMut(usize) -> std::result::Result<(), E>,
    ) -> std::result::Result<Timing, E> {
        match &self.kind {
            DeviceKind::Gpu(g) => g.time(warmup, reps, f),
            DeviceKind::Sim => {
                let mut err = None;
                let t = Timing::host(warmup, reps, || {
                    if err.is_none()
                        && let Err(e) = f(0)
                    {
                        err = Some(e);
                    }
                });
                match err {
                    Some(e) => Err(e),
                    None => Ok(t),
                }
            }
        }
    }
}

/// A device and one of its streams: launches go to that stream instead of
/// the device's own ([`Device::on_stream`]); on the simulator, which has no
/// streams, they run as on the device.
#[derive(Debug, Clone, Copy)]
pub struct OnStream<'a> {
    pub(crate) dev: &'a Device,
    pub(crate) stream: Option<&'a Stream>,
}

/// The first `len` elements of a GPU allocation, typed for cudarc's copies.
fn typed<T: Element>(bytes: &CudaSlice<u8>, len: usize) -> Result<CudaView<'_, Raw<T>>> {
    // SAFETY: `Raw<T>` accepts every bit pattern (`Element`), and device
    // allocations are aligned to 256 bytes, more than any element needs;
    // `transmute` itself refuses a length past the allocation.
    unsafe { bytes.transmute::<Raw<T>>(len) }.ok_or_else(|| too_short::<T>(bytes.len(), len))
}

/// [`typed`], writable.
fn typed_mut<T: Element>(bytes: &mut CudaSlice<u8>, len: usize) -> Result<CudaViewMut<'_, Raw<T>>> {
    let n = bytes.len();
    // SAFETY: as in `typed`; the exclusive borrow of the bytes moves to the view.
    unsafe { bytes.transmute_mut::<Raw<T>>(len) }.ok_or_else(|| too_short::<T>(n, len))
}

fn too_short<T>(bytes: usize, len: usize) -> Error {
    Error::input(
        "buffer",
        format!(
            "{len} elements of {} bytes in an allocation of {bytes} bytes",
            std::mem::size_of::<T>()
        ),
    )
}

fn other_backend(what: &str) -> Error {
    Error::input(
        what,
        "the buffer belongs to another backend than the device it is copied on",
    )
}

impl OnStream<'_> {
    /// The stream that work of this target goes to on a GPU (its own, or
    /// the device's), with its context current on this thread.
    fn gpu_stream(&self) -> Result<Option<&Arc<CudaStream>>> {
        let s = match (self.dev.as_gpu(), self.stream) {
            (Some(_), Some(s)) => s.cuda(),
            (Some(g), None) => g.stream(),
            (None, _) => return Ok(None),
        };
        s.context()
            .bind_to_thread()
            .map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
        Ok(Some(s))
    }

    /// Copies `src` over `dst` (views of equal length, of two buffers of
    /// this device). On a GPU the copy is queued on the stream, after the
    /// work queued there before it; on the simulator it is done when this
    /// returns. As for a launch on a stream other than the device's own,
    /// that stream must be synchronised before either buffer is dropped.
    pub fn copy<T: Element>(&self, src: View<'_, T>, dst: ViewMut<'_, T>) -> Result<()> {
        if src.len() != dst.len() {
            return Err(Error::input(
                "copy",
                format!(
                    "{} elements into {}; a copy needs views of equal length",
                    src.len(),
                    dst.len()
                ),
            ));
        }
        match self.gpu_stream()? {
            Some(s) => {
                if !src.is_gpu() || !dst.is_gpu() {
                    return Err(other_backend("copy"));
                }
                // SAFETY: both views are bounds-checked runs of live device
                // buffers (borrowed for this call; the caller keeps them
                // alive until the stream passes the copy, see above), and
                // they do not overlap: `dst` borrows its buffer exclusively,
                // so `src` is of another buffer.
                unsafe {
                    cudarc::driver::result::memcpy_dtod_async(
                        dst.device_ptr(),
                        src.device_ptr(),
                        std::mem::size_of::<T>() * src.len(),
                        s.cu_stream(),
                    )
                }
                .map_err(|e| Error::driver("cuMemcpyDtoDAsync", e))
            }
            None => {
                if src.is_gpu() || dst.is_gpu() {
                    return Err(other_backend("copy"));
                }
                // SAFETY: both views are bounds-checked runs of live
                // simulator buffers (host cells), of two different buffers
                // (`dst` borrows its own exclusively); simulated launches are
                // synchronous, so no kernel touches the cells meanwhile, and
                // the runtime holds no reference to them.
                unsafe { std::ptr::copy_nonoverlapping(src.host_ptr(), dst.host_ptr(), src.len()) };
                Ok(())
            }
        }
    }

    /// Copies host data into `dst` (of the same length): on a GPU queued on
    /// the stream (the data is read before this returns), on the simulator
    /// done when it returns.
    pub fn write<T: Element>(&self, src: &[T], dst: ViewMut<'_, T>) -> Result<()> {
        if src.len() != dst.len() {
            return Err(Error::input(
                "write",
                format!("{} elements into a view of {}", src.len(), dst.len()),
            ));
        }
        match self.gpu_stream()? {
            Some(s) => {
                if !dst.is_gpu() {
                    return Err(other_backend("write"));
                }
                // SAFETY: `dst` is a bounds-checked run of a live device
                // buffer of `src.len()` elements; the source is pageable host
                // memory, which the driver has staged (read) by the time the
                // call returns, so `src` may go away after it.
                unsafe {
                    cudarc::driver::result::memcpy_htod_async(dst.device_ptr(), src, s.cu_stream())
                }
                .map_err(|e| Error::driver("cuMemcpyHtoDAsync", e))
            }
            None => {
                if dst.is_gpu() {
                    return Err(other_backend("write"));
                }
                // SAFETY: `dst` is a bounds-checked run of a live simulator
                // buffer, borrowed exclusively; `src` is host memory of the
                // same length and cannot overlap it (the cells are only
                // reachable through the buffer).
                unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst.host_ptr(), src.len()) };
                Ok(())
            }
        }
    }

    /// Copies `src` into host memory of the same length, after the work
    /// queued on the stream before it (on a GPU this waits for the stream).
    pub fn read<T: Element>(&self, src: View<'_, T>, dst: &mut [T]) -> Result<()> {
        if src.len() != dst.len() {
            return Err(Error::input(
                "read",
                format!("a view of {} elements into {}", src.len(), dst.len()),
            ));
        }
        match self.gpu_stream()? {
            Some(s) => {
                if !src.is_gpu() {
                    return Err(other_backend("read"));
                }
                // SAFETY: `src` is a bounds-checked run of a live device
                // buffer of `dst.len()` elements; `dst` is borrowed
                // exclusively until the stream is synchronised just below,
                // before anything else can touch it; every bit pattern is a
                // valid `T` (`Element`).
                unsafe {
                    cudarc::driver::result::memcpy_dtoh_async(dst, src.device_ptr(), s.cu_stream())
                }
                .map_err(|e| Error::driver("cuMemcpyDtoHAsync", e))?;
                s.synchronize()
                    .map_err(|e| Error::driver("cuStreamSynchronize", e))
            }
            None => {
                if src.is_gpu() {
                    return Err(other_backend("read"));
                }
                // SAFETY: `src` is a bounds-checked run of a live simulator
                // buffer; no simulated launch runs (they are synchronous); the
                // destination is host memory borrowed exclusively.
                unsafe {
                    std::ptr::copy_nonoverlapping(src.host_ptr(), dst.as_mut_ptr(), dst.len())
                };
                Ok(())
            }
        }
    }
}
