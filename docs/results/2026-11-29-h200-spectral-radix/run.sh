#!/bin/bash
# GPU run of this tree: STAGE=tests (info, cold starts, GPU tests, multi-GPU
# defaults) or STAGE=bench (ptxlab bench --peers, every workload, in parts
# under a deadline). Results under $OUT as one tarball.
set -u
R=$(pwd); G=$R/gpu; W=/tmp/w; mkdir -p $W; T0=$(date +%s)
DEADLINE=${DEADLINE:-560}
mkdir -p /tmp/tb; xz -dc $G/bundle.tar.xz | tar xf - -C /tmp/tb; B=/tmp/tb
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site ${WHL:-.whl}/*.whl > $W/pip.log 2>&1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 PTXLAB_REQUIRE_GPU=1
{ date -u; cat $B/commit.txt
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit,serial --format=csv; nproc
  python3 -c 'import astropy, nifty_ls, finufft, cupy, torch, numba, scipy, numpy; print("astropy", astropy.__version__, "nifty-ls", nifty_ls.__version__, "finufft", finufft.__version__, "cupy", cupy.__version__, "torch", torch.__version__, "numba", numba.__version__, "scipy", scipy.__version__, "numpy", numpy.__version__)'
} > $W/env-$STAGE.txt 2>&1
cat $W/env-$STAGE.txt
save() { tar czf $OUT/results-$STAGE.tgz -C $W . ; }
if [ "$STAGE" = quick ]; then
  # This round's new GPU paths in one short call: the test binaries, the
  # CLI lines, then the fft bench part with cuFFT.
  $B/ptxlab info > $W/info.txt 2>&1; head -20 $W/info.txt
  for t in $B/t-*; do
    n=$(basename $t); s=$(date +%s)
    timeout 120 $t --test-threads=1 > $W/$n.log 2>&1; rc=$?
    echo "$n: rc=$rc $(( $(date +%s) - s )) s $(grep -E '^test result' $W/$n.log | tail -1)" | tee -a $W/tests.txt
    grep -E "^test .*FAILED|panicked|^---- |assert" $W/$n.log | head -12
    save
  done
  if [ -d $B/py ]; then
    # The Python package (the release extension module and the package's
    # .py files) and its tests, GPU tests included, torch and CuPy inputs.
    s=$(date +%s)
    (cd $B/py/tests && PYTHONPATH=$B/py:/tmp/site timeout 240 python3 -m pytest -q -rs ${PYTESTS:-.} > $W/pytest.log 2>&1; echo "rc=$?" >> $W/pytest.log)
    echo "pytest: $(( $(date +%s) - s )) s $(tail -3 $W/pytest.log | tr '\n' ' ')" | tee -a $W/tests.txt
    PYTHONPATH=$B/py:/tmp/site timeout 120 python3 $R/python/bench/overhead.py --ptxlab $B/ptxlab --json $W/overhead.json > $W/overhead.log 2>&1
    echo "overhead rc=$?"; tail -4 $W/overhead.log
    save
  fi
  if [ -f $G/ab.txt ] && [ -x $B/ptxlab-old ]; then
    # Old binary against new on the same command line, alternated twice.
    while IFS='|' read -r name args; do
      [ -z "$name" ] && continue
      for i in 0 1; do for bin in ptxlab-old ptxlab; do
        timeout 120 $B/$bin $args > $W/abcli-$name-$bin-$i.log 2>&1
        echo "$name $bin #$i: rc=$? $(grep -iE 'converged|reached|ms' $W/abcli-$name-$bin-$i.log | tail -1)" | tee -a $W/abcli.txt
      done; done
      save
    done < $G/ab.txt
  fi
  STAGE=cli
  RUN_BENCH=1
fi
if [ "$STAGE" = tests ] || [ -n "${COLD:-}" ]; then
  [ -x $B/ptxlab-old ] && $B/ptxlab-old info > $W/info-old.txt 2>&1
  $B/ptxlab info > $W/info.txt 2>&1; echo "info rc=$?" >> $W/info.txt; head -40 $W/info.txt
  # Cold start: each subcommand once, no driver cache, small problems.
  export CUDA_CACHE_DISABLE=1
  while IFS='|' read -r name args; do
    s=$(date +%s.%N); timeout 60 $B/ptxlab $args > $W/cold-$name.log 2>&1; rc=$?
    e=$(date +%s.%N); printf '%s\t%s\trc=%s\t%.3f s\n' "$name" "$args" $rc $(awk "BEGIN{print $e - $s}") | tee -a $W/cold.tsv
  done <<'LIST'
info|info
vector-add|vector-add --n 1048576 --reps 3
poisson|poisson --size 257 --method multigrid
reduce|reduce --n 1048576 --reps 3
histogram|histogram --n 1048576 --reps 3
monte-carlo-pi|monte-carlo-pi --n 1000000 --reps 3
diffusion|diffusion --size 256 --iters 100 --reps 3
matmul-bf16|matmul --precision bf16 --m 512 --n 512 --k 512 --reps 3
attention|attention --batch 1 --heads 2 --seq 256 --dim 128 --reps 3
fusion|fusion --n 1048576 --reps 3
launch-overhead|launch-overhead --reps 3
lomb-scargle|lomb-scargle --reps 3
math-accuracy|math-accuracy --n 10000
LIST
  unset CUDA_CACHE_DISABLE
  save
  for t in $([ "$STAGE" = tests ] && ls $B/t-*); do
    n=$(basename $t); s=$(date +%s)
    timeout 240 $t --test-threads=1 > $W/$n.log 2>&1; rc=$?
    echo "$n: rc=$rc $(( $(date +%s) - s )) s $(grep -E '^test result' $W/$n.log | tail -1)" | tee -a $W/tests.txt
    grep -E "^test .*FAILED|panicked" $W/$n.log | head -5
    save
  done
  ngpu=$(nvidia-smi -L | wc -l)
  if [ "$ngpu" -ge 2 ]; then
    timeout 120 $B/ptxlab poisson --gpus 2 --method multigrid --size 4097 > $W/mg-gpus2.log 2>&1; echo "rc=$?" >> $W/mg-gpus2.log; tail -5 $W/mg-gpus2.log
  fi
  save
fi

if [ "$STAGE" = dist ]; then
  # One process per GPU (torchrun's variables, the id over TCP at MASTER_ADDR)
  # against one process driving both GPUs, same arguments.
  ngpu=$(nvidia-smi -L | wc -l)
  dist() { # name, args...
    local name=$1; shift
    timeout 200 $B/ptxlab "$@" > $W/dist-$name-one.log 2>&1; echo "rc=$?" >> $W/dist-$name-one.log
    for r in $(seq 0 $((ngpu - 1))); do
      RANK=$r WORLD_SIZE=$ngpu LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 \
        timeout 200 $B/ptxlab "$@" > $W/dist-$name-rank$r.log 2>&1 &
    done; wait
    echo "== $name"; tail -n 4 $W/dist-$name-one.log; tail -n 4 $W/dist-$name-rank0.log
    save
  }
  dist jacobi poisson --gpus $ngpu --size 8193 --iters 500 --variant register
  dist mg poisson --gpus $ngpu --method multigrid --size 8193 --precision f64
  dist mg16k poisson --gpus $ngpu --method multigrid --size 16385 --precision f64
  python3 - <<'PY'
import numpy as np
rng = np.random.default_rng(7)
n = rng.integers(100, 400, size=2000)
off = np.concatenate([[0], np.cumsum(n)])
t = np.concatenate([np.sort(rng.uniform(0, 100, k)) for k in n])
y = np.sin(2 * np.pi * t / 3.7) + rng.normal(0, 0.5, t.size)
np.savez("/tmp/w/curves.npz", t=t, y=y, offsets=off)
PY
  dist lomb lomb-scargle --curves /tmp/w/curves.npz --start 0.1 --step 0.0005 --n 200000 --top 3 --periods /tmp/w/per.npy
  rm -f /tmp/w/curves.npz
fi
if [ "$STAGE" = ab ]; then
  # Old (HEAD before this round's refactor) against new, same parts, same call, alternated.
  for w in $PARTS; do
    for bin in ptxlab-old ptxlab ptxlab-old ptxlab; do
      now=$(( $(date +%s) - T0 )); left=$(( DEADLINE - now ))
      if [ $left -lt 20 ]; then echo "$w $bin: not run ($left s left)" | tee -a $W/parts.txt; continue; fi
      s=$(date +%s); i=$( ls -d $W/ab-$w-$bin-* 2>/dev/null | wc -l )
      timeout $left $B/$bin bench --out $W/ab-$w-$bin-$i --only $w > $W/ab-$w-$bin-$i.log 2>&1
      echo "$w $bin #$i: rc=$?, $(( $(date +%s) - s )) s" | tee -a $W/parts.txt
      save
    done
  done
fi
if [ "$STAGE" = cli ]; then
  while IFS='|' read -r name args; do
    [ -z "$name" ] && continue
    now=$(( $(date +%s) - T0 )); left=$(( DEADLINE - now )); [ $left -lt 15 ] && break
    s=$(date +%s); timeout $(( left < 120 ? left : 120 )) $B/ptxlab $args > $W/cli-$name.log 2>&1
    echo "$name: rc=$? $(( $(date +%s) - s )) s" | tee -a $W/cli.txt; tail -4 $W/cli-$name.log
    save
  done < $G/cli.txt
  if [ -n "${RUN_BENCH:-}" ]; then STAGE=bench; fi
fi
if [ "$STAGE" = bench ]; then
  for w in $PARTS; do
    now=$(( $(date +%s) - T0 )); left=$(( DEADLINE - now ))
    if [ $left -lt 20 ]; then echo "$w: not run ($left s left)" | tee -a $W/parts.txt; continue; fi
    s=$(date +%s)
    timeout $left $B/ptxlab bench --peers --peers-dir peers --out $W/$w --only $w > $W/$w.log 2>&1
    rc=$?
    echo "$w: rc=$rc, $(( $(date +%s) - s )) s (started at +$now s)" | tee -a $W/parts.txt
    grep -iE "loaded|PTX|JIT" $W/$w/report.md 2>/dev/null | head -3
    tail -2 $W/$w.log
    save
  done
fi
save
