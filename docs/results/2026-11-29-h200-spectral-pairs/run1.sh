#!/bin/bash
# Spectral pairs: this tree (ptxlab) against HEAD's kernels (ptxlab-head) in
# one call, alternated twice, f64 and f32 at 4096^2, 2049^2 and 1025^2; CuPy's
# spectral solve; Nsight Compute of the new kernels.
set -u
R=$(pwd); W=/tmp/w; mkdir -p $W
mkdir -p /tmp/tb; xz -dc gpu/bundle1.tar.xz | tar xf - -C /tmp/tb; B=/tmp/tb
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $W/env.txt; date -u >> $W/env.txt; cat $B/commit.txt >> $W/env.txt
for i in 0 1; do for bin in ptxlab-head ptxlab; do for p in f64 f32; do for n in 4096 2049 1025; do
  timeout 60 $B/$bin poisson --method spectral --size $n --precision $p --reps 30 > $W/sp-$bin-$p-$n-$i.log 2>&1
  echo "$bin $p $n #$i rc=$? $(grep -E 'median' $W/sp-$bin-$p-$n-$i.log | head -1)" | tee -a $W/sp.txt
done; done; done; done
grep -h -E 'relative error|residual' $W/sp-ptxlab-*-0.log | head -12
(cd $R/peers && timeout 100 python3 -c 'import json, poisson_mg; print(json.dumps(poisson_mg.run_spectral(False), indent=1))' > $W/cupy.json 2>&1; echo "cupy rc=$?" >> $W/cupy.json)
grep -E '"size"|"precision"|median_ms' $W/cupy.json | paste - - -
timeout 60 ncu --kernel-name regex:spectral --launch-count 3 --section SpeedOfLight --section Occupancy --section LaunchStats $B/ptxlab poisson --method spectral --size 4096 --precision f64 --reps 1 > $W/ncu.txt 2>&1
timeout 60 ncu --kernel-name regex:spectral --launch-count 3 --section SpeedOfLight --section Occupancy $B/ptxlab poisson --method spectral --size 4096 --precision f32 --reps 1 > $W/ncu-f32.txt 2>&1
grep -E "spectral_|Duration|Achieved Occupancy|Registers Per|Memory Throughput" $W/ncu.txt $W/ncu-f32.txt | head -40
tar czf $OUT/results.tgz -C $W .
