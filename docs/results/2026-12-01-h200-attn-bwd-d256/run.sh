#!/bin/bash
# Attention backward at D = 256 (rung 2's attn_bwd_wide, the forward's lse
# from rung 4/5), checked against the f64 gradients first, then timed; torch's
# backward (cuDNN, FlashAttention-2) at the same shapes in the same call
# (PEERS=1); the GPU tests in $TESTS; compute-sanitizer (SAN=1) and Nsight
# Compute (NCU=1) on the D = 256 kernel. Everything lands in $OUT/results.tgz.
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
  grep -E "PASS|FAIL|rror|test result|panicked" $W/$n.log | sed 's/ on NVIDIA H200//' | cut -c1-230 | tail -6
}
P=$B/ptxlab
S256="--batch 4 --heads 16 --seq 8192 --dim 256 --reps 10"
for i in $(seq 1 ${ROUNDS:-1}); do
  for b in ${BINS:-ptxlab}; do
    for c in "" --causal; do
      run bwd256${c}-$b-$i 150 $B/$b attention --backward $S256 $c
    done
    [ $i = 1 ] && run bwd256-4097-causal-$b 90 $B/$b attention --backward --batch 2 --heads 16 --seq 4097 --dim 256 --reps 10 --causal
    [ $i = 1 ] && run bwd256-gqa-causal-$b 90 $B/$b attention --backward --batch 2 --heads 32 --kv-heads 8 --seq 4096 --dim 256 --reps 10 --causal
  done
  save
done
if [ "${PEERS:-0}" = 1 ]; then
  run torch-bwd 200 python3 -c "import sys, json, torch; sys.path.insert(0, '$R/peers'); import attention as a; from torch.nn.attention import SDPBackend as B; a.backward_shapes = lambda q: [(4, 16, 8192, 256)]; [print(json.dumps(r)) for r in a.run_backward(torch, False, [('cuDNN', B.CUDNN_ATTENTION), ('flash (FlashAttention-2)', B.FLASH_ATTENTION)])]"
  python3 -c "import json; [print(r['variant'], '|', r['size'], '|', round(r.get('throughput', 0) / 1e3, 1) if 'throughput' in r else r.get('skipped'), '|', r.get('rel_err')) for r in map(json.loads, filter(lambda l: l.startswith('{'), open('$W/torch-bwd.log')))]"
  save
fi
for t in ${TESTS:-}; do run test-$t 240 $B/tests/$t --test-threads=1 ${TESTARGS:-}; save; done
if [ "${SAN:-0}" = 1 ]; then
  CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  for tool in memcheck racecheck synccheck; do
    run san-$tool 90 $CS --tool $tool --error-exitcode 9 $P attention --backward --batch 1 --heads 2 --seq 333 --seq-kv 200 --kv-heads 1 --dim 256 --causal --variant wgmma --reps 1
    tail -3 $W/san-$tool.log
  done
  save
fi
if [ "${NCU:-0}" = 1 ]; then
  N=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
  run ncu 150 $N --clock-control none -k regex:attn_bwd_wide_bf16 -c 1 --section SpeedOfLight --section Occupancy \
    --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section LaunchStats \
    --section ComputeWorkloadAnalysis --section InstructionStats --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" $P attention --backward --batch 1 --heads 16 --seq 4096 --dim 256 --reps 1 --variant wgmma
  grep -E "stalled|attn_bwd|Duration|Registers Per|Achieved Occupancy|Memory Throughput|L2 Cache Throughput|Warp Cycles Per Issued|Issue Slots Busy|Executed Ipc|Stall|Block Limit|Tensor" $W/ncu.log | cut -c1-160 | sort -k3 -n -r | head -50
  save
fi
echo "done at +$(( $(date +%s) - T0 )) s"
save
