#!/bin/bash
# ptxlab from Python on the GPU: the release wheel's contents unpacked into /tmp/site,
# then python/tests/test_gpu.py (torch and CuPy inputs, zero-copy), and
# attention_varlen timed against torch's varlen_attn on the packed batch of
# the CLI's bench. Everything lands in $OUT/results.tgz.
set -u
W=/tmp/w; mkdir -p $W /tmp/site
export PTXLAB_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv; cat gpu/commits.txt
  python3 -c 'import torch, cupy, numpy; print("torch", torch.__version__, "cupy", cupy.__version__, "numpy", numpy.__version__)'; } > $W/env.txt 2>&1
cat $W/env.txt
# The wheel's contents (ptxlab/, its dist-info), as pip would install them.
xz -dc gpu/site.tar.xz | tar xf - -C /tmp/site; echo "site rc=$?"
(cd python/tests && PYTHONPATH=/tmp/site timeout 300 python3 -m pytest -q -rs test_gpu.py > $W/pytest.log 2>&1; echo "rc=$?" >> $W/pytest.log)
tail -15 $W/pytest.log
PYTHONPATH=/tmp/site timeout 200 python3 gpu/varlen_py.py > $W/varlen_py.log 2>&1; echo "varlen_py rc=$?"
cat $W/varlen_py.log | tail -20
tar czf $OUT/results.tgz -C $W .
