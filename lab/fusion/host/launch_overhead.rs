//! Launch overhead: a tiny kernel launched many times, plainly or from a
//! CUDA graph captured once ([`TinyGraph`]), with the check that every
//! launch ran.

use kernels_gpu::fusion as k;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::{Buffer, Device, LaunchConfig, Timing};

/// Launches the tiny kernel once (`x[i] += 1` for every `i`).
pub fn tiny(dev: &Device, x: &mut Buffer<f32>) -> Result<()> {
    if x.is_empty() || x.len() > k::TINY_THREADS as usize {
        return Err(Error::input(
            "tiny kernel buffer",
            format!("{} elements; allowed 1..={}", x.len(), k::TINY_THREADS),
        ));
    }
    launch!(
        dev,
        LaunchConfig::for_threads(x.len(), k::TINY_THREADS)?,
        fusion::fusion_tiny_f32(x)
    )
}

/// `n` plain launches of the tiny kernel.
pub fn plain(dev: &Device, x: &mut Buffer<f32>, n: usize) -> Result<()> {
    for _ in 0..n {
        tiny(dev, x)?;
    }
    Ok(())
}

/// `n` tiny launches captured once into a CUDA graph (on a stream of its
/// own: `launch!` goes to the legacy default stream, which cannot be captured).
pub struct TinyGraph {
    graph: ptxlab_common::runtime::Graph,
    /// Kernels in the graph.
    pub kernels: usize,
}

impl TinyGraph {
    /// Captures `n` launches of the tiny kernel on `x`. On the simulator:
    /// [`ptxlab_common::runtime::Error::Unsupported`] (graphs are a driver feature).
    pub fn capture(dev: &Device, x: &mut Buffer<f32>, n: usize) -> Result<Self> {
        let g = dev.as_gpu().ok_or_else(|| Error::Runtime(ptxlab_common::runtime::Error::Unsupported {
            what: "CUDA graph capture".into(),
            backend: "sim".into(),
            hint: "graphs need the CUDA driver: use --backend gpu, or time the plain launches (which the simulator runs)".into(),
        }))?;
        if n == 0 {
            return Err(Error::input("--kernels", "0 kernels; capture at least one"));
        }
        if x.is_empty() || x.len() > k::TINY_THREADS as usize {
            return Err(Error::input(
                "tiny kernel buffer",
                format!("{} elements; allowed 1..={}", x.len(), k::TINY_THREADS),
            ));
        }
        let cfg = LaunchConfig::for_threads(x.len(), x.len() as u32)?;
        let graph = ptxlab_common::runtime::Graph::capture(g, |cap| {
            for _ in 0..n {
                ptxlab_common::launch!(&mut *cap, cfg, fusion::fusion_tiny_f32(&mut *x))?;
            }
            Ok::<(), Error>(())
        })?;
        Ok(Self { graph, kernels: n })
    }

    /// Replays the graph once (asynchronously).
    pub fn replay(&self) -> Result<()> {
        Ok(self.graph.replay()?)
    }

    /// Waits for the graph's stream.
    pub fn synchronize(&self) -> Result<()> {
        Ok(self.graph.synchronize()?)
    }

    /// Times `reps` replays with events on the graph's stream (ms per replay).
    pub fn time(&self, warmup: usize, reps: usize) -> Result<Timing> {
        Ok(self.graph.time(warmup, reps)?)
    }
}

/// Most tiny kernels per launch-overhead measurement.
pub const MAX_KERNELS: usize = 100_000;

/// The tiny kernel counts in f32 (`x[i] += 1`), which is exact only up to
/// 2^24: `kernels x (reps + 2)` launches (warm-up included) must stay there,
/// or the check that every launch ran would fail on a correct run.
pub fn check_counts(kernels: usize, reps: usize) -> Result<()> {
    let total = kernels.checked_mul(reps.saturating_add(2));
    if total.is_none_or(|t| t > 1 << 24) {
        return Err(Error::input(
            "--kernels/--reps",
            format!(
                "{kernels} kernels x ({reps} reps + 2 warm-up) launches; at most 2^24 = 16777216 in \
                 all (each adds 1.0 to an f32 counter, exact only up to 2^24): use fewer"
            ),
        ));
    }
    Ok(())
}

/// Launch-overhead measurement: `(plain us/kernel, graph us/kernel)`,
/// checking that every launch ran.
pub fn launch_overhead(
    dev: &Device,
    kernels: usize,
    reps: usize,
) -> Result<(Timing, Option<Timing>)> {
    if kernels == 0 || kernels > MAX_KERNELS {
        return Err(Error::input(
            "--kernels",
            format!("{kernels} kernels; allowed 1..={MAX_KERNELS}"),
        ));
    }
    // The timers run at least one repetition; count what they run.
    let reps = reps.max(1);
    check_counts(kernels, reps)?;
    let mut x = dev.upload(&vec![0.0f32; k::TINY_THREADS as usize])?;
    let plain_t = dev.time(1, reps, |_| plain(dev, &mut x, kernels))?;
    let want = (kernels * (reps + 1)) as f32;
    if dev.download(&x)?.iter().any(|v| *v != want) {
        return Err(Error::Verification {
            what: "plain launches".into(),
            detail: format!("expected every element = {want}"),
        });
    }
    if dev.is_sim() {
        return Ok((plain_t, None));
    }
    dev.write(&mut x, &vec![0.0f32; k::TINY_THREADS as usize])?;
    let graph = TinyGraph::capture(dev, &mut x, kernels)?;
    let t = graph.time(2, reps)?;
    graph.synchronize()?;
    let want = (kernels * (reps + 2)) as f32;
    if dev.download(&x)?.iter().any(|v| *v != want) {
        return Err(Error::Verification {
            what: "graph replay".into(),
            detail: format!("expected every element = {want}"),
        });
    }
    Ok((plain_t, Some(t)))
}
