#!/bin/bash
# The GPU tests of this session's changes (spectral pairs, FP8 block scaling, Lomb structs).
set -u
W=/tmp/w2; mkdir -p $W /tmp/tb2; xz -dc gpu/bundle1.tar.xz | tar xf - -C /tmp/tb2; B=/tmp/tb2
export PTXLAB_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/env.txt; date -u >> $W/env.txt; cat $B/commit.txt >> $W/env.txt
for t in $B/t-*; do n=$(basename $t); timeout 240 $t --test-threads 1 > $W/$n.log 2>&1; echo "$n rc=$? $(grep -E '^test result' $W/$n.log | tail -1)" | tee -a $W/tests.txt; tar czf $OUT/tests.tgz -C $W .; done
grep -E '^test .*(gpu|FAILED)' $W/*.log | head -40
