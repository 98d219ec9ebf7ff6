#!/bin/bash
# 3xTF32 wgmma at 8192^3 had a 10-16 ms spread in every bench run of this
# tree (9.3-9.6 ms medians before on this kind of machine): the CLI rung
# alone, with clocks, power and throttle reasons sampled every 100 ms.
set -u
cd "$(dirname "$0")"; L=$OUT
[ -e ptxlab ] || xz -dk ptxlab.xz; chmod +x ptxlab
export PTXLAB_REQUIRE_GPU=1
nvidia-smi -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE > $L/smi-before.txt 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -lms 100 > $L/smi.csv 2>&1 &
S=$!
for i in 1 2; do
  for a in "--precision tf32x3 --variant wgmma" "--precision tf32x3 --variant mma" "--precision bf16 --variant ws"; do
    echo "## $(date -u +%T.%N | cut -c1-12) matmul $a 8192^3"; timeout 60 ./ptxlab matmul $a --m 8192 --n 8192 --k 8192 --reps 40; echo "rc=$?"
  done
done > $L/diag.log 2>&1
kill $S
nvidia-smi -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE > $L/smi-after.txt 2>&1
grep -vE "^\s*$" $L/diag.log | tail -60 | cut -c1-160
