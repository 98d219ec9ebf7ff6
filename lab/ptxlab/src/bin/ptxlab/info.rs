//! `ptxlab info`: GPU 0, and every embedded module with the forms it ships
//! in and, with a GPU, how that GPU would load it. It loads no module, so
//! it answers in the time the driver takes to open the GPU.

use anyhow::{Context, Result};
use ptxlab::ModuleKey;
use ptxlab::runtime::Device;
use ptxlab::runtime::module::ModuleImage;

/// How GPU 0 would load `m`: for its build's default key, then capped at
/// each register cap it ships cubins for (`cubin sm_90; cubin sm_90,
/// maxnreg 32`).
fn plans(g: &ptxlab::runtime::gpu::Gpu, m: &ModuleImage) -> (String, usize, usize) {
    let base = ModuleKey {
        math: m.math,
        ..ModuleKey::default()
    };
    let keys = std::iter::once(base).chain(m.caps().into_iter().map(|c| base.capped(c)));
    let cc = g.info().compute_capability;
    let (mut text, mut jit, mut n) = (Vec::new(), 0, 0);
    for key in keys {
        let plan = m.plan(cc, key);
        if m.runs_on(cc) {
            n += 1;
            jit += usize::from(plan.is_jit());
        }
        text.push(plan.to_string());
    }
    (text.join("; "), jit, n)
}

/// `ptxlab info`.
pub fn info() -> Result<()> {
    let gpu = Device::gpu(0);
    match &gpu {
        Ok(d) => {
            let g = d.as_gpu().context("gpu")?;
            let i = g.info();
            println!(
                "GPU 0: {} ({}), {} SMs, {:.1} GiB, L2 {} MiB, SM clock {} MHz, driver CUDA {}",
                i.name,
                i.arch(),
                i.sm_count,
                i.total_mem as f64 / (1u64 << 30) as f64,
                i.l2_bytes >> 20,
                i.clock_khz / 1000,
                i.driver_cuda
            );
        }
        Err(e) => println!("GPU: none ({})", e.to_string().lines().next().unwrap_or("")),
    }
    let g = gpu.as_ref().ok().and_then(|d| d.as_gpu());
    println!(
        "embedded PTX: {} ({} kernels)",
        ptxlab::modules::ptx_arch(),
        ptxlab_device::REGISTRY.len()
    );
    // One module per build and group (top-level module of kernels-gpu); a
    // command loads only the groups it launches from, as a cubin wherever
    // one loads on the GPU.
    println!(
        "embedded modules (a command loads only the groups it launches from; the cubin for \
         the GPU where one ships, else the PTX through the driver's JIT):"
    );
    match g {
        Some(_) => {
            println!("| build | math | group | entries | ships as | on GPU 0 |");
            println!("|---|---|---|---|---|---|");
        }
        None => {
            println!("| build | math | group | entries | ships as |");
            println!("|---|---|---|---|---|");
        }
    }
    let (mut jit, mut loads) = (0, 0);
    for m in ptxlab::modules::KERNELS.modules {
        let row = format!(
            "| {} | {} | {} | {} | {} |",
            m.stem,
            match m.math {
                ptxlab::MathMode::Precise => "precise",
                ptxlab::MathMode::Fast => "fast",
            },
            m.group,
            m.entries.len(),
            m.forms()
        );
        match g {
            Some(g) => {
                let (plan, j, n) = plans(g, m);
                jit += j;
                loads += n;
                println!("{row} {plan} |");
            }
            None => println!("{row}"),
        }
    }
    if let Some(g) = g {
        println!(
            "on GPU 0 ({}): {} of {loads} module forms load as cubins, {jit} through the driver's JIT",
            g.info().arch(),
            loads - jit
        );
    }
    let res = ptxlab::modules::resources(false);
    if res.is_empty() {
        println!("resource report: none (ptxas was not available at build time)");
    } else {
        let res: Vec<_> = res.into_iter().copied().collect();
        print!("{}", ptxlab::report::resource_table(&res));
    }
    Ok(())
}
