#!/bin/bash
# compute-sanitizer over the GPU tests of the bundled test binaries, under a
# global deadline: memcheck first on every binary, then synccheck, then
# racecheck, each run limited to what is left.
set -u
cd "$(dirname "$0")/b"
OUT=${OUT:-out}; mkdir -p "$OUT"
for t in tests/*.xz; do [ -x "${t%.xz}" ] || { xz -dc "$t" > "${t%.xz}" && chmod +x "${t%.xz}"; }; done
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
export PTXLAB_TEST_SCALE=small PTXLAB_REQUIRE_GPU=1
T0=$(date +%s); END=$((T0 + ${SECS:-330}))
for tool in memcheck synccheck racecheck; do
  for t in tests/*; do
    case $t in *.xz|*soak*|*async_sim*) continue;; esac
    n=$(basename "$t")
    left=$(( END - $(date +%s) ))
    if [ $left -lt 15 ]; then echo "$tool $n: not run (deadline)"; continue; fi
    to=$(( left < 90 ? left : 90 ))
    timeout -k 5 $to "$CS" --tool $tool --error-exitcode 99 "$t" --test-threads=1 gpu > "$OUT/$tool-$n.log" 2>&1
    rc=$?
    echo "$tool $n: rc=$rc $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$tool-$n.log" | tr '\n' ' ')"
  done
done
t=$(ls tests/*vector_add | head -1)
PTXLAB_PLANTED=1 timeout 60 "$CS" --tool memcheck --error-exitcode 99 "$t" --test-threads=1 gpu_planted > "$OUT/planted.log" 2>&1
echo "planted oob write: rc=$? $(grep -c 'Invalid __global__ write' "$OUT/planted.log") reports"
tar czf "$OUT/logs.tgz" -C "$OUT" --exclude logs.tgz . 2>/dev/null
find "$OUT" -name "*.log" -delete
