#!/bin/bash
# Spectral Poisson: which passes should run the narrow f64 build? One binary
# (ptxlab-X) whose PTXLAB_SPECTRAL_NARROW (three letters n/w: rows forward,
# columns, rows inverse) overrides its choice, each combination alternated
# twice on the same command lines; then the GPU tests in $TESTS.
set -u
W=/tmp/w; mkdir -p $W /tmp/b; T0=$(date +%s)
left() { echo $(( ${DEADLINE:-560} - ($(date +%s) - T0) )); }
xz -dc gpu/bins.tar.xz | tar xf - -C /tmp/b
export PTXLAB_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; nproc; cat gpu/commits.txt; } > $W/env.txt 2>&1
cat $W/env.txt
save() { tar czf $OUT/results.tgz -C $W . ; }
run() { # name timeout cmd...
  local n=$1 t=$2; shift 2
  [ $(left) -gt 8 ] || { echo "$n: not run ($(left) s left)" | tee -a $W/calls.txt; return; }
  [ $t -gt $(( $(left) - 3 )) ] && t=$(( $(left) - 3 ))
  s=$(date +%s.%N); timeout $t "$@" > $W/$n.log 2>&1; rc=$?
  printf '%s rc=%s %s s\n' $n $rc $(awk "BEGIN{print $(date +%s.%N) - $s}") | tee -a $W/calls.txt
  grep -E "test result|panicked|median" $W/$n.log | cut -c1-200 | tail -3
}
sp() { # combo size extra...
  local c=$1 n=$2; shift 2
  run sp$n-$c-$i 40 env PTXLAB_SPECTRAL_NARROW=$c /tmp/b/ptxlab-X poisson --method spectral --size $n --precision f64 --reps 30 "$@"
}
for i in 0 1; do
  for c in www nnn nww wnw wwn nwn; do sp $c 4096; done
  for c in www nnn nwn wnw; do sp $c 2049; done
  for c in www nwn wnw; do sp $c 4097; done
  for c in www nnn nwn; do sp $c 1025; done
  save
done
for t in ${TESTS:-}; do run $t 200 /tmp/b/$t --test-threads=1; save; done
echo "done at +$(( $(date +%s) - T0 )) s"
save
