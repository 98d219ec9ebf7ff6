#!/bin/bash
# Attention backward: the binary before a change ($AB's first) against the
# one after, alternated twice on the same command lines (torch's backward
# peers come from the bench of the same binary when PEERS=1); then
# (NCU=1) Nsight Compute on the new binary's main backward kernel, and
# the GPU tests in $TESTS. Everything lands in $OUT/results.tgz.
set -u
W=/tmp/w; mkdir -p $W /tmp/b; T0=$(date +%s)
left() { echo $(( ${DEADLINE:-560} - ($(date +%s) - T0) )); }
xz -dc gpu/bins.tar.xz | tar xf - -C /tmp/b
export PTXLAB_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; nproc; cat gpu/commits.txt
  python3 -c 'import torch; print("torch", torch.__version__)'; } > $W/env.txt 2>&1
cat $W/env.txt
save() { tar czf $OUT/results.tgz -C $W . ; }
run() { # name timeout cmd...
  local n=$1 t=$2; shift 2
  [ $(left) -gt 8 ] || { echo "$n: not run ($(left) s left)" | tee -a $W/calls.txt; return; }
  [ $t -gt $(( $(left) - 3 )) ] && t=$(( $(left) - 3 ))
  s=$(date +%s.%N); timeout $t "$@" > $W/$n.log 2>&1; rc=$?
  printf '%s rc=%s %s s\n' $n $rc $(awk "BEGIN{print $(date +%s.%N) - $s}") | tee -a $W/calls.txt
  grep -E "PASS|FAIL|error|test result|panicked|median|TFLOP|backward" $W/$n.log | cut -c1-220 | tail -6
}
S128="--batch 4 --heads 16 --seq 8192 --dim 128 --reps 20"
S64="--batch 4 --heads 16 --seq 8192 --dim 64 --reps 20"
SG="--batch 2 --heads 32 --kv-heads 8 --seq 4096 --dim 128 --reps 20"
for i in 0 1; do
  for b in ${AB:-ptxlab-old ptxlab}; do
    for c in "" --causal; do
      run bwd128-$b${c:+-causal}-$i 40 /tmp/b/$b attention --backward $S128 $c
      run bwd64-$b${c:+-causal}-$i 40 /tmp/b/$b attention --backward $S64 $c
    done
    [ $i = 0 ] && run bwdgqa-$b-causal 40 /tmp/b/$b attention --backward $SG --causal
    [ $i = 0 ] && run bwdwin-$b 40 /tmp/b/$b attention --backward $S128 --window 1024
    [ $i = 0 ] && run bwd4097-$b 40 /tmp/b/$b attention --backward --batch 2 --heads 16 --seq 4097 --dim 128 --reps 20
    [ $i = 0 ] && run bwd4097-$b-causal 40 /tmp/b/$b attention --backward --batch 2 --heads 16 --seq 4097 --dim 128 --reps 20 --causal
  done
  save
done
if [ "${PEERS:-0}" = 1 ]; then
  run torch-bwd 240 python3 -c "import sys, json, torch; sys.path.insert(0, 'peers'); import attention as a; from torch.nn.attention import SDPBackend as B; [print(json.dumps(r)) for r in a.run_backward(torch, False, [('cuDNN', B.CUDNN_ATTENTION), ('flash (FlashAttention-2)', B.FLASH_ATTENTION)])]"
  python3 -c "import json; [print(r['variant'], '|', r['size'], '|', round(r.get('throughput', 0) / 1e3, 1) if 'throughput' in r else r.get('skipped')) for r in map(json.loads, filter(lambda l: l.startswith('{'), open('$W/torch-bwd.log')))]"
  save
fi
if [ "${NCU:-0}" = 1 ]; then
  N=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
  for b in ${NCUB:-ptxlab}; do
    run ncu-$b 120 $N --clock-control none -k regex:attn_bwd_bf16 -c 1 --section SpeedOfLight --section Occupancy \
      --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section LaunchStats \
      --section ComputeWorkloadAnalysis --section InstructionStats --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" /tmp/b/$b attention --backward --batch 1 --heads 16 --seq 4096 --dim 128 --reps 1
    grep -E "stalled|attn_bwd|Duration|Registers Per|Achieved Occupancy|Memory Throughput|L2 Cache Throughput|Warp Cycles Per Issued|Issue Slots Busy|Executed Ipc|Stall|Block Limit" $W/ncu-$b.log | cut -c1-160 | sort -k3 -n -r | head -60
    save
  done
fi
for t in ${TESTS:-}; do run $t 200 /tmp/b/$t --test-threads=1 ${TESTARGS:-}; save; done
echo "done at +$(( $(date +%s) - T0 )) s"
save
