//! `ptxlab attention-decode`: one decoding step over a paged cache on a
//! GPU or the simulator (checked against the f64 reference before it is
//! timed), or the f64 reference alone on the CPU.

use super::bench::{NAME, VARIANT};
use super::check::{bound, run_checked};
use super::launch::DecodeInputs;
use super::problem::{
    DecodeShape, HostInputs, Reference, all_rows, generate, reference, sample_rows,
};
use ptxlab_common::Backend;
use ptxlab_common::cli::timed_row;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::report::{Row, fmt_ms};
use std::path::PathBuf;

/// The cached lengths (`--kv-lens`): a comma-separated list, or an int32
/// `.npy` file of shape (B,).
#[derive(Debug, Clone, PartialEq)]
pub enum KvLens {
    /// One length per sequence (or one for all).
    List(Vec<usize>),
    /// An int32 `.npy` of shape (B,).
    File(PathBuf),
}

fn parse_kv_lens(s: &str) -> std::result::Result<KvLens, String> {
    if s.ends_with(".npy") {
        return Ok(KvLens::File(PathBuf::from(s)));
    }
    s.split(',')
        .map(ptxlab_common::cli::parse_whole::<usize>)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map(KvLens::List)
        .map_err(|e| format!("{e} (a list like 4096,77,133, or a lens.npy file)"))
}

/// `ptxlab attention-decode` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Queries: float32 .npy (B, q_len, H, D). With --k-cache, --v-cache,
    /// --block-table and --kv-lens FILE.npy; replaces the size flags.
    #[arg(long, value_name = "Q.npy")]
    pub query: Option<PathBuf>,
    /// Key cache: float32 .npy (num_pages, page_size, H_kv, D).
    #[arg(long, value_name = "K.npy")]
    pub k_cache: Option<PathBuf>,
    /// Value cache: float32 .npy of the key cache's shape.
    #[arg(long, value_name = "V.npy")]
    pub v_cache: Option<PathBuf>,
    /// Block table: int32 .npy (B, max_pages); row b lists sequence b's
    /// pages in order (entries past its last page are not read).
    #[arg(long, value_name = "TABLE.npy")]
    pub block_table: Option<PathBuf>,
    /// Cached tokens per sequence (the new ones included): a list
    /// (4096,77,133; one value for all), or an int32 .npy (B,) with the
    /// file inputs [default: random in q_len..=--max-kv-len].
    #[arg(long, value_parser = parse_kv_lens, allow_negative_numbers = true)]
    pub kv_lens: Option<KvLens>,
    /// Longest random length when --kv-lens is not given [default: 4096].
    #[arg(long, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub max_kv_len: Option<usize>,
    /// Sequences of random inputs [default: 4].
    #[arg(long, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub batch: Option<usize>,
    /// Query heads of random inputs [default: 32].
    #[arg(long, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub heads: Option<usize>,
    /// K/V heads of random inputs [default: 8]; must divide --heads.
    #[arg(long, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub kv_heads: Option<usize>,
    /// New query rows per sequence, the last q_len cached tokens (query t
    /// sees keys j <= kv_len - q_len + t) [default: 1].
    #[arg(long, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub q_len: Option<usize>,
    /// Head dimension of random inputs: 64, 128 or 256 [default: 128].
    #[arg(long, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub dim: Option<usize>,
    /// Tokens per page of random inputs: a power of two up to 4096
    /// [default: 16].
    #[arg(long, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub page_size: Option<usize>,
    /// Keys per split (a multiple of 64) [default: chosen from the SM count
    /// and the lengths].
    #[arg(long, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub split_keys: Option<usize>,
    /// gpu, sim or cpu (the f64 reference alone).
    #[arg(long, value_enum, default_value_t = Backend::Gpu)]
    pub backend: Backend,
    /// Scale of the scores [default: 1/sqrt(D)].
    #[arg(long, allow_negative_numbers = true)]
    pub scale: Option<f64>,
    /// Write the output (float32, (B, q_len, H, D)).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write the log-sum-exp per output row (float32, (B, q_len, H)).
    #[arg(long)]
    pub lse: Option<PathBuf>,
    /// Seed of the random inputs (values and lengths).
    #[arg(long, default_value_t = ptxlab_common::cli::DEFAULT_SEED, value_parser = ptxlab_common::cli::parse_whole::<u64>, allow_negative_numbers = true)]
    pub seed: u64,
    /// Timed repetitions (1..=10000).
    #[arg(long, default_value_t = ptxlab_common::cli::DEFAULT_REPS, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
    /// Print the measured rows as JSON on stdout, and nothing else there.
    #[arg(long)]
    pub json: bool,
}

