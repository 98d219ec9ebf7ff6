#!/bin/bash
# Final bench of the tree (issue 28 "done when"): `ptxlab bench --peers`,
# one process per workload (`--only W`), all in this one device call, in
# priority order under a deadline; the parts join with
# `ptxlab report --from A/results.json --from B/results.json ...` afterwards.
# astropy is carried as wheels; pyamg (about 100 s of CPU set-up and solve
# at 4096^2) and nifty-ls (its own run) are not.
set -u
cd "$(dirname "$0")"
T0=$(date +%s)
FINAL=${OUT:-$PWD/out}; mkdir -p "$FINAL"
L=$(mktemp -d)
DEADLINE=${DEADLINE:-560}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site whl/*.whl > "$L/pip.log" 2>&1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 PTXLAB_REQUIRE_GPU=1
xz -dc b/ptxlab.xz > ptxlab && chmod +x ptxlab
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; date -u; nproc;
  python3 -c 'import astropy, cupy, torch, numba, scipy, numpy; print("astropy", astropy.__version__, "cupy", cupy.__version__, "torch", torch.__version__, "numba", numba.__version__, "scipy", scipy.__version__, "numpy", numpy.__version__)'
} > "$L/env.txt" 2>&1
cat "$L/env.txt"
for w in poisson-mg matmul attention vector-add primitives fusion diffusion poisson lomb-scargle; do
  now=$(( $(date +%s) - T0 )); left=$(( DEADLINE - now ))
  if [ $left -lt 20 ]; then echo "$w: not run ($left s left)" | tee -a "$L/parts.txt"; continue; fi
  s=$(date +%s)
  timeout $left ./ptxlab bench --peers --peers-dir b/peers --out "$L/$w" > "$L/$w.log" 2>&1 --only $w
  rc=$?
  echo "$w: rc=$rc, $(( $(date +%s) - s )) s (started at +$now s)" | tee -a "$L/parts.txt"
  tar czf "$FINAL/results.tgz" -C "$L" .
done
date -u >> "$L/parts.txt"
tar czf "$FINAL/results.tgz" -C "$L" .
