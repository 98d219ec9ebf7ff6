#!/usr/bin/env bash
# GPU tests of the changed kernels (release test binaries of this tree), then Dask on 1 and 2 GPUs.
set -u
T0=$(date +%s)
W=$OUT/tests; mkdir -p $W; B=/tmp/tbins; mkdir -p $B
tar -xJf gpu/tests.tar.xz -C $B
{ nvidia-smi; nvidia-smi topo -m; date -u; } > $W/device.txt 2>&1
export PTXLAB_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0
# The binaries were built in /work/pack and find their fixtures under it.
[ -e /work/pack ] || ln -s "$PWD" /work/pack
for t in vector_add lomb_models; do
  left=$(( ${DEADLINE:-420} - ($(date +%s) - T0) ))
  if [ $left -lt 20 ]; then echo "$t: not run ($left s left)" | tee -a $W/tests.txt; continue; fi
  s=$(date +%s)
  # The tests read their fixtures relative to the repository root.
  timeout $(( left < 150 ? left : 150 )) $B/$t --test-threads 1 > $W/t-$t.log 2>&1
  echo "$t: rc=$?, $(( $(date +%s) - s )) s, $(grep -h '^test result' $W/t-$t.log | tail -1)" | tee -a $W/tests.txt
done
tar -C $OUT -cJf $OUT/tests.tar.xz tests
[ "${DASK:-1}" = 1 ] && bash gpu/run-dask.sh
