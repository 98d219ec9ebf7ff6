//! [`Device`]: one API over two backends, a GPU ([`Gpu`]) or the CPU
//! simulator: buffers, copies, synchronisation and timing.

use crate::buffer::{BufInner, Buffer};
use crate::config::Limits;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::host_mem::host_memory;
use crate::timing::Timing;
use cudarc::driver::DeviceRepr;
use ptxlab_device::mem::DeviceCopy;
use ptxlab_device::sim::SimOptions;
use std::cell::UnsafeCell;

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
    pub fn on_stream<'a>(
        &'a self,
        stream: Option<&'a std::sync::Arc<cudarc::driver::CudaStream>>,
    ) -> OnStream<'a> {
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
    pub fn upload<T: DeviceCopy + DeviceRepr>(&self, data: &[T]) -> Result<Buffer<T>> {
        self.check_alloc::<T>(data.len(), "an input buffer")?;
        Ok(Buffer {
            inner: match &self.kind {
                DeviceKind::Gpu(g) => BufInner::Gpu(
                    g.stream()
                        .clone_htod(data)
                        .map_err(|e| Error::driver("cuMemcpyHtoD", e))?,
                ),
                DeviceKind::Sim => {
                    BufInner::Sim(data.iter().map(|v| UnsafeCell::new(*v)).collect())
                }
            },
        })
    }

    /// A new buffer of `len` copies of `value` (use a poison value such as NaN
    /// for outputs, so an element the kernel failed to write shows up).
    pub fn alloc_filled<T: DeviceCopy + DeviceRepr>(
        &self,
        len: usize,
        value: T,
    ) -> Result<Buffer<T>> {
        self.check_alloc::<T>(len, "an output buffer")?;
        match &self.kind {
            DeviceKind::Gpu(_) => self.upload(&vec![value; len]),
            DeviceKind::Sim => Ok(Buffer {
                inner: BufInner::Sim((0..len).map(|_| UnsafeCell::new(value)).collect()),
            }),
        }
    }

    /// Overwrites a buffer with host data of the same length.
    pub fn write<T: DeviceCopy + DeviceRepr>(&self, buf: &mut Buffer<T>, data: &[T]) -> Result<()> {
        if buf.len() != data.len() {
            return Err(Error::input(
                "write",
                format!("buffer has {} elements, data {}", buf.len(), data.len()),
            ));
        }
        match (&self.kind, &mut buf.inner) {
            (DeviceKind::Gpu(g), BufInner::Gpu(s)) => g
                .stream()
                .memcpy_htod(data, s)
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
    pub fn download<T: DeviceCopy + DeviceRepr>(&self, buf: &Buffer<T>) -> Result<Vec<T>> {
        match (&self.kind, &buf.inner) {
            (DeviceKind::Gpu(g), BufInner::Gpu(s)) => g
                .stream()
                .clone_dtoh(s)
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
    pub(crate) stream: Option<&'a std::sync::Arc<cudarc::driver::CudaStream>>,
}
