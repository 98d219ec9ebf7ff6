#!/usr/bin/env bash
# compute-sanitizer over the GPU tests of the tensor-core ladder (rung 3d included)
# and of the Lomb-Scargle models (the batch kernel after its recurrence), small scale.
set -u
G=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/b && tar xJf $G/bundle-san.tar.xz -C /tmp/b
B=/tmp/b/bundle-san
{ echo "git $(cat $G/GIT)"; date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > $OUT/env.txt 2>&1; cat $OUT/env.txt
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
$CS --version | tail -1 >> $OUT/env.txt
export PTXLAB_TEST_SCALE=small
cd $B
for job in "memcheck matmul_tensor" "racecheck matmul_tensor" "synccheck matmul_tensor" "memcheck lomb_models" "racecheck lomb_models"; do
  set -- $job
  t0=$(date +%s)
  timeout 150 $CS --tool $1 --error-exitcode 99 tests/ptxlab-suite-$2 --test-threads=1 gpu > $OUT/sanitize-$1-$2.log 2>&1
  echo "$1 $2: rc=$? $(( $(date +%s) - t0 )) s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' $OUT/sanitize-$1-$2.log | tr '\n' ' ')"
done
