#!/bin/bash
# Old binary (a6e3223: same kernels as 406bdfa, before the move) against the
# new one (6a50c86, rooms), alternated on the same command lines, three rounds.
set -u
W=/tmp/wab; rm -rf $W; mkdir -p $W /tmp/b
xz -dc gpu/bins.tar.xz | tar xf - -C /tmp/b
export PTXLAB_REQUIRE_GPU=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; cat gpu/commits.txt; } > $W/env.txt
cat > $W/cmds.txt <<'L'

reduce2p20|reduce --n 1048576 --reps 300
L
for i in ${ROUNDS:-0 1 2}; do
  while IFS='|' read -r name args; do
    for b in ${ORDER:-ptxlab-old ptxlab}; do
      timeout 60 /tmp/b/$b $args > $W/$name-$b-$i.log 2>&1; echo "$name $b $i rc=$?" >> $W/calls.txt
    done
  done < $W/cmds.txt
done
tar czf $OUT/results.tgz -C $W .
echo done
