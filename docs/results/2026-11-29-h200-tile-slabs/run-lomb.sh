#!/usr/bin/env bash
# The Lomb-Scargle ladder, old binary (positional kernel arguments) against
# new (kernels that take structs), twice each, alternating, in one call.
# Logs: $OUT/lomb.tgz.
set -u
cd "$(dirname "$0")/.."
W=/tmp/lombrun; mkdir -p $W
B=/tmp/lombbin; mkdir -p $B
for f in ptxlab ptxlab-head; do xz -dc gpu/$f.xz > $B/$f; chmod +x $B/$f; done
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > $W/env.txt
L1="lomb-scargle --variant all"; L2="lomb-scargle --precision f64 --variant all"; L3="lomb-scargle --variant all --phases long"; L4="lomb-scargle --fit-mean --variant all"; L5="lomb-scargle --curves tests/fixtures/lomb/batch_small.npz --start 0.1 --step 0.01 --n 1000"
for i in 0 1; do for bin in ptxlab-head ptxlab; do k=0; for args in "$L1" "$L2" "$L3" "$L4" "$L5"; do k=$((k+1))
  timeout 90 $B/$bin $args > $W/lomb-$bin-$k-$i.log 2>&1; echo "$bin L$k #$i rc=$?" >> $W/lomb.txt
done; done; done
cat $W/lomb.txt | tr '\n' ' '; echo
grep -h 'register cap 32\|Taylor' $W/lomb-*-4-*.log
tar czf $OUT/lomb.tgz -C $W .
