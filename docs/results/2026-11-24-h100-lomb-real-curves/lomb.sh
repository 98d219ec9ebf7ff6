#!/usr/bin/env bash
# Call B2: Lomb-Scargle (issue 20): GPU tests, production CLI, bench with astropy/nifty-ls/CuPy.
. "$(dirname "$0")/common.sh"
python3 -c "import astropy, nifty_ls; print('astropy', astropy.__version__, 'nifty-ls', nifty_ls.__version__)" >> $OUT/env.txt 2>&1
mkdir -p /tmp/d && (cd /tmp/d && python3 $G/mkdata.py) > $OUT/mkdata.log 2>&1
cd $B
{
  wall ./ptxlab lomb-scargle --x /tmp/d/x10k.npy --y /tmp/d/y10k.npy --check none --out /tmp/d/p0.npy
  for i in 1 2 3; do
    wall ./ptxlab lomb-scargle --x /tmp/d/x10k.npy --y /tmp/d/y10k.npy --check sample --out /tmp/d/p.npy
  done
  wall ./ptxlab lomb-scargle --x /tmp/d/xl.npy --y /tmp/d/yl.npy --start 0.01 --step 0.00076293945 --count 65536 --variant all --check full --reps 10
  wall ./ptxlab lomb-scargle --x /tmp/d/xl.npy --y /tmp/d/yl.npy --dy /tmp/d/dyl.npy --fit-mean --start 0.01 --step 0.00076293945 --count 65536 --variant all --check full --reps 10
  wall ./ptxlab lomb-scargle --batch /tmp/d/batch.npz --start 0.01 --step 0.000999099909991 --count 10000 --top 3 --periods /tmp/d/per.npy --out /tmp/d/bp.npy --reps 10
} > $OUT/lomb-cli.log 2>&1
grep -E "WALL|PASS|FAIL|time to the written|batch|error" $OUT/lomb-cli.log | head -60
for t in lomb lomb_models; do
  timeout 120 tests/ptxlab-suite-$t --test-threads=2 > $OUT/test-$t.log 2>&1; echo "test $t rc=$?"
  grep -E "test result|FAILED|panicked" $OUT/test-$t.log | head
done
timeout ${BENCH_TIMEOUT:-330} ./ptxlab bench --only lomb-scargle --peers --peers-dir peers --out $OUT/bench-lomb > $OUT/bench-lomb.log 2>&1
echo "bench rc=$?"
grep -E "^\| " $OUT/bench-lomb.log | grep -iE "batch|astropy|nifty|long|gen|cupy" | cut -c1-230 | head -50
tar czf $OUT/bench-lomb.tgz -C $OUT bench-lomb && rm -rf $OUT/bench-lomb
