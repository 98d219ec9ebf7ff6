#!/usr/bin/env bash
# "Your own kernels", end to end on a CPU-only machine: scaffold a standalone
# project with `cargo xtask new-kernel-crate` into a temporary folder (outside
# this workspace), run it on the simulator (two PASS lines), check that its
# PTX carries the register cap its source asks for, then add a third kernel
# of the user's own exactly as the project's README says and run that too.
set -euo pipefail
cd "$(dirname "$0")/.."
SCAFFOLD=$(mktemp -d)/my-kernels
cargo xtask new-kernel-crate "$SCAFFOLD"
cd "$SCAFFOLD"
cargo run --release -- --backend sim | tee run.log
[ "$(grep -c '^PASS' run.log)" = 2 ] || { echo "expected 2 PASS lines"; exit 1; }
PTX=$(ls target/release/build/my-kernels-*/out/kernels.ptx)
grep -A12 '\.entry saxpy' "$PTX" | grep -q '^\.maxnreg 32' || { echo "saxpy: no .maxnreg 32"; exit 1; }
grep -A12 '\.entry saxpy' "$PTX" | grep -q '^\.maxntid 256, 1, 1' || { echo "saxpy: no .maxntid"; exit 1; }

# A third kernel, as the README's "Add a kernel" section writes it.
cat >> kernels/src/lib.rs <<'RUST'

/// out[i] = x[i] * x[i]: one element per thread.
#[kernel(launch_bounds(256))]
pub fn square(x: DeviceSlice<f32>, out: DeviceSliceMut<f32>) {
    let i = thread::index_1d();
    if i < out.len() {
        out.set(i, x.get(i) * x.get(i));
    }
}
RUST
mkdir -p src/bin
cat > src/bin/square.rs <<'RUST'
use ptxlab_runtime::{Device, LaunchConfig, launch};
ptxlab_runtime::include_kernels!();
fn main() -> ptxlab_runtime::Result<()> {
    let dev = Device::sim();
    let n = 1001;
    let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 3.0).collect();
    let x = dev.upload(&xs)?;
    let mut sq = dev.alloc_filled(n, f32::NAN)?;
    let cfg = LaunchConfig::for_threads(n, 256)?;
    launch!(&dev, &KERNELS, cfg, kernels::square(&x, &mut sq))?;
    let got = dev.download(&sq)?;
    assert!(got.iter().zip(&xs).all(|(g, x)| *g == x * x), "square: wrong result");
    println!("PASS square: n={n} on {}", dev.name());
    Ok(())
}
RUST
cargo run --release --bin square | tee square.log
grep -q '^PASS square' square.log
grep -q '\.entry square' "$PTX" || { echo "square is not in the PTX"; exit 1; }
echo "scaffold: PASS (saxpy, stencil, and a third kernel added by hand)"
