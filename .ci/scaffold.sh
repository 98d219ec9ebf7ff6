#!/usr/bin/env bash
# "Your own kernels", end to end on a CPU-only machine: scaffold a standalone
# project with `cargo xtask new-kernel-crate` into a temporary folder (outside
# this workspace), run it on the simulator (four PASS lines: saxpy, stencil,
# the generic axpy::<f64> and the const-generic row_sums::<f32, 4>, each
# against a CPU reference), check that its PTX carries the register cap its
# source asks for and one entry per instance, then add a kernel of the
# user's own exactly as the project's README says and run that too.
set -euo pipefail
cd "$(dirname "$0")/.."
SCAFFOLD=$(mktemp -d)/my-kernels
ROOT=$(pwd -P)
# The seconds of each step, printed as it ends and summed up at the end.
steps=""
t=$SECONDS
took() { steps="$steps, $1 $((SECONDS - t)) s"; echo "scaffold: $1 took $((SECONDS - t)) s"; t=$SECONDS; }
cargo xtask new-kernel-crate "$SCAFFOLD" --dep path
took "new-kernel-crate"
cd "$SCAFFOLD"
# --dep path: the three ptxlab crates from this checkout.
grep -qxF "ptxlab-runtime = { path = \"$ROOT/toolkit/runtime\" }" Cargo.toml || { echo "Cargo.toml: no path dependency on ptxlab-runtime"; exit 1; }
grep -qxF "ptxlab-builder = { path = \"$ROOT/toolkit/builder\" }" Cargo.toml || { echo "Cargo.toml: no path dependency on ptxlab-builder"; exit 1; }
grep -qxF "ptxlab-device = { path = \"$ROOT/toolkit/device\" }" kernels/Cargo.toml || { echo "kernels/Cargo.toml: no path dependency on ptxlab-device"; exit 1; }
cargo run --release -- --backend sim | tee run.log
[ "$(grep -c '^PASS' run.log)" = 4 ] || { echo "expected 4 PASS lines"; exit 1; }
grep -q '^PASS axpy::<f64>' run.log || { echo "no PASS axpy::<f64> line"; exit 1; }
grep -q '^PASS row_sums::<f32, 4>' run.log || { echo "no PASS row_sums::<f32, 4> line"; exit 1; }
took "build and run"
# The crate's own tests: the cluster example (two blocks reading each other's
# shared memory) on the simulator; its GPU twin skips here with one line.
cargo test --release 2>&1 | tee test.log
grep -q 'neighbour_sum_on_the_simulator ... ok' test.log || { echo "the cluster example did not pass on the simulator"; exit 1; }
took "cargo test"
PTX=$(ls target/release/build/my-kernels-*/out/kernels.ptx)
for e in axpy_f32 axpy_f64 row_sums_f32_4 row_sums_f64_2; do
  grep -q "\.entry $e(" "$PTX" || { echo "no .entry $e in the PTX"; exit 1; }
done
grep -A12 '\.entry saxpy' "$PTX" | grep -q '^\.maxnreg 32' || { echo "saxpy: no .maxnreg 32"; exit 1; }
grep -A12 '\.entry saxpy' "$PTX" | grep -q '^\.maxntid 256, 1, 1' || { echo "saxpy: no .maxntid"; exit 1; }

# A third kernel, exactly as the README's "Add a kernel" section writes it:
# its step 1 (the kernel) and step 2 (the launch, check and timing at the end
# of `fn run`) are taken from the README itself, so the README cannot drift.
python3 - <<'PY'
import re
readme = open("README.md").read()
section = readme[readme.index("## Add a kernel"):]
blocks = re.findall(r"```rust\n(.*?)```", section, re.S)
assert len(blocks) >= 2, "README: expected the kernel and the launch as rust blocks"
dedent = lambda b: "\n".join(l[3:] if l.startswith("   ") else l for l in b.splitlines()) + "\n"
kernel, launch = dedent(blocks[0]), dedent(blocks[1])
open("kernels/src/lib.rs", "a").write("\n" + kernel)
main = open("src/main.rs").read()
old = "    Ok(ok1 && ok2 && ok3 && ok4)\n"
assert main.count(old) == 1, "src/main.rs: expected one `Ok(ok1 && ok2 && ok3 && ok4)` at the end of fn run"
body = "".join("    " + l + "\n" if l else "\n" for l in launch.splitlines())
open("src/main.rs", "w").write(main.replace(old, body))
PY
cargo run --release -- --backend sim | tee run3.log
[ "$(grep -c '^PASS' run3.log)" = 5 ] || { echo "expected 5 PASS lines after adding square"; exit 1; }
grep -q '^PASS square' run3.log || { echo "no PASS square line"; exit 1; }
grep -q '\.entry square' "$PTX" || { echo "square is not in the PTX"; exit 1; }
took "the README's kernel"

