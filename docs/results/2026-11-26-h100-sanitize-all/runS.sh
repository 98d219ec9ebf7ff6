#!/bin/bash
# GPU call A (lead, issue 26 items 6 and 8), everything in parallel under one
# deadline:
#  * every bundled GPU test binary, plainly, PTXLAB_REQUIRE_GPU=1 (stream P);
#  * compute-sanitizer memcheck / synccheck / racecheck over the GPU tests of
#    every binary (streams M, S, R; racecheck of poisson on its own, R2);
#  * the four cargo-fuzz targets with libFuzzer's -fork on the CPU cores;
#  * the planted out-of-bounds write (the sanitizer check can fail).
set -u
cd "$(dirname "$0")"
B=$PWD/b
FINAL=${OUT:-$PWD/out}; mkdir -p "$FINAL"
L=$(mktemp -d)
T0=$(date +%s); END=$((T0 + ${SECS:-540}))
left() { echo $(( END - $(date +%s) )); }
for t in b/tests/*.xz f/*.xz; do [ -e "$t" ] && { xz -dc "$t" > "${t%.xz}" && chmod +x "${t%.xz}"; } & done; wait
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; date -u; nproc; "$CS" --version | tail -1; } > "$L/env.txt" 2>&1
{ echo "# CUDA 12 cuFFT / cudart anywhere? (for nifty-ls's cufinufft peer)"; timeout 60 find / -xdev \( -name 'libcufft.so.11*' -o -name 'libcudart.so.12*' \) 2>/dev/null | head; ls -d /usr/local/cuda* 2>/dev/null; } > "$L/probe.txt" &
export PTXLAB_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0

# Fuzz: 4 targets x 2 forked workers, until 40 s before the deadline.
FZ=$((END - $(date +%s) - 40))
[ "${NOFUZZ:-0}" = 1 ] || for t in npy npz lomb_batch; do
  mkdir -p "$L/fuzz-$t/corpus" "$L/fuzz-$t/art"
  ( cd "$L/fuzz-$t"; TIMEFORMAT='time: wall %R s, user %U s, sys %S s'
    { time "$B/../f/$t" corpus "$B/../../fuzz/corpus/$t" -fork=2 \
      -max_total_time=$FZ -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
      -artifact_prefix=art/ > fuzz.log 2>&1; echo "rc=$?" >> fuzz.log; } 2>> fuzz.log ) &
done

stream() { # tool binaries...
  local tool=$1; shift
  for t in "$@"; do
    n=$(basename "$t"); l=$(left); filt=gpu
    case $n in *soak*) filt=soak;; esac
    if [ "$l" -lt 20 ]; then echo "$tool $n: not run (deadline)" >> "$L/summary-$tool.txt"; continue; fi
    if ! "$t" --list $filt 2>/dev/null | grep -q ': test'; then echo "$tool $n: no gpu tests" >> "$L/summary-$tool.txt"; continue; fi
    if [ "$tool" = plain ]; then
      timeout -k 5 $((l - 10)) "$t" --test-threads=1 $filt > "$L/plain-$n.log" 2>&1; rc=$?
      echo "plain $n: rc=$rc $(grep -hE 'test result' "$L/plain-$n.log" | tr '\n' ' ')" >> "$L/summary-$tool.txt"
    else
      to=$((l - 10)); [ $to -gt ${CAP:-100000} ] && to=$CAP
      PTXLAB_TEST_SCALE=small timeout -k 5 $to "$CS" --tool $tool --error-exitcode 99 "$t" --test-threads=1 gpu > "$L/$tool-$n.log" 2>&1; rc=$?
      echo "$tool $n: rc=$rc $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$L/$tool-$n.log" | tr '\n' ' ')" >> "$L/summary-$tool.txt"
    fi
  done
}
ALL=$(ls b/tests/* | grep -v '\.xz$')
NOSOAK=$(echo "$ALL" | grep -v soak | grep -v async_sim)
[ "${NOPLAIN:-0}" = 1 ] || stream plain $ALL &
stream memcheck $NOSOAK &
stream synccheck $NOSOAK &
stream racecheck $(echo "$NOSOAK" | grep -v poisson) &
( sleep 5; stream racecheck $(echo "$NOSOAK" | grep poisson) ) &
t=$(ls b/tests/*vector_add | head -1)
PTXLAB_PLANTED=1 timeout 90 "$CS" --tool memcheck --error-exitcode 99 "$t" --test-threads=1 gpu_planted > "$L/planted.log" 2>&1
echo "planted oob write: rc=$? $(grep -c 'Invalid __global__ write' "$L/planted.log") reports" > "$L/summary-planted.txt"
wait
cat "$L"/summary-*.txt
for t in npy npz lomb_batch; do
  echo "fuzz $t: $({ grep -hE 'cov: ' "$L/fuzz-$t/fuzz.log" | tail -n 1; grep -hE '^(rc=|time: )|==ERROR|deadly signal' "$L/fuzz-$t/fuzz.log"; } | tr '\n' ' ') artifacts=$(ls "$L/fuzz-$t/art" | wc -l) corpus=$(ls "$L/fuzz-$t/corpus" | wc -l)"
  rm -rf "$L/fuzz-$t/corpus"
done
tar czf "$FINAL/logs.tgz" -C "$L" .
