#!/bin/bash
# Nsight Compute on the FP8 forward kernel and BF16 rung 4 at the same shape:
# pipe utilisation and warp stalls. Everything lands in $OUT/results.tgz.
set -u
W=/tmp/w; B=/tmp/b; mkdir -p $W $B
xz -dc gpu/bundle.tar.xz | tar xf - -C $B
N=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
for k in attn_ws_fp8_e4m3 attn_ws_bf16_128; do
  timeout 200 $N --clock-control none -k regex:"^$k\$" -c 1 --section SpeedOfLight --section WarpStateStats \
    --section ComputeWorkloadAnalysis --section InstructionStats --section SchedulerStats \
    --metrics "regex:sm__inst_executed_pipe_.*\.avg\.pct_of_peak_sustained_active,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active" \
    $B/ptxlab attention --batch 1 --heads 16 --seq 8192 --dim 128 --variant ws --fp8 --reps 1 > $W/ncu-$k.log 2>&1
  echo "$k rc=$?"
  grep -E "pipe_(alu|fma|fmaheavy|fp16|xu|tensor|uniform|lsu|adu|cbu)|gmma|stalled_(long|short|wait|math|barrier|membar|mio|lg|no_inst|not_sel|select|dispatch|branch|sleep|tex|drain|imc)|Duration|Issue Slots|Executed Ipc|Compute \(SM\)" $W/ncu-$k.log | grep -v "^==" | awk '{$1=$1; print}' | cut -c1-120 | head -45
done
tar czf $OUT/results.tgz -C $W .
