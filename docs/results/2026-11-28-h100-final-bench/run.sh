#!/bin/bash
# Final tree (ca61c9b) on one GPU. MEASURE=1: the multigrid GPU tests, then
# the tile smoother's flat half-sweep (ptxlab) against the colour-split
# binary before it (ptxlab-split), CLI solves alternating. Then
# `ptxlab bench --peers --only W` for each W in PARTS, under a deadline;
# each part's output is written outside $OUT and tarred into it.
set -u
B=$(cd "$(dirname "$0")" && pwd); cd "$B"
T0=$(date +%s)
DEADLINE=${DEADLINE:-570}
L=$OUT; W=/tmp/w; mkdir -p $W
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site whl/*.whl > $W/pip.log 2>&1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 PTXLAB_REQUIRE_GPU=1
for f in *.xz; do [ -e "${f%.xz}" ] || xz -dk "$f"; done
chmod +x ptxlab ptxlab-split mgtest
{ date -u; cat commit.txt
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv; nproc
  python3 -c 'import astropy, nifty_ls, finufft, cupy, torch, numba, scipy, numpy; print("astropy", astropy.__version__, "nifty-ls", nifty_ls.__version__, "finufft", finufft.__version__, "cupy", cupy.__version__, "torch", torch.__version__, "numba", numba.__version__, "scipy", scipy.__version__, "numpy", numpy.__version__)'
} > $W/env-$TAG.txt 2>&1
cat $W/env-$TAG.txt
if [ "${MEASURE:-0}" = 1 ]; then
  timeout 90 ./mgtest --test-threads=1 gpu > $W/mg-test.log 2>&1; echo "test rc=$?" >> $W/mg-test.log
  grep -E "^test |test result|rc=" $W/mg-test.log | tail -6
  {
  for a in "--size 4096 --method multigrid --precision f64 --tol 1e-8" \
           "--size 4096 --method multigrid --precision f32 --tol 1e-8" \
           "--size 4096 --method pcg --precision f64 --tol 1e-8" \
           "--size 8192 --method multigrid --precision f64 --tol 1e-8" \
           "--size 4096 --method multigrid --precision f64 --tol 1e-8"; do
    for bin in ptxlab-split ptxlab; do
      echo "## $bin poisson $a"; timeout 30 ./$bin poisson $a; echo "rc=$?"
    done
  done
  } > $W/cli.log 2>&1
  grep -E "^## |graph replay|rc=" $W/cli.log | cut -c1-140
  tar czf $L/results-$TAG.tgz -C $W .
fi
for w in $PARTS; do
  now=$(( $(date +%s) - T0 )); left=$(( DEADLINE - now ))
  if [ $left -lt 20 ]; then echo "$w: not run ($left s left)" | tee -a $W/parts.txt; continue; fi
  s=$(date +%s)
  timeout $left ./ptxlab bench --peers --peers-dir peers --out $W/$w > $W/$w.log 2>&1 --only $w
  rc=$?
  echo "$w: rc=$rc, $(( $(date +%s) - s )) s (started at +$now s)" | tee -a $W/parts.txt
  tail -3 $W/$w.log
  tar czf $L/results-$TAG.tgz -C $W .
done
date -u >> $W/parts.txt
tar czf $L/results-$TAG.tgz -C $W .
