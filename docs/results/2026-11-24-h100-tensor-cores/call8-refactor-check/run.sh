#!/usr/bin/env bash
# After the refactor of rungs 3d/3e (ea0fb38): GPU tests, 3b/3d/3e rows beside torch BF16, sanitizer.
rm -rf /tmp/b
. "$(dirname "$0")/common.sh"
cd $B
R=$OUT/r; mkdir -p $R; cp $OUT/env.txt $R/
timeout 150 tests/ptxlab-suite-matmul_tensor --test-threads=1 gpu > $R/test-gpu.log 2>&1; echo "rc=$?" >> $R/test-gpu.log
tail -3 $R/test-gpu.log
for s in "8192 8192 8192" "4096 4096 4096" "10000 7000 5000"; do
  set -- $s
  for v in pipek pipes pipet; do
    echo "=== $v $s" >> $R/matmul.log
    timeout 40 ./ptxlab matmul --precision bf16 --variant $v --m $1 --n $2 --k $3 --reps 30 >> $R/matmul.log 2>&1
  done
done
python3 - > $R/torch.log 2>&1 <<'PY'
import torch, statistics
torch.manual_seed(0)
for (m, n, k) in [(8192, 8192, 8192), (4096, 4096, 4096), (10000, 7000, 5000)]:
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(5):
        c = torch.matmul(a, b)
    torch.cuda.synchronize()
    ts = []
    for _ in range(30):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); c = torch.matmul(a, b); e.record(); e.synchronize()
        ts.append(s.elapsed_time(e))
    med = statistics.median(ts)
    print(f"torch.matmul bf16 {m}x{n}x{k}: median {med:.4f} ms min {min(ts):.4f} max {max(ts):.4f} ms, {2*m*n*k/med/1e9:.1f} TFLOP/s (30 reps, 5 warm-up)")
PY
grep -E "^===|median|TFLOP|error|Error" $R/matmul.log | cut -c1-200 | head -60
cat $R/torch.log
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
$CS --version | tail -1 >> $R/env.txt
for tool in memcheck racecheck synccheck; do
  PTXLAB_TEST_SCALE=small timeout 120 $CS --tool $tool --error-exitcode 99 tests/ptxlab-suite-matmul_tensor --test-threads=1 gpu > $R/sanitize-$tool.log 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' $R/sanitize-$tool.log | tr '\n' ' ')"
done
cd $OUT && tar czf tc-call.tgz r && rm -rf r
