//! Inputs and checks: random and cheap deterministic inputs, every rung
//! against the CPU f64 reference after several sweep counts (spare buffer
//! poisoned), the residual kernel against the CPU, and the simulator check.

use super::cpu::{cpu_residual_sq, reference};
use super::launch::{Field, residual_sq};
use super::types::{Element, Grid, Rung, k_of_h};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::rng::{rel_err_norm, uniform_vec};
use ptxlab_common::runtime::Device;
use ptxlab_device::math::Real;

/// Odd size used by the checks on a GPU (not a multiple of any tile).
pub const CHECK_GRID_GPU: (usize, usize) = (1999, 1237);
/// Sweep counts after which every check compares with the reference.
pub const CHECK_SWEEPS: [usize; 3] = [1, 2, 37];
/// Grid spacing used by the checks: large enough that `k b` matters.
pub const CHECK_H: f64 = 0.5;

/// Random `p0` (boundary included) and `b`, uniform in [-1, 1), never all zero.
pub fn random_inputs(grid: Grid, seed: u64) -> (Vec<f64>, Vec<f64>) {
    (
        uniform_vec(seed, grid.cells(), -1.0, 1.0),
        uniform_vec(seed ^ 0x05ee_db0b, grid.cells(), -1.0, 1.0),
    )
}

/// Cheap deterministic inputs for timing large grids (values in [-0.5, 0.5)).
pub fn bench_inputs<T: Real>(grid: Grid) -> (Vec<T>, Vec<T>) {
    let f =
        |i: usize, m: u64| T::from_f64(((i as u64).wrapping_mul(m) % 1000) as f64 / 1000.0 - 0.5);
    let n = grid.cells();
    (
        (0..n).map(|i| f(i, 2_654_435_761)).collect(),
        (0..n).map(|i| f(i, 40_503)).collect(),
    )
}

/// Relative error by norm each check allows: f32 1e-5, f64 1e-12.
pub fn tolerance<T>() -> f64 {
    if std::mem::size_of::<T>() == 4 {
        1e-5
    } else {
        1e-12
    }
}

/// A check problem with its references, built once and reused for every rung.
#[derive(Debug, Clone)]
pub struct CheckCase {
    /// The grid.
    pub grid: Grid,
    /// Initial field, already rounded to the element type under test.
    pub p0: Vec<f64>,
    /// Right-hand side, rounded likewise.
    pub b: Vec<f64>,
    /// Sweep coefficient.
    pub k: f64,
    /// `(sweeps, reference field)`, increasing sweeps.
    pub refs: Vec<(usize, Vec<f64>)>,
}

impl CheckCase {
    /// Random inputs rounded to `T`, and the f64 reference after each count of
    /// `sweeps` (increasing).
    pub fn new<T: Element>(grid: Grid, seed: u64, sweeps: &[usize]) -> Self {
        let (p0, b) = random_inputs(grid, seed);
        let round = |v: Vec<f64>| {
            v.into_iter()
                .map(|x| T::from_f64(x).to_f64())
                .collect::<Vec<_>>()
        };
        let (p0, b) = (round(p0), round(b));
        let k = T::from_f64(k_of_h(CHECK_H)).to_f64();
        let mut refs = Vec::new();
        let mut cur = p0.clone();
        let mut done = 0;
        for &s in sweeps {
            cur = reference(&cur, &b, grid, k, s - done);
            done = s;
            refs.push((s, cur.clone()));
        }
        Self {
            grid,
            p0,
            b,
            k,
            refs,
        }
    }
}

/// Runs `rung` on `case` with the spare buffer poisoned (NaN) and returns the
/// relative error by norm after each reference's sweep count.
pub fn check_case<T: Element>(
    dev: &Device,
    rung: Rung,
    depth: u32,
    case: &CheckCase,
) -> Result<Vec<(usize, f64)>> {
    let p0: Vec<T> = case.p0.iter().map(|&v| T::from_f64(v)).collect();
    let bh: Vec<T> = case.b.iter().map(|&v| T::from_f64(v)).collect();
    let b = dev.upload(&bh)?;
    let mut f = Field::new(dev, &p0)?;
    let k = T::from_f64(case.k);
    let mut done = 0;
    let mut out = Vec::new();
    for (s, want) in &case.refs {
        f.run(dev, rung, case.grid, &b, k, s - done, depth)?;
        done = *s;
        let got: Vec<f64> = dev
            .download(&f.cur)?
            .into_iter()
            .map(|v| v.to_f64())
            .collect();
        out.push((*s, rel_err_norm(&got, want)));
    }
    Ok(out)
}

