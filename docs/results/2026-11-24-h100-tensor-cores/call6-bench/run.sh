#!/usr/bin/env bash
# The whole matmul bench with peers (torch BF16/FP16/TF32, CuPy, SGEMM rungs) on the final code,
# the tensor GPU tests, and compute-sanitizer over them.
rm -rf /tmp/b
. "$(dirname "$0")/common.sh"
cd $B
R=$OUT/r; mkdir -p $R; cp $OUT/env.txt $R/
timeout 150 tests/ptxlab-suite-matmul_tensor --test-threads=1 gpu > $R/test-gpu.log 2>&1; echo "rc=$?" >> $R/test-gpu.log
tail -3 $R/test-gpu.log
t0=$(date +%s)
timeout 420 ./ptxlab bench --only matmul --peers --peers-dir peers --out $R/bench-matmul > $R/bench-matmul.log 2>&1
echo "bench rc=$? $(( $(date +%s) - t0 )) s" | tee -a $R/bench-matmul.log
grep -E "tc 3|tc 4|tc 5|torch.*(bf16|f16)" $R/bench-matmul.log | cut -c1-200 | head -40
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
$CS --version | tail -1 >> $R/env.txt
for tool in memcheck racecheck synccheck; do
  PTXLAB_TEST_SCALE=small timeout 120 $CS --tool $tool --error-exitcode 99 tests/ptxlab-suite-matmul_tensor --test-threads=1 gpu > $R/sanitize-$tool.log 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' $R/sanitize-$tool.log | tr '\n' ' ')"
done
cd $OUT && tar czf tc-call.tgz r && rm -rf r
