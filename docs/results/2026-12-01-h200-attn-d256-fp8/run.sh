#!/bin/bash
# Attention forward at D = 256 (rungs 4 and 5 on 64-key tiles): every rung
# checked against the f64 reference then timed, dense, causal, grouped heads;
# D = 128 rung 4 as a control; torch SDPA (cuDNN, FlashAttention-2) at the
# same shapes (PEERS=1); the GPU tests in $TESTS; compute-sanitizer (SAN=1).
# Everything lands in $OUT/results.tgz.
set -u
R=$(pwd); W=/tmp/w; B=/tmp/b; mkdir -p $W $B; T0=$(date +%s)
left() { echo $(( ${DEADLINE:-560} - ($(date +%s) - T0) )); }
xz -dc $R/gpu/bundle.tar.xz | tar xf - -C $B
export PTXLAB_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; nproc; cat $R/gpu/commit.txt
  python3 -c 'import torch; print("torch", torch.__version__)'; } > $W/env.txt 2>&1
cat $W/env.txt
save() { tar czf $OUT/results.tgz -C $W . ; }
run() { # name timeout cmd...
  local n=$1 t=$2; shift 2
  [ $(left) -gt 8 ] || { echo "$n: not run ($(left) s left)" | tee -a $W/calls.txt; return; }
  [ $t -gt $(( $(left) - 3 )) ] && t=$(( $(left) - 3 ))
  s=$(date +%s.%N); timeout $t "$@" > $W/$n.log 2>&1; rc=$?
  printf '%s rc=%s %s s\n' $n $rc $(awk "BEGIN{print $(date +%s.%N) - $s}") | tee -a $W/calls.txt
  grep -E "PASS|FAIL|rror|test result|panicked" $W/$n.log | cut -c1-230 | tail -6
}
P=$B/ptxlab
S128="--batch 4 --heads 16 --seq 8192 --dim 128 --reps 20"
for c in "" --causal; do
  v=ws; [ -n "$c" ] && v=ws-skip
  run fp8-8k${c} 90 $P attention $S128 $c --variant $v --fp8
  run fp8-16k${c} 90 $P attention --batch 1 --heads 16 --seq 16384 --dim 128 --reps 20 $c --variant $v --fp8
  run fp8-odd${c} 60 $P attention --batch 1 --heads 4 --kv-heads 2 --seq 1000 --seq-kv 1999 --dim 128 --reps 5 $c --variant $v --fp8
  run fwd256${c} 90 $P attention --batch 2 --heads 16 --seq 4096 --dim 256 --reps 20 --variant $v $c
  run fwd256-16k${c} 90 $P attention --batch 1 --heads 16 --seq 16384 --dim 256 --reps 10 --variant $v $c
  run fwd256-gqa${c} 90 $P attention --batch 2 --heads 32 --kv-heads 8 --seq 4096 --dim 256 --reps 20 --variant $v $c
done
save
if [ "${PEERS:-0}" = 1 ]; then
  run torch-fwd 150 python3 -c "import sys, json, torch; sys.path.insert(0, '$R/peers'); import attention as a; a.shapes = lambda q: [(2, 16, 4096, 256), (1, 16, 16384, 256)]; a.run_backward = a.run_gqa = a.run_window = lambda *x: []; a.run_varlen = lambda *x: []; [print(json.dumps(r)) for r in a.run(False)]"
  python3 -c "import json; [print(r['variant'], '|', r['size'], '|', r.get('precision'), '|', round(r.get('throughput', 0) / 1e3, 1) if 'throughput' in r else r.get('skipped'), '|', r.get('rel_err')) for r in map(json.loads, filter(lambda l: l.startswith('{'), open('$W/torch-fwd.log')))]"
  save
fi
for t in ${TESTS:-}; do run test-$t 200 $B/tests/$t --test-threads=1 ${TESTARGS:-}; save; done
if [ "${SAN:-0}" = 1 ]; then
  CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  for tool in memcheck racecheck synccheck; do
    run san-$tool 60 $CS --tool $tool --error-exitcode 9 $P attention --batch 1 --heads 4 --kv-heads 2 --seq 333 --seq-kv 200 --dim 128 --causal --variant ws-skip --fp8 --reps 1
    run san-$tool-ws 60 $CS --tool $tool --error-exitcode 9 $P attention --batch 2 --heads 1 --seq 200 --seq-kv 333 --dim 128 --variant ws --fp8 --reps 1
    tail -2 $W/san-$tool.log
  done
  save
fi
echo "done at +$(( $(date +%s) - T0 )) s"
save
