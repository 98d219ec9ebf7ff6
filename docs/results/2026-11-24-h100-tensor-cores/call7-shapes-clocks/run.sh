#!/usr/bin/env bash
# Two open questions of the tensor ladder, no code change (bundle of 47c174b):
# (1) rung 5 at the material's shape: row alignment or tiles? (2) the spread at 8192^3: clocks?
. "$(dirname "$0")/common.sh"
cd $B
R=$OUT/r; mkdir -p $R; cp $OUT/env.txt $R/
for s in "8192 8192 8192" "10000 7000 5000" "10000 7040 5056" "10112 7168 5056" "10112 7168 5000"; do
  set -- $s
  for v in ws wgmma pipes; do
    echo "=== $v $s" >> $R/shapes.log
    timeout 40 ./ptxlab matmul --precision bf16 --variant $v --m $1 --n $2 --k $3 --reps 30 >> $R/shapes.log 2>&1
  done
done
python3 - > $R/torch.log 2>&1 <<'PY'
import torch, statistics
for (m, n, k) in [(8192, 8192, 8192), (10000, 7000, 5000), (10000, 7040, 5056), (10112, 7168, 5056), (10112, 7168, 5000)]:
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(5): c = torch.matmul(a, b)
    torch.cuda.synchronize()
    ts = []
    for _ in range(30):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); c = torch.matmul(a, b); e.record(); e.synchronize()
        ts.append(s.elapsed_time(e))
    med = statistics.median(ts)
    print(f"torch.matmul bf16 {m}x{n}x{k}: median {med:.4f} ms min {min(ts):.4f} max {max(ts):.4f} ms, {2*m*n*k/med/1e9:.1f} TFLOP/s (30 reps, 5 warm-up)")
PY
# Clocks, power and temperature every 50 ms while 3d and rung 5 run 400 back-to-back reps at 8192^3.
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 50 > $R/clocks.csv 2>&1 &
SMI=$!
sleep 1
for v in pipes ws; do
  echo "=== $v start $(date +%H:%M:%S.%N)" >> $R/sustained.log
  timeout 60 ./ptxlab matmul --precision bf16 --variant $v --m 8192 --n 8192 --k 8192 --reps 400 >> $R/sustained.log 2>&1
  echo "=== $v end $(date +%H:%M:%S.%N)" >> $R/sustained.log
  sleep 2
done
kill $SMI
grep -E "^===|median" $R/shapes.log | cut -c1-160
cat $R/torch.log $R/sustained.log | cut -c1-200
awk -F, 'NR>1{print $2}' $R/clocks.csv | sort | uniq -c | sort -rn | head -8
cd $OUT && tar czf tc-call.tgz r && rm -rf r
