#!/bin/bash
# 3xTF32 wgmma at 8192^3 on another machine start: is the slower median of
# this session's bench (12.9 ms against 9.57 on 2026-11-26) the machine?
set -u
cd "$(dirname "$0")"; L=$OUT
[ -e ptxlab ] || xz -dk ptxlab.xz; chmod +x ptxlab
export PTXLAB_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,serial,temperature.gpu --format=csv > $L/env.txt; cat $L/env.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -lms 100 > $L/smi.csv 2>&1 &
S=$!
for i in 1 2; do for a in "--precision tf32x3 --variant wgmma" "--precision bf16 --variant ws"; do
  timeout 60 ./ptxlab matmul $a --m 8192 --n 8192 --k 8192 --reps 40 | grep -E "PASS|FAIL"
done; done 2>&1 | tee $L/tf32.log
kill $S; gzip -9 $L/smi.csv
