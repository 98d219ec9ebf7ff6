//! The GEMM shapes of issue 28 on one GPU, in one process: the BF16/FP16
//! `ws` rung with each operand staging choice ([`Staging`]), and the 3xTF32
//! kernels, every configuration checked before it is timed (every element
//! written, 64 sampled entries against f64 dots), then timed two ways:
//! back to back (a pair of device events around each of `reps` calls, one
//! synchronisation at the end: how `ptxlab bench` times) and one call at a
//! time (events around one call, then a synchronisation: how the torch
//! peer times). `docs/results/2026-11-26-h100-gemm-shapes/torch_shapes.py`
//! times `torch.matmul` both ways at the same shapes.
//!
//! ```text
//! cargo run --release --example gemm_shapes -- [half|tf32x3|all] [REPS] [M,N,K ...]
//! ```
//!
//! It prints one line per configuration, `ROW<TAB>...`, that
//! `docs/results/*-h100-gemm-shapes/` tabulates.

use ptxlab::runtime::{Buffer, Device, Timing};
use ptxlab::workloads::matmul::{
    self, Half, HalfPlan, POISON_16, Staging, TcRung, Tf32x3, Tf32x3Plan, tf32x3_scratch,
};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// 64 sampled entries of `c` against f64 dots of `a` (`m x k`) and `b`
/// (`k x n`); `Err` when an element is not finite (never written).
fn sampled(c: &[f32], a: &[f32], b: &[f32], (m, n, k): (usize, usize, usize)) -> Res<f64> {
    if let Some(i) = c.iter().position(|v| !v.is_finite()) {
        return Err(format!("C[{}, {}] = {} (never written?)", i / n, i % n, c[i]).into());
    }
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for _ in 0..64 {
        let (i, j) = ((next() % m as u64) as usize, (next() % n as u64) as usize);
        let want: f64 = (0..k)
            .map(|p| a[i * k + p] as f64 * b[p * n + j] as f64)
            .sum();
        num += (c[i * n + j] as f64 - want).powi(2);
        den += want * want;
    }
    Ok((num / den).sqrt())
}

/// Times `call` back to back and one call at a time.
fn time_both(
    dev: &Device,
    reps: usize,
    mut call: impl FnMut() -> Res<()>,
) -> Res<(Timing, Timing)> {
    let b2b = dev.time(2, reps, |_| call())?;
    let mut one = Vec::with_capacity(reps);
    for _ in 0..reps {
        one.push(dev.time(0, 1, |_| call())?.median_ms);
    }
    Ok((b2b, Timing::from_samples(one)))
}

fn row(what: &str, (m, n, k): (usize, usize, usize), err: f64, (b2b, one): (Timing, Timing)) {
    let tf = |ms: f64| 2.0 * m as f64 * n as f64 * k as f64 / (ms * 1e-3) / 1e12;
    println!(
        "ROW\t{what}\t{m}x{n}x{k}\terr {err:.1e}\tb2b {:.4} ({:.4}-{:.4}) ms {:.1} TFLOP/s\tone {:.4} ({:.4}-{:.4}) ms {:.1} TFLOP/s",
        b2b.median_ms,
        b2b.min_ms,
        b2b.max_ms,
        tf(b2b.median_ms),
        one.median_ms,
        one.min_ms,
        one.max_ms,
        tf(one.median_ms)
    );
}

