#!/bin/bash
# Nsight Compute over one multigrid cycle of ca61c9b (flat half-sweep) at
# 4096^2: the mixed f32 cycle (the CLI's default; the same 22 launches as
# the colour-split profile of 2026-11-28-h100-tile-layout) and rung 5's f64
# cycle.
set -u
cd "$(dirname "$0")"; L=$OUT
[ -e ptxlab ] || xz -dk ptxlab.xz; chmod +x ptxlab
export PTXLAB_REQUIRE_GPU=1
for p in f32 f64; do
  timeout 120 /usr/local/cuda/bin/ncu --clock-control none -k regex:mg_ --launch-skip 0 --launch-count 22 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats \
    --csv --page details ./ptxlab poisson --size 4096 --method multigrid --precision $p --tol 1e-8 --no-graph > $L/ncu-flat-$p.csv 2> $L/ncu-flat-$p.err
  echo "$p rc=$?"
done
for p in f32 f64; do gzip -9 $L/ncu-flat-$p.csv; done
ls -la $L
