#!/bin/bash
# Nsight Compute, full set with SASS source counters, on the three spectral
# kernels of one 4096^2 solve in f64 and f32 (the binary in gpu/prof-bin.tar.xz);
# the reports, their raw metrics and per-instruction SASS tables land in
# $OUT/prof.tgz.
set -u
mkdir -p /tmp/b /tmp/w; xz -dc gpu/prof-bin.tar.xz | tar xf - -C /tmp/b
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
echo "ncu: $NCU"; nvidia-smi --query-gpu=name,driver_version --format=csv > /tmp/w/env.txt
for p in f64 f32; do
  timeout 200 $NCU --clock-control none --set full -k regex:spectral -c 3 -f -o /tmp/w/prof-$p \
    /tmp/b/ptxlab poisson --method spectral --size 4096 --precision $p --reps 1 > /tmp/w/prof-$p.log 2>&1
  echo "prof $p rc=$?"; tail -3 /tmp/w/prof-$p.log
  $NCU -i /tmp/w/prof-$p.ncu-rep --page raw --csv > /tmp/w/raw-$p.csv 2>&1
  $NCU -i /tmp/w/prof-$p.ncu-rep --page details --print-details all > /tmp/w/details-$p.txt 2>&1
  $NCU -i /tmp/w/prof-$p.ncu-rep --page source --csv --print-source sass > /tmp/w/sass-$p.csv 2>&1
  ls -la /tmp/w
  tar czf $OUT/prof.tgz -C /tmp/w .
done
