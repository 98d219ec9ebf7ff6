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
cargo xtask new-kernel-crate "$SCAFFOLD"
cd "$SCAFFOLD"
cargo run --release -- --backend sim | tee run.log
[ "$(grep -c '^PASS' run.log)" = 4 ] || { echo "expected 4 PASS lines"; exit 1; }
grep -q '^PASS axpy::<f64>' run.log || { echo "no PASS axpy::<f64> line"; exit 1; }
grep -q '^PASS row_sums::<f32, 4>' run.log || { echo "no PASS row_sums::<f32, 4> line"; exit 1; }
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
echo "scaffold: PASS (saxpy, stencil, axpy::<f64>, row_sums::<f32, 4>, and a kernel added as the README says)"
