#!/usr/bin/env bash
# Issue 28 items 3 and 4 on one GPU: the GPU tests of the tensor ladder (every
# rung, odd shapes included), then the BF16/FP16 ws rung (each staging choice)
# and 3xTF32 against torch.matmul at the issue's shapes, ours then torch, each
# timed back to back and one call at a time. Logs under $OUT; a summary last.
set -u
B=$(cd "$(dirname "$0")" && pwd)
cd "$B"
for f in gemm_shapes matmul_tensor; do xz -dkf $f.xz && chmod +x $f; done
export PTXLAB_REQUIRE_GPU=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'; } > $OUT/env.txt 2>&1
T0=$SECONDS
timeout 80 ./matmul_tensor --test-threads=1 gpu > $OUT/test-gpu.log 2>&1; echo "test rc=$? in $((SECONDS-T0)) s" >> $OUT/test-gpu.log
L=$OUT/rows.log
: > $L
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 500 > $OUT/clocks.csv 2>&1 &
SMI=$!
eight() {
  echo "# round $1 8192^3 ($((SECONDS-T0)) s)" >> $L
  timeout 45 ./gemm_shapes half 20 8192,8192,8192 >> $L 2>&1
  timeout 30 python3 torch_shapes.py 20 half 8192,8192,8192 >> $L 2>&1
}
eight 1
echo "# other shapes ($((SECONDS-T0)) s)" >> $L
timeout 75 ./gemm_shapes half 20 10000,7000,5000 8191,8193,4097 4095,4097,129 >> $L 2>&1
timeout 40 python3 torch_shapes.py 20 half 10000,7000,5000 8191,8193,4097 4095,4097,129 >> $L 2>&1
echo "# 3xTF32 ($((SECONDS-T0)) s)" >> $L
timeout 45 ./gemm_shapes tf32x3 10 8192,8192,8192 >> $L 2>&1
timeout 30 python3 torch_shapes.py 10 fp32 8192,8192,8192 >> $L 2>&1
eight 2
eight 3
echo "# end ($((SECONDS-T0)) s)" >> $L
kill $SMI 2>/dev/null
cat $OUT/env.txt
grep -E "^test |test result|rc=" $OUT/test-gpu.log | tail -8
grep -E "^(ROW|#)|rror|panic" $L | cut -f1-6 | cut -c1-200
