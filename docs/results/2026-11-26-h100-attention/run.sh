#!/usr/bin/env bash
# Issue 29 on one H100, in one device call: the attention GPU tests (every
# rung against the f64 reference, PTXLAB_REQUIRE_GPU so nothing skips), then
# `ptxlab bench --only attention --peers` (every rung checked, then timed, at
# B=4 H=16 S=8192 D=128 and B=4 H=32 S=8192 D=64, non-causal and causal,
# with torch SDPA's cuDNN / flash / memory-efficient backends in the same
# run), then, while time is left, compute-sanitizer over the GPU test at
# small shapes. Everything under $OUT (at most 8 files); a summary last.
# usage: run.sh [deadline seconds, default 230]
set -u
B=$(cd "$(dirname "$0")" && pwd)
cd "$B"
OUT=${OUT:-$B/out}
mkdir -p "$OUT"
DEADLINE=${1:-230}
for f in ptxlab t-attention; do xz -dkf "$f.xz" && chmod +x "$f"; done
export PTXLAB_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
  git -C "$B/.." log -1 --format='checkout %h' 2>/dev/null
  cat "$B/GIT" 2>/dev/null
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 500 > "$OUT/clocks.csv" 2>&1 &
SMI=$!
timeout 90 ./t-attention --test-threads=1 gpu_every_rung --nocapture > "$OUT/test-gpu.log" 2>&1
echo "gpu test rc=$? after ${SECONDS}s"; grep -E "test result|FAILED|panicked" "$OUT/test-gpu.log" | head -5
left=$((DEADLINE - SECONDS - 5))
timeout $left ./ptxlab bench --only attention --peers --peers-dir peers --out bench > "$OUT/bench.log" 2>&1
echo "bench rc=$? after ${SECONDS}s"
tar czf "$OUT/bench.tgz" bench 2>/dev/null
kill $SMI 2>/dev/null
# The sanitizer at small shapes, each tool while at least 40 s are left.
: > "$OUT/sanitize.log"
for tool in memcheck synccheck racecheck; do
  left=$((DEADLINE - SECONDS))
  [ $left -ge 40 ] || { echo "$tool: not run (${left}s left)" >> "$OUT/sanitize.log"; continue; }
  echo "=== $tool" >> "$OUT/sanitize.log"
  PTXLAB_TEST_SCALE=small timeout $((left - 5)) compute-sanitizer --tool $tool --error-exitcode 99 \
    ./t-attention --test-threads=1 gpu_every_rung >> "$OUT/sanitize.log" 2>&1
  echo "$tool rc=$?" >> "$OUT/sanitize.log"
done
grep -E "^===|rc=|ERROR SUMMARY|RACECHECK SUMMARY|not run|test result" "$OUT/sanitize.log"
# A short table last: the attention rows.
if [ -f bench/results.csv ]; then
  python3 - bench/results.csv <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    if r.get("workload") != "attention": continue
    tp = r.get("throughput") or ""
    tf = f"{float(tp)/1e3:6.1f}" if tp else "     -"
    print(f"{r['variant'][:34]:34} {r.get('size','')[:26]:26} {r.get('precision',''):4} {r.get('median_ms','')[:7]:>7} [{r.get('min_ms','')[:6]}-{r.get('max_ms','')[:6]}] {tf} {r.get('rel_err','')[:8]:8} {r.get('status','')[:50]}")
PY
fi
echo "done after ${SECONDS}s"
