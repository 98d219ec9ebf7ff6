#!/bin/bash
# GPU call A (lead): cold start old vs new, vector_add_wide_f64 old vs new,
# math error table, GPU test binaries with PTXLAB_REQUIRE_GPU=1.
set -u
cd "$(dirname "$0")"
OUT=${OUT:-out}; mkdir -p "$OUT"
unx() { [ -x "$2" ] || { xz -dc "$1" > "$2" && chmod +x "$2"; }; }
unx ptxlab-old.xz ./ptxlab-old
unx b/ptxlab.xz ./ptxlab-new
for t in b/tests/*.xz; do unx "$t" "${t%.xz}"; done
{ date -u '+%Y-%m-%d %H:%M:%S UTC'; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; } > "$OUT/env.txt" 2>&1
T0=$(date +%s)
# 1. cold start, JIT cache off, one small run per subcommand, binaries alternating
OLD_ONLY="info|poisson --nx 203 --ny 157 --method multigrid|lomb-scargle --count 4096|matmul --m 256 --n 256 --k 256 --precision bf16 --variant ws --reps 5" bash coldstart.sh "$OUT/coldstart.md" old=./ptxlab-old new=./ptxlab-new
echo "coldstart done $(( $(date +%s) - T0 )) s"
./ptxlab-new info > "$OUT/info.txt" 2>&1
# 2. vector_add_wide_f64 changed PTX: old and new binary, same run, twice each
for i in 1 2; do for b in old new; do
  ./ptxlab-$b bench --only vector-add --out "$OUT/va-$b-$i" > "$OUT/va-$b-$i.log" 2>&1
done; done
echo "vector-add done $(( $(date +%s) - T0 )) s"
# 3. math error table on the GPU
timeout 200 ./ptxlab-new math-accuracy --backend gpu --with-sim --points 1000000 --out "$OUT/math-accuracy.md" > "$OUT/math-accuracy.log" 2>&1
echo "math done rc=$? $(( $(date +%s) - T0 )) s"
# 4. GPU tests
export PTXLAB_REQUIRE_GPU=1 PTXLAB_REQUIRE_PTXAS=0
for t in b/tests/*; do
  case $t in *.xz|*soak*) continue;; esac
  n=$(basename "$t")
  timeout 150 "$t" --test-threads=1 > "$OUT/test-$n.log" 2>&1
  echo "$n rc=$? $(grep -h 'test result' "$OUT/test-$n.log" | tail -1) $(( $(date +%s) - T0 )) s"
done
# 5. the asynchronous pipeline bugs under compute-sanitizer, in the time left
left=$(( 575 - ($(date +%s) - T0) ))
if [ $left -gt 60 ]; then ASYNC_SECS=$((left - 30)) OUT=$OUT/async bash ../.bundle-asyncsim/run.sh > "$OUT/async-stdout.log" 2>&1; fi
echo "async done $(( $(date +%s) - T0 )) s"
rm -rf "$OUT"/va-*/*.png "$OUT"/va-*/*.svg
echo "== cold start"; cat "$OUT/coldstart.md"
echo "== async"; tail -30 "$OUT/async/summary.txt" 2>/dev/null
echo "== vector-add f64 rows"; grep -h "f64" "$OUT"/va-*/report.md | grep -i "wide\|x2\|16-byte" | head -12
