#!/bin/bash
# The call that produced this folder (2026-11-28, one H100): old and new
# binaries of the tile smoother in one call. `ptxlab-old` is git 9ddb556;
# `ptxlab` is 9ddb556 plus the colour-split shared layout of
# `mg_smooth_tile` (committed next; its PTX is byte-identical to the one
# embedded in the measured binary). GPU multigrid tests (new), CLI solves
# alternating old/new, ncu of one cycle's kernels (both binaries; the CLI's
# default precision, which is the mixed f32 cycle), then
# `ptxlab bench --peers --only poisson-mg` (new) with CuPy's spectral solve.
set -u
B=$(cd "$(dirname "$0")" && pwd); cd "$B"
T0=$(date +%s)
export PYTHONUNBUFFERED=1 PTXLAB_REQUIRE_GPU=1
for f in *.xz; do xz -d -f "$f"; done
chmod +x ptxlab ptxlab-old mgtest
L=$OUT
{ date -u; cat commit.txt
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv
  nproc; python3 -c 'import cupy, numpy; print("cupy", cupy.__version__, "numpy", numpy.__version__)'
} > $L/env.txt 2>&1
timeout 100 ./mgtest --test-threads=1 gpu > $L/mg-test.log 2>&1; echo "test rc=$?" >> $L/mg-test.log
{
for a in "--size 4096 --method multigrid --precision f64 --tol 1e-8" \
         "--size 4096 --method multigrid --precision f32 --tol 1e-8" \
         "--size 4096 --method pcg --precision f64 --tol 1e-8" \
         "--size 8192 --method multigrid --precision f64 --tol 1e-8"; do
  for rep in 1 2; do for bin in ptxlab-old ptxlab; do
    echo "## $bin poisson $a"; timeout 30 ./$bin poisson $a; echo "rc=$?"
  done; done
done
} > $L/cli.log 2>&1
for bin in ptxlab-old ptxlab; do
  timeout 90 ncu --clock-control none -k regex:mg_ --launch-skip 0 --launch-count 22 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats \
    --csv --page details ./$bin poisson --size 4096 --method multigrid --tol 1e-8 --no-graph > $L/ncu-$bin.csv 2> $L/ncu-$bin.err
done
left=$(( ${DEADLINE:-330} - ($(date +%s) - T0) ))
timeout $left ./ptxlab bench --peers --peers-dir peers --only poisson-mg --out $L/bench > $L/bench-mg.log 2>&1
