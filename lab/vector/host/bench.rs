//! The benchmark: the copy ceiling measured in the same run, the CPU
//! baselines, every rung checked then timed (rotating buffers where the data
//! fits in L2), and the module load times (JIT against cubin).

use super::{Element, Rung, add, check_prepared, cpu_rayon, cpu_serial, inputs, prepare};
use ptxlab_common::bench_ctx::{BenchCtx, skipped_gpu};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::{Row, Status};
use ptxlab_common::runtime::{Device, ModuleKey, Timing, device::DeviceKind};

/// Bytes moved by one vector add of `n` elements (2 reads, 1 write).
pub fn bytes<T>(n: usize) -> f64 {
    3.0 * n as f64 * std::mem::size_of::<T>() as f64
}

/// Measures the device-to-device copy bandwidth (read + write bytes per
/// second) with a copy of `bytes` bytes: the ceiling of every memory-bound row.
pub fn copy_bandwidth(dev: &Device, bytes: usize, reps: usize) -> Result<(Timing, f64)> {
    let g = dev.as_gpu().ok_or_else(|| {
        Error::Runtime(ptxlab_common::runtime::Error::Unsupported {
            what: "copy bandwidth".into(),
            backend: "sim".into(),
            hint: "run on a GPU".into(),
        })
    })?;
    let src = dev.alloc_filled::<u8>(bytes, 1)?;
    let mut dst = dev.alloc_filled::<u8>(bytes, 0)?;
    let (s, d) = (src.cuda_slice(), dst.cuda_slice_mut());
    let (Some(s), Some(d)) = (s, d) else {
        unreachable!("GPU buffers")
    };
    let t = g.time(3, reps, |_| g.copy_dtod(s, d))?;
    let gbs = 2.0 * bytes as f64 / (t.median_ms * 1e-3) / 1e9;
    Ok((t, gbs))
}

/// Benchmark options.
#[derive(Debug, Clone)]
pub struct Bench {
    /// Lengths to time.
    pub sizes: Vec<usize>,
    /// Timed repetitions per row.
    pub reps: usize,
    /// Untimed warm-up calls.
    pub warmup: usize,
    /// Time the CPU baselines at these lengths (they are slow).
    pub cpu: bool,
}

/// Times every rung at every size on `dev`, after checking each, and adds
/// the CPU baselines and the copy ceiling. Small sizes rotate over several
/// buffer sets so the timing is not an L2-cache figure.
pub fn bench<T: Element>(dev: &Device, opts: &Bench) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let backend = if dev.is_sim() { "sim" } else { "gpu" };
    for &n in &opts.sizes {
        let size = format!("2^{:.1} ({n})", (n as f64).log2());
        let cpu1 = if opts.cpu {
            let (a, b) = inputs::<T>(n, 1);
            let mut c = vec![T::ZERO; n];
            let t1 = Timing::host(1, 3, || cpu_serial(&a, &b, &mut c));
            let tr = Timing::host(1, 5, || cpu_rayon(&a, &b, &mut c));
            for (name, t) in [("CPU 1 thread", &t1), ("CPU rayon all cores", &tr)] {
                let mut r = Row::new("vector-add", name, "cpu", &size, T::NAME);
                r.throughput = Some(bytes::<T>(n) / (t.median_ms * 1e-3) / 1e9);
                r.unit = "GB/s".into();
                r.speedup = Some(t1.median_ms / t.median_ms);
                r.timing = Some(t.clone());
                rows.push(r);
            }
            Some(t1.median_ms)
        } else {
            None
        };
        let ceiling = match dev.kind() {
            DeviceKind::Gpu(_) => {
                let (t, gbs) = copy_bandwidth(dev, n * 2 * std::mem::size_of::<T>(), opts.reps)?;
                let mut r = Row::new(
                    "vector-add",
                    "cudaMemcpy DtoD (ceiling)",
                    "gpu",
                    &size,
                    T::NAME,
                );
                r.timing = Some(t);
                r.throughput = Some(gbs);
                r.unit = "GB/s".into();
                r.pct_of_ceiling = Some(100.0);
                rows.push(r);
                Some(gbs)
            }
            DeviceKind::Sim => None,
        };
        let l2 = dev
            .as_gpu()
            .map(|g| g.info().l2_bytes as f64)
            .unwrap_or(0.0);
        let sets = ((4.0 * l2) / bytes::<T>(n)).ceil().clamp(1.0, 16.0) as usize;
        // One set of inputs per length: the check of every rung reads it,
        // and it is the first of the rotated timing sets.
        let p = prepare::<T>(dev, n, 3)?;
        let mut more = Vec::new();
        for _ in 1..sets {
            more.push((dev.upload(&p.ha)?, dev.upload(&p.hb)?));
        }
        let mut outs = Vec::new();
        for _ in 0..sets {
            outs.push(dev.alloc_filled(n, T::ZERO)?);
        }
        for rung in Rung::ALL {
            let mut row = Row::new("vector-add", rung.label(), backend, &size, T::NAME);
            let kernel = rung.entry::<T>();
            if let Some(g) = dev.as_gpu()
                && let Some(res) = ptxlab_common::modules::resource(kernel, &g.info().arch(), false)
            {
                row.registers = Some(res.registers);
                row.spills = Some(res.spill_stores + res.spill_loads);
            }
            match check_prepared::<T>(dev, &p, rung) {
                Ok(c) if c.mismatches == 0 => row.rel_err = Some(c.rel_err),
                Ok(c) => {
                    row.status = Status::Failed(format!(
                        "{} of {n} elements differ from the CPU",
                        c.mismatches
                    ));
                    rows.push(row);
                    continue;
                }
                Err(e) => {
                    row.status = Status::Failed(e.to_string());
                    rows.push(row);
                    continue;
                }
            }
            let module = ModuleKey::default();
            let inputs_of = |s: usize| match s {
                0 => (&p.a, &p.b),
                _ => (&more[s - 1].0, &more[s - 1].1),
            };
            let t0 = std::time::Instant::now();
            {
                let (a, b) = inputs_of(0);
                add(dev, rung, module, a, b, &mut outs[0])?;
                dev.synchronize()?;
            }
            row.first_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
            let t = dev.time(opts.warmup, opts.reps, |i| {
                let (a, b) = inputs_of(i % sets);
                add(dev, rung, module, a, b, &mut outs[i % sets])
            })?;
            let gbs = bytes::<T>(n) / (t.median_ms * 1e-3) / 1e9;
            row.throughput = Some(gbs);
            row.unit = "GB/s".into();
            row.pct_of_ceiling = ceiling.map(|c| 100.0 * gbs / c);
            row.speedup = cpu1.map(|c| c / t.median_ms);
            row.timing = Some(t);
            rows.push(row);
        }
    }
    Ok(rows)
}

