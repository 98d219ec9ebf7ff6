#!/bin/bash
# GPU run: optional A/B rows (old binaries against HEAD, same command,
# alternated), then `ptxlab bench --peers --only W` per part in $PARTS,
# cold starts and `ptxlab info` with COLD=1, test binaries in $TESTS.
# Everything lands in $OUT/results.tgz.
set -u
R=$(pwd); G=$R/gpu; W=/tmp/w; mkdir -p $W /tmp/b /tmp/site; T0=$(date +%s)
left() { echo $(( ${DEADLINE:-560} - ($(date +%s) - T0) )); }
xz -dc $G/bins.tar.xz | tar xf - -C /tmp/b
[ -f $G/peers-site.tar.xz ] && xz -dc $G/peers-site.tar.xz | tar xf - -C /tmp/site
export PYTHONPATH=/tmp/site PTXLAB_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv; nproc; cat $G/commits.txt
  python3 -c 'import cupy, torch, numba, scipy, numpy; print("cupy", cupy.__version__, "torch", torch.__version__, "numba", numba.__version__, "scipy", scipy.__version__, "numpy", numpy.__version__)'
  python3 -c 'import astropy, nifty_ls, finufft; print("astropy", astropy.__version__, "nifty-ls", nifty_ls.__version__, "finufft", finufft.__version__)'
} > $W/env.txt 2>&1
cat $W/env.txt
save() { tar czf $OUT/results.tgz -C $W . ; }
run() { # name timeout cmd...
  local n=$1 t=$2; shift 2
  [ $(left) -gt 8 ] || { echo "$n: not run ($(left) s left)" | tee -a $W/calls.txt; return; }
  [ $t -gt $(( $(left) - 3 )) ] && t=$(( $(left) - 3 ))
  s=$(date +%s.%N); timeout $t "$@" > $W/$n.log 2>&1; rc=$?
  printf '%s rc=%s %s s\n' $n $rc $(awk "BEGIN{print $(date +%s.%N) - $s}") | tee -a $W/calls.txt
  grep -E "PASS|FAIL|error|INACC|test result|panicked" $W/$n.log | cut -c1-200 | tail -12
}
if [ -n "${AB:-}" ]; then
  # Old binary against new on the same command lines, alternated twice.
  S="--batch 4 --heads 16 --seq 8192 --dim 128 --reps 20"
  S64="--batch 8 --heads 16 --seq 2048 --dim 64 --reps 20"
  for i in 0 1; do
    for c in "" "--causal"; do
      for b in $AB; do
        run ab-fa2-$b${c:+-causal}-$i 20 /tmp/b/$b attention --variant fa2 $S $c
        run ab-fa2d64-$b${c:+-causal}-$i 20 /tmp/b/$b attention --variant fa2 $S64 $c
        run ab-win-$b${c:+-causal}-$i 20 /tmp/b/$b attention --variant fa2 $S $c --window 1024
        run ab-bwd-$b${c:+-causal}-$i 25 /tmp/b/$b attention --backward $S $c
        run ab-bwdwin-$b${c:+-causal}-$i 25 /tmp/b/$b attention --backward $S $c --window 1024
      done
    done
    save
  done
fi
if [ -n "${CLI:-}" ]; then
  # Packed variable-length batches through the CLI: every sequence checked
  # against f64 (smaller batches), then timed.
  L="0,4096,5120,8120,8637,10685,18877,19654,21154,25154,25487,27709,28820,29460,31960,32061,33848"
  for c in "" "--causal"; do
    run cli-varlen${c:+-causal} 60 /tmp/b/ptxlab attention --cu-seqlens $L --heads 16 --dim 128 $c --reps 20
    run cli-varlen-bwd${c:+-causal} 90 /tmp/b/ptxlab attention --cu-seqlens $L --heads 16 --dim 128 $c --backward --reps 10
    run cli-varlen-small${c:+-causal} 60 /tmp/b/ptxlab attention --cu-seqlens 0,1000,1001,5098,5161,7210,7850 --cu-seqlens-kv 0,900,1901,5998,6001,8050,8690 --heads 8 --kv-heads 2 --dim 64 $c --backward --reps 5
  done
  save
fi
if [ -n "${COLD:-}" ]; then
  /tmp/b/ptxlab info > $W/info.txt 2>&1; echo "info rc=$?" >> $W/info.txt; head -30 $W/info.txt
  export CUDA_CACHE_DISABLE=1
  while IFS='|' read -r name args; do
    s=$(date +%s.%N); timeout 60 /tmp/b/ptxlab $args > $W/cold-$name.log 2>&1; rc=$?
    e=$(date +%s.%N); printf '%s\t%s\trc=%s\t%.3f s\n' "$name" "$args" $rc $(awk "BEGIN{print $e - $s}") | tee -a $W/cold.tsv
  done <<'LIST'
info|info
vector-add|vector-add --n 1048576 --reps 3
poisson|poisson --size 257 --method multigrid
spectral|poisson --size 257 --method spectral
reduce|reduce --n 1048576 --reps 3
fft|fft --shape 1000x1000 --2d --reps 3
matmul-bf16|matmul --precision bf16 --m 512 --n 512 --k 512 --reps 3
attention|attention --batch 1 --heads 2 --seq 256 --dim 128 --reps 3
attention-decode|attention-decode --reps 3
lomb-scargle|lomb-scargle --reps 3
LIST
  unset CUDA_CACHE_DISABLE
  save
fi
for t in ${TESTS:-}; do run $t 240 /tmp/b/$t --test-threads=1 ${TESTARGS:-}; save; done
for w in ${PARTS:-}; do
  run bench-$w 400 /tmp/b/ptxlab bench --peers --peers-dir peers --out $W/$w --only $w
  grep -iE "module|cubin|ptx" $W/$w/report.md 2>/dev/null | head -5
  save
done
echo "done at +$(( $(date +%s) - T0 )) s"
save
