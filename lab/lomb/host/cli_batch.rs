//! `ptxlab lomb-scargle --curves`: many curves on one grid in one launch,
//! written as one `(curves, freqs)` array, with the best periods per curve.

use super::batch::{Batch, batch_reference, run_batch, top_peaks};
use super::batch_io::read_batch;
use super::check::verify;
use super::cli::{Args, BatchJob, CheckMode, SIM_MAX_PAIRS, argmax, grid_of, sample_indices};
use super::launch::BatchBufs;
use super::launch::Elem;
use super::model::{General, reference_general};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::{Row, fmt_ms};
use rayon::prelude::*;
use std::path::Path;
use std::time::Instant;

/// Curves the sampled check looks at (spread over the batch).
pub const SAMPLE_CURVES: usize = 8;

/// The curves of the sampled check: [`SAMPLE_CURVES`] spread evenly.
pub fn sample_curves(nc: usize) -> Vec<usize> {
    let s = SAMPLE_CURVES.min(nc);
    let mut c: Vec<usize> = (0..s)
        .map(|k| if s == 1 { 0 } else { k * (nc - 1) / (s - 1) })
        .collect();
    c.dedup();
    c
}

/// The best periods (`2 pi / w` of the `k` highest peaks, highest first) of
/// every curve of `p` (`curves x nf`); NaN where a curve has fewer peaks.
pub fn best_periods<T: Elem>(p: &[T], nf: usize, freqs: &[f64], k: usize) -> Vec<f64> {
    p.par_chunks(nf)
        .flat_map_iter(|row| {
            let r: Vec<f64> = row.iter().map(|v| v.to_f64()).collect();
            let peaks = top_peaks(&r, k);
            (0..k).map(move |i| {
                peaks
                    .get(i)
                    .map_or(f64::NAN, |&j| std::f64::consts::TAU / freqs[j].abs())
            })
        })
        .collect()
}

/// Runs a checked `--curves` request in f32 or f64.
pub fn run_batch_job(args: &Args, job: BatchJob) -> Result<Vec<Row>> {
    let BatchJob {
        backend,
        path,
        g,
        check,
        f64,
        t0,
    } = job;
    if f64 {
        cli_batch::<f64>(args, backend, &path, g, check, t0)
    } else {
        cli_batch::<f32>(args, backend, &path, g, check, t0)
    }
}