/// The benchmark of `ptxlab bench`: sizes 2^20..2^28 (f32) and 2^20 f64, or
/// a quick subset; CPU-only rows when there is no device.
pub fn bench_ctx(ctx: &BenchCtx) -> Result<Vec<Row>> {
    let quick = ctx.quick;
    let Some(dev) = ctx.dev else {
        let n = if quick { 1 << 20 } else { 1 << 24 };
        let (a, b) = inputs::<f32>(n, 1);
        let mut c = vec![0f32; n];
        let t1 = Timing::host(1, 3, || cpu_serial(&a, &b, &mut c));
        let tr = Timing::host(1, 5, || cpu_rayon(&a, &b, &mut c));
        let mut rows = vec![skipped_gpu("vector-add", ctx)];
        for (name, t) in [("CPU 1 thread", t1.clone()), ("CPU rayon all cores", tr)] {
            let mut r = Row::new("vector-add", name, "cpu", &format!("{n}"), "f32");
            r.throughput = Some(bytes::<f32>(n) / (t.median_ms * 1e-3) / 1e9);
            r.unit = "GB/s".into();
            r.speedup = Some(t1.median_ms / t.median_ms);
            r.timing = Some(t);
            rows.push(r);
        }
        return Ok(rows);
    };
    if dev.is_sim() {
        let opts = Bench {
            sizes: vec![4099],
            reps: 2,
            warmup: 0,
            cpu: true,
        };
        return bench::<f32>(dev, &opts);
    }
    let sizes: Vec<usize> = if quick {
        vec![1 << 20, 1 << 24]
    } else {
        vec![1 << 20, 1 << 24, (1 << 20) + 3, 1 << 28]
    };
    let opts = Bench {
        sizes,
        reps: ctx.reps(),
        warmup: 3,
        cpu: !quick,
    };
    let mut rows = bench::<f32>(dev, &opts)?;
    let opts64 = Bench {
        sizes: vec![1 << 20, 1 << 27],
        reps: ctx.reps(),
        warmup: 3,
        cpu: false,
    };
    rows.extend(bench::<f64>(dev, &opts64)?);
    rows.extend(module_loads(dev, false)?);
    Ok(rows)
}

/// Module load times of the module that holds the vector kernels (the
/// `vector` group): the cubin assembled ahead of time and, with `jit`, its
/// PTX (precise and fast math) through the driver's JIT (each loaded fresh,
/// five times; median). The benchmark passes `jit = false`: a default run
/// loads no module through the JIT, so its report's module loads show none;
/// the JIT rows are the JIT lesson on a small module, for a caller that
/// asks for them.
pub fn module_loads(dev: &Device, jit: bool) -> Result<Vec<Row>> {
    let Some(g) = dev.as_gpu() else {
        return Ok(Vec::new());
    };
    let mut rows = Vec::new();
    let loads = [
        ("module load: PTX, driver JIT", ModuleKey::PRECISE.ptx()),
        (
            "module load: cubin (ptxas ahead of time)",
            ModuleKey::PRECISE.cubin(),
        ),
        (
            "module load: fast-math PTX, driver JIT",
            ModuleKey::FAST.ptx(),
        ),
    ];
    for (label, key) in loads
        .into_iter()
        .filter(|(_, k)| jit || k.form != ptxlab_common::Form::Ptx)
    {
        let mut row = Row::new("vector-add", label, "gpu", "module `vector`", "");
        let mut samples = Vec::new();
        let mut failure = None;
        for _ in 0..5 {
            match g.load_uncached(
                &ptxlab_common::modules::KERNELS,
                key,
                <f32 as kernels_gpu::vector::vector_add::Built>::ENTRY,
            ) {
                Ok((_, ms)) => samples.push(ms),
                Err(e) => {
                    failure = Some(e.to_string());
                    break;
                }
            }
        }
        match failure {
            Some(e) => row.status = Status::Skipped(e.lines().next().unwrap_or("").to_string()),
            None => {
                row.first_ms = samples.first().copied();
                row.timing = Some(Timing::from_samples(samples));
            }
        }
        rows.push(row);
    }
    Ok(rows)
}
