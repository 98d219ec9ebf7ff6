#!/usr/bin/env bash
# Dask over 1 and 2 GPUs: the ptxlab wheel and dask.distributed (wheels carried, no network)
# in a venv over the system site (numpy, torch, cupy), then python/bench/dask_gpus.py, and the
# Python GPU tests of the wheel.
set -u
W=$OUT/dask; mkdir -p $W
{ nvidia-smi; nvidia-smi topo -m; python3 --version; date -u; } > $W/device.txt 2>&1
: > $W/venv.log  # python3 there is a venv with numpy, torch and CuPy: install into it
python3 -m pip install --no-index --find-links gpu/wheels dask distributed >> $W/venv.log 2>&1
# The wheel travels unzipped under xz (half the size); a wheel is a zip of these files.
mkdir -p /tmp/w && tar -xJf gpu/ptxlab-wheel.tar.xz -C /tmp/w
WHL=/tmp/ptxlab-0.1.0-cp39-abi3-manylinux_2_34_x86_64.whl
(cd /tmp/w && python3 -m zipfile -c $WHL $(ls)) >> $W/venv.log 2>&1
python3 -m pip install --no-index --no-deps --force-reinstall $WHL >> $W/venv.log 2>&1
python3 -c "import ptxlab, dask, distributed; print(ptxlab.__file__, dask.__version__, distributed.__version__)" >> $W/venv.log 2>&1
tail -3 $W/venv.log
export PTXLAB_REQUIRE_GPU=1
timeout 60 python3 gpu/peaks_vs_batch.py > $W/peaks.log 2>&1; echo "peaks rc=$?" >> $W/peaks.log; tail -3 $W/peaks.log
s=$(date +%s)
timeout ${DASK_T:-330} python3 python/bench/dask_gpus.py --gpus 1,2 --curves ${CURVES:-100000} \
  --partitions ${PARTS:-32} --freqs ${FREQS:-4096} --reps 3 --json $W/dask.json > $W/dask.log 2>&1
echo "dask rc=$? $(( $(date +%s) - s )) s" >> $W/dask.log; tail -4 $W/dask.log
s=$(date +%s)
(cd python/tests && timeout ${PYT_T:-150} python3 -m pytest -q -rs --continue-on-collection-errors -p no:cacheprovider . > $W/pytest.log 2>&1; echo "pytest rc=$? $(( $(date +%s) - s )) s" >> $W/pytest.log)
tail -4 $W/pytest.log
tar -C $OUT -cJf $OUT/dask.tar.xz dask
