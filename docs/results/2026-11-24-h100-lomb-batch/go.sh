#!/usr/bin/env bash
# helper lomb2: batch kernel (three-term recurrence, weighted pair, SFU anchors).
# GPU tests, the CLI batch, then `ptxlab bench --only lomb-scargle --peers`.
set -u
cd "$(dirname "$0")"
G=$PWD
mkdir -p /tmp/lomb2 && tar xzf bundle.tgz -C /tmp/lomb2
B=/tmp/lomb2/bundle
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $G/../.gpu-lomb/whl/*.whl > $OUT/pip.log 2>&1
export PYTHONPATH=/tmp/site
{ cat $G/GIT; date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; } > $OUT/env.txt 2>&1
mkdir -p /tmp/d && cd /tmp/d
python3 $G/mkdata.py > $OUT/mkdata.log 2>&1
cd $B
wall() { local t0=$(date +%s.%N); "$@"; local rc=$?; local t1=$(date +%s.%N); echo "WALL $(python3 -c "print(f'{$t1-$t0:.3f}')") s rc=$rc: $*"; }
for t in tests/*; do
  timeout 60 "$t" --test-threads=4 --nocapture > "$OUT/test-$(basename "$t").log" 2>&1
  echo "$t rc=$?" >> $OUT/tests.txt
done
{
  wall ./ptxlab lomb-scargle --batch /tmp/d/batch.npz --start 0.01 --step 0.000999099909991 --count 10000 --top 3 --periods /tmp/d/per.npy --out /tmp/d/bp.npy --reps 10
  wall ./ptxlab lomb-scargle --batch /tmp/d/batch.npz --start 0.01 --step 0.000999099909991 --count 10000 --top 3 --periods /tmp/d/per64.npy --precision f64 --reps 5 --check sample
} > $OUT/cli.log 2>&1
timeout ${BENCH_TIMEOUT:-200} ./ptxlab bench --peers-dir peers --out $OUT/bench --only lomb-scargle --peers > $OUT/bench.log 2>&1
echo "bench rc=$?" >> $OUT/tests.txt
cat $OUT/env.txt $OUT/tests.txt
grep -hE "test result|FAILED|panicked|batch|fine" $OUT/test-*.log | head -30
grep -E "WALL|PASS|FAIL|batch kernel|error" $OUT/cli.log | head -20
grep -E "^\| " $OUT/bench.log | grep -iE "batch|looped" | cut -c1-250
tar czf $OUT/results.tgz -C $OUT bench && rm -rf $OUT/bench