/// [`check_case`] turned into an error when any error exceeds [`tolerance`].
pub fn verify<T: Element>(dev: &Device, rung: Rung, depth: u32, case: &CheckCase) -> Result<f64> {
    let errs = check_case::<T>(dev, rung, depth, case)?;
    let tol = tolerance::<T>();
    let mut worst: f64 = 0.0;
    for (s, e) in errs {
        if e.is_nan() || e > tol {
            return Err(Error::Verification {
                what: format!(
                    "poisson {} {} {} on {}",
                    rung.label(depth),
                    T::NAME,
                    case.grid.label(),
                    dev.name()
                ),
                detail: format!(
                    "relative error {e:.3e} after {s} sweeps against the CPU f64 reference; tolerance {tol:.0e}"
                ),
            });
        }
        worst = worst.max(e);
    }
    Ok(worst)
}

/// Checks the residual kernel against the CPU on `case`'s inputs (relative error).
pub fn check_residual<T: Element>(dev: &Device, case: &CheckCase) -> Result<f64> {
    let p: Vec<T> = case.p0.iter().map(|&v| T::from_f64(v)).collect();
    let bh: Vec<T> = case.b.iter().map(|&v| T::from_f64(v)).collect();
    let (pb, bb) = (dev.upload(&p)?, dev.upload(&bh)?);
    let mut acc = dev.alloc_filled(1, f64::NAN)?;
    let got = residual_sq(dev, case.grid, &pb, &bb, CHECK_H, &mut acc)?;
    let want = cpu_residual_sq(&case.p0, &case.b, case.grid, CHECK_H);
    let e = ((got - want) / want).abs();
    if e.is_nan() || e > 1e-12 {
        return Err(Error::Verification {
            what: format!(
                "poisson residual {} {} on {}",
                T::NAME,
                case.grid.label(),
                dev.name()
            ),
            detail: format!(
                "sum of r^2 {got:e}, CPU {want:e}: relative error {e:.2e}, tolerance 1e-12"
            ),
        });
    }
    Ok(e)
}

/// Cases of the simulator check: grid, sweep counts for f32 and for f64,
/// rungs, temporal depth. Odd sizes, not multiples of any tile, the smallest
/// legal grid, and a grid of several register and temporal blocks (the rungs
/// with few simulated threads per cell). The simulator runs one OS thread per
/// GPU thread, so the one-thread-per-cell rungs are kept to small counts.
#[allow(clippy::type_complexity)]
const SIM_CASES: [((usize, usize), &[usize], &[usize], &[Rung], u32); 3] = [
    ((37, 29), &CHECK_SWEEPS, &[1, 2], &Rung::ALL, 4),
    ((3, 3), &[1, 3], &[1, 3], &Rung::ALL, 1),
    (
        (131, 67),
        &[1, 3],
        &[2],
        &[Rung::Register, Rung::Temporal],
        2,
    ),
];

/// Every kernel of the workload on the simulator against the CPU f64
/// reference (f32: 1, 2 and 37 sweeps at 37x29), and the residual kernel.
pub fn sim_check() -> Result<()> {
    let dev = Device::sim();
    fn typed<T: Element>(dev: &Device) -> Result<()> {
        for (i, &((nx, ny), s32, s64, rungs, depth)) in SIM_CASES.iter().enumerate() {
            let sweeps = if std::mem::size_of::<T>() == 4 {
                s32
            } else {
                s64
            };
            let case = CheckCase::new::<T>(Grid::new(nx, ny)?, 11 + i as u64, sweeps);
            for &rung in rungs {
                verify::<T>(dev, rung, depth, &case)?;
            }
            check_residual::<T>(dev, &case)?;
        }
        Ok(())
    }
    typed::<f32>(&dev)?;
    typed::<f64>(&dev)
}
