//! `build-and-bench` (the main job) and `--update-docs`.

use crate::cli::BenchArgs;
use crate::ptx::build_module;
use crate::target::{Arch, Module};
use crate::util::{cargo, root, run};
use anyhow::Result;
use std::process::Command;

/// Builds the kernels (a fast check of the PTX, cubins and resource report)
/// and `ptxlab`, then runs `ptxlab bench` with the options given; or, with
/// `--update-docs DIR`, only regenerates the README's results table and the
/// book's generated pages from the recorded run in `DIR`.
pub(crate) fn build_and_bench(args: &BenchArgs) -> Result<()> {
    if let Some(dir) = &args.update_docs {
        let Some(dir) = dir else {
            anyhow::bail!(
                "--update-docs needs the recorded run's folder, for example \
                 `--update-docs docs/results/<date>-<gpu>-bench` (docs/results/README.md lists the runs)"
            );
        };
        return crate::docs::update_docs(&root().join(dir));
    }
    eprintln!("[1/3] building kernels (PTX, cubins, resource report) ...");
    let module = Module {
        arch: Arch::Sm80,
        fast: false,
    };
    build_module(module, &root().join("target/ptx-out"), 3, None)?;
    eprintln!("[2/3] building ptxlab (release) ...");
    run(cargo().args(["build", "--quiet", "--release", "-p", "ptxlab"]))?;
    eprintln!("[3/3] checking and timing every workload ...");
    run(Command::new(root().join("target/release/ptxlab"))
        .current_dir(root())
        .arg("bench")
        .args(args.bench_args()))
}
