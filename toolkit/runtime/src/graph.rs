//! CUDA graphs: a sequence of launches captured once on a stream of its own
//! and replayed with one driver call, so the GPU front end receives many
//! launches at once instead of one per call (the per-kernel cost of each is
//! measured in `docs/book/src/workloads/fusion.md`).
//!
//! ```ignore
//! let graph = Graph::capture(gpu, |cap| {
//!     for _ in 0..1000 {
//!         launch!(&mut *cap, &KERNELS, cfg, my_kernels::tiny(&x, &mut y))?;
//!     }
//!     Ok(())
//! })?;
//! graph.replay()?;
//! graph.synchronize()?;
//! ```

use crate::config::{LaunchConfig, check_launch};
use crate::error::{Error, Result};
use crate::gpu::{Gpu, check_params, cu_launch, opt_in_shared};
use crate::module::Kernels;
use crate::param::Param;
use crate::timing::Timing;
use cudarc::driver::{CudaGraph, CudaStream, DriverError, sys};
use std::sync::Arc;

/// Records launches into a graph (see [`Graph::capture`]).
pub struct Capture<'g> {
    gpu: &'g Gpu,
    stream: Arc<CudaStream>,
    launches: usize,
    failed: Option<DriverError>,
}

impl std::fmt::Debug for Capture<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Capture({} launches)", self.launches)
    }
}

impl Capture<'_> {
    /// Records a launch of kernel `name` of `kernels`, checked as a direct
    /// launch is (the capture branch of [`launch!`](crate::launch!)). The
    /// parameters' buffers must outlive every replay of the graph.
    pub(crate) fn record(
        &mut self,
        kernels: &Kernels,
        name: &str,
        cfg: &LaunchConfig,
        params: &[Param],
    ) -> Result<()> {
        if self.failed.is_some() {
            return Ok(());
        }
        let (f, entry) = self.gpu.entry(kernels, cfg.module, name)?;
        check_params(entry, params)?;
        check_launch(name, cfg, &self.gpu.info().limits)?;
        // As for a direct launch: more than 48 KiB of dynamic shared memory
        // needs the function's opt-in first (outside the capture: an
        // attribute is not a stream operation).
        opt_in_shared(&f, cfg)?;
        if let Some(cluster) = cfg.cluster {
            // SAFETY: as below; `f` and the capture stream belong to this
            // GPU's context.
            match unsafe {
                crate::driver::launch_cluster(
                    self.gpu.context(),
                    f.cu_function(),
                    self.stream.cu_stream(),
                    cfg,
                    cluster,
                    params,
                )
            } {
                Ok(()) => self.launches += 1,
                Err(e) => self.failed = Some(e),
            }
            return Ok(());
        }
        let (mut b, lc) = cu_launch(&self.stream, &f, cfg, params);
        // SAFETY: the parameters were checked against the entry's PTX
        // signature above; the buffers they point to are the caller's, who
        // keeps them alive while the graph can be replayed (documented).
        match unsafe { b.launch(lc) } {
            Ok(_) => self.launches += 1,
            Err(e) => self.failed = Some(e),
        }
        Ok(())
    }
}

/// A captured CUDA graph, ready to replay.
pub struct Graph {
    graph: CudaGraph,
    stream: Arc<CudaStream>,
    /// Launches in the graph.
    pub launches: usize,
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Graph({} launches)", self.launches)
    }
}

impl Graph {
    /// Captures the launches `record` makes, on a new stream, into a graph
    /// (uploaded to the device, so the first replay is as fast as the rest).
    /// `record` may return any error type the runtime's [`Error`] converts
    /// into.
    pub fn capture<E: From<Error>>(
        gpu: &Gpu,
        record: impl FnOnce(&mut Capture) -> std::result::Result<(), E>,
    ) -> std::result::Result<Self, E> {
        gpu.synchronize()?;
        let stream = gpu
            .context()
            .new_stream()
            .map_err(|e| Error::driver("cuStreamCreate", e))?;
        stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(|e| Error::driver("cuStreamBeginCapture", e))?;
        let mut cap = Capture {
            gpu,
            stream: stream.clone(),
            launches: 0,
            failed: None,
        };
        let recorded = record(&mut cap);
        let (launches, failed) = (cap.launches, cap.failed.take());
        let graph = stream
            .end_capture(sys::CUgraphInstantiate_flags(0))
            .map_err(|e| Error::driver("cuStreamEndCapture", e))?;
        recorded?;
        if let Some(e) = failed {
            return Err(Error::driver("cuLaunchKernel (capture)", e).into());
        }
        let graph = graph.ok_or_else(|| Error::Unsupported {
            what: "an empty CUDA graph".into(),
            backend: "gpu".into(),
            hint: "the capture recorded nothing".into(),
        })?;
        graph
            .upload()
            .map_err(|e| Error::driver("cuGraphUpload", e))?;
        Ok(Self {
            graph,
            stream,
            launches,
        })
    }

    /// Replays the graph once (asynchronously).
    pub fn replay(&self) -> Result<()> {
        self.graph
            .launch()
            .map_err(|e| Error::driver("cuGraphLaunch", e))
    }

    /// Waits for the graph's stream.
    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|e| Error::driver("cuStreamSynchronize", e))
    }

    /// Times `reps` replays with events on the graph's stream (ms per
    /// replay), after `warmup` untimed ones.
    pub fn time(&self, warmup: usize, reps: usize) -> Result<Timing> {
        for _ in 0..warmup {
            self.replay()?;
        }
        let ctx = self.stream.context();
        let mut ms = Vec::new();
        for _ in 0..reps.max(1) {
            let ev = || {
                ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(|e| Error::driver("cuEventCreate", e))
            };
            let (a, b) = (ev()?, ev()?);
            a.record(&self.stream)
                .map_err(|e| Error::driver("cuEventRecord", e))?;
            self.replay()?;
            b.record(&self.stream)
                .map_err(|e| Error::driver("cuEventRecord", e))?;
            b.synchronize()
                .map_err(|e| Error::driver("cuEventSynchronize", e))?;
            ms.push(
                a.elapsed_ms(&b)
                    .map_err(|e| Error::driver("cuEventElapsedTime", e))? as f64,
            );
        }
        Ok(Timing::from_samples(ms))
    }
}
