//! `poisson/<backend>/<variant>`: one Jacobi sweep at 2000^2 (the material's
//! size). `poisson/cpu/{serial,ndarray,rayon}` (f32) and
//! `poisson/gpu/{naive,tiled,register,temporal}-{f32,f64}` (temporal at the
//! default depth, 8 sweeps per launch); throughput in cells per sweep, as the
//! workload's GCells/s rows.

use criterion::{Criterion, Throughput};
use ptxlab::runtime::Device;
use ptxlab::workloads::poisson::{self, Element, Field, Grid, NAME, Rung};

const SIZE: usize = 2000;

pub fn bench(c: &mut Criterion, dev: Option<&Device>) {
    let grid = Grid::new(SIZE, SIZE).expect("valid grid");
    let cells = grid.cells() as u64;
    let (p, b) = poisson::bench_inputs::<f32>(grid);
    let k = poisson::k_of_h(poisson::default_h(grid)) as f32;
    let mut out = vec![0f32; grid.cells()];
    let mut g = crate::cpu_group(c, NAME);
    g.throughput(Throughput::Elements(cells));
    g.bench_function("serial", |bch| {
        bch.iter(|| poisson::cpu_sweep(&p, &b, &mut out, grid, k))
    });
    g.bench_function("ndarray", |bch| {
        bch.iter(|| poisson::cpu_sweep_nd(&p, &b, &mut out, grid, k).expect("ndarray sweep"))
    });
    g.bench_function("rayon", |bch| {
        bch.iter(|| poisson::cpu_sweep_rayon(&p, &b, &mut out, grid, k))
    });
    g.finish();
    let Some(dev) = dev else { return };
    let mut g = c.benchmark_group(format!("{NAME}/gpu"));
    g.throughput(Throughput::Elements(cells));
    gpu_rungs::<f32>(&mut g, dev, grid);
    gpu_rungs::<f64>(&mut g, dev, grid);
    g.finish();
}

/// Every rung for element type `T`; one criterion iteration is one sweep
/// ([`Field::run`] does the temporal rung's sweeps in passes of the depth).
fn gpu_rungs<T: Element>(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    dev: &Device,
    grid: Grid,
) {
    let (p0, bh) = poisson::bench_inputs::<T>(grid);
    let b = dev.upload(&bh).expect("upload b");
    let mut f = Field::new(dev, &p0).expect("upload p0");
    let k = T::from_f64(poisson::k_of_h(poisson::default_h(grid)));
    let depth = poisson::DEFAULT_DEPTH;
    for rung in Rung::ALL {
        g.bench_function(format!("{}-{}", rung.name(), T::NAME), |bch| {
            bch.iter_custom(|iters| {
                crate::gpu_time(dev, 1, || {
                    f.run(dev, rung, grid, &b, k, iters as usize, depth)
                })
            })
        });
    }
}
