//! [`Stream`] and [`Event`]: a GPU's queues of work and the marks that order
//! them, for code that runs work on several streams of one device (a
//! launch goes to a stream with [`Device::on_stream`](crate::Device::on_stream)).

use crate::error::{Error, Result};
use cudarc::driver::{CudaEvent, CudaStream, sys};
use std::sync::Arc;

/// Where a new stream's work stands against other streams' when the GPU
/// has both ready ([`Gpu::new_stream`](crate::gpu::Gpu::new_stream)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// The device's highest stream priority: its blocks are scheduled first.
    High,
    /// The device's lowest (the default of a stream).
    Low,
}

/// A stream of one GPU: work queued on it runs in order; work on different
/// streams may overlap unless [`Event`]s order it. Cloning gives another
/// handle to the same stream.
#[derive(Clone)]
pub struct Stream {
    inner: Arc<CudaStream>,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Stream(gpu {})", self.ordinal())
    }
}

impl Stream {
    pub(crate) fn from_cuda(inner: Arc<CudaStream>) -> Self {
        Self { inner }
    }
    pub(crate) fn cuda(&self) -> &Arc<CudaStream> {
        &self.inner
    }
    /// The driver's handle of the stream, for calls into other libraries
    /// (NCCL) that queue work on it.
    pub(crate) fn raw(&self) -> sys::CUstream {
        self.inner.cu_stream()
    }
    /// Ordinal of the GPU the stream belongs to.
    pub fn ordinal(&self) -> usize {
        self.inner.context().ordinal()
    }
    /// Makes the stream's context current on this thread (raw driver and
    /// NCCL calls act on the current context; one thread may drive several
    /// GPUs).
    pub(crate) fn bind(&self) -> Result<()> {
        self.inner
            .context()
            .bind_to_thread()
            .map_err(|e| Error::driver("cuCtxSetCurrent", e))
    }
    /// Waits for everything queued on the stream; reports asynchronous
    /// kernel errors.
    pub fn synchronize(&self) -> Result<()> {
        self.inner
            .synchronize()
            .map_err(|e| Error::driver("cuStreamSynchronize", e))
    }
    /// A new event (without timing) recorded at the current end of the
    /// stream's queue: what [`Stream::wait`] on another stream waits for.
    pub fn record_event(&self) -> Result<Event> {
        self.inner
            .record_event(None)
            .map(Event::from_cuda)
            .map_err(|e| Error::driver("cuEventRecord", e))
    }
    /// Makes work queued on this stream after this call wait until `event`
    /// has happened (the host does not wait).
    pub fn wait(&self, event: &Event) -> Result<()> {
        self.inner
            .wait(&event.inner)
            .map_err(|e| Error::driver("cuStreamWaitEvent", e))
    }
}

/// A mark in a stream's work ([`Event::record`]) that other streams wait
/// for ([`Stream::wait`]), or that times the work between two marks.
pub struct Event {
    inner: CudaEvent,
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Event")
    }
}

impl Event {
    pub(crate) fn from_cuda(inner: CudaEvent) -> Self {
        Self { inner }
    }
    /// Marks the current end of `stream`'s queue (a later record moves the
    /// mark); the stream must belong to the event's GPU.
    pub fn record(&self, stream: &Stream) -> Result<()> {
        self.inner
            .record(&stream.inner)
            .map_err(|e| Error::driver("cuEventRecord", e))
    }
    /// Waits on the host until the work before the mark is done.
    pub fn synchronize(&self) -> Result<()> {
        self.inner
            .synchronize()
            .map_err(|e| Error::driver("cuEventSynchronize", e))
    }
    /// Milliseconds between this mark and `later` (both recorded, both
    /// made with timing; see [`Gpu::new_event`](crate::gpu::Gpu::new_event)).
    pub fn elapsed_ms(&self, later: &Event) -> Result<f64> {
        self.inner
            .elapsed_ms(&later.inner)
            .map(f64::from)
            .map_err(|e| Error::driver("cuEventElapsedTime", e))
    }
}
