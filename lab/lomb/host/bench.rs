//! Benchmark rows: the CPU reference and the ladder at the material's size
//! and at 10^4 samples x 2^20 frequencies.

use super::check::check_with;
use super::cpu::{reference, reference_rayon};
use super::input::{material_freqs, material_samples, random_samples};
use super::ladder::{Rung, Shape};
use super::launch::{Bufs, Elem};
use super::phase::Phases;
use super::run::run_rung;
use super::{LARGE_SAMPLES, MATERIAL_FREQS, Options, WORKLOAD};
use ptxlab_common::bench_ctx::BenchCtx;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::{Row, Status};
use ptxlab_common::runtime::{Device, MathMode, Timing};

pub(super) fn size_label(n: usize, nf: usize) -> String {
    format!("{n} samples x 2^{:.0} freqs", (nf as f64).log2())
}

/// CPU rows (one thread timed on a subset of the frequencies and scaled;
/// rayon likewise); returns the one-thread estimate for the full size, ms.
fn cpu_rows(x: &[f64], y: &[f64], nf: usize, quick: bool, rows: &mut Vec<Row>) -> Result<f64> {
    let pairs = x.len() as f64 * nf as f64;
    let sub1 = ((if quick { 2e6 } else { 2e7 } / x.len() as f64) as usize).clamp(64, nf);
    let f1 = material_freqs(sub1);
    let t1 = Timing::host(0, if quick { 1 } else { 3 }, || {
        std::hint::black_box(reference(x, y, &f1, Options::default()).ok());
    });
    let scale1 = nf as f64 / sub1 as f64;
    let subr = (sub1 * 8).min(nf);
    let fr = material_freqs(subr);
    let tr = Timing::host(1, 3, || {
        std::hint::black_box(reference_rayon(x, y, &fr, Options::default()).ok());
    });
    let scaler = nf as f64 / subr as f64;
    let one = t1.median_ms * scale1;
    let size = size_label(x.len(), nf);
    for (name, t, s) in [
        ("CPU reference, 1 thread (f64, scaled)", &t1, scale1),
        ("CPU reference, rayon (f64, scaled)", &tr, scaler),
    ] {
        let mut r = Row::new(WORKLOAD, name, "cpu", &size, "f64");
        let ms = t.median_ms * s;
        r.timing = Some(Timing {
            median_ms: ms,
            min_ms: t.min_ms * s,
            max_ms: t.max_ms * s,
            reps: t.reps,
        });
        r.throughput = Some(pairs / (ms * 1e-3) / 1e9);
        r.unit = "Gpairs/s".into();
        r.speedup = Some(one / ms);
        rows.push(r);
    }
    Ok(one)
}

/// One ladder of the benchmark: the samples, the grid and how to run it.
pub(super) struct Ladder<'a> {
    /// Sample times.
    pub x: &'a [f64],
    /// Values.
    pub y: &'a [f64],
    /// The grid.
    pub freqs: &'a [f64],
    /// The size column.
    pub size: String,
    /// The one-thread CPU estimate for the speed-up column (ms).
    pub cpu1_ms: f64,
    /// Plain or `_long` kernels.
    pub phases: Phases,
    /// Appended to each rung's label.
    pub suffix: &'a str,
    /// The rungs.
    pub rungs: &'a [Rung],
}

/// The ladder for `T` at the material's grid of `nf` frequencies.
fn bench_ladder<T: Elem>(
    dev: &Device,
    ctx: &BenchCtx,
    x: &[f64],
    y: &[f64],
    nf: usize,
    cpu1_ms: f64,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let freqs = material_freqs(nf);
    let l = Ladder {
        x,
        y,
        freqs: &freqs,
        size: size_label(x.len(), nf),
        cpu1_ms,
        phases: Phases::Auto,
        suffix: "",
        rungs: &Rung::LADDER,
    };
    run_ladder::<T>(dev, ctx, &l, rows)
}

