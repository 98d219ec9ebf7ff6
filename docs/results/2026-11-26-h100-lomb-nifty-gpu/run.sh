#!/bin/bash
# GPU call B2 (lead): cold start of lomb-scargle's new default, then the full
# bench of this tree with peers (`ptxlab bench --peers`), one run, with
# nifty-ls carried: finufft (CPU) as wheels, cufinufft (GPU) unpacked with
# the CUDA 12 cuFFT and runtime it links (the device image has CUDA 13 only).
set -u
cd "$(dirname "$0")"
FINAL=${OUT:-$PWD/out}; mkdir -p "$FINAL"
L=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site whl/*.whl > "$L/pip.log" 2>&1
for f in gpu/lib/*.xz gpu/site/cufinufft/*.xz; do xz -dc "$f" > "${f%.xz}"; done
export LD_LIBRARY_PATH=$PWD/gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=/tmp/site:$PWD/gpu/site PYTHONUNBUFFERED=1 PTXLAB_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0
[ -x ptxlab ] || { xz -dc ptxlab.xz > ptxlab && chmod +x ptxlab; }
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; date -u; nproc;
  python3 -c 'import nifty_ls, finufft, cupy, torch, numba, scipy; print("nifty-ls", nifty_ls.__version__, "finufft", finufft.__version__, "cupy", cupy.__version__, "torch", torch.__version__, "numba", numba.__version__, "scipy", scipy.__version__)'
  python3 -c 'import cufinufft, nifty_ls.cufinufft, numpy as np, nifty_ls as n; t=np.sort(np.random.rand(300))*100; y=np.sin(t); print("cufinufft", cufinufft.__version__, "nifty-ls cufinufft backend loads; 300 samples x 1000 freqs: max power", float(n.lombscargle(t, y, Nf=1000, backend="cufinufft").power.max()))'
} > "$L/env.txt" 2>&1
cat "$L/env.txt"
# Cold start (driver JIT cache off): lomb-scargle's default before and after.
for c in "lomb-scargle --count 4096 --start 0.1 --step 0.001" "lomb-scargle --count 4096 --start 0.1 --step 0.001 --variant cached"; do
  t0=$(date +%s.%N); CUDA_CACHE_DISABLE=1 timeout 60 ./ptxlab $c > "$L/cold.log.tmp" 2>&1; rc=$?; t1=$(date +%s.%N)
  { echo "### CUDA_CACHE_DISABLE=1 ptxlab $c (exit $rc, $(python3 -c "print(f'{$t1-$t0:.2f}')") s)"; tail -n 4 "$L/cold.log.tmp"; } >> "$L/cold.log"
done
cat "$L/cold.log"
timeout "${BENCH_TIMEOUT:-520}" ./ptxlab bench --peers --peers-dir ../peers --out "$L/bench" > "$L/bench.log" 2>&1
echo "bench rc=$?"
grep -E "nifty|^\[" "$L/bench.log" | tail -n 30
tar czf "$FINAL/results.tgz" -C "$L" --exclude cold.log.tmp .
