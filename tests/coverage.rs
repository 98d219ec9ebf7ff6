//! Every kernel of the project has a simulator test against its CPU
//! reference: this runs every workload's simulator check, then compares the
//! kernels the simulator launched with the list the kernel crate registers
//! (`ptxlab_device::REGISTRY`, filled by `#[kernel]`, not kept by hand).

#[test]
fn every_kernel_runs_on_the_simulator_against_its_reference() {
    let _ = kernels_gpu::vector::BLOCK;
    let mut failures = Vec::new();
    for w in ptxlab::workloads::all() {
        let t = std::time::Instant::now();
        if let Err(e) = (w.sim_check)() {
            failures.push(format!("{}: {e}", w.name));
        }
        println!(
            "{}: simulator check in {:.1} s",
            w.name,
            t.elapsed().as_secs_f64()
        );
    }
    if let Err(e) = ptxlab::workloads::demo::sim_check() {
        failures.push(format!("demo: {e}"));
    }
    if let Err(e) = ptxlab::workloads::mathcheck::sim_check() {
        failures.push(format!("mathcheck: {e}"));
    }
    if let Err(e) = ptxlab::pipeline_bugs::sim_check() {
        failures.push(format!("pipeline bugs: {e}"));
    }
    if let Err(e) = ptxlab::fp8::sim_check() {
        failures.push(format!("fp8: {e}"));
    }
    if let Err(e) = ptxlab::cluster::sim_check() {
        failures.push(format!("cluster: {e}"));
    }
    assert!(
        failures.is_empty(),
        "simulator checks failed:\n{}",
        failures.join("\n")
    );
    let launched = ptxlab_device::sim::launched_kernels();
    let missing: Vec<_> = ptxlab_device::REGISTRY
        .iter()
        .filter(|k| k.module.starts_with("kernels_gpu"))
        .filter(|k| !launched.contains(&k.name))
        .map(|k| format!("{} ({})", k.name, k.module))
        .collect();
    assert!(
        missing.is_empty(),
        "kernels with no simulator check (add them to their workload's sim_check):\n{}",
        missing.join("\n")
    );
}
