#!/bin/bash
# Second call: lomb-scargle's part again (the first call's bundle lacked the
# peer script's fixtures), then matmul's part three more times for the
# "3 bench runs at 8192^3" target, with the GPU's clocks, power and throttle
# reasons sampled every 500 ms throughout.
set -u
B=$(cd "$(dirname "$0")" && pwd); cd "$B"
T0=$(date +%s); L=$OUT; W=/tmp/w2; mkdir -p $W
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site whl/*.whl > $W/pip.log 2>&1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 PTXLAB_REQUIRE_GPU=1
[ -e ptxlab ] || xz -dk ptxlab.xz; chmod +x ptxlab
{ date -u; cat commit.txt; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit,serial --format=csv; nproc; } > $W/env-c.txt 2>&1
cat $W/env-c.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -lms 500 > $W/smi.csv 2>&1 &
SMI=$!
for w in lomb-scargle matmul-r2 matmul-r3 matmul-r4; do
  now=$(( $(date +%s) - T0 )); left=$(( ${DEADLINE:-570} - now ))
  if [ $left -lt 30 ]; then echo "$w: not run ($left s left)" | tee -a $W/parts.txt; continue; fi
  s=$(date +%s)
  echo "$w start $(date -u +%T)" >> $W/parts.txt
  timeout $left ./ptxlab bench --peers --peers-dir peers --out $W/$w > $W/$w.log 2>&1 --only ${w%%-*}
  echo "$w: rc=$?, $(( $(date +%s) - s )) s (started at +$now s)" | tee -a $W/parts.txt
  [ "$w" = lomb-scargle ] || rm -f $W/$w/*.png $W/$w/*.svg
  tar czf $L/results-c.tgz -C $W .
done
kill $SMI
tar czf $L/results-c.tgz -C $W .