/// `ptxlab lomb-scargle --curves PATH`: the row it measured (none on the
/// CPU).
pub fn cli_batch<T: Elem>(
    args: &Args,
    backend: ptxlab_common::Backend,
    path: &Path,
    g: General,
    check: CheckMode,
    t0: Instant,
) -> Result<Vec<Row>> {
    let freqs = grid_of(args)?.ok_or_else(|| {
        Error::input(
            "--curves",
            "many curves need their frequency grid: give --start/--step/--n or --freqs",
        )
    })?;
    let whole = read_batch(path)?;
    whole.validate()?;
    // Under a launcher the curves are split across the ranks, each rank
    // running its share on its own device; rank 0 gathers and reports.
    let mut job =
        ptxlab_common::distributed::join_from_env("the ranks of a batch split across processes")?;
    if let Some((_, rdv)) = &mut job {
        rdv.agree(&format!(
            "{} {nc_all} curves, {} samples, {} freqs, {} {}, checksum {:016x}",
            path.display(),
            whole.t.len(),
            freqs.len(),
            T::NAME,
            describe(g, whole.dy.is_some()),
            checksum(&whole, &freqs),
            nc_all = whole.curves(),
        ))?;
    }
    let lead = job.as_ref().is_none_or(|(env, _)| env.rank == 0);
    let say = |s: String| {
        if lead {
            println!("{s}");
        }
    };
    let (mine, batch) = match &job {
        Some((env, _)) => {
            let n = whole.curves();
            let r = env.rank * n / env.world..(env.rank + 1) * n / env.world;
            (r.clone(), sub_batch(&whole, r))
        }
        None => (0..whole.curves(), whole.clone()),
    };
    let (nc_all, nc, nf) = (whole.curves(), batch.curves(), freqs.len());
    let t_in = t0.elapsed().as_secs_f64() * 1e3;
    say(format!(
        "batch {}: {nc_all} curves, {} samples ({:.0} per curve), {nf} frequencies, {} {}{}",
        path.display(),
        whole.t.len(),
        whole.t.len() as f64 / nc_all as f64,
        T::NAME,
        describe(g, whole.dy.is_some()),
        match &job {
            Some((env, rdv)) => format!(
                "; {} ranks ({}, meeting at {}), rank 0 runs curves {}..{}",
                env.world,
                env.source,
                rdv.at(),
                mine.start,
                mine.end
            ),
            None => String::new(),
        }
    ));
    let dev = match (&job, backend) {
        (Some((env, _)), ptxlab_common::Backend::Gpu) => {
            let count = ptxlab_common::runtime::gpu::device_count()
                .unwrap_or(1)
                .max(1);
            Some(ptxlab_common::Error::open_gpu(
                env.local_rank.unwrap_or(env.rank) % count,
            )?)
        }
        _ => ptxlab_common::cli::open_device(backend)?,
    };
    let mut rows = Vec::new();
    let (p, run_ms): (Vec<T>, f64) = if nc == 0 {
        (Vec::new(), 0.0)
    } else {
        match &dev {
            None => {
                // CPU: the reference of every curve is the result.
                let t = Instant::now();
                let rows: Vec<Result<Vec<f64>>> = (0..nc)
                    .into_par_iter()
                    .map(|c| {
                        let (t, y, dy) = batch.curve(c);
                        reference_general(t, y, dy, &freqs, g)
                    })
                    .collect();
                let mut p = Vec::with_capacity(nc * nf);
                for r in rows {
                    p.extend(r?.into_iter().map(T::from_f64));
                }
                (p, t.elapsed().as_secs_f64() * 1e3)
            }
            Some(dev) => {
                if dev.is_sim() {
                    ptxlab_common::cli::check_sim_limit(
                        "--curves",
                        batch.t.len().saturating_mul(nf),
                        SIM_MAX_PAIRS,
                        "sample x frequency pairs",
                    )?;
                }
                let mut b = BatchBufs::<T>::new(dev, &batch, &freqs, g)?;
                let t = dev.time(0, 1, |_| run_batch(dev, &mut b))?;
                let r = if dev.is_sim() {
                    args.reps.min(3)
                } else {
                    args.reps
                };
                let tr = dev.time(1, r, |_| run_batch(dev, &mut b))?;
                let pairs = batch.t.len() as f64 * nf as f64;
                rows.push(ptxlab_common::cli::timed_row(
                    "lomb-scargle",
                    &format!("batch: one launch ({})", describe(g, batch.dy.is_some())),
                    if dev.is_sim() { "sim" } else { "gpu" },
                    &format!(
                        "{nc} curves x {:.0} samples x {nf} freqs",
                        batch.t.len() as f64 / nc as f64
                    ),
                    T::NAME,
                    &tr,
                    Some((pairs / (tr.median_ms * 1e-3) / 1e9, "Gpairs/s")),
                ));
                say(format!(
                    "  batch kernel{}: median {} ms (min {}, max {}, {} reps), {:.1} Gpairs/s",
                    if job.is_some() {
                        " (rank 0's curves)"
                    } else {
                        ""
                    },
                    fmt_ms(tr.median_ms),
                    fmt_ms(tr.min_ms),
                    fmt_ms(tr.max_ms),
                    tr.reps,
                    pairs / (tr.median_ms * 1e-3) / 1e9
                ));
                (dev.download(&b.out)?, t.median_ms)
            }
        }
    };
    if dev.is_some()
        && nc > 0
        && let Some(worst) = check_batch::<T>(&batch, &freqs, g, check, &p, lead)?
    {
        for r in &mut rows {
            r.rel_err = Some(worst);
        }
    }
    let t_top = Instant::now();
    let mut periods = best_periods(&p, nf, &freqs, args.top);
    let top_ms = t_top.elapsed().as_secs_f64() * 1e3;
    let mut p = p;
    if let Some((_, rdv)) = &mut job {
        // Every rank's share, in rank order (= curve order), on every rank.
        periods = gather_f64(rdv, &periods)?;
        if args.out.is_some() {
            let wide: Vec<f64> = p.iter().map(|v| v.to_f64()).collect();
            p = gather_f64(rdv, &wide)?
                .into_iter()
                .map(T::from_f64)
                .collect();
        }
        // A failed check or write on rank 0 must not leave the others
        // waiting: they are done once everything is gathered.
        if !lead {
            return Ok(rows);
        }
    }
    for c in 0..nc_all.min(4) {
        let shown: Vec<String> = periods[c * args.top..(c + 1) * args.top]
            .iter()
            .map(|v| format!("{v:.6}"))
            .collect();
        println!("  curve {c}: best period(s) {}", shown.join(", "));
    }
    if nc_all > 4 {
        println!("  ... ({} more curves)", nc_all - 4);
    }
    if let Some(out) = &args.out {
        ptxlab_common::npy::write_2d(out, nc_all, nf, &p)?;
        println!("wrote {} ({nc_all} x {nf} {})", out.display(), T::NAME);
    }
    if let Some(per) = &args.periods {
        ptxlab_common::npy::write_2d(per, nc_all, args.top, &periods)?;
        println!(
            "wrote {} ({nc_all} x {} float64 periods)",
            per.display(),
            args.top
        );
    }
    println!(
        "time to the written result: {} ms (inputs read in {} ms; {} {} ms; best periods {} ms)",
        fmt_ms(t0.elapsed().as_secs_f64() * 1e3),
        fmt_ms(t_in),
        match &dev {
            Some(d) => format!("batch kernel on {}", d.name()),
            None => "CPU reference".into(),
        },
        fmt_ms(run_ms),
        fmt_ms(top_ms)
    );
    Ok(rows)
}

