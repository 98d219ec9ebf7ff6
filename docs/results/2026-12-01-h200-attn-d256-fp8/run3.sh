#!/bin/bash
# Call 3: rung 4 and 5 (attn_ws) before and after moving their loop onto
# kernels/ws.rs, both binaries in the same call, rounds alternated
# (BINS="ptxlab-old ptxlab", ROUNDS); the FP8 and D = 256 rows once more; the
# GPU tests in $TESTS (TESTARGS: filters); compute-sanitizer on the moved
# kernels (SAN=1). Everything lands in $OUT/results.tgz.
set -u
R=$(pwd); W=/tmp/w; B=/tmp/b; mkdir -p $W $B; T0=$(date +%s)
left() { echo $(( ${DEADLINE:-560} - ($(date +%s) - T0) )); }
xz -dc $R/gpu/bundle.tar.xz | tar xf - -C $B
export PTXLAB_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; nproc; cat $R/gpu/commit.txt; } > $W/env.txt 2>&1
cat $W/env.txt
save() { tar czf $OUT/results.tgz -C $W . ; }
run() { # name timeout cmd...
  local n=$1 t=$2; shift 2
  [ $(left) -gt 8 ] || { echo "$n: not run ($(left) s left)" | tee -a $W/calls.txt; return; }
  [ $t -gt $(( $(left) - 3 )) ] && t=$(( $(left) - 3 ))
  s=$(date +%s.%N); timeout $t "$@" > $W/$n.log 2>&1; rc=$?
  printf '%s rc=%s %s s\n' $n $rc $(awk "BEGIN{print $(date +%s.%N) - $s}") | tee -a $W/calls.txt
  grep -E "PASS|FAIL|rror|test result|panicked" $W/$n.log | sed 's/ on NVIDIA H200//' | cut -c1-60,170-330 | tail -6
}
for i in $(seq 1 ${ROUNDS:-1}); do
  for b in ${BINS:-ptxlab}; do
    P=$B/$b
    run d128-$b-$i 60 $P attention --batch 4 --heads 16 --seq 8192 --dim 128 --reps 20 --variant ws
    run d128c-$b-$i 60 $P attention --batch 4 --heads 16 --seq 8192 --dim 128 --reps 20 --variant ws-skip --causal
    run d64-$b-$i 60 $P attention --batch 4 --heads 32 --seq 8192 --dim 64 --reps 20 --variant ws
    run d64c-$b-$i 60 $P attention --batch 4 --heads 32 --seq 8192 --dim 64 --reps 20 --variant ws-skip --causal
    run d256-$b-$i 60 $P attention --batch 2 --heads 16 --seq 4096 --dim 256 --reps 20 --variant ws
    run d256c-$b-$i 60 $P attention --batch 2 --heads 16 --seq 4096 --dim 256 --reps 20 --variant ws-skip --causal
    run d256l-$b-$i 60 $P attention --batch 1 --heads 16 --seq 16384 --dim 256 --reps 10 --variant ws
  done
  save
done
P=$B/ptxlab
run fp8 90 $P attention --batch 4 --heads 16 --seq 8192 --dim 128 --reps 20 --variant ws --fp8
run fp8c 90 $P attention --batch 4 --heads 16 --seq 8192 --dim 128 --reps 20 --variant ws-skip --causal --fp8
run d256lc 60 $P attention --batch 1 --heads 16 --seq 16384 --dim 256 --reps 10 --variant ws-skip --causal
run d256g 60 $P attention --batch 2 --heads 32 --kv-heads 8 --seq 4096 --dim 256 --reps 20 --variant ws
run d256gc 60 $P attention --batch 2 --heads 32 --kv-heads 8 --seq 4096 --dim 256 --reps 20 --variant ws-skip --causal
save
for t in ${TESTS:-}; do run test-$t 200 $B/tests/$t --test-threads=1 ${TESTARGS:-}; save; done
if [ "${SAN:-0}" = 1 ]; then
  CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  for tool in memcheck racecheck synccheck; do
    run san-$tool-128 60 $CS --tool $tool --error-exitcode 9 $P attention --batch 1 --heads 4 --kv-heads 2 --seq 333 --seq-kv 200 --dim 128 --causal --variant ws-skip --reps 1
    run san-$tool-256 60 $CS --tool $tool --error-exitcode 9 $P attention --batch 1 --heads 4 --kv-heads 2 --seq 333 --seq-kv 200 --dim 256 --causal --variant ws-skip --reps 1
    run san-$tool-64 60 $CS --tool $tool --error-exitcode 9 $P attention --batch 2 --heads 1 --seq 200 --seq-kv 333 --dim 64 --variant ws --reps 1
  done
  save
fi
echo "done at +$(( $(date +%s) - T0 )) s"
save
