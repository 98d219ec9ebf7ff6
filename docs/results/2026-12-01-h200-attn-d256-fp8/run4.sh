#!/bin/bash
# Call 4: the committed D = 256 kernel and torch's SDPA (cuDNN, FlashAttention-2,
# memory-efficient) at the same shapes in the same call. Everything lands in
# $OUT/results.tgz.
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
P=$B/ptxlab
for c in "" --causal; do
  v=ws; [ -n "$c" ] && v=ws-skip
  run d256$c 60 $P attention --batch 2 --heads 16 --seq 4096 --dim 256 --reps 20 --variant $v $c
  run d256l$c 60 $P attention --batch 1 --heads 16 --seq 16384 --dim 256 --reps 10 --variant $v $c
done
run torch-fwd 150 python3 -c "import sys, json, torch; sys.path.insert(0, '$R/peers'); import attention as a; a.shapes = lambda q: [(2, 16, 4096, 256), (1, 16, 16384, 256)]; a.run_backward = a.run_gqa = a.run_window = lambda *x: []; a.run_varlen = lambda *x: []; [print(json.dumps(r)) for r in a.run(False)]"
python3 -c "import json; [print(r['variant'], '|', r['size'], '|', r.get('precision'), '|', round(r.get('throughput', 0) / 1e3, 1) if 'throughput' in r else r.get('skipped'), '|', r.get('rel_err')) for r in map(json.loads, filter(lambda l: l.startswith('{'), open('$W/torch-fwd.log')))]"
save
echo "done at +$(( $(date +%s) - T0 )) s"
save