# The simulator's asynchronous checks in a project of one's own: a kernel
# that copies a tile with copy_async, commits, skips the wait, synchronises
# and reads must fail on the simulator naming the cp.async still in flight;
# with wait_async_copies::<0>() added it passes.
cat >> kernels/src/lib.rs <<'RUST'

/// `y = x`, through shared memory: each thread copies one 16-byte chunk of
/// `x` with `cp.async`, and after the barrier writes back the chunk its
/// mirror thread copied.
#[kernel(launch_bounds(256))]
pub fn tile_async(x: DeviceSlice<f32>, y: DeviceSliceMut<f32>) {
    let b = thread::block_dim_x() as usize;
    let t = thread::thread_idx_x() as usize;
    let tile = shared::dynamic_shared::<ptxlab_device::mem::F32x4>(0, b);
    let base = thread::block_idx_x() as usize * b;
    let valid = 4 * (base + t) + 4 <= x.len();
    // SAFETY: element `t` is inside the tile; when `valid`, chunk
    // `base + t` is inside `x` (16-byte aligned, as device buffers are).
    unsafe { tile.copy_async(t, x, if valid { base + t } else { 0 }, valid) };
    shared::commit_async_copies();
    // WAIT
    sync_threads();
    let m = b - 1 - t;
    let v = tile.get(m).0;
    for (i, e) in v.iter().enumerate() {
        let at = 4 * (base + m) + i;
        if 4 * (base + m) + 4 <= y.len() {
            y.set(at, *e);
        }
    }
}
RUST
python3 - <<'PY'
main = open("src/main.rs").read()
block = """    let nt = 3 * 1024 + 8;
    let hx4 = random(nt, 7);
    let tx = dev.upload(&hx4)?;
    let mut ty = dev.alloc_filled(nt, f32::NAN)?;
    let cfg = LaunchConfig::for_threads(nt / 4, kernels::BLOCK)?.with_shared(16 * kernels::BLOCK as usize);
    launch!(&dev, &KERNELS, cfg, kernels::tile_async(&tx, &mut ty))?;
    let want: Vec<f64> = hx4.iter().map(|v| *v as f64).collect();
    let err = rel_err(&dev.download(&ty)?, &want);
    if !report(&dev, "tile_async", nt, err, 0.0, 8.0 * nt as f64, |_| {
        launch!(&dev, &KERNELS, cfg, kernels::tile_async(&tx, &mut ty))
    })? {
        return Ok(false);
    }
"""
at = main.rindex("\n    Ok(ok1")
open("src/main.rs", "w").write(main[:at + 1] + block + main[at + 1:])
PY
if cargo run --release -- --backend sim > run4.log 2>&1; then
  cat run4.log; echo "tile_async without its wait should fail on the simulator"; exit 1
fi
grep -q "cp.async copy into it is still in flight" run4.log \
  || { cat run4.log; echo "no report of the cp.async in flight"; exit 1; }
grep "cp.async" run4.log
sed -i 's|    // WAIT|    shared::wait_async_copies::<0>();|' kernels/src/lib.rs
cargo run --release -- --backend sim | tee run5.log
grep -q '^PASS tile_async' run5.log || { echo "tile_async with its wait should pass"; exit 1; }
took "the cp.async check"
echo "scaffold: PASS (saxpy, stencil, axpy::<f64>, row_sums::<f32, 4>, a kernel added as the README says, and the cp.async check)"
echo "scaffold: seconds per step: ${steps#, }"
