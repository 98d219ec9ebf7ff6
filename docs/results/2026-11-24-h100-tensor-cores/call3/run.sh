#!/usr/bin/env bash
# tc3's one device call: GPU tests, ptxlab matmul rows, torch BF16 peer.
set -u
cd "$(dirname "$0")"
tar xzf b.tgz
R=$OUT/r; mkdir -p $R
cd bundle
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt 2>&1
timeout 100 tests/ptxlab-suite-matmul_tensor --test-threads=1 gpu > $R/test-gpu.log 2>&1; echo "rc=$?" >> $R/test-gpu.log
tail -4 $R/test-gpu.log
for s in "8192 8192 8192" "4096 4096 4096" "10000 7000 5000"; do
  set -- $s
  for v in pipe pipek pipes; do
    echo "=== $v $s" >> $R/matmul.log
    timeout 30 ./ptxlab matmul --precision bf16 --variant $v --m $1 --n $2 --k $3 --reps 20 >> $R/matmul.log 2>&1
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
    for _ in range(20):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); c = torch.matmul(a, b); e.record(); e.synchronize()
        ts.append(s.elapsed_time(e))
    med = statistics.median(ts)
    print(f"torch.matmul bf16 {m}x{n}x{k}: median {med:.4f} ms min {min(ts):.4f} max {max(ts):.4f} ms, {2*m*n*k/med/1e9:.1f} TFLOP/s (20 reps, 5 warm-up)")
PY
cat $R/matmul.log | grep -v "^$" | tail -60
cat $R/torch.log
cd $OUT && tar czf tc3-call.tgz r && rm -rf r