/// Most multiply-adds of the reference on every row (`--backend cpu`, and
/// the full check of a run); larger runs are checked on sampled rows.
pub const FULL_CHECK_WORK: usize = 1 << 30;
/// Most cached tokens times query heads on the simulator.
pub const SIM_MAX_WORK: usize = 1 << 20;

/// Random lengths of `seed`: uniform in `lo..=hi` (a 64-bit LCG, so the
/// lengths do not depend on the value hash).
fn random_lens(seed: u64, n: usize, lo: usize, hi: usize) -> Vec<usize> {
    let mut x = seed ^ 0x9e37_79b9_7f4a_7c15;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            lo + ((x >> 33) as usize) % (hi - lo + 1)
        })
        .collect()
}

/// The shape and inputs: from the files, or generated.
fn inputs(args: &Args) -> Result<(DecodeShape, HostInputs)> {
    let files = [&args.query, &args.k_cache, &args.v_cache, &args.block_table];
    if files.iter().any(|f| f.is_some()) {
        return file_inputs(args);
    }
    let q_len = args.q_len.unwrap_or(1);
    let batch = args.batch.unwrap_or(4);
    let lens = match &args.kv_lens {
        Some(KvLens::File(p)) => {
            return Err(Error::input(
                "--kv-lens",
                format!(
                    "{} is a file; a lengths file goes with --query, --k-cache, --v-cache and \
                     --block-table (give a list like 4096,77 for random inputs)",
                    p.display()
                ),
            ));
        }
        Some(KvLens::List(l)) if l.len() == 1 => vec![l[0]; batch],
        Some(KvLens::List(l)) => l.clone(),
        None => {
            let hi = args.max_kv_len.unwrap_or(4096);
            if hi < q_len.max(1) {
                return Err(Error::input(
                    "--max-kv-len",
                    format!("{hi}; at least --q-len ({q_len}) and 1"),
                ));
            }
            random_lens(args.seed, batch, q_len.max(1), hi)
        }
    };
    let shape = DecodeShape::generated(
        batch,
        args.heads.unwrap_or(32),
        args.kv_heads.unwrap_or(8),
        q_len,
        args.dim.unwrap_or(128),
        args.page_size.unwrap_or(16),
        lens,
        args.scale,
    )?;
    ptxlab_common::cli::check_host_arrays("shape", shape.cache_elems(), 2, 3)?;
    let x = generate(&shape, args.seed);
    Ok((shape, x))
}

