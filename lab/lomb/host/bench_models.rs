//! Benchmark rows for real light curves: the split-phase kernels' cost at
//! the material's size, a long span on every rung, the floating-mean model,
//! and batches of curves.

use super::batch::{Batch, batch_reference, run_batch, survey_batch};
use super::bench::{Ladder, run_ladder, size_label};
use super::check::check_general;
use super::check::verify;
use super::general::run_general;
use super::input::{material_freqs, material_samples};
use super::ladder::{Rung, Shape};
use super::launch::{BatchBufs, Elem, GenBufs};
use super::model::{General, Normalization, reference_general};
use super::phase::Phases;
use super::{MATERIAL_FREQS, WORKLOAD};
use ptxlab_common::bench_ctx::BenchCtx;
use ptxlab_common::error::Result;
use ptxlab_common::report::{Row, Status};
use ptxlab_common::runtime::{Device, Timing};
use rayon::prelude::*;

/// Curves of the batch benchmark.
pub const BATCH_CURVES: usize = 10_000;
/// Samples per curve of the batch benchmark: ragged, 250 to 350 (300 on
/// average; the shared-times batch has 300).
pub const BATCH_SAMPLES: (usize, usize) = (250, 350);
/// Time span of the batch benchmark's curves (days, say).
pub const BATCH_SPAN: f64 = 1000.0;
/// Frequencies of the batch benchmark: `linspace(0.01, 10, 10^4)` rad per
/// time unit, a step of 1e-3 (six samples per peak over the span).
pub const BATCH_FREQS: usize = 10_000;
/// Samples of the long-span case (`t` in `[0, 5000]`, `w` up to 50).
pub const LONG_SAMPLES: usize = 300;

/// The long-span case of the benchmark: 300 samples over `[0, 5000]`
/// (sorted, uniform), `y = sin(7.3 t)` plus uniform noise in `[-1, 1)`,
/// 2^16 frequencies `linspace(0.01, 50)`: phases up to 1.25e5 rad from the
/// centre.
pub fn long_case() -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut r = ptxlab_common::rng::SplitMix64(31);
    let mut x: Vec<f64> = (0..LONG_SAMPLES).map(|_| r.uniform(0.0, 5000.0)).collect();
    x.sort_by(f64::total_cmp);
    let y = x
        .iter()
        .map(|t| (7.3 * t).sin() + r.uniform(-1.0, 1.0))
        .collect();
    let f = super::input::linspace(0.01, 50.0, 1 << 16);
    (x, y, f)
}

/// The rows: split-phase rungs at the material's size (f32), the long span
/// (f32, f64), the floating-mean model at the material's size (f32, f64),
/// and the batches (f32, f64; f32 on shared times).
pub fn bench_models(
    dev: &Device,
    ctx: &BenchCtx,
    cpu_material: f64,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let (mx, my) = material_samples()?;
    let freqs = material_freqs(MATERIAL_FREQS);
    // What the split phases cost where they are not needed: the plain rows
    // above, the same rungs forced onto the `_long` kernels here.
    let split_rungs = [
        Rung::Cached,
        Rung::FastMath,
        Rung::FastMathFit,
        Rung::FastLean,
        Rung::Bounds,
        Rung::BoundsFast,
        Rung::Shared,
        Rung::Rotate,
        Rung::RotateFast,
        Rung::Cheby,
        Rung::ChebyTab,
        Rung::ChebyTabPipe,
        Rung::Taylor,
    ];
    let forced = Ladder {
        x: &mx,
        y: &my,
        freqs: &freqs,
        size: size_label(mx.len(), MATERIAL_FREQS),
        cpu1_ms: cpu_material,
        phases: Phases::Long,
        suffix: " [split phases]",
        rungs: &split_rungs,
    };
    run_ladder::<f32>(dev, ctx, &forced, rows)?;
    // A long span on every rung (the kernels the span needs).
    let (lx, ly, lf) = long_case();
    let long = Ladder {
        x: &lx,
        y: &ly,
        freqs: &lf,
        size: format!(
            "{} samples over t in [0, 5000] x 2^16 freqs to 50",
            lx.len()
        ),
        cpu1_ms: f64::NAN,
        phases: Phases::Auto,
        suffix: "",
        rungs: &Rung::LADDER,
    };
    run_ladder::<f32>(dev, ctx, &long, rows)?;
    run_ladder::<f64>(dev, ctx, &long, rows)?;
    general_rows::<f32>(dev, ctx, &mx, &my, &freqs, rows)?;
    general_rows::<f64>(dev, ctx, &mx, &my, &freqs, rows)?;
    let ragged = survey_batch(
        BATCH_CURVES,
        BATCH_SAMPLES.0,
        BATCH_SAMPLES.1,
        BATCH_SPAN,
        false,
        1,
    );
    let shared = survey_batch(BATCH_CURVES, 300, 300, BATCH_SPAN, true, 2);
    let bf = material_freqs(BATCH_FREQS);
    let g = General::default();
    batch_cpu_row(&ragged, &bf, g, rows)?;
    batch_rows::<f32>(dev, ctx, &ragged, &bf, g, BATCH_VARIANT, "ragged", rows)?;
    batch_rows::<f64>(dev, ctx, &ragged, &bf, g, BATCH_VARIANT, "ragged", rows)?;
    batch_rows::<f32>(
        dev,
        ctx,
        &shared,
        &bf,
        g,
        BATCH_VARIANT,
        "shared times",
        rows,
    )?;
    // Like for like with the CuPy peer: the same curves without dy, SciPy's
    // fixed-mean model on raw values, its unnormalized (psd) scale.
    let classic = Batch { dy: None, ..ragged };
    let scipy = General {
        fit_mean: false,
        center_data: false,
        normalization: Normalization::Psd,
    };
    let variant = "batch: one launch, three-term recurrence, SciPy's definition (no dy, fixed mean, psd) like the CuPy row";
    batch_rows::<f32>(dev, ctx, &classic, &bf, scipy, variant, "ragged", rows)?;
    Ok(())
}

