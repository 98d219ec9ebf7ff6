#!/bin/bash
# Spectral Poisson: the binary before a change ($AB's first) against the one
# after, alternated twice on the same command lines, with CuPy's spectral
# solve in the same call; then (NCU=1) Nsight Compute on the three kernels
# of one 4096^2 f64 and f32 solve of the new binary, poisson-scaling --json
# on two GPUs when there are two, and the GPU tests in $TESTS. Everything
# lands in $OUT/results.tgz.
set -u
W=/tmp/w; mkdir -p $W /tmp/b; T0=$(date +%s)
left() { echo $(( ${DEADLINE:-560} - ($(date +%s) - T0) )); }
xz -dc gpu/bins.tar.xz | tar xf - -C /tmp/b
export PTXLAB_REQUIRE_GPU=1 PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; nproc; cat gpu/commits.txt
  python3 -c 'import cupy, numpy; print("cupy", cupy.__version__, "numpy", numpy.__version__)'; } > $W/env.txt 2>&1
cat $W/env.txt
save() { tar czf $OUT/results.tgz -C $W . ; }
run() { # name timeout cmd...
  local n=$1 t=$2; shift 2
  [ $(left) -gt 8 ] || { echo "$n: not run ($(left) s left)" | tee -a $W/calls.txt; return; }
  [ $t -gt $(( $(left) - 3 )) ] && t=$(( $(left) - 3 ))
  s=$(date +%s.%N); timeout $t "$@" > $W/$n.log 2>&1; rc=$?
  printf '%s rc=%s %s s\n' $n $rc $(awk "BEGIN{print $(date +%s.%N) - $s}") | tee -a $W/calls.txt
  grep -E "PASS|FAIL|error|test result|panicked|median" $W/$n.log | cut -c1-220 | tail -6
}
for i in 0 1; do
  for b in ${AB:-ptxlab-old ptxlab}; do
    run sp4096-f64-$b-$i 30 /tmp/b/$b poisson --method spectral --size 4096 --precision f64 --reps 30
    run sp4096-f32-$b-$i 30 /tmp/b/$b poisson --method spectral --size 4096 --precision f32 --reps 30
    run sp2049-f64-$b-$i 30 /tmp/b/$b poisson --method spectral --size 2049 --precision f64 --reps 30
    run sp1025-f64-$b-$i 60 /tmp/b/$b poisson --method spectral --size 1025 --precision f64 --reps 30
    run sp4097-f64-$b-$i 30 /tmp/b/$b poisson --method spectral --size 4097 --precision f64 --reps 30
    run spn1023-f64-$b-$i 60 /tmp/b/$b poisson --method spectral --boundary neumann --size 1023 --precision f64 --reps 30
  done
  save
done
run cupy-spectral 120 python3 -c "import sys, json; sys.path.insert(0, 'peers'); import poisson_mg; [print(json.dumps(r)) for r in poisson_mg.run_spectral(False)]"
cat $W/cupy-spectral.log | cut -c1-300
save
if [ "${NCU:-0}" = 1 ]; then
  for p in f64 f32; do
    run ncu-$p 150 $(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1) --clock-control none -k regex:spectral -c 3 --section SpeedOfLight --section Occupancy \
      --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section LaunchStats \
      --section ComputeWorkloadAnalysis /tmp/b/ptxlab poisson --method spectral --size 4096 --precision $p --reps 1
    grep -E "spectral_|Duration|Registers Per|Achieved Occupancy|Memory Throughput|DRAM Throughput|Warp Cycles Per Issued|Block Limit" $W/ncu-$p.log | cut -c1-160 | head -40
    save
  done
fi
if [ "${SCALING:-1}" = 1 ] && [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
  run scaling-jacobi 120 sh -c "/tmp/b/ptxlab poisson-scaling --size 8192 --gpus 2 --variant register --iters 100 --reps 5 --json > $W/scaling-jacobi.json"
  run scaling-mg 180 sh -c "/tmp/b/ptxlab poisson-scaling --method multigrid --precision f64 --size 8192 --gpus 2 --reps 3 --json > $W/scaling-mg.json"
  python3 -c "import json; [print(r['variant'], r['size'], r['timing']['median_ms'], r.get('note')) for f in ('$W/scaling-jacobi.json', '$W/scaling-mg.json') for r in json.load(open(f))]"
  save
fi
for t in ${TESTS:-}; do run $t 200 /tmp/b/$t --test-threads=1 ${TESTARGS:-}; save; done
echo "done at +$(( $(date +%s) - T0 )) s"
save
