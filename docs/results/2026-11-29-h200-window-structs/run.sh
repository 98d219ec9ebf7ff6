#!/bin/bash
# One short call (device time was nearly spent): rung 2 and the backward
# pass old (ce31065) against new, with and without a sliding window; the
# FFT rungs whose kernels changed, old against new; the window GPU tests;
# torch SDPA with the band as a mask. Everything lands in $OUT/results.tgz.
set -u
R=$(pwd); G=$R/gpu; W=$OUT/w; mkdir -p $W /tmp/b; T0=$(date +%s)
left() { echo $(( ${DEADLINE:-150} - ($(date +%s) - T0) )); }
xz -dc $G/bins.tar.xz | tar xf - -C /tmp/b
ln -sfn $R /work/pack 2>/dev/null || { mkdir -p /work && ln -sfn $R /work/pack; }
export PTXLAB_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; cat $G/commits.txt; } > $W/env.txt 2>&1
save() { tar czf $OUT/results.tgz -C $W . ; }
run() { # name timeout binary args...
  local n=$1 t=$2; shift 2
  [ $(left) -gt 8 ] || { echo "$n: not run ($(left) s left)"; return; }
  [ $t -gt $(( $(left) - 3 )) ] && t=$(( $(left) - 3 ))
  s=$(date +%s.%N); timeout $t "$@" > $W/$n.log 2>&1; rc=$?
  printf '%s rc=%s %s s\n' $n $rc $(awk "BEGIN{print $(date +%s.%N) - $s}") | tee -a $W/calls.txt
  grep -E "PASS|FAIL|error|INACC" $W/$n.log | cut -c1-220
}
S="--batch 4 --heads 16 --seq 8192 --dim 128 --reps 20"
for c in "" "--causal"; do
  for b in ptxlab-old ptxlab; do run fa2-$b${c:+-causal} 20 /tmp/b/$b attention --variant fa2 $S $c; done
  run fa2-window${c:+-causal} 20 /tmp/b/ptxlab attention --variant fa2 $S $c --window 1024
done
save
for sh in "4096x4096 --precision f32" "4095x4095 --precision f64"; do
  for b in ptxlab-old ptxlab; do run fft-$b-${sh%%x*} 25 /tmp/b/$b fft --2d --shape $sh --reps 20; done
done
save
run t-attention 45 /tmp/b/t-attention gpu_sliding --nocapture --test-threads=1
grep -E "^test |test result|panicked" $W/t-attention.log | head -20
save
for b in ptxlab-old ptxlab; do run bwd-$b 25 /tmp/b/$b attention --backward $S; done
run bwd-window 25 /tmp/b/ptxlab attention --backward $S --window 1024
save
run sdpa-window 40 python3 $G/sdpa_window.py; tail -8 $W/sdpa-window.log
save
echo "done at +$(( $(date +%s) - T0 )) s"
