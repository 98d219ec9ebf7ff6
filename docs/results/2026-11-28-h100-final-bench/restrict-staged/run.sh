#!/bin/bash
# Shared-memory restriction, measured: ptxlab-old (ca61c9b, the restriction
# recomputing residuals from global memory), ptxlab-a (68949e3, residuals
# staged in shared memory), ptxlab-b (a with launch_bounds(256, 4): 64
# registers). GPU multigrid tests (a), CLI solves alternating, then ncu of
# the restriction launches of one f64 cycle for each binary.
set -u
cd "$(dirname "$0")"; L=$OUT
export PTXLAB_REQUIRE_GPU=1
for f in *.xz; do [ -e "${f%.xz}" ] || xz -dk "$f"; done
chmod +x ptxlab-old ptxlab-a ptxlab-b mgtest
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,serial --format=csv; } > $L/env.txt 2>&1; cat $L/env.txt
timeout 90 ./mgtest --test-threads=1 gpu > $L/mg-test.log 2>&1; echo "test rc=$?" >> $L/mg-test.log
grep -E "^test |test result|rc=" $L/mg-test.log | tail -5
{
for a in "--size 4096 --method multigrid --precision f64 --tol 1e-8" \
         "--size 4096 --method multigrid --precision f32 --tol 1e-8" \
         "--size 4096 --method pcg --precision f64 --tol 1e-8" \
         "--size 8192 --method multigrid --precision f64 --tol 1e-8" \
         "--size 4096 --method multigrid --precision f64 --tol 1e-8"; do
  for bin in ptxlab-old ptxlab-a ptxlab-b; do
    echo "## $bin poisson $a"; timeout 30 ./$bin poisson $a; echo "rc=$?"
  done
done
} > $L/cli.log 2>&1
grep -E "^## |graph replay|rc=[^0]" $L/cli.log | cut -c1-120
for bin in ptxlab-old ptxlab-a ptxlab-b; do
  timeout 60 /usr/local/cuda/bin/ncu --clock-control none -k regex:mg_restrict --launch-count 6 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --csv --page details \
    ./$bin poisson --size 4096 --method multigrid --precision f64 --tol 1e-8 --no-graph > $L/ncu-$bin.csv 2>&1
  grep -E '"Duration"' $L/ncu-$bin.csv | awk -F'","' '{print "'$bin'", $9, $(NF-5), $(NF-4)}' | cut -c1-100
done
gzip -9 $L/ncu-*.csv
