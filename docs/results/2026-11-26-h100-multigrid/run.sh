#!/bin/bash
# Multigrid rungs 3-5 (issue 28 part 1) on one H100: CLI solves at 4096^2 and
# 8192^2, CuPy's spectral (DST-I) solve in the same run, the GPU tests, then
# `ptxlab bench --only poisson-mg` (no peers: pyamg/CuPy CG are slow). Logs
# under $OUT; a summary last.
set -u
B=$(cd "$(dirname "$0")" && pwd)
cd "$B"
export PYTHONUNBUFFERED=1
for f in *.xz; do xz -d -f "$f"; done
chmod +x ptxlab mgtest
{
  date -u; echo "code: $(cat commit.txt)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv
  nproc; python3 -c 'import cupy, numpy; print("cupy", cupy.__version__, "numpy", numpy.__version__)'
} > $OUT/env.txt 2>&1
echo "== CLI"
{
for a in "--size 4096 --method multigrid --precision f64 --tol 1e-8" \
         "--size 4096 --method multigrid --precision f64 --tol 1e-8 --no-fused-fine" \
         "--size 4096 --method multigrid --precision f64 --tol 1e-8 --no-fused-fine --omega 1 --symmetric" \
         "--size 4096 --method multigrid --precision f64 --tol 1e-8 --cycle fmg" \
         "--size 4096 --method multigrid --precision f32 --tol 1e-8" \
         "--size 4096 --method pcg --precision f64 --tol 1e-8" \
         "--size 8192 --method multigrid --precision f64 --tol 1e-8" \
         "--size 8192 --method multigrid --precision f64 --tol 1e-8 --cycle fmg" \
         "--nx 1999 --ny 1237 --method multigrid --precision f64 --tol 1e-8" \
         "--nx 4097 --ny 2049 --method multigrid --precision f64 --tol 1e-8"; do
  echo "## ptxlab poisson $a"; timeout 40 ./ptxlab poisson $a; echo "rc=$?"
done
} > $OUT/mg-cli.log 2>&1
grep -E "^## |cycles, |graph replay" $OUT/mg-cli.log | sed 's/^## ptxlab poisson //' | cut -c1-200
echo "== CuPy spectral (DST-I) solve"
timeout 90 python3 -c '
import json, sys
sys.path.insert(0, "peers")
import poisson_mg
rows = poisson_mg.run_spectral(False)
json.dump(rows, open(sys.argv[1], "w"), indent=1)
for r in rows:
    print(r.get("size"), r.get("precision"), "median %.3f ms (min %.3f max %.3f, %d reps) rel residual %.2e" % (r["median_ms"], r["min_ms"], r["max_ms"], r["reps"], r["rel_err"]) if "median_ms" in r else r)
' $OUT/spectral.json 2>&1 | tee $OUT/spectral.log
echo "== GPU tests"
timeout 120 ./mgtest --test-threads=1 gpu > $OUT/mg-test.log 2>&1; echo "test rc=$?" >> $OUT/mg-test.log
grep -E "^test |test result|rc=" $OUT/mg-test.log | tail -12
echo "== bench"
timeout 200 ./ptxlab bench --only poisson-mg --out bench > $OUT/bench-mg.log 2>&1
echo "bench exit $?"
cp bench/report.md $OUT/report.md 2>/dev/null
grep -E "^\| " $OUT/bench-mg.log | grep -E "4096x4096|8192x8192" | grep -v "^| check" | cut -d'|' -f2,4,5,9,13,14,15 | cut -c1-230 | head -40
