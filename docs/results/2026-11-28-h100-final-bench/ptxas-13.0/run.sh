#!/bin/bash
# The same tree (ca61c9b) with its cubins from two ptxas versions: 13.5
# (what this session's final bench used, by mistake: the project pins
# 13.0) and 13.0 (the pinned one, the GPU machines' driver level). CLI
# rungs alternating, then bench parts with the 13.0 build under a deadline.
set -u
B=$(cd "$(dirname "$0")" && pwd); cd "$B"; T0=$(date +%s)
L=$OUT; W=/tmp/wp; mkdir -p $W
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site whl/*.whl > $W/pip.log 2>&1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 PTXLAB_REQUIRE_GPU=1
for f in *.xz; do [ -e "${f%.xz}" ] || xz -dk "$f"; done; chmod +x ptxlab-130 ptxlab-135
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,serial --format=csv; } > $W/env.txt 2>&1; cat $W/env.txt
{
for i in 1 2; do
for a in "matmul --precision tf32x3 --variant wgmma --m 8192 --n 8192 --k 8192" \
         "matmul --precision bf16 --variant ws --m 8192 --n 8192 --k 8192" \
         "matmul --precision bf16 --variant ws --m 10000 --n 7000 --k 5000" \
         "matmul --precision f16 --variant ws --m 10000 --n 7000 --k 5000" \
         "poisson --size 4096 --method multigrid --precision f64 --tol 1e-8"; do
  for bin in ptxlab-135 ptxlab-130; do
    echo "## $bin $a"; timeout 60 ./$bin $a 2>&1 | grep -E "PASS|FAIL|graph replay|error"
  done
done; done
} > $W/cli.log 2>&1
cat $W/cli.log | cut -c1-150
tar czf $L/results-p.tgz -C $W .
for w in matmul attention poisson-mg; do
  now=$(( $(date +%s) - T0 )); left=$(( ${DEADLINE:-320} - now ))
  if [ $left -lt 30 ]; then echo "$w: not run ($left s left)" | tee -a $W/parts.txt; continue; fi
  s=$(date +%s)
  timeout $left ./ptxlab-130 bench --peers --peers-dir peers --out $W/$w > $W/$w.log 2>&1 --only $w
  echo "$w: rc=$?, $(( $(date +%s) - s )) s (started at +$now s)" | tee -a $W/parts.txt
  rm -f $W/$w/*.png $W/$w/*.svg
  tar czf $L/results-p.tgz -C $W .
done
