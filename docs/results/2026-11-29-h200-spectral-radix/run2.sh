#!/bin/bash
# Final call: spectral old / first butterflies (r1) / final in one call, CuPy's
# spectral solve, ncu of the three kernels; then gpu/run.sh's quick stage
# (tests, Python tests and overhead, the CLI lines of gpu/cli.txt).
set -u
R=$(pwd); W=/tmp/w; mkdir -p $W
mkdir -p /tmp/tb; xz -dc gpu/bundle.tar.xz | tar xf - -C /tmp/tb; B=/tmp/tb
mkdir -p /tmp/tb1; xz -dc gpu/bundle1.tar.xz | tar xf - -C /tmp/tb1 ./ptxlab; cp /tmp/tb1/ptxlab $B/ptxlab-r1
for i in 0 1; do for bin in ptxlab-old ptxlab-r1 ptxlab; do for p in f64 f32; do for n in 4096 1025; do
  timeout 60 $B/$bin poisson --method spectral --size $n --precision $p --reps 30 > $W/sp3-$bin-$p-$n-$i.log 2>&1
  echo "$bin $p $n #$i rc=$? $(grep -E 'median' $W/sp3-$bin-$p-$n-$i.log | head -1)" | tee -a $W/sp3.txt
done; done; done; done
(cd $R/peers && timeout 100 python3 -c 'import json, poisson_mg; print(json.dumps(poisson_mg.run_spectral(False), indent=1))' > $W/cupy.json 2>&1; echo "cupy rc=$?" >> $W/cupy.json)
grep -E '"size"|"precision"|median_ms' $W/cupy.json | paste - - - 
timeout 60 ncu --kernel-name regex:spectral --launch-count 6 --section SpeedOfLight --section Occupancy $B/ptxlab poisson --method spectral --size 4096 --precision f32 --reps 1 > $W/ncu-f32.txt 2>&1
timeout 60 ncu --kernel-name regex:spectral --launch-count 3 --section SpeedOfLight --section Occupancy $B/ptxlab poisson --method spectral --size 4096 --precision f64 --reps 1 > $W/ncu.txt 2>&1
grep -E "spectral_|Duration|Achieved Occupancy|Registers Per" $W/ncu.txt $W/ncu-f32.txt | head -30
tar czf $OUT/results2.tgz -C $W .
rm -f gpu/bundle1.tar.xz
WHL=.whl-small STAGE=quick PARTS="" DEADLINE=400 PYTESTS="${PYTESTS:-test_gpu.py}" bash gpu/run.sh