/// Curves `r` of `b`, as a batch of their own.
fn sub_batch(b: &Batch, r: std::ops::Range<usize>) -> Batch {
    let (lo, hi) = (b.offsets[r.start], b.offsets[r.end]);
    Batch {
        t: b.t[lo..hi].to_vec(),
        y: b.y[lo..hi].to_vec(),
        dy: b.dy.as_ref().map(|d| d[lo..hi].to_vec()),
        offsets: b.offsets[r.start..=r.end].iter().map(|o| o - lo).collect(),
    }
}

/// The checksum of the batch and the grid: what the ranks compare.
fn checksum(b: &Batch, freqs: &[f64]) -> u64 {
    let values =
        b.t.iter()
            .chain(&b.y)
            .chain(b.dy.iter().flatten())
            .chain(freqs);
    ptxlab_common::distributed::checksum(
        values
            .map(|v| v.to_bits())
            .chain(b.offsets.iter().map(|&o| o as u64)),
    )
}

/// Every rank's `mine`, concatenated in rank order.
fn gather_f64(rdv: &mut ptxlab_common::distributed::Rendezvous, mine: &[f64]) -> Result<Vec<f64>> {
    let bytes: Vec<u8> = mine.iter().flat_map(|v| v.to_le_bytes()).collect();
    let all = rdv.all_gather(&bytes)?;
    Ok(all
        .iter()
        .flat_map(|b| {
            b.chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        })
        .collect())
}

/// The model in words.
fn describe(g: General, dy: bool) -> String {
    format!(
        "fit_mean={} center_data={} normalization={} dy={}",
        g.fit_mean,
        g.center_data,
        g.normalization.name(),
        if dy { "given" } else { "none" }
    )
}

/// The batch's result against the f64 reference: [`SAMPLE_CURVES`] curves
/// at the sampled frequencies (and each one's peak), every curve at every
/// frequency with `full`. The largest |err|/peak, `None` with `--check
/// none`.
fn check_batch<T: Elem>(
    batch: &Batch,
    freqs: &[f64],
    g: General,
    check: CheckMode,
    p: &[T],
    say: bool,
) -> Result<Option<f64>> {
    let (nc, nf) = (batch.curves(), freqs.len());
    let curves: Vec<usize> = match check {
        CheckMode::None => return Ok(None),
        CheckMode::Sample => sample_curves(nc),
        CheckMode::Full => (0..nc).collect(),
    };
    let worst = curves
        .par_iter()
        .map(|&c| -> Result<f64> {
            let row: Vec<f64> = p[c * nf..(c + 1) * nf].iter().map(|v| v.to_f64()).collect();
            let idx: Vec<usize> = match check {
                CheckMode::Full => (0..nf).collect(),
                _ => sample_indices(nf, argmax(&row)),
            };
            let want = batch_reference(batch, freqs, g, c, &idx)?;
            let got: Vec<f64> = idx.iter().map(|&i| row[i]).collect();
            let a = verify::<T>(&got, &want, || {
                format!("lomb-scargle batch {} curve {c} of {nc}", T::NAME)
            })?;
            Ok(a.err_over_peak)
        })
        .collect::<Result<Vec<f64>>>()?
        .into_iter()
        .fold(0.0, f64::max);
    if !say {
        return Ok(Some(worst));
    }
    println!(
        "PASS lomb-scargle batch {} (check {}: {} curves): max |err|/peak {worst:.2e}",
        T::NAME,
        if check == CheckMode::Full {
            "full"
        } else {
            "sample"
        },
        curves.len()
    );
    Ok(Some(worst))
}
