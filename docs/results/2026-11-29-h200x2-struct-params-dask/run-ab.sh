#!/usr/bin/env bash
# Old (HEAD 2d6eee6's kernels) against new (the struct-parameter kernels) in one call, one GPU:
# `ptxlab bench --only W` per part, old then new, then again while time is left.
set -u
T0=$(date +%s); DEADLINE=${DEADLINE:-560}
W=$OUT/ab; mkdir -p $W; B=/tmp/bins; mkdir -p $B
tar -xJf gpu/bins.tar.xz -C $B
{ nvidia-smi; date -u; } > $W/device.txt 2>&1
export PTXLAB_REQUIRE_GPU=1
$B/ptxlab info > $W/info.txt 2>&1; echo "info rc=$?" >> $W/info.txt; grep -i "cubin\|jit" $W/info.txt | tail -3
save() { tar -C $OUT -cJf $OUT/ab.tar.xz ab 2>/dev/null; }
for round in 0 1; do
  for w in ${PARTS:-matmul attention fft}; do
    for bin in ptxlab-old ptxlab; do
      left=$(( DEADLINE - ($(date +%s) - T0) ))
      if [ $left -lt 100 ]; then echo "$w $bin round $round: not run ($left s left)" | tee -a $W/parts.txt; continue; fi
      s=$(date +%s)
      timeout $left $B/$bin bench --out $W/ab-$w-$bin-$round --only $w > $W/ab-$w-$bin-$round.log 2>&1
      echo "$w $bin #$round: rc=$?, $(( $(date +%s) - s )) s" | tee -a $W/parts.txt
      save
    done
  done
done
save
