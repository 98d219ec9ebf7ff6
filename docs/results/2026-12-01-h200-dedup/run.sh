#!/bin/bash
# GPU validation of the refactor: the bundled test binaries (PTXLAB_REQUIRE_GPU=1,
# so no GPU test can pass by skipping), then `ptxlab bench --quick` (every rung of
# every workload checked against its CPU reference, then timed). Logs in $OUT/results.tgz.
set -u
R=$(pwd); W=/tmp/w; B=/tmp/b; mkdir -p $W $B; T0=$(date +%s)
left() { echo $(( ${DEADLINE:-560} - ($(date +%s) - T0) )); }
xz -dc $R/gpu/bundle.tar.xz | tar xf - -C $B
export PTXLAB_REQUIRE_GPU=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; cat $R/gpu/commit.txt; } > $W/env.txt 2>&1
cat $W/env.txt
save() { tar czf $OUT/results.tgz -C $W . ; }
run() { # name timeout cmd...
  local n=$1 t=$2; shift 2
  [ $(left) -gt 8 ] || { echo "$n: not run ($(left) s left)" | tee -a $W/calls.txt; return; }
  [ $t -gt $(( $(left) - 3 )) ] && t=$(( $(left) - 3 ))
  s=$(date +%s.%N); timeout $t "$@" > $W/$n.log 2>&1; rc=$?
  printf '%s rc=%s %s s\n' $n $rc $(awk "BEGIN{print $(date +%s.%N) - $s}") | tee -a $W/calls.txt
  grep -E "test result|FAILED|panicked|FAIL" $W/$n.log | cut -c1-200 | tail -6
}
for t in ${TESTS:-$(ls $B/tests)}; do run test-$t 200 $B/tests/$t --test-threads=1; save; done
if [ -n "${BENCH:-1}" ]; then
  run bench-quick ${BENCH_T:-300} $B/ptxlab bench --quick --out $W/bench
  tail -40 $W/bench-quick.log
fi
save