/// The rungs of `l` for `T` on a GPU: checked, then timed.
pub(super) fn run_ladder<T: Elem>(
    dev: &Device,
    ctx: &BenchCtx,
    l: &Ladder,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let g = dev
        .as_gpu()
        .ok_or_else(|| Error::input("lomb bench", "needs a GPU"))?;
    let arch = g.info().arch();
    let shape = Shape::material(dev);
    let (x, y, freqs, nf) = (l.x, l.y, l.freqs, l.freqs.len());
    let pairs = x.len() as f64 * nf as f64;
    let size = l.size.clone();
    // The check runs on every 16th frequency at the large size (an even grid too).
    let stride = if x.len() * nf > 200_000_000 { 16 } else { 1 };
    // First passes (module load from an empty cache) only for the main ladders.
    let first_pass = stride == 1 && l.suffix.is_empty();
    let check_freqs: Vec<f64> = freqs.iter().step_by(stride).copied().collect();
    let want = reference_rayon(x, y, &check_freqs, Options::default())?;
    let reps = if x.len() * nf > 200_000_000 {
        ctx.reps().min(10)
    } else {
        ctx.reps()
    };
    let mut bufs = Bufs::<T>::with_phases(dev, x, y, freqs, Options::default(), l.phases)?;
    for &rung in l.rungs {
        let shape = shape.for_rung(rung);
        let label = format!("{}{}", rung.label(), l.suffix);
        let mut row = Row::new(WORKLOAD, &label, "gpu", &size, T::NAME);
        let name = rung.kernel().entry::<T>(bufs.long);
        let fast = rung.module().math == MathMode::Fast;
        row.registers = g
            .num_regs(&ptxlab_common::modules::KERNELS, rung.module(), name)
            .ok()
            .map(|r| r as u32);
        let res = match rung.module().reg_cap {
            // The capped cubin's own report (none when the cap was not built).
            Some(cap) => ptxlab_common::modules::capped_resource(name, &arch, cap),
            None => ptxlab_common::modules::resource(name, &arch, fast),
        };
        if let Some(res) = res {
            row.registers = row.registers.or(Some(res.registers));
            row.spills = Some(res.spill_stores + res.spill_loads);
        }
        // The baseline launches the same kernel of the same module as the
        // cached rung, which is checked next; checking it here would only add
        // module loads.
        let check_rung = if rung == Rung::Baseline {
            Rung::Cached
        } else {
            rung
        };
        match check_with::<T>(
            dev,
            check_rung,
            x,
            y,
            &check_freqs,
            Options::default(),
            &want,
            shape,
            l.phases,
        ) {
            Ok(a) => row.rel_err = Some(a.err_over_peak),
            Err(e) => {
                row.status = Status::Failed(e.to_string());
                rows.push(row);
                continue;
            }
        }
        // First pass from an empty module cache (the cubin's load included),
        // at the material's size only (the load does not depend on the size).
        if first_pass {
            g.clear_cache();
        }
        bufs.poison(dev)?;
        let t0 = std::time::Instant::now();
        run_rung(dev, rung, &mut bufs, shape)?;
        dev.synchronize()?;
        // (At the large size the module is already loaded: no first-pass figure.)
        row.first_ms = first_pass.then(|| t0.elapsed().as_secs_f64() * 1e3);
        let (warm, n) = if rung == Rung::Baseline {
            (0, 2)
        } else {
            (2, reps)
        };
        let t = dev.time(warm, n, |_| run_rung(dev, rung, &mut bufs, shape))?;
        row.throughput = Some(pairs / (t.median_ms * 1e-3) / 1e9);
        row.unit = "Gpairs/s".into();
        row.speedup = l.cpu1_ms.is_finite().then(|| l.cpu1_ms / t.median_ms);
        if T::NAME == "f32"
            && matches!(
                rung,
                Rung::FastMath
                    | Rung::FastMathFit
                    | Rung::FastLean
                    | Rung::BoundsFast
                    | Rung::Rotate
                    | Rung::RotateFast
                    | Rung::Cheby
                    | Rung::ChebyTab
                    | Rung::ChebyTabPipe
                    | Rung::Taylor
            )
            && let Some(sfu) = ctx.ceilings.sfu_per_s
        {
            // SFU floor: 2 transcendental operations per (sample, frequency).
            let floor_ms = pairs * 2.0 / sfu * 1e3;
            row.pct_of_ceiling = Some(100.0 * floor_ms / t.median_ms);
        }
        row.timing = Some(t);
        rows.push(row);
    }
    Ok(())
}

/// Benchmark rows of the ladder: CPU reference rows; with a GPU the ladder
/// (f32 and f64) at the material's size and at 10^4 samples x 2^20
/// frequencies (quick: the material's size, f32 only). Also returns the CPU
/// reference's time at the material's size when the model rows should follow
/// (a GPU and not `--quick`).
pub fn bench_ladder_rows(ctx: &BenchCtx) -> Result<(Vec<Row>, Option<f64>)> {
    let mut rows = Vec::new();
    let (mx, my) = material_samples()?;
    let (lx, ly) = random_samples(LARGE_SAMPLES, 77);
    let cpu_material = cpu_rows(&mx, &my, MATERIAL_FREQS, ctx.quick, &mut rows)?;
    let Some(dev) = ctx.gpu() else {
        rows.push(ptxlab_common::bench_ctx::skipped_gpu(WORKLOAD, ctx));
        return Ok((rows, None));
    };
    bench_ladder::<f32>(dev, ctx, &mx, &my, MATERIAL_FREQS, cpu_material, &mut rows)?;
    if ctx.quick {
        return Ok((rows, None));
    }
    bench_ladder::<f64>(dev, ctx, &mx, &my, MATERIAL_FREQS, cpu_material, &mut rows)?;
    let cpu_large = cpu_rows(&lx, &ly, MATERIAL_FREQS, true, &mut rows)?;
    bench_ladder::<f32>(dev, ctx, &lx, &ly, MATERIAL_FREQS, cpu_large, &mut rows)?;
    bench_ladder::<f64>(dev, ctx, &lx, &ly, MATERIAL_FREQS, cpu_large, &mut rows)?;
    Ok((rows, Some(cpu_material)))
}
