#!/usr/bin/env bash
# Final Lomb-Scargle call: the batch kernel after 60928f3 against its peers in ONE run
# (ptxlab bench --only lomb-scargle --peers), the GPU tests, the production CLI batch.
set -u
G=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/b && tar xJf $G/bundle-lomb.tar.xz -C /tmp/b
B=/tmp/b/bundle-lomb
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $G/whl/*.whl > $OUT/pip.log 2>&1
export PYTHONPATH=/tmp/site
{ echo "git $(cat $G/GIT)"; date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; nproc;
  python3 -c 'import numpy, cupy, astropy, nifty_ls; print("numpy", numpy.__version__, "cupy", cupy.__version__, "astropy", astropy.__version__, "nifty-ls", nifty_ls.__version__)'; } > $OUT/env.txt 2>&1
cat $OUT/env.txt
cd $B
timeout 330 ./ptxlab bench --only lomb-scargle --peers --peers-dir peers --out $OUT/bench-lomb > $OUT/bench-lomb.log 2>&1
echo "bench rc=$?"
grep -E "^\| " $OUT/bench-lomb.log | grep -iE "batch" | cut -c1-200
for t in lomb_models lomb; do
  timeout 100 tests/ptxlab-suite-$t --test-threads=2 gpu > $OUT/test-$t.log 2>&1; echo "test $t rc=$?"; grep -E "test result" $OUT/test-$t.log
done
tar czf $OUT/bench-lomb.tgz -C $OUT bench-lomb && rm -rf $OUT/bench-lomb