fn txt(s: &[usize]) -> String {
    format!(
        "({})",
        s.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The file inputs: every one of the five files, shapes that agree.
fn file_inputs(args: &Args) -> Result<(DecodeShape, HostInputs)> {
    let (Some(qp), Some(kp), Some(vp), Some(tp), Some(KvLens::File(lp))) = (
        &args.query,
        &args.k_cache,
        &args.v_cache,
        &args.block_table,
        &args.kv_lens,
    ) else {
        return Err(Error::input(
            "--query/--k-cache/--v-cache/--block-table/--kv-lens",
            "give all five files (--kv-lens as an int32 .npy of shape (B,)), or none (random \
             inputs from --batch --heads --kv-heads --q-len --dim --page-size)",
        ));
    };
    if let Some((flag, _)) = [
        ("--batch", args.batch),
        ("--heads", args.heads),
        ("--kv-heads", args.kv_heads),
        ("--q-len", args.q_len),
        ("--dim", args.dim),
        ("--page-size", args.page_size),
        ("--max-kv-len", args.max_kv_len),
    ]
    .iter()
    .find(|(_, v)| v.is_some())
    {
        return Err(Error::input(
            *flag,
            "the shape comes from the files; leave out --batch, --heads, --kv-heads, --q-len, \
             --dim, --page-size and --max-kv-len",
        ));
    }
    let (qs, q) = ptxlab_common::npy::read_nd::<f32>(qp, "a float32 array (B, q_len, H, D)", 4)?;
    let (ks, k) =
        ptxlab_common::npy::read_nd::<f32>(kp, "a float32 array (pages, page, H_kv, D)", 4)?;
    let (vs, v) =
        ptxlab_common::npy::read_nd::<f32>(vp, "a float32 array (pages, page, H_kv, D)", 4)?;
    let (tr, tc, table) = ptxlab_common::npy::read_2d::<i32>(tp, "an int32 array (B, max_pages)")?;
    let lens = ptxlab_common::npy::read_1d::<i32>(lp, "an int32 array (B,)")?;
    if ks != vs {
        return Err(Error::input(
            "--k-cache/--v-cache",
            format!(
                "K is {} and V is {}; the caches must have the same shape",
                txt(&ks),
                txt(&vs)
            ),
        ));
    }
    if qs[3] != ks[3] || qs[0] != tr || lens.len() != qs[0] {
        return Err(Error::input(
            "--query/--k-cache/--block-table/--kv-lens",
            format!(
                "Q is {}, the caches {}, the block table ({tr}, {tc}) and the lengths ({}); Q \
                 and the caches must agree on D (last dimension), and Q, the block table and \
                 the lengths on B (first)",
                txt(&qs),
                txt(&ks),
                lens.len()
            ),
        ));
    }
    if let Some(i) = lens.iter().position(|&l| l < 0) {
        return Err(Error::input(
            "--kv-lens",
            format!("sequence {i} has length {}; lengths are counts", lens[i]),
        ));
    }
    let kv: Vec<usize> = lens.iter().map(|&l| l as usize).collect();
    let shape = DecodeShape::new(
        qs[0], qs[2], ks[2], qs[1], qs[3], ks[1], ks[0], tc, kv, args.scale,
    )?;
    let round = |what: &str, x: &[f32]| {
        super::super::cpu::round_checked(super::super::types::Precision::Bf16, what, x)
    };
    let x = HostInputs {
        q: round("Q", &q)?,
        k: round("K cache", &k)?,
        v: round("V cache", &v)?,
        table,
    };
    super::problem::check_inputs(&shape, &x)?;
    Ok((shape, x))
}

/// `ptxlab attention-decode`: the rows it measured.
pub fn cli(args: &Args) -> Result<Vec<Row>> {
    ptxlab_common::cli::check_reps(args.reps)?;
    let (shape, x) = inputs(args)?;
    super::problem::check_inputs(&shape, &x)?;
    println!(
        "attention-decode {} bf16, scale {:.6}, {:.3} GB to move",
        shape.label(),
        shape.scale,
        shape.bytes() / 1e9
    );
    let dims = [shape.batch, shape.q_len, shape.heads, shape.d];
    let w = shape.work();
    if args.backend == Backend::Cpu {
        if w > FULL_CHECK_WORK * 16 {
            return Err(Error::input(
                "shape",
                format!(
                    "{w} multiply-adds for the f64 reference; at most {} with --backend cpu: \
                     use a smaller problem",
                    FULL_CHECK_WORK * 16
                ),
            ));
        }
        let t = std::time::Instant::now();
        let r = reference(&shape, &x, all_rows(&shape));
        let ms = t.elapsed().as_secs_f64() * 1e3;
        println!("CPU f64 reference: {} ms", fmt_ms(ms));
        write(args, &dims, &r.o, &r.lse)?;
        let t = ptxlab_common::runtime::Timing {
            median_ms: ms,
            min_ms: ms,
            max_ms: ms,
            reps: 1,
        };
        return Ok(vec![timed_row(
            NAME,
            "CPU f64 reference",
            "cpu",
            &shape.label(),
            "f64",
            &t,
            Some((shape.bytes() / (ms * 1e-3) / 1e9, "GB/s")),
        )]);
    }
    let dev = ptxlab_common::cli::open_device(args.backend)?.expect("gpu and sim have a device");
    let tokens: usize = shape.kv_lens.iter().sum();
    if dev.is_sim() {
        ptxlab_common::cli::check_sim_limit(
            "--kv-lens x --heads",
            tokens.saturating_mul(shape.heads),
            SIM_MAX_WORK,
            "cached tokens x query heads",
        )?;
    }
    let (rows, full) = if w <= FULL_CHECK_WORK {
        (all_rows(&shape), true)
    } else {
        (sample_rows(&shape), false)
    };
    let refr: Reference = reference(&shape, &x, rows);
    let dx = DecodeInputs::upload(&dev, &shape, &x)?;
    drop(x);
    let (mut plan, e, o, l) = run_checked(&dev, &shape, &dx, &refr, args.split_keys)?;
    let reps = if dev.is_sim() { 1 } else { args.reps };
    let mut out = dev.alloc_filled(shape.q_elems(), 0u16)?;
    let mut lse = dev.alloc_filled(shape.out_rows(), 0f32)?;
    let t = dev.time(1, reps, |_| plan.run(&dev, &dx, &mut out, &mut lse))?;
    let gbs = shape.bytes() / (t.median_ms * 1e-3) / 1e9;
    println!(
        "PASS {VARIANT} on {}: rel err {:.2e} (bound {:.1e}, {}), max {:.2e}, lse {:.1e}; {} keys \
         per split, {} splits; median {} ms ({}-{}), {:.1} GB/s",
        dev.name(),
        e.rel,
        bound(),
        if full { "every row" } else { "sampled rows" },
        e.max,
        e.lse,
        plan.split_keys(),
        plan.splits(),
        fmt_ms(t.median_ms),
        fmt_ms(t.min_ms),
        fmt_ms(t.max_ms),
        gbs
    );
    let mut r = timed_row(
        NAME,
        VARIANT,
        if dev.is_sim() { "sim" } else { "gpu" },
        &shape.label(),
        "bf16",
        &t,
        Some((gbs, "GB/s")),
    );
    r.rel_err = Some(e.rel);
    let o: Vec<f64> = o
        .iter()
        .map(|b| super::super::types::Precision::Bf16.value(*b) as f64)
        .collect();
    let l: Vec<f64> = l.iter().map(|v| *v as f64).collect();
    write(args, &dims, &o, &l)?;
    Ok(vec![r])
}

/// Writes `--out` and `--lse` when asked.
fn write(args: &Args, dims: &[usize; 4], o: &[f64], lse: &[f64]) -> Result<()> {
    let f = |x: &[f64]| x.iter().map(|v| *v as f32).collect::<Vec<f32>>();
    super::super::cli::write_o_lse(
        [args.out.as_deref(), args.lse.as_deref()],
        dims,
        &f(o),
        &f(lse),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> std::result::Result<Args, clap::Error> {
        ptxlab_common::cli::parse_line("attention-decode", line)
    }

    fn err_of(line: &str) -> String {
        cli(&parse(line).unwrap()).unwrap_err().to_string()
    }

    #[test]
    fn kv_lens_parse_as_a_list_or_a_file() {
        let a = parse("--kv-lens 4096,77,1e3").unwrap();
        assert_eq!(a.kv_lens, Some(KvLens::List(vec![4096, 77, 1000])));
        let a = parse("--kv-lens lens.npy").unwrap();
        assert_eq!(a.kv_lens, Some(KvLens::File("lens.npy".into())));
        assert!(parse("--kv-lens 4,x").is_err());
    }

    #[test]
    fn hostile_options_are_refused_with_a_reason() {
        let e = err_of("--backend cpu --heads 32 --kv-heads 5 --kv-lens 8");
        assert!(e.contains("--kv-heads") && e.contains("must divide"), "{e}");
        let e = err_of("--backend cpu --kv-lens 0");
        assert!(e.contains("--kv-lens") && e.contains("0 cached"), "{e}");
        let e = err_of("--backend cpu --kv-lens 2 --q-len 3");
        assert!(e.contains("at least --q-len"), "{e}");
        let e = err_of("--backend cpu --kv-lens 8 --page-size 24");
        assert!(
            e.contains("--page-size") && e.contains("power of two"),
            "{e}"
        );
        let e = err_of("--backend cpu --kv-lens 8 --dim 96");
        assert!(e.contains("--dim") && e.contains("[64, 128, 256]"), "{e}");
        let e = err_of("--backend cpu --batch 2 --kv-lens 8,9,10");
        assert!(e.contains("3 lengths for 2 sequences"), "{e}");
        let e = err_of("--backend sim --kv-lens 8 --split-keys 100");
        assert!(
            e.contains("--split-keys") && e.contains("multiple of 64"),
            "{e}"
        );
        let e = err_of("--backend cpu --query q.npy");
        assert!(e.contains("all five"), "{e}");
    }

    #[test]
    fn file_inputs_with_a_bad_page_or_length_are_refused_and_good_ones_run() {
        let dir = std::env::temp_dir().join(format!("ptxlab-decode-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = |n: &str| dir.join(n);
        // 2 sequences, q_len 1, H 4 on H_kv 2, D 64, 3 pages of 4 tokens.
        let save = |n: &str, shape: &[usize], v: f32| {
            let len = shape.iter().product();
            ptxlab_common::npy::write_nd(&path(n), shape, &vec![v; len]).unwrap();
        };
        save("q.npy", &[2, 1, 4, 64], 0.5);
        save("k.npy", &[3, 4, 2, 64], 0.25);
        save("v.npy", &[3, 4, 2, 64], 1.5);
        let table =
            |n: &str, t: &[i32]| ptxlab_common::npy::write_nd(&path(n), &[2, 2], t).unwrap();
        table("t.npy", &[2, 0, 1, -1]);
        table("tbad.npy", &[2, 3, 1, -1]);
        let lens = |n: &str, l: &[i32]| ptxlab_common::npy::write_1d(&path(n), l).unwrap();
        lens("l.npy", &[7, 3]);
        lens("l0.npy", &[7, 0]);
        lens("lbig.npy", &[9, 3]);
        let files = |t: &str, l: &str| {
            format!(
                "--backend cpu --query {} --k-cache {} --v-cache {} --block-table {} --kv-lens {}",
                path("q.npy").display(),
                path("k.npy").display(),
                path("v.npy").display(),
                path(t).display(),
                path(l).display()
            )
        };
        let e = err_of(&files("tbad.npy", "l.npy"));
        assert!(
            e.contains("--block-table") && e.contains("entry [0][1] is 3"),
            "{e}"
        );
        let e = err_of(&files("t.npy", "l0.npy"));
        assert!(e.contains("0 cached tokens"), "{e}");
        let e = err_of(&files("t.npy", "lbig.npy"));
        assert!(e.contains("more than its 2 block-table entries"), "{e}");
        let e = err_of(&format!("{} --dim 64", files("t.npy", "l.npy")));
        assert!(e.contains("--dim") && e.contains("from the files"), "{e}");
        // V constant: the output is that constant.
        let line = format!(
            "{} --out {}",
            files("t.npy", "l.npy"),
            path("o.npy").display()
        );
        cli(&parse(&line).unwrap()).unwrap();
        let (shape, o) = ptxlab_common::npy::read_nd::<f32>(&path("o.npy"), "O", 4).unwrap();
        assert_eq!(shape, vec![2, 1, 4, 64]);
        assert!(o.iter().all(|x| (*x - 1.5).abs() < 1e-6));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
