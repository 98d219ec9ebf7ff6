#!/usr/bin/env bash
# Call C: the multigrid bench again (report and every convergence plot, tarred),
# then compute-sanitizer over the new kernels' GPU tests (small scale).
. "$(dirname "$0")/common.sh"
START=$(date +%s)
left() { echo $(( 570 - ($(date +%s) - START) )); }
cd $B
timeout 230 ./ptxlab bench --only poisson-mg --peers --peers-dir peers --out $OUT/bench-mg > $OUT/bench-mg.log 2>&1
echo "mg bench rc=$? ($(( $(date +%s) - START )) s)"
tar czf $OUT/bench-mg.tgz -C $OUT bench-mg bench-mg.log && rm -rf $OUT/bench-mg
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
export PTXLAB_TEST_SCALE=small
mkdir -p $OUT/san
for job in "memcheck matmul_tensor gpu" "memcheck multigrid gpu" "racecheck matmul_tensor gpu" "racecheck multigrid gpu" "memcheck lomb_models gpu" "synccheck matmul_tensor gpu" "racecheck lomb_models gpu" "memcheck lomb gpu"; do
  set -- $job
  l=$(left); [ $l -lt 20 ] && { echo "$job: no time left"; continue; }
  t0=$(date +%s)
  timeout $(( l < 200 ? l : 200 )) $CS --tool $1 --error-exitcode 99 tests/ptxlab-suite-$2 --test-threads=1 $3 > $OUT/san/$1-$2.log 2>&1
  echo "$1 $2: rc=$? $(( $(date +%s) - t0 )) s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' $OUT/san/$1-$2.log | tr '\n' ' ')"
done
tar czf $OUT/san.tgz -C $OUT san && rm -rf $OUT/san