/// The floating-mean model (astropy's defaults) at the material's size on
/// the rungs that have it.
fn general_rows<T: Elem>(
    dev: &Device,
    ctx: &BenchCtx,
    x: &[f64],
    y: &[f64],
    freqs: &[f64],
    rows: &mut Vec<Row>,
) -> Result<()> {
    let g = General::default();
    let shape = Shape::material(dev);
    let size = size_label(x.len(), freqs.len());
    let check_freqs: Vec<f64> = freqs.iter().step_by(16).copied().collect();
    let want = reference_general(x, y, None, &check_freqs, g)?;
    let pairs = x.len() as f64 * freqs.len() as f64;
    let mut b = GenBufs::<T>::new(dev, x, y, None, freqs, g)?;
    for rung in [Rung::Cached, Rung::FastMathFit, Rung::Taylor] {
        let mut row = Row::new(
            WORKLOAD,
            &format!("{} [floating mean, astropy's defaults]", rung.label()),
            "gpu",
            &size,
            T::NAME,
        );
        match check_general::<T>(dev, rung, x, y, None, &check_freqs, g, &want, shape) {
            Ok(a) => row.rel_err = Some(a.err_over_peak),
            Err(e) => {
                row.status = Status::Failed(e.to_string());
                rows.push(row);
                continue;
            }
        }
        let t = dev.time(2, ctx.reps(), |_| run_general(dev, rung, &mut b, shape))?;
        row.throughput = Some(pairs / (t.median_ms * 1e-3) / 1e9);
        row.unit = "Gpairs/s".into();
        row.timing = Some(t);
        rows.push(row);
    }
    Ok(())
}

/// The size column of a batch.
fn batch_size(b: &Batch, nf: usize, what: &str) -> String {
    format!(
        "{} curves ({what}) x {:.0} samples x 10^{:.0} freqs",
        b.curves(),
        b.t.len() as f64 / b.curves() as f64,
        (nf as f64).log10()
    )
}

/// The CPU reference on a batch: every core over curves, timed on 64
/// curves and scaled to the batch.
fn batch_cpu_row(b: &Batch, freqs: &[f64], g: General, rows: &mut Vec<Row>) -> Result<()> {
    let sub = 64.min(b.curves());
    let t = Timing::host(0, 1, || {
        let r: Vec<_> = (0..sub)
            .into_par_iter()
            .map(|c| {
                let (t, y, dy) = b.curve(c);
                reference_general(t, y, dy, freqs, g).ok()
            })
            .collect();
        std::hint::black_box(r);
    });
    let s = b.curves() as f64 / sub as f64;
    let mut r = Row::new(
        WORKLOAD,
        &format!("CPU reference, rayon over curves (f64, scaled from {sub} curves)"),
        "cpu",
        &batch_size(b, freqs.len(), "ragged"),
        "f64",
    );
    let ms = t.median_ms * s;
    r.timing = Some(Timing {
        median_ms: ms,
        min_ms: ms,
        max_ms: ms,
        reps: 1,
    });
    r.throughput = Some(b.t.len() as f64 * freqs.len() as f64 / (ms * 1e-3) / 1e9);
    r.unit = "Gpairs/s".into();
    rows.push(r);
    Ok(())
}

/// The variant of the batch rows (astropy's defaults with `dy`).
const BATCH_VARIANT: &str =
    "batch: one launch, three-term recurrence over runs of frequencies, floating mean";

/// One batch on the GPU: checked on 8 curves spread over the batch (256
/// frequencies each, and the peak), then timed; the row's first pass is the
/// whole path from the host arrays to the periodograms on the host
/// (preparation, upload, run, download).
#[allow(clippy::too_many_arguments)]
fn batch_rows<T: Elem>(
    dev: &Device,
    ctx: &BenchCtx,
    batch: &Batch,
    freqs: &[f64],
    g: General,
    variant: &str,
    what: &str,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let nf = freqs.len();
    let mut row = Row::new(
        WORKLOAD,
        variant,
        "gpu",
        &batch_size(batch, nf, what),
        T::NAME,
    );
    let t0 = std::time::Instant::now();
    let mut b = BatchBufs::<T>::new(dev, batch, freqs, g)?;
    run_batch(dev, &mut b)?;
    let p = dev.download(&b.out)?;
    row.first_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
    let mut worst = 0.0f64;
    for c in super::cli_batch::sample_curves(batch.curves()) {
        let r: Vec<f64> = p[c * nf..(c + 1) * nf].iter().map(|v| v.to_f64()).collect();
        let idx = super::cli::sample_indices(nf, super::cli::argmax(&r));
        let want = batch_reference(batch, freqs, g, c, &idx)?;
        let got: Vec<f64> = idx.iter().map(|&i| r[i]).collect();
        match verify::<T>(&got, &want, || {
            format!("lomb-scargle batch {} curve {c}", T::NAME)
        }) {
            Ok(a) => worst = worst.max(a.err_over_peak),
            Err(e) => {
                row.status = Status::Failed(e.to_string());
                rows.push(row);
                return Ok(());
            }
        }
    }
    row.rel_err = Some(worst);
    let t = dev.time(1, ctx.reps().min(10), |_| run_batch(dev, &mut b))?;
    row.throughput = Some(batch.t.len() as f64 * nf as f64 / (t.median_ms * 1e-3) / 1e9);
    row.unit = "Gpairs/s".into();
    row.timing = Some(t);
    rows.push(row);
    Ok(())
}