/// The `ws` rung at one shape, both 16-bit types, every staging choice that
/// applies (`A` in place needs `k % 8 == 0`, `B` in place `n % 8 == 0`).
fn half_rows(dev: &Device, reps: usize, shape: (usize, usize, usize)) -> Res<()> {
    let (m, n, k) = shape;
    let (fa, fb) = matmul::inputs(m, n, k, 7);
    for half in Half::ALL {
        let ha: Vec<u16> = fa.iter().map(|x| half.from_f32(*x)).collect();
        let hb: Vec<u16> = fb.iter().map(|x| half.from_f32(*x)).collect();
        let (wa, wb) = (matmul::widen(half, &ha), matmul::widen(half, &hb));
        let a = dev.upload(&ha)?;
        let b = dev.upload(&hb)?;
        let mut c: Buffer<u16> = dev.alloc_filled(m * n, POISON_16)?;
        let auto = Staging::auto(n, k);
        let mut choices = vec![auto];
        for (sa, sb) in [(false, false), (false, true), (true, true)] {
            let s = Staging { a: sa, b: sb };
            let possible = (sa || k % 8 == 0) && (sb || n % 8 == 0);
            if possible && !choices.contains(&s) {
                choices.push(s);
            }
        }
        for s in choices {
            let what = format!(
                "{} ws stage A {} B {}{}",
                half.name(),
                s.a,
                s.b,
                if s == auto { " (auto)" } else { "" }
            );
            dev.write(&mut c, &vec![POISON_16; m * n])?;
            let mut plan = HalfPlan::with_staging(dev, TcRung::Ws, half, (&a, &b), shape, s)?;
            plan.run(dev, &mut c)?;
            let got = matmul::widen(half, &dev.download(&c)?);
            let err = sampled(&got, &wa, &wb, shape)?;
            if err > half.tol() {
                return Err(format!("{what} {m}x{n}x{k}: sampled error {err:.2e}").into());
            }
            let t = time_both(dev, reps, || Ok(plan.run(dev, &mut c)?))?;
            row(&what, shape, err, t);
        }
    }
    Ok(())
}

/// Both 3xTF32 kernels at one shape (`k % 4 == 0` for the `wgmma` one).
fn tf32_rows(dev: &Device, reps: usize, shape: (usize, usize, usize)) -> Res<()> {
    let (m, n, k) = shape;
    let (fa, fb) = matmul::inputs(m, n, k, 7);
    let a = dev.upload(&fa)?;
    let b = dev.upload(&fb)?;
    let mut c = dev.alloc_filled(m * n, f32::NAN)?;
    for v in Tf32x3::ALL {
        if v.uses_tma() && k % 4 != 0 {
            continue;
        }
        dev.write(&mut c, &vec![f32::NAN; m * n])?;
        let mut scratch = v
            .uses_tma()
            .then(|| tf32x3_scratch(dev, m, n, k))
            .transpose()?;
        let mut plan = Tf32x3Plan::new(dev, v, &a, &b, scratch.as_mut(), m, n, k)?;
        plan.run(dev, &mut c)?;
        let err = sampled(&dev.download(&c)?, &fa, &fb, shape)?;
        if err > matmul::TOL {
            return Err(format!("{} {m}x{n}x{k}: sampled error {err:.2e}", v.label()).into());
        }
        let t = time_both(dev, reps, || Ok(plan.run(dev, &mut c)?))?;
        row(&format!("tf32x3 {}", v.name()), shape, err, t);
    }
    Ok(())
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let which = args.first().cloned().unwrap_or_else(|| "all".into());
    let reps: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(20);
    let mut shapes = Vec::new();
    for s in args.iter().skip(2) {
        let v: Vec<usize> = s.split(',').map(str::parse).collect::<Result<_, _>>()?;
        let [m, n, k] = v[..] else {
            return Err(format!("a shape is M,N,K, not `{s}`").into());
        };
        shapes.push((m, n, k));
    }
    if shapes.is_empty() {
        shapes = vec![(8192, 8192, 8192), (10000, 7000, 5000), (8191, 8193, 4097)];
    }
    let dev = Device::gpu(0)?;
    println!("# {} ({}), reps {reps}", dev.name(), which);
    for &shape in &shapes {
        if which == "half" || which == "all" {
            half_rows(&dev, reps, shape)?;
        }
        if which == "tf32x3" || which == "all" {
            tf32_rows(&dev, reps, shape)?;
        }
    }
    Ok(())
}
