#!/bin/bash
# Final call of the session: spectral (pairs) against HEAD, the GPU tests of
# spectral, FP8 (block scaling) and Lomb, the FP8 block-scaled CLI rows, the
# Lomb ladder old against new (kernels that take structs), Nsight Compute of
# the spectral kernels, compute-sanitizer on a block-scaled FP8 GEMM.
set -u
R=$(pwd); W=/tmp/w; mkdir -p $W
mkdir -p /tmp/tb; xz -dc gpu/bundle1.tar.xz | tar xf - -C /tmp/tb; B=/tmp/tb
export PTXLAB_REQUIRE_GPU=1
save() { tar czf $OUT/results.tgz -C $W .; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/env.txt; date -u >> $W/env.txt; cat $B/commit.txt >> $W/env.txt
shopt -s nullglob
for t in $B/t-*; do n=$(basename $t); timeout 240 $t --test-threads 1 > $W/$n.log 2>&1; echo "$n rc=$? $(grep -E '^test result' $W/$n.log | tail -1)" | tee -a $W/tests.txt; done
save
for i in 0 1; do for bin in ptxlab-head ptxlab; do for p in f64 f32; do for n in 4096 2049 1025; do
  timeout 60 $B/$bin poisson --method spectral --size $n --precision $p --reps 30 > $W/sp-$bin-$p-$n-$i.log 2>&1
  echo "$bin $p $n #$i rc=$? $(grep -E 'median' $W/sp-$bin-$p-$n-$i.log | head -1)" | tee -a $W/sp.txt
done; done; done; done
for f in $W/sp-*-0.log; do echo "$(basename $f): $(grep -E 'residual|max \|p' $f | tr -s ' ' | tr '\n' ' ')"; done | tee $W/sp-acc.txt
for bin in ptxlab ptxlab-head; do
  timeout 60 $B/$bin poisson --method spectral --size 1023 --boundary neumann --precision f64 --reps 20 > $W/spn-$bin.log 2>&1; echo "$bin neumann rc=$? $(grep median $W/spn-$bin.log)" | tee -a $W/sp.txt
done
save
(cd $R/peers && timeout 100 python3 -c 'import json, poisson_mg; print(json.dumps(poisson_mg.run_spectral(False), indent=1))' > $W/cupy.json 2>&1; echo "cupy rc=$?" >> $W/cupy.json)
grep -E '"size"|"precision"|median_ms' $W/cupy.json | paste - - -
for l in "fp8-4096|matmul --precision fp8 --m 4096 --n 4096 --k 4096 --reps 20" "fp8-block-4096|matmul --precision fp8 --scaling block --m 4096 --n 4096 --k 4096 --reps 20" "fp8-block-8192|matmul --precision fp8 --scaling block --m 8192 --n 8192 --k 8192 --reps 20" "fp8-8192|matmul --precision fp8 --m 8192 --n 8192 --k 8192 --reps 20" "fp8-block-ragged|matmul --precision fp8 --scaling block --m 5000 --n 9999 --k 3072 --reps 10"; do
  name=${l%%|*}; args=${l#*|}; timeout 90 $B/ptxlab $args > $W/cli-$name.log 2>&1; echo "$name rc=$? $(grep -iE 'TFLOP|error|PASS|FAIL' $W/cli-$name.log | head -4 | tr '\n' ' ')" | tee -a $W/cli.txt
done
timeout 120 /usr/local/cuda-13.0/bin/compute-sanitizer --tool memcheck $B/ptxlab matmul --precision fp8 --scaling block --m 517 --n 389 --k 304 --reps 1 > $W/sanitizer-fp8.log 2>&1; echo "sanitizer rc=$? $(tail -2 $W/sanitizer-fp8.log | tr '\n' ' ')" | tee -a $W/cli.txt
save
L1="lomb-scargle --variant all"; L2="lomb-scargle --precision f64 --variant all"; L3="lomb-scargle --variant all --phases long"; L4="lomb-scargle --fit-mean --variant all"; L5="lomb-scargle --curves tests/fixtures/lomb/batch_small.npz --start 0.1 --step 0.01 --n 1000"
for i in 0 1; do for bin in ptxlab-head ptxlab; do k=0; for args in "$L1" "$L2" "$L3" "$L4" "$L5"; do k=$((k+1))
  timeout 90 $B/$bin $args > $W/lomb-$bin-$k-$i.log 2>&1; echo "$bin L$k #$i rc=$?" >> $W/lomb.txt
done; done; done
cat $W/lomb.txt | tr '\n' ' '; echo
timeout 60 ncu --kernel-name regex:spectral --launch-count 3 --section SpeedOfLight --section Occupancy $B/ptxlab poisson --method spectral --size 4096 --precision f64 --reps 1 > $W/ncu.txt 2>&1
grep -E "spectral_|Duration|Achieved Occupancy|Memory Throughput" $W/ncu.txt | head -20
save
