//! `diffusion/<backend>/<variant>`: one explicit step at 2000^2 f32.
//! `diffusion/cpu/{serial,rayon}` and `diffusion/gpu/{inplace,pingpong,temporal}`
//! (`inplace` is the material's racy kernel; `temporal` does 8 steps per
//! launch); throughput in cells per step, as the workload's GCells/s rows.

use criterion::{Criterion, Throughput};
use ptxlab::runtime::Device;
use ptxlab::workloads::diffusion::{self, Fields, Variant};

const SIZE: usize = 2000;
/// The coefficient of the workload's benchmark.
const ALPHA: f32 = 0.2;

/// Short name of a variant (its `--variant` spelling).
fn name(v: Variant) -> &'static str {
    match v {
        Variant::Inplace => "inplace",
        Variant::Pingpong => "pingpong",
        Variant::Temporal => "temporal",
    }
}

pub fn bench(c: &mut Criterion, dev: Option<&Device>) {
    let (nx, ny) = (SIZE, SIZE);
    let u0 = diffusion::initial(nx, ny, 1);
    let mut un = vec![0f32; nx * ny];
    let mut lap = vec![0f32; nx * ny];
    let mut g = crate::cpu_group(c, "diffusion");
    g.throughput(Throughput::Elements((nx * ny) as u64));
    g.bench_function("serial", |bch| {
        bch.iter(|| diffusion::cpu_step(&u0, &mut lap, &mut un, nx, ny, ALPHA))
    });
    g.bench_function("rayon", |bch| {
        bch.iter(|| diffusion::cpu_step_rayon(&u0, &mut lap, &mut un, nx, ny, ALPHA))
    });
    g.finish();
    let Some(dev) = dev else { return };
    let mut g = c.benchmark_group("diffusion/gpu");
    g.throughput(Throughput::Elements((nx * ny) as u64));
    for variant in Variant::ALL {
        let mut f = Fields::new(dev, &u0, nx, ny).expect("upload");
        // One criterion iteration is one step (the temporal variant runs
        // them in launches of 8, the last one taking the remainder).
        g.bench_function(name(variant), |bch| {
            bch.iter_custom(|iters| {
                crate::gpu_time(dev, 1, || {
                    diffusion::run(dev, variant, &mut f, iters as usize, ALPHA)
                })
            })
        });
    }
    g.finish();
}
