//! Soak tests (GPU only): long runs in one process that must end with the
//! CPU reference's answer and without device-memory growth.
//!
//! - the Poisson solver for 10^5 sweeps (f32 temporal blocking and f64
//!   register strips, a GPU residual reduction every 100 sweeps), checked
//!   against the f64 CPU reference after the same 10^5 sweeps;
//! - the Lomb-Scargle ladder for 10^4 calls (every rung, f32 and f64, each call
//!   allocating, uploading, launching and downloading), every result checked
//!   against the CPU reference.
//!
//! Device memory is read with `cuMemGetInfo` after a warm-up and at the end;
//! more than [`GROWTH_LIMIT`] bytes less free memory is a leak. Without a
//! driver each test prints one line and passes (with `PTXLAB_REQUIRE_GPU`
//! set it fails instead); the names avoid `gpu` so the
//! sanitizer runs (which select `gpu` tests) leave these long runs out.

use ptxlab::runtime::Device;
use ptxlab::runtime::testing::gpu_or_skip;
use ptxlab::workloads::lomb::{self, Options, Rung as LRung, Shape};
use ptxlab::workloads::poisson::{self as ps, Grid, Problem, Rung, SolveOptions};

/// Allowed loss of free device memory between warm-up and the end.
const GROWTH_LIMIT: u64 = 8 << 20;

fn free_bytes(dev: &Device) -> u64 {
    let g = dev.as_gpu().expect("a GPU device");
    g.synchronize().unwrap();
    g.mem_info().unwrap().0
}

fn rel_err(got: &[f64], want: &[f64]) -> f64 {
    let num: f64 = got.iter().zip(want).map(|(a, b)| (a - b) * (a - b)).sum();
    let den: f64 = want.iter().map(|b| b * b).sum();
    (num / den).sqrt()
}

/// The soak's problem, in f64.
struct Case {
    grid: Grid,
    h: f64,
    p0: Vec<f64>,
    b: Vec<f64>,
}

fn solve<T: ps::Element>(
    dev: &Device,
    c: &Case,
    rung: Rung,
    depth: u32,
    iters: usize,
) -> (Vec<f64>, ps::SolveReport) {
    let cv = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
    let prob = Problem::new(c.grid, c.h, cv(&c.b), cv(&c.p0)).unwrap();
    let opts = SolveOptions {
        rung,
        depth,
        // Never reached: the solve runs all `iters` sweeps and still checks
        // the residual (a GPU reduction) every 100 of them.
        tol: Some(1e-300),
        max_iters: iters,
        check_every: 100,
    };
    let (p, rep) = ps::solve_device(dev, &prob, &opts).unwrap();
    (p.iter().map(|v| v.to_f64()).collect(), rep)
}

#[test]
fn soak_poisson_100k_sweeps_matches_cpu_without_memory_growth() {
    let Some(dev) = gpu_or_skip() else { return };
    const ITERS: usize = 100_000;
    let grid = Grid::new(129, 97).unwrap();
    let h = ps::default_h(grid);
    let (p0, b) = ps::random_inputs(grid, 2026);
    let c = Case { grid, h, p0, b };
    // Warm-up: loads the modules and sizes any allocator pools.
    solve::<f32>(&dev, &c, Rung::Temporal, 8, 200);
    solve::<f64>(&dev, &c, Rung::Register, 1, 200);
    let free0 = free_bytes(&dev);

    let want = ps::reference(&c.p0, &c.b, grid, ps::k_of_h(h), ITERS);
    let (p32, r32) = solve::<f32>(&dev, &c, Rung::Temporal, 8, ITERS);
    let (p64, r64) = solve::<f64>(&dev, &c, Rung::Register, 1, ITERS);
    let free1 = free_bytes(&dev);

    let (e32, e64) = (rel_err(&p32, &want), rel_err(&p64, &want));
    println!(
        "poisson soak {}: f32 temporal depth 8: {} sweeps in {:.0} ms, {} residual checks, rel err {e32:.2e}; \
         f64 register: {} sweeps in {:.0} ms, rel err {e64:.2e}; free memory {free0} -> {free1} bytes",
        grid.label(),
        r32.iterations,
        r32.ms,
        r32.residual_checks,
        r64.iterations,
        r64.ms
    );
    assert_eq!((r32.iterations, r64.iterations), (ITERS, ITERS));
    assert_eq!(r32.residual_checks, ITERS / 100 + 1);
    assert!(r32.rel_residual.is_finite() && r64.rel_residual.is_finite());
    // f64 follows the reference to rounding; f32 sits at its own fixed point,
    // within f32 rounding amplified by the operator's conditioning.
    assert!(
        e64 < 1e-10,
        "f64 relative error {e64:e} after {ITERS} sweeps"
    );
    assert!(
        e32 < 2e-3,
        "f32 relative error {e32:e} after {ITERS} sweeps"
    );
    assert!(
        free0.saturating_sub(free1) <= GROWTH_LIMIT,
        "device memory grew by {} bytes over the soak (limit {GROWTH_LIMIT})",
        free0 - free1
    );
}

#[test]
fn soak_lomb_ladder_10k_calls_matches_cpu_without_memory_growth() {
    let Some(dev) = gpu_or_skip() else { return };
    const CALLS: usize = 10_000;
    let shape = Shape::material(&dev);
    let (x, y) = lomb::random_samples(114, 7);
    let freqs = lomb::material_freqs(4099);
    let opts = Options::default();
    let want = lomb::reference(&x, &y, &freqs, opts).unwrap();
    let one = |i: usize| {
        let rung = LRung::LADDER[(i / 2) % LRung::LADDER.len()];
        let r = if i.is_multiple_of(2) {
            lomb::check::<f32>(&dev, rung, &x, &y, &freqs, opts, &want, shape)
        } else {
            lomb::check::<f64>(&dev, rung, &x, &y, &freqs, opts, &want, shape)
        };
        if let Err(e) = r {
            panic!("call {i} ({}): {e}", rung.name());
        }
    };
    // Warm-up: one pass over the ladder in both precisions.
    for i in 0..2 * LRung::LADDER.len() {
        one(i);
    }
    let free0 = free_bytes(&dev);
    let t0 = std::time::Instant::now();
    for i in 0..CALLS {
        one(i);
    }
    let free1 = free_bytes(&dev);
    println!(
        "lomb soak: {CALLS} calls ({} rungs x f32/f64, 114 samples x {} freqs) in {:.1} s, every one within tolerance; \
         free memory {free0} -> {free1} bytes",
        LRung::LADDER.len(),
        freqs.len(),
        t0.elapsed().as_secs_f64()
    );
    assert!(
        free0.saturating_sub(free1) <= GROWTH_LIMIT,
        "device memory grew by {} bytes over {CALLS} calls (limit {GROWTH_LIMIT})",
        free0 - free1
    );
}
