#!/bin/bash
# Spectral Poisson: new kernels vs the committed binary, same call; CuPy's spectral solve; tests.
set -u
R=$(pwd); G=$R/gpu; W=/tmp/w; mkdir -p $W
mkdir -p /tmp/tb; xz -dc $G/bundle1.tar.xz | tar xf - -C /tmp/tb; B=/tmp/tb
{ date -u; cat $B/commit.txt; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; which ncu nsys compute-sanitizer; ls /usr/local/cuda*/bin 2>/dev/null | head -30; } > $W/env.txt 2>&1
cat $W/env.txt
save() { tar czf $OUT/results1.tgz -C $W . ; }
for t in t-poisson_spectral; do s=$(date +%s); timeout 200 $B/$t --test-threads=1 > $W/$t.log 2>&1; echo "$t rc=$? $(( $(date +%s) - s )) s $(grep -E '^test result' $W/$t.log)" | tee -a $W/tests.txt; done
save
for i in 0 1; do for bin in ptxlab-old ptxlab; do for p in f64 f32; do for n in 4096 1025 2049; do
  timeout 60 $B/$bin poisson --method spectral --size $n --precision $p --reps 30 > $W/sp-$bin-$p-$n-$i.log 2>&1
  echo "$bin $p $n #$i rc=$? $(grep -E 'ms' $W/sp-$bin-$p-$n-$i.log | head -3 | tr '\n' ' ')" | tee -a $W/sp.txt
done; done; done; done
save
(cd $R/peers && timeout 150 python3 -c 'import json, poisson_mg; print(json.dumps(poisson_mg.run_spectral(False), indent=1))' > $W/cupy.json 2>&1; echo "cupy rc=$?" >> $W/cupy.json)
tail -30 $W/cupy.json
save
if command -v ncu >/dev/null; then
  timeout 150 ncu --kernel-name regex:spectral --launch-count 3 --section SpeedOfLight --section Occupancy --section LaunchStats $B/ptxlab poisson --method spectral --size 4096 --precision f64 --reps 1 > $W/ncu.txt 2>&1
  grep -E "spectral_|Duration|Throughput|Achieved Occupancy|Registers|Block Limit" $W/ncu.txt | head -60
fi
save
