//! The benchmark rows: decoding at the shapes (8:1 and 4:1
//! grouped heads, 4k to 128k cached tokens, equal and mixed lengths), each
//! checked first at an odd shape against the full f64 reference, then at
//! the benchmark shape (outputs poisoned, sampled rows against f64: the
//! rows and measures `peers/attention_decode.py` uses for torch), then
//! timed with device events. Throughput is in GB/s: the bytes a step must
//! move ([`DecodeShape::bytes`]) over the median time.

use super::check::{bound, run_checked};
use super::launch::{DecodeInputs, entry, rows_per_block};
use super::problem::{DecodeShape, generate, reference, sample_rows};
use ptxlab_common::bench_ctx::BenchCtx;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::{Row, Status};
use ptxlab_common::runtime::Device;

/// Workload name in reports.
pub const NAME: &str = "attention-decode";
/// Variant name of the Rust rows.
pub const VARIANT: &str = "split-KV paged decode (mma.sync, cp.async)";

/// A benchmark shape: `(batch, heads, kv_heads, d, kv_lens)`, one query
/// row per sequence, pages of 16 tokens.
pub type BenchShape = (usize, usize, usize, usize, Vec<usize>);

/// The benchmark shapes (quick: one small one). `peers/attention_decode.py`
/// repeats them.
pub fn bench_shapes(quick: bool) -> Vec<BenchShape> {
    if quick {
        return vec![(4, 32, 8, 128, vec![4096; 4])];
    }
    vec![
        (8, 32, 8, 128, vec![4096; 8]),
        (8, 32, 8, 128, vec![32768; 8]),
        (8, 32, 8, 128, vec![131072; 8]),
        (64, 32, 8, 128, vec![4096; 64]),
        (32, 32, 4, 128, vec![16384; 32]),
        (16, 32, 8, 128, (1..=16).map(|i| 8192 * i).collect()),
        (16, 32, 8, 64, vec![8192; 16]),
        (8, 32, 4, 256, vec![16384; 8]),
    ]
}

/// Tokens per page of the benchmark shapes (vLLM's default).
pub const BENCH_PAGE: usize = 16;

/// A failure's row status: skipped when this GPU cannot run the kernel,
/// failed otherwise.
fn status_of(e: Error) -> Status {
    match e {
        Error::Runtime(ptxlab_common::runtime::Error::Unsupported { .. }) => {
            Status::Skipped(e.to_string().replace('\n', " "))
        }
        e => Status::Failed(e.to_string()),
    }
}

/// Timed repetitions for a call that took `ms` once: about 2 s per row.
fn reps_for(ms: f64, max: usize) -> usize {
    ((2000.0 / ms.max(1e-3)) as usize).clamp(3, max.max(3))
}

/// The decoding rows on `ctx`'s GPU (one "skipped" row without one).
pub fn bench(ctx: &BenchCtx) -> Result<Vec<Row>> {
    let Some(dev) = ctx.gpu() else {
        return Ok(vec![ptxlab_common::bench_ctx::skipped_gpu(NAME, ctx)]);
    };
    let mut rows = Vec::new();
    for (b, h, hkv, d, lens) in bench_shapes(ctx.quick) {
        let shape = DecodeShape::generated(b, h, hkv, 1, d, BENCH_PAGE, lens, None)?;
        rows.push(bench_shape(ctx, dev, &shape)?);
    }
    Ok(rows)
}

/// The odd shape checked before a row at `shape`: 3 sequences of 1, 333
/// and 1000 tokens, `shape`'s grouping, head dimension and page size, one
/// new token each, splits of 128 keys.
fn odd_shape(shape: &DecodeShape) -> Result<DecodeShape> {
    let g = shape.group();
    DecodeShape::generated(
        3,
        2 * g,
        2,
        1,
        shape.d,
        shape.page_size,
        vec![1, 333, 1000],
        None,
    )
}

/// One row: the odd-shape check, the checked run at `shape`, the timing.
pub fn bench_shape(ctx: &BenchCtx, dev: &Device, shape: &DecodeShape) -> Result<Row> {
    let mut row = Row::new(NAME, VARIANT, "gpu", &shape.label(), "bf16");
    let arch = dev.as_gpu().map(|g| g.info().arch()).unwrap_or_default();
    if let Some(res) = entry(shape.d, rows_per_block(shape))
        .and_then(|k| ptxlab_common::modules::resource(k, &arch, false))
    {
        row.registers = Some(res.registers);
        row.spills = Some(res.spill_stores + res.spill_loads);
    }
    let odd = odd_shape(shape)?;
    if let Err(e) = super::check::check_decode(dev, &odd, 11, Some(128)) {
        row.status = status_of(e);
        return Ok(row);
    }
    let x = generate(shape, 0);
    let refr = reference(shape, &x, sample_rows(shape));
    let dx = DecodeInputs::upload(dev, shape, &x)?;
    drop(x);
    let t0 = std::time::Instant::now();
    let (mut plan, e, _, _) = match run_checked(dev, shape, &dx, &refr, None) {
        Ok(r) => r,
        Err(e) => {
            row.status = status_of(e);
            return Ok(row);
        }
    };
    row.first_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
    row.rel_err = Some(e.rel);
    row.note = format!(
        "max {:.1e} (bound {:.1e}); {} keys x {} splits",
        e.max,
        2.0 * bound(),
        plan.split_keys(),
        plan.splits()
    );
    let mut out = dev.alloc_filled(shape.q_elems(), 0u16)?;
    let mut lse = dev.alloc_filled(shape.out_rows(), 0f32)?;
    let first = row.first_ms.unwrap_or(1.0);
    match dev.time(2, reps_for(first, ctx.reps().max(50)), |_| {
        plan.run(dev, &dx, &mut out, &mut lse)
    }) {
        Ok(t) => {
            row.throughput = Some(shape.bytes() / (t.median_ms * 1e-3) / 1e9);
            row.unit = "GB/s".into();
            row.timing = Some(t);
        }
        Err(e) => row.status = Status::Failed(e.to_string()),
    }
    Ok(row)
}
