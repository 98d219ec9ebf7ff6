#!/bin/bash
# The attention part of the bench with torch's peers in the same run (call 3):
# every forward rung, both backward rungs, grouped heads, windows and packed
# batches, each checked against its reference, then timed.
set -u
B=/tmp/b; mkdir -p $B $OUT/bench
xz -dc gpu/bundle.tar.xz | tar xf - -C $B
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; nproc
  python3 -c 'import torch; print("torch", torch.__version__)'; } > $OUT/bench/env.txt 2>&1
timeout ${T:-560} $B/ptxlab bench --only attention --peers --out $OUT/bench > $OUT/bench/bench.log 2>&1
echo "rc=$?" >> $OUT/bench/bench.log
tail -25 $OUT/bench/bench.log
cd $OUT && tar czf results.tgz bench && rm -rf bench
